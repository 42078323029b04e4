//! Scheduling policies: one narrow trait shaped like a 2.4/2.5 scheduler's entry points,
//! one module per policy, one ordered registry.
//!
//! # The contract
//!
//! The kernel calls a [`Policy`] at the points the 2.4 and 2.5 kernels called their
//! scheduler (`schedule`, `try_to_wake_up`, `scheduler_tick`, `sys_sched_yield`, fork and
//! exit). Each hook runs atomically in simulated time; it takes the locks it needs through
//! the [`SchedCtx`] — spinning, hold times and cache-line transfers are then charged by the
//! machine model — and charges the work it does (`SchedCtx::examine` per task looked at,
//! `SchedCtx::charge` for anything else). A hook must release every lock it takes. The
//! policy owns its run queues and its per-task scheduling state; it reads the common task
//! fields (nice, mm, affinity, `processor`, state) through the context and changes only
//! `processor` (`set_task_cpu`) and `need_resched` (`resched_cpu`).
//!
//! A policy knows no workload; the kernel knows no policy.

pub mod fifo;
pub mod hamq;
pub mod linux24;
pub mod mq;
pub mod o1;

use std::collections::BTreeMap;

use crate::engine::{SimRng, Time};
use crate::kernel::task::{Task, TaskId};
use crate::kernel::{Acct, Event, Kernel};
use crate::machine::{Costs, CpuId, LockId, Machine};
use crate::spec::{self, ParamSpec, Params, Spec, SpecError};

/// A scheduler. Method docs say who calls them and which locks are held.
pub trait Policy {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// Effective options (defaults resolved), for the report.
    fn options(&self) -> BTreeMap<String, String>;

    /// Timer frequency of this scheduler's kernel.
    fn hz(&self) -> u32;

    /// Called from: boot, once, before any task exists; no lock held. Create locks and
    /// per-CPU queues.
    fn init(&mut self, ctx: &mut SchedCtx<'_>);

    /// Called from: boot (idle tasks, init) and `do_fork`, for every new task, before it
    /// is woken; no lock held. Allocate per-task state; a forked child's timeslice split
    /// lives here (`parent` is `None` at boot).
    fn task_new(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>);

    /// Called from: `do_fork` after `task_new`; no lock held. Make the child runnable
    /// (2.4: `wake_up_process`; 2.5: `wake_up_forked_process`).
    fn wake_up_new_task(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: TaskId) {
        let _ = parent;
        self.try_to_wake_up(ctx, p, false);
    }

    /// Called from: a wake-up (`__wake_up_common`, timers, fork) on the waker's CPU; no
    /// lock held. `p` is asleep (its state is set to running by the kernel after this
    /// returns) or was never queued (a new task). Put it on a run queue unless it still
    /// is on one, and decide which CPU, if any, should reschedule. `sync` is the
    /// `__wake_up_sync` flag: the waker is about to sleep.
    fn try_to_wake_up(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, sync: bool);

    /// Called from: `schedule()` on `cpu`; no lock held. `prev` is the task leaving the CPU
    /// (possibly the idle task); if its state is not running it must leave the run queue.
    /// Return the task to run next: `prev` itself, another runnable task not running
    /// elsewhere, or `ctx.idle_task(cpu)`.
    fn schedule(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId) -> TaskId;

    /// Called from: the first frame of a task switched in on `cpu`, with `prev` the task
    /// switched out; no lock held (2.4 `__schedule_tail`).
    fn schedule_tail(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId) {
        let _ = (ctx, cpu, prev);
    }

    /// Called from: the timer interrupt on `cpu` for its current task `curr` (the idle
    /// task when idle); no lock held. `user` is true when user mode was interrupted.
    fn scheduler_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, user: bool);

    /// Called from: `sys_sched_yield` by the running task `p` on `cpu`; no lock held. The
    /// kernel reschedules on the way out of the system call if `need_resched` is set.
    fn sys_sched_yield(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId);

