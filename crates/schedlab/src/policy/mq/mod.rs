//! `mq` and `mq-pool`: the IBM LSE multi-queue scheduler (Franke, Kravetz, Nagar,
//! Ravindran, 2000–2001) and its pooled variant with the load-balancing module
//! (schedulers.md §3; reference implementation: the 2.5.0 MQ patch, S9).
//!
//! # Theory
//!
//! MQ splits 2.4's one run queue and `runqueue_lock` into one queue and one lock per CPU
//! but keeps 2.4's *decisions*: it tries to run, on every CPU, the task 2.4's global
//! `goodness()` scan would have picked. To make that possible without scanning every
//! queue, each CPU publishes two numbers, kept fresh under its own lock:
//!
//! * `max_na_goodness(c)` — the non-affinity goodness (§3.2, [`Core24::na_goodness`]) of the best
//!   *stealable* task on c's queue (not running; the second best of c's last scan);
//! * `curr_na_goodness(c)` — that of the task c is running (`MIN_GOODNESS` when idle).
//!
//! **Remote-steal rule** (`schedule()` on CPU c, §3.3). Let `best` be the highest
//! `local_goodness` on c's queue, plus PROC_CHANGE_PENALTY (`pcp`) when positive. A remote
//! queue r is a candidate iff `max_na_goodness(r) > best` and its task may run on c. The
//! candidates are visited in decreasing `max_na_goodness` (ties: lower CPU number); each
//! is `spin_trylock`ed — never waited for — and re-checked under the lock; the first that
//! still qualifies gives up its `max_na_ptr`, which moves to c's queue. If c found nothing
//! and some trylock failed ("premature idle"), c withdraws its own advertisement and
//! rescans. A remote task must therefore beat the local best by `pcp`: raising `pcp`
//! isolates the queues (fewer steals, fewer migrations).
//!
//! **Placement rule** (`reschedule_idle(p)`, §3.4), with `t = p->processor`: if t is idle,
//! queue p there and kick t. Otherwise key every CPU: idle → −(cycles idle) (longest idle
//! first); busy → `curr_na_goodness + pcp·[cpu ≠ t]`; not allowed → never. Visit the CPUs
//! whose key is below `na_goodness(p)` in increasing key order: t itself if p preempts its
//! current task (t's lock is already held); any other CPU by `spin_trylock`, re-checking
//! "idle or preemptible" under the lock, moving p there on success. Failing all, p stays
//! queued on t.
//!
//! Everything else is 2.4 (§1): counters, ticks, `NICE_TO_TICKS`, the global
//! recalculation when the best goodness is 0, fork splitting the parent's ticks,
//! `sched_yield` to the tail of the task's own queue, running tasks staying on their
//! queue. A sync wake-up whose task may run here just queues the task on its own last
//! CPU's queue (§3.5).
//!
//! **Versions** (option `version`). The default follows the 2.5.0 patch (S9), the spec's
//! reference. The 2001 tables ran MQ on 2.4 kernels, and two earlier ports are in the
//! LKML archive: 2.4.7-mq (Kravetz, "[RFC][PATCH] Scalable Scheduling", 8 Aug 2001,
//! `20010808091652.B1088@w-mikek2.des.beaverton.ibm.com`) and 2.4.14-mq ("Scalable
//! Scheduling again", 14 Nov 2001, `20011114160630.D1112@w-mikek2.des.beaverton.ibm.com`).
//! Both keep 2.4's `still_running` label: a `prev` still runnable starts the scan as
//! `next` with its full `goodness()`, PROC_CHANGE_PENALTY included, and the local scan
//! skips running tasks (`local_can_schedule`). The boost added to the winner then comes
//! on top, so a local task must beat `prev` by `pcp` and a remote one by twice that. The
//! ports' `sys_sched_yield` only marks the task (no move to its queue's tail, which came
//! with 2.4.16). The 2.4.7 port also keeps 2.4.7's placement margin:
//! `preemption_goodness > 1` (2.4.0's `max_prio = 1`, §1.14), and keys must be below
//! `na_goodness(p) − 1`. Their separate real-time queue is not modelled (no workload
//! here runs RT tasks under MQ).
//!
//! **Pools and balancing** (`mq-pool`, §3.6). CPUs are split into pools of `pool_size`;
//! the steal scan and the placement scan only look inside a pool (the stealing CPU's, the
//! woken task's last CPU's). Idle CPUs outside the pool are found through the non-idle
//! bitmap (see `Mq::reschedule_idle`), and a load-balancing module runs every
//! `lb_interval_ms` to equalise queue lengths across all CPUs.
//!
//! # Counters (`counters.policy`, the six of the March 2001 PCP experiment, table V4)
//!
//! Denominators: every `schedule()` call (1–3), every `reschedule_idle()` call (4–6). A
//! call counts at most once in each numerator.
//! 1. `remote_better_pct`: the call's remote scan found at least one remote queue whose
//!    published `max_na_goodness` beat the local best (boost included) and was allowed.
//! 2. `remote_lock_ok_pct`: at least one `spin_trylock` of a remote queue succeeded.
//! 3. `remote_still_better_pct`: under that lock the remote task was still better, and it
//!    was stolen.
//! 4. `resched_target_is_task_cpu_pct`: the placement loop reached the task's own CPU as
//!    a target (the key scan ranked it below `na_goodness(p)`).
//! 5. `resched_remote_lock_ok_pct`: the loop took the lock of a target other than the
//!    task's CPU (`spin_trylock` succeeded).
//! 6. `resched_target_exists_pct`: the key scan found a target at all. Calls settled by
//!    the fast path (task's CPU idle) count in the denominator only; their share is
//!    `resched_fast_path_pct`.
//!
//! Also reported: `migrations` (kernel counter), steals, premature idles, rescans,
//! recalculations, balancer runs and moves.
//!
//! # Cache lines
//!
//! The published values are what other CPUs read without a lock, so what they cost is
//! where their lines are. Two lines per CPU, both directory lines of the interconnect
//! ([`crate::machine::interconnect`]: bus occupancy and queueing, MESI states,
//! `coherence=off` makes them free as it does every named line):
//!
//! * `runqueue_data[c]` (§3.1, one cache-line-padded union): `runqueue_lock`, the list
//!   head, `nt_running`, `max_na_*`, `running_non_idle`. The lock lives on this line
//!   ([`SchedCtx::new_lock`] with its line): `spin_lock` or `spin_trylock` of queue c — even a
//!   failed one — is a read-for-ownership of it, from its last writer or from the
//!   shared copies of the CPUs that read c's `max_na_goodness` since (an invalidation).
//!   The holder's reads and writes of the values are then hits.
//! * `aligned_data[c]` (§3.1: `curr`, `last_schedule`, `curr_na_goodness`): the line of
//!   c's `curr` ([`Interconnect::curr_line`]), written by every switch, by
//!   `update_sched_data` and by the tick's refresh of `curr_na_goodness`; read by every
//!   `reschedule_idle` key scan.
//!
//! mq-pool adds one line for the non-idle bitmap, written when a CPU goes idle or busy.
//! Invariant: a run-queue lock's holder holds its line modified until it releases it
//! (a hook is atomic), so the release store is a hit and is not priced.
//!
//! # Invariants (checked by [`SchedClass::check`])
//!
//! * A task is on a queue ⇔ it is runnable (or is the current task about to leave it),
//!   and then on exactly the queue of its `processor`.
//! * `max_na_ptr(c)`, when set, is on c's queue and not running.
//! * `curr_na_goodness(c) == MIN_GOODNESS` ⇔ c runs its idle task.
//!
//! # The host's shortcuts
//!
//! Where the lock-free reads cost nothing (no coherence model), `reschedule_idle`'s key
//! scan and `sys_sched_yield`'s sum read dense per-CPU copies of what they need (each
//! CPU's newest `curr_na_goodness` with its write time, each queue's newest
//! `running_non_idle` write time, the kernel's `last_schedule` array), reading a
//! `Published` history only for a CPU whose newest write is after the reader's clock. Above 64 CPUs, unpooled MQ also skips the
//! walks over every CPU:
//!
//! * the remote scan takes its candidates from an index of every queue's published
//!   `max_na_goodness` (`steal_index`);
//! * `sys_sched_yield` takes its sum from totals kept at every change when no queue's
//!   `running_non_idle` was written after the reader's clock;
//! * `reschedule_idle`'s first target comes from the kernel's index of idle CPUs
//!   ([`SchedCtx::idle_cpus_latest`]; see `Mq::indexed_target` for why it is exact),
//!   when some CPU is idle below the task's threshold and PROC_CHANGE_PENALTY is at least
//!   2; the keys of every CPU are computed only if that target fails.
//!
//! The decisions are the walks' (a test compares whole runs; debug builds check every
//! first target the index gives against the walk's).
//!
//! # Not modelled
//!
//! `tasklist_lock` (the recalculation walks the task list without a modelled lock), the
//! `cpus_allowed` change path (no workload changes affinity), the 2.4.17 hyper-threading
//! tweak.

