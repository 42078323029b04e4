//! The scheduler core: the sequences every kernel shares, calling the class at the points
//! [`super::SchedClass`] documents. Fixed kernel costs (`schedule_ns`, `wakeup_ns`,
//! `tick_ns`) are charged after the class's section, so that its first lock is requested at
//! the current global time.

use crate::kernel::sched::Shared;
use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::Kernel;
use crate::machine::CpuId;

use super::{Balance, SchedClass, SchedCtx, Wake, WakeOrder};

impl Kernel {
    /// `schedule()` on `cpu` with `prev` its current task: the class's pick under the run
    /// queue's lock, then the context switch.
    pub(crate) fn schedule(&mut self, cpu: CpuId, prev: TaskId) {
        self.tasks[prev as usize].need_resched = false;
        let fixed = self.machine.costs().schedule_ns;
        let idle = self.cpus[cpu].idle;
        let (class, mut ctx) = self.sched(cpu);
        let t0 = ctx.now();
        let next = pick_next(class, &mut ctx, cpu, prev);
        // clear_tsk_need_resched(prev) after the pick (2.6.0 `switch_tasks:`, 6.12
        // `__schedule`): a resched the pick itself asked for (6.12's update_curr in
        // put_prev finding prev ineligible) is answered by this very switch; left set it
        // would preempt prev the moment it next runs, a switch no kernel makes.
        let (spent, lock_ns) = (ctx.now() - t0, ctx.lock_ns);
        ctx.charge(fixed);
        self.tasks[prev as usize].need_resched = false;
        self.stats.schedule_calls += 1;
        self.stats.schedule_ns += spent;
        self.stats.schedule_lock_ns += lock_ns;
        self.assert_unlocked(cpu, "schedule");
        let t = &self.tasks[next as usize];
        let ok = next == idle
            || (t.state == TaskState::Running
                && !t.is_idle
                && (t.on_cpu.is_none() || next == prev)
                && t.cpus_allowed.test(cpu));
        assert!(
            ok,
            "{}: schedule() on cpu {cpu} at {} ns picked pid {} ({:?}, on cpu {:?})",
            self.class.name(),
            self.now,
            t.pid,
            t.state,
            t.on_cpu
        );
        if next != prev {
            self.context_switch(cpu, prev, next);
        }
    }

    /// `try_to_wake_up(p, sync)` on `cpu`: only sleeping tasks reach the class. `irq`: woken
    /// from interrupt context (a timer), not by a task.
    pub(crate) fn try_to_wake_up(&mut self, cpu: CpuId, p: TaskId, sync: bool, irq: bool) {
        if !self.tasks[p as usize].state.is_sleeping() {
            return;
        }
        let fixed = self.machine.costs().wakeup_ns;
        let waking = self.cpus[cpu].clock;
        let (class, ctx) = self.sched(cpu);
        let mut ctx = ctx.in_irq(irq);
        wake_task(class, &mut ctx, p, Wake { sync, fork: false });
        ctx.charge(fixed);
        self.assert_unlocked(cpu, "try_to_wake_up");
        self.tasks[p as usize].state = TaskState::Running;
        self.stats.wakeups += 1;
        self.woken(cpu, waking, p, false);
    }

    /// `wake_up_new_task`: the class's fork bookkeeping, then the first placement of the
    /// new task `p`, forked by `parent` (`None` at boot) on `cpu`.
    pub(crate) fn wake_up_new_task(&mut self, cpu: CpuId, p: TaskId, parent: Option<TaskId>) {
        let waking = self.cpus[cpu].clock;
        let (class, mut ctx) = self.sched(cpu);
        class.task_fork(&mut ctx, p, parent);
        // Boot's init is woken as 2.4's `wake_up_process` would, not as a fork.
        let wake = Wake {
            sync: false,
            fork: parent.is_some(),
        };
        wake_task(class, &mut ctx, p, wake);
        self.assert_unlocked(cpu, "wake_up_new_task");
        self.tasks[p as usize].state = TaskState::Running;
        self.woken(cpu, waking, p, true);
    }

    /// `p` was made runnable by `cpu`, from `waking` to now: the wake-up latency starts,
    /// and the trace hears of it.
    #[inline]
    fn woken(&mut self, cpu: CpuId, waking: crate::engine::Time, p: TaskId, new: bool) {
        let ts = self.cpus[cpu].clock;
        let t = &mut self.tasks[p as usize];
        t.woken_at = ts;
        t.stats.sched.wait_start(ts);
        if let Some(t) = self.trace.as_mut() {
            t.event(&crate::kernel::events::KEvent::Wakeup {
                cpu,
                waking,
                ts,
                waker: self.cpus[cpu].curr,
                p,
                target: self.tasks[p as usize].processor,
                new,
            });
        }
    }

