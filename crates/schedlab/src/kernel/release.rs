//! The kernel release a policy stands for, and what that release derives from the machine
//! at boot: its resource limits and the size of what it allocates in low memory.
//!
//! Design: a [`Release`] is a fact of the policy (`linux-2.4:version=2.4.18` boots 2.4.18's
//! `fork_init` and `NR_FILE`, `o1-2.6` boots 2.6.0's), the RAM is a fact of the machine,
//! and the limits are the release's formulas applied to the RAM ([`Release::limits`]).
//! The command line's `ram_mb=`, `nproc=` and `file_max=` then override what they name,
//! as a tuned box would. A preset whose limits were measured on a running kernel (`host`)
//! keeps them whatever the policy.
//!
//! Low memory: on i386 the kernel maps at most 896 MB (`__VMALLOC_RESERVE` under the
//! 3 GB/1 GB split), and every kernel object of a task, a socket or an skb lives there;
//! `mem_map` (one `struct page` per page of RAM) is carved out of it at boot, so a box with
//! more RAM has *less* low memory left for tasks. [`Kmem`] gives each object's size per
//! release; [`Release::lowmem_budget`] what is left for the workload.
//!
//! Invariant: for the releases the P6 presets booted before releases existed (2.4.7 –
//! 2.4.17), [`Release::limits`] equals the preset's 2.4.16 limits ([`Limits::for_ram`]),
//! so runs that fit are unchanged.

use crate::machine::{Limits, Machine};

#[cfg(test)]
use crate::machine::I386_LOWMEM_MB;

/// Boot `release`'s limits on `m`: its formulas on the preset's RAM (or `ram_mb=`), tuned
/// by the preset's `sysctl` settings and the command line ([`Machine::tuned`]). A preset
/// whose limits were measured keeps them.
pub fn boot_limits(m: &mut Machine, release: Release) {
    let (p, ram) = (m.preset, m.limit_options.ram_mb);
    let base = match (p.limits_measured, ram) {
        (true, None) => p.limits.clone(),
        (_, ram) => release.limits(ram.unwrap_or(p.limits.ram_mb), p.lowmem_mb, m.cpus),
    };
    m.limits = m.tuned(base);
}

/// A Linux release, as far as limits and kernel memory tell releases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Release {
    /// 2.4.N (N ≥ 7).
    V2_4(u8),
    /// 2.5.N, the development series the O(1), MQ 2.5.0 and haMQ patches were made against.
    V2_5(u8),
    /// 2.6.0 (its -test9 and -test11 releases included: Craig Thomas found "no significant
    /// differences" between them, LKML 5 Dec 2003).
    V2_6_0,
    /// 6.1 and 6.12 (x86-64): the formulas the fair classes' kernels share.
    V6(u8),
}

/// `NR_FILE`: the fixed `fs.file-max` of 2.4 (`fs/file_table.c`), and the floor of
/// `files_init` afterwards.
pub const NR_FILE: u64 = 8192;

/// `PID_MAX_LIMIT` of 64-bit 6.x kernels (`include/linux/threads.h`: 4 M).
pub const PID_MAX_LIMIT_64: u64 = 4 * 1024 * 1024;

impl Release {
    /// The release's name as `uname -r` printed it.
    pub fn name(self) -> String {
        match self {
            Release::V2_4(n) => format!("2.4.{n}"),
            Release::V2_5(n) => format!("2.5.{n}"),
            Release::V2_6_0 => "2.6.0".into(),
            Release::V6(n) => format!("6.{n}"),
        }
    }

    /// Pages per kernel stack: `THREAD_SIZE / PAGE_SIZE` (i386 8 KB; x86-64 6.x 16 KB).
    fn stack_pages(self) -> u64 {
        match self {
            Release::V6(_) => 4,
            _ => 2,
        }
    }

    /// Timers are kept in one wheel under the global `timerlist_lock` (kernel/timer.c),
    /// which every `mod_timer` takes: 2.4 and 2.5 before Molnar's per-CPU timer bases
    /// (`timer-2.5.40-F7`, merged for 2.5.40; LKML Oct 2002).
    pub fn global_timerlist(self) -> bool {
        match self {
            Release::V2_4(_) => true,
            Release::V2_5(n) => n < 40,
            Release::V2_6_0 | Release::V6(_) => false,
        }
    }

