//! Machine presets: the three boxes of the published tables, every cost a named constant.
//!
//! Sources are cited as `B§n` for `../shared/spec/benchmarks.md` section n. Values marked
//! *calibrated* were set by the procedure in `docs/calibration.md` within the range the
//! cited facts allow; values marked *inferred* are derived from facts as explained in place.

use crate::engine::Time;

use super::layout::Buses;

/// Every cost the kernel and the policies charge, in simulated nanoseconds unless named
/// otherwise.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    /// Core clock in MHz. B§6.1: 700 MHz Pentium III Xeon.
    pub cpu_mhz: u64,
    /// System call entry plus exit. B§6.2: lmbench "null call" 0.499 µs on the 4 × 700.
    pub syscall_ns: Time,
    /// `switch_to` between two threads of one mm (stack and register switch, lazy FPU).
    /// Inferred, B§6.3: a reflex thread hop (≈ 3.2 µs) minus the pipe work of the hop.
    pub switch_ns: Time,
    /// Extra cost of a switch to another mm: CR3 reload and the TLB refill that follows.
    /// Inferred, B§6.3: lat_ctx process hop (≈ 5.1 µs) minus reflex thread hop (≈ 3.2 µs).
    pub switch_mm_ns: Time,
    /// Fixed work of `schedule()` outside the policy's own selection (state handling,
    /// bookkeeping, `prepare_to_switch`). Inferred from the same hop budget.
    pub schedule_ns: Time,
    /// Fixed work of `try_to_wake_up()` outside placement (state change, queue insert).
    pub wakeup_ns: Time,
    /// Work of examining one task in a run-queue scan, its line aside: ≈ 30 cycles of
    /// `goodness()` (B§6.3). Where the task's line comes from (L2, another CPU's cache,
    /// memory) is the interconnect's ([`super::interconnect`]); with coherence off every
    /// examined task is one memory miss (B§6.3, Yamamura: the scan misses L2 on almost
    /// every task_struct).
    pub task_examine_ns: Time,
    /// Load-to-use latency of an L2 miss served by memory on an idle bus. B§6.2: 163.69
    /// ns; B§6.3: ≈ 165 ns.
    pub mem_latency_ns: Time,
    /// A write to a line other caches hold shared: the bus invalidation (request, error
    /// and snoop phases of a P6 bus transaction, ≈ 6 clocks of the 100 MHz bus, B§6.1)
    /// without a data phase. Inferred.
    pub upgrade_ns: Time,
    /// One bus slot: two clocks of a 100 MHz front-side bus (B§6.1), the address phase of
    /// a transaction. An invalidation occupies one slot.
    pub bus_slot_ns: Time,
    /// Alignment of task_structs: 2.4 i386 places each at the base of its 8 KB
    /// (`THREAD_SIZE`) kernel stack, so a given line of every task_struct falls in the
    /// same L2 sets and an L2 holds at most `l2_bytes / task_align_bytes` of them
    /// (B§6.3: Yamamura's scan "misses L2 on almost every task").
    pub task_align_bytes: u64,
    /// Slots one 32-byte line occupies: four data clocks of the 64-bit bus (B§6.1: peak
    /// 800 MB/s = 32 bytes per 40 ns).
    pub line_slots: u64,
    /// Cost of walking one wait-queue entry in `__wake_up_common`.
    pub waitq_entry_ns: Time,
    /// An uncontended `lock`-prefixed acquire on P6: tens of cycles (B§6.3).
    pub lock_ns: Time,
    /// Moving one dirty 32-byte line between two CPUs on one ProFusion bus: a
    /// memory-latency-class miss (B§6.3: 150-250 ns for a contended line). *calibrated*
    pub c2c_line_ns: Time,
    /// One line of a burst (a copy, a kernel-state refill) pulled from another CPU's cache
    /// when the CPU keeps many misses in flight and prefetches: a bandwidth, not a latency.
    /// `None`: a burst costs `c2c_line_ns` (or the cross-bus figure) per line, as on the
    /// P6 presets, whose calibration assumed so (B§6.3).
    #[serde(default)]
    pub c2c_stream_line_ns: Option<Time>,
    /// The same across the two ProFusion buses (B§6.1: the coherency filter must forward
    /// the snoop). Inferred: one extra bus crossing on top of `c2c_line_ns`. On a modern
    /// part whose buses are its last-level caches: between two LLCs of one package.
    pub c2c_cross_bus_line_ns: Time,
    /// A dirty line moved between the SMT siblings of one core (their shared L1/L2);
    /// `None`: `c2c_line_ns` (the P6 presets have no SMT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c2c_smt_line_ns: Option<Time>,
    /// A dirty line moved between two packages whose packages hold several buses (a
    /// Zen 3 socket of 8 CCXs); `None`: `c2c_cross_bus_line_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c2c_cross_package_line_ns: Option<Time>,
    /// Pipe `read`/`write` work beyond the syscall: semaphore, bookkeeping, wait-queue
    /// add/remove. Inferred, B§6.3: lat_ctx's measured pipe overhead 2.3 µs per hop is two
    /// syscalls plus two of these.
    pub pipe_call_ns: Time,
    /// AF_UNIX stream `sendmsg`/`recvmsg` work per skb beyond the syscall (skb alloc or
    /// free, queueing). Inferred, B§6.2: AF_UNIX latency 25.7 µs vs pipe 10.8 µs.
    pub unix_call_ns: Time,
    /// `tcp_sendmsg` work per call beyond the syscall and the copy: socket lock, skb
    /// allocation or append, the Nagle test. Inferred: the socket-layer share of a TCP hop,
    /// as AF_UNIX's per-call work (`unix_call_ns`) minus its skb queueing on the peer.
    pub tcp_sendmsg_ns: Time,
    /// `tcp_recvmsg` work per call beyond the syscall and the copy (socket lock, receive
    /// queue walk, `cleanup_rbuf`). Inferred as `tcp_sendmsg_ns`.
    pub tcp_recvmsg_ns: Time,
    /// One data segment through the loopback path on the sending CPU: `tcp_transmit_skb`,
    /// `ip_queue_xmit`, `loopback_xmit`, `netif_rx`, the NET_RX softirq, `ip_rcv`,
    /// `tcp_v4_rcv`, `tcp_rcv_established`. Inferred, B§6.2: lmbench TCP latency 43.5 µs
    /// per round trip = 21.75 µs per hop = 2 syscalls (1.0) + wake-up, schedule and switch
    /// with mm (≈ 2.8, B§6.3) + `tcp_sendmsg` + one segment + `tcp_recvmsg` (lat_tcp is
    /// request/response, so its ACKs ride on the replies) ⇒ segment ≈ 21.75 − 3.8 − 2 × 2.0
    /// ≈ 14 µs.
    pub tcp_segment_ns: Time,
    /// A pure ACK through the same path, sent and processed on the reader's CPU
    /// (`tcp_send_ack` … `tcp_ack`, freeing the acknowledged skbs). Inferred: the segment
    /// path without the data copy, checksum and receive-queue work, ≈ two thirds of it.
    pub tcp_ack_ns: Time,
    /// `udp_sendmsg` per datagram beyond the syscall and the copy, with the whole
    /// loopback path on the sending CPU (`ip_make_skb`, `ip_output`, `loopback_xmit`,
    /// `netif_rx`, the NET_RX softirq, `ip_rcv`, `udp_rcv`, the queueing on the peer).
    /// Inferred, B§6.2: lmbench UDP latency 38.6 µs per round trip = 19.3 µs per hop = 2
    /// syscalls (1.0) + wake-up, schedule and switch with mm (≈ 2.8, B§6.3) + this +
    /// `udp_recvmsg_ns` ⇒ 15.5 µs for both; TCP's 43.5 µs leaves 2.45 µs more per hop for
    /// its heavier segment path and socket lock.
    #[serde(default = "p6_udp_sendmsg_ns")]
    pub udp_sendmsg_ns: Time,
    /// `udp_recvmsg` per datagram beyond the syscall and the copy (`__skb_recv_udp`,
    /// `skb_consume_udp`). Inferred: `tcp_recvmsg_ns` without the socket lock and
    /// `cleanup_rbuf`, ≈ three quarters of it; the rest of B§6.2's 15.5 µs is
    /// `udp_sendmsg_ns`.
    #[serde(default = "p6_udp_recvmsg_ns")]
    pub udp_recvmsg_ns: Time,
    /// An AF_UNIX skb read after more skb bytes than the L2 holds were queued on its
    /// writer's CPU since it: its slab object, head and data come from beyond the L2.
    /// Measured per skb on a host (a deep queue against a shallow one over the same
    /// sockets); `None` on the P6 presets, whose calibration does not separate it.
    #[serde(default)]
    pub skb_cold_ns: Option<Time>,
    /// What reading an AF_UNIX skb costs beyond a shallow queue's, by how deep it was
    /// queued (its depth: the skb bytes its writer's CPU queued after it while it is in
    /// that CPU's L2, then the bytes every CPU of its LLC queued after it): `[depth, ns]`
    /// points, depths increasing, each pricing the band of depths above the previous
    /// point's up to its own; the last band goes on. A reuse-distance curve rather than
    /// `skb_cold_ns`'s one step at the L2: a host's caches beyond the L2 (an LLC, a VM's
    /// share of one, then DRAM) show as further steps. Measured per skb on a host (queues
    /// of doubling depth against a shallow one over the same sockets, each band solved
    /// from the mean over its depths); empty elsewhere, where `skb_cold_ns` applies
    /// (`skb_depth=off` chooses it too).
    #[serde(default, skip_serializing_if = "DepthCurve::is_empty")]
    pub skb_depth_ns: DepthCurve,
    /// What a 100-byte message read from a 6.x pipe's ring costs beyond a shallow one, by
    /// the pipe data its writer's CPU wrote after it (`[depth, ns]` bands as
    /// `skb_depth_ns`'s, per 100 bytes): the page lines written there and read back after
    /// the writes to other pipes have pushed them out of the L2, then the LLC. Measured on
    /// a host (messages across pipes of doubling total depth against 80 pipes 1 deep);
    /// empty elsewhere (`pipe_depth=off` ignores it).
    #[serde(default, skip_serializing_if = "DepthCurve::is_empty")]
    pub pipe_depth_ns: DepthCurve,
    /// An AF_UNIX skb read (and freed) on another CPU than the one that wrote it: its
    /// head and data lines pulled from the writer's cache, its slab object returned to
    /// a remote slab, the writer's `sk_wmem_alloc` line written back. Measured per skb on
    /// a host (messages handed from one CPU to another against both on one CPU); `None`
    /// on the P6 presets, whose `unix_call_ns` was calibrated with it inside.
    #[serde(default)]
    pub skb_remote_ns: Option<Time>,
    /// A cold AF_UNIX skb (see `skb_cold_ns`) freed on a CPU after another CPU freed one
    /// last: its slab page turns over through state every CPU shares (the slab node's
    /// partial list, the page allocator's zone, the memory cgroup's page counter), which
    /// then comes from the other CPU. Measured on a host (a deep queue while another CPU
    /// runs its own, against alone); `None` on the P6 presets.
    #[serde(default)]
    pub skb_page_shared_ns: Option<Time>,
    /// `skb_page_shared_ns` by depth: what reading (and freeing) an AF_UNIX skb costs
    /// when another CPU last touched the skb allocator's shared state, by the skb bytes
    /// its writer's CPU queued after it (`[depth, ns]` bands as `skb_depth_ns`'s). A CPU
    /// whose queued skbs outgrow its own caches of the allocator (the slab's per-CPU
    /// partial slabs, the memory cgroup's per-CPU charge stock of 64 pages) turns them over
    /// through the slab node's `list_lock` and the cgroup's `page_counter`, lines every CPU
    /// shares: the deeper the queue, the more of its skbs do. Measured on a host (queues
    /// of growing depth while another CPU runs its own, against alone); empty elsewhere,
    /// where `skb_page_shared_ns` applies to cold skbs only (`skb_shared=off` chooses it
    /// too).
    #[serde(default, skip_serializing_if = "DepthCurve::is_empty")]
    pub skb_shared_ns: DepthCurve,
    /// Loopback MSS: MTU 16436 − 40 bytes of headers (2.4 drivers/net/loopback.c).
    pub tcp_mss_bytes: u64,
    /// `tcp_wmem[2]`: the send buffer `tcp_new_space` may grow to (2.4: 128 KB).
    pub tcp_wmem_max_bytes: u64,
    /// `connect`+`accept` on loopback. B§6.2: TCP connect 85 µs.
    pub tcp_connect_ns: Time,
    /// In-cache `copy_{to,from}_user` per KB. Inferred from bw_pipe 471 MB/s (B§6.2), which
    /// moves every byte twice through an L1/L2-resident page.
    pub copy_ns_per_kb: Time,
    /// Summing an L1-resident `int` array, per KB (lmbench `sumit`, the loop lat_ctx runs
    /// over its working set). Inferred: the P6 issues one load per cycle, so an unrolled
    /// chain of load-and-add retires at most one 4-byte int per cycle — 256 cycles per
    /// KB at 698 MHz (B§6.2 clock) ≈ 366 ns. Only the hot cost: refilling a cold working
    /// set is the cache model's (`l2_line_ns`, `mem_line_ns`).
    pub sum_ns_per_kb: Time,
    /// `fork()` in the parent (mm copy, task_struct, page tables). B§6.2: lat_proc fork
    /// 335.7 µs for fork+exit+wait; split as below.
    pub fork_ns: Time,
    /// `clone()` of a thread: `fork` without the mm copy. Inferred: task_struct, kernel
    /// stack and files/fs/signal sharing, ≈ a fifth of `fork_ns`.
    pub clone_ns: Time,
    /// Creating one open file (struct file, inode, dentry). B§6.2: open+close 5.24 µs.
    pub file_create_ns: Time,
    /// `execve()` of a small binary. B§6.2: exec 1030.8 µs − fork 335.7 µs.
    pub exec_ns: Time,
    /// `exit()` teardown (mm release). Part of B§6.2's fork figure.
    pub exit_ns: Time,
    /// A forked child's first steps, charged when it first runs: `ret_from_fork`, the
    /// first switch to its new page tables, and the copy-on-write faults of the stack
    /// and data it touches first. Measured on a host (a child's first byte back to its
    /// parent on one CPU, less two process hops); 0 on the P6 presets, whose
    /// calibration keeps it inside `exit_ns` (B§6.2 gives only fork+exit+wait). Not
    /// for threads: `clone` shares the mm.
    #[serde(default)]
    pub fork_child_ns: Time,
    /// `wait4()` reaping a zombie. Part of B§6.2's fork figure.
    pub wait_ns: Time,
    /// Fixed `poll()`/`select()` work. B§6.2: select on 10 fds 4.59 µs.
    pub poll_ns: Time,
    /// Per-fd `poll()` work. B§6.2: ≈ 0.28 µs per fd (select 10→500 fds).
    pub poll_fd_ns: Time,
    /// Timer interrupt: entry, `update_process_times`, exit (policy work is extra).
    pub tick_ns: Time,
    /// Reschedule-IPI handler: entry and exit.
    pub irq_ns: Time,
    /// Sending an IPI: what the sender pays. On the P6 the local APIC is on the die and
    /// the message goes out on the separate serial APIC bus (16.7 MHz; a message and its
    /// EOI take 35-48 APIC clocks, 2-3 µs: J. Lundell, LKML, 8 Oct 2001), so 2.4's
    /// `send_IPI_mask` costs the sender only its local-register accesses: the
    /// `apic_wait_icr_idle` read and the two ICR writes, ≈ 70 cycles at 700 MHz
    /// (inferred). The delivery is `ipi_latency_ns`.
    pub ipi_send_ns: Time,
    /// IPI delivery latency from send to the target's handler. *calibrated* (B§6.3: a
    /// cross-CPU hand-off costs ≈ 4 µs more than a local one, IPI included); consistent
    /// with the serial APIC bus (see `ipi_send_ns`), where one message without its EOI
    /// takes about half of Lundell's 35-48 clocks at 16.7 MHz, 1-1.5 µs.
    pub ipi_latency_ns: Time,
    /// Time for a halted (`hlt`) idle CPU to resume after an interrupt. *calibrated*
    pub idle_exit_ns: Time,
    /// Cache line size. B§6.1: 32 bytes (P6).
    pub line_bytes: u64,
    /// L1 data cache per CPU. B§6.1: 16 KB.
    pub l1_bytes: u64,
    /// L2 per CPU. B§6.1: 1 MB or 2 MB, full speed.
    pub l2_bytes: u64,
    /// Ways of the L1 data cache. P6 family: 16 KB 4-way, i.e. one 4 KB page per way
    /// (general P6 knowledge, like B§6.1's L1 facts, not re-checked in a source).
    pub l1_ways: u64,
    /// Ways of the L2. Pentium III Xeon: 4-way set-associative (general P6 knowledge,
    /// not re-checked); a way of 256 KB or more spans many page colours.
    pub l2_ways: u64,
    /// Page size: i386 4 KB. With ways larger than a page, where a page lands in the L2
    /// depends on its physical frame (page colour).
    pub page_bytes: u64,
    /// Refill of one line from L2 into L1. B§6.3: ≈ 0.35 µs per KB in lat_ctx ≈ one L2 hit
    /// (13 ns, B§6.2) per line.
    pub l2_line_ns: Time,
    /// Dependent loads the L1 missed and the L2 served, per KB of lines (a KB is 16 lines
    /// of 64 bytes: the unit keeps a 4.5 ns load from rounding to 4 or 5): what a
    /// switched-in task's kernel footprint (task_struct, stack, mm, the wait queue it
    /// slept on) costs, those lines being reached one pointer at a time, not streamed.
    /// Measured on a host (dependent loads over half the L2, less over half the L1), whose
    /// prefetchers make a streamed refill (`l2_line_ns`) nearly free; `None`:
    /// `l2_line_ns` per line, as on the P6, whose L2 served both alike (B§6.2–6.3).
    /// Lines from beyond the L2 keep the streaming price (their misses overlap).
    #[serde(default)]
    pub l2_latency_ns_per_kb: Option<Time>,
    /// Refill of one line from memory when a working set streams back in. B§6.3: ≈ 370 MB/s
    /// ⇒ ≈ 86 ns per 32-byte line.
    pub mem_line_ns: Time,
    /// `l2_line_ns` and `mem_line_ns` in picoseconds, where measured finer than a whole
    /// ns (a host): a current core streams a line in 1–2 ns, and rounding that to an
    /// integer would change a working set's refill by up to 2× between two measurements
    /// of the same machine. Used for working-set passes and footprint refills
    /// ([`Costs::stream_refill_ns`]); `None`: the ns fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_line_ps: Option<Time>,
    /// See `l2_line_ps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_line_ps: Option<Time>,
    /// A last-level cache behind the L2, shared by the CPUs of one LLC domain (a host's
    /// L3): its capacity in bytes. A working set the L2 lost but the LLC kept streams
    /// back at `llc_line_ps`, not at the memory price. `None` (the era's and today's
    /// presets): no such level, every L2 miss goes beyond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_bytes: Option<u64>,
    /// The LLC's ways per cache set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_ways: Option<u64>,
    /// Refill of one line from the LLC when a working set streams back in, in ps
    /// (a host: streaming over four L2s, less the same loop within the L1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_line_ps: Option<Time>,
    /// Kernel state a task touches whenever it runs (task_struct, kernel stack, thread
    /// info): refilled, line by line from the CPU it last ran on, when it moves.
    /// Inferred: ≈ 1.7 KB task_struct + the used part of the 8 KB stack.
    pub kernel_footprint_bytes: u64,
    /// What a task switched in on the CPU it last ran on costs to refill its running
    /// state (its task_struct's hot lines, the top of its kernel stack, its FPU state) by
    /// how many context switches that CPU made since it last switched the task in
    /// (`[switches, ns]` bands as `skb_depth_ns`'s; 1 is two tasks taking turns, the
    /// calibration's case, and costs nothing). A reuse-distance curve in place of the
    /// cache model's all-or-nothing refill of `kernel_footprint_bytes`. Measured on a host
    /// (threads yielding in turn on one CPU, 2 to 64 of them); empty elsewhere
    /// (`switch_refill=off` chooses the cache model too).
    #[serde(default, skip_serializing_if = "DepthCurve::is_empty")]
    pub task_refill_ns: DepthCurve,
    /// Beyond `task_refill_ns`, what a task switched in after a wake-up costs (the state
    /// of its sleep: the frames it blocked in, its wait-queue entry, what it slept on), by
    /// the same distance. Measured on a host (threads passing a token round a ring of
    /// pipes on one CPU, less the yielding threads); empty elsewhere.
    #[serde(default, skip_serializing_if = "DepthCurve::is_empty")]
    pub wake_refill_ns: DepthCurve,
    /// Beyond both, what switching to an mm costs (its page tables' upper levels, the TLB
    /// entries `switch_mm` gave up) by the context switches the CPU made since it last
    /// switched to that mm; an mm never run there pays the last band. Measured on a host
    /// (processes round a ring of pipes on one CPU, less threads); empty elsewhere.
    #[serde(default, skip_serializing_if = "DepthCurve::is_empty")]
    pub mm_refill_ns: DepthCurve,
    /// Per-skb overhead charged to a socket's send buffer (`truesize` − data).
    /// Inferred from 2.4 `alloc_skb`: the sk_buff head plus shared-info and alignment.
    pub skb_overhead_bytes: u64,
    /// Pipe buffer: one page. B§1.1: `PIPE_SIZE = PAGE_SIZE` = 4096.
    pub pipe_buf_bytes: u64,
    /// AF_UNIX default `sk_sndbuf`. B§1.1: 65535 (`SK_WMEM_MAX`).
    pub unix_sndbuf_bytes: u64,
    /// TCP default send buffer: 2.4 `sysctl_tcp_wmem[1]` = 16384.
    pub tcp_sndbuf_bytes: u64,
    /// True when idle CPUs poll `need_resched` (`idle=poll`) instead of halting; the era's
    /// default was `hlt` (B§4: "idle=poll did not cure it").
    pub idle_poll: bool,
}

