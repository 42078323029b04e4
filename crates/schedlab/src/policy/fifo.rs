//! `fifo`: the reference policy — one global round-robin queue under one lock.
//!
//! Not a historical scheduler: it exists so the engine and kernel can be tested with a
//! policy whose every decision is obvious.
//!
//! Theory: a global round robin. Runnable tasks that are not running wait in one FIFO
//! list. `schedule()` puts a still-runnable `prev` at the tail and takes the first task
//! allowed on this CPU, which becomes the task's `processor` (a migration when it ran
//! elsewhere last). A wake-up appends the task and kicks its last CPU if idle, else the
//! lowest idle CPU. A task runs at most `slice_ms` before the tick asks it to yield to a
//! waiting task.
//!
//! Invariants: a task is in the queue ⇔ it is runnable and not on a CPU.

use std::collections::{BTreeMap, VecDeque};

use crate::kernel::task::{TaskId, TaskState};
use crate::machine::{CpuId, LockId, Machine};
use crate::spec::Params;

use super::{PolicyInfo, SchedClass, SchedCtx, Wake};

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "fifo",
    about: "reference policy: one global round-robin queue, one lock (engine tests)",
    params: PARAMS,
    build,
};

crate::options! {
    /// Options of `fifo`.
    pub struct Options in PARAMS {
        /// Timer frequency.
        hz: u32 = hz("100").source("model choice: the 2.4-era HZ");
        /// Round-robin slice.
        slice_ms: u64 = int("10", 1, 10000)
            .unit("ms")
            .help("round-robin slice, rounded up to whole ticks")
            .source("model choice: one 2.4-era tick");
        /// Honour `__wake_up_sync`.
        sync_wakeups: bool = sync_wakeups("off")
            .help("a sync wake-up kicks no CPU (the waker's CPU will pick the task up)")
            .source("model choice: the reference policy ignores hints");
    }
}

fn build(p: &Params, _m: &Machine) -> Box<dyn SchedClass> {
    let o = Options::from_params(p);
    let hz = o.hz;
    let ticks = (o.slice_ms * hz as u64).div_ceil(1000).max(1);
    Box::new(Fifo {
        hz,
        slice_ticks: ticks as u32,
        sync_wakeups: o.sync_wakeups,
        options: p.to_map(),
        lock: 0,
        queue: VecDeque::new(),
        on_rq: Vec::new(),
        slice: Vec::new(),
        picks: 0,
        idle_kicks: 0,
    })
}

struct Fifo {
    hz: u32,
    slice_ticks: u32,
    sync_wakeups: bool,
    options: BTreeMap<String, String>,
    lock: LockId,
    queue: VecDeque<TaskId>,
    on_rq: Vec<bool>,
    slice: Vec<u32>,
    picks: u64,
    idle_kicks: u64,
}

impl Fifo {
    fn enqueue(&mut self, p: TaskId) {
        debug_assert!(!self.on_rq[p as usize]);
        self.on_rq[p as usize] = true;
        self.queue.push_back(p);
    }

    /// The CPU to kick for a newly queued `p`: its last CPU if idle, else the lowest idle
    /// CPU it may use.
    fn idle_target(ctx: &SchedCtx<'_>, p: TaskId) -> Option<CpuId> {
        let last = ctx.task(p).processor;
        if ctx.cpu_is_idle(last) && ctx.allowed(p, last) {
            return Some(last);
        }
        (0..ctx.nr_cpus()).find(|&c| ctx.cpu_is_idle(c) && ctx.allowed(p, c))
    }
}

impl SchedClass for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hz(&self) -> u32 {
        self.hz
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        self.lock = ctx.new_lock("fifo_lock");
    }

    fn rq_lock(&self, _cpu: CpuId) -> LockId {
        self.lock
    }

    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        // The running task is off the queue but still "on the run queue" (`p->on_rq`).
        self.on_rq[p as usize] || ctx.task(p).on_cpu.is_some()
    }

    fn task_fork(&mut self, _ctx: &mut SchedCtx<'_>, p: TaskId, _parent: Option<TaskId>) {
        let n = p as usize + 1;
        if self.on_rq.len() < n {
            self.on_rq.resize(n, false);
            self.slice.resize(n, 0);
        }
        self.slice[p as usize] = self.slice_ticks;
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, _wake: Wake) -> CpuId {
        ctx.task(p).processor
    }

    fn enqueue_task(&mut self, _ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        self.enqueue(p);
    }

    fn dequeue_task(&mut self, _ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId) {
        // The leaving task is the running one, which is never on the queue.
        debug_assert!(!self.on_rq[p as usize]);
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, wake: Wake) {
        if !(wake.sync && self.sync_wakeups) {
            if let Some(cpu) = Self::idle_target(ctx, p) {
                self.idle_kicks += 1;
                ctx.resched_cpu(cpu);
            }
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        let prev_t = ctx.task(prev);
        if !prev_t.is_idle && prev_t.state == TaskState::Running && ctx.allowed(prev, cpu) {
            self.enqueue(prev);
        }
        let mut pick = None;
        for (i, &t) in self.queue.iter().enumerate() {
            ctx.examine_task(t);
            if ctx.allowed(t, cpu) {
                pick = Some(i);
                break;
            }
        }
        let i = pick?;
        let t = self.queue.remove(i).expect("index from scan");
        self.on_rq[t as usize] = false;
        self.picks += 1;
        // One queue for every CPU: `processor` is where a task runs now, set when it is
        // picked (2.4's `p->processor = this_cpu` in `schedule()`); a pick on another
        // CPU than last time is a migration, counted as every policy counts one.
        ctx.set_task_cpu(t, cpu);
        Some(t)
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        if ctx.task(curr).is_idle {
            return;
        }
        let s = &mut self.slice[curr as usize];
        *s = s.saturating_sub(1);
        if *s == 0 {
            *s = self.slice_ticks;
            if !self.queue.is_empty() {
                ctx.resched_cpu(cpu);
            }
        }
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, _p: TaskId) {
        if !self.queue.is_empty() {
            ctx.resched_cpu(cpu);
        }
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        BTreeMap::from([
            ("picks".to_string(), self.picks as f64),
            ("idle_kicks".to_string(), self.idle_kicks as f64),
        ])
    }

    fn check(&self, k: &crate::kernel::Kernel) -> Result<(), String> {
        let mut seen = vec![false; self.on_rq.len()];
        for &t in &self.queue {
            if std::mem::replace(&mut seen[t as usize], true) {
                return Err(format!("fifo: task {t} queued twice"));
            }
            let task = k.task(t);
            if task.state != TaskState::Running || task.on_cpu.is_some() {
                return Err(format!(
                    "fifo: queued task pid {} is {:?} on {:?}",
                    task.pid, task.state, task.on_cpu
                ));
            }
        }
        if seen != self.on_rq {
            return Err("fifo: on_rq flags disagree with the queue".into());
        }
        Ok(())
    }
}