    /// `do_gettimeofday` takes `xtime_lock` as a reader-writer spinlock, a locked write of
    /// its line even for readers: 2.4 and 2.5 before the seqlock (2.5.60).
    pub fn xtime_rwlock(self) -> bool {
        match self {
            Release::V2_4(_) => true,
            Release::V2_5(n) => n < 60,
            Release::V2_6_0 | Release::V6(_) => false,
        }
    }

    /// Loopback transmits as a device shared by every CPU: `dev_queue_xmit` takes lo's
    /// `queue_lock` and `xmit_lock`, `loopback_xmit` writes one `net_device_stats`,
    /// `netif_rx` holds the device (`dev_hold`), each skb holds the route (`dst_clone`)
    /// and `ip_finish_output2` read-locks the neighbour's `hh_lock` (2.4 to 2.6.0; 6.x's
    /// lo is lockless (`NETIF_F_LLTX`) with per-CPU statistics and no qdisc lock).
    pub fn shared_loopback(self) -> bool {
        !matches!(self, Release::V6(_))
    }

    /// `switch_mm` between two threads of one mm writes `cpu_vm_mask`: 2.4's i386
    /// `switch_mm` does `test_and_set_bit(cpu, &next->cpu_vm_mask)` (a locked write, to
    /// leave lazy-TLB mode) whenever `prev == next`; 2.6.0 kept it. 6.x's x86
    /// `switch_mm_irqs_off` only reads the mask then (the CPU stays set in lazy mode;
    /// `arch/x86/mm/tlb.c`, the `prev == next` branch). Between two mms every release
    /// clears the old bit and sets the new one.
    pub fn same_mm_switch_writes_cpumask(self) -> bool {
        !matches!(self, Release::V6(_))
    }

    /// `fget` of a task whose `files_struct` nobody else holds takes no lock and no
    /// reference: 6.x's `__fget_light` borrows the file when `files->count == 1`, and a
    /// shared table costs a reference on the *file* (`f_count`), not the table's lock
    /// (`fs/file.c`). 2.4 to 2.6.0 `read_lock(&files->file_lock)` on every `fget`.
    pub fn fget_light(self) -> bool {
        matches!(self, Release::V6(_))
    }

    /// The wake-ups of a stream's readers, and of an AF_UNIX or pipe writer, are
    /// synchronous (`WF_SYNC`: the waker is about to sleep): 6.x's `sock_def_readable`
    /// (`net/core/sock.c`), `unix_write_space` (`net/unix/af_unix.c`) and
    /// `pipe_read`/`pipe_write` (`fs/pipe.c`) call `wake_up_interruptible_sync_poll`.
    /// TCP's `sk_stream_write_space` stays asynchronous (`net/core/stream.c`). 2.4 to
    /// 2.6.0's `sock_def_readable` and `pipe_write`'s final wake-up are
    /// `wake_up_interruptible`.
    pub fn sync_data_wakeups(self) -> bool {
        matches!(self, Release::V6(_))
    }

    /// An ACK calls `write_space` only for a writer that found the send buffer full
    /// (`tcp_check_space`: `SOCK_NOSPACE`), in 2.4 as in 6.x. The era's releases keep the
    /// model they were calibrated with, which wakes the socket's sleepers on every ACK that
    /// leaves room (a known gap; `tcp_nospace=on` closes it: docs/calibration.md).
    pub fn tcp_nospace_gate(self) -> bool {
        matches!(self, Release::V6(_))
    }

    /// A SysV semaphore's `update_queue` completes every pending operation the new value
    /// allows on the sleepers' behalf and wakes them all from the caller (Manfred
    /// Spraul's ipc/sem.c of 3.10 on; 6.12 with `wake_q`). 2.4 to 2.6.0 wake the first
    /// waiter, which retries its operation itself and, succeeding, wakes the next.
    pub fn sem_completes_waiters(self) -> bool {
        matches!(self, Release::V6(_))
    }