impl Costs {
    /// What a streamed refill of `from_l2` lines from the L2 and `from_outside` from
    /// beyond it costs, at picosecond precision where the preset has it.
    pub fn stream_refill_ns(&self, from_l2: u64, from_outside: u64) -> Time {
        match (self.l2_line_ps, self.mem_line_ps) {
            (Some(l2), Some(mem)) => (from_l2 * l2 + from_outside * mem) / 1000,
            _ => from_l2 * self.l2_line_ns + from_outside * self.mem_line_ns,
        }
    }

    /// What a streamed refill of `lines` from the LLC costs (0 where there is none: the
    /// cache model then finds no line there).
    pub fn llc_refill_ns(&self, lines: u64) -> Time {
        lines * self.llc_line_ps.unwrap_or(0) / 1000
    }
}

/// Every field of [`Costs`] in declaration order, with its doc comment: for the P6
/// presets, where its value comes from (`schedlab list machines --detail`). Read from
/// this file's own text, so the list cannot drift from the struct (a unit test checks it
/// against the serialized table).
pub fn cost_docs() -> &'static [(&'static str, String)] {
    static DOCS: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    DOCS.get_or_init(|| {
        let text: &'static str = include_str!("preset.rs");
        let start = text
            .find("pub struct Costs {")
            .expect("Costs is declared here");
        let end = start + text[start..].find("\n}\n").expect("Costs ends");
        let mut doc: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for line in text[start..end].lines().skip(1) {
            let t = line.trim();
            if let Some(d) = t.strip_prefix("///") {
                doc.push(d.trim());
            } else if let Some(f) = t.strip_prefix("pub ") {
                let name = f.split(':').next().unwrap_or(f).trim();
                out.push((name, doc.join(" ")));
                doc.clear();
            } else if !t.starts_with("#[") {
                doc.clear();
            }
        }
        out
    })
}

