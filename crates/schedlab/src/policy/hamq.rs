//! `hamq`: Kravetz's quick multi-queue scheduler made from the 2.5.2-pre9 scheduler
//! ("haMQ", January 2002) — a **reconstruction**.
//!
//! No source survives (the patch was at `lse.sourceforge.net/scheduling/2.5.2-pre9-hamq`;
//! schedulers.md §3.6 "[NOT FOUND]"). What is known (benchmarks.md §0, system.md finding
//! 3): it had per-CPU run queues, **no load balancing**, and it **aggressively keeps CPUs
//! from going idle**; like O(1) it runs a woken task on another (idle) CPU, so a 2-task
//! token ping-pong pays a cross-CPU wake-up every hop (reflex, 2 tasks: ≈ 2× slower than
//! 2.4). Kravetz described his next step after MQ as "a more traditional multi-queue model
//! where most decisions are made at a local (per-CPU) level" (S9).
//!
//! # Theory (the simplest design matching that description) [INFERRED throughout]
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
//!
//! Counters: `idle_pulls` (tasks taken by an idle-bound CPU), `wake_moves` (woken tasks
//! sent to another idle CPU), `tail_moves` (preempted tasks sent to an idle CPU),
//! `recalculations`.
//!
//! Invariants: a runnable task is on exactly the queue of its `processor`; a queued task
//! is runnable or is the current task about to leave.

use std::collections::{BTreeMap, VecDeque};

use crate::kernel::task::{SchedPolicy, TaskId, TaskState};
use crate::kernel::Kernel;
use crate::machine::{CpuId, LockId, Machine};
use crate::spec::{Kind, ParamSpec, Params};

use super::mq::goodness::{def_counter, max_counter, nice_to_ticks, Prio, MIN_GOODNESS};
use super::mq::lines::Lines;
use super::{Policy, PolicyInfo, SchedCtx};

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "hamq",
    about: "Kravetz's quick multi-queue from 2.5.2-pre9 (reconstruction): per-CPU 2.4 queues, idle pull, no balancing",
    params: PARAMS,
    build,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "hz",
        default: "100",
        kind: Kind::Int {
            min: 10,
            max: 10000,
        },
        help: "timer ticks per second (2.5.2-pre9 i386: 100)",
    },
    ParamSpec {
        name: "pcp",
        default: "15",
        kind: Kind::Int { min: 0, max: 1000 },
        help: "PROC_CHANGE_PENALTY (i386: 15)",
    },
    ParamSpec {
        name: "sync_wakeups",
        default: "on",
        kind: Kind::Bool,
        help: "on: a sync wake-up queues the task on the waker's CPU without a kick [INFERRED]",
    },
];

