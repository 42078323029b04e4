//! The result of one run, as the JSON contract of `system.md` and as text for humans.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::kernel::Acct;
use crate::sim::{RunConfig, SimError, Simulation};
pub use crate::workload::Metric;

/// The machine as booted.
#[derive(Clone, Debug, Serialize)]
pub struct MachineReport {
    /// Preset name.
    pub name: String,
    /// Description.
    pub description: String,
    /// CPUs fitted.
    pub cpus_fitted: usize,
    /// Clock.
    pub mhz: u64,
    /// L2 per CPU in KB.
    pub l2_kb: u64,
    /// The model's mechanisms as switched for this run (`--machine NAME:bus=off,...`).
    pub model: crate::machine::Model,
    /// The kernel's resource limits, only when raised from the preset's
    /// (`--machine NAME:file_max=N,nproc=N,ram_mb=N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::machine::Limits>,
}

/// A name with options.
#[derive(Clone, Debug, Serialize)]
pub struct Named {
    /// Name.
    pub name: String,
    /// Effective options or parameters.
    #[serde(rename = "options")]
    pub options: BTreeMap<String, String>,
}

/// A workload with parameters.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadReport {
    /// Name.
    pub name: String,
    /// Parameters as given.
    pub params: BTreeMap<String, String>,
}

/// One lock's counters (locks sharing a name are summed).
#[derive(Clone, Debug, Serialize)]
pub struct LockReport {
    /// Acquisitions.
    pub acquisitions: u64,
    /// Share of acquisitions that spun, in %.
    pub contended_pct: f64,
    /// Mean hold time.
    pub hold_ns_mean: f64,
    /// Mean spin per acquisition.
    pub wait_ns_mean: f64,
    /// Failed trylocks.
    pub trylock_failures: u64,
    /// Test-and-test-and-set hand-offs: CPUs spinning at a contended hand-off, mean
    /// (the grantee included; 0 under `lock=ticket`).
    pub spinners_mean: f64,
    /// Test-and-test-and-set hand-offs: mean time from the release to the grant.
    pub handoff_ns_mean: f64,
}

/// One front-side bus.
#[derive(Clone, Debug, Serialize)]
pub struct BusReport {
    /// Share of the run the bus carried a transfer, in %.
    pub busy_pct: f64,
    /// Transfers (slots) carried.
    pub transfers: u64,
    /// Mean wait for a free slot per transfer.
    pub queue_ns_mean: f64,
}

/// Traffic of scheduler lines, locks and copies between caches.
#[derive(Clone, Debug, Serialize)]
pub struct LineReport {
    /// Scheduler-line reads and writes looked up in the directory.
    pub accesses: u64,
    /// Of which served by the CPU's own cache, in %.
    pub hit_pct: f64,
    /// Line transfers from another CPU's cache.
    pub c2c_transfers: u64,
    /// Of which between the two buses, in %.
    pub cross_bus_pct: f64,
    /// Line reads from memory.
    pub memory_reads: u64,
    /// Invalidations of shared copies.
    pub invalidations: u64,
    /// Cache-to-cache transfers per `schedule()` call.
    pub c2c_per_schedule: f64,
}

/// Where the CPUs' time went, in % of all CPU time.
#[derive(Clone, Debug, Serialize)]
pub struct CpuTime {
    /// Tasks running (user and system).
    pub running_pct: f64,
    /// Scheduler work.
    pub scheduler_pct: f64,
    /// Spinning on locks.
    pub spinning_pct: f64,
    /// Idle.
    pub idle_pct: f64,
}

