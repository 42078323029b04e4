//! The O(1) scheduler (Molnar, 2002–2003) in three versions: `o1-d1`, `o1-g1`, `o1-2.6`.
//!
//! # Theory (schedulers.md §2)
//!
//! Every CPU has a runqueue with its own lock (`rq->lock`) and two priority arrays,
//! *active* and *expired*; each array has 140 FIFO lists and a bitmap of the non-empty
//! ones. Lower priority values are better: 0…99 real-time, 100…139 = `120 + nice`
//! adjusted by the interactivity estimator.
//!
//! 1. **Pick** (`schedule()`): the head of the list at `sched_find_first_bit(active)` —
//!    constant time, whatever the number of runnable tasks. The running task stays queued
//!    until it sleeps (`deactivate_task`).
//! 2. **Slice expiry** (`scheduler_tick`): when `--time_slice == 0` the task gets a new
//!    slice and goes to the *expired* array — unless it is `TASK_INTERACTIVE` (and, from
//!    -J4 on, the expired tasks are not starving: `EXPIRED_STARVING`), then back to the
//!    tail of *active*.
//! 3. **Array switch**: when active is empty, active and expired swap pointers; every
//!    expired task has a fresh slice. `rq->expired_timestamp` dates the oldest expiry.
//! 4. **Wake-up** (`try_to_wake_up`): the wakee goes to the active array of *its own*
//!    runqueue (the CPU it last ran on); if it beats that CPU's current task, that task
//!    gets `need_resched` — with a reschedule IPI when the CPU is another one. With
//!    `sync_wakeups=on` a sync wake-up (`__wake_up_sync`, the waker is about to sleep)
//!    first moves the wakee to the waker's runqueue and does not preempt (2.6.0 §2.5.6).
//! 5. **Balancing** (balance.rs): per version; pulls only, the puller locks both queues
//!    in CPU order.
//!
//! The estimators are in interactivity.rs, the per-version constants in versions.rs.
//!
//! Invariants (checked by [`SchedClass::check`]): a task is on at most one runqueue, in
//! exactly one list of one of its two arrays, the list of its `prio`; a queued task's
//! `processor` is that runqueue's CPU; every runnable non-idle task is queued, and so is
//! every task on a CPU (until `schedule()` deactivates it); `nr_running` = tasks queued;
//! the bitmap matches the lists.
//!
//! # Statistics (`counters.policy`)
//!
//! `balance_calls` (of which `idle_balance_calls`, `busy_balance_calls`): `load_balance`
//! runs; `balance_rqs_scanned`: runqueue lengths they read (every CPU's per call: the
//! balancer's own O(CPUs) work); `pulled_by_idle` / `pulled_by_busy`: tasks moved by idle (empty queue, idle
//! tick) and busy (fairness tick) balancing; `array_switches`; `sync_migrations`: sync
//! wake-ups that moved the wakee to the waker's CPU; `expired_inserts` /
//! `interactive_reinserts`: where expired slices went; `cache_decay_ticks` (2.6);
//! `unaffine_by_balance` / `unaffine_other`: switch-ins of a task that last ran on another
//! CPU, moved by the balancer or by anything else (Molnar's count of CPU-unaffine
//! reschedules before and after -G1); `wakeup_preemptions`: wake-ups that preempted a
//! running task.
//! Balancer moves are kernel migrations, so they show in `migrations` and
//! `unaffine_switch_pct`.
//!
//! # A worked consequence (table V3)
//!
//! bw_pipe's two tasks start on one CPU (the child is queued where it was forked). They
//! are split only when an idle CPU's balancer finds both queued at once — for `o1-2.6`
//! within milliseconds (idle balance every 1 ms tick), for `o1-d1` at the first
//! 250 ms idle tick that catches the brief moment after a wake-up and before the waker
//! sleeps. Once split, without sync wake-ups each 4 KB hand-off is a cross-CPU wake-up
//! with an IPI and a copy of lines dirty in the other cache; with them the wakee is
//! pulled back to the waker at once.
//!
//! Not modelled: RT balancing, `nr_uninterruptible`, migration threads and
//! `set_cpus_allowed` (the workloads never change affinity), NUMA node balancing.

pub mod balance;
pub mod interactivity;
pub mod nr_running;
pub mod prio_array;
pub mod versions;

use crate::kernel::sched::Shared;
use std::collections::BTreeMap;

use crate::engine::Time;
use crate::kernel::task::{SchedPolicy, TaskId, TaskState};
use crate::machine::{CpuId, LockId, Machine};
use crate::spec::Params;

use super::{Balance, PolicyInfo, SchedClass, SchedCtx, Wake};
use interactivity as est;
use nr_running::NrRunning;
use prio_array::{PrioArray, MAX_PRIO};
use versions::{Consts, Gen, Version};

/// Registry entry for `o1-d1`.
pub const INFO_D1: PolicyInfo = PolicyInfo {
    name: "o1-d1",
    about: "O(1) -D1 (Jan 2002): per-CPU active/expired arrays, early balancer, no sync wake-ups",
    params: PARAMS_D1,
    build: build_d1,
};

/// Registry entry for `o1-g1`.
pub const INFO_G1: PolicyInfo = PolicyInfo {
    name: "o1-g1",
    about: "O(1) -G1 (Jan 2002): idle pulls one task, 250 ms fairness rebalance",
    params: PARAMS_G1,
    build: build_g1,
};

