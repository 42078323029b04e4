//! `hamq`: Kravetz's quick multi-queue scheduler made from the 2.5.2-pre9 scheduler
//! ("haMQ", January 2002) — a **reconstruction**.
//!
//! No source survives (the patch was at `lse.sourceforge.net/scheduling/2.5.2-pre9-hamq`;
//! schedulers.md §3.6 "\[NOT FOUND\]"). What is known (benchmarks.md §0, system.md finding
//! 3): it had per-CPU run queues, **no load balancing**, and it **aggressively keeps CPUs
//! from going idle**; like O(1) it runs a woken task on another (idle) CPU, so a 2-task
//! token ping-pong pays a cross-CPU wake-up every hop (reflex, 2 tasks: ≈ 2× slower than
//! 2.4). Kravetz described his next step after MQ as "a more traditional multi-queue model
//! where most decisions are made at a local (per-CPU) level" (S9).
//!
//! # Theory (the simplest design matching that description) \[INFERRED throughout\]
//!
//! * One queue and one `runqueue_lock` per CPU; a task belongs to the queue of its
//!   `processor`; the running task stays on its queue, as in 2.4.
//! * `schedule()` on CPU c is pre9's `schedule()` restricted to c's queue: 2.4
//!   `goodness()` (counter + 20 − nice, +1 same mm, +PROC_CHANGE_PENALTY same CPU — the
//!   latter is the same for every local task), ties to the task nearest the head, the
//!   global counter recalculation when the best is 0.
//! * **Idle pull** — the "aggressive" part: when c's queue offers nothing, before idling c
//!   takes one waiting task from the busy CPU with the most tasks waiting behind its
//!   running one (lock-free peek at the counts, ties to the lower CPU; a task queued on an
//!   idle CPU is left to that CPU, which was kicked to run it; `spin_trylock` since c's own lock is held; the
//!   best-goodness waiting task allowed on c). A failed trylock moves on to the next
//!   queue; if every candidate failed the scan is repeated.
//! * **Wake-up placement**: a sync wake-up of a task allowed here queues it on the
//!   waker's CPU without a kick (the waker is about to sleep); otherwise the task's last
//!   CPU if idle, else **the longest-idle CPU anywhere** (the task moves), else its last
//!   CPU, kicking it if the task's goodness beats the running task's. No preemption of
//!   other CPUs (decisions are local).
//! * A task preempted while runnable (`__schedule_tail`) moves to an idle CPU if there is
//!   one.
//! * No periodic balancing.
//! * One cache line per queue, as MQ's `runqueue_data` (schedulers.md §3.1): its list
//!   head, counts and `runqueue_lock` ([`SchedCtx::new_lock`] with its line), a directory line of
//!   the interconnect. The lock-free peeks at other queues read it; locking a queue, or
//!   failing a trylock of it, takes it for ownership.
//!
//! Above 64 CPUs without the coherence model, where the lock-free reads of the other
//! queues' lines are free, the host does not repeat the walks over every queue: the
//! kernel's index of idle CPUs ([`SchedCtx::oldest_idle_latest`]) answers the placement,
//! `pull_order` keeps the idle pull's candidates in the order it tries them, and the
//! totals `queued` and `running` give `sys_sched_yield`'s count. The answers are the
//! walks' (tests below compare them on random runs).
//!
//! Counters: `idle_pulls` (tasks taken by an idle-bound CPU), `wake_moves` (woken tasks
//! sent to another idle CPU), `tail_moves` (preempted tasks sent to an idle CPU),
//! `recalculations`.
//!
//! Invariants: a runnable task is on exactly the queue of its `processor`; a queued task
//! is runnable or is the current task about to leave; `running_non_idle` of a CPU is
//! whether its newest published `curr` is a real task; `queued` and `running` are the
//! sums of the queues' lengths and of `running_non_idle`; with the index, `pull_order`
//! holds `(Reverse(nr_waiting), c)` of exactly the queues with a running task and a
//! waiting one.

use crate::kernel::sched::Shared;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::Kernel;
use crate::machine::{CpuId, LineId, LockId, Machine};
use crate::spec::Params;

use super::sched24::{Core24, GoodnessRules, MIN_GOODNESS};
use super::{PolicyInfo, SchedClass, SchedCtx, Wake, WakeOrder};

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "hamq",
    about: "Kravetz's quick multi-queue from 2.5.2-pre9 (reconstruction): per-CPU 2.4 queues, idle pull, no balancing",
    params: PARAMS,
    build,
};

