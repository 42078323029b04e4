//! The scheduler core and the seam every policy plugs into: [`SchedClass`], shaped like
//! Linux's `struct sched_class`, and [`SchedCtx`], what a class's hook may see and do.
//!
//! # The core drives, the class decides
//!
//! [`core`] owns the sequences that every kernel of the era and after had in common —
//! `schedule()`, `try_to_wake_up()`, `wake_up_new_task()`, the tick — and calls the class
//! at the points a modern kernel does:
//!
//! ```text
//! schedule(cpu, prev)          lock rq(cpu) ─ dequeue_task(prev) if it sleeps ─ balance(NewIdle)
//!                              ─ pick_next_task ─ put_prev_task ─ set_next_task ─ unlock
//!                              ─ context switch ─ finish_task_switch(prev) on the new task
//! try_to_wake_up(p, sync)      [lock rq(task_cpu(p))] ─ task_on_rq? done ─ select_task_rq
//!                              ─ move to the chosen rq ─ enqueue_task ─ wakeup_preempt ─ unlock
//! wake_up_new_task(p)          task_fork(p, parent) ─ then as try_to_wake_up with `fork`
//! scheduler_tick(cpu)          task_tick(curr) ─ balance(Tick)
//! sched_yield / nice / reap    yield_task / prio_changed / task_dead
//! sched_setaffinity(p, mask)   lock rq(task_cpu(p)) ─ set_cpus_allowed ─ unlock; if p's CPU
//!                              is excluded: dequeue_task at schedule(), then the wake-up
//!                              path onto an allowed CPU after the switch
//! ```
//!
//! Each hook's doc begins "Called from: …, with … held". Where the modelled kernels
//! disagreed about a lock — 2.4's tick and `sys_sched_yield` took none, 2.6.0's took
//! `rq->lock` — the hook is called with none held and the class takes what its kernel took;
//! costs then follow from what it really did.
//!
//! # How the 2001–2003 policies map onto it
//!
//! * **2.4** (`linux-2.4`): one run queue shared by every CPU — [`SchedClass::rq_lockp`]
//!   answers `runqueue_lock` for every CPU. `select_task_rq` keeps the task where it is;
//!   `reschedule_idle()` is its wake-up preemption (it may kick any CPU, since every CPU
//!   serves the one queue); the counter recalculation happens inside `pick_next_task`,
//!   which drops and retakes the lock as 2.4's `schedule()` did; `__schedule_tail` is
//!   `finish_task_switch`.
//! * **MQ** (`mq`, `mq-pool`): per-CPU queues. `select_task_rq` is MQ's `reschedule_idle`
//!   placement — it may `spin_trylock` another queue and return holding it, and the core
//!   then keeps both locks, as MQ did; the remote steal happens inside `pick_next_task`
//!   (as modern fair's `pick_next_task_fair` runs newidle balancing itself); the pool
//!   load balancer is `balance(Tick)`.
//! * **haMQ**: per-CPU queues, placement decided lock-free before any queue is locked
//!   ([`WakeOrder::SelectFirst`]); the idle pull is inside `pick_next_task`.
//! * **O(1)** (`o1-d1`, `o1-g1`, `o1-2.6`): per-CPU queues; `select_task_rq` is the sync
//!   wake-up's migration to the waker (2.6.0 `try_to_wake_up`); an empty queue's pull is
//!   `balance(NewIdle)`, the idle and busy rebalance ticks are `balance(Tick)`.
//! * **fifo**, the reference policy: a global round robin on one [`runlist::RunLists`]
//!   list; `select_task_rq` changes nothing, the pick sets `processor`, and
//!   `wakeup_preempt` is [`runlist::kick_idle_cpu`].
//! * **cfs**, **eevdf** (`policy/fair/`): per-CPU trees, [`WakeOrder::SelectFirst`],
//!   newidle balancing inside `pick_next_task`, `balance(Tick)` as
//!   `sched_balance_trigger`.
//!
//! What a hook charges is the cost rule of [`SchedCtx`]'s module doc.
//!
//! A policy knows no workload; the core knows no policy.

pub mod core;
mod ctx;
pub mod idle_cpus;
pub mod published;
pub mod runlist;
mod state_map;
pub mod testbed;

use std::collections::BTreeMap;

use crate::machine::{CpuId, LockId};

