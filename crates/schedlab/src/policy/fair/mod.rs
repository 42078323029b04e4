//! The Linux fair class: `cfs` as in Linux 6.1 and `eevdf` as in Linux 6.12 (vanilla),
//! with PELT and the sched-domain load balancer (spec: modern.md).
//!
//! # Design
//!
//! One class, [`Fair`], two variants ([`Variant`]): the run-queue bookkeeping, PELT, the
//! balancer and wake-up placement are shared; what differs is in `cfs.rs` (slices from a
//! period, tick preemption, sleeper credit and START_DEBIT, buddies, skip-buddy yield) and
//! `eevdf.rs` (deadlines, eligibility, lag placement, run-to-parity, delayed dequeue,
//! deadline yield). Arithmetic is in `entity.rs`, PELT in `pelt.rs` (and when signals
//! are updated, attached and detached, with `util_est`, in `load.rs`), the domains in
//! `topology.rs`, balancing and `select_task_rq_fair` in `balance.rs`, the invariants in
//! `check.rs`.
//!
//! ```text
//!  per CPU: Rq { rq->lock, curr, timeline (BTreeMap by (key, seq)), W, S/L, min_vruntime,
//!                PELT, cfs_tasks (MRU), domains }            key = vruntime (cfs)
//!                                                                 = deadline (eevdf)
//!  wake-up ─ select_task_rq_fair (wake_affine, select_idle_sibling; fork: idlest group)
//!          ─ enqueue_task (enqueue_entity: update_curr, PELT, place_entity, insert)
//!          ─ wakeup_preempt (cfs: wakeup_preempt_entity; eevdf: pick_eevdf() == p)
//!  schedule ─ dequeue_task (eevdf: may stay queued, delayed) ─ pick_next_task
//!          (newidle balance when empty) ─ put_prev_task / set_next_task
//!  tick ─ task_tick (update_curr; cfs: check_preempt_tick) ─ sched_balance_trigger
//! ```
//!
//! # Theory
//!
//! Every entity runs at virtual speed `1024/w` (E2): `v += δ·1024/w`. **CFS** runs the
//! smallest `v` and preempts at the tick when the current entity has run its share of
//! the period (`sched_slice`, E6) or leads the leftmost by more than it (§3.5); a woken
//! entity preempts when it trails curr by more than a weighted wakeup granularity (E8).
//! **EEVDF** keeps the weighted average `V` of the queue (E9); an entity is *eligible*
//! when `v ≤ V` (E11, tested without division); each has a deadline `vd = v + r·1024/w`
//! (E12) and the eligible entity with the earliest deadline runs (§4.7). Lag `V − v` is
//! saved on dequeue (E10, clamped) and restored, inflated, on enqueue (E13). Both
//! variants charge time through `update_curr` only.
//!
//! # Invariants (checked by [`SchedClass::check`])
//!
//! * a queued entity is in exactly one run queue's timeline, that of its CPU, unless it
//!   is that queue's `curr` (never in the timeline); `nr_running` = timeline + on-rq curr;
//! * `W` = Σ weights of the on-rq entities; `S`, `L` = the sums of §4.2 over the timeline;
//! * a queued task is runnable, or on a CPU, or (eevdf) `sched_delayed`;
//! * every runnable task that is not an idle task is queued;
//! * the weighted lag `Σ w·(V − v)` of a queue is within `±L` of zero (V is a floor).
//!
//! # The seam
//!
//! `task_on_rq` answers `on_rq && !sched_delayed`: a delayed task asleep is woken through
//! `select_task_rq` (which keeps it on its CPU, as `ttwu_runnable` does) and
//! `enqueue_task` (which re-queues it, `requeue_delayed_entity`). `pick_next_task` runs
//! newidle balancing itself when the queue is empty (as `pick_next_task_fair` does), so
//! `balance(NewIdle)` does nothing; `balance(Tick)` is `sched_balance_trigger`. Wake-ups
//! decide the CPU lock-free ([`WakeOrder::SelectFirst`], `p->pi_lock` in the kernel).
//!
//! # Statistics (`counters.policy`)
//!
//! `lb_calls`, `lb_newidle_calls`, `lb_pulled` (tasks moved by the balancer),
//! `lb_cpus_scanned` (CPUs whose statistics `update_sg_lb_stats` read: the balancer's
//! own work, O(span) per call),
//! `lb_failed`, `wake_affine` (wake-ups moved to the waker's CPU), `wake_idle_sibling`
//! (wake-ups moved to an idle CPU found by `select_idle_sibling`), `fork_balanced`
//! (new tasks placed on another CPU), `wakeup_preemptions`, `tick_preemptions`,
//! `delayed_dequeues` (eevdf), `nr_domains` (domains of CPU 0).
//!
//! # Simplified / not modelled (said again at the code)
//!
//! * One root cfs_rq per CPU; `task_h_load` is FAIR_GROUP_SCHED's root form
//!   `load_avg·L/(L+1)` (Debian config). With `autogroup=on` every task is in one task
//!   group whose entity is the root queue's only one: the pick is unchanged, the loads
//!   read by the balancer and `wake_affine` are the group's ([`group`]). No nested groups.
//! * Every task is SCHED_NORMAL: SCHED_FIFO/RR tasks (which no workload creates) are
//!   scheduled as fair tasks; no SCHED_IDLE/BATCH, no custom slices (PREEMPT_SHORT is
//!   therefore inert except through a lost protection marker), no uclamp, EAS, misfit,
//!   asym packing, NUMA balancing, bandwidth, core scheduling.
//! * NOHZ: idle CPUs keep ticking and run their own periodic balance (`CPU_IDLE`)
//!   instead of being balanced by a kicked CPU (§6.8 allows it).
//! * Active balance (the stopper pushing a running task, §6.10) and `sched_exec`
//!   placement are not modelled; the `LBF_DST_PINNED` retry is not modelled (pinned
//!   tasks make `can_migrate_task` fail; an all-pinned busiest queue is dropped and the
//!   search redone, as the kernel does).
//! * The balancer does not migrate delayed (eevdf) entities (open item 3 of §11).
//! * PELT signals of other CPUs are read as they are at the reader's time, without
//!   `removed` deferral: a migrating task's contribution leaves its old queue at once.
//! * Costs of tree walks: the kernel's rbtree walk reads about `log2(n)` entities; the
//!   model charges a [`Walk`] read for that many queued entities
//!   (`// model:` at `charge_walk`).

pub mod balance;
pub mod cfs;
mod check;
pub mod eevdf;
pub mod entity;
pub mod group;
mod load;
pub mod pelt;
pub mod release;
pub mod topology;
pub mod wake;

use crate::kernel::sched::Shared;
use crate::kernel::sched::{Curr, Walk};
use std::collections::{BTreeMap, VecDeque};

use crate::kernel::task::{TaskId, TaskState};
use crate::machine::{CpuId, LineId, LockId, Machine};
use crate::spec::Params;

use super::{Balance, PolicyInfo, Published, SchedClass, SchedCtx, Wake, WakeOrder};
use crate::kernel::sched::published::Newest;
use entity::{AvgVruntime, LoadWeight, Timeline};
use pelt::SchedAvg;
use topology::{Domain, Topology};