    /// Pipes are a ring of page buffers with their own read and write wait queues and
    /// exclusive sleepers (Linus Torvalds's circular pipe buffers, 2.6.11; the wake-up
    /// rules of 5.5 and later: a write wakes a reader only if the pipe was empty, a read
    /// wakes a writer only if it was full; 6.12 `fs/pipe.c`). 2.4 to 2.6.0: one page,
    /// one wait queue for both sides, every sleeper woken by every read and write.
    pub fn pipe_ring(self) -> bool {
        matches!(self, Release::V6(_))
    }

    /// `fork_init(num_physpages)`: `max_threads = mempages / (THREAD_SIZE/PAGE_SIZE) / 8`
    /// — "the thread structures can take up at most half of memory" — in 2.4.7 and later
    /// (Rik van Riel's change of 2.4.6-pre3; 2.4.17, 2.4.18-RH and 2.4.19 trees), 2.5
    /// and 2.6.0 (`kernel/fork.c`, at least 20); 6.x the same with its 16 KB stacks,
    /// capped at `FUTEX_TID_MASK`. `num_physpages` counts high memory too.
    pub fn max_threads(self, ram_mb: u64) -> u64 {
        let pages = ram_mb * 256;
        let t = pages / self.stack_pages() / 8;
        match self {
            Release::V2_4(_) => t,
            Release::V2_5(_) | Release::V2_6_0 => t.max(20),
            Release::V6(_) => t.clamp(20, 0x3fff_ffff),
        }
    }

    /// True when `RLIMIT_NPROC` refuses root's forks too. Vanilla 2.4.17's `do_fork`
    /// checks it for everyone; Rik van Riel's "exclude root" test
    /// (`!capable(CAP_SYS_ADMIN) && !capable(CAP_SYS_RESOURCE)`) is in the 2.4.19 tree and
    /// Red Hat's 2.4.18, and in 2.6.0's `copy_process` (which also exempts `root_user`).
    /// No vanilla 2.4.18 tree could be read: we take the test as present from 2.4.18 on,
    /// as in Red Hat's 2.4.18 (docs/calibration.md, "Kernel limits").
    pub fn nproc_binds_root(self) -> bool {
        matches!(self, Release::V2_4(n) if n < 18)
    }

    /// `fs.file-max` at boot: 2.4 before 2.4.20 keeps `NR_FILE`; `files_init(mempages)`
    /// (from 2.5.4-pre1, in 2.4.20, 2.6.0 and 6.x) sets 10 % of memory at about 1 KB a
    /// file, never below `NR_FILE`.
    pub fn file_max(self, ram_mb: u64) -> u64 {
        let files_init = match self {
            Release::V2_4(n) => n >= 20,
            Release::V2_5(n) => n >= 4,
            Release::V2_6_0 | Release::V6(_) => true,
        };
        if files_init {
            (ram_mb * 1024 / 10).max(NR_FILE)
        } else {
            NR_FILE
        }
    }

    /// `pid_max`: 2.4's compile-time `PID_MAX` and 2.6.0's `PID_MAX_DEFAULT` are both
    /// `0x8000`; 6.x raises the default to 1024 per possible CPU (`pid_idr_init`), up to
    /// `PID_MAX_LIMIT`.
    pub fn pid_max(self, cpus: usize) -> u64 {
        match self {
            Release::V6(_) => (1024 * cpus as u64).clamp(32768, PID_MAX_LIMIT_64),
            _ => 32768,
        }
    }

    /// The limits this release sets on a machine of `ram_mb` MB with `cpus` CPUs, with
    /// `lowmem_mb` of directly mapped memory (`None`: a 64-bit kernel, which maps all).
    pub fn limits(self, ram_mb: u64, lowmem_mb: Option<u64>, cpus: usize) -> Limits {
        let max_threads = self.max_threads(ram_mb);
        Limits {
            ram_mb,
            max_threads,
            nproc: max_threads / 2,
            file_max: self.file_max(ram_mb),
            pid_max: self.pid_max(cpus),
            nproc_binds_root: self.nproc_binds_root(),
            kmem_kb: lowmem_mb.map(|low| self.lowmem_budget(ram_mb, low) / 1024),
        }
    }