fn build(p: &Params, _m: &Machine) -> Box<dyn Policy> {
    Box::new(Hamq {
        hz: p.int("hz") as u32,
        pcp: p.int("pcp") as i32,
        sync_wakeups: p.flag("sync_wakeups"),
        options: p.to_map(),
        rq: Vec::new(),
        ts: Vec::new(),
        lines: Lines::default(),
        idle_pulls: 0,
        wake_moves: 0,
        tail_moves: 0,
        recalculations: 0,
    })
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskSched {
    counter: i32,
    yielding: bool,
    on_rq: bool,
}

struct RunQueue {
    list: VecDeque<TaskId>,
    /// The CPU runs a task other than idle (`nr_waiting = len − running_non_idle`).
    running_non_idle: bool,
    lock: LockId,
}

struct Hamq {
    hz: u32,
    pcp: i32,
    sync_wakeups: bool,
    options: BTreeMap<String, String>,
    rq: Vec<RunQueue>,
    ts: Vec<TaskSched>,
    /// One line per queue: its list head, counts and lock.
    lines: Lines,
    idle_pulls: u64,
    wake_moves: u64,
    tail_moves: u64,
    recalculations: u64,
}

impl Hamq {
    fn prio(&self, ctx: &SchedCtx<'_>, p: TaskId) -> Prio {
        let t = ctx.task(p);
        let s = &self.ts[p as usize];
        Prio {
            counter: s.counter,
            yielding: s.yielding,
            policy: t.policy,
            nice: t.nice,
            rt_priority: t.rt_priority,
            mm: t.mm,
            processor: t.processor,
        }
    }

    fn nr_waiting(&self, c: CpuId) -> usize {
        self.rq[c].list.len() - usize::from(self.rq[c].running_non_idle)
    }

    fn lock_rq(&mut self, ctx: &mut SchedCtx<'_>, c: CpuId) {
        ctx.lock(self.rq[c].lock);
        self.lines.locked(ctx.cpu(), c, false);
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
        self.lines.locked(ctx.cpu(), c, true);
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
        self.lines.locked(ctx.cpu(), c, true);
    }

    /// The longest-idle CPU `p` may use (2.4's smallest `last_schedule`), lock-free.
    fn idle_cpu(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) -> Option<CpuId> {
        let mut best: Option<CpuId> = None;
        for c in 0..self.rq.len() {
            if c != ctx.cpu() {
                self.lines.read(ctx, c);
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

    /// Queue the not-queued task `p` on `cpu` (moving it there) and kick `cpu` if `kick`.
    fn place(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, cpu: CpuId, kick: bool) {
        self.lock_rq(ctx, cpu);
        ctx.set_task_cpu(p, cpu);
        self.enqueue(ctx, p, true);
        if kick {
            ctx.resched_cpu(cpu);
        }
        ctx.unlock(self.rq[cpu].lock);
    }

    fn recalculate(&mut self, ctx: &mut SchedCtx<'_>) {
        self.recalculations += 1;
        let mut walked = 0;
        for p in 0..ctx.tasks_len() {
            let t = ctx.task(p as TaskId);
            if t.is_idle || t.state == TaskState::Dead {
                continue;
            }
            walked += 1;
            let add = nice_to_ticks(t.nice, self.hz);
            let s = &mut self.ts[p];
            s.counter = (s.counter >> 1) + add;
        }
        ctx.examine(walked);
    }

    /// Best local task by 2.4 goodness (ties: nearest the head).
    fn scan(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> (TaskId, i32) {
        let mm = ctx.active_mm(cpu);
        let mut next = ctx.idle_task(cpu);
        let mut c = MIN_GOODNESS;
        let q = &self.rq[cpu].list;
        for &p in q {
            let t = ctx.task(p);
            if !ctx.allowed(p, cpu) || t.on_cpu.is_some_and(|o| o != cpu) {
                continue;
            }
            let w = self.prio(ctx, p).goodness(cpu, mm, self.pcp);
            if w > c {
                c = w;
                next = p;
            }
        }
        let n = q.len() as u64;
        ctx.examine(n);
        (next, c)
    }

    /// Idle pull: take one waiting task for `cpu`, whose lock is held.
    fn idle_pull(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> Option<TaskId> {
        let n = self.rq.len();
        loop {
            let mut cand: Vec<(usize, CpuId)> = Vec::new();
            for r in 0..n {
                if r == cpu {
                    continue;
                }
                self.lines.read(ctx, r);
                // Only tasks waiting behind a running task: a queued task of an idle CPU
                // belongs to a CPU that was just kicked to run it.
                let w = self.nr_waiting(r);
                if self.rq[r].running_non_idle && w > 0 {
                    cand.push((w, r));
                }
            }
            if cand.is_empty() {
                return None;
            }
            // determinism: most waiting first, then the lower CPU.
            cand.sort_by_key(|&(w, r)| (std::cmp::Reverse(w), r));
            let mut failed = 0;
            for &(_, r) in &cand {
                if !ctx.trylock(self.rq[r].lock) {
                    failed += 1;
                    continue;
                }
                self.lines.locked(cpu, r, false);
                let mut best: Option<(TaskId, i32)> = None;
                let len = self.rq[r].list.len();
                for &p in &self.rq[r].list {
                    if ctx.task(p).on_cpu.is_none() && ctx.allowed(p, cpu) {
                        let w = self
                            .prio(ctx, p)
                            .goodness(cpu, ctx.active_mm(cpu), self.pcp);
                        if best.is_none_or(|(_, b)| w > b) {
                            best = Some((p, w));
                        }
                    }
                }
                ctx.examine(len as u64);
                if let Some((p, _)) = best {
                    self.dequeue(ctx, p);
                    ctx.set_task_cpu(p, cpu);
                    self.enqueue(ctx, p, true);
                    ctx.unlock(self.rq[r].lock);
                    self.idle_pulls += 1;
                    return Some(p);
                }
                ctx.unlock(self.rq[r].lock);
            }
            if failed == 0 {
                return None;
            }
        }
    }
}

impl Policy for Hamq {
    fn name(&self) -> &'static str {
        "hamq"
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hz(&self) -> u32 {
        self.hz
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = ctx.nr_cpus();
        self.rq = (0..n)
            .map(|_| RunQueue {
                list: VecDeque::new(),
                running_non_idle: false,
                lock: ctx.new_lock("runqueue_lock"),
            })
            .collect();
        self.lines = Lines::new(n, n);
    }

    fn task_new(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.ts.len() < n {
            self.ts.resize(n, TaskSched::default());
        }
        match parent {
            None => self.ts[p as usize].counter = def_counter(self.hz),
            Some(pp) => {
                let pc = self.ts[pp as usize].counter;
                self.ts[p as usize].counter = (pc + 1) >> 1;
                self.ts[pp as usize].counter = pc >> 1;
                if pc >> 1 == 0 {
                    let cpu = ctx.cpu();
                    ctx.resched_cpu(cpu);
                }
            }
        }
    }

    fn try_to_wake_up(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, sync: bool) {
        if self.ts[p as usize].on_rq {
            // Still on its queue (it had not yet left the CPU): just runnable again.
            return;
        }
        let this = ctx.cpu();
        let last = ctx.task(p).processor;
        if sync && self.sync_wakeups && ctx.allowed(p, this) {
            return self.place(ctx, p, this, false);
        }
        self.lines.read(ctx, last);
        if ctx.allowed(p, last) && ctx.cpu_is_idle(last) {
            return self.place(ctx, p, last, true);
        }
        if let Some(c) = self.idle_cpu(ctx, p) {
            self.wake_moves += 1;
            return self.place(ctx, p, c, true);
        }
        let target = if ctx.allowed(p, last) {
            last
        } else {
            ctx.task(p).cpus_allowed.trailing_zeros() as CpuId
        };
        self.lock_rq(ctx, target);
        ctx.set_task_cpu(p, target);
        self.enqueue(ctx, p, true);
        let curr = ctx.curr(target);
        let mm = ctx.active_mm(target);
        let pg = self.prio(ctx, p).goodness(target, mm, self.pcp)
            - self.prio(ctx, curr).goodness(target, mm, self.pcp);
        if pg > 0 {
            ctx.resched_cpu(target);
        }
        ctx.unlock(self.rq[target].lock);
    }

    fn schedule(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId) -> TaskId {
        self.lock_rq(ctx, cpu);
        let pt = ctx.task(prev);
        if !pt.is_idle {
            if pt.policy == SchedPolicy::Rr && self.ts[prev as usize].counter == 0 {
                self.ts[prev as usize].counter = nice_to_ticks(pt.nice, self.hz);
                self.dequeue(ctx, prev);
                self.enqueue(ctx, prev, false);
            }
            if ctx.task(prev).state != TaskState::Running && self.ts[prev as usize].on_rq {
                self.dequeue(ctx, prev);
            }
        }
        let next = loop {
            let (next, c) = self.scan(ctx, cpu);
            if c == 0 {
                ctx.unlock(self.rq[cpu].lock);
                self.recalculate(ctx);
                self.lock_rq(ctx, cpu);
                continue;
            }
            if next == ctx.idle_task(cpu) {
                if let Some(p) = self.idle_pull(ctx, cpu) {
                    if self.ts[p as usize].counter == 0 && ctx.task(p).policy == SchedPolicy::Other
                    {
                        ctx.unlock(self.rq[cpu].lock);
                        self.recalculate(ctx);
                        self.lock_rq(ctx, cpu);
                        continue;
                    }
                    break p;
                }
            }
            break next;
        };
        let busy = next != ctx.idle_task(cpu);
        self.rq[cpu].running_non_idle = busy;
        self.lines.locked(cpu, cpu, true);
        ctx.unlock(self.rq[cpu].lock);
        if next == prev {
            self.ts[prev as usize].yielding = false;
        }
        next
    }

    fn schedule_tail(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, prev: TaskId) {
        if ctx.task(prev).is_idle {
            return;
        }
        if std::mem::take(&mut self.ts[prev as usize].yielding) {
            return;
        }
        let t = ctx.task(prev);
        if t.state != TaskState::Running || t.on_cpu.is_some() || !self.ts[prev as usize].on_rq {
            return;
        }
        let from = t.processor;
        if let Some(c) = self.idle_cpu(ctx, prev) {
            self.lock_rq(ctx, from);
            self.dequeue(ctx, prev);
            ctx.unlock(self.rq[from].lock);
            self.tail_moves += 1;
            self.place(ctx, prev, c, true);
        }
    }

    fn scheduler_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        if ctx.task(curr).is_idle {
            return;
        }
        let s = &mut self.ts[curr as usize];
        s.counter -= 1;
        if s.counter <= 0 {
            s.counter = 0;
            ctx.resched_cpu(cpu);
        }
    }

    fn sys_sched_yield(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        let mut nr_pending = 0;
        for c in 0..self.rq.len() {
            if c != cpu {
                self.lines.read(ctx, c);
            }
            nr_pending += self.nr_waiting(c);
        }
        if nr_pending > 0 {
            if ctx.task(p).policy == SchedPolicy::Other {
                self.ts[p as usize].yielding = true;
            }
            ctx.resched_cpu(cpu);
            let c = ctx.task(p).processor;
            self.lock_rq(ctx, c);
            self.dequeue(ctx, p);
            self.enqueue(ctx, p, false);
            ctx.unlock(self.rq[c].lock);
        }
    }

    fn sched_exit(&mut self, _ctx: &mut SchedCtx<'_>, parent: TaskId, child: TaskId) {
        let add = self.ts[child as usize].counter;
        let s = &mut self.ts[parent as usize];
        s.counter = (s.counter + add).min(max_counter(self.hz));
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
        let on_rq: Vec<bool> = self.ts.iter().map(|s| s.on_rq).collect();
        super::check_per_cpu_queues("hamq", k, self.rq.iter().map(|q| &q.list), &on_rq)
    }
}