/// Registry entry for `o1-2.6`.
pub const INFO_26: PolicyInfo = PolicyInfo {
    name: "o1-2.6",
    about: "O(1) of Linux 2.6.0: Kolivas interactivity, 1/200 ms balancing, sync wake-ups",
    params: PARAMS_26,
    build: build_26,
};

/// The early versions' estimators (`estimator=`), declared once for both.
const ESTIMATORS: &[&str] = &["sleep_hist", "jsleep"];
const ESTIMATOR_HELP: &str = "sleep_hist: -D2's 4-second load history and activation penalty; jsleep: stock 2.5.2's sleep-time boost (Libenzi), merged five days later";
const ESTIMATOR_SOURCE: &str =
    "interactivity.rs: the removed side of Libenzi's patch against 2.5.2-pre10 (LKML, 9 Jan 2002)";

crate::options! {
    /// Options of `o1-d1`.
    pub struct D1Options in PARAMS_D1 {
        /// Timer frequency.
        hz: u32 = hz("100").source("schedulers.md §2.3 (2.5.2 era: 100)");
        /// Honour `__wake_up_sync`.
        sync_wakeups: bool = sync_wakeups("off")
            .help("a sync wake-up moves the wakee to the waker's runqueue without preempting")
            .source("versions.rs: -D1 had lost __wake_up_sync");
        /// Interactivity estimator.
        estimator: String = choice("sleep_hist", ESTIMATORS)
            .help(ESTIMATOR_HELP)
            .source(ESTIMATOR_SOURCE);
        /// Busy-tick rebalance period.
        busy_rebalance_ms: u64 = int("10", 0, 100_000)
            .unit("ms")
            .help("busy-tick rebalance period (at least one tick); 0: none")
            .source("the pre-G1 expire_task ends with load_balance(rq) at every tick: \"a runqueue balance done at every timer tick\" (Libenzi, LKML 4 Jan 2002, quoting the O(1) patch; also the context of his 9 Jan patch against 2.5.2-pre10)");
        /// Idle-tick rebalance period.
        idle_rebalance_ms: u64 = int("10", 0, 100_000)
            .unit("ms")
            .help("idle-tick rebalance period; 0: only when a queue empties")
            .source("model choice [INFERRED]: every idle tick, as the S6 design and finding 6 require; the stored Jan-2002 variant's HZ/4 is 250 (§2.4)");
    }
}

crate::options! {
    /// Options of `o1-g1`.
    pub struct G1Options in PARAMS_G1 {
        /// Timer frequency.
        hz: u32 = hz("100").source("schedulers.md §2.3 (2.5.2 era: 100)");
        /// Honour `__wake_up_sync`.
        sync_wakeups: bool = sync_wakeups("off")
            .help("a sync wake-up moves the wakee to the waker's runqueue without preempting")
            .source("versions.rs: -G1 still ignored the flag");
        /// Interactivity estimator.
        estimator: String = choice("sleep_hist", ESTIMATORS)
            .help(ESTIMATOR_HELP)
            .source(ESTIMATOR_SOURCE);
        /// Fairness rebalance period.
        busy_rebalance_ms: u64 = int("250", 0, 100_000)
            .unit("ms")
            .help("fairness rebalance period; 0: none")
            .source("schedulers.md §2.2 (-G1 announcement: 250 ms)");
        /// Idle-tick rebalance period.
        idle_rebalance_ms: u64 = int("1", 0, 100_000)
            .unit("ms")
            .help("idle-tick rebalance period, at least one tick; 0: only when a queue empties")
            .source("schedulers.md §2.4 (S6: IDLE_REBALANCE_TICK = HZ/1000, at least 1 tick)");
    }
}

crate::options! {
    /// Options of `o1-2.6`.
    pub struct V26Options in PARAMS_26 {
        /// Timer frequency.
        hz: u32 = hz("1000").source("schedulers.md §2.5.1 (2.6 i386: 1000)");
        /// Honour `__wake_up_sync`.
        sync_wakeups: bool = sync_wakeups("on")
            .help("a sync wake-up moves the wakee to the waker's runqueue without preempting")
            .source("schedulers.md §2.5.6 (2.6.0)");
        /// Busy rebalance period.
        busy_rebalance_ms: u64 = int("200", 0, 100_000)
            .unit("ms")
            .help("busy rebalance period; 0: none")
            .source("schedulers.md §2.5.8 (BUSY_REBALANCE_TICK = HZ/5)");
        /// Idle rebalance period.
        idle_rebalance_ms: u64 = int("1", 0, 100_000)
            .unit("ms")
            .help("idle rebalance period, at least one tick")
            .source("schedulers.md §2.5.8 (IDLE_REBALANCE_TICK = HZ/1000, at least 1 tick)");
        /// `cache_decay_ticks` (`None`: auto).
        cache_decay_ticks: Option<u64> = int("auto", 0, 10000)
            .unit("ticks")
            .help("ticks a task stays cache-hot for busy balancing (auto: i386 smp_tune_scheduling from the machine's MHz and L2)")
            .source("schedulers.md §2.5.8");
    }
}

/// What the three versions' options set, in one shape.
struct Tunables {
    hz: u32,
    sync_wakeups: bool,
    /// 0: no busy rebalance.
    busy_rebalance_ms: u64,
    idle_rebalance_ms: u64,
    /// `None`: the version has none; `Some(None)`: auto.
    cache_decay_ticks: Option<Option<u64>>,
    /// The early versions: -D2's `sleep_hist` estimator (else stock 2.5.2's boost).
    sleep_hist: bool,
}