    /// The scheduler's part of the timer interrupt on `cpu` for `curr`.
    pub(crate) fn scheduler_tick(&mut self, cpu: CpuId, curr: TaskId, user: bool) {
        let fixed = self.machine.costs().tick_ns;
        let idle = curr == self.cpus[cpu].idle;
        let (class, mut ctx) = self.sched(cpu);
        if !idle {
            // The time slice (2.4 `counter--`, O(1) `time_slice--`) is in curr's line.
            ctx.write(Shared::Task(curr));
        }
        class.task_tick(&mut ctx, cpu, curr, user);
        class.balance(&mut ctx, cpu, Balance::Tick { idle });
        ctx.charge(fixed);
        self.assert_unlocked(cpu, "scheduler_tick");
    }

    /// `sys_sched_yield` by `p` on `cpu`.
    pub(crate) fn sched_yield(&mut self, cpu: CpuId, p: TaskId) {
        if let Some(t) = self.trace.as_mut() {
            t.event(&crate::kernel::events::KEvent::Yield { p });
        }
        let (class, mut ctx) = self.sched(cpu);
        class.yield_task(&mut ctx, cpu, p);
        self.assert_unlocked(cpu, "yield_task");
    }

    /// `set_user_nice`: `p`'s nice value changed.
    pub(crate) fn set_user_nice(&mut self, cpu: CpuId, p: TaskId) {
        if let Some(t) = self.trace.as_mut() {
            let nice = self.tasks[p as usize].nice;
            t.event(&crate::kernel::events::KEvent::Nice { p, nice });
        }
        let (class, mut ctx) = self.sched(cpu);
        class.prio_changed(&mut ctx, p);
        self.assert_unlocked(cpu, "prio_changed");
    }

    /// The scheduler's part of reaping zombie `p` by `parent` on `cpu`.
    pub(crate) fn sched_reap(&mut self, cpu: CpuId, parent: TaskId, p: TaskId) {
        let (class, mut ctx) = self.sched(cpu);
        class.task_dead(&mut ctx, parent, p);
        self.assert_unlocked(cpu, "task_dead");
    }

    /// The first frame of a task switched in on `cpu` after `prev`: a task this CPU's
    /// `schedule()` took off for its affinity goes to an allowed CPU (the kernel's
    /// `move_queued_task`), then the class's `finish_task_switch`.
    pub(crate) fn finish_task_switch(&mut self, cpu: CpuId, prev: TaskId) {
        let (class, mut ctx) = self.sched(cpu);
        finish_switch(class, &mut ctx, cpu, prev);
        self.assert_unlocked(cpu, "finish_task_switch");
    }

    /// `sched_setaffinity(0, mask)` by `p` on `cpu`: `EINVAL` when `mask` names no online
    /// CPU, else 0. If `cpu` is excluded, `p` reschedules and `schedule()` moves it.
    pub(crate) fn sched_setaffinity(
        &mut self,
        cpu: CpuId,
        p: TaskId,
        mask: &crate::machine::CpuMask,
    ) -> i64 {
        if !mask.intersects(&self.online_mask()) {
            return crate::kernel::abi::EINVAL;
        }
        let (class, mut ctx) = self.sched(cpu);
        let rq = ctx.task(p).processor;
        class.rq_lock(&mut ctx, rq);
        ctx.set_cpus_allowed(p, *mask);
        class.set_cpus_allowed(&mut ctx, p);
        ctx.unlock(class.rq_lockp(rq));
        if !ctx.allowed(p, cpu) {
            ctx.resched_cpu(cpu);
        }
        self.assert_unlocked(cpu, "set_cpus_allowed");
        0
    }

    /// A policy hook returned holding a lock: a bug in the class.
    pub(crate) fn assert_unlocked(&self, cpu: CpuId, hook: &str) {
        if self.cpus[cpu].locks_held == 0 {
            return;
        }
        if let Some(l) = self.locks.iter().find(|l| l.holder == Some(cpu)) {
            panic!(
                "{}: {hook} returned on cpu {cpu} at {} ns still holding {}",
                self.class.name(),
                self.now,
                l.name
            );
        }
    }
}