/// Registry entry for `cfs`.
pub const INFO_CFS: PolicyInfo = PolicyInfo {
    name: "cfs",
    about: "CFS of Linux 6.1: vruntime, sched_slice periods, sleeper credit, PELT, sched domains",
    params: PARAMS_CFS,
    build: build_cfs,
};

/// Registry entry for `eevdf`.
pub const INFO_EEVDF: PolicyInfo = PolicyInfo {
    name: "eevdf",
    about: "EEVDF of Linux 6.12: lag, eligibility, virtual deadlines, delayed dequeue, PELT, sched domains (6.6-6.11: preempt_short=off,delay_dequeue=off)",
    params: PARAMS_EEVDF,
    build: build_eevdf,
};

crate::options! {
    /// Options of `cfs` (features.h and sysctls of Linux 6.1).
    pub struct CfsOptions in PARAMS_CFS {
        /// Timer frequency.
        hz: u32 = hz("250").source("modern.md §0, §8 (Debian amd64 config: HZ=250)");
        /// Honour `WF_SYNC` in `wake_affine`.
        sync_wakeups: bool = sync_wakeups("on")
            .help("a sync wake-up (the waker is about to sleep) counts the waker out of its CPU's load in wake_affine")
            .source("modern.md §7.3 (fair.c: wake_affine_idle, wake_affine_weight)");
        /// GENTLE_FAIR_SLEEPERS.
        gentle_fair_sleepers: bool = flag("on")
            .help("halve the sleeper credit (latency/2 instead of latency)")
            .source("features.h 6.1: GENTLE_FAIR_SLEEPERS true; modern.md §3.4");
        /// START_DEBIT.
        start_debit: bool = flag("on")
            .help("a new task starts one vslice after min_vruntime")
            .source("features.h 6.1: START_DEBIT true; modern.md §3.4");
        /// `sysctl_sched_latency` before CPU scaling.
        latency_ns: u64 = int("6000000", 100000, 1000000000)
            .unit("ns")
            .help("normalized targeted preemption latency (scaled by 1 + ilog2(min(cpus, 8)))")
            .source("fair.c 6.1: normalized_sysctl_sched_latency; modern.md §2");
        /// `sysctl_sched_min_granularity` before CPU scaling.
        min_granularity_ns: u64 = int("750000", 100000, 1000000000)
            .unit("ns")
            .help("normalized minimal preemption granularity (scaled like latency_ns)")
            .source("fair.c 6.1: normalized_sysctl_sched_min_granularity; modern.md §2");
        /// `sysctl_sched_wakeup_granularity` before CPU scaling.
        wakeup_granularity_ns: u64 = int("1000000", 0, 1000000000)
            .unit("ns")
            .help("normalized wake-up preemption granularity (scaled like latency_ns)")
            .source("fair.c 6.1: normalized_sysctl_sched_wakeup_granularity; modern.md §2");
    }
}

crate::options! {
    /// Options of `eevdf` (features.h and sysctls of vanilla Linux 6.12).
    pub struct EevdfOptions in PARAMS_EEVDF {
        /// Timer frequency.
        hz: u32 = hz("250").source("modern.md §0, §8 (Debian amd64 config: HZ=250)");
        /// Honour `WF_SYNC` in `wake_affine`.
        sync_wakeups: bool = sync_wakeups("on")
            .help("a sync wake-up (the waker is about to sleep) counts the waker out of its CPU's load in wake_affine")
            .source("modern.md §7.3 (fair.c: wake_affine_idle, wake_affine_weight)");
        /// PLACE_LAG.
        place_lag: bool = flag("on")
            .help("an enqueued entity keeps its saved lag (E13); off: placed at V")
            .source("features.h 6.12: PLACE_LAG true; modern.md §4.6");
        /// RUN_TO_PARITY.
        run_to_parity: bool = flag("on")
            .help("an eligible curr keeps the CPU until its slice is used (protection marker)")
            .source("features.h 6.12: RUN_TO_PARITY true; modern.md §4.8");
        /// PREEMPT_SHORT.
        preempt_short: bool = flag("on")
            .help("an unprotected, ineligible curr is rescheduled at update_curr; a shorter-slice wakee cancels protection")
            .source("features.h 6.12: PREEMPT_SHORT true; modern.md §4.5, §4.9");
        /// DELAY_DEQUEUE.
        delay_dequeue: bool = flag("on")
            .help("a task sleeping while ineligible stays queued until its negative lag is burnt off")
            .source("features.h 6.12: DELAY_DEQUEUE true; modern.md §4.10");
        /// The v6.17 protected slice.
        vprot: bool = flag("off")
            .help("v6.17 slice protection: protected while v < vprot (instead of the vlag == deadline marker)")
            .source("modern.md §4.13 (patch mails, v6.17; not in vanilla 6.12)");
        /// Forfeit the rest of the request on yield (v6.18, 6.12.y stable).
        forfeit_yield: bool = flag("off")
            .help("sched_yield() of an eligible task forfeits its request: vruntime moves to its deadline, the deadline a slice on (v6.18; off: 6.12.0's deadline-only push)")
            .source("commit 79104becf42b 'sched/fair: Forfeit vruntime on yield' (v6.18-rc1; 6.12.y stable, Dec 2025)");
        /// `wake_affine_idle` counts delayed tasks out (aa3ee4f0b754).
        sync_delayed: bool = flag("off")
            .help("a sync wake-up's 'the waker is alone on its CPU' test counts delayed-dequeue tasks out, as they are not runnable (v6.15, and 6.12.y stable since 6.12.37: Debian's 6.12.117 has it); off: vanilla 6.12.0's rq->nr_running == 1")
            .source("commit aa3ee4f0b754 'sched/fair: Fixup wake_up_sync() vs DELAYED_DEQUEUE'; fair.c 6.12.117 wake_affine_idle, cfs_h_nr_delayed");
        /// NI_RANDOM: newly idle balancing in proportion to its success.
        ni_random: bool = flag("off")
            .help("a newly idle CPU balances a domain only with the odds of that domain's recent success (a 1024-sided die against newidle_ratio, 50 % at boot; v6.19, 6.18.5 and 6.12.66 stable); off: every newly idle CPU that passes the avg_idle test balances")
            .source("commit 33cf66d88306 'sched/fair: Proportional newidle balance' (v6.19-rc1; 6.18.y, 6.12.y stable, Jan 2026); fair.c 6.12.117 sched_balance_newidle, update_newidle_stats; modern.md §6.9");
        /// Every task in one autogroup (FAIR_GROUP_SCHED, sched_autogroup_enabled=1).
        autogroup: bool = flag("off")
            .help("the run's tasks are one task group, as a benchmark started from a shell is with sched_autogroup_enabled=1 (distribution kernels' default): a CPU's load is the group entity's (the group's 1024 shares split by the CPUs' loads, rate-limited to once a ms) and a task's load is scaled by it; off: one root queue, as in a kernel without group scheduling")
            .source("fair.c 6.12: calc_group_shares, update_cfs_group, update_tg_load_avg, update_tg_cfs_load, cfs_rq_h_load; autogroup.c; modern.md §5.6");
        /// `sysctl_sched_base_slice` before CPU scaling.
        base_slice_ns: u64 = int("750000", 100000, 100000000)
            .unit("ns")
            .help("normalized base slice r (scaled by 1 + ilog2(min(cpus, 8))); 700000 is v6.15+")
            .source("fair.c 6.6-6.14: normalized_sysctl_sched_base_slice = 750 us; modern.md §2");
    }
}

