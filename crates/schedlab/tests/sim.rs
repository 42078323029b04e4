//! Integration tests of the simulator: determinism, structure of the workloads, kernel
//! mechanisms, and a property test running random workloads through the invariant checks
//! under every registered policy.

use proptest::prelude::*;

use schedlab::engine::{Time, MS, US};
use schedlab::kernel::Kernel;
use schedlab::policy::POLICIES;
use schedlab::report::Metric;
use schedlab::workload::program::{program, Env, Op, Program, Record, EAGAIN, ECHILD};
use schedlab::workload::{metric, Workload};
use schedlab::{RunConfig, SimError, Simulation};

fn cfg(machine: &str, cpus: usize, policy: &str, workload: &str) -> RunConfig {
    RunConfig {
        machine: machine.into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    }
}

fn run_json(c: RunConfig) -> serde_json::Value {
    let r = schedlab::run(c).expect("run succeeds");
    let mut v = serde_json::to_value(&r).unwrap();
    v["sim"]["wall_ms"] = serde_json::Value::Null;
    v
}

/// A workload given as a root program factory; reports simulated time.
struct Custom<F: Fn() -> Box<dyn Program> + Send>(F);

impl<F: Fn() -> Box<dyn Program> + Send> Workload for Custom<F> {
    fn root(&self) -> Box<dyn Program> {
        (self.0)()
    }
    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(metric("done", rec.count("done") as f64, "", "higher"))
    }
    fn limit_ns(&self) -> Time {
        60 * schedlab::engine::SEC
    }
}

fn run_custom(
    policy: &str,
    cpus: usize,
    seed: u64,
    root: impl Fn() -> Box<dyn Program> + Send + 'static,
) -> Simulation {
    let mut c = cfg("piii700-1m", cpus, policy, "custom");
    c.seed = seed;
    let mut sim = Simulation::with_workload(c, Box::new(Custom(root))).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim
}

#[test]
fn equal_inputs_give_identical_reports() {
    let a = run_json(cfg("piii700-1m", 2, "fifo", "lat_pipe:rounds=2000"));
    let b = run_json(cfg("piii700-1m", 2, "fifo", "lat_pipe:rounds=2000"));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    for p in POLICIES {
        let a = run_json(cfg("piii700-1m", 4, p.name, "bw_pipe:mb=2"));
        let b = run_json(cfg("piii700-1m", 4, p.name, "bw_pipe:mb=2"));
        assert_eq!(a, b, "policy {}", p.name);
    }
}

#[test]
fn lat_pipe_counts_every_round_trip_and_conserves_bytes() {
    let mut sim = Simulation::new(cfg(
        "piii700-1m",
        2,
        "fifo",
        "lat_pipe:rounds=500,warmup=10",
    ))
    .unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    assert_eq!(sim.rec.count("round_trips"), 510);
    let written: u64 = sim.k.streams.iter().map(|s| s.written).sum();
    assert_eq!(written, 2 * 510, "one byte each way per round trip");
    let r = sim.report().unwrap();
    assert_eq!(r.result.metric, "us_per_round_trip");
    // Two hops of syscalls, pipe work, wake-up and switch: microseconds, not ns or ms.
    assert!(
        r.result.value > 3.0 && r.result.value < 40.0,
        "{}",
        r.result.value
    );
}

#[test]
fn bw_pipe_moves_the_bytes_asked_for() {
    let mut sim = Simulation::new(cfg(
        "piii700-4way-1m",
        4,
        "fifo",
        "bw_pipe:mb=3,warmup_kb=64",
    ))
    .unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    let s = &sim.k.streams[0];
    assert_eq!(s.written, 3 * (1 << 20) + 64 * 1024);
    assert_eq!(s.read, s.written);
    let r = sim.report().unwrap();
    assert!(
        r.result.value > 10.0 && r.result.value < 5000.0,
        "{}",
        r.result.value
    );
}

#[test]
fn a_larger_transfer_does_proportionally_more_work() {
    let small = schedlab::run(cfg("piii700-4way-1m", 4, "fifo", "bw_pipe:mb=2")).unwrap();
    let big = schedlab::run(cfg("piii700-4way-1m", 4, "fifo", "bw_pipe:mb=8")).unwrap();
    let ratio = big.counters.context_switches as f64 / small.counters.context_switches as f64;
    assert!(ratio > 3.0 && ratio < 5.0, "switch ratio {ratio}");
}

#[test]
fn cpu_time_is_conserved_per_cpu() {
    let sim = run_custom("fifo", 3, 7, || {
        let mut n = 0;
        program(move |_e: &mut Env<'_>| {
            n += 1;
            match n {
                1..=3 => Op::Fork {
                    child: hog(20 * MS),
                },
                4..=6 => Op::Wait,
                _ => Op::Exit,
            }
        })
    });
    for c in &sim.k.cpus {
        assert_eq!(c.acct.iter().sum::<Time>(), c.clock);
    }
    let runtime: Time = sim.k.tasks.iter().map(|t| t.stats.runtime_ns).sum();
    assert!(runtime >= 60 * MS, "three 20 ms hogs ran {runtime} ns");
}

