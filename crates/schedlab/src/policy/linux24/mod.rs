//! `linux-2.4`: the 2.4 "goodness" scheduler (2.4.17 by default), schedulers.md §1.
//!
//! One global run queue (`runqueue_head`) holds every runnable task, the running ones
//! included, under one spin lock, `runqueue_lock`. `schedule()` walks the whole queue
//! with the lock held and takes the task of greatest `goodness()`; when the best is 0
//! (every schedulable SCHED_OTHER task has spent its counter) every task in the system
//! gets `counter = counter/2 + NICE_TO_TICKS(nice)` and the walk is repeated. A woken
//! task goes to the head of the queue and `reschedule_idle()` kicks its last CPU if idle,
//! else the longest-idle CPU, else preempts the CPU where it beats the current task by
//! the most.
//!
//! # Theory: `goodness(p, this_cpu, this_mm)` (§1.6)
//!
//! | task                                   | goodness                                      |
//! |----------------------------------------|-----------------------------------------------|
//! | yielded (`SCHED_YIELD` bit)            | −1                                            |
//! | SCHED_OTHER, `counter == 0`            | 0 (triggers recalculation if it is the best)  |
//! | SCHED_OTHER, `counter > 0`             | `counter + 20 − nice` <br> + PROC_CHANGE_PENALTY if `processor == this_cpu` (i386: 15) <br> + 1 if `mm == this_mm` or `mm == NULL` |
//! | SCHED_FIFO / SCHED_RR                  | 1000 + `rt_priority`                          |
//! | the idle task (never on the queue)     | −1000 (the starting value of the walk)        |
//!
//! `NICE_TO_TICKS(n) = TICK_SCALE(20 − n) + 1` (HZ = 100: nice 0 → 6 ticks, −20 → 11,
//! +19 → 1). Ties go to the task nearest the head of the queue.
//!
//! # Costs
//!
//! The simulated kernel pays for the walk the 2002 hardware paid: every pass examines
//! every queued task in list order (`ctx.read(Walk(..))`: a few dozen cycles of
//! `goodness()` and the read of the task's scheduler line from wherever it is — with the
//! coherence model off, one L2 miss, benchmarks.md §6.3), with `runqueue_lock` held; a
//! recalculation examines every task in the system, outside the lock. The *simulator*
//! finds the same task through `index.rs` in O(log n); only the charge walks the queue.
//!
//! # Versions (§1.14, option `version=`)
//!
//! | | 2.4.7 | 2.4.14 | 2.4.16 | 2.4.17 (default) | 2.4.20 |
//! |---|---|---|---|---|---|
//! | prev in the walk | starts it (wins ties) | starts it (wins ties) | at its list position | same | same |
//! | `reschedule_idle` preempts if `preemption_goodness` | > 1 | > 0 | > 0 | > 0 | > 0 |
//! | `sys_sched_yield` moves the task to the tail | no | no | yes | yes | yes |
//! | wake-up adds at | head | head | head | head | **tail** |
//! | tick sets `need_resched` for SCHED_FIFO | yes | yes | yes | yes | **no** |
//! | `__schedule_tail` re-places prev if | `state == RUNNING` | `state == RUNNING` | `state == RUNNING` | on the run queue | on the run queue |
//! | HT sibling-idle preference | no | no | no | yes | yes |
//!
//! 2.4.7 and 2.4.14 are read from the vanilla side of the MQ patches against them (LKML,
//! 8 Aug and 14 Nov 2001; see `mq`): their `schedule()` jumps to `still_running`, which
//! sets `c = goodness(prev)` and `next = prev` before the walk, and the walk skips tasks
//! with `has_cpu`. So prev keeps its CPU on a tie (§1.7 step 5 notes 2.4.0 did the same).
//! Their `reschedule_idle` starts from `max_prio = 1` (2.4.7) or 0 (2.4.14), and their
//! `sys_sched_yield` takes no lock and moves nothing.
//!
//! The HT preference needs `smp_num_siblings == 2`; the modelled PIII machines have no
//! SMT siblings, so it never applies here. `setscheduler` is not reachable from the
//! workloads and is not modelled.
//!
//! # Invariants (checked by [`SchedClass::check`])
//!
//! * A task is on the run queue ⇔ it is runnable (state running) or is the current task
//!   of a CPU that has not yet called `schedule()` after leaving the running state.
//! * A queued task that is not on a CPU is in the index under its current key; a task on
//!   a CPU is not (only its own CPU's walk may pick it, as `prev`, weighed directly — so
//!   ticks, forks, yields, `nice` and `exec` of a running task never touch the index).
//! * The index's pick equals the literal scan's pick (checked on every `schedule()` in
//!   debug builds for queues up to 256 tasks, and by a property test).
//!
//! # Not modelled
//!
//! * `tasklist_lock` (the recalculation's read lock): readers never exclude each other and
//!   the model's writers (fork, exit) take no modelled lock. Two CPUs cannot both
//!   recalculate for the same exhaustion, because a hook runs atomically: the second sees
//!   the new counters.

