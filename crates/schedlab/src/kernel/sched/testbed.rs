//! A test bed for a scheduling class: a booted kernel whose scheduler state a test builds
//! by hand, and the class under test driven through the same sequences the core runs.
//!
//! The kernel boots under a bystander class at the tested class's HZ (so that both see the
//! same `jiffies`) and the boot-time init task retired; the class under test owns every
//! task the test creates. Nothing runs unless the test says so: no events are
//! handled, so clocks move only by what hooks charge and by [`Bed::at`].
//!
//! ```
//! use schedlab::kernel::sched::testbed::Bed;
//! use schedlab::policy;
//! let class = policy::build_named("o1-2.6", "piii700-1m", 2).unwrap();
//! let mut bed = Bed::new("piii700-1m", 2, class);
//! let p = bed.task(0, 1, 0);
//! bed.wake(0, p, false);
//! assert_eq!(bed.schedule(0), p);
//! bed.check().unwrap();
//! ```

use std::collections::BTreeMap;

use crate::engine::Time;
use crate::kernel::abi::{program, Op};
use crate::kernel::task::{TaskId, TaskState, ALL_CPUS};
use crate::kernel::Kernel;
use crate::machine::{CpuId, LockId, Machine};

use super::core::{finish_switch, pick_next, wake_task};
use super::{Balance, SchedClass, SchedCtx, Wake};

/// The kernel's own class in a bed: it boots the machine and is never asked to schedule.
struct Bystander {
    hz: u32,
    lock: LockId,
}

