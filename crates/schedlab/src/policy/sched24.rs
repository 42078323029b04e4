//! The 2.4 scheduling core: what `linux-2.4`, `mq`, `mq-pool` and `hamq` share, written
//! once (schedulers.md §1, with MQ's variants of §3.2).
//!
//! [`Core24`] holds every task's `counter` and SCHED_YIELD bit and implements the 2.4
//! arithmetic on them: `goodness()` and its MQ variants, `NICE_TO_TICKS`, the global
//! counter recalculation, the timeslice split at fork, the hand-back at `release_task`,
//! the tick's `counter--`, the SCHED_RR refill and the yield bit. The policies keep their
//! own run queues and placement (2.4's one list, MQ's published per-CPU values, haMQ's
//! local queues) and ask the core for every number.
//!
//! # Theory: `goodness(p, this_cpu, this_mm)` (§1.6)
//!
//! | task                                   | goodness                                      |
//! |----------------------------------------|-----------------------------------------------|
//! | yielded (`SCHED_YIELD` bit)            | −1                                            |
//! | SCHED_FIFO / SCHED_RR                  | 1000 + `rt_priority`                          |
//! | SCHED_OTHER, `counter == 0`            | 0 (triggers recalculation if it is the best)  |
//! | SCHED_OTHER, `counter > 0`             | `counter + 20 − nice` <br> + PROC_CHANGE_PENALTY if `processor == this_cpu` <br> + 1 if `mm == this_mm` (or `mm == NULL`, 2.4 only) |
//! | the idle task (never on a queue)       | −1000 (`MIN_GOODNESS`, the starting value of a walk) |
//!
//! MQ splits it (§3.2): `na_goodness` (no affinity bonus at all — what a queue publishes
//! for stealing), `local_goodness` (the mm bonus only; every local task has the same
//! `processor`, so the PROC_CHANGE_PENALTY is added to the best afterwards) and the full
//! value for `preemption_goodness`. Its deviations from 2.4 are [`GoodnessRules`] options:
//! `kthread_mm_bonus` (2.4 gives the +1 to kernel threads, MQ does not). Two further
//! differences of the MQ source cannot change a value and are not options: it tests the
//! real-time case before the yield bit (the bit is only ever set for SCHED_OTHER, §1.13),
//! and adds the bonuses only to a positive base (`counter + 20 − nice ≥ 2` whenever
//! `counter > 0`).
//!
//! `NICE_TO_TICKS(n) = TICK_SCALE(20 − n) + 1` (HZ = 100: nice 0 → 6 ticks, −20 → 11,
//! +19 → 1).
//!
//! # The recalculation, applied lazily
//!
//! 2.4's recalculation (§1.7 step 6) gives every task in the task list, sleeping ones
//! too, `counter = counter/2 + NICE_TO_TICKS(nice)`. The modelled kernel pays for the
//! walk in simulated time ([`SchedCtx::write`] of [`Shared::TaskList`]); the simulator
//! does not need to touch every counter to get the same numbers. A recalculation bumps an epoch;
//! a task's counter is brought up to date when it is next read or written, by applying
//! the recalculations it missed. That is exact: the step maps a non-negative counter
//! monotonically onto its fixed points `2t − 1` or `2t` (`t` = NICE_TO_TICKS), so after
//! a few steps more recalculations change nothing and the catch-up stops there. A nice
//! change ([`Core24::renice`]) first catches the task up at its old nice, as the eager
//! walk would have used it. The walk's charge is lazy too: it prices only the lines
//! held in some cache, the rest as one memory stream of `nr_threads` less those, so a
//! recalculation costs the simulator nothing per task.
//!
//! Invariant: the core has an entry for every task the class was told of (`task_fork`);
//! counters are never negative; a task's entry is up to date at `epoch` once caught up
//! (the idle tasks, which no recalculation walks, never fall behind).

use crate::kernel::sched::Curr;
use crate::kernel::sched::Shared;
use crate::kernel::task::{SchedPolicy, Task, TaskId};
use crate::machine::CpuId;

use super::SchedCtx;

/// `MIN_GOODNESS`: "nothing" (the idle task; an empty stealable slot; an idle CPU's
/// published value).
pub const MIN_GOODNESS: i32 = -1000;

/// `RT_GOODNESS_MIN`: every real-time task is worth at least this.
pub const RT_GOODNESS_MIN: i32 = 1000;