/// Kernel resource limits: what a release's formulas give on the preset's RAM
/// ([`crate::kernel::release::Release::limits`]), or what a running kernel reported (`host`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Physical memory in MB (sets the thread limits below).
    pub ram_mb: u64,
    /// `max_threads = num_physpages / 2 / 8` (B§1.4, 8 KB stacks).
    pub max_threads: u64,
    /// Default `RLIMIT_NPROC = max_threads / 2`, applied to root too in 2.4.16 (B§1.4).
    pub nproc: u64,
    /// System-wide `file-max`: `NR_FILE` = 8192 in 2.4.16 (B§1.4).
    pub file_max: u64,
    /// The pid space: the model never reuses a pid, so this bounds every task ever
    /// created. 2.4's `PID_MAX` (`0x8000`, fixed at compile time) unless the preset's
    /// kernel raised `kernel.pid_max` (2.6 and later, up to `PID_MAX_LIMIT`). Written out
    /// only when it is not 2.4's.
    #[serde(
        default = "Limits::pid_max_24",
        skip_serializing_if = "Limits::is_pid_max_24"
    )]
    pub pid_max: u64,
    /// `RLIMIT_NPROC` refuses root's forks too (2.4 before 2.4.18; the workloads run as
    /// root). Written out only when false.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub nproc_binds_root: bool,
    /// Low memory left for the workload's kernel objects, in KB (tasks, page tables,
    /// sockets, skbs: [`crate::kernel::release::Kmem`]); `None`: not accounted (a 64-bit
    /// kernel maps all memory). Written out only when accounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kmem_kb: Option<u64>,
}