impl SchedClass for Bystander {
    fn name(&self) -> &'static str {
        "bystander"
    }
    fn options(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn hz(&self) -> u32 {
        self.hz
    }
    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        self.lock = ctx.new_lock("bystander_lock", None);
    }
    fn rq_lockp(&self, _cpu: CpuId) -> LockId {
        self.lock
    }
    fn task_on_rq(&self, _ctx: &SchedCtx<'_>, _p: TaskId) -> bool {
        false
    }
    fn task_fork(&mut self, _ctx: &mut SchedCtx<'_>, _p: TaskId, _parent: Option<TaskId>) {}
    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, _wake: Wake) -> CpuId {
        ctx.task(p).processor
    }
    fn enqueue_task(&mut self, _: &mut SchedCtx<'_>, _: CpuId, _: TaskId, _: Wake) {}
    fn dequeue_task(&mut self, _: &mut SchedCtx<'_>, _: CpuId, _: TaskId) {}
    fn wakeup_preempt(&mut self, _: &mut SchedCtx<'_>, _: CpuId, _: TaskId, _: Wake) {}
    fn pick_next_task(&mut self, _: &mut SchedCtx<'_>, _: CpuId, _: TaskId) -> Option<TaskId> {
        None
    }
    fn task_tick(&mut self, _: &mut SchedCtx<'_>, _: CpuId, _: TaskId, _: bool) {}
    fn yield_task(&mut self, _: &mut SchedCtx<'_>, _: CpuId, _: TaskId) {}
}

/// A booted kernel and a class under test.
pub struct Bed<C: SchedClass> {
    /// The kernel (its own class is a bystander).
    pub k: Kernel,
    /// The class under test.
    pub class: C,
}

impl<C: SchedClass> Bed<C> {
    /// Boot `cpus` CPUs of `machine` (a preset, with model switches if any:
    /// `piii700-1m:lock=ticket`) and hand them to `class` (`init`, then `task_fork` of
    /// every idle task). Panics on an unknown preset or CPU count: a test bug.
    pub fn new(machine: &str, cpus: usize, mut class: C) -> Bed<C> {
        let m = Machine::boot_spec(machine, Some(cpus))
            .unwrap_or_else(|e| panic!("machine {machine}: {e}"));
        let bystander = Box::new(Bystander {
            hz: class.hz(),
            lock: 0,
        });
        let mut k = Kernel::boot(m, bystander, program(|_| Op::Exit), 1);
        // Retire the bystander's init: only the test's tasks exist for the class.
        k.tasks[cpus].state = TaskState::Dead;
        k.nr_threads -= 1;
        k.ic.forget_task(cpus as u32);
        let mut ctx = k.ctx(0);
        class.init(&mut ctx);
        for c in 0..cpus {
            class.task_fork(&mut ctx, c as TaskId, None);
        }
        // Only the cost rule's debug check reads it.
        #[cfg(debug_assertions)]
        {
            let rq_locks: Vec<_> = (0..cpus).map(|c| class.rq_lockp(c)).collect();
            k.state_map.set_rq_locks(&rq_locks);
        }
        Bed { k, class }
    }

    /// Move every CPU's clock, and global time, to `t` (forward only).
    pub fn at(&mut self, t: Time) {
        self.k.now = self.k.now.max(t);
        for c in &mut self.k.cpus {
            c.clock = c.clock.max(t);
        }
    }

    /// Run `f` as a hook of the class on `cpu`.
    pub fn with<R>(&mut self, cpu: CpuId, f: impl FnOnce(&mut C, &mut SchedCtx<'_>) -> R) -> R {
        let mut ctx = self.k.ctx(cpu);
        f(&mut self.class, &mut ctx)
    }

    /// A new task of address space `mm` and nice `nice`, last run on `cpu`, asleep and on
    /// no queue; the class has seen its `task_fork` (as a boot task: no parent).
    pub fn task(&mut self, cpu: CpuId, mm: u32, nice: i32) -> TaskId {
        let p = self
            .k
            .create_task(None, program(|_| Op::Exit), mm, nice, ALL_CPUS, cpu);
        self.k.tasks[p as usize].state = TaskState::Interruptible;
        self.with(cpu, |c, ctx| c.task_fork(ctx, p, None));
        p
    }

    /// `try_to_wake_up(p, sync)` from `cpu`, through the core's sequence.
    pub fn wake(&mut self, cpu: CpuId, p: TaskId, sync: bool) {
        let mut ctx = self.k.ctx(cpu);
        wake_task(&mut self.class, &mut ctx, p, Wake { sync, fork: false });
        self.k.tasks[p as usize].state = TaskState::Running;
        self.assert_unlocked();
    }

    /// `schedule()` on `cpu` through the core's sequence, then the bookkeeping of the
    /// context switch (no switch costs, no `finish_task_switch`). Returns the next task.
    pub fn schedule(&mut self, cpu: CpuId) -> TaskId {
        let prev = self.k.cpus[cpu].curr;
        self.k.tasks[prev as usize].need_resched = false;
        let mut ctx = self.k.ctx(cpu);
        let next = pick_next(&mut self.class, &mut ctx, cpu, prev);
        self.assert_unlocked();
        if next != prev {
            self.switch_to(cpu, next);
        }
        next
    }

    /// Make `p` the current task of `cpu` (the bookkeeping of a context switch), whatever
    /// the class would say.
    pub fn switch_to(&mut self, cpu: CpuId, p: TaskId) {
        let k = &mut self.k;
        let old = k.cpus[cpu].curr;
        k.tasks[old as usize].on_cpu = None;
        k.cpus[cpu].curr = p;
        let now = k.cpus[cpu].clock;
        k.cpus[cpu].curr_seen.set(now, p);
        k.idle_cpus.set_last_schedule(cpu, now);
        k.idle_cpus.note(cpu, &k.cpus[cpu]);
        let t = &mut k.tasks[p as usize];
        t.on_cpu = Some(cpu);
        if !t.is_idle {
            t.last_ran = Some(cpu);
            k.cpus[cpu].active_mm = t.mm;
        }
    }

    /// What follows a switch on `cpu` away from `prev`, as the core does it (a task moved
    /// for its affinity is placed, then `finish_task_switch`).
    pub fn finish_switch(&mut self, cpu: CpuId, prev: TaskId) {
        let mut ctx = self.k.ctx(cpu);
        finish_switch(&mut self.class, &mut ctx, cpu, prev);
        self.assert_unlocked();
    }

    /// The scheduler's part of a timer tick on `cpu`.
    pub fn tick(&mut self, cpu: CpuId, user: bool) {
        let curr = self.k.cpus[cpu].curr;
        let idle = curr == self.k.cpus[cpu].idle;
        self.with(cpu, |c, ctx| {
            c.task_tick(ctx, cpu, curr, user);
            c.balance(ctx, cpu, Balance::Tick { idle });
        });
        self.assert_unlocked();
    }

    /// `sys_sched_yield` by the current task of `cpu`.
    pub fn sched_yield(&mut self, cpu: CpuId) {
        let p = self.k.cpus[cpu].curr;
        self.with(cpu, |c, ctx| c.yield_task(ctx, cpu, p));
        self.assert_unlocked();
    }

    /// The task `cpu` runs.
    pub fn curr(&self, cpu: CpuId) -> TaskId {
        self.k.cpus[cpu].curr
    }

    /// True when `cpu`'s current task has `need_resched`.
    pub fn need_resched(&self, cpu: CpuId) -> bool {
        self.k.tasks[self.curr(cpu) as usize].need_resched
    }

    /// The class's invariants.
    pub fn check(&self) -> Result<(), String> {
        self.class.check(&self.k)
    }

    fn assert_unlocked(&self) {
        if let Some(l) = self.k.locks.iter().find(|l| l.holder.is_some()) {
            panic!("{}: a hook returned holding {}", self.class.name(), l.name);
        }
    }
}