impl Tunables {
    fn of(v: &Version, p: &Params) -> Tunables {
        match v.gen {
            Gen::V26 => {
                let o = V26Options::from_params(p);
                Tunables {
                    hz: o.hz,
                    sync_wakeups: o.sync_wakeups,
                    busy_rebalance_ms: o.busy_rebalance_ms,
                    idle_rebalance_ms: o.idle_rebalance_ms,
                    cache_decay_ticks: Some(o.cache_decay_ticks),
                    sleep_hist: false,
                }
            }
            Gen::Early if v.balancer == balance::Balancer::G1 => {
                let o = G1Options::from_params(p);
                Tunables {
                    hz: o.hz,
                    sync_wakeups: o.sync_wakeups,
                    busy_rebalance_ms: o.busy_rebalance_ms,
                    idle_rebalance_ms: o.idle_rebalance_ms,
                    cache_decay_ticks: None,
                    sleep_hist: o.estimator == "sleep_hist",
                }
            }
            Gen::Early => {
                let o = D1Options::from_params(p);
                Tunables {
                    hz: o.hz,
                    sync_wakeups: o.sync_wakeups,
                    busy_rebalance_ms: o.busy_rebalance_ms,
                    idle_rebalance_ms: o.idle_rebalance_ms,
                    cache_decay_ticks: None,
                    sleep_hist: o.estimator == "sleep_hist",
                }
            }
        }
    }
}

fn build_d1(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    Ok(Box::new(O1::new(versions::D1, p, m)))
}

fn build_g1(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    Ok(Box::new(O1::new(versions::G1, p, m)))
}

fn build_26(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    Ok(Box::new(O1::new(versions::V26, p, m)))
}

/// i386 `smp_tune_scheduling` (schedulers.md §2.5.8): `cacheflush_time =
/// (cpu_khz/1024)·(L2_kB·1024)/350` cycles; `cache_decay_ticks = cacheflush_time/cpu_khz
/// + 1` ms, converted to ticks at `hz` (= ms at HZ=1000).
pub fn cache_decay_ticks(cpu_mhz: u64, l2_bytes: u64, hz: u64) -> u64 {
    let cpu_khz = cpu_mhz * 1000;
    if cpu_khz == 0 {
        return 0;
    }
    let l2_kb = l2_bytes / 1024;
    let cacheflush_time = (cpu_khz / 1024) * (l2_kb * 1024) / 350;
    (cacheflush_time / cpu_khz + 1) * hz / 1000
}

/// Per-task scheduler state (the O(1) fields of `task_struct`).
#[derive(Clone, Debug)]
pub struct TaskSched {
    /// Dynamic priority (`p->prio`), 140 for idle tasks.
    pub prio: i32,
    /// `120 + nice` (`p->static_prio`).
    pub static_prio: i32,
    /// Index into the runqueue's `arrays` when queued (`p->array`).
    pub array: Option<usize>,
    /// Ticks left (`p->time_slice`).
    pub time_slice: u64,
    /// Still in the slice inherited at fork.
    pub first_time_slice: bool,
    /// Early: jiffies when the task last left the runqueue (`p->sleep_jtime`).
    pub sleep_jtime: u64,
    /// -D2: jiffy the task last left the runqueue (`p->sleep_timestamp`).
    pub sleep_timestamp: u64,
    /// -D2: jiffy of its last estimator update on joining it (`p->run_timestamp`).
    pub run_timestamp: u64,
    /// -D2: jiffies slept in each of the last four seconds (`p->sleep_hist`).
    pub sleep_hist: [u64; est::SLEEP_HIST_SIZE],
    /// -D2: the current second's entry (`p->sleep_idx`).
    pub sleep_idx: usize,
    /// 2.6: `p->sleep_avg` in ns.
    pub sleep_avg: u64,
    /// 2.6: `p->interactive_credit`.
    pub interactive_credit: i64,
    /// 2.6: `p->timestamp` (ns): last activation or switch.
    pub timestamp: u64,
    /// 2.6: `p->activated` (−1, 0, 1, 2).
    pub activated: i8,
    /// Moved by the balancer since it last ran.
    pub pulled: bool,
    /// SCHED_FIFO or SCHED_RR.
    pub rt: bool,
    /// SCHED_FIFO.
    pub fifo: bool,
}

impl TaskSched {
    /// A fresh task at `static_prio`.
    pub fn new(static_prio: i32, rt: bool) -> TaskSched {
        TaskSched {
            prio: static_prio,
            static_prio,
            array: None,
            time_slice: 1,
            first_time_slice: false,
            sleep_jtime: 0,
            sleep_timestamp: 0,
            run_timestamp: 0,
            sleep_hist: [0; est::SLEEP_HIST_SIZE],
            sleep_idx: 0,
            sleep_avg: 0,
            interactive_credit: 0,
            timestamp: 0,
            activated: 0,
            pulled: false,
            rt,
            fifo: false,
        }
    }
}