fn yes() -> bool {
    true
}

fn is_true(v: &bool) -> bool {
    *v
}

/// `PID_MAX` of 2.4 (`0x8000`): fixed at compile time. A preset whose kernel raised
/// `kernel.pid_max` says so in its [`Limits`] (`pid_max`).
pub const PID_MAX: u64 = 32768;

impl Limits {
    /// The limits a 2.4.16 kernel derives from `ram_mb` of RAM.
    pub const fn for_ram(ram_mb: u64) -> Limits {
        let pages = ram_mb * 256;
        let max_threads = pages / 2 / 8;
        Limits {
            ram_mb,
            max_threads,
            nproc: max_threads / 2,
            file_max: 8192,
            pid_max: PID_MAX,
            nproc_binds_root: true,
            kmem_kb: None,
        }
    }

    fn pid_max_24() -> u64 {
        PID_MAX
    }

    fn is_pid_max_24(v: &u64) -> bool {
        *v == PID_MAX
    }
}

/// A named machine. Cloned and edited, it is a machine of one's own (sensitivity
/// studies: [`crate::Simulation::on_machine`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Preset {
    /// Preset name used on the command line.
    pub name: &'static str,
    /// One line for `schedlab list machines`.
    pub description: &'static str,
    /// CPUs fitted.
    pub cpus: usize,
    /// What a bus is: the unit within which a line moves at `c2c_line_ns`
    /// ([`super::layout`]).
    pub buses: Buses,
    /// True when the CPUs share front-side buses whose slots queue (the P6 era). A modern
    /// machine's point-to-point links and meshes are not modelled as a bus: `bus=on` has
    /// no effect there.
    pub shared_bus: bool,
    /// Which CPUs share a core, a last-level cache and a node; `None`: one thread per
    /// core, a private L2 per CPU, one node (the P6 presets).
    pub topology: Option<CpuIds>,
    /// The cost table.
    pub costs: Costs,
    /// Kernel resource limits of the preset's own kernel: the RAM every release's
    /// formulas read, and the limits a policy naming no release boots with.
    pub limits: Limits,
    /// Directly mapped (low) memory of a 32-bit kernel: i386's 896 MB; `None` on a 64-bit
    /// machine. Sets [`Limits::kmem_kb`] with the release's `mem_map`.
    pub lowmem_mb: Option<u64>,
    /// True when `limits` were read from a running kernel (`host`): they stand whatever
    /// release the policy names.
    pub limits_measured: bool,
    /// `kernel.pid_max` as the machine's administrators set it (`sysctl`), over any
    /// release's default.
    pub pid_max_sysctl: Option<u64>,
    /// `fs.file-max` as the machine's administrators set it, likewise.
    pub file_max_sysctl: Option<u64>,
}