mod index;
mod runlist;
#[cfg(test)]
mod tests;

use crate::kernel::sched::Shared;
use crate::kernel::sched::{Curr, Walk};
use std::collections::BTreeMap;

use crate::kernel::task::{Task, TaskId, TaskState};
use crate::machine::{CpuId, LineId, LockId, Machine};
use crate::spec::Params;

#[cfg(any(test, debug_assertions))]
use super::sched24::can_schedule;
use super::sched24::{Core24, GoodnessRules, Target, Worth, MIN_GOODNESS};
use super::{PolicyInfo, Published, SchedClass, SchedCtx, Wake};
use index::{GoodnessIndex, IndexKey};
use runlist::RunList;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "linux-2.4",
    about: "2.4 goodness scheduler: one global run queue under runqueue_lock, O(n) schedule()",
    params: PARAMS,
    build,
};

crate::options! {
    /// Options of `linux-2.4`.
    pub struct Options in PARAMS {
        /// Which 2.4 to follow.
        version: Version = choice("2.4.17", &["2.4.7", "2.4.14", "2.4.16", "2.4.17", "2.4.18", "2.4.20"])
            .help("kernel version whose behaviour to follow")
            .source("schedulers.md §1.14 (2.4.17: the 2002 benchmarks' kernel)");
        /// PROC_CHANGE_PENALTY.
        pcp: i32 = int("15", 0, 1000)
            .unit("goodness points")
            .help("PROC_CHANGE_PENALTY: goodness bonus for staying on the last CPU")
            .source("schedulers.md §1.4 (i386: 15; alpha/ia64/ppc: 20)");
        /// Timer frequency.
        hz: u32 = hz("100").source("schedulers.md §1.1 (i386: 100; alpha/ia64: 1024)");
        /// Honour `__wake_up_sync`.
        sync_wakeups: bool = sync_wakeups("on")
            .help("a sync wake-up skips reschedule_idle() (off: placed as any wake-up)")
            .source("schedulers.md §1.10 (2.4 honoured the flag)");
    }
}

/// Kernel version (§1.14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// 2.4.7: `still_running` (prev wins ties), placement margin `> 1`, yield only marks.
    V247,
    /// 2.4.14: `still_running`, margin `> 0`, yield only marks.
    V2414,
    /// 2.4.16.
    V2416,
    /// 2.4.17.
    V2417,
    /// 2.4.18: 2.4.17's scheduler (schedulers.md: "for a 2.4.18 profile use the 2.4.17
    /// column"); its limits differ (`crate::kernel::release`).
    V2418,
    /// 2.4.20.
    V2420,
}

impl crate::spec::FromParam for Version {
    fn from_param(_key: &str, raw: &str) -> Self {
        match raw {
            "2.4.7" => Version::V247,
            "2.4.14" => Version::V2414,
            "2.4.16" => Version::V2416,
            "2.4.18" => Version::V2418,
            "2.4.20" => Version::V2420,
            _ => Version::V2417,
        }
    }
}

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(Linux24::new(
        o.version,
        o.pcp,
        o.hz,
        o.sync_wakeups,
        p.to_map(),
    )))
}