/// `TICK_SCALE(x)` for a given HZ (§1.3).
pub fn tick_scale(x: i32, hz: u32) -> i32 {
    match hz {
        0..200 => x >> 2,
        200..400 => x >> 1,
        400..800 => x,
        800..1600 => x << 1,
        _ => x << 2,
    }
}

/// `NICE_TO_TICKS(nice) = TICK_SCALE(20 − nice) + 1` (§1.3): 6 ticks for nice 0 at HZ=100.
pub fn nice_to_ticks(nice: i32, hz: u32) -> i32 {
    tick_scale(20 - nice, hz) + 1
}

/// `DEF_COUNTER = 10·HZ/100` (§1.2): init's first timeslice.
pub fn def_counter(hz: u32) -> i32 {
    (10 * hz / 100) as i32
}

/// `MAX_COUNTER = 20·HZ/100` (§1.2): the cap when a parent inherits a child's ticks.
pub fn max_counter(hz: u32) -> i32 {
    (20 * hz / 100) as i32
}

/// How `goodness()` weighs affinity: 2.4's rules, or MQ's (§3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoodnessRules {
    /// PROC_CHANGE_PENALTY, in goodness points (i386: 15; §1.4).
    pub pcp: i32,
    /// The +1 of `mm == this_mm` also goes to kernel threads (`mm == NULL`): 2.4 yes,
    /// MQ no (§3.2).
    pub kthread_mm_bonus: bool,
}

/// A task's 2.4 scheduling state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    /// `counter`: ticks left, as of recalculation `epoch`.
    counter: i32,
    /// The SCHED_YIELD bit of `policy`.
    yielding: bool,
    /// The recalculations `counter` has had ([`Core24`]'s count when it was last brought
    /// up to date); [`EXEMPT`] for a task no recalculation walks.
    epoch: u32,
    /// NICE_TO_TICKS of the task's nice value since it was last brought up to date: what
    /// each recalculation since adds.
    ticks: i32,
}

/// The epoch of a task no recalculation walks (an idle task, not in the task list).
const EXEMPT: u32 = u32::MAX;

impl Default for Slice {
    fn default() -> Slice {
        Slice {
            counter: 0,
            yielding: false,
            epoch: EXEMPT,
            ticks: 0,
        }
    }
}

impl Slice {
    /// The counter after the recalculations up to `epoch` (§1.7 step 6, as many times as
    /// were missed). Stops at the fixed point, which every later step keeps.
    #[inline]
    fn counter_at(&self, epoch: u32) -> i32 {
        if self.epoch == epoch || self.epoch == EXEMPT {
            return self.counter;
        }
        let mut c = self.counter;
        for _ in self.epoch..epoch {
            let next = (c >> 1) + self.ticks;
            if next == c {
                break;
            }
            c = next;
        }
        c
    }
}

/// What a task's goodness is made of, before any bonus (the "key" a scan compares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worth {
    /// Yielded: −1 whatever else.
    Yielded,
    /// Real-time: `1000 + rt_priority`.
    RealTime(i32),
    /// SCHED_OTHER with its counter spent: 0.
    Spent,
    /// SCHED_OTHER with ticks left: `counter + 20 − nice`, bonuses to come.
    Other(i32),
}

impl Worth {
    /// The value without affinity bonuses (MQ's `na_goodness`).
    pub fn value(self) -> i32 {
        match self {
            Worth::Yielded => -1,
            Worth::RealTime(v) | Worth::Other(v) => v,
            Worth::Spent => 0,
        }
    }
}

/// Where 2.4's `reschedule_idle()` sends a newly runnable task (§1.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The task's last CPU is idle (the fast path).
    LastCpuIdle(CpuId),
    /// The CPU idle for the longest time.
    Idle(CpuId),
    /// No CPU is idle: the CPU whose current task the task beats by the most.
    Preempt(CpuId),
    /// The task beats no current task: it waits in its queue.
    None,
}

/// The 2.4 core: per-task counters and the arithmetic on them.
#[derive(Clone, Debug)]
pub struct Core24 {
    /// Timer frequency (the counter is in ticks).
    pub hz: u32,
    /// Affinity weights.
    pub rules: GoodnessRules,
    ts: Vec<Slice>,
    /// Recalculations so far.
    epoch: u32,
}

impl Core24 {
    /// A core for a kernel at `hz` weighing affinity by `rules`.
    pub fn new(hz: u32, rules: GoodnessRules) -> Core24 {
        Core24 {
            hz,
            rules,
            ts: Vec::new(),
            epoch: 0,
        }
    }