/// Per CPU, the ids of its core, last-level cache and NUMA node (from
/// `/sys/devices/system/cpu/cpuN/{topology,cache}` on a host).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuIds {
    /// Core id per CPU (equal ids: SMT siblings).
    pub core: Vec<usize>,
    /// Last-level cache id per CPU.
    pub llc: Vec<usize>,
    /// NUMA node per CPU.
    pub node: Vec<usize>,
    /// Physical package (socket) per CPU; empty: one per node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub package: Vec<usize>,
    /// Node distances as the firmware's SLIT gives them (`numactl -H`), `distance[a][b]`;
    /// empty: 10 within a node and 20 between any two.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distance: Vec<Vec<u32>>,
    /// The kernel's `node_reclaim_distance` where the architecture sets it (AMD Zen:
    /// 32, arch/x86/kernel/cpu/amd.c `init_amd_zen_common`); `None`:
    /// `RECLAIM_DISTANCE` (30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_reclaim_distance: Option<u32>,
}

/// The P6 cost table with an L2 of `l2_bytes` (public: a host file can start from it).
pub const fn piii700(l2_bytes: u64) -> Costs {
    Costs {
        cpu_mhz: 700,
        syscall_ns: 500,
        switch_ns: 350,
        switch_mm_ns: 1_500,
        schedule_ns: 300,
        wakeup_ns: 250,
        task_examine_ns: 43,
        mem_latency_ns: 165,
        upgrade_ns: 60,
        bus_slot_ns: 20,
        line_slots: 2,
        task_align_bytes: 8 * 1024,
        waitq_entry_ns: 30,
        lock_ns: 40,
        c2c_line_ns: 130,
        c2c_cross_bus_line_ns: 330,
        c2c_smt_line_ns: None,
        c2c_cross_package_line_ns: None,
        c2c_stream_line_ns: None,
        pipe_call_ns: 600,
        unix_call_ns: 2_500,
        tcp_sendmsg_ns: 2_000,
        tcp_recvmsg_ns: 2_000,
        tcp_segment_ns: 14_000,
        tcp_ack_ns: 9_000,
        udp_sendmsg_ns: P6_UDP_SENDMSG_NS,
        udp_recvmsg_ns: P6_UDP_RECVMSG_NS,
        skb_cold_ns: None,
        skb_depth_ns: DepthCurve::EMPTY,
        pipe_depth_ns: DepthCurve::EMPTY,
        l2_latency_ns_per_kb: None,
        l2_line_ps: None,
        mem_line_ps: None,
        llc_bytes: None,
        llc_ways: None,
        llc_line_ps: None,
        skb_remote_ns: None,
        skb_page_shared_ns: None,
        skb_shared_ns: DepthCurve::EMPTY,
        tcp_mss_bytes: 16_396,
        tcp_wmem_max_bytes: 128 * 1024,
        tcp_connect_ns: 85_000,
        copy_ns_per_kb: 300,
        sum_ns_per_kb: 366,
        fork_ns: 200_000,
        fork_child_ns: 0,
        clone_ns: 40_000,
        file_create_ns: 2_600,
        exec_ns: 695_000,
        exit_ns: 100_000,
        wait_ns: 10_000,
        poll_ns: 1_800,
        poll_fd_ns: 280,
        tick_ns: 1_500,
        irq_ns: 700,
        ipi_send_ns: 100,
        ipi_latency_ns: 1_500,
        idle_exit_ns: 300,
        line_bytes: 32,
        l1_bytes: 16 * 1024,
        l2_bytes,
        l1_ways: 4,
        l2_ways: 4,
        page_bytes: 4096,
        l2_line_ns: 13,
        mem_line_ns: 86,
        kernel_footprint_bytes: 3 * 1024,
        task_refill_ns: DepthCurve::EMPTY,
        wake_refill_ns: DepthCurve::EMPTY,
        mm_refill_ns: DepthCurve::EMPTY,
        skb_overhead_bytes: 256,
        pipe_buf_bytes: 4096,
        unix_sndbuf_bytes: 65535,
        tcp_sndbuf_bytes: 16384,
        idle_poll: false,
    }
}