mod placement;
mod pool;
mod schedule;
mod steal_index;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use placement::RESCHED_INDEXED;

use crate::kernel::sched::Shared;
use std::collections::{BTreeMap, VecDeque};

use crate::engine::Time;
use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::Kernel;
use crate::machine::{CpuId, CpuMask, Interconnect, LineId, LockId, Machine};
use crate::spec::{ParamSpec, Params};

use super::sched24::{Core24, GoodnessRules, MIN_GOODNESS};
use super::{check_per_cpu_queues, PolicyInfo, Published, SchedClass, SchedCtx, Wake};
use crate::kernel::sched::published::Newest;

/// Registry entry of `mq`.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "mq",
    about: "IBM LSE multi-queue scheduler (2.5.0 patch, or its 2.4.7/2.4.14 ports): per-CPU queues keeping 2.4's global decisions",
    params: MQ_PARAMS,
    build: build_mq,
};

/// Registry entry of `mq-pool`.
pub const POOL_INFO: PolicyInfo = PolicyInfo {
    name: "mq-pool",
    about: "pooled MQ: steal and placement confined to CPU pools, plus the load-balancing module",
    params: POOL_PARAMS,
    build: build_pool,
};

// The options of both registry entries, declared once each.
const HZ: ParamSpec = ParamSpec::hz("hz", "100").source("schedulers.md §1.1 (i386 2.4: 100)");
const PCP: ParamSpec = ParamSpec::int("pcp", "15", 0, 1000)
    .unit("goodness points")
    .help("PROC_CHANGE_PENALTY: what a remote task must beat the local best by (§3.3)")
    .source("schedulers.md §1.4 (i386: 15; alpha/ia64/ppc: 20)");