    /// `counter` of `p`.
    #[inline]
    pub fn counter(&self, p: TaskId) -> i32 {
        self.ts[p as usize].counter_at(self.epoch)
    }

    /// `p`'s slice, its counter brought up to date first (before a write).
    #[inline]
    fn caught_up(&mut self, p: TaskId) -> &mut Slice {
        let epoch = self.epoch;
        let s = &mut self.ts[p as usize];
        if s.epoch != EXEMPT {
            s.counter = s.counter_at(epoch);
            s.epoch = epoch;
        }
        s
    }

    /// Set `p`'s counter (test beds building a state by hand).
    pub fn set_counter(&mut self, p: TaskId, counter: i32) {
        self.caught_up(p).counter = counter;
    }

    /// `set_user_nice` (§1.3): `p`'s nice value changed. The recalculations it missed
    /// were made at its old nice; the next ones add the new NICE_TO_TICKS.
    pub fn renice(&mut self, ctx: &SchedCtx<'_>, p: TaskId) {
        let ticks = nice_to_ticks(ctx.task(p).nice, self.hz);
        self.caught_up(p).ticks = ticks;
    }

    /// Set or clear `p`'s SCHED_YIELD bit (test beds building a state by hand).
    pub fn set_yielding(&mut self, p: TaskId, yielding: bool) {
        self.ts[p as usize].yielding = yielding;
    }

    /// True when `p` carries the SCHED_YIELD bit.
    #[inline]
    pub fn yielding(&self, p: TaskId) -> bool {
        self.ts[p as usize].yielding
    }

    /// Clear `p`'s SCHED_YIELD bit, returning whether it was set (§1.8: "remembering
    /// whether it was set").
    pub fn take_yield(&mut self, p: TaskId) -> bool {
        std::mem::take(&mut self.ts[p as usize].yielding)
    }

    /// What `p`'s goodness is made of.
    pub fn worth(&self, t: &Task, p: TaskId) -> Worth {
        let s = &self.ts[p as usize];
        if s.yielding {
            return Worth::Yielded;
        }
        if t.policy != SchedPolicy::Other {
            return Worth::RealTime(RT_GOODNESS_MIN + t.rt_priority as i32);
        }
        match s.counter_at(self.epoch) {
            0 => Worth::Spent,
            c => Worth::Other(c + 20 - t.nice),
        }
    }

    /// The +1 for sharing the address space `this_mm` (no TLB flush).
    fn mm_bonus(&self, t: &Task, this_mm: u32) -> i32 {
        i32::from(t.mm == this_mm || (self.rules.kthread_mm_bonus && t.mm == 0))
    }

    /// `goodness(p, cpu, this_mm)` (§1.6), the full value.
    pub fn goodness(&self, ctx: &SchedCtx<'_>, p: TaskId, cpu: CpuId, this_mm: u32) -> i32 {
        let t = ctx.task(p);
        match self.worth(t, p) {
            Worth::Other(w) => {
                let pcp = if t.processor == cpu {
                    self.rules.pcp
                } else {
                    0
                };
                w + pcp + self.mm_bonus(t, this_mm)
            }
            other => other.value(),
        }
    }

    /// MQ's `na_goodness` (§3.2): no affinity bonus.
    pub fn na_goodness(&self, ctx: &SchedCtx<'_>, p: TaskId) -> i32 {
        self.worth(ctx.task(p), p).value()
    }

    /// MQ's `local_goodness` (§3.2): the mm bonus but not the CPU one.
    pub fn local_goodness(&self, ctx: &SchedCtx<'_>, p: TaskId, this_mm: u32) -> i32 {
        let t = ctx.task(p);
        match self.worth(t, p) {
            Worth::Other(w) => w + self.mm_bonus(t, this_mm),
            other => other.value(),
        }
    }

    /// `preemption_goodness(curr, p, cpu)` (§1.6): positive when `p` should replace
    /// `curr` on `cpu`; both weighed with `curr->active_mm`, `mm`. `curr` earns the
    /// PROC_CHANGE_PENALTY on its own CPU, so a task from elsewhere must beat it by more
    /// than that.
    pub fn preemption_goodness(
        &self,
        ctx: &SchedCtx<'_>,
        curr: TaskId,
        p: TaskId,
        cpu: CpuId,
        mm: u32,
    ) -> i32 {
        self.goodness(ctx, p, cpu, mm) - self.goodness(ctx, curr, cpu, mm)
    }