    /// Called from: `wait()` reaping the zombie `child` of `parent` (2.4 `release_task`,
    /// 2.5 `sched_exit`); no lock held.
    fn sched_exit(&mut self, ctx: &mut SchedCtx<'_>, parent: TaskId, child: TaskId) {
        let _ = (ctx, parent, child);
    }

    /// Called from: `sys_nice` after the task's nice value changed; no lock held.
    fn set_user_nice(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let _ = (ctx, p);
    }

    /// Policy-specific counters for `counters.policy`.
    fn counters(&self) -> BTreeMap<String, f64> {
        BTreeMap::new()
    }

    /// Policy invariants (e.g. every runnable task on exactly one queue).
    fn check(&self, k: &Kernel) -> Result<(), String> {
        let _ = k;
        Ok(())
    }
}

/// What a policy hook may see and do. Time inside a hook is the executing CPU's clock,
/// advanced by every charge, spin and lock transfer.
pub struct SchedCtx<'a> {
    k: &'a mut Kernel,
    cpu: CpuId,
    cat: Acct,
    irq: bool,
}

impl<'a> SchedCtx<'a> {
    /// A context for a hook running on `cpu`, charging its work as `cat`.
    pub fn new(k: &'a mut Kernel, cpu: CpuId, cat: Acct) -> Self {
        SchedCtx {
            k,
            cpu,
            cat,
            irq: false,
        }
    }

    /// Mark the hook as running in interrupt context (a timer wake-up).
    pub fn in_irq(mut self, irq: bool) -> Self {
        self.irq = irq;
        self
    }

    /// True when the hook runs in interrupt context: a wake-up by a timer rather than by
    /// a task (2.6 `activated = 2` vs 1).
    pub fn is_irq(&self) -> bool {
        self.irq
    }

    /// The CPU executing the hook.
    #[inline]
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// Current time on the executing CPU.
    #[inline]
    pub fn now(&self) -> Time {
        self.k.cpus[self.cpu].clock
    }