const SYNC: ParamSpec = ParamSpec::sync_wakeups("sync_wakeups", "on")
    .help("a sync wake-up of a task allowed here skips reschedule_idle")
    .source("schedulers.md §3.5 (2.5.0 MQ try_to_wake_up)");
const POOL_SIZE: ParamSpec = ParamSpec::choice("pool_size", "4", &["1", "2", "4", "8"])
    .unit("CPUs")
    .help("CPUs per pool (S11: 8x1, 4x2, 2x4 on an 8-way)")
    .source("model choice [INFERRED]: one ProFusion bus");
const LB: ParamSpec = ParamSpec::flag("lb", "on")
    .help("run the load-balancing module")
    .source("schedulers.md §3.6 (loadbalance.c, S12)");
const LB_INTERVAL_MS: ParamSpec = ParamSpec::int("lb_interval_ms", "500", 1, 3_600_000)
    .unit("ms")
    .help("balancing period (a module parameter)")
    .source("model choice [INFERRED]: the sources leave it open (§3.6)");
const IDLE_BITMAP: ParamSpec = ParamSpec::flag("idle_bitmap", "on")
    .help("reschedule_idle uses the non-idle bitmap to reach idle CPUs outside the pool")
    .source("model choice [INFERRED] (§3.6)");

const VERSION: ParamSpec = ParamSpec::choice("version", "2.5.0", &["2.4.7", "2.4.14", "2.5.0"])
    .help("which MQ patch to follow: the 2.4 ports keep 2.4's still_running path")
    .source(
        "schedulers.md §3 (S9, 2.5.0); 2.4.7-mq and 2.4.14-mq patches, LKML 8 Aug and 14 Nov 2001",
    );

const MQ_PARAMS: &[ParamSpec] = &[HZ, PCP, SYNC, VERSION];

const POOL_PARAMS: &[ParamSpec] = &[
    HZ,
    PCP,
    SYNC,
    VERSION,
    POOL_SIZE,
    LB,
    LB_INTERVAL_MS,
    IDLE_BITMAP,
];

fn build_mq(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    Ok(Box::new(Mq::new(Config::mq(p, m), p.to_map())))
}

fn build_pool(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    let mut c = Config::mq(p, m);
    c.name = "mq-pool";
    c.pool_size = POOL_SIZE.get::<usize>(p).min(m.cpus);
    c.lb_interval_ms = LB.get::<bool>(p).then(|| LB_INTERVAL_MS.get(p));
    c.idle_bitmap = IDLE_BITMAP.get(p);
    Ok(Box::new(Mq::new(c, p.to_map())))
}

/// Resolved options.
#[derive(Clone, Debug)]
pub struct Config {
    /// Registry name.
    pub name: &'static str,
    /// Timer frequency.
    pub hz: u32,
    /// PROC_CHANGE_PENALTY.
    pub pcp: i32,
    /// Honour sync wake-ups.
    pub sync_wakeups: bool,
    /// CPUs per pool (the number of CPUs for unpooled MQ).
    pub pool_size: usize,
    /// Load-balancer period, `None` when off.
    pub lb_interval_ms: Option<u64>,
    /// Use the non-idle bitmap to place on idle CPUs outside the pool.
    pub idle_bitmap: bool,
    /// The patch followed.
    pub version: MqVersion,
}

/// The MQ patch whose decisions to follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MqVersion {
    /// 2.4.7-mq (Aug 2001): 2.4.7's `still_running` path and its placement threshold
    /// `preemption_goodness > 1`.
    V247,
    /// 2.4.14-mq (Nov 2001): `still_running`, threshold `> 0`.
    V2414,
    /// 2.5.0-mq (Dec 2001, S9): the running task is scanned like the others.
    V250,
}