use super::types::TaskId;
use super::Kernel;

pub use ctx::{Curr, Read, SchedCtx, Shared, Walk};
pub use idle_cpus::IdleCpus;
pub use published::Published;
pub use state_map::StateMap;

/// Why a task is being placed on a run queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wake {
    /// `__wake_up_sync`: the waker is about to sleep (`WF_SYNC`).
    pub sync: bool,
    /// A new task from `do_fork` (`WF_FORK`).
    pub fork: bool,
}

/// Which lock `try_to_wake_up` takes before asking the class where the task goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeOrder {
    /// 2.4 to 2.6.0: `task_rq_lock(p)` first; `select_task_rq` runs under it, and moving
    /// the task drops it for the target's lock (or keeps both when the class returns
    /// holding the target's lock, as MQ's `spin_trylock` placement did).
    TaskRqFirst,
    /// Decide first, lock-free (modern kernels under `p->pi_lock`), then lock the chosen
    /// run queue.
    SelectFirst,
}

/// Which balancing pass is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    /// `schedule()` after `prev` left the queue, before the pick (newidle balancing);
    /// the run queue's lock is held.
    NewIdle,
    /// The timer tick, after `task_tick`; no lock held. `idle`: the CPU runs its idle task.
    Tick {
        /// The tick interrupted the idle task.
        idle: bool,
    },
}

/// A scheduling class. The kernel calls it; it owns its run queues and per-task state,
/// takes the locks its kernel took through the [`SchedCtx`] and charges what it touches
/// by the cost rule ([`SchedCtx`]'s module doc).
///
/// Every hook runs atomically in simulated time and must return holding exactly the locks
/// its doc says it was called with.
///
/// What the kernel around a class assumes:
/// * **`processor`** (`task(p).processor`) is the CPU whose queue holds `p`, or where it
///   ran last. Only [`SchedCtx::set_task_cpu`] changes it, and each change counts as a
///   migration. The core sets it to `select_task_rq`'s answer before `enqueue_task`; a
///   class whose queue several CPUs serve sets it at the pick ([`runlist`]'s doc).
/// * **The affinity gap.** A running task whose affinity no longer allows its CPU is
///   dequeued at its next `schedule()` and is on no queue until the switch ends; the core
///   then wakes it onto an allowed CPU through `select_task_rq`. `pick_next_task` must
///   not requeue such a `prev`.
/// * **Kicking.** `wakeup_preempt` is where a class preempts a busy CPU *and* where it
///   wakes an idle one: [`SchedCtx::resched_cpu`] sets `need_resched` and sends the IPI
///   (none to this CPU, none while one is pending); [`runlist::kick_idle_cpu`] chooses an
///   idle CPU not already kicked.
pub trait SchedClass {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// Effective options (defaults resolved), for the report.
    fn options(&self) -> BTreeMap<String, String>;

    /// Timer frequency of this class's kernel.
    fn hz(&self) -> u32;

    /// The kernel release this class stands for: its resource limits and the sizes of
    /// what it allocates ([`crate::kernel::release`]). Default: 2.4.16, the kernel layer
    /// the P6 presets were built from.
    fn release(&self) -> crate::kernel::release::Release {
        crate::kernel::release::Release::V2_4(16)
    }

    /// Whether this class's kernel has high-resolution timers (Linux ≥ 2.6.16): sleeps
    /// then end at their instant (plus the timer slack), not at the next tick.
    fn hrtimers(&self) -> bool {
        false
    }

    /// Whether the class asks the kernel's index of idle CPUs ([`IdleCpus`], through
    /// [`SchedCtx::oldest_idle_seen`] and the like). The kernel keeps it only for such a
    /// class, where it is worth keeping ([`SchedCtx::walks_indexable`]): its upkeep at
    /// every switch would be lost on another.
    fn uses_idle_index(&self) -> bool {
        false
    }