fn build_cfs(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    Ok(Box::new(Fair::new(
        Variant::Cfs,
        p,
        m,
        Topology::of_machine(m),
    )))
}

fn build_eevdf(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    Ok(Box::new(Fair::new(
        Variant::Eevdf,
        p,
        m,
        Topology::of_machine(m),
    )))
}

/// `wakee_flips` of a workload's first task, inherited from the process that launched it
/// (a shell, `schedlab native`'s supervisor), which has its own history: the tasks it
/// woke and, since `record_wakee` charges `current`, those an interrupt woke while it ran
/// (`rcu_preempt`, kworkers). Not zero, then, and it decides `wake_wide` for every child:
/// a child's count is its parent's plus its own wakes. Observed on the host (a 6.18
/// guest, tracefs): the hackbench herd — 40 workers, each having woken the leader once,
/// woken in turn by the leader — had 5 wake-ups placed affine before the first `wake_wide`
/// one in 5 of 6 traced runs, rt-tests' hackbench from bash and `schedlab native` alike,
/// and `wake_wide`'s algebra (`min(flips) >= llc_size && max >= llc_size * min`, the
/// leader one flip per wakee, a worker its parent's count plus one) gives 4 for that. An
/// initial condition of the simulated process tree, as each CPU's tick phase is, the
/// same for every machine and workload (docs/model.md).
pub const LAUNCHER_WAKEE_FLIPS: u32 = 4;

/// Which kernel's fair class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// CFS, Linux 6.1.
    Cfs,
    /// EEVDF, Linux 6.12.
    Eevdf,
}

/// Tunables in effect (after CPU scaling), and the feature switches.
#[derive(Clone, Debug)]
pub struct Tunables {
    /// HZ.
    pub hz: u32,
    /// `TICK_NSEC`.
    pub tick_nsec: u64,
    /// Honour WF_SYNC.
    pub sync_wakeups: bool,
    /// CFS `sysctl_sched_latency`, ns.
    pub latency: u64,
    /// CFS `sysctl_sched_min_granularity`, ns.
    pub min_gran: u64,
    /// CFS `sysctl_sched_wakeup_granularity`, ns.
    pub wakeup_gran: u64,
    /// CFS `sched_nr_latency` (normalized latency / normalized min granularity).
    pub nr_latency: u64,
    /// GENTLE_FAIR_SLEEPERS.
    pub gentle_fair_sleepers: bool,
    /// START_DEBIT.
    pub start_debit: bool,
    /// EEVDF `sysctl_sched_base_slice`, ns.
    pub base_slice: u64,
    /// EEVDF base slice before scaling (v6.17 vprot without RUN_TO_PARITY).
    pub base_slice_normalized: u64,
    /// PLACE_LAG.
    pub place_lag: bool,
    /// RUN_TO_PARITY.
    pub run_to_parity: bool,
    /// PREEMPT_SHORT.
    pub preempt_short: bool,
    /// DELAY_DEQUEUE.
    pub delay_dequeue: bool,
    /// v6.17 protected slice.
    pub vprot: bool,
    /// v6.18 yield: an eligible yielder forfeits the rest of its request.
    pub forfeit_yield: bool,
    /// NI_RANDOM (option `ni_random`).
    pub ni_random: bool,
    /// `wake_affine_idle`'s sync test counts delayed tasks out (aa3ee4f0b754).
    pub sync_delayed: bool,
    /// Every task in one task group (option `autogroup`, [`group`]).
    pub autogroup: bool,
    /// `sysctl_sched_migration_cost`, ns (task_hot; 0.5 ms, both kernels).
    pub migration_cost: u64,
    /// `sysctl_sched_nr_migrate` (32).
    pub nr_migrate: u32,
}

/// Per-task fair state (`struct sched_entity` and the task fields the class uses).
#[derive(Clone, Debug)]
pub struct Se {
    /// Weight and inverse weight.
    pub load: LoadWeight,
    /// `vruntime`.
    pub vruntime: i64,
    /// EEVDF `deadline` (while `rel_deadline`: relative to vruntime).
    pub deadline: i64,
    /// EEVDF `slice` r, ns.
    pub slice: u64,
    /// EEVDF `vlag`; while curr, the run-to-parity marker (§4.8).
    pub vlag: i64,
    /// v6.17 `vprot` (option `vprot`).
    pub vprot: i64,
    /// `sum_exec_runtime`, ns.
    pub sum_exec_runtime: u64,
    /// `prev_sum_exec_runtime`: at the last pick.
    pub prev_sum_exec_runtime: u64,
    /// `exec_start`: task clock at the last accounting; 0 after a migration.
    pub exec_start: u64,
    /// `on_rq`.
    pub on_rq: bool,
    /// EEVDF `sched_delayed`.
    pub sched_delayed: bool,
    /// EEVDF `rel_deadline`.
    pub rel_deadline: bool,
    /// CFS: vruntime is relative to a queue's min_vruntime (after fork or a migrating
    /// dequeue), to be renormalised at the next enqueue.
    pub v_relative: bool,
    /// Not yet enqueued since fork (`ENQUEUE_INITIAL`, PELT post-init).
    pub initial: bool,
    /// The CPU whose cfs_rq the entity is accounted on (`cfs_rq_of(se)`).
    pub cpu: CpuId,
    /// Timeline key while in the timeline.
    pub key: i64,
    /// Timeline tie-break while in the timeline.
    pub seq: u64,
    /// vruntime when inserted (the second index's key).
    pub vkey: i64,
    /// Second index (by vruntime) for EEVDF's `min_vruntime`.
    pub vseq: u64,
    /// PELT.
    pub avg: SchedAvg,
    /// `util_est` EWMA (§5.5).
    pub util_est: u64,
    /// `UTIL_AVG_UNCHANGED`: PELT has not moved since the last `util_est_update`.
    pub util_est_unchanged: bool,
    /// `wakee_flips`.
    pub wakee_flips: u32,
    /// `wakee_flip_decay_ts`, jiffies.
    pub wakee_flip_decay_ts: u64,
    /// `last_wakee`.
    pub last_wakee: Option<TaskId>,
    /// `recent_used_cpu`.
    pub recent_used_cpu: CpuId,
    /// The idle task of a CPU: never queued.
    pub is_idle: bool,
}