impl crate::spec::FromParam for MqVersion {
    fn from_param(_key: &str, raw: &str) -> Self {
        match raw {
            "2.4.7" => MqVersion::V247,
            "2.4.14" => MqVersion::V2414,
            _ => MqVersion::V250,
        }
    }
}

impl Config {
    fn mq(p: &Params, m: &Machine) -> Config {
        Config {
            name: "mq",
            hz: HZ.get(p),
            pcp: PCP.get(p),
            sync_wakeups: SYNC.get(p),
            pool_size: m.cpus,
            lb_interval_ms: None,
            idle_bitmap: false,
            version: VERSION.get(p),
        }
    }
}

/// Per-task scheduling state MQ keeps beside the kernel's task fields.
#[derive(Clone, Copy, Debug, Default)]
struct TaskSched {
    /// On the run queue of its `processor`.
    on_rq: bool,
}

/// `runqueue_data[cpu]` (§3.1); `nt_running` is `list.len()`.
#[derive(Clone, Debug)]
struct RunQueue {
    /// Head first; running tasks stay on it.
    list: VecDeque<TaskId>,
    /// Read lock-free by other CPUs' `examine_rmt_rqs`, re-read under `lock`.
    max_na: Published<MaxNa>,
    /// Read lock-free by `sys_sched_yield` and mq-pool's idle search.
    running_non_idle: Published<bool>,
    /// The cache line of `runqueue_data[cpu]`: the lock, the list head and every value
    /// above, in one cache-line-padded union (§3.1).
    line: LineId,
    /// `runqueue_lock`, living on `line`.
    lock: LockId,
}

/// `max_na_goodness`, `max_na_ptr`, `max_na_cpus_allowed`: the queue's stealable task,
/// written together under the queue's lock (§3.1).
#[derive(Clone, Copy, Debug)]
struct MaxNa {
    goodness: i32,
    ptr: Option<TaskId>,
    cpus_allowed: CpuMask,
}

impl MaxNa {
    const NONE: MaxNa = MaxNa {
        goodness: MIN_GOODNESS,
        ptr: None,
        cpus_allowed: CpuMask::EMPTY,
    };

    fn of(ctx: &SchedCtx<'_>, p: TaskId, goodness: i32) -> MaxNa {
        MaxNa {
            goodness,
            ptr: Some(p),
            cpus_allowed: ctx.task(p).cpus_allowed,
        }
    }
}

/// Where `reschedule_idle` sends a task.
#[derive(Clone, Copy, Debug)]
struct Placement {
    /// The CPU whose queue takes the task (locked by the caller when not the task's own).
    cpu: CpuId,
    /// Set `need_resched` there (with an IPI when remote).
    kick: bool,
}

/// What one `schedule()` call saw (for the counters).
#[derive(Clone, Copy, Debug, Default)]
struct ScheduleSeen {
    remote_better: bool,
    remote_lock_ok: bool,
    remote_still_better: bool,
}

/// Raw event counts.
#[derive(Clone, Debug, Default)]
struct Stats {
    schedule_calls: u64,
    remote_better: u64,
    remote_lock_ok: u64,
    remote_still_better: u64,
    premature_idle: u64,
    rescans: u64,
    recalculations: u64,
    resched_calls: u64,
    resched_fast_path: u64,
    resched_target_exists: u64,
    resched_target_is_task_cpu: u64,
    resched_remote_lock_ok: u64,
    resched_moved: u64,
    resched_bitmap_moves: u64,
    lb_runs: u64,
    lb_moves: u64,
}

/// The MQ scheduler (both registry entries).
pub struct Mq {
    cfg: Config,
    options: BTreeMap<String, String>,
    /// Counters, yield bits and the goodness arithmetic, as 2.4 (MQ's goodness rules).
    core: Core24,
    /// Whether the wake-up in progress should kick its target (decided with the
    /// placement by `reschedule_idle`, carried out by `wakeup_preempt`).
    wake_kick: bool,
    rq: Vec<RunQueue>,
    /// `aligned_data[cpu].curr_na_goodness`, read lock-free by `reschedule_idle`.
    curr_na_goodness: Vec<Published<i32>>,
    /// Each CPU's newest `curr_na_goodness` and its time, densely: what
    /// `reschedule_idle`'s walk over every CPU reads when no newer write is after its
    /// clock.
    curr_na_newest: Newest<i32>,
    ts: Vec<TaskSched>,
    /// mq-pool's bitmap of non-idle CPUs (§3.6), written when a CPU goes idle or busy.
    bitmap_line: LineId,
    /// Jiffy of the next load-balancer run.
    next_lb: u64,
    st: Stats,
    /// `examine_rmt_rqs`'s candidate queues, `(published goodness, cpu)`: scratch space.
    remotes: Vec<(i32, CpuId)>,
    /// Every queue's `max_na_goodness` in order, where the scan's reads are free and it
    /// spans every CPU (`steal_index`).
    steal: Option<steal_index::StealIndex>,
    /// Tasks on all queues, queues whose newest `running_non_idle` is set, and the
    /// latest time any of those was written: `sys_sched_yield`'s sum, where no write
    /// is after the reader's clock.
    queued: usize,
    running: usize,
    running_written: Time,
    /// Each queue's newest `running_non_idle` write time, densely: the queues whose
    /// value a read now may see older than the newest.
    running_newest: Newest<bool>,
    /// `reschedule_idle`'s keys, one per CPU: scratch space.
    resched_keys: Vec<i32>,
}