fn hog(ns: Time) -> Box<dyn Program> {
    let mut done = false;
    program(move |e: &mut Env<'_>| {
        if done {
            e.count("done", 1);
            return Op::Exit;
        }
        done = true;
        Op::Compute { ns, ws: 0 }
    })
}

#[test]
fn the_tick_time_slices_cpu_hogs_on_one_cpu() {
    // Two 100 ms hogs on one CPU with 10 ms slices: about 20 switches between them.
    let sim = run_custom("fifo:slice_ms=10", 1, 1, || {
        let mut n = 0;
        program(move |_e: &mut Env<'_>| {
            n += 1;
            match n {
                1 | 2 => Op::Fork {
                    child: hog(100 * MS),
                },
                3 | 4 => Op::Wait,
                _ => Op::Exit,
            }
        })
    });
    let sw = sim.k.stats.task_switches;
    assert!((15..=30).contains(&sw), "{sw} task switches");
    assert!(
        sim.k.now >= 200 * MS && sim.k.now < 215 * MS,
        "ran {} ns",
        sim.k.now
    );
}

#[test]
fn nanosleep_wakes_on_a_tick_boundary() {
    let sim = run_custom("fifo", 1, 1, || {
        let mut n = 0;
        program(move |e: &mut Env<'_>| {
            n += 1;
            match n {
                1 => {
                    e.mark("a");
                    Op::Sleep { ns: 25 * MS }
                }
                2 => {
                    e.mark("b");
                    Op::Exit
                }
                _ => unreachable!(),
            }
        })
    });
    let slept = sim.rec.last("b").unwrap() - sim.rec.first("a").unwrap();
    // 2.4 rounds up to jiffies and adds one: 3 + 1 ticks of 10 ms, less the phase.
    assert!((30 * MS..=41 * MS).contains(&slept), "slept {slept} ns");
}

#[test]
fn wait_reaps_children_and_reports_echild() {
    let sim = run_custom("fifo", 2, 1, || {
        let mut n = 0;
        program(move |e: &mut Env<'_>| {
            n += 1;
            match n {
                1 | 2 => Op::Fork { child: hog(US) },
                3 | 4 => Op::Wait,
                5 => Op::Wait,
                _ => {
                    assert_eq!(e.ret, ECHILD);
                    e.count("done", 1);
                    Op::Exit
                }
            }
        })
    });
    assert_eq!(sim.rec.count("done"), 3);
    assert!(sim
        .k
        .tasks
        .iter()
        .filter(|t| !t.is_idle)
        .all(|t| t.state == schedlab::kernel::task::TaskState::Dead));
}

#[test]
fn fork_beyond_the_process_limit_is_refused() {
    // piii700-1m: 1 GB, NPROC 8192 (benchmarks.md §1.4).
    let sim = run_custom("fifo", 1, 1, || {
        let mut n = 0u64;
        program(move |e: &mut Env<'_>| {
            n += 1;
            if e.ret == EAGAIN {
                e.count("refused_at", n);
                e.stop();
                return Op::Exit;
            }
            Op::Fork {
                child: program(|_e: &mut Env<'_>| Op::Sleep { ns: 3_600_000 * MS }),
            }
        })
    });
    let nproc = schedlab::machine::preset::find("piii700-1m")
        .unwrap()
        .limits
        .nproc;
    assert_eq!(nproc, 8192);
    // init plus 8191 children are 8192 tasks: the 8192nd fork is refused.
    assert_eq!(sim.rec.count("refused_at"), nproc + 1);
}

#[test]
fn bad_input_is_one_clear_error() {
    let e = Simulation::new(cfg("piii700-1m", 2, "nosuch", "lat_pipe"))
        .err()
        .unwrap();
    assert!(matches!(e, SimError::Input(_)));
    assert!(
        e.to_string()
            .starts_with("unknown policy 'nosuch' (accepted: fifo"),
        "{e}"
    );
    let e = Simulation::new(cfg("piii700-1m", 2, "fifo", "lat_pipe:bogus=1"))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("unknown option 'bogus' for workload lat_pipe (accepted: rounds, warmup)"),
        "{e}"
    );
    let e = Simulation::new(cfg("piii700-1m", 9, "fifo", "lat_pipe"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("has 8 CPUs"), "{e}");
    let e = Simulation::new(cfg("pentium", 2, "fifo", "lat_pipe"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("unknown machine 'pentium'"), "{e}");
}

/// Small instances of the era's benchmarks (issue 6a), for the every-policy runs below.
const SMALL_BENCHMARKS: &[&str] = &[
    "reflex:tasks=6,warmup_ms=5,duration_ms=10",
    "reflex:tasks=5,sets=1,warmup_ms=0,duration_ms=10,delay_us=3,yield_pct=30",
    "chat:rooms=2,users=4,messages=4",
    "chat:rooms=1,users=3,messages=5,nice=19",
    "hackbench:groups=2,loops=3,fds=5",
    "hackbench:groups=1,loops=3,fds=4,pipe=on,threads=on",
    "loop_yield:instances=5,duration_ms=20,warmup_ms=10",
    "sched_yield:threads=5,duration_ms=20,warmup_ms=10",
];

#[test]
fn every_benchmark_runs_under_every_policy_and_preset() {
    for preset in schedlab::machine::preset::PRESETS {
        for p in POLICIES {
            for w in SMALL_BENCHMARKS {
                let c = cfg(preset.name, preset.cpus.min(4), p.name, w);
                let r = schedlab::run(c)
                    .unwrap_or_else(|e| panic!("{w} on {} under {}: {e}", preset.name, p.name));
                assert!(
                    r.result.value.is_finite() && r.result.value > 0.0,
                    "{w} on {} under {}: {}",
                    preset.name,
                    p.name,
                    r.result.value
                );
            }
        }
    }
}

// ---- property test: random workloads through the invariant checks -----------------------

#[derive(Clone, Debug)]
enum Step {
    Compute(u32, u32),
    Yield,
    Sleep(u32),
    Ping(u8),
    Nice(i8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u32..3000, 0u32..64).prop_map(|(us, kb)| Step::Compute(us, kb)),
        Just(Step::Yield),
        (1u32..30).prop_map(Step::Sleep),
        (1u8..200).prop_map(Step::Ping),
        (-5i8..5).prop_map(Step::Nice),
    ]
}