/// Per-task scheduler state the 2.4 `task_struct` kept.
#[derive(Clone, Copy, Debug, Default)]
struct TaskSched {
    /// Position on the run queue (`run_list`), `None` when not queued.
    pos: Option<i64>,
    /// On a CPU, as `schedule()` committed it (2.4 `cpus_runnable != ~0`; released at
    /// the switch, which in the model is the same event).
    has_cpu: bool,
    /// What the task is indexed under (`Some` ⇔ queued and not on a CPU).
    ikey: Option<IndexKey>,
}

/// Outcomes of `reschedule_idle()` (§1.9).
#[derive(Default)]
struct Stats {
    schedule_calls: u64,
    tasks_examined: u64,
    recalculations: u64,
    recalc_tasks: u64,
    ri_calls: u64,
    ri_fast: u64,
    ri_idle: u64,
    ri_preempt: u64,
    ri_none: u64,
    sync_skips: u64,
    yields: u64,
    yields_noop: u64,
    tail_replacements: u64,
}

/// The 2.4 scheduler.
pub struct Linux24 {
    version: Version,
    /// Counters, yield bits and the goodness arithmetic.
    core: Core24,
    sync_wakeups: bool,
    options: BTreeMap<String, String>,
    runqueue_lock: LockId,
    /// The line of `runqueue_head` (its `next` and `prev` links).
    runqueue_head: LineId,
    /// `runqueue_head`, in list order. Head insertion gives a task a position below every
    /// other, tail insertion one above (determinism: positions are unique).
    rq: RunList,
    /// `nr_running` as `sys_sched_yield` reads it, without the lock.
    nr_running_seen: Published<usize>,
    head_pos: i64,
    tail_pos: i64,
    ts: Vec<TaskSched>,
    index: GoodnessIndex,
    /// Per CPU, the `active_mm` left loaded by the last real task (lazy TLB: the idle
    /// task borrows it), the `this_mm` of a scan by the idle task.
    active_mm: Vec<u32>,
    stats: Stats,
}

impl Linux24 {
    fn new(
        version: Version,
        pcp: i32,
        hz: u32,
        sync_wakeups: bool,
        options: BTreeMap<String, String>,
    ) -> Self {
        let rules = GoodnessRules {
            pcp,
            kthread_mm_bonus: true,
        };
        Linux24 {
            version,
            core: Core24::new(hz, rules),
            sync_wakeups,
            options,
            runqueue_lock: 0,
            runqueue_head: 0,
            rq: RunList::default(),
            nr_running_seen: Published::new(0),
            head_pos: 0,
            tail_pos: 0,
            ts: Vec::new(),
            index: GoodnessIndex::default(),
            active_mm: Vec::new(),
            stats: Stats::default(),
        }
    }

    fn goodness(&self, ctx: &SchedCtx<'_>, p: TaskId, cpu: CpuId, mm: u32) -> i64 {
        self.core.goodness(ctx, p, cpu, mm) as i64
    }

    /// `nr_running`.
    fn nr_running(&self) -> usize {
        self.rq.len()
    }

    fn on_rq(&self, p: TaskId) -> bool {
        self.ts[p as usize].pos.is_some()
    }

    /// The index key of queued task `p` from its current state.
    fn key_of(&self, t: &Task, p: TaskId) -> IndexKey {
        let s = &self.ts[p as usize];
        let worth = self.core.worth(t, p);
        let (key, eligible) = match worth {
            // A kernel thread's mm bonus is earned at every CPU: part of the key.
            Worth::Other(w) => (w as i64 + (t.mm == 0) as i64, true),
            other => (other.value() as i64, false),
        };
        IndexKey {
            key,
            pos: s.pos.expect("indexing a task that is not queued"),
            cpu: t.processor,
            mm: t.mm,
            eligible,
        }
    }

