//! The modelled multiprocessor: topology, named costs, caches and spinlocks.
//!
//! Design: a [`Machine`] is a preset ([`preset::Preset`]) booted with some number of CPUs.
//! Every cost is a named field of [`Costs`] whose doc comment cites the machine fact it
//! comes from (`benchmarks.md` §6). The machine knows no policy and no task program: the
//! kernel asks it what an operation costs (a switch, a copy, a cache refill, a lock
//! hand-over) and charges the answer to the CPU doing the work.
//!
//! What a cost *is* depends on the load: line transfers queue on the front-side buses and
//! scheduler data lines move between caches ([`interconnect`]), and spinlocks hand over
//! as 2.4's test-and-test-and-set locks did ([`spinlock`]). Each of these mechanisms can
//! be switched off on the command line (`--machine piii700-1m:bus=off,lock=ticket`) to
//! see which result it makes ([`Model`]).
//!
//! Invariants: costs are fixed for a run; one set of constants per preset, shared by every
//! policy and workload (the fidelity rule of `system.md`).

pub mod bus;
pub mod cache;
pub mod catalog;
pub mod cpumask;
pub mod host;
pub mod hotline;
pub mod interconnect;
pub mod layout;
pub mod preset;
pub mod spinlock;
pub mod tasklist;
pub mod today;

pub use cache::CacheModel;
pub use cpumask::{CpuMask, MAX_CPUS};
pub use interconnect::{Interconnect, LineId, LockKind, Model};
pub use layout::{Buses, Layout};
pub use preset::{Costs, CpuIds, Limits, Preset, I386_LOWMEM_MB, PID_MAX, PRESETS};
pub use spinlock::{LockId, LockStats, SpinLock};