/// The counters of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Counters {
    /// Context switches, idle included.
    pub context_switches: u64,
    /// Run-queue moves made by the policy.
    pub migrations: u64,
    /// % of task switches whose incoming task last ran on another CPU.
    pub unaffine_switch_pct: f64,
    /// Reschedule IPIs sent.
    pub ipis: u64,
    /// % of CPU time idle.
    pub idle_pct: f64,
    /// Locks by name.
    pub locks: BTreeMap<String, LockReport>,
    /// Front-side buses, in bus order (empty with `bus=off`).
    pub buses: Vec<BusReport>,
    /// Line traffic.
    pub lines: LineReport,
    /// Policy-specific counters.
    pub policy: BTreeMap<String, f64>,
    /// Switches to a non-idle task.
    pub task_switches: u64,
    /// Successful wake-ups.
    pub wakeups: u64,
    /// Timer ticks.
    pub ticks: u64,
    /// System calls.
    pub syscalls: u64,
    /// Tasks created.
    pub forks: u64,
    /// Tasks moved off a CPU their new affinity excludes (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub affinity_moves: u64,
    /// TCP data segments through loopback (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_segments: u64,
    /// TCP pure ACKs through loopback (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_acks: u64,
    /// TCP ACKs that rode on a data segment (shown when any did).
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_piggybacked_acks: u64,
    /// TCP ACKs the delayed-ACK timer sent (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_delayed_acks: u64,
    /// ACKs whose `write_space` woke a TCP socket's sleepers (shown when any did).
    #[serde(skip_serializing_if = "is_zero")]
    pub tcp_write_space_wakes: u64,
    /// UDP datagrams through loopback (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub udp_datagrams: u64,
    /// UDP datagrams dropped at a full receive buffer (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub udp_drops: u64,
    /// TCP calls that slept in `lock_sock` because another task owned the socket (shown
    /// when any did).
    #[serde(skip_serializing_if = "is_zero")]
    pub sock_lock_waits: u64,
    /// Lines of pipe and socket state (locks, queue heads, counters, wait-queue heads)
    /// pulled from the CPU that wrote them last (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub stream_state_transfers: u64,
    /// AF_UNIX skbs read on another CPU than the one that wrote them, each priced
    /// `skb_remote_ns` (shown on presets with that cost when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub skb_remote: u64,
    /// AF_UNIX skbs read after being evicted from their writer's L2 (shown on presets
    /// that price skbs by depth when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub skb_cold: u64,
    /// What the depths of the AF_UNIX skbs read cost in all, ns: the measured curve
    /// `skb_depth_ns` at each skb's depth, or `skb_cold_ns` per cold skb (shown when
    /// not zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub skb_depth_ns: u64,
    /// Reads that freed skbs after another CPU had touched the skb allocator's shared
    /// state, priced by depth (`skb_shared_ns`) or, cold skbs only,
    /// `skb_page_shared_ns` (shown on presets with that cost when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub skb_page_pulls: u64,
    /// What those pulls cost in all, ns (shown when not zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub skb_shared_ns: u64,
    /// 6.x pipes (`pipe_ring`): writes that found every slot of the ring taken and slept
    /// (shown when not zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub pipe_full_waits: u64,
    /// 6.x pipes: reads of a full ring, each waking one writer (shown when not zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub pipe_writer_wakes: u64,
    /// 6.x pipes: what the depth of the data read cost in all, by the host's
    /// `pipe_depth_ns` curve, ns (shown when not zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub pipe_depth_ns: u64,
    /// What switched-in tasks' refills cost by the host's reuse-distance curves
    /// (`task_refill_ns`, `wake_refill_ns`, `mm_refill_ns`), ns (shown when not zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub switch_refill_ns: u64,
    /// Lines `fget` pulled from the CPU that wrote them last: the `files_struct`'s
    /// `file_lock` (2.4 to 2.6.0, and `close` in every release) or, in 6.x, a file's
    /// `f_count` when threads share the table (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub files_line_transfers: u64,
    /// `mm->cpu_vm_mask` lines `switch_mm` pulled from the CPU that wrote them last
    /// (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub vm_mask_transfers: u64,
    /// Mean time those pulls waited for the line to finish moving to another CPU (shown
    /// when any were made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mm_line_wait_ns_mean: Option<f64>,
    /// SysV `semop` calls (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub semops: u64,
    /// Of which slept (shown when any were).
    #[serde(skip_serializing_if = "is_zero")]
    pub semop_sleeps: u64,
    /// `schedule()` calls.
    pub schedule_calls: u64,
    /// Mean time of the scheduler's part of `schedule()`: from requesting the run-queue
    /// lock to releasing it (fixed kernel costs excluded).
    pub schedule_ns_mean: f64,
    /// Of which acquiring locks: spinning, the atomic, line transfers.
    pub schedule_lock_ns_mean: f64,
    /// CPU time by category.
    pub cpu_time: CpuTime,
    /// Wake-up latency over the whole run: from a wake-up (or a new task's first one) to
    /// the task's switch-in.
    pub wakeup_latency: WakeupLatency,
    /// What TCP packets over loopback shared ([`crate::kernel::net`]); absent when no
    /// packet took the shared path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<NetReport>,
}

