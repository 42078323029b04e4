//! `fifo`: the reference policy — one global round-robin queue under one lock.
//!
//! Not a historical scheduler: it exists so the engine and kernel can be tested with a
//! policy whose every decision is obvious.
//!
//! Theory: a global round robin, built on the kernel's priced list
//! ([`crate::kernel::sched::runlist`]). Runnable tasks that are not running wait in one
//! FIFO list, its head and lock on one line. `schedule()` puts a still-runnable `prev` at
//! the tail and takes the first task allowed on this CPU, which becomes the task's
//! `processor` (a migration when it ran elsewhere last). A wake-up appends the task and
//! kicks its last CPU if idle, else the lowest idle CPU not already kicked. A task runs at
//! most `slice_ms` before the tick asks it to yield to a waiting task.
//!
//! Invariants: a task on the list is runnable and on no CPU; a runnable task on no CPU is
//! on the list, except in the affinity gap (runlist's doc).

use std::collections::BTreeMap;

use crate::kernel::sched::runlist::{self, RunLists};
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

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn SchedClass>, crate::spec::SpecError> {
    let o = Options::from_params(p);
    let hz = o.hz;
    let ticks = (o.slice_ms * hz as u64).div_ceil(1000).max(1);
    Ok(Box::new(Fifo {
        hz,
        slice_ticks: ticks as u32,
        sync_wakeups: o.sync_wakeups,
        options: p.to_map(),
        rq: RunLists::default(),
        slice: Vec::new(),
        picks: 0,
        idle_kicks: 0,
    }))
}

/// The one list every CPU serves.
const RQ: usize = 0;

struct Fifo {
    hz: u32,
    slice_ticks: u32,
    sync_wakeups: bool,
    options: BTreeMap<String, String>,
    rq: RunLists,
    slice: Vec<u32>,
    picks: u64,
    idle_kicks: u64,
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
        self.rq = RunLists::new(ctx, 1, false, "fifo_head", "fifo_lock");
    }

    fn rq_lockp(&self, _cpu: CpuId) -> LockId {
        self.rq.lock(RQ)
    }

    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        // The running task is off the list but still "on the run queue" (`p->on_rq`).
        self.rq.queued(p).is_some() || ctx.task(p).on_cpu.is_some()
    }

    fn task_fork(&mut self, _ctx: &mut SchedCtx<'_>, p: TaskId, _parent: Option<TaskId>) {
        self.rq.fork(p);
        let n = p as usize + 1;
        if self.slice.len() < n {
            self.slice.resize(n, 0);
        }
        self.slice[p as usize] = self.slice_ticks;
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, _wake: Wake) -> CpuId {
        ctx.task(p).processor
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        self.rq.push_back(ctx, RQ, p);
    }

    fn dequeue_task(&mut self, _ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId) {
        // The leaving task is the running one, which is never on the list.
        debug_assert!(self.rq.queued(p).is_none());
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, wake: Wake) {
        if !(wake.sync && self.sync_wakeups) {
            let last = ctx.task(p).processor;
            if runlist::kick_idle_cpu(ctx, p, last).is_some() {
                self.idle_kicks += 1;
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
            self.rq.push_back(ctx, RQ, prev);
        }
        let t = self.rq.pop_first_allowed(ctx, RQ, cpu)?;
        self.picks += 1;
        // One list for every CPU: `processor` is where a task runs now (runlist's doc).
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
            if !self.rq.seen_empty(ctx, RQ) {
                ctx.resched_cpu(cpu);
            }
        }
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, _p: TaskId) {
        if !self.rq.seen_empty(ctx, RQ) {
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
        self.rq.check(k).map_err(|e| format!("fifo: {e}"))
    }
}