    /// Bytes of low memory left for the workload's kernel objects: `min(RAM, lowmem)` less
    /// `mem_map` (a `struct page` per page of all RAM, allocated from low memory at boot)
    /// and the kernel's own image and boot allocations ([`Kmem::kernel_reserved`]).
    pub fn lowmem_budget(self, ram_mb: u64, lowmem_mb: u64) -> u64 {
        let k = self.kmem();
        let low = ram_mb.min(lowmem_mb) << 20;
        let mem_map = ram_mb * 256 * k.page_struct;
        low.saturating_sub(mem_map + k.kernel_reserved)
    }

    /// Object sizes of this release (i386 for 2.x).
    pub fn kmem(self) -> Kmem {
        match self {
            Release::V2_4(_) | Release::V2_5(_) => KMEM_24,
            Release::V2_6_0 => KMEM_26,
            Release::V6(_) => KMEM_6,
        }
    }
}

/// What the kernel allocates, in bytes of low memory, per object. The figures are
/// *inferred* from the structures (docs/calibration.md, "Kernel memory"): no slabinfo of
/// those kernels on those boxes was found; the large terms (stacks, page tables, pgd, the
/// skb's `kmalloc` class) are exact page or size-class counts, the small ones estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kmem {
    /// Every task: the kernel stack (i386: `THREAD_SIZE` = 2 pages, order-1; 2.4 keeps the
    /// `task_struct` inside it, 2.6 allocates it from its own slab), plus in 2.6 that slab
    /// object.
    pub task: u64,
    /// A new process (not a thread): `mm_struct`, a pgd page, the page-table pages
    /// `copy_page_range` fills for a small program (text, the shared libraries and the
    /// stack: three 4 MB regions, one page each; low memory without `CONFIG_HIGHPTE`),
    /// about sixteen `vm_area_struct`s, the signal handlers (64 × `k_sigaction`) and
    /// `files_struct`.
    pub process: u64,
    /// One socket end: the `sock` (2.4's carries every protocol's state), its inode,
    /// dentry and `struct file`.
    pub socket: u64,
    /// One pipe: its page, inode, dentry and two `struct file`s.
    pub pipe: u64,
    /// An skb's head (`skbuff_head_cache` object).
    pub skb_head: u64,
    /// `sizeof(struct skb_shared_info)`, added to the aligned data before `kmalloc`
    /// (2.4: 6 fragments; 2.6.0: `MAX_SKB_FRAGS` = 18).
    pub skb_shinfo: u64,
    /// `sizeof(struct page)` in `mem_map`.
    pub page_struct: u64,
    /// Low memory the kernel holds before any workload: image, boot-time hash tables,
    /// the booted system's slab and the page-allocator's reserve.
    pub kernel_reserved: u64,
}

/// 2.4 i386 (2.4.7 – 2.4.20, 2.5).
pub const KMEM_24: Kmem = Kmem {
    task: 8192,
    process: 400 + 4096 + 3 * 4096 + 16 * 96 + 1312 + 640,
    socket: 1280 + 480 + 128 + 96,
    pipe: 4096 + 480 + 128 + 2 * 96,
    skb_head: 168,
    skb_shinfo: 56,
    page_struct: 56,
    kernel_reserved: 32 << 20,
};

/// 2.6.0 i386: the `task_struct` moved out of the stack into its own slab, `mem_map`'s
/// `struct page` shrank (no wait queue, no hash links), the skb's shared info grew.
pub const KMEM_26: Kmem = Kmem {
    task: 8192 + 1536,
    process: 512 + 4096 + 3 * 4096 + 16 * 96 + 1344 + 1536 + 640,
    socket: 640 + 512 + 160 + 128,
    pipe: 4096 + 512 + 160 + 2 * 128,
    skb_head: 192,
    skb_shinfo: 160,
    page_struct: 40,
    kernel_reserved: 32 << 20,
};