/// One CPU's runqueue.
#[derive(Clone, Debug)]
pub struct Rq {
    /// `rq->lock`.
    pub lock: LockId,
    /// Context switches made by this runqueue's `schedule()`.
    pub nr_switches: u64,
    /// Jiffy of the first expiry since the last array switch (0: none).
    pub expired_timestamp: u64,
    /// Index of the active array in `arrays`; the other one is expired.
    pub active: usize,
    /// The two arrays.
    pub arrays: [PrioArray; 2],
    /// What this CPU's balancer pays to read every other CPU's `nr_running`: the sum of
    /// their line transfers, fixed for a machine (computed once, not at every balance).
    pub remote_reads_ns: u64,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    balance_calls: u64,
    /// Runqueue lengths the balancers read (balance.rs).
    balance_rqs_scanned: u64,
    idle_balance_calls: u64,
    busy_balance_calls: u64,
    pulled_idle: u64,
    pulled_busy: u64,
    array_switches: u64,
    sync_migrations: u64,
    expired_inserts: u64,
    interactive_reinserts: u64,
    /// Wake-ups whose task beat the running (non-idle) task of its CPU.
    wakeup_preemptions: u64,
    /// Switch-ins of a task that last ran on another CPU, moved here by the balancer.
    unaffine_by_balance: u64,
    /// The same, moved by anything else (a sync wake-up, an affinity change).
    unaffine_other: u64,
}

/// The O(1) scheduler, one version.
pub struct O1 {
    v: Version,
    c: Consts,
    sync_wakeups: bool,
    /// Busy rebalance period in ticks (0: none).
    busy_period: u64,
    /// Idle-tick rebalance period in ticks (0: none).
    idle_period: u64,
    /// `cache_decay_ticks` where the version has it.
    cache_decay_ticks: Option<u64>,
    /// -D2's `sleep_hist` estimator (early versions only; `Tunables::of` gives 2.6 none).
    sleep_hist: bool,
    options: BTreeMap<String, String>,
    /// The tick that just ran found its task expired but not yet switched out: the early
    /// versions returned from `scheduler_tick` before the busy rebalance.
    tick_skips_balance: bool,
    rqs: Vec<Rq>,
    /// Per CPU, `rq->nr_running`: tasks queued in both arrays. Other CPUs' balancers read
    /// it without the lock (`find_busiest_queue`) and re-check it under
    /// `double_lock_balance`. Kept out of [`Rq`], with what lets an idle balance find the
    /// longest queue past 64 CPUs without a host walk over every CPU (nr_running.rs).
    nr_running: NrRunning,
    ts: Vec<TaskSched>,
    stats: Stats,
}

fn ms_to_ticks(ms: u64, hz: u64) -> u64 {
    if ms == 0 {
        0
    } else {
        (ms * hz / 1000).max(1)
    }
}

impl O1 {
    /// Build version `v` with options `p` on machine `m`.
    pub fn new(v: Version, p: &Params, m: &Machine) -> O1 {
        let t = Tunables::of(&v, p);
        let c = Consts::new(&v, t.hz);
        let mut options = p.to_map();
        let busy_period = ms_to_ticks(t.busy_rebalance_ms, c.hz);
        let idle_period = ms_to_ticks(t.idle_rebalance_ms, c.hz);
        let cache_decay_ticks = t.cache_decay_ticks.map(|given| {
            let costs = m.costs();
            let ticks =
                given.unwrap_or_else(|| cache_decay_ticks(costs.cpu_mhz, costs.l2_bytes, c.hz));
            options.insert("cache_decay_ticks".into(), ticks.to_string());
            ticks
        });
        O1 {
            v,
            c,
            sync_wakeups: t.sync_wakeups,
            busy_period,
            idle_period,
            cache_decay_ticks,
            sleep_hist: t.sleep_hist,
            options,
            tick_skips_balance: false,
            rqs: Vec::new(),
            nr_running: NrRunning::default(),
            ts: Vec::new(),
            stats: Stats::default(),
        }
    }

    fn prio_of(&self, ctx: &SchedCtx<'_>, t: TaskId) -> i32 {
        if ctx.task(t).is_idle {
            MAX_PRIO as i32
        } else {
            self.ts[t as usize].prio
        }
    }

    /// `TASK_PREEMPTS_CURR(p, rq)` (the early code also: `rq->curr == rq->idle`).
    fn preempts(&self, ctx: &SchedCtx<'_>, p: TaskId, cpu: CpuId) -> bool {
        self.ts[p as usize].prio < self.prio_of(ctx, ctx.curr(cpu))
    }

    fn task_interactive(&self, p: TaskId) -> bool {
        let ts = &self.ts[p as usize];
        match self.v.gen {
            Gen::Early if self.sleep_hist => est::hist_task_interactive(ts),
            Gen::Early => est::early_task_interactive(ts, &self.c),
            Gen::V26 => est::task_interactive(ts),
        }
    }

    fn enqueue(&mut self, p: TaskId, cpu: CpuId, arr: usize) {
        let prio = self.ts[p as usize].prio;
        self.rqs[cpu].arrays[arr].enqueue(p, prio);
        self.ts[p as usize].array = Some(arr);
    }

    fn dequeue(&mut self, p: TaskId, cpu: CpuId) -> usize {
        let ts = &mut self.ts[p as usize];
        let arr = ts.array.take().expect("dequeue of an unqueued task");
        self.rqs[cpu].arrays[arr].dequeue(p, ts.prio);
        arr
    }

    /// `__activate_task`: enqueue in the active array, no estimator update.
    fn activate_plain(&mut self, now: Time, p: TaskId, cpu: CpuId) {
        let act = self.rqs[cpu].active;
        self.enqueue(p, cpu, act);
        self.nr_running.add(cpu, now, 1);
    }