    /// Make `p`'s index entry match its state: indexed under its current key when queued
    /// and not on a CPU, absent otherwise.
    fn reindex(&mut self, ctx: &SchedCtx<'_>, p: TaskId) {
        let want = if self.on_rq(p) && !self.ts[p as usize].has_cpu {
            Some(self.key_of(ctx.task(p), p))
        } else {
            None
        };
        let s = &mut self.ts[p as usize];
        if s.ikey == want {
            return;
        }
        if let Some(old) = std::mem::replace(&mut s.ikey, want) {
            self.index.remove(p, &old);
        }
        if let Some(k) = want {
            self.index.insert(p, &k);
        }
    }

    /// Queue `p` first or `last` on the list, or move it there if queued: the list links
    /// and a position below or above every other.
    fn place(&mut self, ctx: &SchedCtx<'_>, p: TaskId, last: bool) {
        let pos = if last {
            self.tail_pos += 1;
            self.tail_pos
        } else {
            self.head_pos -= 1;
            self.head_pos
        };
        match self.ts[p as usize].pos.replace(pos) {
            Some(_) => self.rq.unlink(p),
            None => self.nr_running_seen.set(ctx.now(), self.rq.len() + 1),
        }
        self.rq.link(p, last);
        self.reindex(ctx, p);
    }