/// The P6 table's `udp_sendmsg_ns` (see [`Costs::udp_sendmsg_ns`]).
const P6_UDP_SENDMSG_NS: Time = 14_000;
/// The P6 table's `udp_recvmsg_ns`.
const P6_UDP_RECVMSG_NS: Time = 1_500;

/// A host file written before UDP was modelled: the P6 value, as the file gives for the
/// TCP path it did not measure.
fn p6_udp_sendmsg_ns() -> Time {
    P6_UDP_SENDMSG_NS
}

fn p6_udp_recvmsg_ns() -> Time {
    P6_UDP_RECVMSG_NS
}

/// A measured cost by depth: up to [`DepthCurve::MAX`] `[depth, ns]` points, depths
/// increasing (`Costs::skb_depth_ns`). Fixed-size so that cost tables stay `const`; in a
/// host file it is a list of pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "Vec<[u64; 2]>", into = "Vec<[u64; 2]>")]
pub struct DepthCurve {
    len: usize,
    points: [[u64; 2]; DepthCurve::MAX],
}

impl DepthCurve {
    /// The most points a curve holds.
    pub const MAX: usize = 16;
    /// No points: the step applies.
    pub const EMPTY: DepthCurve = DepthCurve {
        len: 0,
        points: [[0; 2]; DepthCurve::MAX],
    };