crate::options! {
    /// The machine model's switches, given after the preset name.
    pub struct ModelOptions in MODEL_PARAMS {
        bus: bool = flag("on").help("line transfers occupy front-side bus slots and queue")
            .source("benchmarks.md §6.1 (100 MHz FSB, 800 MB/s peak)");
        lock: String = choice("ttas", &["ttas", "ticket"])
            .help("spinlocks: 2.4 i386 test-and-test-and-set, or FIFO tickets (one transfer per hand-off)")
            .source("2.4 include/asm-i386/spinlock.h");
        coherence: bool = flag("on")
            .help("scheduler lines, pipe and socket state, and a thread group's files_struct and cpu_vm_mask lines written by another CPU cost cache-to-cache transfers; a line's transfers queue")
            .source("benchmarks.md §6.3");
        net: bool = flag("on")
            .help("what every TCP packet over loopback shares whatever its socket (kernels before 6.x): lo's queue_lock and xmit_lock, its statistics and refcount lines, the route's refcount, hh_lock, xtime_lock (before 2.6) and the global timerlist_lock (before 2.5.40)")
            .source("2.4 net/core/dev.c dev_queue_xmit, netif_rx; drivers/net/loopback.c; kernel/timer.c");
        lo_queue: String = choice("start", &["start", "end"])
            .help("when a TCP segment or UDP datagram over loopback reaches its reader: at the start of the sender's system call (the calibrated model), or at the end of its path on the sending CPU (causal; not the default while ACKs are sent by every draining read instead of riding on replies, which the early arrival offsets)")
            .source("docs/calibration.md, \"Loopback packets arrive at the end of their path\"");
        tcp_delack: bool = flag("off")
            .help("TCP's delayed ACKs: in pingpong mode (a reply within ato of the data) the reader's ACK rides on its reply or is sent by the delayed-ACK timer after ato (HZ/25); off: every draining read sends its ACK at once (the calibrated model)")
            .source("2.4 net/ipv4/tcp.c cleanup_rbuf, tcp_output.c tcp_event_data_sent, tcp_timer.c tcp_delack_timer");
        tcp_nospace: String = choice("auto", &["auto", "on", "off"])
            .help("an ACK wakes a TCP socket's sleepers (`write_space`) only when a writer found the send buffer full (SOCK_NOSPACE), as tcp_check_space does in every release; off: on every ACK that leaves room (the era's calibrated model); auto: on for 6.x policies, off for the era's")
            .source("2.4 and 6.x net/ipv4/tcp_input.c tcp_check_space; docs/calibration.md, \"6.x's own paths\"");
        pipe_ring: String = choice("auto", &["auto", "on", "off"])
            .help("pipes as 2.6.11 and later keep them: a ring of page buffers, full when every slot is taken (small writes merge into the newest page), readers and writers asleep on their own wait queues one at a time (exclusive), a writer woken by a read of a full pipe and a reader by a write to an empty one; off: 2.4's one buffer of pipe_buf_bytes, every sleeper woken; auto: on for 6.x policies, off for the era's")
            .source("6.12 fs/pipe.c pipe_read, pipe_write; 2.4 fs/pipe.c");
        pipe_depth: bool = flag("on")
            .help("a 100-byte message read from a 6.x pipe costs what the host measured at the depth it was written (the pipe data its writer's CPU wrote after it, a curve over the host's caches); off: nothing by depth. Host presets that measured the curve only")
            .source("docs/calibration.md, \"6.x's pipe: a ring of pages\"");
        skb_depth: bool = flag("on")
            .help("an AF_UNIX skb costs what the host measured at the depth it was queued (the skb bytes its writer's CPU queued after it, a curve over the host's caches); off: one step at the L2 (skb_cold_ns). Host presets that measured the curve only")
            .source("docs/calibration.md, \"How deep an skb was queued\"");
        skb_shared: bool = flag("on")
            .help("an AF_UNIX skb read after another CPU last touched the skb allocator's shared state (the slab node's list, the memory cgroup's page counter) costs what the host measured at its depth; off: only a cold skb pays, one price (skb_page_shared_ns). Host presets that measured the curve only")
            .source("docs/calibration.md, \"Two CPUs share the skb allocator\"");
        switch_refill: bool = flag("on")
            .help("a switched-in task's running state, the state of its sleep after a wake-up, and its mm cost what the host measured by how many switches its CPU made since it last ran there (task_refill_ns, wake_refill_ns, mm_refill_ns); off: the cache model refills kernel_footprint_bytes. Host presets that measured the curves only")
            .source("docs/calibration.md, \"What a switched-in task brings back\"");
        ram_mb: Option<u64> = int("auto", 16, 65536).unit("MB")
            .help("RAM, which sets max_threads, RLIMIT_NPROC's default, file-max (2.4.20, 2.6) and mem_map's share of low memory; auto: the preset's")
            .source("the preset (schedlab list machines)");
        nproc: Option<u64> = int("auto", 1, 1 << 20).unit("tasks")
            .help("RLIMIT_NPROC (ulimit -u); auto: max_threads / 2, as fork_init set it")
            .source("benchmarks.md §1.4");
        sockets: Option<u64> = int("auto", 1, 8).unit("packages")
            .help("packages booted, all their threads, numbered as a box of that many sockets would number them (today's presets); auto: all")
            .source("the preset (schedlab list machines --detail NAME)");
        nps: Option<u64> = int("auto", 1, 4).unit("nodes")
            .help("NUMA nodes per socket, the BIOS's NPS1/2/4 (zen3-2s); auto: 1")
            .source("AMD EPYC 7003 BIOS option NPS");
        file_max: Option<u64> = int("auto", 16, 1 << 24).unit("files")
            .help("fs.file-max, open files system-wide; auto: the policy's kernel's (NR_FILE = 8192 in 2.4 before 2.4.20, files_init's 10 % of RAM after)")
            .source("benchmarks.md §1.4");
    }
}

impl ModelOptions {
    /// The limits these options set by hand, over the release's.
    pub fn limit_options(&self) -> LimitOptions {
        LimitOptions {
            ram_mb: self.ram_mb,
            nproc: self.nproc,
            file_max: self.file_max,
        }
    }

    /// The model these options select.
    pub fn model(&self) -> Model {
        Model {
            bus: self.bus,
            lock: if self.lock == "ticket" {
                LockKind::Ticket
            } else {
                LockKind::Ttas
            },
            coherence: self.coherence,
        }
    }
}

use crate::engine::Time;

/// Index of a CPU, `0..cpus`.
pub type CpuId = usize;