/// The loopback path's shared locks and lines over a run.
#[derive(Clone, Debug, Serialize)]
pub struct NetReport {
    /// Packets through `dev_queue_xmit` (segments and ACKs).
    pub packets: u64,
    /// `mod_timer` calls under the global `timerlist_lock`.
    pub mod_timers: u64,
    /// Shared lines pulled from another CPU's cache, per packet.
    pub line_transfers_per_packet: f64,
    /// Time pulling them per packet, ns.
    pub line_ns_per_packet: f64,
    /// % of all CPU time spent waiting for the path's locks.
    pub lock_wait_pct: f64,
    /// lo's `queue_lock`, lo's `xmit_lock` and `timerlist_lock` (the last absent from
    /// 2.5.40).
    pub locks: BTreeMap<String, LockReport>,
}

fn net_report(n: &crate::kernel::net::NetStats, cpu_total_ns: u64) -> NetReport {
    let lock = |l: &crate::kernel::net::NetLockStats| {
        let a = l.acquisitions.max(1) as f64;
        LockReport {
            acquisitions: l.acquisitions,
            contended_pct: pct(l.contended as f64, l.acquisitions as f64),
            hold_ns_mean: round(l.hold_ns as f64 / a),
            wait_ns_mean: round(l.wait_ns as f64 / a),
            trylock_failures: 0,
            spinners_mean: 0.0,
            handoff_ns_mean: 0.0,
        }
    };
    let mut locks = BTreeMap::new();
    locks.insert("lo queue_lock".to_string(), lock(&n.queue_lock));
    locks.insert("lo xmit_lock".to_string(), lock(&n.xmit_lock));
    if n.timerlist_lock.acquisitions > 0 {
        locks.insert("timerlist_lock".to_string(), lock(&n.timerlist_lock));
    }
    let wait = n.queue_lock.wait_ns + n.xmit_lock.wait_ns + n.timerlist_lock.wait_ns;
    let p = n.packets.max(1) as f64;
    NetReport {
        packets: n.packets,
        mod_timers: n.mod_timers,
        line_transfers_per_packet: round(n.line_transfers as f64 / p),
        line_ns_per_packet: round(n.line_ns as f64 / p),
        lock_wait_pct: pct(wait as f64, cpu_total_ns as f64),
        locks,
    }
}

/// Wake-up latency percentiles (within 0.8 %; the maximum is exact).
#[derive(Clone, Debug, Serialize)]
pub struct WakeupLatency {
    /// Wake-ups followed by a switch-in.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// Maximum, ns.
    pub max_ns: u64,
}

/// Simulator facts.
#[derive(Clone, Debug, Serialize)]
pub struct SimInfo {
    /// Simulated time.
    pub simulated_ns: u64,
    /// Events handled.
    pub events: u64,
}

/// The report of one run (`schedlab run --format json`).
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Machine.
    pub machine: MachineReport,
    /// CPUs online.
    pub cpus: usize,
    /// Policy.
    pub policy: Named,
    /// Workload.
    pub workload: WorkloadReport,
    /// Seed.
    pub seed: u64,
    /// Result.
    pub result: Metric,
    /// Counters.
    pub counters: Counters,
    /// Simulator facts.
    pub sim: SimInfo,
    /// Why the class's own scheduler ended during the run (sched_ext: an error or the
    /// watchdog), if it did; the run went on without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_exit: Option<String>,
}

fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        round(100.0 * a / b)
    } else {
        0.0
    }
}

/// Round to 4 decimals so the JSON is short and stable.
pub fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `result.details.schedstats`: per task group, the `/proc/PID/sched` statistics
/// ([`crate::kernel::schedstat`]), beside what the workload itself details.
fn with_schedstats(mut m: Metric, groups: Vec<crate::kernel::schedstat::GroupStat>) -> Metric {
    let stats = serde_json::to_value(groups).expect("schedstats serialize");
    match m.details.as_mut() {
        Some(serde_json::Value::Object(o)) => {
            o.insert("schedstats".into(), stats);
        }
        Some(other) => {
            let workload = other.take();
            m.details = Some(serde_json::json!({ "workload": workload, "schedstats": stats }));
        }
        None => m.details = Some(serde_json::json!({ "schedstats": stats })),
    }
    m
}