    /// The points, depths increasing.
    pub fn points(&self) -> &[[u64; 2]] {
        &self.points[..self.len]
    }

    /// True when nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The price at depth `d`: the band of the first point at or above it, the last band
    /// beyond the last point; 0 when nothing was measured.
    pub fn band(&self, d: u64) -> Time {
        let p = self.points();
        p.iter()
            .find(|p| d <= p[0])
            .or(p.last())
            .map_or(0, |p| p[1])
    }
}

impl Default for DepthCurve {
    fn default() -> Self {
        DepthCurve::EMPTY
    }
}

impl TryFrom<Vec<[u64; 2]>> for DepthCurve {
    type Error = String;
    fn try_from(v: Vec<[u64; 2]>) -> Result<Self, String> {
        if v.len() > DepthCurve::MAX {
            return Err(format!(
                "a depth curve of {} points (accepted: at most {})",
                v.len(),
                DepthCurve::MAX
            ));
        }
        if v.windows(2).any(|w| w[1][0] <= w[0][0]) {
            return Err("a depth curve's depths must increase".into());
        }
        let mut c = DepthCurve::EMPTY;
        c.points[..v.len()].copy_from_slice(&v);
        c.len = v.len();
        Ok(c)
    }
}

impl From<DepthCurve> for Vec<[u64; 2]> {
    fn from(c: DepthCurve) -> Self {
        c.points().to_vec()
    }
}

/// i386's low memory with the 3 GB/1 GB split: 896 MB (`max_low_pfn` stops 128 MB under the
/// 1 GB of kernel address space, kept for `vmalloc` and fixmaps).
pub const I386_LOWMEM_MB: u64 = 896;

/// The P6 cost table at another clock: the kernel paths' CPU work scales with the clock
/// (their cycle counts are the 700 MHz part's); memory, bus and cache-line costs do not.
/// *Inferred*, as [`crate::machine::catalog::numa1024_costs`] does for the Itanium.
pub const fn piii_at(mhz: u64, l2_bytes: u64) -> Costs {
    let p = piii700(l2_bytes);
    Costs {
        cpu_mhz: mhz,
        syscall_ns: p.syscall_ns * 700 / mhz,
        switch_ns: p.switch_ns * 700 / mhz,
        switch_mm_ns: p.switch_mm_ns * 700 / mhz,
        schedule_ns: p.schedule_ns * 700 / mhz,
        wakeup_ns: p.wakeup_ns * 700 / mhz,
        pipe_call_ns: p.pipe_call_ns * 700 / mhz,
        unix_call_ns: p.unix_call_ns * 700 / mhz,
        fork_ns: p.fork_ns * 700 / mhz,
        clone_ns: p.clone_ns * 700 / mhz,
        file_create_ns: p.file_create_ns * 700 / mhz,
        exit_ns: p.exit_ns * 700 / mhz,
        wait_ns: p.wait_ns * 700 / mhz,
        poll_ns: p.poll_ns * 700 / mhz,
        tick_ns: p.tick_ns * 700 / mhz,
        ..p
    }
}