impl Se {
    fn new(nice: i32, cpu: CpuId, is_idle: bool) -> Se {
        let load = LoadWeight::of_nice(nice);
        Se {
            load,
            vruntime: 0,
            deadline: 0,
            slice: 0,
            vlag: 0,
            vprot: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            exec_start: 0,
            on_rq: false,
            sched_delayed: false,
            rel_deadline: false,
            v_relative: true,
            initial: true,
            cpu,
            key: 0,
            seq: 0,
            vkey: 0,
            vseq: 0,
            avg: pelt::init_entity_runnable_average(load.weight),
            util_est: 0,
            util_est_unchanged: false,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            recent_used_cpu: cpu,
            is_idle,
        }
    }
}

/// One CPU's run queue (`struct rq` with its root `cfs_rq`).
#[derive(Clone, Debug)]
pub struct Rq {
    /// `rq->lock`.
    pub lock: LockId,
    /// The queue's shared line (nr_running, load, PELT) read by other CPUs.
    pub line: LineId,
    /// `cfs_rq->curr`.
    pub curr: Option<TaskId>,
    /// The tree: queued entities other than curr, by (vruntime | deadline, insertion).
    pub timeline: Timeline,
    /// EEVDF: the tree entities by vruntime (the augmented `min_vruntime`).
    pub by_vruntime: Timeline,
    /// `cfs_rq->nr_running` (= `h_nr_running` = `rq->nr_running`: one root queue, one
    /// class). Includes delayed entities (vanilla 6.12).
    pub nr_running: u32,
    /// `nr_running` as other CPUs read it.
    pub nr_pub: Published<u32>,
    /// `cfs_rq->load.weight` (W), unscaled.
    pub load: u64,
    /// S and L (§4.2).
    pub avg_vruntime: AvgVruntime,
    /// `min_vruntime` (v0), monotonic; initial −2^20.
    pub min_vruntime: i64,
    /// CFS `next` buddy.
    pub next: Option<TaskId>,
    /// CFS `last` buddy.
    pub last: Option<TaskId>,
    /// CFS `skip` buddy.
    pub skip: Option<TaskId>,
    /// The cfs_rq's PELT.
    pub avg: SchedAvg,
    /// `cfs_rq->avg.util_est`: Σ of the enqueued tasks' `util_est`.
    pub util_est: u64,
    /// With `autogroup`: the group's entity on this CPU's root queue.
    pub gse: group::GroupSe,
    /// `rq->cfs_tasks`, most recently used at the front.
    pub cfs_tasks: VecDeque<TaskId>,
    /// `rq->idle_stamp`, ns (0: not idle since the last wake-up).
    pub idle_stamp: u64,
    /// `rq->avg_idle`, ns.
    pub avg_idle: u64,
    /// `rq->max_idle_balance_cost`, ns.
    pub max_idle_balance_cost: u64,
    /// `rq->next_balance`, jiffies.
    pub next_balance: u64,
    /// `sd_llc_shared->nr_idle_scan` (kept on every CPU of the LLC alike).
    pub nr_idle_scan: u32,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    lb_calls: u64,
    lb_cpus_scanned: u64,
    lb_newidle_calls: u64,
    lb_pulled: u64,
    lb_failed: u64,
    wake_affine: u64,
    wake_idle_sibling: u64,
    fork_balanced: u64,
    wakeup_preemptions: u64,
    tick_preemptions: u64,
    delayed_dequeues: u64,
}

/// `ENQUEUE_*` flags that matter here.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqFlags {
    /// `ENQUEUE_WAKEUP`.
    pub wakeup: bool,
    /// `ENQUEUE_INITIAL`.
    pub initial: bool,
    /// `ENQUEUE_MIGRATED`.
    pub migrated: bool,
}

/// The fair class.
pub struct Fair {
    /// Which kernel.
    pub variant: Variant,
    /// Tunables and features.
    pub t: Tunables,
    options: BTreeMap<String, String>,
    /// The machine's topology.
    pub topo: Topology,
    /// Per-CPU run queues.
    pub rqs: Vec<Rq>,
    /// Each queue's newest published `nr_running` and its time, densely: what the
    /// balancer's walks over every CPU read when no newer write is after their clock.
    nr_newest: Newest<u32>,
    /// Per-task entities.
    pub se: Vec<Se>,
    /// Per-CPU domains, bottom-up.
    pub sd: Vec<Vec<Domain>>,
    /// Per CPU: index of `sd_llc` in `sd[cpu]`.
    pub sd_llc: Vec<Option<usize>>,
    /// `rd->overloaded`.
    pub rd_overloaded: bool,
    /// The root domain's line.
    rd_line: LineId,
    /// With `autogroup`: the group's `tg->load_avg`.
    tg_load_avg: u64,
    stats: Stats,
}

/// `min_vruntime`'s initial value, `(u64)(-(1LL << 20))`.
pub const MIN_VRUNTIME_INIT: i64 = -(1 << 20);

impl Fair {
    /// Build `variant` with options `p` for machine `m`, its domains from `topo`.
    pub fn new(variant: Variant, p: &Params, m: &Machine, topo: Topology) -> Fair {
        let factor = entity::sysctl_factor(m.cpus);
        let mut t = Tunables {
            hz: 250,
            tick_nsec: 0,
            sync_wakeups: true,
            latency: 6_000_000 * factor,
            min_gran: 750_000 * factor,
            wakeup_gran: 1_000_000 * factor,
            nr_latency: 8,
            gentle_fair_sleepers: true,
            start_debit: true,
            base_slice: 750_000 * factor,
            base_slice_normalized: 750_000,
            place_lag: true,
            run_to_parity: true,
            preempt_short: true,
            delay_dequeue: true,
            vprot: false,
            forfeit_yield: false,
            ni_random: false,
            sync_delayed: false,
            autogroup: false,
            migration_cost: 500_000,
            nr_migrate: 32,
        };
        match variant {
            Variant::Cfs => {
                let o = CfsOptions::from_params(p);
                t.hz = o.hz;
                t.sync_wakeups = o.sync_wakeups;
                t.gentle_fair_sleepers = o.gentle_fair_sleepers;
                t.start_debit = o.start_debit;
                t.latency = o.latency_ns * factor;
                t.min_gran = o.min_granularity_ns * factor;
                t.wakeup_gran = o.wakeup_granularity_ns * factor;
                t.nr_latency = (o.latency_ns / o.min_granularity_ns).max(1);
            }
            Variant::Eevdf => {
                let o = EevdfOptions::from_params(p);
                t.hz = o.hz;
                t.sync_wakeups = o.sync_wakeups;
                t.place_lag = o.place_lag;
                t.run_to_parity = o.run_to_parity;
                t.preempt_short = o.preempt_short;
                t.delay_dequeue = o.delay_dequeue;
                t.vprot = o.vprot;
                t.forfeit_yield = o.forfeit_yield;
                t.ni_random = o.ni_random;
                t.sync_delayed = o.sync_delayed;
                t.autogroup = o.autogroup;
                t.base_slice_normalized = o.base_slice_ns;
                t.base_slice = o.base_slice_ns * factor;
            }
        }
        t.tick_nsec = Machine::tick_ns(t.hz);
        let sd = topology::build_domains(&topo);
        let sd_llc = topology::sd_llc(&sd);
        Fair {
            variant,
            t,
            options: p.to_map(),
            topo,
            rqs: Vec::new(),
            nr_newest: Newest::default(),
            se: Vec::new(),
            sd,
            sd_llc,
            rd_overloaded: false,
            rd_line: 0,
            tg_load_avg: 0,
            stats: Stats::default(),
        }
    }

