//! What a scheduling-class hook may see and do. Time inside a hook is the executing CPU's
//! clock, advanced by every charge, spin and lock transfer; locks are the machine's
//! spinlocks ([`crate::machine::spinlock`]), so spinning, hold times and line transfers
//! are charged by the machine model, never by the class.
//!
//! # The cost rule
//!
//! A hook pays for what its kernel touched that another CPU may have written. Every such
//! read is one [`SchedCtx::read`], every such write one [`SchedCtx::write`], and the kind
//! of what is read or written sets the price:
//! * a task weighed in a pick or as a candidate: `read(Shared::Task(p))` — its line, and
//!   the work of `goodness()`; a whole run-queue walk: `read(Walk(tasks))`;
//! * a task's line written (run-list links, counter, `processor`):
//!   `write(Shared::Task(p))`;
//! * another CPU's `curr`: `read(Curr(cpu))`, which returns it;
//! * a queue head or a published per-queue value: `read` / `write` of [`Shared::Line`]
//!   (a line the class declared with [`SchedCtx::new_line`]);
//! * 2.4's recalculation over every task: `write(Shared::TaskList)`;
//! * a lock: [`SchedCtx::lock`] / [`SchedCtx::trylock`] of a lock made by
//!   [`SchedCtx::new_lock`] (spin, atomic, line: the machine's);
//! * anything else the hook computes: [`SchedCtx::charge`].
//!
//! So the priced surface is four methods — `read`, `write`, `charge`, `new_lock` (with
//! the lock operations it makes possible) — and the kinds [`Shared`], [`Curr`], [`Walk`].
//!
//! Free reads are those where the kernel read nothing another CPU writes: the executing
//! CPU's own `curr`, the fields of a task in hand (nice, mm, affinity, `processor`, state:
//! the woken or forked task's line is the core's to price, the running task's is hot),
//! the class's own private state, and the machine's constants. [`SchedCtx::curr`],
//! [`SchedCtx::cpu_is_idle`] and [`SchedCtx::last_schedule`] of *another* CPU are free
//! only after the hook paid to reach that CPU's state — its `curr` line, a line the class
//! declared as that CPU's ([`SchedCtx::new_line`] with its CPU) read, written or locked,
//! or that CPU's own run-queue lock taken (a run-queue structure opens with its lock:
//! [`StateMap`]) — or where line reads cost nothing (no coherence model). Debug builds
//! check it at each such read and name the hook's CPU and the CPU read.
//! [`crate::kernel::sched::runlist`] prices a list-shaped run queue by this rule.

use crate::engine::{EventQueue, SimRng, Time};
use crate::kernel::sched::{IdleCpus, StateMap};
use crate::kernel::task::{Task, TaskId};
use crate::kernel::{charge, Acct, Cpu, Event, KernelStats};
use crate::machine::{Costs, CpuId, Interconnect, LineId, LockId, LockKind, Machine, SpinLock};

/// What a policy hook may see and do. Time inside a hook is the executing CPU's clock,
/// advanced by every charge, spin and lock transfer.
pub struct SchedCtx<'a> {
    tasks: &'a mut Vec<Task>,
    cpus: &'a mut Vec<Cpu>,
    idle_cpus: &'a mut IdleCpus,
    state_map: &'a mut StateMap,
    locks: &'a mut Vec<SpinLock>,
    ic: &'a mut Interconnect,
    queue: &'a mut EventQueue<Event>,
    stats: &'a mut KernelStats,
    rng: &'a mut SimRng,
    machine: &'a Machine,
    tick_ns: Time,
    cpu: CpuId,
    nr_threads: u64,
    cat: Acct,
    irq: bool,
    trace: Option<&'a mut (dyn crate::kernel::events::TraceSink + 'static)>,
    /// Time spent acquiring locks with `lock()` (spin, atomic, line transfer).
    pub(crate) lock_ns: Time,
    /// The CPUs whose state this hook paid to reach (the cost rule's debug check).
    #[cfg(debug_assertions)]
    reached: Vec<CpuId>,
}

/// Shared scheduler data a hook reads or writes by [`SchedCtx::read`] and
/// [`SchedCtx::write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shared {
    /// A task's scheduler line (run-list links, counter, state, `processor`). Read: a
    /// task weighed outside a walk (a pick, a candidate), the work of `goodness()`
    /// (`task_examine_ns`) and the read of its line, wherever it is now. Written: its
    /// links, counter or `processor` changed; other CPUs' copies are invalidated.
    Task(TaskId),
    /// A line the class named ([`SchedCtx::new_line`]): a queue head, a published value.
    Line(LineId),
    /// Every task's line in the kernel's task list, each read, recomputed
    /// (`task_examine_ns`) and written, in list order: 2.4's counter recalculation
    /// (schedulers.md §1.7 step 6, `for_each_task`). Writes only.
    TaskList,
}

/// Another CPU's `curr`, read as a kernel reads it: the read of that CPU's `curr` line,
/// written at its every switch, is charged, and the read returns the task it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Curr(pub CpuId);

/// A run-queue walk that weighs every task of its list, in order: for each, the work of
/// `goodness()` and the read of its line, each made when the walk reaches it (a run of
/// misses to memory is one paced stream on the bus, where separate [`Shared::Task`]
/// reads would each be one transfer).
pub struct Walk<I>(pub I);