    /// `jiffies` now.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        self.k.jiffies_at(self.now())
    }

    /// Tick period.
    pub fn tick_ns(&self) -> Time {
        self.k.tick_ns
    }

    /// The machine.
    pub fn machine(&self) -> &Machine {
        &self.k.machine
    }

    /// The cost table.
    #[inline]
    pub fn costs(&self) -> &'static Costs {
        self.k.machine.costs()
    }

    /// CPUs online.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.k.cpus.len()
    }

    /// The mm loaded on `cpu`: its current task's `active_mm` (the idle task keeps the
    /// mm of the task before it, lazy TLB).
    #[inline]
    pub fn active_mm(&self, cpu: CpuId) -> u32 {
        self.k.cpus[cpu].active_mm
    }

    /// Read a task.
    #[inline]
    pub fn task(&self, p: TaskId) -> &Task {
        &self.k.tasks[p as usize]
    }

    /// Number of task slots (ids are `0..tasks_len()`).
    pub fn tasks_len(&self) -> usize {
        self.k.tasks.len()
    }

    /// The task running on `cpu`.
    #[inline]
    pub fn curr(&self, cpu: CpuId) -> TaskId {
        self.k.cpus[cpu].curr
    }

    /// `cpu`'s idle task.
    #[inline]
    pub fn idle_task(&self, cpu: CpuId) -> TaskId {
        self.k.cpus[cpu].idle
    }

    /// True when `cpu` runs its idle task.
    #[inline]
    pub fn cpu_is_idle(&self, cpu: CpuId) -> bool {
        let c = &self.k.cpus[cpu];
        c.curr == c.idle
    }

    /// Time of `cpu`'s last context switch (2.4 `last_schedule`).
    pub fn last_schedule(&self, cpu: CpuId) -> Time {
        self.k.cpus[cpu].last_schedule
    }

    /// True when `p` may run on `cpu`.
    #[inline]
    pub fn allowed(&self, p: TaskId, cpu: CpuId) -> bool {
        self.task(p).cpus_allowed & (1u64 << cpu) != 0
    }

    /// The run's random source.
    pub fn rng(&mut self) -> &mut SimRng {
        &mut self.k.rng
    }

    /// Charge `ns` of work.
    #[inline]
    pub fn charge(&mut self, ns: Time) {
        self.k.charge(self.cpu, ns, self.cat);
    }

    /// Charge the examination of `n` tasks in a run-queue scan.
    #[inline]
    pub fn examine(&mut self, n: u64) {
        let c = n * self.costs().task_examine_ns;
        self.charge(c);
    }

    /// Create a lock (at `init`).
    pub fn new_lock(&mut self, name: &'static str) -> LockId {
        self.k.new_lock(name)
    }

    /// Acquire `l`, spinning until it is free.
    pub fn lock(&mut self, l: LockId) {
        let now = self.now();
        let lk = &self.k.locks[l as usize];
        assert!(
            lk.holder.is_none(),
            "lock {} requested by cpu {} while held by cpu {:?} at {now} ns",
            lk.name,
            self.cpu,
            lk.holder
        );
        let start = now.max(lk.free_at);
        let spin = start - now;
        if spin > 0 {
            self.k.charge(self.cpu, spin, Acct::Spin);
        }
        self.grant(l, spin);
    }

    /// Try to acquire `l` without spinning.
    pub fn trylock(&mut self, l: LockId) -> bool {
        let now = self.now();
        if self.k.locks[l as usize].is_free_at(now) {
            self.grant(l, 0);
            true
        } else {
            // The failed atomic still pulls the lock's line over.
            let xfer = self.transfer_cost(l);
            let c = self.costs().lock_ns + xfer;
            self.charge(c);
            self.k.locks[l as usize].stats.trylock_failures += 1;
            false
        }
    }

    fn transfer_cost(&self, l: LockId) -> Time {
        match self.k.locks[l as usize].last_cpu {
            Some(o) if o != self.cpu => self.k.machine.line_transfer_ns(o, self.cpu),
            _ => 0,
        }
    }

    fn grant(&mut self, l: LockId, spin: Time) {
        let xfer = self.transfer_cost(l);
        let c = self.costs().lock_ns + xfer;
        self.charge(c);
        let now = self.now();
        let cpu = self.cpu;
        let lk = &mut self.k.locks[l as usize];
        lk.holder = Some(cpu);
        lk.granted_at = now;
        lk.stats.acquisitions += 1;
        if spin > 0 {
            lk.stats.contended += 1;
            lk.stats.wait_ns += spin;
        }
    }

    /// Release `l`.
    pub fn unlock(&mut self, l: LockId) {
        let now = self.now();
        let cpu = self.cpu;
        let lk = &mut self.k.locks[l as usize];
        assert_eq!(
            lk.holder,
            Some(cpu),
            "unlock of {} by cpu {cpu} which does not hold it",
            lk.name
        );
        lk.stats.hold_ns += now - lk.granted_at;
        lk.free_at = now;
        lk.holder = None;
        lk.last_cpu = Some(cpu);
    }

    /// True when the executing CPU holds `l` (for `debug_assert!`s).
    pub fn holds(&self, l: LockId) -> bool {
        self.k.locks[l as usize].holder == Some(self.cpu)
    }

    /// Set `need_resched` on `cpu`'s current task and, for another CPU, send a reschedule
    /// IPI unless one is already pending (the flag was set) or the idle loop polls.
    pub fn resched_cpu(&mut self, cpu: CpuId) {
        let curr = self.k.cpus[cpu].curr;
        let t = &mut self.k.tasks[curr as usize];
        let was_set = t.need_resched;
        t.need_resched = true;
        if cpu == self.cpu || was_set {
            return;
        }
        if self.costs().idle_poll && self.k.tasks[curr as usize].is_idle {
            return;
        }
        self.smp_send_reschedule(cpu);
    }

    /// Send a reschedule IPI to `cpu` unconditionally (2.4 `smp_send_reschedule`), for
    /// policies whose kernel sent one without looking at the target's `need_resched`
    /// (2.4 `reschedule_idle` preempting a busy CPU). Most policies want
    /// [`SchedCtx::resched_cpu`].
    pub fn smp_send_reschedule(&mut self, cpu: CpuId) {
        let costs = self.costs();
        self.charge(costs.ipi_send_ns);
        self.k.stats.ipis += 1;
        let at = self.now() + costs.ipi_latency_ns;
        self.k.queue.push(at, Event::Ipi { cpu: cpu as u16 });
    }

    /// Move `p` to `cpu`'s run queue (2.4 `p->processor = cpu`, 2.5 `set_task_cpu`).
    pub fn set_task_cpu(&mut self, p: TaskId, cpu: CpuId) {
        let t = &mut self.k.tasks[p as usize];
        if t.processor != cpu {
            t.processor = cpu;
            self.k.stats.migrations += 1;
        }
    }
}