    /// `add_to_runqueue`: head (2.4.0–2.4.19) or tail (2.4.20), `nr_running++`.
    fn add_to_runqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        debug_assert!(ctx.holds(self.runqueue_lock));
        debug_assert!(!self.on_rq(p));
        let last = self.version >= Version::V2420;
        if last {
            self.link_at_tail(ctx);
        } else {
            // list_add: head->next, and the old first's `prev` (not in its scheduler line).
            ctx.write(Shared::Line(self.runqueue_head));
        }
        self.place(ctx, p, last);
    }

    /// list_add_tail's writes: the old last task's `next` (in its scheduler line) and
    /// head->prev.
    fn link_at_tail(&mut self, ctx: &mut SchedCtx<'_>) {
        if let Some(last) = self.rq.last() {
            ctx.write(Shared::Task(last));
        }
        ctx.write(Shared::Line(self.runqueue_head));
    }

    /// `move_last_runqueue`.
    fn move_last_runqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        debug_assert!(ctx.holds(self.runqueue_lock));
        self.unlink(ctx, p);
        self.link_at_tail(ctx);
        self.place(ctx, p, true);
    }

    /// list_del's write of the predecessor's `next` (its scheduler line, or the head's).
    fn unlink(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        assert!(self.on_rq(p), "unlink of a task not queued");
        match self.rq.before(p) {
            Some(before) => ctx.write(Shared::Task(before)),
            None => ctx.write(Shared::Line(self.runqueue_head)),
        }
    }

    /// `del_from_runqueue`: `nr_running--`, `run_list.next = NULL`.
    fn del_from_runqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        debug_assert!(ctx.holds(self.runqueue_lock));
        self.unlink(ctx, p);
        let s = &mut self.ts[p as usize];
        s.pos
            .take()
            .expect("del_from_runqueue of a task not queued");
        if let Some(k) = s.ikey.take() {
            self.index.remove(p, &k);
        }
        self.rq.unlink(p);
        self.nr_running_seen.set(ctx.now(), self.rq.len());
    }

    /// The walk of §1.7 step 5 as the kernel did it: head to tail, strictly greater wins.
    /// Returns (goodness, task); `(-1000, None)` is the idle task. The reference the
    /// index is checked against (debug builds and tests).
    #[cfg(any(test, debug_assertions))]
    fn scan_literal(
        &self,
        ctx: &SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
        this_mm: u32,
    ) -> (i64, Option<TaskId>) {
        let mut c = MIN_GOODNESS as i64;
        let mut next = None;
        // Before 2.4.16 (`still_running`): a queued prev allowed here is the starting
        // value, and the walk skips it (`has_cpu`).
        let still_running = self.version < Version::V2416
            && self.ts[prev as usize].pos.is_some()
            && ctx.allowed(prev, cpu);
        if still_running {
            c = self.goodness(ctx, prev, cpu, this_mm);
            next = Some(prev);
        }
        for p in self.rq.iter() {
            if still_running && p == prev {
                continue;
            }
            if can_schedule(ctx, p, cpu) {
                let w = self.goodness(ctx, p, cpu, this_mm);
                if w > c {
                    c = w;
                    next = Some(p);
                }
            }
        }
        (c, next)
    }

    /// The walk's result, found through the index (the tasks not on a CPU) and `prev`,
    /// the one running task this CPU's walk may pick.
    fn scan_indexed(
        &self,
        ctx: &SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
        this_mm: u32,
    ) -> (i64, Option<TaskId>) {
        let mut best = self.index.pick(
            cpu,
            this_mm,
            |p| ctx.allowed(p, cpu),
            |p| self.goodness(ctx, p, cpu, this_mm),
        );
        if let Some(pos) = self.ts[prev as usize].pos {
            if ctx.allowed(prev, cpu) {
                let g = self.goodness(ctx, prev, cpu, this_mm);
                // 2.4.16 on: prev competes at its list position. Before: `still_running`
                // starts the walk from prev's goodness, so prev wins every tie.
                let wins_ties = self.version < Version::V2416;
                if best.is_none_or(|(bg, bpos, _)| g > bg || (g == bg && (wins_ties || pos < bpos)))
                {
                    best = Some((g, pos, prev));
                }
            }
        }
        match best {
            Some((g, _, p)) => (g, Some(p)),
            None => (MIN_GOODNESS as i64, None),
        }
    }

    /// Counter recalculation (§1.7 step 6), without `runqueue_lock`.
    fn recalculate_counters(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = self.core.recalculate(ctx);
        self.stats.recalculations += 1;
        self.stats.recalc_tasks += n;
    }

    /// Re-index every queued task (after a recalculation changed all counters).
    fn rebuild_index(&mut self, ctx: &SchedCtx<'_>) {
        let queued: Vec<TaskId> = self.rq.iter().collect();
        for p in queued {
            self.reindex(ctx, p);
        }
    }

    /// `reschedule_idle(p)` (§1.9), with `runqueue_lock` held: the 2.4 rule decides
    /// ([`Core24::reschedule_idle`]); one queue serves every CPU, so acting on it is
    /// telling the chosen CPU to reschedule.
    fn reschedule_idle(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        debug_assert!(ctx.holds(self.runqueue_lock));
        self.stats.ri_calls += 1;
        let margin = i32::from(self.version == Version::V247);
        match self.core.reschedule_idle(ctx, p, margin) {
            Target::LastCpuIdle(cpu) => {
                self.stats.ri_fast += 1;
                // send_now_idle: the idle task's need_resched, IPI unless local or already
                // flagged. The idle task seen, not whatever that CPU runs by now.
                ctx.resched_idle(cpu);
            }
            Target::Idle(cpu) => {
                self.stats.ri_idle += 1;
                ctx.resched_idle(cpu);
            }
            Target::Preempt(cpu) => {
                self.stats.ri_preempt += 1;
                // The preemption IPI goes out even when need_resched was already set.
                let was_set = ctx.task(ctx.curr(cpu)).need_resched;
                ctx.resched_cpu(cpu);
                if was_set && cpu != ctx.cpu() {
                    ctx.smp_send_reschedule(cpu);
                }
            }
            Target::None => self.stats.ri_none += 1,
        }
    }
}

impl SchedClass for Linux24 {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hz(&self) -> u32 {
        self.core.hz
    }

    fn release(&self) -> crate::kernel::release::Release {
        crate::kernel::release::Release::V2_4(match self.version {
            Version::V247 => 7,
            Version::V2414 => 14,
            Version::V2416 => 16,
            Version::V2417 => 17,
            Version::V2418 => 18,
            Version::V2420 => 20,
        })
    }

    fn uses_idle_index(&self) -> bool {
        true
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        self.runqueue_lock = ctx.new_lock("runqueue_lock", None);
        self.runqueue_head = ctx.new_line("runqueue_head", None);
        self.index = GoodnessIndex::new(ctx.nr_cpus());
        self.active_mm = vec![0; ctx.nr_cpus()];
    }

    fn rq_lockp(&self, _cpu: CpuId) -> LockId {
        // One run queue serves every CPU.
        self.runqueue_lock
    }

