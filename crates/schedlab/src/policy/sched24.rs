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
//! Invariant: the core has an entry for every task the class was told of (`task_fork`);
//! counters are never negative.

use crate::kernel::task::{SchedPolicy, Task, TaskId, TaskState};
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slice {
    /// `counter`: ticks left.
    counter: i32,
    /// The SCHED_YIELD bit of `policy`.
    yielding: bool,
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
    /// The tasks a recalculation walks, kept between walks (no allocation per walk).
    walk: Vec<TaskId>,
}

impl Core24 {
    /// A core for a kernel at `hz` weighing affinity by `rules`.
    pub fn new(hz: u32, rules: GoodnessRules) -> Core24 {
        Core24 {
            hz,
            rules,
            ts: Vec::new(),
            walk: Vec::new(),
        }
    }

    /// `counter` of `p`.
    #[inline]
    pub fn counter(&self, p: TaskId) -> i32 {
        self.ts[p as usize].counter
    }

    /// Set `p`'s counter (test beds building a state by hand).
    pub fn set_counter(&mut self, p: TaskId, counter: i32) {
        self.ts[p as usize].counter = counter;
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
            Worth::Yielded
        } else if t.policy != SchedPolicy::Other {
            Worth::RealTime(RT_GOODNESS_MIN + t.rt_priority as i32)
        } else if s.counter == 0 {
            Worth::Spent
        } else {
            Worth::Other(s.counter + 20 - t.nice)
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
    pub fn reschedule_idle(&self, ctx: &mut SchedCtx<'_>, p: TaskId) -> Target {
        let last = ctx.task(p).processor;
        if can_schedule(ctx, p, last) && ctx.cpu_is_idle(last) {
            return Target::LastCpuIdle(last);
        }
        let mut oldest_idle: Option<(crate::engine::Time, CpuId)> = None;
        let mut victim: Option<CpuId> = None;
        let mut max_prio = 0;
        for cpu in 0..ctx.nr_cpus() {
            if !can_schedule(ctx, p, cpu) {
                continue;
            }
            // cpu_curr(cpu) and last_schedule(cpu): that CPU's schedule_data line.
            let tsk = ctx.read_curr(cpu);
            if tsk == ctx.idle_task(cpu) {
                let ls = ctx.last_schedule(cpu);
                if oldest_idle.is_none_or(|(o, _)| ls < o) {
                    oldest_idle = Some((ls, cpu));
                }
            } else if oldest_idle.is_none() {
                let mm = ctx.task(tsk).mm;
                ctx.examine_task(tsk);
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
                let pc = self.ts[pp as usize].counter;
                self.ts[pp as usize].counter = pc >> 1;
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
        self.ts[p as usize] = Slice {
            counter,
            yielding: false,
        };
    }

    /// Counter recalculation (§1.7 step 6): every task in the system, sleeping ones too,
    /// gets `counter = counter/2 + NICE_TO_TICKS(nice)`, charged one `examine` each.
    /// Called without any run-queue lock. Returns the number of tasks walked.
    ///
    /// The counters are updated first and the walk's line traffic charged after, as one
    /// walk ([`SchedCtx::examine_and_write_tasks`]: each task's read then write, priced
    /// at its moment): charging moves only the clock, which the counters do not read.
    pub fn recalculate(&mut self, ctx: &mut SchedCtx<'_>) -> u64 {
        let mut walk = std::mem::take(&mut self.walk);
        walk.clear();
        for p in 0..self.ts.len().min(ctx.tasks_len()) {
            let t = ctx.task(p as TaskId);
            if t.is_idle || t.state == TaskState::Dead {
                continue;
            }
            let s = &mut self.ts[p];
            s.counter = (s.counter >> 1) + nice_to_ticks(t.nice, self.hz);
            walk.push(p as TaskId);
        }
        ctx.examine_and_write_tasks(&walk);
        let walked = walk.len() as u64;
        self.walk = walk;
        walked
    }

    /// `release_task` (§1.12): the reaper gets `child`'s unused ticks back, capped at
    /// `MAX_COUNTER`.
    pub fn release_task(&mut self, parent: TaskId, child: TaskId) {
        let add = self.ts[child as usize].counter;
        let s = &mut self.ts[parent as usize];
        s.counter = (s.counter + add).min(max_counter(self.hz));
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
        let s = &mut self.ts[curr as usize];
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
        if t.is_idle || t.policy != SchedPolicy::Rr || self.ts[prev as usize].counter != 0 {
            return false;
        }
        self.ts[prev as usize].counter = nice_to_ticks(t.nice, self.hz);
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

    #[test]
    fn worth_orders_the_cases_as_the_table() {
        assert_eq!(Worth::Yielded.value(), -1);
        assert_eq!(Worth::Spent.value(), 0);
        assert_eq!(Worth::RealTime(1005).value(), 1005);
        assert_eq!(Worth::Other(26).value(), 26);
    }
}