/// The invariant of every per-CPU-queue policy: each task is on at most one queue, on the
/// queue of its `processor`, runnable (or still on its CPU); a policy's `on_rq` flag
/// agrees with the queues; and every runnable task that is not an idle task is queued.
/// `queues` yields each CPU's queue in CPU order.
pub fn check_per_cpu_queues<'q>(
    name: &str,
    k: &Kernel,
    queues: impl Iterator<Item = &'q std::collections::VecDeque<TaskId>>,
    on_rq: &[bool],
) -> Result<(), String> {
    use crate::kernel::task::TaskState;
    let mut queued = vec![false; on_rq.len()];
    for (c, q) in queues.enumerate() {
        for &p in q {
            let t = k.task(p);
            if std::mem::replace(&mut queued[p as usize], true) {
                return Err(format!("{name}: pid {} queued twice", t.pid));
            }
            if t.processor != c {
                return Err(format!(
                    "{name}: pid {} on queue {c} but processor {}",
                    t.pid, t.processor
                ));
            }
            if t.state != TaskState::Running && t.on_cpu.is_none() {
                return Err(format!("{name}: queued pid {} is {:?}", t.pid, t.state));
            }
        }
    }
    for (p, &flag) in on_rq.iter().enumerate() {
        if flag != queued[p] {
            return Err(format!(
                "{name}: on_rq flag of task {p} disagrees with the queues"
            ));
        }
        let t = k.task(p as TaskId);
        if t.state == TaskState::Running && !t.is_idle && !flag {
            return Err(format!("{name}: runnable pid {} on no queue", t.pid));
        }
    }
    Ok(())
}

/// A registered policy.
pub struct PolicyInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// One line for `schedlab list policies`.
    pub about: &'static str,
    /// Options.
    pub params: &'static [ParamSpec],
    /// Constructor from validated options.
    pub build: fn(&Params, &Machine) -> Box<dyn Policy>,
}

/// The registry, in `schedlab list policies` order: the reference policy, then the
/// schedulers in historical order.
pub static POLICIES: &[PolicyInfo] = &[
    fifo::INFO,
    linux24::INFO,
    mq::INFO,
    mq::POOL_INFO,
    hamq::INFO,
    o1::INFO_D1,
    o1::INFO_G1,
    o1::INFO_26,
];

/// Build the policy named by `spec` for `machine`.
pub fn build(spec: &Spec, machine: &Machine) -> Result<Box<dyn Policy>, SpecError> {
    let info = find(&spec.name)?;
    let params = spec::resolve("policy", spec, info.params)?;
    Ok((info.build)(&params, machine))
}

/// Look a policy up by name.
pub fn find(name: &str) -> Result<&'static PolicyInfo, SpecError> {
    POLICIES.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
        let hint = spec::closest(name, &names)
            .map(|c| format!("; did you mean '{c}'?"))
            .unwrap_or_default();
        SpecError(format!(
            "unknown policy '{name}' (accepted: {}){hint}",
            names.join(", ")
        ))
    })
}