/// A booted machine: a preset and the number of CPUs `maxcpus=` left online.
#[derive(Clone, Debug)]
pub struct Machine {
    /// The preset this machine was booted from.
    pub preset: &'static Preset,
    /// CPUs online.
    pub cpus: usize,
    /// The mechanisms switched on.
    pub model: Model,
    /// The kernel's resource limits: the policy's release's on the preset's RAM
    /// ([`Machine::boot_release`]), unless raised on the command line
    /// (`--machine piii700-1m:file_max=16384,nproc=16384`).
    pub limits: Limits,
    /// The limits given on the command line.
    pub limit_options: LimitOptions,
    /// The loopback path's shared locks and lines are priced (`net=on`,
    /// [`crate::kernel::net`]).
    pub net_shared: bool,
    /// A packet over loopback reaches its reader at the end of its path, not at the
    /// start of the sender's call (`lo_queue=end`, [`crate::kernel::chan::Skb::visible_at`]).
    pub lo_queue_at_end: bool,
    /// TCP's delayed and piggybacked ACKs (`tcp_delack=on`, [`crate::kernel`]'s tcp).
    pub tcp_delack: bool,
    /// An ACK wakes a TCP writer only after it found the buffer full (`tcp_nospace=on`);
    /// `None`: as the policy's release (`auto`).
    pub tcp_nospace: Option<bool>,
    /// Pipes keep 6.x's ring of page buffers (`pipe_ring=on`, [`crate::kernel::chan::PipeRing`]);
    /// `None`: as the policy's release (`auto`).
    pub pipe_ring: Option<bool>,
    /// A 6.x pipe's data is priced by the depth it was written at (`pipe_depth=on`, the
    /// preset's `pipe_depth_ns` curve).
    pub pipe_depth: bool,
    /// An AF_UNIX skb is priced by the depth it was queued at (`skb_depth=on`, the
    /// preset's `skb_depth_ns` curve) rather than by one step at the L2.
    pub skb_depth: bool,
    /// An AF_UNIX skb freed after another CPU touched the allocator's shared state pays
    /// by its depth (`skb_shared=on`, the preset's `skb_shared_ns` curve) rather than, cold
    /// skbs only, `skb_page_shared_ns`.
    pub skb_shared: bool,
    /// A switched-in task's refill is priced by the preset's reuse-distance curves
    /// (`switch_refill=on`, `task_refill_ns` …) rather than by the cache model.
    pub switch_refill: bool,
    /// Each CPU's bus, package and core, as line transfers see them.
    pub layout: std::sync::Arc<Layout>,
}

/// Limits set by hand on the command line (`ram_mb=`, `nproc=`, `file_max=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitOptions {
    /// RAM in MB.
    pub ram_mb: Option<u64>,
    /// `RLIMIT_NPROC`.
    pub nproc: Option<u64>,
    /// `fs.file-max`.
    pub file_max: Option<u64>,
}

impl LimitOptions {
    /// True when nothing was set by hand.
    pub fn is_empty(&self) -> bool {
        *self == LimitOptions::default()
    }
}

