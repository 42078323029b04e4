//! The ext class (`policy/scx`) driven by schedulers written against its `ScxOps` seam in
//! Rust: the same callbacks and kfuncs a C scheduler reaches through `cabi`.

use schedlab::kernel::task::TaskId;
use schedlab::machine::CpuId;
use schedlab::policy::scx::ops::consts::*;
use schedlab::policy::scx::{Ext, Has, Kf, ScxOps};
use schedlab::sim::{RunConfig, Simulation};

/// scx_simple's two modes, written from its description: a shared DSQ, FIFO or ordered
/// by weighted virtual time, and `scx_bpf_select_cpu_dfl` with a direct dispatch to an
/// idle CPU.
struct Simple {
    fifo: bool,
    vtime_now: u64,
}

const SHARED: u64 = 0;

impl ScxOps for Simple {
    fn name(&self) -> String {
        "simple".into()
    }
    fn has(&self) -> Has {
        Has {
            select_cpu: true,
            enqueue: true,
            dispatch: true,
            running: true,
            stopping: true,
            ..Has::default()
        }
    }
    fn init(&mut self, k: &mut Kf<'_, '_>) -> i32 {
        k.create_dsq(SHARED)
    }
    fn enable(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        k.set_dsq_vtime(p, self.vtime_now);
    }
    fn select_cpu(&mut self, k: &mut Kf<'_, '_>, p: TaskId, prev: CpuId, wake_flags: u64) -> i32 {
        let (cpu, idle) = k.select_cpu_dfl(p, prev as i32, wake_flags);
        if idle {
            k.dispatch(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
        }
        cpu
    }
    fn enqueue(&mut self, k: &mut Kf<'_, '_>, p: TaskId, enq_flags: u64) {
        if self.fifo {
            k.dispatch(p, SHARED, SCX_SLICE_DFL, enq_flags);
        } else {
            let v = k
                .dsq_vtime(p)
                .max(self.vtime_now.saturating_sub(SCX_SLICE_DFL));
            k.dispatch_vtime(p, SHARED, SCX_SLICE_DFL, v, enq_flags);
        }
    }
    fn dispatch(&mut self, k: &mut Kf<'_, '_>, _cpu: CpuId, _prev: Option<TaskId>) {
        k.consume(SHARED);
    }
    fn running(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        self.vtime_now = self.vtime_now.max(k.dsq_vtime(p));
    }
    fn stopping(&mut self, k: &mut Kf<'_, '_>, p: TaskId, _runnable: bool) {
        let used = SCX_SLICE_DFL - k.slice(p).min(SCX_SLICE_DFL);
        let v = k.dsq_vtime(p) + used * 100 / k.weight(p) as u64;
        k.set_dsq_vtime(p, v);
    }
}

/// Dispatches every task to a DSQ it never created.
struct ToNowhere;
impl ScxOps for ToNowhere {
    fn name(&self) -> String {
        "nowhere".into()
    }
    fn has(&self) -> Has {
        Has {
            enqueue: true,
            ..Has::default()
        }
    }
    fn enqueue(&mut self, k: &mut Kf<'_, '_>, p: TaskId, enq_flags: u64) {
        k.dispatch(p, 77, SCX_SLICE_DFL, enq_flags);
    }
}

/// Keeps every task it is given and never dispatches one.
struct Hoarder;
impl ScxOps for Hoarder {
    fn name(&self) -> String {
        "hoarder".into()
    }
    fn has(&self) -> Has {
        Has {
            enqueue: true,
            dispatch: true,
            ..Has::default()
        }
    }
    fn timeout_ms(&self) -> u64 {
        200
    }
}

fn run(ops: Box<dyn ScxOps>, workload: &str, cpus: usize) -> (serde_json::Value, Simulation) {
    let cfg = RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: "scx".into(),
        workload: workload.into(),
        seed: 1,
    };
    let class = Box::new(Ext::new(ops, 1000, Default::default()));
    let mut sim = Simulation::with_class(cfg, class).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim.check().unwrap();
    let r = sim.report().unwrap();
    (serde_json::to_value(&r).unwrap(), sim)
}

#[test]
fn a_shared_dsq_scheduler_runs_hackbench_and_reflex_in_both_modes() {
    for fifo in [true, false] {
        for (w, cpus) in [
            ("hackbench:groups=2,loops=20", 4),
            ("reflex:tasks=8,rounds=200", 2),
        ] {
            let (v, _) = run(Box::new(Simple { fifo, vtime_now: 0 }), w, cpus);
            let pol = &v["counters"]["policy"];
            assert_eq!(pol["scheduler_ended"], 0.0, "{w} fifo={fifo}: {pol}");
            assert!(pol["consumed"].as_f64().unwrap() > 0.0, "{w}: {pol}");
            assert!(
                pol["direct_dispatches"].as_f64().unwrap() > 0.0,
                "{w}: {pol}"
            );
            assert!(
                v["counters"]["locks"]["dsq->lock"]["acquisitions"]
                    .as_u64()
                    .unwrap()
                    > 0
            );
            assert!(v["result"]["value"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn the_same_run_twice_is_the_same_run() {
    let a = run(
        Box::new(Simple {
            fifo: false,
            vtime_now: 0,
        }),
        "hackbench:groups=2,loops=20",
        4,
    )
    .0;
    let b = run(
        Box::new(Simple {
            fifo: false,
            vtime_now: 0,
        }),
        "hackbench:groups=2,loops=20",
        4,
    )
    .0;
    assert_eq!(a.to_string(), b.to_string());
}

#[test]
fn a_dispatch_to_a_missing_dsq_ends_the_scheduler_and_the_run_goes_on() {
    let (v, sim) = run(Box::new(ToNowhere), "hackbench:groups=1,loops=10", 2);
    let why = sim.exit_reason().expect("the scheduler ended");
    assert!(why.contains("non-existent DSQ 0x4d"), "{why}");
    assert_eq!(v["counters"]["policy"]["scheduler_ended"], 1.0);
    assert!(
        v["result"]["value"].as_f64().unwrap() > 0.0,
        "the workload finished"
    );
}

#[test]
fn a_task_never_dispatched_trips_the_watchdog() {
    let (_, sim) = run(Box::new(Hoarder), "hackbench:groups=1,loops=10", 2);
    let why = sim.exit_reason().expect("the watchdog ended the scheduler");
    assert!(why.contains("failed to run for"), "{why}");
}