pub(crate) fn build(sim: &Simulation, result: Metric) -> RunReport {
    let k = &sim.k;
    let preset = k.machine.preset;
    let (pspec, wspec) = sim.specs();
    let mut sums: BTreeMap<String, crate::machine::LockStats> = BTreeMap::new();
    for l in &k.locks {
        let e = sums.entry(l.name.to_string()).or_default();
        e.acquisitions += l.stats.acquisitions;
        e.contended += l.stats.contended;
        e.hold_ns += l.stats.hold_ns;
        e.wait_ns += l.stats.wait_ns;
        e.trylock_failures += l.stats.trylock_failures;
        e.handoff_ns += l.stats.handoff_ns;
        e.spinners += l.stats.spinners;
    }
    let locks = sums
        .into_iter()
        .map(|(name, s)| {
            let a = s.acquisitions.max(1) as f64;
            let c = s.contended.max(1) as f64;
            let r = LockReport {
                acquisitions: s.acquisitions,
                contended_pct: pct(s.contended as f64, s.acquisitions as f64),
                hold_ns_mean: round(s.hold_ns as f64 / a),
                wait_ns_mean: round(s.wait_ns as f64 / a),
                trylock_failures: s.trylock_failures,
                spinners_mean: round(s.spinners as f64 / c),
                handoff_ns_mean: round(s.handoff_ns as f64 / c),
            };
            (name, r)
        })
        .collect();
    let run_ns = k.now.max(1) as f64;
    let buses = if k.machine.model.bus {
        k.ic.bus_stats()
            .map(|b| BusReport {
                busy_pct: pct(b.busy_ns as f64, run_ns),
                transfers: b.transfers,
                queue_ns_mean: round(b.queued_ns as f64 / b.transfers.max(1) as f64),
            })
            .collect()
    } else {
        Vec::new()
    };
    let t = &k.ic.stats;
    let lines = LineReport {
        accesses: t.line_accesses,
        hit_pct: pct(t.line_hits as f64, t.line_accesses as f64),
        c2c_transfers: t.c2c_transfers,
        cross_bus_pct: pct(t.cross_bus_transfers as f64, t.c2c_transfers as f64),
        memory_reads: t.memory_reads,
        invalidations: t.invalidations,
        c2c_per_schedule: round(t.c2c_transfers as f64 / k.stats.schedule_calls.max(1) as f64),
    };
    let total: u64 = k.cpus.iter().map(|c| c.clock).sum();
    let by = |cat: Acct| k.cpus.iter().map(|c| c.acct[cat as usize]).sum::<u64>() as f64;
    let cpu_time = CpuTime {
        running_pct: pct(by(Acct::Running), total as f64),
        scheduler_pct: pct(by(Acct::Sched), total as f64),
        spinning_pct: pct(by(Acct::Spin), total as f64),
        idle_pct: pct(by(Acct::Idle), total as f64),
    };
    let s = &k.stats;
    RunReport {
        machine: MachineReport {
            name: preset.name.to_string(),
            description: preset.description.to_string(),
            cpus_fitted: preset.cpus,
            mhz: preset.costs.cpu_mhz,
            l2_kb: preset.costs.l2_bytes / 1024,
            model: k.machine.model,
            limits: (!k.machine.limit_options.is_empty()).then(|| k.machine.limits.clone()),
        },
        cpus: k.cpus.len(),
        policy: Named {
            name: pspec.name.clone(),
            options: sim.policy().options(),
        },
        workload: WorkloadReport {
            name: wspec.name.clone(),
            params: sim.workload_params(),
        },
        seed: sim.config().seed,
        result: with_schedstats(
            Metric {
                value: round(result.value),
                ..result
            },
            crate::kernel::schedstat::by_group(
                k.tasks
                    .iter()
                    .filter(|t| !t.is_idle)
                    .map(|t| (t.comm.as_deref(), t.stats.runtime_ns, &t.stats.sched)),
                &wspec.name,
            ),
        ),
        counters: Counters {
            context_switches: s.context_switches,
            migrations: s.migrations,
            unaffine_switch_pct: pct(s.unaffine_switches as f64, s.task_switches as f64),
            ipis: s.ipis,
            idle_pct: cpu_time.idle_pct,
            locks,
            buses,
            lines,
            policy: sim
                .policy()
                .counters()
                .into_iter()
                .map(|(k, v)| (k, round(v)))
                .collect(),
            task_switches: s.task_switches,
            wakeups: s.wakeups,
            ticks: s.ticks,
            syscalls: s.syscalls,
            forks: s.forks,
            affinity_moves: s.affinity_moves,
            tcp_segments: s.tcp_segments,
            tcp_acks: s.tcp_acks,
            tcp_piggybacked_acks: s.tcp_piggybacked_acks,
            tcp_delayed_acks: s.tcp_delayed_acks,
            tcp_write_space_wakes: s.tcp_write_space_wakes,
            udp_datagrams: s.udp_datagrams,
            udp_drops: s.udp_drops,
            sock_lock_waits: s.sock_lock_waits,
            stream_state_transfers: s.stream_state_transfers,
            skb_remote: s.skb_remote,
            skb_cold: s.skb_cold,
            skb_depth_ns: s.skb_depth_ns,
            skb_page_pulls: s.skb_page_pulls,
            skb_shared_ns: s.skb_shared_ns,
            pipe_full_waits: s.pipe_full_waits,
            pipe_writer_wakes: s.pipe_writer_wakes,
            pipe_depth_ns: s.pipe_depth_ns,
            switch_refill_ns: s.switch_refill_ns,
            files_line_transfers: s.files_line_transfers,
            vm_mask_transfers: s.vm_mask_transfers,
            mm_line_wait_ns_mean: (s.mm_line_pulls > 0)
                .then(|| round(s.mm_line_wait_ns as f64 / s.mm_line_pulls as f64)),
            semops: s.semops,
            semop_sleeps: s.semop_sleeps,
            schedule_calls: s.schedule_calls,
            schedule_ns_mean: round(s.schedule_ns as f64 / s.schedule_calls.max(1) as f64),
            schedule_lock_ns_mean: round(
                s.schedule_lock_ns as f64 / s.schedule_calls.max(1) as f64,
            ),
            cpu_time,
            wakeup_latency: WakeupLatency {
                count: s.wakeup_latency.count(),
                p50_ns: round(s.wakeup_latency.quantile(0.5)),
                p99_ns: round(s.wakeup_latency.quantile(0.99)),
                max_ns: s.wakeup_latency.max(),
            },
            net: k.net_stats().map(|n| net_report(&n, total)),
        },
        sim: SimInfo {
            simulated_ns: k.now,
            events: k.queue.popped(),
        },
        scheduler_exit: sim.policy().exit_reason(),
    }
}