/// Line of `aligned_data[cpu]` (`curr`, `last_schedule`, `curr_na_goodness`, §3.1): the
/// line of `cpu`'s `curr` that the core writes at every switch.
fn ad_line(cpu: CpuId) -> LineId {
    Interconnect::curr_line(cpu)
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

impl Mq {
    /// A scheduler with options `cfg`; `options` is what the report shows.
    pub fn new(cfg: Config, options: BTreeMap<String, String>) -> Mq {
        let rules = GoodnessRules {
            pcp: cfg.pcp,
            kthread_mm_bonus: false,
        };
        Mq {
            core: Core24::new(cfg.hz, rules),
            wake_kick: false,
            cfg,
            options,
            rq: Vec::new(),
            curr_na_goodness: Vec::new(),
            curr_na_newest: Newest::default(),
            ts: Vec::new(),
            bitmap_line: 0,
            next_lb: 0,
            st: Stats::default(),
            remotes: Vec::new(),
            resched_keys: Vec::new(),
            running_newest: Newest::default(),
            steal: None,
            queued: 0,
            running: 0,
            running_written: 0,
        }
    }

    fn ncpu(&self) -> usize {
        self.rq.len()
    }

    /// `first_cpu..last_cpu` of `cpu`'s pool (all CPUs for unpooled MQ).
    fn pool_of(&self, cpu: CpuId) -> std::ops::Range<CpuId> {
        let ps = self.cfg.pool_size.max(1);
        let lo = cpu / ps * ps;
        lo..(lo + ps).min(self.ncpu())
    }

    fn has_cpu(ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        ctx.task(p).on_cpu.is_some()
    }

    /// Queue `c`'s `max_na_*` as this CPU sees them now (with or without `c`'s lock).
    fn max_na(&self, ctx: &SchedCtx<'_>, c: CpuId) -> &MaxNa {
        self.rq[c].max_na.at_ref(ctx.now())
    }

    fn set_max_na(&mut self, ctx: &SchedCtx<'_>, c: CpuId, m: MaxNa) {
        let v = &mut self.rq[c].max_na;
        v.set(ctx.now(), m);
        if let Some(x) = &mut self.steal {
            x.note(c, v.latest().goodness, v.newest_time());
        }
    }

    /// `preemption_goodness(curr, p, cpu)` with the full goodness (§3.2).
    fn preemption_goodness(&self, ctx: &SchedCtx<'_>, curr: TaskId, p: TaskId, cpu: CpuId) -> i32 {
        self.core
            .preemption_goodness(ctx, curr, p, cpu, ctx.active_mm(cpu))
    }

    /// `add_to_runqueue` (`upd`) / `add_to_runqueue_noupd`: at the head of its
    /// `processor`'s queue, whose lock is held.
    fn add_to_runqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, upd: bool) {
        let c = ctx.task(p).processor;
        debug_assert!(ctx.holds(self.rq[c].lock));
        debug_assert!(!self.ts[p as usize].on_rq);
        if upd && !Self::has_cpu(ctx, p) {
            let g = self.core.na_goodness(ctx, p);
            if g > self.max_na(ctx, c).goodness {
                self.set_max_na(ctx, c, MaxNa::of(ctx, p, g));
            }
        }
        self.rq[c].list.push_front(p);
        self.queued += 1;
        self.ts[p as usize].on_rq = true;
        ctx.write(Shared::Line(self.rq[c].line));
    }

    /// `del_from_runqueue` / `del_from_runqueue_update`. The update flavour replaces a
    /// withdrawn `max_na_ptr` by the *first* non-running task with positive
    /// `na_goodness` ("a good enough approximation", S9).
    fn del_from_runqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, upd: bool) {
        let c = ctx.task(p).processor;
        debug_assert!(ctx.holds(self.rq[c].lock));
        let i = self.rq[c]
            .list
            .iter()
            .position(|&t| t == p)
            .unwrap_or_else(|| panic!("mq: task {p} not on queue {c}"));
        self.rq[c].list.remove(i);
        self.queued -= 1;
        self.ts[p as usize].on_rq = false;
        ctx.write(Shared::Line(self.rq[c].line));
        if self.max_na(ctx, c).ptr != Some(p) {
            return;
        }
        let mut found = None;
        if upd {
            for &t in &self.rq[c].list {
                ctx.read(Shared::Task(t));
                if !Self::has_cpu(ctx, t) {
                    let w = self.core.na_goodness(ctx, t);
                    if w > 0 {
                        found = Some((t, w));
                        break;
                    }
                }
            }
        }
        let m = found.map_or(MaxNa::NONE, |(t, w)| MaxNa::of(ctx, t, w));
        self.set_max_na(ctx, c, m);
    }

    fn move_last_runqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let c = ctx.task(p).processor;
        let q = &mut self.rq[c].list;
        if let Some(i) = q.iter().position(|&t| t == p) {
            q.remove(i);
            q.push_back(p);
        }
        ctx.write(Shared::Line(self.rq[c].line));
    }

    /// Lock queue `c`: the lock's line is the queue's, so the values come with it.
    fn rq_lock(&mut self, ctx: &mut SchedCtx<'_>, c: CpuId) {
        ctx.lock(self.rq[c].lock);
    }

    /// `spin_trylock` of queue `c`; success or not, its line is now this CPU's.
    fn trylock_rq(&mut self, ctx: &mut SchedCtx<'_>, c: CpuId) -> bool {
        ctx.trylock(self.rq[c].lock)
    }

    fn recalculate(&mut self, ctx: &mut SchedCtx<'_>) {
        self.st.recalculations += 1;
        self.core.recalculate(ctx);
    }

    /// `aligned_data[cpu].curr_na_goodness = g` at `now`.
    fn publish_curr_na(&mut self, cpu: CpuId, now: Time, g: i32) {
        self.curr_na_goodness[cpu].set(now, g);
        self.curr_na_newest.note(cpu, &self.curr_na_goodness[cpu]);
    }

    /// `update_sched_data`: publish what this CPU now runs.
    fn update_sched_data(&mut self, ctx: &mut SchedCtx<'_>, this: CpuId, next: TaskId) {
        let idle = next == ctx.idle_task(this);
        let g = if idle {
            MIN_GOODNESS
        } else {
            self.core.na_goodness(ctx, next)
        };
        let now = ctx.now();
        self.publish_curr_na(this, now, g);
        if self.rq[this].running_non_idle.at(now) == idle {
            let v = &mut self.rq[this].running_non_idle;
            let was = v.latest();
            v.set(now, !idle);
            self.running = self.running + usize::from(v.latest()) - usize::from(was);
            self.running_written = self.running_written.max(now);
            self.running_newest
                .note(this, &self.rq[this].running_non_idle);
            if self.cfg.idle_bitmap {
                ctx.write(Shared::Line(self.bitmap_line));
            }
        }
        ctx.write(Shared::Line(ad_line(this)));
    }
}