/// One of OSDL's Scalable Test Platform boxes (docs/calibration.md, "OSDL STP"), on
/// which Craig Thomas ran hackbench to resource exhaustion (LKML, 5 Dec 2003).
const fn stp(
    name: &'static str,
    description: &'static str,
    cpus: usize,
    cpus_per_bus: usize,
    costs: Costs,
    ram_mb: u64,
) -> Preset {
    Preset {
        name,
        description,
        cpus,
        buses: Buses::Every(cpus_per_bus),
        shared_bus: true,
        topology: None,
        costs,
        limits: Limits::for_ram(ram_mb),
        lowmem_mb: Some(I386_LOWMEM_MB),
        limits_measured: false,
        pid_max_sysctl: None,
        file_max_sysctl: None,
    }
}

/// The presets, in `schedlab list machines` order.
pub static PRESETS: &[Preset] = &[
    Preset {
        name: "piii700-1m",
        description:
            "8 x Pentium III Xeon 700 MHz, 1 MB L2, ProFusion (2 buses x 4): the Jan 2002 box",
        cpus: 8,
        buses: Buses::Every(4),
        shared_bus: true,
        topology: None,
        costs: piii700(1024 * 1024),
        limits: Limits::for_ram(1024),
        lowmem_mb: Some(I386_LOWMEM_MB),
        limits_measured: false,
        pid_max_sysctl: None,
        file_max_sysctl: None,
    },
    Preset {
        name: "piii700-2m",
        description:
            "8 x Pentium III Xeon 700 MHz, 2 MB L2, ProFusion: the Netfinity 8500R of 2001",
        cpus: 8,
        buses: Buses::Every(4),
        shared_bus: true,
        topology: None,
        costs: piii700(2 * 1024 * 1024),
        limits: Limits::for_ram(2560),
        lowmem_mb: Some(I386_LOWMEM_MB),
        limits_measured: false,
        pid_max_sysctl: None,
        file_max_sysctl: None,
    },
    Preset {
        name: "piii700-4way-1m",
        description: "4 x Pentium III Xeon 700 MHz, 1 MB L2, one bus: the lmbench/tbench box",
        cpus: 4,
        buses: Buses::Every(4),
        shared_bus: true,
        topology: None,
        costs: piii700(1024 * 1024),
        limits: Limits::for_ram(4096),
        lowmem_mb: Some(I386_LOWMEM_MB),
        limits_measured: false,
        pid_max_sysctl: None,
        file_max_sysctl: None,
    },
    // Clocks: lmbench's "Mhz 1000" for stp1-00x and stp2-00x (Cliff White, LKML, 25 Feb
    // 2003); stp4 is a 4-way PIII (Spraul, via Hemminger, 20 Dec 2003; clock not found:
    // the project's 4-way PIII Xeon 700 taken); stp8 is 8 x PIII 700 (Kolivas, 19 Feb 2004)
    // on ProFusion ("8-way Profusion Xeon 700MHz", White, 17 Jan 2003). RAM: stp1 "1GB"
    // (White, 8 Feb 2005); stp2 1 GB inferred (bonnie++'s 2 GB file, twice RAM, Tosatti
    // 9 Aug 2004); stp4 not found, 4 GB taken as piii700-4way-1m; stp8 8 GB ("an 8 way /
    // 8gb OSDL STP machine", Haverkamp, 22 Dec 2003, the month of the test; LWN 2002:
    // "eight processors and 8GB"). L2: not found; 256 KB for the 1 GHz Coppermines, 1 MB
    // for the Xeons.
    stp(
        "osdl-stp1",
        "OSDL STP 1-way: Pentium III 1 GHz, 256 KB L2, 1 GB (Dec 2003 hackbench box)",
        1,
        1,
        piii_at(1000, 256 * 1024),
        1024,
    ),
    stp(
        "osdl-stp2",
        "OSDL STP 2-way: 2 x Pentium III 1 GHz, 256 KB L2, 1 GB (RAM inferred)",
        2,
        2,
        piii_at(1000, 256 * 1024),
        1024,
    ),
    stp(
        "osdl-stp4",
        "OSDL STP 4-way: 4 x Pentium III Xeon 700 MHz, 1 MB L2, 4 GB (clock and RAM assumed)",
        4,
        4,
        piii700(1024 * 1024),
        4096,
    ),
    stp(
        "osdl-stp8",
        "OSDL STP 8-way: 8 x Pentium III Xeon 700 MHz, 1 MB L2, ProFusion, 8 GB",
        8,
        4,
        piii700(1024 * 1024),
        8192,
    ),
];

#[cfg(test)]
mod tests {
    use super::piii700;

    /// A streamed refill is priced in picoseconds where the preset has them, and by the
    /// whole-ns fields where it does not (every era preset).
    #[test]
    fn streamed_refills_keep_sub_ns_prices_where_measured() {
        let mut c = piii700(1 << 20);
        let by_ns = 100 * c.l2_line_ns + 1_000 * c.mem_line_ns;
        assert_eq!(c.stream_refill_ns(100, 1_000), by_ns);
        c.l2_line_ps = Some(400);
        c.mem_line_ps = Some(1_450);
        // 100 x 0.4 + 1 000 x 1.45 ns: neither 1 nor 2 ns a line.
        assert_eq!(c.stream_refill_ns(100, 1_000), 1_490);
        assert_eq!(c.stream_refill_ns(0, 4_096), 5_939);
    }
}