    /// `activate_task`: the estimator's wake-up update, then enqueue in active.
    fn activate_task(&mut self, ctx: &SchedCtx<'_>, p: TaskId, cpu: CpuId) {
        let ts = &mut self.ts[p as usize];
        match self.v.gen {
            Gen::Early if self.sleep_hist => est::hist_activate(ts, ctx.jiffies(), self.c.hz),
            Gen::Early => est::early_wake_bonus(ts, &self.c, ctx.jiffies()),
            Gen::V26 => {
                let now = ctx.now();
                est::recalc_task_prio(ts, &self.c, now);
                if ts.activated == 0 {
                    ts.activated = if ctx.is_irq() { 2 } else { 1 };
                }
                ts.timestamp = now;
            }
        }
        self.activate_plain(ctx.now(), p, cpu);
    }

    /// `deactivate_task`.
    fn deactivate_task(&mut self, ctx: &SchedCtx<'_>, p: TaskId, cpu: CpuId) {
        self.nr_running.add(cpu, ctx.now(), -1);
        self.dequeue(p, cpu);
        let ts = &mut self.ts[p as usize];
        ts.sleep_jtime = ctx.jiffies();
        if self.sleep_hist {
            est::hist_deactivate(ts, ctx.jiffies(), self.c.hz);
        }
    }

    /// `EXPIRED_STARVING(rq)`, written as the kernel's `≥ … + 1`.
    #[allow(clippy::int_plus_one)]
    fn expired_starving(&self, cpu: CpuId, jiffies: u64) -> bool {
        let rq = &self.rqs[cpu];
        self.c.starvation_limit != 0
            && rq.expired_timestamp != 0
            && jiffies - rq.expired_timestamp
                >= self.c.starvation_limit * self.nr_running.latest(cpu) as u64 + 1
    }

    /// The slice part of `scheduler_tick` for the running `p` (rq locked).
    fn slice_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        let jiffies = ctx.jiffies();
        let pi = p as usize;
        if self.ts[pi].fifo {
            return;
        }
        let act = self.rqs[cpu].active;
        let exp = 1 - act;
        if self.ts[pi].rt && self.v.gen == Gen::V26 {
            // SCHED_RR: refill and round-robin within the active list.
            self.ts[pi].time_slice = self.ts[pi].time_slice.saturating_sub(1);
            if self.ts[pi].time_slice == 0 {
                self.ts[pi].time_slice = self.c.task_timeslice(self.ts[pi].static_prio);
                self.ts[pi].first_time_slice = false;
                ctx.resched_cpu(cpu);
                self.dequeue(p, cpu);
                self.enqueue(p, cpu, act);
            }
            return;
        }
        self.ts[pi].time_slice = self.ts[pi].time_slice.saturating_sub(1);
        if self.ts[pi].time_slice == 0 {
            ctx.resched_cpu(cpu);
            self.dequeue(p, cpu);
            let ts = &mut self.ts[pi];
            ts.first_time_slice = false;
            match self.v.gen {
                Gen::Early => {
                    // Stock 2.5.2 `expire_task`: the new slice from the priority before
                    // the one-level penalty.
                    ts.time_slice = if ts.rt {
                        self.c.rt_prio_to_timeslice(ts.prio)
                    } else {
                        self.c.prio_to_timeslice(ts.prio)
                    };
                    // -D2 keeps the priority its estimator set; stock 2.5.2 costs a level.
                    if !ts.rt && !self.sleep_hist {
                        ts.prio = (ts.prio + 1).min(MAX_PRIO as i32 - 1);
                    }
                }
                Gen::V26 => {
                    ts.prio = est::effective_prio(ts, &self.c);
                    ts.time_slice = self.c.task_timeslice(ts.static_prio);
                    if self.rqs[cpu].expired_timestamp == 0 {
                        self.rqs[cpu].expired_timestamp = jiffies;
                    }
                }
            }
            if !self.task_interactive(p) || self.expired_starving(cpu, jiffies) {
                if self.v.gen == Gen::Early && self.rqs[cpu].expired_timestamp == 0 {
                    self.rqs[cpu].expired_timestamp = jiffies;
                }
                self.enqueue(p, cpu, exp);
                self.stats.expired_inserts += 1;
            } else {
                self.enqueue(p, cpu, act);
                self.stats.interactive_reinserts += 1;
            }
        } else if self.sleep_hist && !self.ts[pi].rt {
            // -D2: "deactivate + activate the task so that the load estimator gets
            // updated properly" — its penalty follows its load, and it goes to the tail
            // of its list.
            self.deactivate_task(ctx, p, cpu);
            self.activate_task(ctx, p, cpu);
        } else if self.v.gen == Gen::V26 && self.task_interactive(p) {
            // 2.6.0: round-robin interactive tasks every TIMESLICE_GRANULARITY.
            let ts = &self.ts[pi];
            let gran = est::timeslice_granularity(ts, &self.c, ctx.nr_cpus());
            // C unsigned arithmetic: wraps if a handed-back slice exceeds the base slice.
            let used = (self.c.task_timeslice(ts.static_prio) as u32)
                .wrapping_sub(ts.time_slice as u32) as u64;
            if gran > 0
                && used.is_multiple_of(gran)
                && ts.time_slice >= gran
                && ts.array == Some(act)
            {
                ctx.resched_cpu(cpu);
                self.dequeue(p, cpu);
                self.ts[pi].prio = est::effective_prio(&self.ts[pi], &self.c);
                self.enqueue(p, cpu, act);
            }
        }
    }

    /// `wake_up_forked_process`: the new task `p` of `parent` joins `cpu`'s queue (locked).
    fn enqueue_forked(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, parent: TaskId) {
        match self.v.gen {
            Gen::Early => {
                // Stock 2.5.2 wake_up_forked_process: the child starts MAX_USER_PRIO/10
                // levels worse than the parent. -D2 wakes it with the parent's priority
                // (its first activation, in the jiffy of the fork, skips the estimator).
                let ts = &mut self.ts[p as usize];
                if !ts.rt && !self.sleep_hist {
                    ts.prio = (ts.prio + 40 / 10).min(MAX_PRIO as i32 - 1);
                }
                self.activate_task(ctx, p, cpu);
            }
            Gen::V26 => {
                let c = self.c;
                let penal = |ts: &TaskSched, pct: u64| {
                    c.jiffies_to_ns(
                        est::current_bonus(ts, &c) * pct / 100 * c.max_sleep_avg
                            / versions::MAX_BONUS,
                    )
                };
                let par = &mut self.ts[parent as usize];
                par.sleep_avg = penal(par, 100);
                let (par_prio, par_array) = (par.prio, par.array);
                let child = &mut self.ts[p as usize];
                child.sleep_avg = penal(child, 95);
                child.interactive_credit = 0;
                child.prio = est::effective_prio(child, &c);
                match par_array {
                    Some(arr) if ctx.task(parent).processor == cpu => {
                        // The child takes the parent's place, just before it.
                        child.prio = par_prio;
                        child.array = Some(arr);
                        self.rqs[cpu].arrays[arr].enqueue_before(p, par_prio, parent);
                        self.nr_running.add(cpu, ctx.now(), 1);
                    }
                    _ => self.activate_plain(ctx.now(), p, cpu),
                }
            }
        }
    }

    fn counter_map(&self) -> BTreeMap<String, f64> {
        let s = &self.stats;
        let mut m = BTreeMap::from([
            ("balance_calls".to_string(), s.balance_calls as f64),
            (
                "balance_rqs_scanned".to_string(),
                s.balance_rqs_scanned as f64,
            ),
            (
                "idle_balance_calls".to_string(),
                s.idle_balance_calls as f64,
            ),
            (
                "busy_balance_calls".to_string(),
                s.busy_balance_calls as f64,
            ),
            ("pulled_by_idle".to_string(), s.pulled_idle as f64),
            ("pulled_by_busy".to_string(), s.pulled_busy as f64),
            ("array_switches".to_string(), s.array_switches as f64),
            ("sync_migrations".to_string(), s.sync_migrations as f64),
            ("expired_inserts".to_string(), s.expired_inserts as f64),
            (
                "interactive_reinserts".to_string(),
                s.interactive_reinserts as f64,
            ),
            (
                "unaffine_by_balance".to_string(),
                s.unaffine_by_balance as f64,
            ),
            ("unaffine_other".to_string(), s.unaffine_other as f64),
            (
                "wakeup_preemptions".to_string(),
                s.wakeup_preemptions as f64,
            ),
        ]);
        if let Some(d) = self.cache_decay_ticks {
            m.insert("cache_decay_ticks".into(), d as f64);
        }
        m
    }
}