/// The scheduler's part of `schedule()` on `cpu`: under the run queue's lock, `prev`
/// leaves the queue if it no longer runs, the class balances and picks, and the pick is
/// committed. Returns the next task (the idle task when the class has none).
#[inline]
pub(crate) fn pick_next(
    class: &mut dyn SchedClass,
    ctx: &mut SchedCtx<'_>,
    cpu: CpuId,
    prev: TaskId,
) -> TaskId {
    let idle = ctx.idle_task(cpu);
    class.rq_lock(ctx, cpu);
    let p = ctx.task(prev);
    if prev != idle && p.state != TaskState::Running && class.task_on_rq(ctx, prev) {
        class.dequeue_task(ctx, cpu, prev);
    } else if prev != idle && !ctx.allowed(prev, cpu) && class.task_on_rq(ctx, prev) {
        // Its affinity excludes this CPU: off this queue; placed after the switch.
        class.dequeue_task(ctx, cpu, prev);
        ctx.set_migrate(cpu, prev);
    }
    class.balance(ctx, cpu, Balance::NewIdle);
    let next = class.pick_next_task(ctx, cpu, prev).unwrap_or(idle);
    if prev != idle {
        class.put_prev_task(ctx, cpu, prev, next);
    }
    if next != prev {
        // The switch's bookkeeping under the lock (2.4 `has_cpu`/`processor`, 2.6
        // `rq->curr`, the array a task is on): both tasks' lines are written here.
        if prev != idle {
            ctx.write(Shared::Task(prev));
        }
        if next != idle {
            ctx.write(Shared::Task(next));
        }
        ctx.write_curr(next);
    }
    if next != idle {
        class.set_next_task(ctx, cpu, next, prev);
    }
    ctx.unlock(class.rq_lockp(cpu));
    next
}

/// After a switch on `cpu` away from `prev`: place the task `schedule()` took off for its
/// affinity, then the class's `finish_task_switch`.
pub(crate) fn finish_switch(
    class: &mut dyn SchedClass,
    ctx: &mut SchedCtx<'_>,
    cpu: CpuId,
    prev: TaskId,
) {
    if let Some(p) = ctx.take_migrate(cpu) {
        // cpumask_any_and(cpu_online_mask, new_mask): the lowest allowed CPU, from which
        // the class's own placement proceeds.
        let dest = (0..ctx.nr_cpus())
            .find(|&c| ctx.allowed(p, c))
            .expect("sched_setaffinity refused masks with no online CPU");
        ctx.set_task_cpu(p, dest);
        wake_task(class, ctx, p, Wake::default());
    }
    class.finish_task_switch(ctx, cpu, prev);
}

/// The wake-up sequence: find `p` a run queue, queue it there, and let the class decide who
/// should reschedule. `p` is asleep or new, and not on a CPU's run queue unless it never
/// left its CPU (then `task_on_rq` says so and nothing more is done).
#[inline]
pub(crate) fn wake_task(class: &mut dyn SchedClass, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) {
    let old = ctx.task(p).processor;
    let first = class.rq_lockp(old);
    let cpu = match class.wake_order() {
        WakeOrder::TaskRqFirst => {
            class.rq_lock(ctx, old);
            if class.task_on_rq(ctx, p) {
                ctx.unlock(first);
                return;
            }
            let cpu = class.select_task_rq(ctx, p, wake);
            if cpu != old && !ctx.holds(class.rq_lockp(cpu)) {
                // 2.6.0: `task_rq_unlock(rq); goto repeat_lock_task` on the new queue.
                ctx.unlock(first);
                class.rq_lock(ctx, cpu);
            }
            cpu
        }
        WakeOrder::SelectFirst => {
            if class.task_on_rq(ctx, p) {
                return;
            }
            let cpu = class.select_task_rq(ctx, p, wake);
            class.rq_lock(ctx, cpu);
            cpu
        }
    };
    ctx.set_task_cpu(p, cpu);
    // `p->state = TASK_RUNNING` and its run-list links: the waker writes p's line.
    ctx.write(Shared::Task(p));
    class.enqueue_task(ctx, cpu, p, wake);
    let asked = ctx.schedstat_wakeup(p, old, cpu, wake);
    class.wakeup_preempt(ctx, cpu, p, wake);
    ctx.schedstat_wakeup_preempt(p, asked);
    let target = if cpu == old {
        first
    } else {
        class.rq_lockp(cpu)
    };
    ctx.unlock(target);
    if first != target && ctx.holds(first) {
        ctx.unlock(first);
    }
}