impl RunReport {
    /// JSON, pretty-printed, keys in a fixed order.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

    /// Text for humans.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let opts = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let _ = writeln!(
            o,
            "{} on {} ({} of {} CPUs), policy {}{}{}, seed {}",
            self.workload.name,
            self.machine.name,
            self.cpus,
            self.machine.cpus_fitted,
            self.policy.name,
            if self.policy.options.is_empty() {
                ""
            } else {
                ":"
            },
            opts(&self.policy.options),
            self.seed
        );
        let _ = writeln!(o, "  params      {}", opts(&self.workload.params));
        let _ = writeln!(
            o,
            "  result      {} = {} {} ({} is better)",
            self.result.metric, self.result.value, self.result.unit, self.result.better
        );
        if let Some(out) = &self.result.output {
            for line in out.lines() {
                let _ = writeln!(o, "  output      {line}");
            }
        }
        if let Some(threads) = self
            .result
            .details
            .as_ref()
            .and_then(|d| d["threads"].as_array())
        {
            // rt-app's per-thread rows (workload/rtapp).
            for t in threads {
                let _ = writeln!(
                    o,
                    "  thread      {:<16} rows {:>6}  run {:>9} us  wake-up latency mean {:>9} max {:>7} us  slack min {:>8} us  timers missed {}",
                    t["name"].as_str().unwrap_or("?"),
                    t["rows"],
                    t["run_us"],
                    t["wakeup_latency_mean_us"],
                    t["wakeup_latency_max_us"],
                    t["slack_min_us"],
                    t["missed_timers"],
                );
            }
        }
        let c = &self.counters;
        let _ = writeln!(
            o,
            "  switches    {} ({} to tasks, {:.1}% unaffine), migrations {}, IPIs {}, wake-ups {}",
            c.context_switches,
            c.task_switches,
            c.unaffine_switch_pct,
            c.migrations,
            c.ipis,
            c.wakeups
        );
        let wl = &c.wakeup_latency;
        let _ = writeln!(
            o,
            "  wake-up     latency p50 {:.2} us  p99 {:.2} us  max {:.2} us ({} wake-ups)",
            wl.p50_ns / 1e3,
            wl.p99_ns / 1e3,
            wl.max_ns as f64 / 1e3,
            wl.count
        );
        let t = &c.cpu_time;
        let _ = writeln!(
            o,
            "  cpu time    running {:.1}%  scheduler {:.1}%  spinning {:.1}%  idle {:.1}%",
            t.running_pct, t.scheduler_pct, t.spinning_pct, t.idle_pct
        );
        for (name, l) in &c.locks {
            let _ = writeln!(
                o,
                "  lock        {name}: {} acquisitions, {:.1}% contended, hold {:.0} ns, wait {:.0} ns, {} failed trylocks",
                l.acquisitions, l.contended_pct, l.hold_ns_mean, l.wait_ns_mean, l.trylock_failures
            );
            if l.spinners_mean > 0.0 {
                let _ = writeln!(
                    o,
                    "              hand-off {:.0} ns with {:.2} CPUs spinning",
                    l.handoff_ns_mean, l.spinners_mean
                );
            }
        }
        if let Some(n) = &c.net {
            let _ = writeln!(
                o,
                "  net path    {} packets over lo, {:.2} shared lines pulled per packet ({:.0} ns), {} mod_timers; waiting for its locks {:.1}% of CPU time",
                n.packets, n.line_transfers_per_packet, n.line_ns_per_packet, n.mod_timers, n.lock_wait_pct
            );
            for (name, l) in &n.locks {
                let _ = writeln!(
                    o,
                    "              {name}: {} acquisitions, {:.1}% contended, hold {:.0} ns, wait {:.0} ns",
                    l.acquisitions, l.contended_pct, l.hold_ns_mean, l.wait_ns_mean
                );
            }
        }
        for (i, b) in c.buses.iter().enumerate() {
            let _ = writeln!(
                o,
                "  bus {i}       busy {:.1}%, {} transfers, queueing {:.1} ns per transfer",
                b.busy_pct, b.transfers, b.queue_ns_mean
            );
        }
        let l = &c.lines;
        if l.accesses > 0 || l.c2c_transfers > 0 {
            let _ = writeln!(
                o,
                "  lines       {} scheduler-line accesses, {:.1}% hits; {} cache-to-cache ({:.1}% cross-bus, {:.1} per schedule), {} from memory, {} invalidations",
                l.accesses, l.hit_pct, l.c2c_transfers, l.cross_bus_pct, l.c2c_per_schedule, l.memory_reads, l.invalidations
            );
        }
        if !c.policy.is_empty() {
            let p: Vec<String> = c.policy.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(o, "  policy      {}", p.join("  "));
        }
        if let Some(why) = &self.scheduler_exit {
            let _ = writeln!(
                o,
                "  scheduler   ENDED: {why} (the run went on in bypass mode: one global FIFO)"
            );
        }
        let _ = writeln!(
            o,
            "  simulated   {:.6} s in {} events",
            self.sim.simulated_ns as f64 / 1e9,
            self.sim.events,
        );
        o
    }
}

impl Simulation {
    /// The report of a finished run.
    pub fn report(&self) -> Result<RunReport, SimError> {
        let result = self
            .workload()
            .result(&self.k.rec, &self.k)
            .map_err(SimError::Workload)?;
        Ok(build(self, result))
    }
}

/// Build, run and report in one call.
pub fn run(config: RunConfig) -> Result<RunReport, SimError> {
    let mut sim = Simulation::new(config)?;
    sim.run(&mut |_, _| {})?;
    sim.report()
}