    /// 2.4's `reschedule_idle(p)` rule (§1.9): `p`'s last CPU if it is idle (and `p` may
    /// run there); else the allowed CPU idle for the longest time (smallest
    /// `last_schedule`, lower CPU on ties); else, examined while no idle CPU has been seen,
    /// the busy CPU where `preemption_goodness` is largest and positive. Reads each
    /// allowed CPU's `curr` line and examines each current task weighed. The caller acts on the answer (2.4: tell that
    /// CPU to reschedule). MQ (§3.4) and haMQ place by rules of their own: MQ ranks
    /// published per-CPU values and `spin_trylock`s the target; haMQ never preempts
    /// another CPU.
    ///
    /// A victim's current task must be beaten by more than `margin`: 1 in 2.4.0 and 2.4.7
    /// (`max_prio = 1`, §1.14), 0 by 2.4.14.
    pub fn reschedule_idle(&self, ctx: &mut SchedCtx<'_>, p: TaskId, margin: i32) -> Target {
        let last = ctx.task(p).processor;
        // `cpu_curr(best_cpu)`: the last CPU's schedule_data line, read as the walk's are.
        if can_schedule(ctx, p, last) && ctx.read(Curr(last)) == ctx.idle_task(last) {
            return Target::LastCpuIdle(last);
        }
        let mut oldest_idle: Option<(crate::engine::Time, CpuId)> = None;
        let mut victim: Option<CpuId> = None;
        let mut max_prio = margin;
        for cpu in 0..ctx.nr_cpus() {
            if !can_schedule(ctx, p, cpu) {
                continue;
            }
            // cpu_curr(cpu) and last_schedule(cpu): that CPU's schedule_data line.
            let tsk = ctx.read(Curr(cpu));
            if tsk == ctx.idle_task(cpu) {
                if ctx.idle_indexed() {
                    // The rest of the walk only reads (free there) and examines no task:
                    // its answer is the index's.
                    let best = ctx.oldest_idle_seen(|c| can_schedule(ctx, p, c));
                    return Target::Idle(best.expect("this CPU was seen idle"));
                }
                let ls = ctx.last_schedule(cpu);
                if oldest_idle.is_none_or(|(o, _)| ls < o) {
                    oldest_idle = Some((ls, cpu));
                }
            } else if oldest_idle.is_none() {
                let mm = ctx.task(tsk).mm;
                ctx.read(Shared::Task(tsk));
                let prio = self.preemption_goodness(ctx, tsk, p, cpu, mm);
                if prio > max_prio {
                    max_prio = prio;
                    victim = Some(cpu);
                }
            }
        }
        match (oldest_idle, victim) {
            (Some((_, cpu)), _) => Target::Idle(cpu),
            (None, Some(cpu)) => Target::Preempt(cpu),
            (None, None) => Target::None,
        }
    }