    fn task_on_rq(&self, _ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        self.on_rq(p)
    }

    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.ts.len() < n {
            self.ts.resize(n, TaskSched::default());
        }
        self.core.task_fork(ctx, p, parent);
        if let Some(pp) = parent {
            self.reindex(ctx, pp);
        }
        self.ts[p as usize] = TaskSched::default();
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, _wake: Wake) -> CpuId {
        // The one queue: `processor` changes only when a CPU picks the task.
        ctx.task(p).processor
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        self.add_to_runqueue(ctx, p);
    }

    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId) {
        self.del_from_runqueue(ctx, p);
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, wake: Wake) {
        if Core24::sync_skips_placement(ctx, p, wake.sync, self.sync_wakeups) {
            // __wake_up_sync: the waker is about to sleep; this CPU will pick p up.
            self.stats.sync_skips += 1;
        } else {
            self.reschedule_idle(ctx, p);
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        self.stats.schedule_calls += 1;
        let prev_idle = ctx.task(prev).is_idle;
        if !prev_idle {
            self.active_mm[cpu] = ctx.task(prev).mm;
        }
        let this_mm = self.active_mm[cpu];
        // §1.7 step 2: an exhausted SCHED_RR task gets a new slice at the tail.
        if self.core.rr_refill(ctx, prev) && self.on_rq(prev) {
            self.move_last_runqueue(ctx, prev);
        }
        // Step 5, `repeat_schedule`.
        loop {
            // The walk reads every queued task's line (and the head's), wherever it is.
            ctx.read(Shared::Line(self.runqueue_head));
            ctx.read(Walk(self.rq.iter()));
            self.stats.tasks_examined += self.nr_running() as u64;
            let (c, next) = self.scan_indexed(ctx, cpu, prev, this_mm);
            #[cfg(debug_assertions)]
            if self.rq.len() <= 256 {
                let lit = self.scan_literal(ctx, cpu, prev, this_mm);
                assert_eq!(lit, (c, next), "linux-2.4: index and scan disagree");
            }
            if c == 0 {
                // Step 6: recalculation, without runqueue_lock.
                ctx.unlock(self.runqueue_lock);
                self.recalculate_counters(ctx);
                ctx.lock(self.runqueue_lock);
                self.rebuild_index(ctx);
                continue;
            }
            return next;
        }
    }

    fn put_prev_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, prev: TaskId, next: TaskId) {
        // Step 7: prev leaves the CPU (it is switched out in this same event) and joins the
        // index if still queued. Step 8: re-picked, no __schedule_tail will run.
        if next != prev {
            self.ts[prev as usize].has_cpu = false;
            self.reindex(ctx, prev);
        } else {
            self.core.take_yield(prev);
        }
    }

    fn set_next_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, next: TaskId, prev: TaskId) {
        if next != prev {
            ctx.set_task_cpu(next, cpu);
            self.ts[next as usize].has_cpu = true;
            self.reindex(ctx, next);
        }
    }

    fn finish_task_switch(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, prev: TaskId) {
        // __schedule_tail (§1.8).
        if ctx.task(prev).is_idle {
            return;
        }
        let yielded = self.core.take_yield(prev);
        if yielded {
            self.reindex(ctx, prev);
        }
        let runnable = if self.version <= Version::V2416 {
            ctx.task(prev).state == TaskState::Running
        } else {
            self.on_rq(prev)
        };
        if !runnable || yielded {
            return;
        }
        ctx.lock(self.runqueue_lock);
        if ctx.task(prev).state == TaskState::Running
            && self.on_rq(prev)
            && ctx.task(prev).on_cpu.is_none()
        {
            self.stats.tail_replacements += 1;
            self.reschedule_idle(ctx, prev);
        }
        ctx.unlock(self.runqueue_lock);
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        // update_process_times (§1.11), lock-free as 2.4 had it.
        let fifo_exempt = self.version >= Version::V2420;
        if self.core.update_process_times(ctx, cpu, curr, fifo_exempt) {
            self.reindex(ctx, curr);
        }
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        // §1.13: nr_pending = nr_running − CPUs running a real task (this one included),
        // all read without the lock: each other CPU's `curr` line, as of this moment.
        let busy = if ctx.idle_indexed() {
            // The reads are free there: the count is the index's.
            ctx.busy_cpus_seen()
        } else {
            (0..ctx.nr_cpus())
                .filter(|&c| ctx.read(Curr(c)) != ctx.idle_task(c))
                .count()
        };
        let nr_pending = self.nr_running_seen.at(ctx.now()) as i64 - busy as i64;
        if nr_pending == 0 {
            self.stats.yields_noop += 1;
            return;
        }
        self.stats.yields += 1;
        self.core.sched_yield(ctx, cpu, p);
        if self.version < Version::V2416 {
            // Before 2.4.16 sys_sched_yield only marks the task (no move to the tail).
            return;
        }
        ctx.lock(self.runqueue_lock);
        if self.on_rq(p) {
            self.move_last_runqueue(ctx, p);
        }
        ctx.unlock(self.runqueue_lock);
    }

    fn task_dead(&mut self, ctx: &mut SchedCtx<'_>, parent: TaskId, child: TaskId) {
        self.core.release_task(parent, child);
        self.reindex(ctx, parent);
    }

    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        self.core.renice(ctx, p);
        self.reindex(ctx, p);
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        let s = &self.stats;
        let calls = s.schedule_calls.max(1) as f64;
        BTreeMap::from(
            [
                ("schedule_calls", s.schedule_calls as f64),
                ("tasks_examined", s.tasks_examined as f64),
                ("tasks_examined_mean", s.tasks_examined as f64 / calls),
                ("recalculations", s.recalculations as f64),
                ("recalc_tasks", s.recalc_tasks as f64),
                ("reschedule_idle", s.ri_calls as f64),
                ("reschedule_idle_fast", s.ri_fast as f64),
                ("reschedule_idle_idle", s.ri_idle as f64),
                ("reschedule_idle_preempt", s.ri_preempt as f64),
                ("reschedule_idle_none", s.ri_none as f64),
                ("sync_wakeups_skipped", s.sync_skips as f64),
                ("tail_replacements", s.tail_replacements as f64),
                ("yields", s.yields as f64),
                ("yields_noop", s.yields_noop as f64),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        )
    }

    fn check(&self, k: &crate::kernel::Kernel) -> Result<(), String> {
        self.rq.check()?;
        let mut before = i64::MIN;
        for p in self.rq.iter() {
            let s = &self.ts[p as usize];
            match s.pos {
                Some(pos) if pos > before => before = pos,
                _ => {
                    return Err(format!(
                        "linux-2.4: task {p} after position {before} thinks {:?}",
                        s.pos
                    ))
                }
            }
            let t = k.task(p);
            if t.is_idle || (t.state != TaskState::Running && t.on_cpu.is_none()) {
                return Err(format!(
                    "linux-2.4: queued pid {} is {:?} on {:?}",
                    t.pid, t.state, t.on_cpu
                ));
            }
            if s.has_cpu != t.on_cpu.is_some() {
                return Err(format!("linux-2.4: pid {} has_cpu {}", t.pid, s.has_cpu));
            }
            let want = (!s.has_cpu).then(|| self.key_of(t, p));
            if s.ikey != want {
                return Err(format!(
                    "linux-2.4: pid {} indexed as {:?}, expected {want:?}",
                    t.pid, s.ikey
                ));
            }
        }
        for (id, t) in k.tasks.iter().enumerate() {
            if !t.is_idle
                && t.state == TaskState::Running
                && self.ts.get(id).is_none_or(|s| s.pos.is_none())
            {
                return Err(format!("linux-2.4: runnable pid {} not queued", t.pid));
            }
        }
        let off_cpu = self
            .rq
            .iter()
            .filter(|&p| !self.ts[p as usize].has_cpu)
            .count();
        if self.index.len() != off_cpu {
            return Err(format!(
                "linux-2.4: {} indexed, {off_cpu} queued off a CPU",
                self.index.len(),
            ));
        }
        self.index
            .check(|p| self.ts.get(p as usize).and_then(|s| s.ikey))
    }
}
