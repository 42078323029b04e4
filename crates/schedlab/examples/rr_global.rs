//! `rr-global`, the worked example of docs/architecture.md §3: a global round robin on the
//! kernel's priced run list. `cargo run --release --example rr_global` runs it on the
//! 8-way PIII beside `fifo`, the registry's global round robin on the same list.

use std::collections::BTreeMap;

use schedlab::kernel::sched::runlist::{kick_idle_cpu, RunLists};
use schedlab::kernel::sched::{SchedClass, SchedCtx, Wake};
use schedlab::kernel::task::{TaskId, TaskState};
use schedlab::kernel::Kernel;
use schedlab::machine::{CpuId, LockId};

/// Ticks a task runs while others wait.
const SLICE: u32 = 2;

/// One list that every CPU serves: its head and lock on one line, priced by `RunLists`.
#[derive(Default)]
pub struct RrGlobal {
    rq: RunLists,
    left: Vec<u32>,
}

impl SchedClass for RrGlobal {
    fn name(&self) -> &'static str {
        "rr-global"
    }
    fn options(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("slice_ticks".into(), SLICE.to_string())])
    }
    fn hz(&self) -> u32 {
        100
    }
    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        self.rq = RunLists::new(ctx, 1, false, "rr_head", "rr_lock");
    }
    fn rq_lockp(&self, _cpu: CpuId) -> LockId {
        self.rq.lock(0) // one queue, one lock, for every CPU
    }
    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        self.rq.queued(p).is_some() || ctx.task(p).on_cpu.is_some()
    }
    fn task_fork(&mut self, _ctx: &mut SchedCtx<'_>, p: TaskId, _parent: Option<TaskId>) {
        self.rq.fork(p);
        self.left.resize(self.left.len().max(p as usize + 1), SLICE);
    }
    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, _wake: Wake) -> CpuId {
        ctx.task(p).processor // every CPU serves the list: the pick sets `processor`
    }
    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        self.rq.push_back(ctx, 0, p);
    }
    fn dequeue_task(&mut self, _ctx: &mut SchedCtx<'_>, _cpu: CpuId, _p: TaskId) {
        // Only the running task leaves by sleeping, and it is on no list.
    }
    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, _cpu: CpuId, p: TaskId, _wake: Wake) {
        let last = ctx.task(p).processor;
        kick_idle_cpu(ctx, p, last);
    }
    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        let t = ctx.task(prev);
        if !t.is_idle && t.state == TaskState::Running && ctx.allowed(prev, cpu) {
            self.rq.push_back(ctx, 0, prev); // preempted or yielding: to the tail
        }
        let next = self.rq.pop_first_allowed(ctx, 0, cpu)?;
        ctx.set_task_cpu(next, cpu); // a pick elsewhere than last time is a migration
        self.left[next as usize] = SLICE;
        Some(next)
    }
    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, _user: bool) {
        let left = &mut self.left[curr as usize];
        *left = left.saturating_sub(1);
        if *left == 0 && !ctx.task(curr).is_idle && !self.rq.seen_empty(ctx, 0) {
            ctx.resched_cpu(cpu);
        }
    }
    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, _p: TaskId) {
        if !self.rq.seen_empty(ctx, 0) {
            ctx.resched_cpu(cpu);
        }
    }
    fn check(&self, k: &Kernel) -> Result<(), String> {
        self.rq.check(k)
    }
}

#[allow(dead_code)] // the tests include this file for its policy
fn main() {
    for workload in [
        "lat_pipe",
        "hackbench:groups=4,loops=50",
        "chat:rooms=4,messages=50",
    ] {
        let cfg = |policy: &str| schedlab::RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(8),
            policy: policy.into(),
            workload: workload.into(),
            seed: 1,
        };
        let mut sim =
            schedlab::Simulation::with_class(cfg("rr-global"), Box::new(RrGlobal::default()))
                .expect("a known machine and workload");
        sim.run(&mut |_, _| {}).expect("the run finishes");
        sim.check().expect("kernel and class invariants");
        let ours = sim.report().expect("a result");
        let fifo = schedlab::run(cfg("fifo")).expect("fifo runs");
        let lock = &ours.counters.locks["rr_lock"];
        println!(
            "{workload}: rr-global {:.3} {} (rr_lock held {:.0} ns a time, migrations {}); fifo {:.3}",
            ours.result.value, ours.result.unit, lock.hold_ns_mean, ours.counters.migrations,
            fifo.result.value
        );
    }
}