    /// A class on a hand-built topology (tests of the balancer).
    pub fn with_topology(
        spec: &str,
        m: &Machine,
        topo: Topology,
    ) -> Result<Fair, crate::spec::SpecError> {
        let s = crate::spec::Spec::parse("policy", spec)?;
        let (variant, decl) = match s.name.as_str() {
            "cfs" => (Variant::Cfs, PARAMS_CFS),
            "eevdf" => (Variant::Eevdf, PARAMS_EEVDF),
            other => {
                return Err(crate::spec::SpecError::unknown(
                    "policy",
                    other,
                    &["cfs", "eevdf"],
                ))
            }
        };
        let p = crate::spec::resolve("policy", &s, decl)?;
        Ok(Fair::new(variant, &p, m, topo))
    }

    fn name_str(&self) -> &'static str {
        match self.variant {
            Variant::Cfs => "cfs",
            Variant::Eevdf => "eevdf",
        }
    }

    fn eevdf(&self) -> bool {
        self.variant == Variant::Eevdf
    }

    /// The on-rq curr of `cpu` as `(weight, vruntime)`, for the averages.
    pub fn curr_wv(&self, cpu: CpuId) -> Option<(u64, i64)> {
        self.rqs[cpu]
            .curr
            .map(|c| &self.se[c as usize])
            .filter(|s| s.on_rq)
            .map(|s| (s.load.weight, s.vruntime))
    }

    /// (E9) `avg_vruntime(cfs_rq)`.
    pub fn avg_vruntime(&self, cpu: CpuId) -> i64 {
        let rq = &self.rqs[cpu];
        rq.avg_vruntime.avg(rq.min_vruntime, self.curr_wv(cpu))
    }

    /// (E11) `entity_eligible(cfs_rq, se)`.
    pub fn entity_eligible(&self, cpu: CpuId, p: TaskId) -> bool {
        let rq = &self.rqs[cpu];
        rq.avg_vruntime.eligible(
            rq.min_vruntime,
            self.curr_wv(cpu),
            self.se[p as usize].vruntime,
        )
    }

    /// model: the kernel's rbtree insert, erase and search read about `log2(n)`
    /// entities' nodes; charge the reads of that many queued entities (the leftmost
    /// ones stand in for the path).
    fn charge_walk(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        let n = self.rqs[cpu].timeline.len();
        if n == 0 {
            return;
        }
        let depth = (entity::ilog2(n as u64) + 1) as usize;
        let path: Vec<TaskId> = self.rqs[cpu]
            .timeline
            .iter()
            .take(depth)
            .map(|(_, p)| p)
            .collect();
        ctx.read(Walk(path));
    }

    /// `__enqueue_entity`: into the tree (and the averages, for eevdf).
    fn enqueue_tree(&mut self, cpu: CpuId, p: TaskId) {
        let rq = &mut self.rqs[cpu];
        let se = &mut self.se[p as usize];
        se.key = match self.variant {
            Variant::Cfs => se.vruntime,
            Variant::Eevdf => se.deadline,
        };
        se.seq = rq.timeline.insert(se.key, p);
        se.vkey = se.vruntime;
        se.vseq = rq.by_vruntime.insert(se.vkey, p);
        rq.avg_vruntime
            .add(se.load.weight, se.vruntime, rq.min_vruntime);
    }

    /// `__dequeue_entity`.
    fn dequeue_tree(&mut self, cpu: CpuId, p: TaskId) {
        let rq = &mut self.rqs[cpu];
        let se = &self.se[p as usize];
        rq.timeline.remove(se.key, se.seq);
        rq.by_vruntime.remove(se.vkey, se.vseq);
        rq.avg_vruntime
            .sub(se.load.weight, se.vruntime, rq.min_vruntime);
    }

    /// `update_min_vruntime`: v0 follows min(curr, the tree's least vruntime), never
    /// backwards; eevdf shifts S with it (§4.2, E4).
    pub fn update_min_vruntime(&mut self, cpu: CpuId) {
        let curr = self.curr_wv(cpu);
        let rq = &mut self.rqs[cpu];
        let mut v = rq.min_vruntime;
        if let Some((_, cv)) = curr {
            v = cv;
        }
        if let Some((tv, _)) = rq.by_vruntime.first() {
            v = if curr.is_some() { v.min(tv) } else { tv };
        }
        let delta = v - rq.min_vruntime;
        if delta > 0 {
            rq.avg_vruntime.shift(delta);
            rq.min_vruntime = v;
        }
    }

    /// `update_curr`: charge curr's runtime since `exec_start` in virtual time; eevdf
    /// ends a used-up slice (§4.5).
    pub fn update_curr(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        let Some(c) = self.rqs[cpu].curr else {
            return;
        };
        let now = ctx.now();
        let se = &mut self.se[c as usize];
        // determinism: a hook running on another CPU may read a clock behind this
        // queue's last update; time never runs backwards (the kernel's `delta <= 0`).
        if now <= se.exec_start {
            return;
        }
        let delta = now - se.exec_start;
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        se.vruntime += entity::calc_delta_fair(delta, &se.load) as i64;
        match self.variant {
            Variant::Cfs => self.update_min_vruntime(cpu),
            Variant::Eevdf => self.update_curr_eevdf(ctx, cpu, c),
        }
    }

    fn publish_nr(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        let n = self.rqs[cpu].nr_running;
        let now = ctx.now();
        self.rqs[cpu].nr_pub.set(now, n);
        self.nr_newest.note(cpu, &self.rqs[cpu].nr_pub);
        if n >= 2 && !self.rd_overloaded {
            // add_nr_running: set_rd_overloaded.
            self.rd_overloaded = true;
            ctx.write(Shared::Line(self.rd_line));
        }
    }

    /// `enqueue_entity` (6.1 and 6.12 orders, §3.4 and §4.6), with `rq->lock` held.
    pub fn enqueue_entity(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, f: EnqFlags) {
        debug_assert!(ctx.holds(self.rqs[cpu].lock));
        let pi = p as usize;
        self.update_curr(ctx, cpu);
        if self.variant == Variant::Cfs && self.se[pi].v_relative {
            // Renormalise (6.1: !ENQUEUE_WAKEUP || ENQUEUE_MIGRATED).
            self.se[pi].vruntime += self.rqs[cpu].min_vruntime;
            self.se[pi].v_relative = false;
        }
        self.update_load_avg(ctx, cpu, Some(p));
        if self.eevdf() {
            self.place_entity(cpu, p, f.initial);
        }
        // account_entity_enqueue.
        let w = self.se[pi].load.weight;
        self.rqs[cpu].load += w;
        self.rqs[cpu].nr_running += 1;
        self.rqs[cpu].cfs_tasks.push_front(p);
        if self.variant == Variant::Cfs && f.wakeup {
            self.place_entity_cfs(ctx, cpu, p, false);
        }
        if f.migrated {
            self.se[pi].exec_start = 0;
        }
        self.charge_walk(ctx, cpu);
        if self.rqs[cpu].curr != Some(p) {
            self.enqueue_tree(cpu, p);
        }
        self.se[pi].on_rq = true;
        self.se[pi].initial = false;
        self.publish_nr(ctx, cpu);
    }

    /// `dequeue_entity` for a task leaving its queue: `sleep` (`DEQUEUE_SLEEP`) or a
    /// move (`DEQUEUE_SAVE|MOVE`: migration, nice, affinity). Returns false when eevdf
    /// delays the dequeue (§4.10).
    pub fn dequeue_entity(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        p: TaskId,
        sleep: bool,
    ) -> bool {
        debug_assert!(ctx.holds(self.rqs[cpu].lock));
        let pi = p as usize;
        let delayed = self.se[pi].sched_delayed;
        self.update_curr(ctx, cpu);
        self.clear_buddies(cpu, p);
        if !delayed
            && self.eevdf()
            && self.t.delay_dequeue
            && sleep
            && !self.entity_eligible(cpu, p)
        {
            // Asleep, but competing until its negative lag is burnt off (set_delayed).
            self.update_load_avg(ctx, cpu, Some(p));
            self.se[pi].sched_delayed = true;
            self.stats.delayed_dequeues += 1;
            return false;
        }
        self.update_load_avg(ctx, cpu, Some(p));
        if self.eevdf() {
            self.update_entity_lag(cpu, p);
            if !sleep {
                let se = &mut self.se[pi];
                se.deadline -= se.vruntime;
                se.rel_deadline = true;
            }
        }
        self.charge_walk(ctx, cpu);
        if self.rqs[cpu].curr != Some(p) {
            self.dequeue_tree(cpu, p);
        }
        self.se[pi].on_rq = false;
        let w = self.se[pi].load.weight;
        let rq = &mut self.rqs[cpu];
        rq.load -= w;
        rq.nr_running -= 1;
        if let Some(i) = rq.cfs_tasks.iter().position(|&t| t == p) {
            rq.cfs_tasks.remove(i);
        }
        if self.variant == Variant::Cfs && !sleep {
            self.se[pi].vruntime -= self.rqs[cpu].min_vruntime;
            self.se[pi].v_relative = true;
        }
        self.update_min_vruntime(cpu);
        if delayed && sleep {
            // finish_delayed_dequeue_entity (DELAY_ZERO). A delayed task moved with
            // DEQUEUE_SAVE (nice) stays delayed through the matching enqueue.
            let se = &mut self.se[pi];
            se.sched_delayed = false;
            se.vlag = se.vlag.min(0);
        }
        self.publish_nr(ctx, cpu);
        true
    }

    /// `clear_buddies`.
    fn clear_buddies(&mut self, cpu: CpuId, p: TaskId) {
        let rq = &mut self.rqs[cpu];
        for b in [&mut rq.next, &mut rq.last, &mut rq.skip] {
            if *b == Some(p) {
                *b = None;
            }
        }
    }

    /// `set_next_entity`: `p` becomes curr of `cpu`.
    fn set_next_entity(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        self.clear_buddies(cpu, p);
        if self.se[p as usize].on_rq {
            self.dequeue_tree(cpu, p);
            self.update_load_avg(ctx, cpu, Some(p));
        }
        self.rqs[cpu].curr = Some(p);
        if self.eevdf() {
            self.set_protect_slice(cpu, p);
        }
        // PELT sees curr from here on.
        let now = ctx.now();
        let se = &mut self.se[p as usize];
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        // pick_next_task_fair: cfs_tasks is MRU.
        let rq = &mut self.rqs[cpu];
        if let Some(i) = rq.cfs_tasks.iter().position(|&t| t == p) {
            rq.cfs_tasks.remove(i);
            rq.cfs_tasks.push_front(p);
        }
    }

    /// `put_prev_entity`: `p` stops being curr of `cpu`; back into the tree if queued.
    fn put_prev_entity(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        if self.se[p as usize].on_rq {
            self.update_curr(ctx, cpu);
            self.enqueue_tree(cpu, p);
            self.update_load_avg(ctx, cpu, Some(p));
        }
        self.rqs[cpu].curr = None;
    }

    /// `idle_cpu(cpu)` as seen from the executing CPU (its `curr` and `nr_running`
    /// lines are read).
    pub fn idle_cpu(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> bool {
        let curr = if cpu == ctx.cpu() {
            ctx.curr(cpu)
        } else {
            ctx.read(Curr(cpu))
        };
        if curr != ctx.idle_task(cpu) {
            return false;
        }
        self.nr_running_seen(ctx, cpu) == 0
    }

    /// `rq->nr_running` of `cpu` as the executing CPU reads it.
    #[inline]
    pub fn nr_running_seen(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> u32 {
        if cpu == ctx.cpu() {
            return self.rqs[cpu].nr_running;
        }
        ctx.read(Shared::Line(self.rqs[cpu].line));
        self.nr_newest.at(cpu, &self.rqs[cpu].nr_pub, ctx.now())
    }

    /// Move the queued, not running `p` from `src` to `dst` (`detach_task` +
    /// `attach_task`); both locks are taken by the caller as the kernel takes them.
    fn move_queued_task(&mut self, ctx: &mut SchedCtx<'_>, src: CpuId, p: TaskId, dst: CpuId) {
        self.util_est_dequeue(src, p);
        self.dequeue_entity(ctx, src, p, false);
        self.detach_entity_load_avg(p);
        ctx.set_task_cpu(p, dst);
        ctx.write(Shared::Task(p));
        self.se[p as usize].cpu = dst;
        self.se[p as usize].exec_start = 0;
    }

    fn counter_map(&self) -> BTreeMap<String, f64> {
        let s = &self.stats;
        let mut m = BTreeMap::from([
            ("lb_calls".to_string(), s.lb_calls as f64),
            ("lb_cpus_scanned".to_string(), s.lb_cpus_scanned as f64),
            ("lb_newidle_calls".to_string(), s.lb_newidle_calls as f64),
            ("lb_pulled".to_string(), s.lb_pulled as f64),
            ("lb_failed".to_string(), s.lb_failed as f64),
            ("wake_affine".to_string(), s.wake_affine as f64),
            ("wake_idle_sibling".to_string(), s.wake_idle_sibling as f64),
            ("fork_balanced".to_string(), s.fork_balanced as f64),
            (
                "wakeup_preemptions".to_string(),
                s.wakeup_preemptions as f64,
            ),
            ("tick_preemptions".to_string(), s.tick_preemptions as f64),
            (
                "nr_domains".to_string(),
                self.sd.first().map_or(0, |d| d.len()) as f64,
            ),
        ]);
        if self.eevdf() {
            m.insert("delayed_dequeues".into(), s.delayed_dequeues as f64);
        }
        m
    }
}

impl SchedClass for Fair {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hrtimers(&self) -> bool {
        true
    }

    fn hz(&self) -> u32 {
        self.t.hz
    }

    fn release(&self) -> crate::kernel::release::Release {
        crate::kernel::release::Release::V6(if self.name() == "eevdf" { 12 } else { 1 })
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = ctx.nr_cpus();
        assert_eq!(
            n,
            self.topo.nr_cpus(),
            "topology for {} CPUs booted on {n}",
            self.topo.nr_cpus()
        );
        self.rd_line = ctx.new_line("rd->overloaded", None);
        self.rqs = (0..n)
            .map(|c| Rq {
                lock: ctx.new_lock("rq->lock", None),
                line: ctx.new_line("rq", Some(c)),
                curr: None,
                timeline: Timeline::default(),
                by_vruntime: Timeline::default(),
                nr_running: 0,
                nr_pub: Published::new(0),
                load: 0,
                avg_vruntime: AvgVruntime::default(),
                min_vruntime: MIN_VRUNTIME_INIT,
                next: None,
                last: None,
                skip: None,
                avg: SchedAvg::default(),
                util_est: 0,
                gse: group::GroupSe::default(),
                cfs_tasks: VecDeque::new(),
                idle_stamp: 0,
                avg_idle: 2 * self.t.migration_cost,
                max_idle_balance_cost: self.t.migration_cost,
                next_balance: 0,
                nr_idle_scan: 0,
            })
            .collect();
        self.nr_newest = Newest::of(self.rqs.iter().map(|q| &q.nr_pub));
    }

    fn rq_lockp(&self, cpu: CpuId) -> LockId {
        self.rqs[cpu].lock
    }

    fn wake_order(&self) -> WakeOrder {
        WakeOrder::SelectFirst
    }

    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        let _ = ctx;
        let se = &self.se[p as usize];
        // A running task sleeping before its schedule() is still on_rq here.
        se.on_rq && !se.sched_delayed
    }

    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        let t = ctx.task(p);
        let (nice, cpu, is_idle) = (t.nice, t.processor, t.is_idle);
        if self.se.len() < n {
            self.se.resize(n, Se::new(0, 0, true));
        }
        let mut se = Se::new(nice, cpu, is_idle);
        se.slice = self.t.base_slice;
        if let Some(par) = parent {
            // dup_task_struct copies the parent's task_struct and sched_fork resets none
            // of record_wakee's fields: a child starts with its parent's flip count.
            let ps = &self.se[par as usize];
            (se.wakee_flips, se.wakee_flip_decay_ts, se.last_wakee) =
                (ps.wakee_flips, ps.wakee_flip_decay_ts, ps.last_wakee);
        } else if !is_idle {
            // A workload's first task has a parent outside the simulation: its launcher.
            se.wakee_flips = LAUNCHER_WAKEE_FLIPS;
        }
        self.se[p as usize] = se;
        if is_idle || self.variant == Variant::Eevdf {
            // 6.12 __sched_fork: vruntime, vlag, rel_deadline zeroed; task_fork_fair
            // places nothing (the enqueue does, ENQUEUE_INITIAL).
            return;
        }
        self.task_fork_cfs(ctx, p, parent);
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId {
        let se = &self.se[p as usize];
        if se.sched_delayed {
            let cpu = se.cpu;
            if ctx.allowed(p, cpu) {
                // ttwu_runnable: still queued on its CPU.
                return cpu;
            }
            // Its affinity no longer allows the CPU it is delayed on: finish the delayed
            // dequeue there (as moving a queued task would) and place it afresh.
            let l = self.rqs[cpu].lock;
            ctx.lock(l);
            self.dequeue_entity(ctx, cpu, p, true);
            ctx.unlock(l);
        }
        let prev = ctx.task(p).processor;
        let allowed = ctx.task(p).cpus_allowed;
        let online = crate::machine::CpuMask::all(ctx.nr_cpus());
        let cpu = if allowed.and(&online).weight() > 1 {
            self.select_task_rq_fair(ctx, p, prev, wake)
        } else {
            prev
        };
        if ctx.allowed(p, cpu) {
            cpu
        } else {
            // select_fallback_rq: the lowest allowed CPU.
            (0..ctx.nr_cpus())
                .find(|&c| ctx.allowed(p, c))
                .unwrap_or(prev)
        }
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        ctx.write(Shared::Line(self.rqs[cpu].line));
        let pi = p as usize;
        if self.se[pi].sched_delayed {
            debug_assert_eq!(self.se[pi].cpu, cpu);
            self.util_est_enqueue(cpu, p);
            self.requeue_delayed_entity(ctx, cpu, p);
            self.ttwu_avg_idle(ctx, cpu);
            return;
        }
        let old = self.se[pi].cpu;
        let migrated = old != cpu;
        if migrated {
            // migrate_task_rq_fair: relative vruntime (6.1), PELT leaves the old queue,
            // no longer cache-hot.
            if self.variant == Variant::Cfs && !self.se[pi].v_relative {
                self.se[pi].vruntime -= self.rqs[old].min_vruntime;
                self.se[pi].v_relative = true;
            }
            self.detach_entity_load_avg(p);
            self.se[pi].cpu = cpu;
            self.se[pi].exec_start = 0;
        }
        let initial = self.se[pi].initial;
        if initial {
            // wake_up_new_task: post_init_entity_util_avg on the chosen CPU.
            let now = ctx.now();
            self.update_cfs_rq_load_avg(now, cpu);
            let w = self.se[pi].load.weight;
            let cfs = self.rqs[cpu].avg;
            pelt::post_init_entity_util_avg(&mut self.se[pi].avg, &cfs, w);
        }
        let f = EnqFlags {
            wakeup: !wake.fork && !initial,
            initial,
            migrated: migrated && !wake.fork,
        };
        self.util_est_enqueue(cpu, p);
        self.enqueue_entity(ctx, cpu, p, f);
        if !wake.fork {
            self.ttwu_avg_idle(ctx, cpu);
        }
    }

    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        ctx.write(Shared::Line(self.rqs[cpu].line));
        let sleep = ctx.task(p).state != TaskState::Running;
        self.util_est_dequeue(cpu, p);
        self.dequeue_entity(ctx, cpu, p, sleep);
        if sleep {
            self.util_est_update(p);
        }
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        let curr = ctx.curr(cpu);
        if curr == p || self.rqs[cpu].curr == Some(p) {
            return;
        }
        if curr == ctx.idle_task(cpu) || self.rqs[cpu].curr.is_none() {
            // The idle class is below fair: any fair wakee preempts it.
            ctx.resched_cpu(cpu);
            return;
        }
        if ctx.task(curr).need_resched {
            return;
        }
        let preempt = match self.variant {
            Variant::Cfs => self.check_preempt_wakeup_cfs(ctx, cpu, p, wake),
            Variant::Eevdf => self.check_preempt_wakeup_fair(ctx, cpu, p),
        };
        if preempt {
            self.stats.wakeup_preemptions += 1;
            ctx.resched_cpu(cpu);
        }
    }

    fn balance(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, why: Balance) {
        if let Balance::Tick { idle } = why {
            self.sched_balance_trigger(ctx, cpu, idle);
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        _prev: TaskId,
    ) -> Option<TaskId> {
        let mut tried_newidle = false;
        loop {
            if self.rqs[cpu].nr_running == 0 {
                if tried_newidle {
                    return None;
                }
                tried_newidle = true;
                if self.sched_balance_newidle(ctx, cpu) > 0 {
                    continue;
                }
                return None;
            }
            if self.curr_wv(cpu).is_some() {
                self.update_curr(ctx, cpu);
            }
            let se = match self.variant {
                Variant::Cfs => self.pick_next_entity_cfs(ctx, cpu),
                Variant::Eevdf => self.pick_eevdf(ctx, cpu),
            };
            let se = se.expect("nr_running > 0 but nothing to pick");
            if self.se[se as usize].sched_delayed {
                // pick_next_entity: a delayed entity picked is dequeued for real.
                self.dequeue_entity(ctx, cpu, se, true);
                continue;
            }
            ctx.read(Shared::Task(se));
            return Some(se);
        }
    }

    fn put_prev_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId, next: TaskId) {
        if next != prev && self.rqs[cpu].curr == Some(prev) {
            self.put_prev_entity(ctx, cpu, prev);
        }
    }

    fn set_next_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, next: TaskId, prev: TaskId) {
        if next != prev || self.rqs[cpu].curr != Some(next) {
            if let Some(c) = self.rqs[cpu].curr {
                // The previous curr was the idle task's predecessor (already put).
                debug_assert_ne!(c, next);
                self.put_prev_entity(ctx, cpu, c);
            }
            self.set_next_entity(ctx, cpu, next);
        }
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        if ctx.task(curr).is_idle || self.rqs[cpu].curr != Some(curr) {
            return;
        }
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        // entity_tick.
        self.update_curr(ctx, cpu);
        self.update_load_avg(ctx, cpu, Some(curr));
        if self.variant == Variant::Cfs && self.rqs[cpu].nr_running > 1 {
            self.check_preempt_tick(ctx, cpu, curr);
        }
        ctx.unlock(l);
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        if self.rqs[cpu].nr_running > 1 && self.rqs[cpu].curr == Some(p) {
            self.clear_buddies(cpu, p);
            self.update_curr(ctx, cpu);
            match self.variant {
                Variant::Cfs => self.rqs[cpu].skip = Some(p),
                Variant::Eevdf if self.t.forfeit_yield => {
                    // yield_task_fair (v6.18): only an eligible yielder forfeits what is
                    // left of its request, so a yield loop cannot run its deadline away.
                    if self.entity_eligible(cpu, p) {
                        let se = &mut self.se[p as usize];
                        se.vruntime = se.deadline;
                        se.deadline += entity::calc_delta_fair(se.slice, &se.load) as i64;
                        self.update_min_vruntime(cpu);
                    }
                }
                Variant::Eevdf => {
                    // yield_task_fair (vanilla 6.12): the deadline moves one slice on.
                    let se = &mut self.se[p as usize];
                    se.deadline += entity::calc_delta_fair(se.slice, &se.load) as i64;
                }
            }
        }
        ctx.unlock(l);
        // do_sched_yield: schedule() on the way out.
        ctx.resched_cpu(cpu);
    }

    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let nice = ctx.task(p).nice;
        let new = LoadWeight::of_nice(nice);
        let pi = p as usize;
        if self.se[pi].is_idle || self.se[pi].load == new {
            return;
        }
        let cpu = self.se[pi].cpu;
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        let old_w = self.se[pi].load.weight;
        // task_on_rq_queued: a delayed task counts.
        let queued = self.se[pi].on_rq;
        let running = self.rqs[cpu].curr == Some(p);
        // set_user_nice: dequeue (SAVE), reweight, enqueue (RESTORE), set_next if curr.
        if queued {
            self.dequeue_entity(ctx, cpu, p, false);
        }
        if self.eevdf() {
            let se = &mut self.se[pi];
            se.vlag = (se.vlag as i128 * old_w as i128 / new.weight as i128) as i64;
        }
        self.se[pi].load = new;
        if self.se[pi].avg.last_update_time != 0 {
            // reweight_entity: the PELT load follows the new weight.
            let snapshot = self.se[pi].avg;
            self.rqs[cpu].avg.detach(&snapshot, old_w);
            let se = &mut self.se[pi];
            se.avg.load_avg = new.weight * se.avg.load_sum / se.avg.divider();
            let snapshot = se.avg;
            let rq = &mut self.rqs[cpu].avg;
            rq.load_avg += snapshot.load_avg;
            rq.load_sum += new.weight * snapshot.load_sum;
            rq.util_avg += snapshot.util_avg;
            rq.util_sum += snapshot.util_sum;
            rq.runnable_avg += snapshot.runnable_avg;
            rq.runnable_sum += snapshot.runnable_sum;
        }
        if queued {
            self.enqueue_entity(ctx, cpu, p, EnqFlags::default());
            if running {
                // put_prev_task + set_next_task of the running task: back into the
                // tree as a queued entity, then out again as curr.
                self.rqs[cpu].curr = None;
                self.enqueue_tree(cpu, p);
                self.set_next_entity(ctx, cpu, p);
            }
            // prio_changed_fair.
            if self.rqs[cpu].nr_running > 1 {
                if running {
                    if new.weight < old_w {
                        ctx.resched_cpu(cpu);
                    }
                } else {
                    self.wakeup_preempt(ctx, cpu, p, Wake::default());
                }
            }
        }
        ctx.unlock(l);
    }

    fn task_dead(&mut self, ctx: &mut SchedCtx<'_>, _parent: TaskId, p: TaskId) {
        let pi = p as usize;
        if pi >= self.se.len() {
            return;
        }
        let cpu = self.se[pi].cpu;
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        if self.se[pi].sched_delayed {
            self.dequeue_entity(ctx, cpu, p, true);
        }
        // task_dead_fair: remove_entity_load_avg.
        self.detach_entity_load_avg(p);
        ctx.unlock(l);
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        self.counter_map()
    }

    fn check(&self, k: &crate::kernel::Kernel) -> Result<(), String> {
        let name = self.name_str();
        let mut seen = vec![None; self.se.len()];
        for c in 0..self.rqs.len() {
            self.check_rq(k, c, &mut seen)?;
        }
        self.check_group()?;
        for (id, t) in k.tasks.iter().enumerate() {
            if t.is_idle || id >= self.se.len() {
                continue;
            }
            let queued = seen[id].is_some();
            // A task `schedule()` took off for its affinity is on no queue until the
            // switch's tail places it (the kernel's TASK_ON_RQ_MIGRATING).
            let migrating = k.cpus.iter().any(|c| c.migrate == Some(id as TaskId));
            if t.state == TaskState::Running && !queued && t.on_cpu.is_none() && !migrating {
                return Err(format!("{name}: runnable pid {} on no run queue", t.pid));
            }
            if queued != self.se[id].on_rq {
                return Err(format!(
                    "{name}: pid {} on_rq flag disagrees with the queues",
                    t.pid
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