impl SchedClass for O1 {
    fn name(&self) -> &'static str {
        self.v.name
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hz(&self) -> u32 {
        self.c.hz as u32
    }

    /// -D1 and -G1 were posted against 2.5.2-pre and 2.4.17 (schedulers.md S7); the
    /// tables that ran them used the 2.4.17 port. `o1-2.6` is 2.6.0.
    fn release(&self) -> crate::kernel::release::Release {
        use crate::kernel::release::Release;
        if self.v.name == "o1-2.6" {
            Release::V2_6_0
        } else {
            Release::V2_4(17)
        }
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = ctx.nr_cpus();
        self.rqs = (0..n)
            .map(|_| Rq {
                lock: ctx.new_lock("rq->lock", None),
                nr_switches: 0,
                expired_timestamp: 0,
                active: 0,
                arrays: [PrioArray::default(), PrioArray::default()],
                remote_reads_ns: 0,
            })
            .collect();
        self.nr_running = NrRunning::new(n);
        for this in 0..n {
            self.rqs[this].remote_reads_ns = (0..n)
                .filter(|&i| i != this)
                .map(|i| ctx.machine().line_transfer_ns(i, this))
                .sum();
        }
    }

    fn rq_lockp(&self, cpu: CpuId) -> LockId {
        self.rqs[cpu].lock
    }