/// A kind of shared data [`SchedCtx::read`] prices: what the read costs, and what it
/// finds (`Seen`).
pub trait Read {
    /// What the read returns.
    type Seen;
    /// Charge the read to `ctx`'s CPU and return what it found.
    fn read_by(self, ctx: &mut SchedCtx<'_>) -> Self::Seen;
}

impl Read for Shared {
    type Seen = ();
    #[inline(always)]
    fn read_by(self, ctx: &mut SchedCtx<'_>) {
        let now = ctx.now();
        let c = match self {
            Shared::Task(p) => ctx.costs().task_examine_ns + ctx.ic.read_task(now, ctx.cpu, p),
            Shared::Line(l) => {
                ctx.reached_line(l);
                ctx.ic.read_line(now, ctx.cpu, l)
            }
            Shared::TaskList => panic!("Shared::TaskList is written, not read"),
        };
        if c > 0 {
            ctx.charge(c);
        }
    }
}

impl Read for Curr {
    type Seen = TaskId;
    // Always inlined: 2.4's `reschedule_idle` reads every CPU's `curr`, and a call each
    // made that loop 17 % slower at 1 024 CPUs.
    #[inline(always)]
    fn read_by(self, ctx: &mut SchedCtx<'_>) -> TaskId {
        ctx.read(Shared::Line(Interconnect::curr_line(self.0)));
        ctx.idle_cpus.curr_seen(ctx.cpus, self.0, ctx.now())
    }
}

impl<I: IntoIterator<Item = TaskId, IntoIter: ExactSizeIterator>> Read for Walk<I> {
    type Seen = ();
    #[inline]
    fn read_by(self, ctx: &mut SchedCtx<'_>) {
        let now = ctx.now();
        let examine_ns = ctx.costs().task_examine_ns;
        // determinism: one charge of the walk's sum leaves the clock and the accounts as
        // the separate charges would.
        let c = ctx.ic.read_tasks(now, ctx.cpu, self.0, examine_ns);
        ctx.charge(c);
    }
}

impl<'a> SchedCtx<'a> {
    /// A context for a hook running on `cpu`, charging its work as `cat`, over the parts
    /// of the kernel a class may see.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn new(
        tasks: &'a mut Vec<Task>,
        cpus: &'a mut Vec<Cpu>,
        idle_cpus: &'a mut IdleCpus,
        state_map: &'a mut StateMap,
        locks: &'a mut Vec<SpinLock>,
        ic: &'a mut Interconnect,
        queue: &'a mut EventQueue<Event>,
        stats: &'a mut KernelStats,
        rng: &'a mut SimRng,
        machine: &'a Machine,
        tick_ns: Time,
        cpu: CpuId,
        nr_threads: u64,
        trace: Option<&'a mut (dyn crate::kernel::events::TraceSink + 'static)>,
    ) -> Self {
        SchedCtx {
            tasks,
            cpus,
            idle_cpus,
            state_map,
            locks,
            ic,
            queue,
            stats,
            rng,
            machine,
            tick_ns,
            cpu,
            nr_threads,
            cat: Acct::Sched,
            irq: false,
            trace,
            lock_ns: 0,
            #[cfg(debug_assertions)]
            reached: Vec::new(),
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
        self.cpus[self.cpu].clock
    }

    /// `jiffies` now.
    #[inline]
    pub fn jiffies(&self) -> u64 {
        self.now() / self.tick_ns
    }

    /// Tick period.
    pub fn tick_ns(&self) -> Time {
        self.tick_ns
    }

    /// The machine.
    pub fn machine(&self) -> &Machine {
        self.machine
    }

    /// The cost table.
    #[inline]
    pub fn costs(&self) -> &'static Costs {
        self.machine.costs()
    }

    /// CPUs online.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// The mm loaded on `cpu`: its current task's `active_mm` (the idle task keeps the
    /// mm of the task before it, lazy TLB). Free as [`SchedCtx::curr`] is.
    #[inline]
    pub fn active_mm(&self, cpu: CpuId) -> u32 {
        self.check_reached(cpu, "active_mm");
        self.cpus[cpu].active_mm
    }

    /// Read a task.
    #[inline]
    pub fn task(&self, p: TaskId) -> &Task {
        &self.tasks[p as usize]
    }

    /// The task running on `cpu`: free on the executing CPU; for another CPU only once
    /// the hook reached that CPU's state (the cost rule, module doc), else a read of
    /// [`Curr`].
    #[inline]
    pub fn curr(&self, cpu: CpuId) -> TaskId {
        self.check_reached(cpu, "curr");
        self.cpus[cpu].curr
    }

    /// `cpu`'s idle task.
    #[inline]
    pub fn idle_task(&self, cpu: CpuId) -> TaskId {
        self.cpus[cpu].idle
    }

    /// True when `cpu` runs its idle task: a read of its `curr`, free as
    /// [`SchedCtx::curr`] is.
    #[inline]
    pub fn cpu_is_idle(&self, cpu: CpuId) -> bool {
        self.check_reached(cpu, "cpu_is_idle");
        let c = &self.cpus[cpu];
        c.curr == c.idle
    }

    /// Time of `cpu`'s last context switch (2.4 `last_schedule`, on the line of its
    /// `curr`): free as [`SchedCtx::curr`] is.
    pub fn last_schedule(&self, cpu: CpuId) -> Time {
        self.check_reached(cpu, "last_schedule");
        self.idle_cpus.last_schedule(cpu)
    }

    /// The cost rule's debug check: a free read of another CPU's state comes after the
    /// hook paid to reach it, or where reading lines is free.
    #[inline(always)]
    fn check_reached(&self, cpu: CpuId, what: &str) {
        #[cfg(debug_assertions)]
        if cpu != self.cpu && !self.line_reads_free() {
            assert!(
                self.reached.contains(&cpu),
                "cost rule: a hook on cpu {} read cpu {cpu}'s {what} without paying to reach \
                 its state (a read of Curr, a read, a write or a lock of a line declared as \
                 cpu {cpu}'s, or its own run-queue lock)",
                self.cpu
            );
        }
        #[cfg(not(debug_assertions))]
        let _ = (cpu, what);
    }

    /// Note that taking `l` reached the state of the CPU whose line the lock lives on, or
    /// whose own run-queue lock it is.
    #[inline(always)]
    fn reached_by_lock(&mut self, l: LockId) {
        #[cfg(debug_assertions)]
        {
            if let Some(line) = self.locks[l as usize].line {
                self.reached(self.state_map.cpu_of_line(line, self.cpus.len()));
            }
            self.reached(self.state_map.cpu_of_lock(l));
        }
        #[cfg(not(debug_assertions))]
        let _ = l;
    }

    /// Note that reading or writing line `l` reached the state of the CPU it belongs to.
    #[inline(always)]
    fn reached_line(&mut self, l: LineId) {
        #[cfg(debug_assertions)]
        self.reached(self.state_map.cpu_of_line(l, self.cpus.len()));
        #[cfg(not(debug_assertions))]
        let _ = l;
    }

    /// Note that the hook paid to reach `cpu`'s state.
    #[cfg(debug_assertions)]
    fn reached(&mut self, cpu: Option<CpuId>) {
        if let Some(c) = cpu {
            if c != self.cpu && !self.reached.contains(&c) {
                self.reached.push(c);
            }
        }
    }

    /// True when `p` may run on `cpu`.
    #[inline]
    pub fn allowed(&self, p: TaskId, cpu: CpuId) -> bool {
        self.task(p).cpus_allowed.test(cpu)
    }

    /// The scheduler's random source (`sched_rng()`): a stream of the seed of its own.
    pub fn rng(&mut self) -> &mut SimRng {
        self.rng
    }

    /// Charge `ns` of work.
    #[inline]
    pub fn charge(&mut self, ns: Time) {
        charge(self.cpus, self.tasks, self.cpu, ns, self.cat);
    }

    /// Charge a read of shared scheduler data by the executing CPU, priced by its kind
    /// (the cost rule, in the module doc): a task weighed ([`Shared::Task`]), a line the
    /// class named ([`Shared::Line`]), another CPU's `curr` ([`Curr`], which returns it), a
    /// run-queue walk ([`Walk`]). What the read finds is its kind's `Seen`.
    #[inline(always)]
    pub fn read<K: Read>(&mut self, what: K) -> K::Seen {
        what.read_by(self)
    }

    /// Charge a write of shared scheduler data by the executing CPU: other CPUs' copies
    /// are invalidated. `Shared::TaskList` walks the kernel's task list
    /// ([`Interconnect::recalc_walk`], whose cost to the simulator does not grow with the
    /// tasks).
    #[inline]
    pub fn write(&mut self, what: Shared) {
        let now = self.now();
        let c = match what {
            Shared::Task(p) => self.ic.write_task(now, self.cpu, p),
            Shared::Line(l) => {
                self.reached_line(l);
                self.ic.write_line(now, self.cpu, l)
            }
            Shared::TaskList => {
                debug_assert_eq!(self.ic.listed_tasks(), self.nr_threads);
                let examine_ns = self.costs().task_examine_ns;
                // determinism: one charge of the walk's sum leaves the clock and the
                // accounts as the separate charges would.
                self.ic.recalc_walk(now, self.cpu, examine_ns)
            }
        };
        self.charge(c);
    }

    /// Tasks in the kernel's task list (`nr_threads`): what a `Shared::TaskList` write
    /// walks.
    pub fn nr_threads(&self) -> u64 {
        self.nr_threads
    }

    /// `cpu`'s current task as a read of [`Curr`] finds it where line reads are free
    /// ([`SchedCtx::line_reads_free`]): the same value, with nothing to charge.
    #[inline(always)]
    pub fn curr_seen(&self, cpu: CpuId) -> TaskId {
        debug_assert!(self.line_reads_free());
        self.idle_cpus.curr_seen(self.cpus, cpu, self.now())
    }

    /// True when the index of idle CPUs is kept ([`IdleCpus`]): for a class that uses it
    /// ([`SchedClass::uses_idle_index`](super::SchedClass::uses_idle_index)) where the walks
    /// it answers are indexable ([`SchedCtx::walks_indexable`]).
    #[inline]
    pub fn idle_indexed(&self) -> bool {
        self.idle_cpus.is_on()
    }

    /// Every CPU's `last_schedule`, in CPU order (one dense array).
    #[inline]
    pub fn last_schedules(&self) -> &[Time] {
        self.idle_cpus.last_schedules()
    }

    /// True when reading a shared line costs nothing (no coherence model): a walk that
    /// only reads lines leaves the clock where it was.
    #[inline]
    pub fn line_reads_free(&self) -> bool {
        !self.ic.model().coherence
    }

    /// True where a class's walks over every CPU may be answered by indexes: above 64
    /// CPUs without the coherence model, where a lock-free read of another CPU's line is
    /// free, so the rest of a walk that only reads is its answer.
    pub fn walks_indexable(&self) -> bool {
        IdleCpus::wanted(self.cpus.len(), self.ic.model().coherence)
    }

    /// With the index: of the CPUs a read of `curr` now finds idle, the one `ok` accepts
    /// with the smallest `(last_schedule, cpu)`, what a walk reading [`Curr`]
    /// and [`SchedCtx::last_schedule`] from CPU 0 keeping the strictly smaller finds.
    pub fn oldest_idle_seen(&self, ok: impl FnMut(CpuId) -> bool) -> Option<CpuId> {
        self.idle_cpus.oldest_seen(self.cpus, self.now(), ok)
    }

    /// With the index: of the CPUs whose newest published `curr` is idle, the one `ok`
    /// accepts with the smallest `(last_schedule, cpu)`.
    pub fn oldest_idle_latest(&self, ok: impl FnMut(CpuId) -> bool) -> Option<CpuId> {
        self.idle_cpus.oldest_latest(ok)
    }

    /// With the index: the CPUs whose newest published `curr` is idle, by
    /// `(last_schedule, cpu)` ([`IdleCpus::idle_latest`]).
    pub fn idle_cpus_latest(&self) -> impl Iterator<Item = (Time, CpuId)> + '_ {
        self.idle_cpus.idle_latest()
    }

    /// With the index: the CPUs whose newest `curr` was written after `now`.
    pub fn curr_written_after(&self, now: Time) -> impl Iterator<Item = CpuId> + '_ {
        self.idle_cpus.curr_written_after(now)
    }

    /// With the index: the CPUs a read of `curr` now finds running a real task.
    pub fn busy_cpus_seen(&self) -> usize {
        self.idle_cpus.busy_seen(self.cpus, self.now())
    }

    /// `schedule()` on the executing CPU publishes its new `curr` under the run-queue
    /// lock (2.4 `sched_data->curr = next`, 2.6 `rq->curr = next`), before the switch.
    #[inline]
    pub(crate) fn write_curr(&mut self, next: TaskId) {
        self.write(Shared::Line(Interconnect::curr_line(self.cpu)));
        let now = self.now();
        self.cpus[self.cpu].curr_seen.set(now, next);
        self.idle_cpus.note(self.cpu, &self.cpus[self.cpu]);
    }

    /// Name a shared line the class reads and writes (a list head, a published value),
    /// at `init`. `cpu`: the CPU whose scheduler state it carries (a per-CPU queue's head,
    /// `aligned_data[cpu]`), so that reading it reaches that CPU's state (the cost rule);
    /// `None` for a line of no one CPU.
    pub fn new_line(&mut self, name: &'static str, cpu: Option<CpuId>) -> LineId {
        let l = self.ic.new_line(name);
        self.state_map.declare_line(l, cpu);
        l
    }

    /// Create a lock at `init`. `line: None`: on a cache line of its own, which moves
    /// from its last holder to each acquirer. `Some(line)`: living on the named line
    /// together with the data it protects (MQ's `runqueue_lock` in the cache-line-padded
    /// `runqueue_data`, schedulers.md §3.1): acquiring it, or failing to, is a locked
    /// operation on the line, priced by the interconnect from wherever the line is (the
    /// last holder's cache, the shared copies of lock-free readers: an invalidation,
    /// memory), and the holder's reads and writes of the line are then hits. Without the
    /// coherence model such a lock follows its last holder as a lock of its own does, and
    /// the line's accesses are free as every named line's are.
    pub fn new_lock(&mut self, name: &'static str, line: Option<LineId>) -> LockId {
        self.locks.push(match line {
            Some(line) => SpinLock::on_line(name, line),
            None => SpinLock::new(name),
        });
        (self.locks.len() - 1) as LockId
    }

    /// Acquire `l`, spinning until it is free.
    #[inline]
    pub fn lock(&mut self, l: LockId) {
        let now = self.now();
        let lk = &self.locks[l as usize];
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
            charge(self.cpus, self.tasks, self.cpu, spin, Acct::Spin);
            if let Some(t) = self.trace.as_deref_mut() {
                t.event(&crate::kernel::events::KEvent::LockWait {
                    cpu: self.cpu,
                    curr: self.cpus[self.cpu].curr,
                    from: now,
                    to: start,
                    lock: lk.name,
                });
            }
        }
        if spin > 0 && self.machine.model.lock == LockKind::Ttas {
            self.ttas_handoff(l, now);
        } else {
            let xfer = self.acquire_cost(l);
            let c = self.costs().lock_ns + xfer;
            self.charge(c);
        }
        self.grant(l, spin);
        self.lock_ns += self.now() - now;
        self.reached_by_lock(l);
    }

    /// The hand-off of a test-and-test-and-set lock to this CPU, spinning since
    /// `requested`: the release invalidates every spinner's copy; each re-reads the line
    /// from the releaser, all race with `lock; decb` and the losers re-read it from the
    /// winner. The other spinners at this grant are estimated by those queued ahead of
    /// this request when it was made (in steady state an arrival sees the queue a grant
    /// leaves behind). This CPU wins after half the re-reads and its own locked op; the
    /// rest of the storm occupies the bus during its critical section.
    fn ttas_handoff(&mut self, l: LockId, requested: Time) {
        let cpu = self.cpu;
        let lk = &mut self.locks[l as usize];
        lk.queued.retain(|&g| g > requested);
        // Grants since the request estimate the spinners, but a CPU spins for one lock
        // at a time and the releaser is not spinning at the release: at most the CPUs
        // but two (an unfair TTAS lock can go to one CPU twice while this one spins).
        let others = (lk.queued.len() as u64).min(self.cpus.len().saturating_sub(2) as u64);
        let releaser = lk.last_cpu.unwrap_or(cpu);
        let release = self.now();
        let mut t = release;
        // This CPU's re-read comes after half of the others'.
        for _ in 0..=others / 2 {
            let lat = self.ic.transfer(release, Some(releaser), cpu);
            t = t.max(release + lat);
        }
        // The invalidation crosses to the releaser's bus, or with other spinners on a
        // machine of several buses to another bus (bus 1 from bus 0, else bus 0).
        let m = &self.machine;
        let remote = if m.bus_of(releaser) != m.bus_of(cpu) {
            Some(releaser)
        } else if others > 0 {
            m.layout.other_bus_cpu(cpu)
        } else {
            None
        };
        let rfo = self.ic.serve(
            t,
            cpu,
            crate::machine::interconnect::Source::Upgrade { remote },
        );
        t += rfo + self.costs().lock_ns;
        // The losers' re-reads, locked ops and re-reads again, from this CPU's cache.
        let storm = (others - others / 2) + 2 * others;
        self.ic.stream(t, storm, Some(releaser), cpu);
        let lk = &mut self.locks[l as usize];
        lk.stats.handoff_ns += t - release;
        lk.stats.spinners += others + 1;
        if let Some(line) = lk.line {
            // The transfers above were the line's: it is now this CPU's, modified, and
            // the spinners' and readers' copies are gone.
            self.ic.claim_line(cpu, line);
        }
        let c = t - release;
        self.charge(c);
    }

    /// Try to acquire `l` without spinning.
    pub fn trylock(&mut self, l: LockId) -> bool {
        let now = self.now();
        if self.locks[l as usize].is_free_at(now) {
            let xfer = self.acquire_cost(l);
            let c = self.costs().lock_ns + xfer;
            self.charge(c);
            self.grant(l, 0);
            self.reached_by_lock(l);
            true
        } else {
            // The failed atomic still pulls the lock's line over (for a lock on a line:
            // the line, taken from its holder, who pays to get it back).
            let xfer = self.acquire_cost(l);
            let c = self.costs().lock_ns + xfer;
            self.charge(c);
            self.locks[l as usize].stats.trylock_failures += 1;
            false
        }
    }

    /// The locked operation's line coming to this CPU: for a lock on a named line, the
    /// line's read-for-ownership in the directory ([`Interconnect::lock_line`]); for a
    /// lock of its own, or without the coherence model, the line from its last holder
    /// ([`SchedCtx::transfer_cost`]).
    #[inline]
    fn acquire_cost(&mut self, l: LockId) -> Time {
        match self.locks[l as usize].line {
            Some(line) if self.machine.model.coherence => {
                let now = self.now();
                self.ic.lock_line(now, self.cpu, line)
            }
            _ => self.transfer_cost(l),
        }
    }

    /// The lock's line moving from its last holder to this CPU, on the buses.
    #[inline]
    fn transfer_cost(&mut self, l: LockId) -> Time {
        match self.locks[l as usize].last_cpu {
            Some(o) if o != self.cpu => {
                let now = self.now();
                self.ic.transfer(now, Some(o), self.cpu)
            }
            _ => 0,
        }
    }

    #[inline]
    fn grant(&mut self, l: LockId, spin: Time) {
        let now = self.now();
        let cpu = self.cpu;
        let lk = &mut self.locks[l as usize];
        if lk.queued.len() >= 64 {
            lk.queued.pop_front();
        }
        lk.queued.push_back(now);
        lk.holder = Some(cpu);
        self.cpus[cpu].locks_held += 1;
        lk.granted_at = now;
        lk.stats.acquisitions += 1;
        if spin > 0 {
            lk.stats.contended += 1;
            lk.stats.wait_ns += spin;
        }
    }

    /// Release `l`.
    #[inline]
    pub fn unlock(&mut self, l: LockId) {
        let now = self.now();
        let cpu = self.cpu;
        let lk = &mut self.locks[l as usize];
        assert_eq!(
            lk.holder,
            Some(cpu),
            "unlock of {} by cpu {cpu} which does not hold it",
            lk.name
        );
        // The release store of a lock on a line needs no pricing: its holder took the
        // line for ownership and kept it (a hook runs atomically), so it is a hit.
        debug_assert!(
            !self.machine.model.coherence
                || lk
                    .line
                    .is_none_or(|line| self.ic.line_owner(line) == Some(cpu)),
            "{} released by cpu {cpu} without its line",
            lk.name
        );
        lk.stats.hold_ns += now - lk.granted_at;
        lk.free_at = now;
        lk.holder = None;
        lk.last_cpu = Some(cpu);
        self.cpus[cpu].locks_held -= 1;
    }

    /// True when the executing CPU holds `l` (for `debug_assert!`s).
    #[inline]
    pub fn holds(&self, l: LockId) -> bool {
        self.locks[l as usize].holder == Some(self.cpu)
    }

    /// Set `need_resched` on `cpu`'s current task and, for another CPU, send a reschedule
    /// IPI unless one is already pending (the flag was set) or the idle loop polls.
    #[inline]
    pub fn resched_cpu(&mut self, cpu: CpuId) {
        let curr = self.cpus[cpu].curr;
        self.resched_task(cpu, curr);
    }

    /// Kick `cpu`'s idle loop: set its idle task's `need_resched` and, for another CPU
    /// that does not poll, send a reschedule IPI unless the flag was already set (2.4's
    /// `reschedule_idle` on an idle CPU). Unlike [`SchedCtx::resched_cpu`], a task the
    /// CPU picked meanwhile is left alone: the IPI finds it running and changes nothing.
    pub fn resched_idle(&mut self, cpu: CpuId) {
        let idle = self.cpus[cpu].idle;
        self.resched_task(cpu, idle);
    }

    /// Trace a sched_ext dispatch-queue move of `p` (`op`, the queue's id `dsq`).
    pub fn trace_dsq(&mut self, p: TaskId, op: &'static str, dsq: u64) {
        if let Some(t) = self.trace.as_deref_mut() {
            t.event(&crate::kernel::events::KEvent::Dsq {
                cpu: self.cpu,
                curr: self.cpus[self.cpu].curr,
                ts: self.cpus[self.cpu].clock,
                p,
                op,
                dsq,
            });
        }
    }

    /// Leave `cpu`'s idle loop a reason to schedule, without an IPI: for a CPU seen busy
    /// by a hook that, in the kernel, would have waited on that CPU's run-queue lock and
    /// found it idle (sched_ext's remote dispatches and kicks take the target's lock; here
    /// the target may be between its pick and its switch to idle). Harmless if it stays
    /// busy: its idle loop, when next entered, schedules once more.
    pub fn resched_idle_later(&mut self, cpu: CpuId) {
        let idle = self.cpus[cpu].idle;
        let t = &mut self.tasks[idle as usize];
        if !t.need_resched {
            t.need_resched = true;
            t.need_resched_at = self.cpus[self.cpu].clock;
        }
    }

    /// `resched_task(t)` of `t` on `cpu` (2.4 and 2.6 alike).
    #[inline]
    fn resched_task(&mut self, cpu: CpuId, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        let was_set = task.need_resched;
        task.need_resched = true;
        if cpu == self.cpu || was_set {
            return;
        }
        task.need_resched_at = self.cpus[self.cpu].clock;
        if self.costs().idle_poll && self.tasks[t as usize].is_idle {
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
        self.stats.ipis += 1;
        if let Some(t) = self.trace.as_deref_mut() {
            t.event(&crate::kernel::events::KEvent::Ipi {
                cpu: self.cpu,
                curr: self.cpus[self.cpu].curr,
                ts: self.cpus[self.cpu].clock,
                target: cpu,
            });
        }
        let at = self.now() + costs.ipi_latency_ns;
        self.queue.push(at, Event::Ipi { cpu: cpu as u16 });
    }

    /// Set `p`'s affinity mask (the core's `sched_setaffinity`).
    pub(crate) fn set_cpus_allowed(&mut self, p: TaskId, mask: crate::machine::CpuMask) {
        self.tasks[p as usize].cpus_allowed = mask;
    }

    /// Note that `p` left `cpu` for its affinity and must be placed after the switch.
    pub(crate) fn set_migrate(&mut self, cpu: CpuId, p: TaskId) {
        self.cpus[cpu].migrate = Some(p);
        self.stats.affinity_moves += 1;
    }

    /// Schedstats of a wake-up of `p` (`ttwu_stat`), last on `old`, placed on `cpu` by the
    /// executing CPU; a fork counts no wake-up. Returns the task running on `cpu` when the
    /// class is about to be asked whether to preempt it (`None` when `cpu` is idle).
    /// Bookkeeping of the model, not a read the kernel pays for.
    pub(crate) fn schedstat_wakeup(
        &mut self,
        p: TaskId,
        old: CpuId,
        cpu: CpuId,
        wake: super::Wake,
    ) -> Option<(TaskId, bool)> {
        let curr = self.cpus[cpu].curr;
        let busy = curr != self.cpus[cpu].idle && curr != p;
        let asked = busy.then(|| (curr, self.tasks[curr as usize].need_resched));
        let s = &mut self.tasks[p as usize].stats.sched;
        if !wake.fork {
            s.nr_wakeups += 1;
            s.nr_wakeups_sync += wake.sync as u64;
            s.nr_wakeups_migrate += (cpu != old) as u64;
            if cpu == self.cpu {
                s.nr_wakeups_local += 1;
            } else {
                s.nr_wakeups_remote += 1;
            }
        }
        if asked.is_some() {
            s.nr_wakeup_preempt_attempts += 1;
        }
        asked
    }

    /// After `wakeup_preempt`: whether it rescheduled the task that ran (see
    /// [`SchedCtx::schedstat_wakeup`]).
    pub(crate) fn schedstat_wakeup_preempt(&mut self, p: TaskId, asked: Option<(TaskId, bool)>) {
        if let Some((curr, was_set)) = asked {
            if !was_set && self.tasks[curr as usize].need_resched {
                self.tasks[p as usize].stats.sched.nr_wakeup_preempts += 1;
            }
        }
    }

    /// The fair class's `wake_affine` for `p` (`nr_wakeups_affine_attempts`) and whether
    /// it chose the waker's CPU (`nr_wakeups_affine`).
    pub fn schedstat_wake_affine(&mut self, p: TaskId, affine: bool) {
        let s = &mut self.tasks[p as usize].stats.sched;
        s.nr_wakeups_affine_attempts += 1;
        s.nr_wakeups_affine += affine as u64;
    }

    /// The task `cpu`'s last `schedule()` took off for its affinity, if any.
    pub(crate) fn take_migrate(&mut self, cpu: CpuId) -> Option<TaskId> {
        self.cpus[cpu].migrate.take()
    }

    /// Move `p` to `cpu`'s run queue (2.4 `p->processor = cpu`, 2.5 `set_task_cpu`).
    #[inline]
    pub fn set_task_cpu(&mut self, p: TaskId, cpu: CpuId) {
        let t = &mut self.tasks[p as usize];
        if t.processor != cpu {
            let from = t.processor;
            t.processor = cpu;
            t.stats.sched.nr_migrations += 1;
            self.stats.migrations += 1;
            if let Some(tr) = self.trace.as_deref_mut() {
                tr.event(&crate::kernel::events::KEvent::Migrate {
                    cpu: self.cpu,
                    ts: self.cpus[self.cpu].clock,
                    p,
                    from,
                    to: cpu,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Curr, SchedCtx, Shared, Walk};
    use crate::kernel::sched::testbed::Bed;
    use crate::machine::{CpuId, LineId};

    fn fifo_bed(machine: &str) -> Bed<Box<dyn crate::policy::SchedClass>> {
        let fifo = crate::policy::build_named("fifo", "piii700-1m", 8).expect("fifo");
        Bed::new(machine, 8, fifo)
    }

    /// CPU 0 holds a lock for 20 µs; CPUs 1..=n request it 1 µs into the hold, in CPU
    /// order. Returns each requester's hand-off: grant minus the previous release.
    fn handoffs(machine: &str, n: usize) -> Vec<u64> {
        handoffs_of(machine, n, false).0
    }

    /// [`handoffs`] of a lock of its own, or (`on_line`) of a lock on a named line; with
    /// the line and its owner at the end.
    fn handoffs_of(machine: &str, n: usize, on_line: bool) -> (Vec<u64>, LineId, Option<CpuId>) {
        let mut bed = fifo_bed(machine);
        let (l, line) = bed.with(0, |_, ctx| {
            let line = ctx.new_line("test_data", None);
            let l = if on_line {
                ctx.new_lock("test_lock", Some(line))
            } else {
                ctx.new_lock("test_lock", None)
            };
            (l, line)
        });
        bed.at(1_000_000);
        bed.with(0, |_, ctx| {
            ctx.lock(l);
            ctx.charge(20_000);
            ctx.unlock(l);
        });
        let mut out = Vec::new();
        for cpu in 1..=n {
            let released = bed.k.locks[l as usize].free_at;
            let c = &mut bed.k.cpus[cpu];
            c.clock = c.clock.max(1_001_000);
            bed.with(cpu, |_, ctx| {
                ctx.lock(l);
                out.push(ctx.now() - released);
                ctx.charge(1_000);
                ctx.unlock(l);
            });
        }
        (out, line, bed.k.ic.line_owner(line))
    }

    /// What `op` costs on `cpu` at 2 µs past the latest clock (each operation on a quiet
    /// machine, in order).
    fn cost<C: crate::policy::SchedClass>(
        bed: &mut Bed<C>,
        cpu: CpuId,
        op: impl FnOnce(&mut SchedCtx<'_>),
    ) -> u64 {
        let t = bed.k.cpus.iter().map(|c| c.clock).max().unwrap_or(0) + 2_000;
        bed.at(t);
        bed.with(cpu, |_, ctx| {
            op(ctx);
            ctx.now() - t
        })
    }

    /// A bed of 2 CPUs with the coherence model and `n` tasks whose lines CPU 0 wrote last.
    fn written_on_0(n: usize) -> (Bed<Box<dyn crate::policy::SchedClass>>, Vec<u32>) {
        let fifo = crate::policy::build_named("fifo", "piii700-1m", 2).expect("fifo");
        let mut bed = Bed::new("piii700-1m:bus=off", 2, fifo);
        let tasks: Vec<u32> = (0..n).map(|i| bed.task(0, 1 + i as u32, 0)).collect();
        for &p in &tasks {
            cost(&mut bed, 0, |ctx| ctx.write(Shared::Task(p)));
        }
        (bed, tasks)
    }

    #[test]
    fn a_weighed_task_costs_its_goodness_and_its_line_from_wherever_it_is() {
        let (mut bed, t) = written_on_0(1);
        let c = bed.with(0, |_, ctx| ctx.costs());
        let examine = c.task_examine_ns;
        let remote = cost(&mut bed, 1, |ctx| ctx.read(Shared::Task(t[0])));
        let hit = cost(&mut bed, 1, |ctx| ctx.read(Shared::Task(t[0])));
        assert_eq!(
            hit,
            examine + c.l2_line_ns,
            "a line held here: goodness() and a hit"
        );
        assert!(
            remote > examine,
            "modified on CPU 0: a transfer on top ({remote} ns)"
        );
    }

    #[test]
    fn a_walk_weighs_every_task_and_costs_what_its_reads_cost() {
        let (mut bed, t) = written_on_0(4);
        let c = bed.with(0, |_, ctx| ctx.costs());
        let first = cost(&mut bed, 1, |ctx| ctx.read(Walk(t.iter().copied())));
        let again = cost(&mut bed, 1, |ctx| ctx.read(Walk(t.iter().copied())));
        let hits = 4 * (c.task_examine_ns + c.l2_line_ns);
        assert_eq!(
            again, hits,
            "four lines held here: four goodness() and four hits"
        );
        assert!(
            first > again,
            "four lines from CPU 0's cache: {first} vs {again} ns"
        );
        let none = cost(&mut bed, 1, |ctx| ctx.read(Walk(std::iter::empty())));
        assert_eq!(none, 0, "an empty queue's walk weighs nothing");
    }

    #[test]
    fn a_read_of_curr_returns_the_task_and_pays_for_the_line_it_reaches() {
        let (mut bed, t) = written_on_0(1);
        bed.switch_to(0, t[0]);
        let mut seen = None;
        let remote = cost(&mut bed, 1, |ctx| {
            seen = Some(ctx.read(Curr(0)));
            // Reached: CPU 0's free reads are now allowed (the debug check).
            assert!(!ctx.cpu_is_idle(0));
            assert_eq!(ctx.curr(0), t[0]);
        });
        assert_eq!(seen, Some(t[0]));
        let hit = cost(&mut bed, 1, |ctx| {
            ctx.read(Curr(0));
        });
        assert!(
            remote > hit,
            "the line of CPU 0's curr came from CPU 0: {remote} vs {hit}"
        );
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "cost rule: a hook on cpu 1 read cpu 0's cpu_is_idle")]
    fn a_free_read_of_another_cpu_before_reaching_it_is_caught() {
        let (mut bed, _) = written_on_0(0);
        bed.with(1, |_, ctx| ctx.cpu_is_idle(0));
    }

    #[test]
    fn a_lock_on_a_line_moves_the_line_a_lock_of_its_own_follows_its_holder() {
        // See: schedulers.md §3.1 (`runqueue_data` holds `runqueue_lock`).
        for machine in ["piii700-1m:bus=off", "piii700-1m:bus=off,coherence=off"] {
            let coherence = !machine.contains("coherence=off");
            let mut bed = fifo_bed(machine);
            let c = bed.with(0, |_, ctx| ctx.costs());
            let (own, on, line) = bed.with(0, |_, ctx| {
                let line = ctx.new_line("test_data", None);
                (
                    ctx.new_lock("own", None),
                    ctx.new_lock("on", Some(line)),
                    line,
                )
            });
            let take = |l| {
                move |ctx: &mut SchedCtx<'_>| {
                    ctx.lock(l);
                    ctx.unlock(l);
                }
            };
            let accesses = |bed: &Bed<_>| bed.k.ic.stats.line_accesses;
            // A lock of its own: free the first time, then a line from its last holder,
            // and no directory access ever (as before locks could live on a line).
            let before = accesses(&bed);
            assert_eq!(cost(&mut bed, 0, take(own)), c.lock_ns);
            assert_eq!(cost(&mut bed, 1, take(own)), c.lock_ns + c.c2c_line_ns);
            assert_eq!(
                cost(&mut bed, 4, |ctx| assert!(ctx.trylock(own))) - c.lock_ns,
                c.c2c_cross_bus_line_ns
            );
            bed.with(4, |_, ctx| ctx.unlock(own));
            assert_eq!(cost(&mut bed, 4, take(own)), c.lock_ns);
            assert_eq!(accesses(&bed), before, "{machine}");

            // A lock on a line: the line's read-for-ownership, from wherever it is.
            let first = cost(&mut bed, 0, take(on));
            let read = cost(&mut bed, 2, |ctx| ctx.read(Shared::Line(line)));
            let upgrade = cost(&mut bed, 0, take(on));
            let moved = cost(&mut bed, 1, take(on));
            let write = cost(&mut bed, 1, |ctx| {
                ctx.lock(on);
                ctx.write(Shared::Line(line));
                ctx.unlock(on);
            });
            let cross = cost(&mut bed, 4, |ctx| assert!(ctx.trylock(on)));
            bed.with(4, |_, ctx| ctx.unlock(on));
            if coherence {
                assert_eq!(first, c.lock_ns + c.mem_latency_ns, "from memory");
                assert_eq!(read, c.c2c_line_ns, "a lock-free reader pulls it");
                // Shared by CPUs 0 and 2 (one bus): CPU 0's copy is good, CPU 2's is
                // invalidated, no data moves.
                assert_eq!(upgrade, c.lock_ns + c.upgrade_ns);
                assert_eq!(moved, c.lock_ns + c.c2c_line_ns, "from its last holder");
                // Re-taken by its last holder: the atomic alone; its write is a hit.
                assert_eq!(write, c.lock_ns + c.l2_line_ns);
                assert_eq!(cross, c.lock_ns + c.c2c_cross_bus_line_ns);
                assert_eq!(bed.k.ic.line_owner(line), Some(4));
            } else {
                // Without coherence: as a lock of its own, and the line costs nothing.
                assert_eq!(first, c.lock_ns);
                assert_eq!(read, 0);
                assert_eq!(upgrade, c.lock_ns);
                assert_eq!(moved, c.lock_ns + c.c2c_line_ns);
                assert_eq!(write, c.lock_ns);
                assert_eq!(cross, c.lock_ns + c.c2c_cross_bus_line_ns);
            }
        }
    }

    #[test]
    fn a_ttas_hand_off_of_a_lock_on_a_line_leaves_the_line_at_the_winner() {
        for n in [1, 3] {
            let (own, _, _) = handoffs_of("piii700-1m:bus=off", n, false);
            let (on, _, owner) = handoffs_of("piii700-1m:bus=off", n, true);
            // The hand-offs are the TTAS model's, the line the lock's.
            assert_eq!(own, on, "{n} requesters");
            assert_eq!(owner, Some(n), "the last winner holds the line");
        }
    }

    #[test]
    fn a_ttas_hand_off_counts_no_more_spinners_than_cpus() {
        // 4 CPUs. The spinners at a grant are estimated by the grants made since the
        // request; with the CPUs' clocks apart, ten can be on record (here put there by
        // hand). At the grant at most CPUs 1 and 2 spin besides CPU 3: CPU 0 releases.
        let fifo = crate::policy::build_named("fifo", "piii700-4way-1m", 4).expect("fifo");
        let mut bed = Bed::new("piii700-4way-1m:bus=off", 4, fifo);
        let l = bed.with(0, |_, ctx| ctx.new_lock("test_lock", None));
        bed.at(1_000_000);
        bed.with(0, |_, ctx| {
            ctx.lock(l);
            ctx.charge(20_000);
            ctx.unlock(l);
        });
        let lk = &mut bed.k.locks[l as usize];
        lk.queued.extend((1..=10).map(|k| 1_001_000 + k));
        let before = lk.stats.spinners;
        bed.k.cpus[3].clock = 1_001_000;
        bed.with(3, |_, ctx| {
            ctx.lock(l);
            ctx.unlock(l);
        });
        let spinners = bed.k.locks[l as usize].stats.spinners - before;
        assert_eq!(spinners, 3, "CPU 3 and two others, not 11");
    }

    #[test]
    fn a_ttas_hand_off_grows_with_the_spinners_a_ticket_one_does_not() {
        // CPUs 1-3 share CPU 0's bus: only the spinners differ from one hand-off to the
        // next.
        let ttas = handoffs("piii700-1m:bus=off", 3);
        let ticket = handoffs("piii700-1m:bus=off,lock=ticket", 3);
        // Ticket: the atomic and one line transfer, whoever waits behind.
        assert!(ticket.windows(2).all(|w| w[0] == w[1]), "{ticket:?}");
        // TTAS: every hand-off costs more than a ticket's, and more with more spinners
        // queued ahead when the request was made.
        for (a, b) in ttas.iter().zip(&ticket) {
            assert!(a > b, "ttas {ttas:?} ticket {ticket:?}");
        }
        assert!(ttas.windows(2).all(|w| w[0] <= w[1]), "{ttas:?}");
        assert!(ttas[2] > ttas[0], "{ttas:?}");
        // Across the buses a hand-off costs more (CPU 4 is on the second bus).
        let cross = handoffs("piii700-1m:bus=off,lock=ticket", 4);
        assert!(cross[3] > cross[2], "{cross:?}");
    }

    #[test]
    fn the_storm_of_a_hand_off_loads_the_bus() {
        let quiet = handoffs("piii700-1m:bus=off", 6);
        let loaded = handoffs("piii700-1m", 6);
        assert!(loaded.iter().sum::<u64>() > quiet.iter().sum::<u64>());
    }
}