/// 6.x x86-64 (only [`Limits::kmem_kb`] = `None` machines run it: no low memory).
pub const KMEM_6: Kmem = Kmem {
    task: 16384 + 10240,
    process: 1152 + 4096 * 5 + 16 * 200 + 2112 + 768,
    socket: 1088 + 768 + 192 + 256,
    pipe: 16 * 4096 + 768 + 192 + 2 * 256,
    skb_head: 256,
    skb_shinfo: 320,
    page_struct: 64,
    kernel_reserved: 64 << 20,
};

impl Kmem {
    /// A new process's low memory; with PAE (`CONFIG_HIGHMEM64G`, which a 32-bit kernel
    /// needs to use more than 4 GB) the pgd page becomes a small pgd and three pmd pages.
    pub fn process(&self, pae: bool) -> u64 {
        self.process + if pae { 2 * 4096 } else { 0 }
    }

    /// Low memory of one skb carrying `data` bytes: the head, and the data aligned to a
    /// cache line (`SKB_DATA_ALIGN`, 32 bytes on P6) plus the shared info, rounded up to
    /// its `kmalloc` size class (powers of two from 32 bytes).
    pub fn skb(&self, data: u64) -> u64 {
        let body = data.div_ceil(32) * 32 + self.skb_shinfo;
        self.skb_head + body.next_power_of_two().max(32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_before_2_4_18_keep_the_2_4_16_limits_of_the_presets() {
        for ram in [512, 1024, 2560, 4096] {
            for n in [7, 14, 16, 17] {
                let l = Release::V2_4(n).limits(ram, Some(I386_LOWMEM_MB), 8);
                let old = Limits::for_ram(ram);
                assert_eq!(
                    (l.ram_mb, l.max_threads, l.nproc, l.file_max, l.pid_max),
                    (
                        old.ram_mb,
                        old.max_threads,
                        old.nproc,
                        old.file_max,
                        old.pid_max
                    )
                );
                assert!(l.nproc_binds_root);
            }
        }
    }

    #[test]
    fn each_release_s_formulas() {
        // 1 GB: 262 144 pages; 8 KB stacks → 16 384 threads, NPROC 8 192.
        assert_eq!(Release::V2_4(18).max_threads(1024), 16384);
        assert!(!Release::V2_4(18).nproc_binds_root());
        assert_eq!(Release::V2_4(18).file_max(4096), NR_FILE);
        assert_eq!(Release::V2_4(20).file_max(1024), 104_857);
        assert_eq!(Release::V2_6_0.file_max(1024), 104_857);
        assert_eq!(Release::V2_6_0.file_max(64), NR_FILE);
        assert_eq!(Release::V2_6_0.max_threads(1), 20);
        assert_eq!(Release::V2_6_0.pid_max(8), 32768);
        // 6.x: 16 KB stacks, 1024 pids per CPU.
        assert_eq!(Release::V6(12).max_threads(1024), 8192);
        assert_eq!(Release::V6(12).pid_max(64), 65536);
        assert_eq!(Release::V6(12).pid_max(8192), PID_MAX_LIMIT_64);
    }

    #[test]
    fn more_ram_leaves_less_low_memory() {
        let r = Release::V2_6_0;
        let b1 = r.lowmem_budget(1024, I386_LOWMEM_MB);
        let b8 = r.lowmem_budget(8192, I386_LOWMEM_MB);
        // mem_map of 8 GB at 40 bytes a page: 80 MB, against 10 MB for 1 GB.
        assert_eq!(b1 - b8, (8192 - 1024) * 256 * 40);
        assert!(r.lowmem_budget(512, I386_LOWMEM_MB) < b1);
    }

    #[test]
    fn an_skb_rounds_up_to_its_kmalloc_class() {
        // 100 bytes: 128 aligned; 2.4 + 56 → 184 → kmalloc-256; 2.6 + 160 → 288 → 512.
        assert_eq!(KMEM_24.skb(100), 168 + 256);
        assert_eq!(KMEM_26.skb(100), 192 + 512);
        assert_eq!(KMEM_24.skb(4000), 168 + 4096);
    }
}