    fn task_on_rq(&self, _ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        self.ts[p as usize].array.is_some()
    }

    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.ts.len() < n {
            self.ts.resize(n, TaskSched::new(MAX_PRIO as i32, false));
        }
        let t = ctx.task(p);
        if t.is_idle {
            self.ts[p as usize] = TaskSched::new(MAX_PRIO as i32, false);
            return;
        }
        let rt = t.policy != SchedPolicy::Other;
        let mut ts = TaskSched::new(120 + t.nice, rt);
        ts.fifo = t.policy == SchedPolicy::Fifo;
        if rt {
            ts.prio = 99 - t.rt_priority as i32;
        }
        let now = ctx.now();
        let jiffies = ctx.jiffies();
        ts.timestamp = now;
        ts.sleep_jtime = jiffies;
        // -D2 do_fork: "p->sleep_timestamp = p->run_timestamp = jiffies", an empty ring.
        ts.sleep_timestamp = jiffies;
        ts.run_timestamp = jiffies;
        match parent {
            None => {
                ts.time_slice = match self.v.gen {
                    Gen::Early => self.c.prio_to_timeslice(ts.prio),
                    Gen::V26 => self.c.task_timeslice(ts.static_prio),
                };
            }
            Some(pp) => {
                // The task_struct copy, then the timeslice split (2.6.0 copy_process;
                // the early do_fork had the same split [INFERRED, §2.4]).
                let par = self.ts[pp as usize].clone();
                ts.prio = par.prio;
                ts.sleep_avg = par.sleep_avg;
                ts.interactive_credit = par.interactive_credit;
                ts.time_slice = (par.time_slice + 1) >> 1;
                ts.first_time_slice = true;
                let left = par.time_slice >> 1;
                self.ts[pp as usize].time_slice = left;
                if left == 0 {
                    // "current->time_slice = 1; scheduler_tick()": expire the parent.
                    self.ts[pp as usize].time_slice = 1;
                    let cpu = ctx.cpu();
                    if self.ts[pp as usize].array.is_some() && ctx.task(pp).processor == cpu {
                        let l = self.rqs[cpu].lock;
                        ctx.lock(l);
                        self.slice_tick(ctx, cpu, pp);
                        ctx.unlock(l);
                    }
                }
            }
        }
        self.ts[p as usize] = ts;
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId {
        let this = ctx.cpu();
        if wake.fork {
            // wake_up_forked_process: the child starts on the parent's CPU.
            return this;
        }
        let cpu = ctx.task(p).processor;
        let sync = wake.sync && self.sync_wakeups;
        if sync && ctx.task(p).on_cpu.is_none() && cpu != this && ctx.allowed(p, this) {
            // Fast migration to the waker's runqueue (§2.5.6).
            self.stats.sync_migrations += 1;
            return this;
        }
        cpu
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        if wake.fork {
            let parent = ctx.curr(cpu);
            self.enqueue_forked(ctx, cpu, p, parent);
            return;
        }
        if ctx.task(p).state == TaskState::Uninterruptible {
            self.ts[p as usize].activated = -1;
        }
        if wake.sync && self.sync_wakeups && cpu == ctx.cpu() {
            // The waker is about to sleep: no preemption check. 2.6.0 also skips the
            // sleep_avg update (`__activate_task`); the early estimator's boost is kept.
            match self.v.gen {
                Gen::Early => self.activate_task(ctx, p, cpu),
                Gen::V26 => self.activate_plain(ctx.now(), p, cpu),
            }
        } else {
            self.activate_task(ctx, p, cpu);
        }
    }

    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        self.deactivate_task(ctx, p, cpu);
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        if wake.fork {
            if self.v.gen == Gen::V26 {
                // do_fork: "child runs first".
                ctx.resched_cpu(cpu);
            }
            return;
        }
        let sync_here = wake.sync && self.sync_wakeups && cpu == ctx.cpu();
        if !sync_here && self.preempts(ctx, p, cpu) {
            if !ctx.task(ctx.curr(cpu)).is_idle {
                self.stats.wakeup_preemptions += 1;
            }
            ctx.resched_cpu(cpu);
        }
    }

    fn balance(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, why: Balance) {
        let l = self.rqs[cpu].lock;
        match why {
            Balance::NewIdle => {
                if self.nr_running.latest(cpu) == 0 {
                    self.load_balance(ctx, cpu, true);
                }
            }
            Balance::Tick { idle: true } => {
                let j = ctx.jiffies();
                if self.idle_period > 0 && j.is_multiple_of(self.idle_period) {
                    ctx.lock(l);
                    self.load_balance(ctx, cpu, true);
                    ctx.unlock(l);
                }
            }
            Balance::Tick { idle: false } => {
                let j = ctx.jiffies();
                let skip = std::mem::take(&mut self.tick_skips_balance);
                if !skip && self.busy_period > 0 && j.is_multiple_of(self.busy_period) {
                    ctx.lock(l);
                    self.load_balance(ctx, cpu, false);
                    ctx.unlock(l);
                }
            }
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        let idle = ctx.idle_task(cpu);
        let next = if self.nr_running.latest(cpu) == 0 {
            self.rqs[cpu].expired_timestamp = 0;
            None
        } else {
            let rq = &mut self.rqs[cpu];
            if rq.arrays[rq.active].nr_active == 0 {
                // The array switch.
                rq.active = 1 - rq.active;
                rq.expired_timestamp = 0;
                self.stats.array_switches += 1;
            }
            let rq = &self.rqs[cpu];
            let act = rq.active;
            let idx = rq.arrays[act].find_first_bit();
            let next = rq.arrays[act].head(idx).expect("nr_running > 0");
            ctx.read(Shared::Task(next));
            if self.v.gen == Gen::V26 && self.ts[next as usize].activated > 0 {
                // On-runqueue credit for woken tasks (§2.5.3); next stays chosen.
                let now = ctx.now();
                let ts = &self.ts[next as usize];
                let mut delta = now.saturating_sub(ts.timestamp);
                if ts.activated == 1 {
                    delta = delta * (30 * 128 / 100) / 128;
                }
                let arr = self.dequeue(next, cpu);
                let ts = &mut self.ts[next as usize];
                let at = ts.timestamp + delta;
                est::recalc_task_prio(ts, &self.c, at);
                self.enqueue(next, cpu, arr);
            }
            Some(next)
        };
        if next.unwrap_or(idle) != prev {
            self.rqs[cpu].nr_switches += 1;
        }
        next
    }

    fn put_prev_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, prev: TaskId, _next: TaskId) {
        if self.v.gen == Gen::V26 {
            let now = ctx.now();
            let ts = &mut self.ts[prev as usize];
            est::charge_run_time(ts, &self.c, now);
            ts.timestamp = now;
        }
    }

    fn set_next_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, next: TaskId, prev: TaskId) {
        // Molnar's count of CPU-unaffine reschedules, split by what moved the task.
        let t = ctx.task(next);
        if next != prev && !t.is_idle && t.last_ran.is_some_and(|l| l != cpu) {
            if self.ts[next as usize].pulled {
                self.stats.unaffine_by_balance += 1;
            } else {
                self.stats.unaffine_other += 1;
            }
        }
        self.ts[next as usize].pulled = false;
        if self.v.gen == Gen::V26 {
            let ts = &mut self.ts[next as usize];
            ts.activated = 0;
            if next != prev {
                ts.timestamp = ctx.now();
            }
        }
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        if ctx.task(curr).is_idle {
            return;
        }
        let l = self.rqs[cpu].lock;
        if self.ts[curr as usize].array != Some(self.rqs[cpu].active) {
            // Expired but not yet switched out.
            ctx.resched_cpu(cpu);
            self.tick_skips_balance = self.v.gen == Gen::Early;
        } else {
            ctx.lock(l);
            self.slice_tick(ctx, cpu, curr);
            ctx.unlock(l);
        }
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        if self.ts[p as usize].array.is_some() {
            let arr = self.dequeue(p, cpu);
            let ts = &mut self.ts[p as usize];
            match self.v.gen {
                Gen::Early => {
                    // Stock 2.5.2: one level worse until the slice expires, same array.
                    if !ts.rt && ts.prio < MAX_PRIO as i32 - 1 {
                        ts.prio += 1;
                    }
                    self.enqueue(p, cpu, arr);
                }
                Gen::V26 => {
                    let to = if ts.rt { arr } else { 1 - self.rqs[cpu].active };
                    self.enqueue(p, cpu, to);
                }
            }
        }
        ctx.unlock(l);
        ctx.resched_cpu(cpu);
    }

    fn task_dead(&mut self, ctx: &mut SchedCtx<'_>, parent: TaskId, child: TaskId) {
        if self.v.gen != Gen::V26 {
            // [NOT FOUND] for 2.5.2: no exit-time hand-back is modelled.
            return;
        }
        let cpu = ctx.task(parent).processor;
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        let ch = self.ts[child as usize].clone();
        let par = &mut self.ts[parent as usize];
        if ch.first_time_slice {
            par.time_slice = (par.time_slice + ch.time_slice).min(self.c.max_timeslice);
        }
        if ch.sleep_avg < par.sleep_avg {
            par.sleep_avg = par.sleep_avg / 4 * 3 + ch.sleep_avg / 4;
        }
        ctx.unlock(l);
    }

    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let cpu = ctx.task(p).processor;
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        let new_static = 120 + ctx.task(p).nice;
        if self.ts[p as usize].rt {
            self.ts[p as usize].static_prio = new_static;
        } else {
            let queued = self.ts[p as usize].array.is_some();
            let arr = if queued {
                Some(self.dequeue(p, cpu))
            } else {
                None
            };
            let ts = &mut self.ts[p as usize];
            let delta = new_static - ts.prio;
            ts.static_prio = new_static;
            ts.prio = new_static;
            if let Some(arr) = arr {
                self.enqueue(p, cpu, arr);
                if delta < 0 || (delta > 0 && ctx.curr(cpu) == p) {
                    ctx.resched_cpu(cpu);
                }
            }
        }
        ctx.unlock(l);
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        self.counter_map()
    }

    fn check(&self, k: &crate::kernel::Kernel) -> Result<(), String> {
        let name = self.v.name;
        let mut seen = vec![None; self.ts.len()];
        for (c, rq) in self.rqs.iter().enumerate() {
            let mut n = 0;
            for (a, arr) in rq.arrays.iter().enumerate() {
                arr.check()
                    .map_err(|e| format!("{name}: cpu {c} array {a}: {e}"))?;
                n += arr.nr_active;
                for (prio, t) in arr.iter() {
                    if let Some(o) = seen[t as usize].replace(c) {
                        return Err(format!(
                            "{name}: task {t} queued on cpu {o} and again on cpu {c}"
                        ));
                    }
                    let ts = &self.ts[t as usize];
                    if ts.array != Some(a) || ts.prio as usize != prio {
                        return Err(format!(
                            "{name}: task {t} in list {prio} of array {a} on cpu {c} but says array {:?} prio {}",
                            ts.array, ts.prio
                        ));
                    }
                    let task = k.task(t);
                    if task.processor != c {
                        return Err(format!(
                            "{name}: pid {} queued on cpu {c} has processor {}",
                            task.pid, task.processor
                        ));
                    }
                    if task.state != TaskState::Running && task.on_cpu != Some(c) {
                        return Err(format!(
                            "{name}: queued pid {} is {:?} and not on cpu {c}",
                            task.pid, task.state
                        ));
                    }
                }
            }
            if n != self.nr_running.latest(c) {
                return Err(format!(
                    "{name}: cpu {c} nr_running {} but {n} queued",
                    self.nr_running.latest(c)
                ));
            }
        }
        for (id, t) in k.tasks.iter().enumerate() {
            if t.is_idle {
                continue;
            }
            let queued = seen.get(id).copied().flatten().is_some();
            let must = t.state == TaskState::Running || t.on_cpu.is_some();
            if must && !queued {
                return Err(format!(
                    "{name}: pid {} is {:?} on {:?} but on no runqueue",
                    t.pid, t.state, t.on_cpu
                ));
            }
            if queued != self.ts.get(id).is_some_and(|s| s.array.is_some()) {
                return Err(format!("{name}: pid {} array flag disagrees", t.pid));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