    /// Called from: boot, once, before any task exists; no lock held. Create locks and
    /// per-CPU run queues.
    fn init(&mut self, ctx: &mut SchedCtx<'_>);

    /// The lock protecting `cpu`'s run queue (6.x `__rq_lockp(rq)`: `rq->lock`; 2.4:
    /// `runqueue_lock` for every CPU). [`SchedClass::rq_lock`] takes it.
    fn rq_lockp(&self, cpu: CpuId) -> LockId;

    /// Called from: the core, to take `cpu`'s run-queue lock (6.x `rq_lock(rq)`); no lock
    /// of that queue held.
    /// Override to account for what the acquisition brings along (MQ: the queue's data
    /// lines share the lock's cache line).
    fn rq_lock(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        ctx.lock(self.rq_lockp(cpu));
    }

    /// Which lock `try_to_wake_up` takes first.
    fn wake_order(&self) -> WakeOrder {
        WakeOrder::TaskRqFirst
    }

    /// Called from: `try_to_wake_up` and `schedule()`, with `task_rq(p)`'s lock held
    /// (lock-free under [`WakeOrder::SelectFirst`]). True when `p` is still on a run queue
    /// or still its CPU's current task (`p->on_rq`): a wake-up then only marks it running.
    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool;

    /// Called from: boot (idle tasks and init, `parent` `None`) and `do_fork`, for every
    /// new task before it is first woken; no lock held. Allocate per-task state; split the
    /// parent's timeslice.
    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>);

    /// Called from: `try_to_wake_up` / `wake_up_new_task`, for a task on no run queue,
    /// with `task_rq(p)`'s lock held under [`WakeOrder::TaskRqFirst`], none under
    /// `SelectFirst`. Return the CPU whose run queue `p` joins. A class may take that
    /// queue's lock itself (by `spin_trylock`) and return holding it; the core then keeps
    /// both locks until the wake-up is done.
    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId;

    /// Called from: `try_to_wake_up` / `wake_up_new_task` after `select_task_rq` (the
    /// task's `processor` is `cpu`), with `cpu`'s run-queue lock held. Queue `p`.
    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake);

    /// Called from: `schedule()` when `prev` no longer runs here (it sleeps, exits, or
    /// its affinity excludes this CPU), with `cpu`'s run-queue lock held. Take it off the
    /// queue.
    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId);

    /// Called from: `try_to_wake_up` / `wake_up_new_task` right after `enqueue_task`, with
    /// `cpu`'s run-queue lock held. Decide whether some CPU should reschedule — a busy one
    /// to be preempted, or an idle one to be woken (2.4: `reschedule_idle()`; 2.6:
    /// `check_preempt_curr`; a shared queue: [`runlist::kick_idle_cpu`]) — and call
    /// [`SchedCtx::resched_cpu`].
    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake);

    /// Called from: `schedule()` before the pick (`NewIdle`, `cpu`'s run-queue lock held)
    /// and from the tick after `task_tick` (`Tick`, no lock held). Pull work from other
    /// queues as the class's balancer did. The default balances nothing.
    fn balance(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, why: Balance) {
        let _ = (ctx, cpu, why);
    }

    /// Called from: `schedule()` on `cpu`, with its run-queue lock held; `prev` (maybe the
    /// idle task) is the task leaving the CPU and competes if it still runs and may run
    /// here (one whose affinity now excludes `cpu` was dequeued, and the core places it
    /// once it is switched out). Return the
    /// next task, or `None` for the idle task. A class may drop and retake the lock inside
    /// (2.4's counter recalculation) and take other queues' locks (MQ's steal).
    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId>;

    /// Called from: `schedule()` after the pick, for a `prev` that is not an idle task,
    /// with `cpu`'s run-queue lock held; `next` may equal `prev`.
    fn put_prev_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId, next: TaskId) {
        let _ = (ctx, cpu, prev, next);
    }

    /// Called from: `schedule()` after `put_prev_task`, for a `next` that is not an idle
    /// task, with `cpu`'s run-queue lock held; `next` may equal `prev`.
    fn set_next_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, next: TaskId, prev: TaskId) {
        let _ = (ctx, cpu, next, prev);
    }

    /// Called from: the first frame of the task switched in on `cpu` (2.4
    /// `__schedule_tail`, modern `finish_task_switch`), with `prev` the task switched
    /// out; no lock held.
    fn finish_task_switch(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId) {
        let _ = (ctx, cpu, prev);
    }

    /// Called from: the timer interrupt on `cpu` for its current task `curr` (the idle
    /// task when idle); no lock held (2.4's `update_process_times` took none; 2.6.0's
    /// `scheduler_tick` took `rq->lock` inside). `user`: user mode was interrupted.
    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, user: bool);

    /// Called from: `sys_sched_yield` by the running task `p` on `cpu`; no lock held (2.4
    /// counted pending tasks lock-free first). The kernel reschedules on the way out of
    /// the system call if `need_resched` is set.
    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId);

    /// Called from: `sys_nice` after `p`'s nice value changed (`set_user_nice`); no lock
    /// held.
    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let _ = (ctx, p);
    }

    /// Called from: `sched_setaffinity` after `p`'s `cpus_allowed` changed, with
    /// `task_rq(p)`'s lock held. Update what the class derived from the mask. If `p` runs
    /// on a CPU it may no longer use, the core moves it: `dequeue_task` at its next
    /// `schedule()`, then the wake-up path onto an allowed CPU once it is switched out.
    fn set_cpus_allowed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let _ = (ctx, p);
    }

    /// Called from: `wait()` reaping the zombie `p` of `parent` (2.4 `release_task`,
    /// 2.6.0 `sched_exit`); no lock held.
    fn task_dead(&mut self, ctx: &mut SchedCtx<'_>, parent: TaskId, p: TaskId) {
        let _ = (ctx, parent, p);
    }

    /// Class-specific counters for `counters.policy`.
    fn counters(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    /// Why the class's scheduler ended during the run, if it did (sched_ext's error
    /// exit: the run goes on without it, and the report says why).
    fn exit_reason(&self) -> Option<String> {
        None
    }

    /// The class's invariants (e.g. every runnable task on exactly one queue); `Err` names
    /// the first violation.
    fn check(&self, k: &Kernel) -> Result<(), String> {
        let _ = k;
        Ok(())
    }
}