impl SchedClass for Mq {
    fn name(&self) -> &'static str {
        self.cfg.name
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn uses_idle_index(&self) -> bool {
        // Unpooled MQ's `reschedule_idle` walks every CPU; mq-pool's walks a pool of at
        // most 8 and looks outside it in the non-idle bitmap.
        self.cfg.pool_size > crate::kernel::sched::idle_cpus::INDEX_ABOVE
    }

    fn hz(&self) -> u32 {
        self.cfg.hz
    }

    fn release(&self) -> crate::kernel::release::Release {
        use crate::kernel::release::Release;
        match self.cfg.version {
            MqVersion::V247 => Release::V2_4(7),
            MqVersion::V2414 => Release::V2_4(14),
            MqVersion::V250 => Release::V2_5(0),
        }
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = ctx.nr_cpus();
        self.rq = (0..n)
            .map(|c| {
                let line = ctx.new_line("runqueue_data", Some(c));
                RunQueue {
                    list: VecDeque::new(),
                    max_na: Published::new(MaxNa::NONE),
                    running_non_idle: Published::new(false),
                    line,
                    lock: ctx.new_lock("runqueue_lock", Some(line)),
                }
            })
            .collect();
        self.running_newest = Newest::of(self.rq.iter().map(|q| &q.running_non_idle));
        self.curr_na_goodness = vec![Published::new(MIN_GOODNESS); n];
        self.curr_na_newest = Newest::of(self.curr_na_goodness.iter());
        self.bitmap_line = ctx.new_line("non_idle_bitmap", None);
        self.cfg.pool_size = self.cfg.pool_size.clamp(1, n);
        if ctx.walks_indexable() && self.cfg.pool_size == n {
            self.steal = Some(steal_index::StealIndex::new(n));
        }
        if let Some(ms) = self.cfg.lb_interval_ms {
            self.next_lb = Self::lb_ticks(ms, self.cfg.hz);
        }
    }

    fn rq_lockp(&self, cpu: CpuId) -> LockId {
        self.rq[cpu].lock
    }

    fn rq_lock(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        Mq::rq_lock(self, ctx, cpu);
    }