impl Machine {
    /// Boot the machine `spec` names (`PRESET[:bus=off,lock=ticket,coherence=off]`) with
    /// `cpus` CPUs (`None` = all of them).
    pub fn boot_spec(spec: &str, cpus: Option<usize>) -> Result<Machine, crate::spec::SpecError> {
        let spec = crate::spec::Spec::parse("machine", spec)?;
        let preset = catalog::lookup(&spec.name)?;
        let params = crate::spec::resolve("machine", &spec, MODEL_PARAMS)?;
        let opts = ModelOptions::from_params(&params);
        let preset = match (opts.sockets, opts.nps) {
            (None, None) => preset,
            (s, n) => today::variant(&spec.name, s.map(|s| s as usize), n.map(|n| n as usize))
                .map_err(crate::spec::SpecError::Invalid)?,
        };
        let mut m = Machine::boot(preset, cpus).map_err(crate::spec::SpecError::Invalid)?;
        m.model = opts.model();
        m.model.bus &= preset.shared_bus;
        m.limit_options = opts.limit_options();
        m.net_shared = opts.net;
        m.lo_queue_at_end = opts.lo_queue == "end";
        m.tcp_delack = opts.tcp_delack;
        m.skb_depth = opts.skb_depth;
        m.pipe_depth = opts.pipe_depth;
        m.skb_shared = opts.skb_shared;
        m.switch_refill = opts.switch_refill;
        m.pipe_ring = match opts.pipe_ring.as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        };
        m.tcp_nospace = match opts.tcp_nospace.as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        };
        // Until a kernel boots its release's (`Simulation` always does): the preset's.
        let base = opts
            .ram_mb
            .map_or_else(|| preset.limits.clone(), Limits::for_ram);
        m.limits = m.tuned(base);
        Ok(m)
    }

    /// Boot `preset` with `cpus` CPUs (`None` = all of them) and every mechanism on.
    pub fn boot(preset: &'static Preset, cpus: Option<usize>) -> Result<Machine, String> {
        let n = cpus.unwrap_or(preset.cpus);
        if n > MAX_CPUS {
            return Err(format!(
                "--cpus {n} is not possible: the simulator boots at most {MAX_CPUS} CPUs \
                 (the cpumask width)"
            ));
        }
        if n == 0 || n > preset.cpus {
            return Err(format!(
                "--cpus {n} is not possible on {}: it has {} CPUs (accepted: 1..={})",
                preset.name, preset.cpus, preset.cpus
            ));
        }
        Ok(Machine {
            preset,
            cpus: n,
            model: Model {
                bus: Model::default().bus && preset.shared_bus,
                ..Model::default()
            },
            limits: preset.limits.clone(),
            limit_options: LimitOptions::default(),
            net_shared: true,
            lo_queue_at_end: false,
            tcp_delack: false,
            tcp_nospace: None,
            pipe_ring: None,
            skb_depth: true,
            pipe_depth: true,
            skb_shared: true,
            switch_refill: true,
            layout: std::sync::Arc::new(Layout::of(preset, n)),
        })
    }

    /// `base` limits with the preset's `sysctl` settings over them, then what the command
    /// line set by hand. The kernel derives `base` from its release
    /// ([`crate::kernel::release::boot_limits`]).
    pub fn tuned(&self, base: Limits) -> Limits {
        let (p, o) = (self.preset, self.limit_options);
        let mut l = base;
        if let Some(n) = p.pid_max_sysctl {
            l.pid_max = n;
        }
        if let Some(n) = p.file_max_sysctl {
            l.file_max = n;
        }
        if let Some(n) = o.nproc {
            l.nproc = n;
        }
        if let Some(f) = o.file_max {
            l.file_max = f;
        }
        l
    }

    /// The cost table.
    #[inline]
    pub fn costs(&self) -> &'static Costs {
        &self.preset.costs
    }

    /// Which bus a CPU sits on (ProFusion: CPUs 0-3 on bus 0, 4-7 on bus 1; a modern
    /// part: its LLC).
    #[inline]
    pub fn bus_of(&self, cpu: CpuId) -> usize {
        self.layout.bus_of(cpu)
    }

    /// Cost of moving one dirty cache line from `from`'s cache to `to` ([`Layout::line_ns`]).
    #[inline]
    pub fn line_transfer_ns(&self, from: CpuId, to: CpuId) -> Time {
        self.layout.line_ns(self.costs(), from, to)
    }

    /// Cost per line of a burst of dirty lines moved from `from`'s cache to `to` (a copy,
    /// a kernel-state refill): the preset's streaming figure where it has one.
    #[inline]
    pub fn stream_line_ns(&self, from: CpuId, to: CpuId) -> Time {
        match self.costs().c2c_stream_line_ns {
            Some(ns) if from != to => ns,
            _ => self.line_transfer_ns(from, to),
        }
    }

    /// Cost of copying `bytes` of kernel-buffered data whose lines were last written on
    /// `last_cpu` into (or out of) a buffer on `cpu`: an in-cache copy, plus a line
    /// transfer per line when the data sits dirty in another CPU's cache.
    pub fn copy_ns(&self, bytes: u64, last_cpu: Option<CpuId>, cpu: CpuId) -> Time {
        let c = self.costs();
        let copy = bytes * c.copy_ns_per_kb / 1024;
        let remote = match last_cpu {
            Some(from) if from != cpu => {
                let lines = bytes.div_ceil(c.line_bytes);
                lines * self.stream_line_ns(from, cpu)
            }
            _ => 0,
        };
        copy + remote
    }

    /// Timer tick period for a kernel running at `hz`.
    pub fn tick_ns(hz: u32) -> Time {
        crate::engine::SEC / hz as Time
    }
}