/// A boxed class is a class (the registry builds boxes; test beds take either).
impl<T: SchedClass + ?Sized> SchedClass for Box<T> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn options(&self) -> BTreeMap<String, String> {
        (**self).options()
    }
    fn hz(&self) -> u32 {
        (**self).hz()
    }
    fn release(&self) -> crate::kernel::release::Release {
        (**self).release()
    }
    fn hrtimers(&self) -> bool {
        (**self).hrtimers()
    }
    fn uses_idle_index(&self) -> bool {
        (**self).uses_idle_index()
    }
    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        (**self).init(ctx)
    }
    fn rq_lockp(&self, cpu: CpuId) -> LockId {
        (**self).rq_lockp(cpu)
    }
    fn rq_lock(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        (**self).rq_lock(ctx, cpu)
    }
    fn wake_order(&self) -> WakeOrder {
        (**self).wake_order()
    }
    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        (**self).task_on_rq(ctx, p)
    }
    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        (**self).task_fork(ctx, p, parent)
    }
    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId {
        (**self).select_task_rq(ctx, p, wake)
    }
    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        (**self).enqueue_task(ctx, cpu, p, wake)
    }
    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        (**self).dequeue_task(ctx, cpu, p)
    }
    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        (**self).wakeup_preempt(ctx, cpu, p, wake)
    }
    fn balance(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, why: Balance) {
        (**self).balance(ctx, cpu, why)
    }
    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        (**self).pick_next_task(ctx, cpu, prev)
    }
    fn put_prev_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId, next: TaskId) {
        (**self).put_prev_task(ctx, cpu, prev, next)
    }
    fn set_next_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, next: TaskId, prev: TaskId) {
        (**self).set_next_task(ctx, cpu, next, prev)
    }
    fn finish_task_switch(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId) {
        (**self).finish_task_switch(ctx, cpu, prev)
    }
    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, user: bool) {
        (**self).task_tick(ctx, cpu, curr, user)
    }
    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        (**self).yield_task(ctx, cpu, p)
    }
    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        (**self).prio_changed(ctx, p)
    }
    fn task_dead(&mut self, ctx: &mut SchedCtx<'_>, parent: TaskId, p: TaskId) {
        (**self).task_dead(ctx, parent, p)
    }
    fn set_cpus_allowed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        (**self).set_cpus_allowed(ctx, p)
    }
    fn counters(&self) -> BTreeMap<String, f64> {
        (**self).counters()
    }
    fn exit_reason(&self) -> Option<String> {
        (**self).exit_reason()
    }
    fn check(&self, k: &Kernel) -> Result<(), String> {
        (**self).check(k)
    }
}