crate::options! {
    /// Options of `hamq`.
    pub struct Options in PARAMS {
        /// Timer frequency.
        hz: u32 = hz("100").source("2.5.2-pre9 i386: 100 (schedulers.md §1.1)");
        /// PROC_CHANGE_PENALTY.
        pcp: i32 = int("15", 0, 1000)
            .unit("goodness points")
            .help("PROC_CHANGE_PENALTY: goodness bonus for staying on the last CPU")
            .source("schedulers.md §1.4 (i386: 15)");
        /// Honour `__wake_up_sync`.
        sync_wakeups: bool = sync_wakeups("on")
            .help("a sync wake-up queues the task on the waker's CPU without a kick")
            .source("model choice [INFERRED]: as 2.4, which haMQ was built from");
    }
}

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    let o = Options::from_params(p);
    let rules = GoodnessRules {
        pcp: o.pcp,
        kthread_mm_bonus: false,
    };
    Ok(Box::new(Hamq {
        core: Core24::new(o.hz, rules),
        sync_wakeups: o.sync_wakeups,
        wake_kick: Kick::No,
        options: p.to_map(),
        rq: Vec::new(),
        ts: Vec::new(),
        queued: 0,
        running: 0,
        indexed: false,
        pull_order: BTreeSet::new(),
        idle_pulls: 0,
        wake_moves: 0,
        tail_moves: 0,
        recalculations: 0,
    }))
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskSched {
    on_rq: bool,
}

/// How an idle pull's tries ended.
enum Pull {
    /// This task, from this queue (left locked).
    Took(TaskId, CpuId),
    /// Nothing taken; this many trylocks failed.
    Failed(u32),
}

/// What the wake-up in progress does to its target CPU (decided in `select_task_rq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kick {
    /// Nothing: a sync wake-up (the waker is about to sleep).
    No,
    /// Kick it: it is idle.
    Yes,
    /// Kick it if the task's goodness beats its current task's.
    IfPreempts,
}

struct RunQueue {
    list: VecDeque<TaskId>,
    /// The CPU runs a task other than idle (`nr_waiting = len − running_non_idle`).
    running_non_idle: bool,
    /// The queue's cache line: its list head, counts and lock.
    line: LineId,
    /// `runqueue_lock`, living on `line`.
    lock: LockId,
    /// Its entry in `Hamq::pull_order`, if any.
    pull_key: Option<usize>,
}

struct Hamq {
    /// Counters, yield bits and the goodness arithmetic, as 2.4.
    core: Core24,
    sync_wakeups: bool,
    wake_kick: Kick,
    options: BTreeMap<String, String>,
    rq: Vec<RunQueue>,
    ts: Vec<TaskSched>,
    /// Tasks on all queues.
    queued: usize,
    /// CPUs with `running_non_idle`.
    running: usize,
    /// The walks over every queue are answered by indexes (module doc).
    indexed: bool,
    /// With the index: `(Reverse(nr_waiting), cpu)` of each queue an idle pull may take
    /// from, in the order it tries them.
    pull_order: BTreeSet<(Reverse<usize>, CpuId)>,
    idle_pulls: u64,
    wake_moves: u64,
    tail_moves: u64,
    recalculations: u64,
}

impl Hamq {
    fn nr_waiting(&self, c: CpuId) -> usize {
        self.rq[c].list.len() - usize::from(self.rq[c].running_non_idle)
    }

    /// Queue `c`'s waiting tasks, if an idle pull may take from it: a task waits
    /// behind a running one.
    fn pull_key(&self, c: CpuId) -> Option<usize> {
        let q = &self.rq[c];
        // Within `schedule()` a sleeping task leaves the queue before its CPU stops
        // running it, so the length may for a moment be short of the running task.
        let waiting = q.list.len().saturating_sub(usize::from(q.running_non_idle));
        (q.running_non_idle && waiting > 0).then_some(waiting)
    }

    /// Queue `c`'s length or running task changed: its place in `pull_order`.
    fn repull(&mut self, c: CpuId) {
        if !self.indexed {
            return;
        }
        let key = self.pull_key(c);
        let q = &self.rq[c];
        if key != q.pull_key {
            if let Some(w) = q.pull_key {
                self.pull_order.remove(&(Reverse(w), c));
            }
            if let Some(w) = key {
                self.pull_order.insert((Reverse(w), c));
            }
            self.rq[c].pull_key = key;
        }
    }

    /// Set whether CPU `c` runs a real task.
    fn set_running(&mut self, c: CpuId, busy: bool) {
        let was = std::mem::replace(&mut self.rq[c].running_non_idle, busy);
        self.running = self.running + usize::from(busy) - usize::from(was);
        self.repull(c);
    }