    /// `do_fork` (§1.12) and boot: allocate `p`'s entry; a child takes the rounded-up half
    /// of its parent's counter, the parent keeps the rest and is rescheduled if that is
    /// nothing. Boot tasks (`parent` `None`: the idle tasks and init) start with
    /// `DEF_COUNTER`, init_task's.
    pub fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.ts.len() < n {
            self.ts.resize(n, Slice::default());
        }
        let counter = match parent {
            Some(pp) => {
                let s = self.caught_up(pp);
                let pc = s.counter;
                s.counter = pc >> 1;
                if pc >> 1 == 0 {
                    // The parent is the current task of the forking CPU.
                    if let Some(c) = ctx.task(pp).on_cpu {
                        ctx.resched_cpu(c);
                    }
                }
                (pc + 1) >> 1
            }
            None => def_counter(self.hz),
        };
        let t = ctx.task(p);
        self.ts[p as usize] = Slice {
            counter,
            yielding: false,
            epoch: if t.is_idle { EXEMPT } else { self.epoch },
            ticks: nice_to_ticks(t.nice, self.hz),
        };
    }

    /// Counter recalculation (§1.7 step 6): every task in the task list, sleeping ones
    /// too, gets `counter = counter/2 + NICE_TO_TICKS(nice)`, charged one `examine` each.
    /// Called without any run-queue lock. Returns the number of tasks walked.
    ///
    /// The counters follow lazily (module doc), and so does what the walk leaves in the
    /// caches ([`SchedCtx::write`] of [`Shared::TaskList`]: each task's read then write,
    /// priced at its moment, where the machine tracks task lines).
    pub fn recalculate(&mut self, ctx: &mut SchedCtx<'_>) -> u64 {
        self.epoch += 1;
        ctx.write(Shared::TaskList);
        ctx.nr_threads()
    }

    /// `release_task` (§1.12): the reaper gets `child`'s unused ticks back, capped at
    /// `MAX_COUNTER`.
    pub fn release_task(&mut self, parent: TaskId, child: TaskId) {
        let add = self.counter(child);
        let cap = max_counter(self.hz);
        let s = self.caught_up(parent);
        s.counter = (s.counter + add).min(cap);
    }

    /// The tick's part (`update_process_times`, §1.11) for the current task `curr` of
    /// `cpu`: `counter--`; when spent, `need_resched` — except for SCHED_FIFO when
    /// `fifo_exempt` (2.4.20, §1.14). Nothing for the idle tasks. Returns true when the
    /// counter changed.
    pub fn update_process_times(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        curr: TaskId,
        fifo_exempt: bool,
    ) -> bool {
        let t = ctx.task(curr);
        if t.is_idle {
            return false;
        }
        let fifo = t.policy == SchedPolicy::Fifo;
        let s = self.caught_up(curr);
        s.counter -= 1;
        if s.counter <= 0 {
            s.counter = 0;
            if !(fifo && fifo_exempt) {
                ctx.resched_cpu(cpu);
            }
        }
        true
    }

    /// `schedule()` step 2 (§1.7): an exhausted SCHED_RR `prev` gets a new slice. Returns
    /// true when it did (the caller moves it to the tail of its queue).
    pub fn rr_refill(&mut self, ctx: &SchedCtx<'_>, prev: TaskId) -> bool {
        let t = ctx.task(prev);
        if t.is_idle || t.policy != SchedPolicy::Rr || self.counter(prev) != 0 {
            return false;
        }
        let ticks = nice_to_ticks(t.nice, self.hz);
        self.caught_up(prev).counter = ticks;
        true
    }

    /// `sys_sched_yield` with tasks pending (§1.13): SCHED_OTHER tasks get the SCHED_YIELD
    /// bit; the caller's CPU reschedules. The caller moves `p` to the tail of its queue.
    pub fn sched_yield(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        if ctx.task(p).policy == SchedPolicy::Other {
            self.ts[p as usize].yielding = true;
        }
        ctx.resched_cpu(cpu);
    }

    /// The sync path of `try_to_wake_up` (§1.10, §3.5): a sync wake-up of a task allowed
    /// on the waker's CPU skips placement when the kernel honoured the flag.
    pub fn sync_skips_placement(ctx: &SchedCtx<'_>, p: TaskId, sync: bool, honoured: bool) -> bool {
        sync && honoured && ctx.allowed(p, ctx.cpu())
    }
}

/// `can_schedule(p, cpu)`: allowed on `cpu` and not running on another CPU.
pub fn can_schedule(ctx: &SchedCtx<'_>, p: TaskId, cpu: CpuId) -> bool {
    ctx.allowed(p, cpu) && ctx.task(p).on_cpu.is_none_or(|c| c == cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_to_ticks_matches_the_table() {
        // schedulers.md §1.3: HZ=100.
        let t: Vec<i32> = [-20, -10, -5, 0, 5, 10, 15, 19]
            .iter()
            .map(|&n| nice_to_ticks(n, 100))
            .collect();
        assert_eq!(t, [11, 8, 7, 6, 4, 3, 2, 1]);
        assert_eq!(nice_to_ticks(0, 1024), 41);
        assert_eq!(def_counter(100), 10);
        assert_eq!(max_counter(100), 20);
    }

    proptest::proptest! {
        /// The catch-up equals the recalculations one by one, fixed point or not.
        #[test]
        fn missed_recalculations_are_caught_up_exactly(
            counter in 0i32..=200,
            ticks in 1i32..=81,
            from in 0u32..1000,
            missed in 0u32..200,
        ) {
            let s = Slice { counter, yielding: false, epoch: from, ticks };
            let mut one_by_one = counter;
            for _ in 0..missed {
                one_by_one = (one_by_one >> 1) + ticks;
            }
            proptest::prop_assert_eq!(s.counter_at(from + missed), one_by_one);
            let exempt = Slice { epoch: EXEMPT, ..s };
            proptest::prop_assert_eq!(exempt.counter_at(from + missed), counter);
        }
    }

    #[test]
    fn worth_orders_the_cases_as_the_table() {
        assert_eq!(Worth::Yielded.value(), -1);
        assert_eq!(Worth::Spent.value(), 0);
        assert_eq!(Worth::RealTime(1005).value(), 1005);
        assert_eq!(Worth::Other(26).value(), 26);
    }
}