/// A pair of tasks joined by two pipes: the first runs `steps`; every `Ping(n)` sends
/// n bytes that its partner echoes, so nothing can deadlock.
fn pair(steps: Vec<Step>, threads: bool) -> Box<dyn Program> {
    let mut pc = 0usize;
    let mut stage = 0u8;
    let (mut a, mut b) = (0u32, 0u32);
    let pings: u32 = steps.iter().filter(|s| matches!(s, Step::Ping(_))).count() as u32;
    let mut pending: Option<u64> = None;
    program(move |e: &mut Env<'_>| {
        match stage {
            0 => {
                stage = 1;
                return Op::Pipe;
            }
            1 => {
                a = e.ret as u32;
                stage = 2;
                return Op::Pipe;
            }
            2 => {
                b = e.ret as u32;
                stage = 3;
                let echo = echo(a, b + 1, pings);
                return if threads {
                    Op::Clone { child: echo }
                } else {
                    Op::Fork { child: echo }
                };
            }
            _ => {}
        }
        if let Some(n) = pending.take() {
            return Op::Read { fd: b, len: n };
        }
        let Some(s) = steps.get(pc).cloned() else {
            return if stage == 3 {
                stage = 4;
                Op::Wait
            } else {
                e.count("done", 1);
                Op::Exit
            };
        };
        pc += 1;
        match s {
            Step::Compute(us, kb) => Op::Compute {
                ns: us as Time * US,
                ws: kb as u64 * 1024,
            },
            Step::Yield => Op::Yield,
            Step::Sleep(ms) => Op::Sleep {
                ns: ms as Time * MS,
            },
            Step::Ping(n) => {
                pending = Some(n as u64);
                Op::Write {
                    fd: a + 1,
                    len: n as u64,
                }
            }
            Step::Nice(d) => Op::Nice { inc: d as i32 },
        }
    })
}

/// Echo each message back: one read of exactly the bytes that arrived, written back.
fn echo(rd: u32, wr: u32, messages: u32) -> Box<dyn Program> {
    let mut left = messages;
    let mut reading = true;
    program(move |e: &mut Env<'_>| {
        if left == 0 {
            return Op::Exit;
        }
        if reading {
            reading = false;
            Op::Read { fd: rd, len: 256 }
        } else {
            reading = true;
            left -= 1;
            Op::Write {
                fd: wr,
                len: e.ret as u64,
            }
        }
    })
}

fn random_workload(
    pairs: Vec<(Vec<Step>, bool)>,
) -> impl Fn() -> Box<dyn Program> + Send + 'static {
    move || {
        let pairs = pairs.clone();
        let mut i = 0;
        let n = pairs.len();
        program(move |_e: &mut Env<'_>| {
            i += 1;
            if i <= n {
                let (steps, threads) = pairs[i - 1].clone();
                Op::Fork {
                    child: pair(steps, threads),
                }
            } else if i <= 2 * n {
                Op::Wait
            } else {
                Op::Exit
            }
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_workloads_keep_the_invariants(
        pairs in prop::collection::vec((prop::collection::vec(step(), 1..25), any::<bool>()), 1..6),
        cpus in 1usize..=8,
        seed in 0u64..1000,
    ) {
        let n = pairs.len() as u64;
        for p in POLICIES {
            // run() checks kernel and policy invariants every 4096 events (debug builds)
            // and at the end; a violation panics with the time and the broken rule.
            let sim = run_custom(p.name, cpus, seed, random_workload(pairs.clone()));
            prop_assert_eq!(sim.rec.count("done"), n, "policy {}", p.name);
            prop_assert!(sim.check().is_ok());
            for s in &sim.k.streams {
                prop_assert_eq!(s.written, s.read, "every byte written is read");
            }
            prop_assert!(sim.k.tasks.iter().all(|t| t.is_idle || t.state == schedlab::kernel::task::TaskState::Dead));
        }
    }
}