    /// Lock queue `c`: the lock's line is the queue's, so its counts come with it.
    fn rq_lock(&mut self, ctx: &mut SchedCtx<'_>, c: CpuId) {
        ctx.lock(self.rq[c].lock);
    }

    fn enqueue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, head: bool) {
        let c = ctx.task(p).processor;
        debug_assert!(ctx.holds(self.rq[c].lock));
        if head {
            self.rq[c].list.push_front(p);
        } else {
            self.rq[c].list.push_back(p);
        }
        self.ts[p as usize].on_rq = true;
        self.queued += 1;
        self.repull(c);
        ctx.write(Shared::Line(self.rq[c].line));
    }

    fn dequeue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let c = ctx.task(p).processor;
        debug_assert!(ctx.holds(self.rq[c].lock));
        let q = &mut self.rq[c].list;
        let i = q
            .iter()
            .position(|&t| t == p)
            .expect("hamq: task not queued");
        q.remove(i);
        self.ts[p as usize].on_rq = false;
        self.queued -= 1;
        self.repull(c);
        ctx.write(Shared::Line(self.rq[c].line));
    }

    /// The longest-idle CPU `p` may use (2.4's smallest `last_schedule`), lock-free.
    fn idle_cpu(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) -> Option<CpuId> {
        if self.indexed {
            // A CPU without a running task has published its idle task, so it is in the
            // index (the invariant `check` verifies).
            return ctx.oldest_idle_latest(|c| {
                ctx.allowed(p, c) && !self.rq[c].running_non_idle && ctx.cpu_is_idle(c)
            });
        }
        let mut best: Option<CpuId> = None;
        for c in 0..self.rq.len() {
            if c != ctx.cpu() {
                ctx.read(Shared::Line(self.rq[c].line));
            }
            if ctx.allowed(p, c)
                && !self.rq[c].running_non_idle
                && ctx.cpu_is_idle(c)
                && best.is_none_or(|b| ctx.last_schedule(c) < ctx.last_schedule(b))
            {
                best = Some(c);
            }
        }
        best
    }

    fn recalculate(&mut self, ctx: &mut SchedCtx<'_>) {
        self.recalculations += 1;
        self.core.recalculate(ctx);
    }

    /// Best local task by 2.4 goodness (ties: nearest the head).
    fn scan(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> (TaskId, i32) {
        let mm = ctx.active_mm(cpu);
        let mut next = ctx.idle_task(cpu);
        let mut c = MIN_GOODNESS;
        let q = &self.rq[cpu].list;
        for &p in q {
            ctx.read(Shared::Task(p));
            let t = ctx.task(p);
            if !ctx.allowed(p, cpu) || t.on_cpu.is_some_and(|o| o != cpu) {
                continue;
            }
            let w = self.core.goodness(ctx, p, cpu, mm);
            if w > c {
                c = w;
                next = p;
            }
        }
        (next, c)
    }

    /// Idle pull: take one waiting task for `cpu`, whose lock is held.
    fn idle_pull(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> Option<TaskId> {
        let n = self.rq.len();
        let mut cand: Vec<(usize, CpuId)> = Vec::new();
        loop {
            let tries = if self.indexed {
                // The reads are free: the candidates, in the walk's order, are kept.
                let order = self.pull_order.iter().map(|&(_, r)| r);
                self.try_pull(ctx, cpu, order.filter(|&r| r != cpu))
            } else {
                cand.clear();
                for r in 0..n {
                    if r == cpu {
                        continue;
                    }
                    ctx.read(Shared::Line(self.rq[r].line));
                    // Only tasks waiting behind a running task: a queued task of an idle
                    // CPU belongs to a CPU that was just kicked to run it.
                    if let Some(w) = self.pull_key(r) {
                        cand.push((w, r));
                    }
                }
                // determinism: most waiting first, then the lower CPU.
                cand.sort_by_key(|&(w, r)| (Reverse(w), r));
                self.try_pull(ctx, cpu, cand.iter().map(|&(_, r)| r))
            };
            match tries {
                Pull::Took(p, r) => {
                    self.take(ctx, p, r, cpu);
                    return Some(p);
                }
                // Every candidate's lock taken and nothing to take, or none at all.
                Pull::Failed(0) => return None,
                // Some trylock failed: look again.
                Pull::Failed(_) => {}
            }
        }
    }

    /// Try the candidate queues in order: `spin_trylock` each, and take the first whose
    /// waiting task may run on `cpu` (its queue left locked).
    fn try_pull(
        &self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        candidates: impl Iterator<Item = CpuId>,
    ) -> Pull {
        let mut failed = 0;
        for r in candidates {
            if !ctx.trylock(self.rq[r].lock) {
                failed += 1;
                continue;
            }
            if let Some(p) = self.best_to_pull(ctx, r, cpu) {
                return Pull::Took(p, r);
            }
            ctx.unlock(self.rq[r].lock);
        }
        Pull::Failed(failed)
    }

    /// The waiting task of queue `r` (locked) an idle pull for `cpu` takes: the best by
    /// goodness for `cpu`, the first on ties.
    fn best_to_pull(&self, ctx: &mut SchedCtx<'_>, r: CpuId, cpu: CpuId) -> Option<TaskId> {
        let mut best: Option<(TaskId, i32)> = None;
        for &p in &self.rq[r].list {
            ctx.read(Shared::Task(p));
            if ctx.task(p).on_cpu.is_none() && ctx.allowed(p, cpu) {
                let w = self.core.goodness(ctx, p, cpu, ctx.active_mm(cpu));
                if best.is_none_or(|(_, b)| w > b) {
                    best = Some((p, w));
                }
            }
        }
        best.map(|(p, _)| p)
    }

    /// Move `p` from queue `r` (locked) to `cpu`'s, at its head, and unlock `r`.
    fn take(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, r: CpuId, cpu: CpuId) {
        self.dequeue(ctx, p);
        ctx.set_task_cpu(p, cpu);
        self.enqueue(ctx, p, true);
        ctx.unlock(self.rq[r].lock);
        self.idle_pulls += 1;
    }
}

impl SchedClass for Hamq {
    fn name(&self) -> &'static str {
        "hamq"
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hz(&self) -> u32 {
        self.core.hz
    }

    /// Kravetz's haMQ was a patch against 2.5.2-pre9 (schedulers.md §3).
    fn release(&self) -> crate::kernel::release::Release {
        crate::kernel::release::Release::V2_5(2)
    }

    fn uses_idle_index(&self) -> bool {
        true
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = ctx.nr_cpus();
        self.indexed = ctx.idle_indexed();
        self.rq = (0..n)
            .map(|c| {
                let line = ctx.new_line("runqueue_data", Some(c));
                RunQueue {
                    list: VecDeque::new(),
                    running_non_idle: false,
                    pull_key: None,
                    line,
                    lock: ctx.new_lock("runqueue_lock", Some(line)),
                }
            })
            .collect();
    }

    fn rq_lockp(&self, cpu: CpuId) -> LockId {
        self.rq[cpu].lock
    }

    fn rq_lock(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        Hamq::rq_lock(self, ctx, cpu);
    }

    fn wake_order(&self) -> WakeOrder {
        // Decisions are local and lock-free; only the chosen queue is locked.
        WakeOrder::SelectFirst
    }

    fn task_on_rq(&self, _ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        self.ts[p as usize].on_rq
    }

    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.ts.len() < n {
            self.ts.resize(n, TaskSched::default());
        }
        self.core.task_fork(ctx, p, parent);
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId {
        let this = ctx.cpu();
        let last = ctx.task(p).processor;
        if Core24::sync_skips_placement(ctx, p, wake.sync, self.sync_wakeups) {
            self.wake_kick = Kick::No;
            return this;
        }
        self.wake_kick = Kick::Yes;
        ctx.read(Shared::Line(self.rq[last].line));
        if ctx.allowed(p, last) && ctx.cpu_is_idle(last) {
            return last;
        }
        if let Some(c) = self.idle_cpu(ctx, p) {
            self.wake_moves += 1;
            return c;
        }
        self.wake_kick = Kick::IfPreempts;
        if ctx.allowed(p, last) {
            last
        } else {
            ctx.task(p)
                .cpus_allowed
                .first()
                .expect("sched_setaffinity refuses an empty mask")
        }
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        self.enqueue(ctx, p, true);
    }

    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId) {
        self.dequeue(ctx, p);
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, _wake: Wake) {
        let kick = match std::mem::replace(&mut self.wake_kick, Kick::No) {
            Kick::No => false,
            Kick::Yes => true,
            Kick::IfPreempts => {
                let curr = ctx.curr(cpu);
                self.core
                    .preemption_goodness(ctx, curr, p, cpu, ctx.active_mm(cpu))
                    > 0
            }
        };
        if kick {
            ctx.resched_cpu(cpu);
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        if self.core.rr_refill(ctx, prev) {
            self.dequeue(ctx, prev);
            self.enqueue(ctx, prev, false);
        }
        let next = loop {
            let (next, c) = self.scan(ctx, cpu);
            if c == 0 {
                ctx.unlock(self.rq[cpu].lock);
                self.recalculate(ctx);
                Hamq::rq_lock(self, ctx, cpu);
                continue;
            }
            if next == ctx.idle_task(cpu) {
                if let Some(p) = self.idle_pull(ctx, cpu) {
                    if self.core.counter(p) == 0
                        && ctx.task(p).policy == crate::kernel::task::SchedPolicy::Other
                    {
                        ctx.unlock(self.rq[cpu].lock);
                        self.recalculate(ctx);
                        Hamq::rq_lock(self, ctx, cpu);
                        continue;
                    }
                    break p;
                }
            }
            break next;
        };
        let busy = next != ctx.idle_task(cpu);
        self.set_running(cpu, busy);
        ctx.write(Shared::Line(self.rq[cpu].line));
        if next == prev {
            self.core.take_yield(prev);
        }
        busy.then_some(next)
    }

    fn finish_task_switch(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, prev: TaskId) {
        if ctx.task(prev).is_idle || self.core.take_yield(prev) {
            return;
        }
        let t = ctx.task(prev);
        if t.state != TaskState::Running || t.on_cpu.is_some() || !self.ts[prev as usize].on_rq {
            return;
        }
        let from = t.processor;
        if let Some(c) = self.idle_cpu(ctx, prev) {
            Hamq::rq_lock(self, ctx, from);
            self.dequeue(ctx, prev);
            ctx.unlock(self.rq[from].lock);
            self.tail_moves += 1;
            Hamq::rq_lock(self, ctx, c);
            ctx.set_task_cpu(prev, c);
            self.enqueue(ctx, prev, true);
            ctx.resched_cpu(c);
            ctx.unlock(self.rq[c].lock);
        }
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        self.core.update_process_times(ctx, cpu, curr, false);
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        let nr_pending = if self.indexed {
            // The reads are free: the sum of the queues' waiting tasks, kept.
            self.queued - self.running
        } else {
            let mut n = 0;
            for c in 0..self.rq.len() {
                if c != cpu {
                    ctx.read(Shared::Line(self.rq[c].line));
                }
                n += self.nr_waiting(c);
            }
            n
        };
        if nr_pending > 0 {
            self.core.sched_yield(ctx, cpu, p);
            let c = ctx.task(p).processor;
            Hamq::rq_lock(self, ctx, c);
            self.dequeue(ctx, p);
            self.enqueue(ctx, p, false);
            ctx.unlock(self.rq[c].lock);
        }
    }

    fn task_dead(&mut self, _ctx: &mut SchedCtx<'_>, parent: TaskId, child: TaskId) {
        self.core.release_task(parent, child);
    }

    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        // The next recalculations add the new NICE_TO_TICKS (§1.7 step 6).
        self.core.renice(ctx, p);
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        BTreeMap::from([
            ("idle_pulls".to_string(), self.idle_pulls as f64),
            ("wake_moves".to_string(), self.wake_moves as f64),
            ("tail_moves".to_string(), self.tail_moves as f64),
            ("recalculations".to_string(), self.recalculations as f64),
        ])
    }

    fn check(&self, k: &Kernel) -> Result<(), String> {
        for (c, q) in self.rq.iter().enumerate() {
            let cpu = &k.cpus[c];
            if q.running_non_idle != (cpu.curr_seen.latest() != cpu.idle) {
                return Err(format!(
                    "hamq: cpu {c} running_non_idle {} but its published curr is task {}",
                    q.running_non_idle,
                    cpu.curr_seen.latest()
                ));
            }
            let key = self.pull_key(c);
            if self.indexed
                && (q.pull_key != key
                    || key.is_some_and(|w| !self.pull_order.contains(&(Reverse(w), c))))
            {
                return Err(format!(
                    "hamq: queue {c}'s pull order entry {:?}, expected {key:?}",
                    q.pull_key
                ));
            }
        }
        let queued: usize = self.rq.iter().map(|q| q.list.len()).sum();
        let running = self.rq.iter().filter(|q| q.running_non_idle).count();
        if (queued, running) != (self.queued, self.running)
            || (self.indexed
                && self.pull_order.len() != self.rq.iter().filter(|q| q.pull_key.is_some()).count())
        {
            return Err(format!(
                "hamq: totals queued {} running {} pull entries {}, found {queued} and {running}",
                self.queued,
                self.running,
                self.pull_order.len()
            ));
        }
        let on_rq: Vec<bool> = self.ts.iter().map(|s| s.on_rq).collect();
        super::check_per_cpu_queues("hamq", k, self.rq.iter().map(|q| &q.list), &on_rq)
    }
}