    fn task_on_rq(&self, _ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        self.ts[p as usize].on_rq
    }

    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.ts.len() < n {
            self.ts.resize(n, TaskSched::default());
        }
        self.core.task_fork(ctx, p, parent);
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId {
        // §3.5: a sync wake-up of a task allowed here just queues it on its own last CPU's
        // queue — no migration to the waker, unlike O(1)'s sync.
        if Core24::sync_skips_placement(ctx, p, wake.sync, self.cfg.sync_wakeups) {
            self.wake_kick = false;
            return ctx.task(p).processor;
        }
        let pl = self.reschedule_idle(ctx, p);
        self.wake_kick = pl.kick;
        pl.cpu
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        self.add_to_runqueue(ctx, p, true);
    }

    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId) {
        self.del_from_runqueue(ctx, p, false);
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, _p: TaskId, _wake: Wake) {
        if std::mem::take(&mut self.wake_kick) {
            ctx.resched_cpu(cpu);
        }
    }

    fn balance(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, why: super::Balance) {
        // The pool load balancer: a timer on CPU 0 (§3.6).
        if let (Some(ms), super::Balance::Tick { .. }) = (self.cfg.lb_interval_ms, why) {
            if cpu == 0 && ctx.jiffies() >= self.next_lb {
                self.next_lb = ctx.jiffies() + Self::lb_ticks(ms, self.cfg.hz);
                self.load_balance(ctx);
            }
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        self.st.schedule_calls += 1;
        if self.core.rr_refill(ctx, prev) {
            self.move_last_runqueue(ctx, prev);
        }
        let this_mm = ctx.active_mm(cpu);
        let idle = ctx.idle_task(cpu);
        let mut seen = ScheduleSeen::default();
        let next = loop {
            let (mut c, first) = self.still_running(ctx, cpu, prev, this_mm);
            let next = self.scan_runqueue(ctx, cpu, &mut c, this_mm, first);
            let next = self.examine_rmt_rqs(ctx, cpu, &mut c, next, &mut seen);
            if c == 0 {
                ctx.unlock(self.rq[cpu].lock);
                self.recalculate(ctx);
                Mq::rq_lock(self, ctx, cpu);
                continue;
            }
            break next;
        };
        self.st.remote_better += u64::from(seen.remote_better);
        self.st.remote_lock_ok += u64::from(seen.remote_lock_ok);
        self.st.remote_still_better += u64::from(seen.remote_still_better);
        self.update_sched_data(ctx, cpu, next);
        if next == prev {
            self.core.take_yield(prev);
        }
        (next != idle).then_some(next)
    }

    fn finish_task_switch(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, prev: TaskId) {
        // __schedule_tail (§1.8 with MQ's locking, §3.3 step 7).
        if ctx.task(prev).is_idle || self.core.take_yield(prev) {
            return;
        }
        let t = ctx.task(prev);
        if t.state != TaskState::Running || t.on_cpu.is_some() {
            return;
        }
        let c = t.processor;
        Mq::rq_lock(self, ctx, c);
        let t = ctx.task(prev);
        if t.state == TaskState::Running && t.on_cpu.is_none() {
            let pl = self.reschedule_idle(ctx, prev);
            self.place(ctx, prev, pl);
        }
        ctx.unlock(self.rq[c].lock);
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        // update_process_times (§1.11) plus MQ's refresh of the published value (§3.5).
        if !self.core.update_process_times(ctx, cpu, curr, false) {
            return;
        }
        let now = ctx.now();
        if self.curr_na_goodness[cpu].at(now) != MIN_GOODNESS {
            let g = self.core.na_goodness(ctx, curr);
            self.publish_curr_na(cpu, now, g);
            ctx.write(Shared::Line(ad_line(cpu)));
        }
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        // nr_pending = Σ (nt_running − running_non_idle), read without locks.
        let mut nr_pending = 0i64;
        if self.steal.is_some() && self.running_written <= ctx.now() {
            // The reads are free and none is older than its queue's newest value: the
            // sums, kept.
            nr_pending = self.queued as i64 - self.running as i64;
        } else if ctx.line_reads_free() {
            // The reads are free and the clock stands still: the sums, corrected by the
            // queues whose newest value is after the reader's clock.
            let now = ctx.now();
            let mut running = self.running as i64;
            for (c, t) in self.running_newest.times().enumerate() {
                if t > now {
                    let v = &self.rq[c].running_non_idle;
                    running += i64::from(v.at(now)) - i64::from(v.latest());
                }
            }
            nr_pending = self.queued as i64 - running;
        } else {
            for c in 0..self.ncpu() {
                if c != cpu {
                    ctx.read(Shared::Line(self.rq[c].line));
                }
                let q = &self.rq[c];
                nr_pending += q.list.len() as i64 - i64::from(q.running_non_idle.at(ctx.now()));
            }
        }
        if nr_pending > 0 {
            self.core.sched_yield(ctx, cpu, p);
            if self.cfg.version < MqVersion::V250 {
                // 2.4.7 and 2.4.14 only mark the task; the move to the queue's tail
                // came with 2.4.16's sys_sched_yield (§1.13).
                return;
            }
            let c = ctx.task(p).processor;
            Mq::rq_lock(self, ctx, c);
            self.move_last_runqueue(ctx, p);
            ctx.unlock(self.rq[c].lock);
        }
    }

    fn task_dead(&mut self, _ctx: &mut SchedCtx<'_>, parent: TaskId, child: TaskId) {
        self.core.release_task(parent, child);
    }

    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        // The next recalculations add the new NICE_TO_TICKS (§1.7 step 6).
        self.core.renice(ctx, p);
    }

    fn set_cpus_allowed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        // The published stealable task carries its mask (`max_na_cpus_allowed`, §3.1).
        let c = ctx.task(p).processor;
        if self.max_na(ctx, c).ptr == Some(p) {
            let allowed = ctx.task(p).cpus_allowed;
            self.rq[c]
                .max_na
                .update(ctx.now(), |m| m.cpus_allowed = allowed);
            ctx.write(Shared::Line(self.rq[c].line));
        }
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        let s = &self.st;
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: f64| {
            m.insert(k.to_string(), v);
        };
        put("remote_better_pct", pct(s.remote_better, s.schedule_calls));
        put(
            "remote_lock_ok_pct",
            pct(s.remote_lock_ok, s.schedule_calls),
        );
        put(
            "remote_still_better_pct",
            pct(s.remote_still_better, s.schedule_calls),
        );
        put(
            "resched_target_is_task_cpu_pct",
            pct(s.resched_target_is_task_cpu, s.resched_calls),
        );
        put(
            "resched_remote_lock_ok_pct",
            pct(s.resched_remote_lock_ok, s.resched_calls),
        );
        put(
            "resched_target_exists_pct",
            pct(s.resched_target_exists, s.resched_calls),
        );
        put(
            "resched_fast_path_pct",
            pct(s.resched_fast_path, s.resched_calls),
        );
        put("schedule_calls", s.schedule_calls as f64);
        put("reschedule_idle_calls", s.resched_calls as f64);
        put("steals", s.remote_still_better as f64);
        put("resched_moves", s.resched_moved as f64);
        put("premature_idle", s.premature_idle as f64);
        put("rescans", s.rescans as f64);
        put("recalculations", s.recalculations as f64);
        if self.cfg.idle_bitmap {
            put("resched_bitmap_moves", s.resched_bitmap_moves as f64);
        }
        if self.cfg.lb_interval_ms.is_some() {
            put("lb_runs", s.lb_runs as f64);
            put("lb_moves", s.lb_moves as f64);
        }
        m
    }

    fn check(&self, k: &Kernel) -> Result<(), String> {
        let name = self.cfg.name;
        let on_rq: Vec<bool> = self.ts.iter().map(|s| s.on_rq).collect();
        check_per_cpu_queues(name, k, self.rq.iter().map(|q| &q.list), &on_rq)?;
        let queued: usize = self.rq.iter().map(|q| q.list.len()).sum();
        let running = self
            .rq
            .iter()
            .filter(|q| q.running_non_idle.latest())
            .count();
        let written = self
            .rq
            .iter()
            .map(|q| q.running_non_idle.newest_time())
            .max();
        let times_kept = self
            .rq
            .iter()
            .map(|q| q.running_non_idle.newest_time())
            .eq(self.running_newest.times());
        if !times_kept {
            return Err(format!(
                "{name}: dense running_non_idle write times differ from the queues'"
            ));
        }
        if (queued, running) != (self.queued, self.running)
            || written.is_some_and(|w| w > self.running_written)
        {
            return Err(format!(
                "{name}: {} queued and {} running kept, {queued} and {running} found",
                self.queued, self.running
            ));
        }
        if let Some(x) = &self.steal {
            x.check(
                self.rq
                    .iter()
                    .map(|q| (q.max_na.latest().goodness, q.max_na.newest_time())),
            )?;
        }
        for (c, q) in self.rq.iter().enumerate() {
            if let Some(m) = q.max_na.latest().ptr {
                if !q.list.contains(&m) || k.task(m).on_cpu.is_some() {
                    return Err(format!(
                        "{name}: max_na_ptr of cpu {c} (pid {}) is not a queued, waiting task",
                        k.task(m).pid
                    ));
                }
            }
            let idle = k.cpus[c].curr == k.cpus[c].idle;
            let curr_na = self.curr_na_goodness[c].latest();
            if idle != (curr_na == MIN_GOODNESS) {
                return Err(format!(
                    "{name}: cpu {c} idle={idle} but curr_na_goodness {curr_na}"
                ));
            }
            if !self.curr_na_newest.matches(c, &self.curr_na_goodness[c]) {
                return Err(format!(
                    "{name}: cpu {c}'s dense curr_na_goodness differs from its newest write"
                ));
            }
        }
        Ok(())
    }
}
