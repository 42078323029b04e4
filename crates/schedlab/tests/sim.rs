//! Integration tests of the simulator: determinism, structure of the workloads, kernel
//! mechanisms, and a property test running random workloads through the invariant checks
//! under every registered policy.

use proptest::prelude::*;

use schedlab::engine::{Time, MS, US};
use schedlab::kernel::abi::{program, Env, Op, Program, Record, EAGAIN, ECHILD};
use schedlab::kernel::Kernel;
use schedlab::policy::POLICIES;
use schedlab::report::Metric;
use schedlab::workload::{metric, Workload, WORKLOADS};
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
    serde_json::to_value(&r).unwrap()
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
    assert_eq!(sim.k.rec.count("round_trips"), 510);
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
        "bw_pipe:mb=3,warmup_kb=64,warmup_ms=0",
    ))
    .unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    // Timed: exactly the 3 MB asked for, after at least the 64 KB warm-up; the writer
    // streams until the reader is done, so what it wrote is read or still buffered.
    assert_eq!(sim.k.rec.count("bytes"), 3 << 20);
    let s = &sim.k.streams[0];
    assert!(s.read >= (3 << 20) + 64 * 1024, "read {}", s.read);
    assert!(
        s.written - s.read <= 4096,
        "at most a pipe buffer left: {}",
        s.written - s.read
    );
    let r = sim.report().unwrap();
    assert!(
        r.result.value > 10.0 && r.result.value < 5000.0,
        "{}",
        r.result.value
    );
}

#[test]
fn a_larger_transfer_does_proportionally_more_work() {
    let small = schedlab::run(cfg(
        "piii700-4way-1m",
        4,
        "fifo",
        "bw_pipe:mb=2,warmup_ms=0",
    ))
    .unwrap();
    let big = schedlab::run(cfg(
        "piii700-4way-1m",
        4,
        "fifo",
        "bw_pipe:mb=8,warmup_ms=0",
    ))
    .unwrap();
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

fn hog_over(ns: Time, ws: u64) -> Box<dyn Program> {
    let mut done = false;
    program(move |e: &mut Env<'_>| {
        if done {
            e.count("done", 1);
            return Op::Exit;
        }
        done = true;
        Op::Compute { ns, ws }
    })
}

// See: issue 14 item 7 — a refill longer than a time slice was re-paid whole at every
// interrupt (the rewind pushed back the un-elapsed stall and the resumed pass touched the
// whole set again), so large working sets never finished.
#[test]
fn a_pass_cut_by_interrupts_pays_its_refill_once() {
    // Two hogs of 10 ms over 8 MB each on one CPU, 1 ms slices: each pass misses its whole
    // set once (8 MB / 32 B x 86 ns = 22.5 ms, bus queueing aside), whoever evicts whom.
    let sim = run_custom("fifo:hz=1000,slice_ms=1", 1, 1, || {
        let mut n = 0;
        program(move |_e: &mut Env<'_>| {
            n += 1;
            match n {
                1 | 2 => Op::Fork {
                    child: hog_over(10 * MS, 8 << 20),
                },
                3 | 4 => Op::Wait,
                _ => Op::Exit,
            }
        })
    });
    assert_eq!(sim.k.rec.count("done"), 2);
    let refill = (8u64 << 20) / 32 * 86;
    let runtime: Time = sim.k.tasks.iter().map(|t| t.stats.runtime_ns).sum();
    assert!(
        runtime >= 2 * (10 * MS + refill) && runtime < 2 * (10 * MS + refill) * 13 / 10,
        "two passes ran {runtime} ns"
    );
    let sw = sim.k.stats.task_switches;
    assert!(sw >= 20, "the slices interleaved them: {sw} switches");
}

// See: issue 14 item 7 — 64 MB working sets finish, in memory bounded by the cache model.
#[test]
fn sixty_four_megabyte_working_sets_finish() {
    for w in [
        "synthetic:ws_kb=65536,tasks=20,ops=5",
        "lat_ctx:size_kb=65536,procs=4,rounds=5,warmup=1,ovr_iters=5",
        "synthetic:ws_kb=2048,tasks=20,ops=5,compute_us=100",
    ] {
        for policy in ["linux-2.4", "linux-2.4:hz=1000"] {
            let sim = sim_of(2, policy, w);
            // Two levels on each of two CPUs, each within its minimum 64 slots.
            assert!(
                sim.k.cache.entries() <= 4 * 64,
                "{w}: {}",
                sim.k.cache.entries()
            );
        }
    }
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
    let slept = sim.k.rec.last("b").unwrap() - sim.k.rec.first("a").unwrap();
    // 2.4 rounds up to jiffies and adds one: the timer expires 3 + 1 jiffies after the
    // jiffy of the call (30..40 ms after it), and the CPU sees it at its next tick, which
    // lags the jiffy by the CPU's seeded phase (< 10 ms; kernel/initial.rs).
    assert!((30 * MS..50 * MS).contains(&slept), "slept {slept} ns");
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
    assert_eq!(sim.k.rec.count("done"), 3);
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
    let nproc = schedlab::machine::catalog::find("piii700-1m")
        .unwrap()
        .limits
        .nproc;
    assert_eq!(nproc, 8192);
    // init plus 8191 children are 8192 tasks: the 8192nd fork is refused.
    assert_eq!(sim.k.rec.count("refused_at"), nproc + 1);
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
        e.to_string().contains(
            "unknown option 'bogus' for workload lat_pipe (accepted: rounds, warmup, pin)"
        ),
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

/// Every registered workload's small instances (issue 6a), from the registry.
fn small_benchmarks() -> impl Iterator<Item = &'static str> {
    WORKLOADS.iter().flat_map(|w| w.small.iter().copied())
}

#[test]
fn every_workload_has_small_instances_of_its_own() {
    for w in WORKLOADS {
        assert!(
            !w.small.is_empty(),
            "workload {} has no small instance",
            w.name
        );
        for spec in w.small {
            let name = spec.split(':').next().unwrap();
            assert_eq!(name, w.name, "small instance {spec} of workload {}", w.name);
        }
    }
}

/// `--seed` varies the machine's initial conditions for every workload: two seeds give
/// different runs (result or event count), one seed gives the same bytes. See: issue 17
/// item 7 (9 of 12 workloads ignored the seed).
#[test]
fn every_workload_varies_with_the_seed_and_repeats_with_it() {
    for w in WORKLOADS {
        let spec = w.small[0];
        let run = |seed: u64| {
            let mut c = cfg("piii700-1m", 2, "o1-2.6", spec);
            c.seed = seed;
            serde_json::to_string(&run_json(c)).unwrap()
        };
        let (a, b, a2) = (run(1), run(2), run(1));
        assert_eq!(a, a2, "{spec}: seed 1 twice gave different output");
        assert_ne!(a, b, "{spec}: seeds 1 and 2 gave identical output");
        let v = |s: &str| {
            let v: serde_json::Value = serde_json::from_str(s).unwrap();
            (v["result"]["value"].clone(), v["sim"]["events"].clone())
        };
        assert_ne!(
            v(&a),
            v(&b),
            "{spec}: seeds 1 and 2 gave equal result and events"
        );
    }
}

/// The seeded initial conditions stay within their documented bounds (one tick period for
/// a CPU's tick phase, one page copy for a task's start offset) and do vary. See: issue 17
/// item 7, `kernel/initial.rs`.
#[test]
fn initial_conditions_stay_within_their_bounds() {
    use schedlab::kernel::initial::start_offset_bound;
    let mut phases = std::collections::BTreeSet::new();
    let mut offsets = std::collections::BTreeSet::new();
    for seed in 1..=20 {
        for (policy, preset) in [("linux-2.4", "piii700-1m"), ("o1-2.6", "piii700-4way-1m")] {
            let mut c = cfg(preset, 4, policy, "hackbench:groups=1,loops=5");
            c.seed = seed;
            let mut sim = Simulation::new(c).unwrap();
            let bound = start_offset_bound(sim.k.machine.costs());
            assert!(
                bound > 0 && bound <= 20 * US,
                "start offset bound {bound} ns"
            );
            sim.run(&mut |_, _| {}).unwrap();
            let k = &sim.k;
            for cpu in &k.cpus {
                assert!(
                    cpu.tick_phase < k.tick_ns,
                    "seed {seed}: phase {}",
                    cpu.tick_phase
                );
                phases.insert(cpu.tick_phase);
            }
            let user: Vec<_> = k.tasks.iter().filter(|t| !t.is_idle).collect();
            assert!(user.len() >= 40, "hackbench's tasks were created");
            for t in user {
                assert!(
                    t.start_offset < bound,
                    "seed {seed}: offset {}",
                    t.start_offset
                );
                offsets.insert(t.start_offset);
            }
        }
    }
    // (The two machines of one seed draw the same offsets: 20 seeds × ≥ 40 tasks.)
    assert!(
        phases.len() > 100,
        "tick phases hardly vary: {}",
        phases.len()
    );
    assert!(
        offsets.len() > 700,
        "start offsets hardly vary: {}",
        offsets.len()
    );
}

/// Every small instance under every policy; the machine presets take turns (instance `j`
/// under policy `i` runs on preset `i + j`), so every instance and every policy also meet
/// every preset without running the whole product.
#[test]
fn every_benchmark_runs_under_every_policy_and_preset() {
    let presets = schedlab::machine::catalog::all();
    for (i, p) in POLICIES.iter().enumerate() {
        for (j, w) in small_benchmarks().enumerate() {
            let preset = presets[(i + j) % presets.len()];
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

/// Issue 15: `cfs` and `eevdf` run every small instance on every preset (all of them, not
/// in turns), with the policy invariants checked at the end of each run.
#[test]
fn fair_policies_run_every_benchmark_on_every_preset() {
    for policy in ["cfs", "eevdf"] {
        for preset in schedlab::machine::catalog::all() {
            for w in small_benchmarks() {
                let c = cfg(preset.name, preset.cpus.min(4), policy, w);
                let r = schedlab::run(c)
                    .unwrap_or_else(|e| panic!("{w} on {} under {policy}: {e}", preset.name));
                assert!(
                    r.result.value.is_finite() && r.result.value > 0.0,
                    "{w} on {} under {policy}: {}",
                    preset.name,
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
            prop_assert_eq!(sim.k.rec.count("done"), n, "policy {}", p.name);
            prop_assert!(sim.check().is_ok());
            for s in &sim.k.streams {
                prop_assert_eq!(s.written, s.read, "every byte written is read");
            }
            prop_assert!(
                sim.k.tasks.iter().all(|t| t.is_idle || t.state == schedlab::kernel::task::TaskState::Dead),
                "policy {}: {:?}", p.name,
                sim.k.tasks.iter().map(|t| (t.pid, t.state, t.processor, t.on_cpu)).collect::<Vec<_>>()
            );
        }
    }
}

// ---- lat_ctx, lat_proc, tbench, mkbench: structure ----------------------------------------

fn sim_of(cpus: usize, policy: &str, workload: &str) -> Simulation {
    let mut sim = Simulation::new(cfg("piii700-1m", cpus, policy, workload)).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim
}

fn timed(sim: &Simulation) -> Time {
    sim.k.rec.last("end").unwrap() - sim.k.rec.first("start").unwrap()
}

#[test]
fn lat_ctx_passes_the_token_round_the_ring_and_subtracts_its_overhead() {
    let (procs, rounds, warmup, ovr) = (4u64, 300u64, 5u64, 100u64);
    let w =
        format!("lat_ctx:procs={procs},size_kb=16,rounds={rounds},warmup={warmup},ovr_iters={ovr}");
    for p in POLICIES {
        let sim = sim_of(2, p.name, &w);
        // The ring: every member forwards the token once per trip, start-up trip included.
        assert_eq!(
            sim.k.rec.count("hops"),
            procs * (1 + warmup + rounds),
            "{}",
            p.name
        );
        assert_eq!(sim.k.rec.count("trips"), warmup + rounds);
        assert_eq!(sim.k.stats.forks, procs - 1, "procs - 1 members are forked");
        // Bytes: 4-byte tokens — the pipe-cost passes (one untimed) plus the ring hops.
        let written: u64 = sim.k.streams.iter().map(|s| s.written).sum();
        assert_eq!(written, 4 * (ovr + 1) + 4 * procs * (1 + warmup + rounds));
        let r = sim.report().unwrap();
        assert_eq!(r.result.metric, "us_per_switch");
        // The subtraction leaves the switch (plus refill): positive, µs-scale.
        assert!(
            r.result.value > 0.5 && r.result.value < 100.0,
            "{}",
            r.result.value
        );
        // The overhead is measured, and is less than a hop.
        let hop = timed(&sim) as f64 / (rounds * procs) as f64 / 1000.0;
        assert!(r.result.value < hop);
    }
}

#[test]
fn lat_ctx_with_more_processes_does_proportionally_more_hops() {
    let small = sim_of(1, "fifo", "lat_ctx:procs=2,rounds=400");
    let big = sim_of(1, "fifo", "lat_ctx:procs=8,rounds=400");
    let ratio = timed(&big) as f64 / timed(&small) as f64;
    // 4× the hops; each of the 8 processes' lines and footprints also moves more often
    // (lmbench: 2.74 µs at 2 processes, 3.07 at 8, B§6.2).
    assert!(ratio > 3.0 && ratio < 6.0, "timed ratio {ratio}");
    assert_eq!(big.k.rec.count("hops"), 4 * small.k.rec.count("hops"));
}

#[test]
fn lat_proc_forks_and_reaps_one_child_per_iteration() {
    for p in POLICIES {
        let sim = sim_of(4, p.name, "lat_proc:op=fork,n=200,warmup=5");
        assert_eq!(sim.k.stats.forks, 205, "{}", p.name);
        assert_eq!(sim.k.rec.count("reaped"), 205);
        assert_eq!(sim.k.rec.count("execs"), 0);
        let fork = sim.report().unwrap().result.value;
        let sim = sim_of(4, p.name, "lat_proc:op=exec,n=200,warmup=5");
        assert_eq!(sim.k.rec.count("execs"), 205);
        let exec = sim.report().unwrap().result.value;
        // fork+exit+wait costs hundreds of µs; an exec adds the exec cost on top.
        assert!(fork > 100.0 && fork < 1000.0, "fork {fork}");
        assert!(exec > fork + 300.0, "exec {exec} vs fork {fork}");
    }
}

#[test]
fn tbench_exchanges_every_request_and_nothing_sends_before_go() {
    let (clients, ops) = (3u64, 300u64);
    for p in POLICIES {
        let sim = sim_of(4, p.name, &format!("tbench:clients={clients},ops={ops}"));
        assert_eq!(
            sim.k.stats.forks,
            2 * clients,
            "{}: a client and a server each",
            p.name
        );
        assert_eq!(sim.k.rec.count("exchanges"), clients * ops);
        // Every request (set-up exchange included) got its reply from the server.
        assert_eq!(sim.k.rec.count("replies"), clients * (ops + 1));
        let tcp: u64 = sim
            .k
            .streams
            .iter()
            .filter(|s| s.kind == schedlab::kernel::chan::StreamKind::Tcp)
            .map(|s| s.written)
            .sum();
        assert_eq!(
            tcp,
            sim.k.rec.count("request_bytes") + sim.k.rec.count("reply_bytes")
        );
        // Barrier: no client starts its timed exchanges before "go".
        let go = sim.k.rec.first("start").unwrap();
        let firsts = &sim.k.rec.marks["first_request"];
        assert_eq!(firsts.len() as u64, clients);
        assert!(firsts.iter().all(|&t| t >= go));
        let r = sim.report().unwrap();
        assert_eq!(r.result.metric, "mb_per_s");
        assert!(
            r.result.value > 1.0 && r.result.value < 2000.0,
            "{}",
            r.result.value
        );
    }
}

#[test]
fn tbench_scales_with_clients_and_hits_the_file_limit() {
    let a = sim_of(2, "fifo", "tbench:clients=2,ops=200");
    let b = sim_of(2, "fifo", "tbench:clients=4,ops=200");
    assert_eq!(b.k.rec.count("exchanges"), 2 * a.k.rec.count("exchanges"));
    let ratio = b.k.rec.count("payload_bytes") as f64 / a.k.rec.count("payload_bytes") as f64;
    assert!(ratio > 1.5 && ratio < 2.5, "payload ratio {ratio}");
    // 4096 connections need 8192 sockets: file-max (8192) refuses the last connect.
    let e = schedlab::run(cfg("piii700-1m", 2, "fifo", "tbench:clients=4096,ops=1"))
        .err()
        .unwrap();
    assert!(matches!(e, SimError::Workload(_)));
    assert!(e.to_string().contains("refused"), "{e}");
}

#[test]
fn mkbench_builds_every_file_within_the_job_limit() {
    let files: u64 = schedlab::workload::mkbench::TREE
        .iter()
        .map(|d| d.files as u64)
        .sum();
    let dirs = schedlab::workload::mkbench::TREE.len() as u64;
    let tail = schedlab::workload::mkbench::TAIL.len() as u64;
    let sim = sim_of(8, "fifo", "mkbench:makes=1,jobs=2,cc1_ms=20");
    assert_eq!(sim.k.rec.count("files"), files);
    assert_eq!(
        sim.k.rec.count("makes"),
        dirs - 1,
        "one sub-make per directory"
    );
    assert_eq!(sim.k.rec.count("links"), dirs);
    assert_eq!(sim.k.rec.count("tail_steps"), tail - 1);
    // Tasks: the top make, sub-makes, gcc + cpp + cc1 + as per file, links, tail.
    assert_eq!(
        sim.k.stats.forks,
        1 + (dirs - 1) + 4 * files + dirs + (tail - 1)
    );
    // The jobserver: never more than `jobs` compile jobs between token and return.
    let mut ev: Vec<(Time, i32)> = sim.k.rec.marks["job_start"]
        .iter()
        .map(|&t| (t, 1))
        .collect();
    ev.extend(sim.k.rec.marks["job_end"].iter().map(|&t| (t, -1)));
    ev.sort();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in ev {
        now += d;
        max = max.max(now);
    }
    assert!((1..=2).contains(&max), "{max} jobs at once with -j2");
    let r = sim.report().unwrap();
    assert_eq!(r.result.metric, "s_per_build");
}

#[test]
fn mkbench_more_makes_do_proportionally_more_work() {
    for p in POLICIES {
        let one = sim_of(8, p.name, "mkbench:makes=1,cc1_ms=20");
        let two = sim_of(8, p.name, "mkbench:makes=2,cc1_ms=20");
        assert_eq!(
            two.k.rec.count("files"),
            2 * one.k.rec.count("files"),
            "{}",
            p.name
        );
        assert_eq!(two.k.rec.count("builds"), 2);
        let ratio = two.k.rec.count("cc1_ns") as f64 / one.k.rec.count("cc1_ns") as f64;
        assert!(ratio > 1.7 && ratio < 2.3, "cc1 work ratio {ratio}");
    }
}

/// `threads` threads of one process that sleep until `start` (so that all of them exist)
/// and then call `sched_yield()` until `until`.
fn yield_loop(
    threads: u32,
    start: Time,
    until: Time,
) -> impl Fn() -> Box<dyn Program> + Send + 'static {
    move || {
        let mut i = 0;
        program(move |_e: &mut Env<'_>| {
            i += 1;
            if i <= threads {
                Op::Clone {
                    child: program(move |e: &mut Env<'_>| {
                        if e.now < start {
                            Op::Sleep { ns: start - e.now }
                        } else if e.now >= until {
                            e.count("done", 1);
                            Op::Exit
                        } else {
                            Op::Yield
                        }
                    }),
                }
            } else if i <= 2 * threads {
                Op::Wait
            } else {
                Op::Exit
            }
        })
    }
}

/// (µs per `schedule()` as the policy charged it, runqueue_lock contended %, mean wait
/// per acquisition in ns) of a yield loop under linux-2.4.
fn linux24_yield_costs(threads: u32, cpus: usize) -> (f64, f64, f64) {
    let sim = run_custom("linux-2.4", cpus, 1, yield_loop(threads, 10 * MS, 40 * MS));
    assert_eq!(sim.k.rec.count("done"), threads as u64);
    let r = sim.report().unwrap();
    let lock = &r.counters.locks["runqueue_lock"];
    let p = &r.counters.policy;
    assert!(p["schedule_calls"] > 100.0);
    assert!(p["tasks_examined_mean"] > 0.5 * threads as f64, "{p:?}");
    (
        r.counters.schedule_ns_mean / 1e3,
        lock.contended_pct,
        lock.wait_ns_mean,
    )
}

// See: system.md findings 1 and 2 (runqueue-lock collapse, O(n) selection).
#[test]
fn linux24_schedule_cost_and_lock_contention_grow_with_tasks_and_cpus() {
    let (few, _, few_w) = linux24_yield_costs(8, 4);
    let (many, many_c, many_w) = linux24_yield_costs(64, 4);
    let (many8, many8_c, many8_w) = linux24_yield_costs(64, 8);
    let (many2, many2_c, many2_w) = linux24_yield_costs(64, 2);
    // The walk charges every runnable task: 8× the tasks costs at least twice as much
    // (a task whose line this CPU still holds costs an L2 hit, not a miss).
    assert!(many > 2.0 * few, "8 tasks {few} µs, 64 tasks {many} µs");
    assert!(many_w > few_w, "wait {few_w} ns → {many_w} ns");
    // More CPUs contend for the one lock: spinning lands in schedule().
    assert!(
        many2 < many && many < many8,
        "2/4/8 CPUs: {many2} / {many} / {many8} µs"
    );
    assert!(
        many2_w < many_w && many_w < many8_w,
        "2/4/8 CPUs: wait {many2_w} / {many_w} / {many8_w} ns"
    );
    assert!(many2_c < many8_c, "contended {many2_c}% vs {many8_c}%");
    let _ = many_c;
}

fn policy_counters(policy: &str, workload: &str) -> serde_json::Value {
    run_json(cfg("piii700-2m", 8, policy, workload))["counters"].clone()
}

/// See: table V4 (and system.md finding 5) — a higher PROC_CHANGE_PENALTY isolates MQ's
/// queues: fewer migrations, fewer steals, fewer placements away from the task's CPU.
#[test]
#[ignore = "known miss, see docs/calibration.md: V4 counters 4+5 do not fall with pcp in the model"]
fn mq_higher_pcp_means_fewer_migrations_and_steals() {
    let w = "reflex:tasks=24,sets=12";
    let lo = policy_counters("mq:pcp=6", w);
    let hi = policy_counters("mq:pcp=40", w);
    let f = |v: &serde_json::Value, k: &str| v["policy"][k].as_f64().unwrap();
    assert!(hi["migrations"].as_u64() < lo["migrations"].as_u64());
    assert!(f(&hi, "remote_still_better_pct") < f(&lo, "remote_still_better_pct"));
    let placed = |v: &serde_json::Value| {
        f(v, "resched_target_is_task_cpu_pct") + f(v, "resched_remote_lock_ok_pct")
    };
    assert!(placed(&hi) < placed(&lo));
    for k in [
        "remote_better_pct",
        "remote_lock_ok_pct",
        "remote_still_better_pct",
    ] {
        assert!(f(&lo, k) > 0.0 && f(&lo, k) <= 100.0, "{k}");
    }
    // Counter 2 implies 1, counter 3 implies 2.
    assert!(f(&lo, "remote_still_better_pct") <= f(&lo, "remote_lock_ok_pct"));
    assert!(f(&lo, "remote_lock_ok_pct") <= f(&lo, "remote_better_pct"));
}

/// See: docs/calibration.md, V4, and our table X3 — with token passing only, reflex's sets
/// settle one per CPU and MQ stops stealing and placing remotely; reflex's Path I
/// (`sched_yield`, goodness −1 for that `schedule()`) keeps CPUs going idle, which brings
/// back the steals and remote placements V4 published. With yields, a higher
/// PROC_CHANGE_PENALTY means fewer remote placements (V4 counter 5).
#[test]
fn mq_reflex_yields_keep_the_steal_and_placement_counters_alive() {
    let window = "warmup_ms=20,duration_ms=40";
    let token = policy_counters("mq:pcp=6", &format!("reflex:tasks=16,sets=8,{window}"));
    let w = format!("reflex:tasks=16,sets=8,yield_pct=50,{window}");
    let lo = policy_counters("mq:pcp=6", &w);
    let hi = policy_counters("mq:pcp=40", &w);
    let f = |v: &serde_json::Value, k: &str| v["policy"][k].as_f64().unwrap();
    // Token passing alone nearly settles (a few % of steals remain once hand-offs and
    // line transfers take time); the yield mix keeps them many times higher.
    assert!(f(&token, "remote_still_better_pct") < 5.0, "{token}");
    assert!(f(&token, "resched_remote_lock_ok_pct") < 1.0, "{token}");
    assert!(token["idle_pct"].as_f64().unwrap() < 2.0, "{token}");
    for k in ["remote_better_pct", "remote_still_better_pct"] {
        assert!(f(&lo, k) > 15.0, "{k}: {lo}");
    }
    assert!(f(&lo, "resched_target_exists_pct") > 50.0, "{lo}");
    assert!(lo["idle_pct"].as_f64().unwrap() > 5.0, "{lo}");
    assert!(
        f(&hi, "resched_remote_lock_ok_pct") < f(&lo, "resched_remote_lock_ok_pct"),
        "pcp 6: {lo}\npcp 40: {hi}"
    );
}

/// See: system.md finding 3 — haMQ runs the woken task of a 2-task ping-pong on the other
/// (idle) CPU, so nearly every hop is a cross-CPU wake-up with an IPI, and the round is
/// slower than when the pair shares one CPU.
#[test]
fn hamq_two_task_reflex_pays_a_cross_cpu_wakeup_every_hop() {
    let r = run_json(cfg("piii700-1m", 8, "hamq", "reflex:tasks=2,rounds=500"));
    let hops = 2 * 500;
    let ipis = r["counters"]["ipis"].as_u64().unwrap();
    assert!(ipis >= hops * 9 / 10, "{ipis} IPIs for {hops} hops");
    let one_cpu = run_json(cfg("piii700-1m", 1, "hamq", "reflex:tasks=2,rounds=500"));
    assert!(
        r["result"]["value"].as_f64().unwrap() > 1.5 * one_cpu["result"]["value"].as_f64().unwrap()
    );
}

/// Issue 14: a pipe's shared state (`i_sem`, `PIPE_LEN`, the wait-queue head) lives in
/// the cache of the CPU that last wrote it. A 2-task ping-pong split over two CPUs
/// (haMQ) pulls those lines on nearly every call: with 3 lines per pipe call, at most
/// 2 calls x 3 lines per hop, and at least 1 call's worth on most hops. The same pair on one CPU pulls
/// none. With `coherence=off` nothing is pulled, and the split round is cheaper by at
/// least the transfers' cost.
#[test]
fn a_pipe_hop_across_cpus_pulls_the_pipes_state_and_one_on_one_cpu_does_not() {
    let w = "reflex:tasks=2,rounds=500";
    let hops = 2 * 500u64;
    let state = |r: &serde_json::Value| r["counters"]["stream_state_transfers"].as_u64();
    let split = run_json(cfg("piii700-1m", 2, "hamq", w));
    let pulled = state(&split).unwrap();
    assert!(
        (3 * hops * 9 / 10..=6 * hops + 12).contains(&pulled),
        "{pulled} state lines for {hops} split hops"
    );
    let local = run_json(cfg("piii700-1m", 1, "hamq", w));
    assert_eq!(state(&local), None, "one CPU pulls no state lines");
    let off = run_json(cfg("piii700-1m:coherence=off", 2, "hamq", w));
    assert_eq!(state(&off), None, "coherence=off prices no state lines");
    let us = |r: &serde_json::Value| r["result"]["value"].as_f64().unwrap();
    let c2c_ns = schedlab::machine::catalog::find("piii700-1m")
        .unwrap()
        .costs
        .c2c_line_ns;
    let per_round_us = (pulled * c2c_ns) as f64 / 1e3 / 500.0;
    assert!(
        us(&split) - us(&off) >= 0.8 * per_round_us,
        "split round {:.2} us, without coherence {:.2} us, state lines {per_round_us:.2} us per round",
        us(&split),
        us(&off)
    );
}

/// Issue 14: the threads of one mm share its `files_struct` and its `cpu_vm_mask`. Every
/// `read` and `write` takes `files->file_lock` (`fget`) and every switch into a thread
/// sets its CPU's bit in `cpu_vm_mask` (`switch_mm`), both locked operations on a line
/// of the mm. A threaded ping-pong split over two CPUs (haMQ's 2-task reflex) pulls each
/// line about once per hop; the same pair on one CPU pulls none. lat_pipe's two
/// processes, split the same way (their pipe's state moves), have an mm each and pull
/// neither line. `coherence=off` prices none.
#[test]
fn threads_split_over_cpus_pull_their_mms_lines_and_processes_do_not() {
    let hops = 2 * 500u64;
    let pulled = |r: &serde_json::Value, k: &str| r["counters"][k].as_u64().unwrap_or(0);
    let threads = run_json(cfg("piii700-1m", 2, "hamq", "reflex:tasks=2,rounds=500"));
    for k in ["files_line_transfers", "vm_mask_transfers"] {
        let n = pulled(&threads, k);
        assert!(
            (hops * 9 / 10..=hops * 11 / 10).contains(&n),
            "{k}: {n} for {hops} split hops"
        );
    }
    let one = run_json(cfg("piii700-1m", 1, "hamq", "reflex:tasks=2,rounds=500"));
    let procs = run_json(cfg("piii700-1m", 2, "hamq", "lat_pipe:rounds=500"));
    assert!(
        pulled(&procs, "stream_state_transfers") >= hops,
        "lat_pipe's pair is split"
    );
    let off = run_json(cfg(
        "piii700-1m:coherence=off",
        2,
        "hamq",
        "reflex:tasks=2,rounds=500",
    ));
    for (what, r) in [
        ("one CPU", &one),
        ("processes", &procs),
        ("coherence=off", &off),
    ] {
        for k in ["files_line_transfers", "vm_mask_transfers"] {
            assert_eq!(pulled(r, k), 0, "{what}: {k}");
        }
    }
}

/// Pooled MQ with balancing keeps every run queue consistent and actually balances.
#[test]
fn mq_pool_balancer_runs_and_moves_tasks() {
    let c = policy_counters(
        "mq-pool:pool_size=1,lb_interval_ms=10,idle_bitmap=off",
        "reflex:tasks=32,sets=16,rounds=4000",
    );
    assert!(c["policy"]["lb_runs"].as_f64().unwrap() >= 1.0);
    assert!(c["policy"]["lb_moves"].as_f64().unwrap() >= 1.0);
    assert_eq!(
        c["policy"]["steals"].as_f64().unwrap(),
        0.0,
        "pools of one CPU never steal"
    );
}

/// 2-task reflex (µs per round) on `linux-2.4` with `cpus` CPUs of `piii700-1m` whose
/// costs `edit` has changed.
fn reflex_2task_us(cpus: usize, edit: impl FnOnce(&mut schedlab::machine::Costs)) -> f64 {
    let mut preset = schedlab::machine::catalog::find("piii700-1m")
        .unwrap()
        .clone();
    edit(&mut preset.costs);
    let preset: &'static _ = Box::leak(Box::new(preset));
    let machine = schedlab::machine::Machine::boot(preset, Some(cpus)).unwrap();
    let c = cfg(
        "piii700-1m",
        cpus,
        "linux-2.4",
        "reflex:tasks=2,duration_ms=100,warmup_ms=50",
    );
    let mut sim = Simulation::on_machine(c, machine).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim.report().unwrap().result.value
}

/// Issue 14, item 5: 2-task reflex on 2.4 used to be bistable — the pair flipped between
/// sharing a CPU (≈ 6-9 µs) and ping-ponging across two (≈ 27 µs) when a fixed cost
/// moved. Each fixed cost of the hop, and all of them together, moved by ±10 % must move
/// the result by less than 20 %.
#[test]
fn two_task_reflex_on_2_4_is_stable_when_fixed_costs_move() {
    type Knob = (&'static str, fn(&mut schedlab::machine::Costs) -> &mut Time);
    let knobs: [Knob; 11] = [
        ("syscall_ns", |c| &mut c.syscall_ns),
        ("switch_ns", |c| &mut c.switch_ns),
        ("schedule_ns", |c| &mut c.schedule_ns),
        ("wakeup_ns", |c| &mut c.wakeup_ns),
        ("pipe_call_ns", |c| &mut c.pipe_call_ns),
        ("lock_ns", |c| &mut c.lock_ns),
        ("task_examine_ns", |c| &mut c.task_examine_ns),
        ("c2c_line_ns", |c| &mut c.c2c_line_ns),
        ("ipi_send_ns", |c| &mut c.ipi_send_ns),
        ("ipi_latency_ns", |c| &mut c.ipi_latency_ns),
        ("idle_exit_ns", |c| &mut c.idle_exit_ns),
    ];
    let scale = |v: &mut Time, f: f64| *v = (*v as f64 * f).round() as Time;
    for cpus in [2, 8] {
        let base = reflex_2task_us(cpus, |_| {});
        let mut worst = (0.0f64, "");
        for f in [0.9, 1.1] {
            for (name, knob) in knobs {
                let r = reflex_2task_us(cpus, |c| scale(knob(c), f));
                let moved = (r / base - 1.0).abs();
                assert!(
                    moved < 0.2,
                    "{cpus} CPUs: {name} × {f} moves 2-task reflex {base:.2} → {r:.2} µs"
                );
                if moved > worst.0 {
                    worst = (moved, name);
                }
            }
            let all = reflex_2task_us(cpus, |c| {
                for (_, knob) in knobs {
                    scale(knob(c), f);
                }
            });
            let moved = (all / base - 1.0).abs();
            assert!(
                moved < 0.2,
                "{cpus} CPUs: every fixed cost × {f} moves 2-task reflex {base:.2} → {all:.2} µs"
            );
        }
        eprintln!(
            "{cpus} CPUs: base {base:.2} µs, largest single move {:.1} % ({})",
            worst.0 * 100.0,
            worst.1
        );
    }
}

// ---- limits and ranges (issue 17, items 4 and 5) ----------------------------------------

/// A raw errno in a message: "(-23)", "error -11", "returned -23" is allowed only for
/// reads and writes that report what they got.
fn has_raw_errno(msg: &str) -> bool {
    let b = msg.as_bytes();
    (0..b.len().saturating_sub(2)).any(|i| {
        (b[i] == b'(' || msg[..i].ends_with("error "))
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_digit()
    })
}

/// See: issue 17 item 4. A call the simulated kernel refuses names the limit, its value
/// and the option that raises it — and the option does raise it.
#[test]
fn a_refused_call_names_the_limit_its_value_and_the_option() {
    // file-max: chat's TCP pairs run out of files at run time.
    let mut sim =
        Simulation::new(cfg("piii700-1m", 2, "fifo", "chat:rooms=300,messages=1")).unwrap();
    let e = sim.run(&mut |_, _| {}).unwrap_err().to_string();
    assert!(!has_raw_errno(&e), "{e}");
    assert!(
        e.contains("(ENFILE)")
            && e.contains("fs.file-max = 8192 was reached on piii700-1m")
            && e.contains("raise it with --machine piii700-1m:file_max=N"),
        "{e}"
    );
    // RLIMIT_NPROC, lowered: lat_ctx's 100 members cannot all be forked.
    let mut sim = Simulation::new(cfg(
        "piii700-1m:nproc=50",
        2,
        "fifo",
        "lat_ctx:procs=100,rounds=1,warmup=0,ovr_iters=1",
    ))
    .unwrap();
    let e = sim.run(&mut |_, _| {}).unwrap_err().to_string();
    assert!(!has_raw_errno(&e), "{e}");
    assert!(
        e.contains("(EAGAIN)")
            && e.contains("RLIMIT_NPROC = 50 was reached on piii700-1m")
            && e.contains("--machine piii700-1m:nproc=N"),
        "{e}"
    );
    // A need stated up front is refused before the run; raised, the run goes.
    let e = Simulation::new(cfg("piii700-1m", 2, "fifo", "sched_yield:threads=9000"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("needs at least 9001 tasks")
            && e.contains("RLIMIT_NPROC = 8192 on piii700-1m")
            && e.contains("piii700-1m:nproc=N"),
        "{e}"
    );
    let mut sim = Simulation::new(cfg(
        "piii700-1m:nproc=10000",
        2,
        "fifo",
        "sched_yield:threads=9000,duration_ms=1,warmup_ms=0",
    ))
    .unwrap();
    sim.set_event_limit(20_000);
    assert!(matches!(
        sim.run(&mut |_, _| {}),
        Err(SimError::EventLimit(_))
    ));
    // The raised limits are reported; the preset's are not (the contract's bytes).
    let j = run_json(cfg(
        "piii700-1m:file_max=9000",
        2,
        "fifo",
        "lat_pipe:rounds=20",
    ));
    assert_eq!(j["machine"]["limits"]["file_max"], 9000);
    let j = run_json(cfg("piii700-1m", 2, "fifo", "lat_pipe:rounds=20"));
    assert!(j["machine"].get("limits").is_none());
}

/// The value of `p` to try at its bounds: min and max, each choice, on and off.
fn extremes(p: &schedlab::spec::ParamSpec) -> Vec<String> {
    use schedlab::spec::Kind;
    match p.kind {
        Kind::Int { min, max } => vec![min.to_string(), max.to_string()],
        Kind::Float { min, max } => vec![min.to_string(), max.to_string()],
        Kind::Bool => vec!["off".into(), "on".into()],
        Kind::Choice(c) => c.iter().map(|s| s.to_string()).collect(),
        Kind::Text => vec![p.default.to_string()],
    }
}

/// `base` with `key=value` set (replacing a value `base` gives).
fn with_param(base: &str, key: &str, value: &str) -> String {
    let spec = schedlab::spec::Spec::parse("x", base).unwrap();
    let mut args: Vec<(String, String)> = spec.args.into_iter().filter(|(k, _)| k != key).collect();
    args.push((key.into(), value.into()));
    schedlab::spec::Spec {
        name: spec.name,
        args,
    }
    .to_string()
}

/// How one run at an extreme ended: `Ok` when it ran (or was still running at the event
/// budget), else why it is not acceptable.
fn ran_or_named_a_limit(c: RunConfig) -> Result<(), String> {
    let what = format!("{} {} on {}", c.policy, c.workload, c.machine);
    let outcome = std::panic::catch_unwind(|| {
        let mut sim = Simulation::new(c)?;
        sim.set_event_limit(60_000);
        sim.run(&mut |_, _| {})?;
        sim.report().map(|_| ())
    });
    match outcome {
        Err(_) => Err(format!("{what}: panicked")),
        Ok(Ok(())) | Ok(Err(SimError::EventLimit(_))) => Ok(()),
        Ok(Err(e)) => {
            let m = e.to_string();
            let limit = ["fs.file-max", "RLIMIT_NPROC", "max_threads", "PID_MAX"]
                .iter()
                .any(|l| m.contains(l));
            if has_raw_errno(&m) {
                Err(format!("{what}: raw errno in {m:?}"))
            } else if limit || (matches!(e, SimError::Input(_)) && !m.contains('\n')) {
                // Refused in one line naming the limit, or the parameters' relation.
                Ok(())
            } else {
                Err(format!("{what}: neither ran nor named a limit: {m}"))
            }
        }
    }
}

/// See: issue 17 item 5. Every declared parameter of every workload and policy, at each
/// end of its advertised range (the others at a small instance's values), either runs or
/// stops with one line naming the limit — never a panic, never a raw errno.
#[test]
fn every_advertised_extreme_runs_or_names_its_limit() {
    let mut bad = Vec::new();
    let mut runs = 0;
    for (wi, w) in WORKLOADS.iter().enumerate() {
        let base = w.small[0];
        for p in w.params {
            for v in extremes(p) {
                let policy = POLICIES[(wi + runs) % POLICIES.len()].name;
                runs += 1;
                let spec = with_param(base, p.name, &v);
                if let Err(e) = ran_or_named_a_limit(cfg("piii700-1m", 2, policy, &spec)) {
                    bad.push(e);
                }
            }
        }
    }
    for pol in POLICIES {
        for p in pol.params {
            for v in extremes(p) {
                runs += 1;
                let spec = with_param(pol.name, p.name, &v);
                let c = cfg(
                    "piii700-1m",
                    2,
                    &spec,
                    "reflex:tasks=4,warmup_ms=1,duration_ms=2",
                );
                if let Err(e) = ran_or_named_a_limit(c) {
                    bad.push(e);
                }
            }
        }
    }
    assert!(runs > 100, "{runs} runs");
    assert!(
        bad.is_empty(),
        "{} of {runs} extremes:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

// ---- property tests: the parsers and random valid combinations (issue 17 item 15) --------
//
// The case counts keep `cargo test` quick; for a long run set PROPTEST_CASES, e.g.
// `PROPTEST_CASES=100000 cargo test --release -p schedlab --test sim -- specs_of_any_text`.

/// `PROPTEST_CASES` when set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A word a spec might hold: a registered name or key, a near miss, or noise.
fn word() -> impl Strategy<Value = String> {
    let mut known: Vec<String> = Vec::new();
    for w in WORKLOADS {
        known.push(w.name.into());
        known.extend(w.params.iter().map(|p| p.name.to_string()));
    }
    for p in POLICIES {
        known.push(p.name.into());
        known.extend(p.params.iter().map(|p| p.name.to_string()));
    }
    for m in schedlab::machine::catalog::all() {
        known.push(m.name.into());
    }
    known.extend(
        schedlab::machine::MODEL_PARAMS
            .iter()
            .map(|p| p.name.to_string()),
    );
    for v in [
        "",
        "0",
        "-1",
        "1",
        "2",
        "auto",
        "on",
        "off",
        "yes",
        "ttas",
        "ticket",
        "fork",
        "1e309",
        "NaN",
        "inf",
        "-0",
        "0.0000001",
        "99999999999999999999",
        "9223372036854775807",
        " ",
        "=",
        ":",
        ",",
        "é",
        "\u{0}",
    ] {
        known.push(v.into());
    }
    prop_oneof![
        prop::sample::select(known),
        "\\PC{0,12}",
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
    ]
}

/// A spec-shaped string: `NAME[:k=v,...]` with noise in every part, or any text.
fn spec_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (word(), prop::collection::vec((word(), word()), 0..5)).prop_map(|(n, kv)| {
            let mut s = n;
            for (i, (k, v)) in kv.iter().enumerate() {
                s += if i == 0 { ":" } else { "," };
                s += &format!("{k}={v}");
            }
            s
        }),
        1 => "\\PC{0,60}",
        1 => "[a-z0-9_.:=, -]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(3000), ..ProptestConfig::default() })]

    /// See: issue 17 item 15. Whatever the text, the parsers answer with a value or one
    /// line naming what is wrong — never a panic.
    #[test]
    fn specs_of_any_text_parse_or_name_the_problem(
        machine in spec_text(),
        policy in spec_text(),
        workload in spec_text(),
        table in word(),
        cpus in prop::option::of(0usize..20),
    ) {
        for what in ["policy", "workload", "machine"] {
            for text in [&machine, &policy, &workload] {
                if let Ok(s) = schedlab::spec::Spec::parse(what, text) {
                    // What parses prints back as a spec that parses to the same.
                    let again = schedlab::spec::Spec::parse(what, &s.to_string()).unwrap();
                    prop_assert_eq!(again, s);
                }
            }
        }
        let _ = schedlab::machine::Machine::boot_spec(&machine, cpus);
        let _ = schedlab::experiment::select(schedlab::experiment::all_tables(), &[table]);
        let c = RunConfig {
            machine: machine.clone(),
            cpus,
            policy: policy.clone(),
            workload: workload.clone(),
            seed: 1,
        };
        if let Err(e) = Simulation::new(c) {
            let m = e.to_string();
            prop_assert!(!m.is_empty() && !m.contains('\n'), "{:?}", m);
        }
        // The real names with noise after them.
        for p in POLICIES {
            let c = cfg("piii700-1m", 2, &format!("{}:{}", p.name, policy), "lat_pipe");
            if let Err(e) = Simulation::new(c) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
        for w in WORKLOADS {
            let c = cfg("piii700-1m", 2, "fifo", &format!("{}:{}", w.name, workload));
            if let Err(e) = Simulation::new(c) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }
}

/// A value of `p` in its accepted range; for workloads, kept small (`small`) so a run is
/// quick: integers within 24 of the minimum, numbers within 24 units.
fn valid_value(p: &'static schedlab::spec::ParamSpec, small: bool) -> BoxedStrategy<String> {
    use schedlab::spec::Kind;
    match p.kind {
        Kind::Int { min, max } => {
            let hi = if small {
                max.min(min.saturating_add(24))
            } else {
                max
            };
            (min..=hi).prop_map(|n| n.to_string()).boxed()
        }
        Kind::Float { min, max } => {
            let hi = if small { max.min(min + 24.0) } else { max };
            (min..=hi).prop_map(|x| format!("{x}")).boxed()
        }
        Kind::Bool => prop::sample::select(vec!["on", "off"])
            .prop_map(String::from)
            .boxed(),
        Kind::Text => Just(p.default.to_string()).boxed(),
        Kind::Choice(c) => prop::sample::select(c.to_vec())
            .prop_map(String::from)
            .boxed(),
    }
}

/// `name` with a random subset of its parameters set to random valid values.
fn valid_spec(
    name: &'static str,
    params: &'static [schedlab::spec::ParamSpec],
    small: bool,
) -> BoxedStrategy<String> {
    let each: Vec<BoxedStrategy<Option<String>>> = params
        .iter()
        .map(|p| {
            prop::option::of(valid_value(p, small).prop_map(move |v| format!("{}={v}", p.name)))
                .boxed()
        })
        .collect();
    each.prop_map(move |kv| {
        let kv: Vec<String> = kv.into_iter().flatten().collect();
        if kv.is_empty() {
            name.to_string()
        } else {
            format!("{name}:{}", kv.join(","))
        }
    })
    .boxed()
}

fn any_workload() -> BoxedStrategy<String> {
    prop::strategy::Union::new(WORKLOADS.iter().map(|w| valid_spec(w.name, w.params, true))).boxed()
}

fn any_policy() -> BoxedStrategy<String> {
    prop::strategy::Union::new(POLICIES.iter().map(|p| valid_spec(p.name, p.params, false))).boxed()
}

fn any_machine() -> BoxedStrategy<(String, usize)> {
    let presets = schedlab::machine::catalog::all();
    (
        prop::sample::select(presets.iter().map(|p| (p.name, p.cpus)).collect::<Vec<_>>()),
        prop::sample::select(vec![
            "",
            ":bus=off",
            ":lock=ticket",
            ":coherence=off",
            ":bus=off,lock=ticket,coherence=off",
        ]),
        1usize..=8,
    )
        .prop_map(|((name, fitted), model, cpus)| (format!("{name}{model}"), cpus.min(fitted)))
        .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), ..ProptestConfig::default() })]

    /// See: issue 17 item 15. Random valid combinations of machine (with model switches),
    /// policy (any options in their ranges) and workload (small values in range): each
    /// runs — the kernel and policy invariants checked every 4096 events in debug builds
    /// and at the end — or is refused in one line naming why; never a panic, never a raw
    /// errno. Runs are cut at an event budget: the invariants are what is tested.
    #[test]
    fn specs_valid_combinations_run_and_keep_the_invariants(
        (machine, cpus) in any_machine(),
        policy in any_policy(),
        workload in any_workload(),
        seed in 0u64..1000,
    ) {
        let mut c = cfg(&machine, cpus, &policy, &workload);
        c.seed = seed;
        let what = format!("--machine {machine} --cpus {cpus} --policy {policy} --workload {workload}");
        match Simulation::new(c) {
            Err(e) => {
                let m = e.to_string();
                prop_assert!(!m.contains('\n') && !has_raw_errno(&m), "{}: {}", what, m);
            }
            Ok(mut sim) => {
                sim.set_event_limit(40_000);
                match sim.run(&mut |_, _| {}) {
                    Ok(()) => {
                        prop_assert!(sim.check().is_ok(), "{}", what);
                    }
                    Err(SimError::EventLimit(_)) => {
                        prop_assert!(sim.check().is_ok(), "{}: {:?}", what, sim.check());
                    }
                    Err(e) => {
                        let m = e.to_string();
                        prop_assert!(!m.contains('\n') && !has_raw_errno(&m), "{}: {}", what, m);
                    }
                }
            }
        }
    }
}

/// lat_pipe's `pin=same` keeps both ends on CPU 0 (no IPI); `pin=split`
/// makes every hop a cross-CPU wake-up; the split round trip is the slower one.
#[test]
fn lat_pipe_pinning_selects_local_or_cross_cpu_hops() {
    for policy in ["eevdf", "o1-2.6", "linux-2.4"] {
        let rounds = 300;
        let w = |pin: &str| format!("lat_pipe:pin={pin},rounds={rounds},warmup=10");
        let same = run_json(cfg("piii700-1m", 4, policy, &w("same")));
        let split = run_json(cfg("piii700-1m", 4, policy, &w("split")));
        assert_eq!(
            same["counters"]["ipis"].as_u64(),
            Some(0),
            "{policy}: {same}"
        );
        let busy = &same["counters"]["cpu_time"];
        let ipis = split["counters"]["ipis"].as_u64().unwrap();
        assert!(
            ipis >= 2 * rounds,
            "{policy}: {ipis} IPIs for {rounds} round trips"
        );
        let v = |r: &serde_json::Value| r["result"]["value"].as_f64().unwrap();
        assert!(
            v(&split) > v(&same),
            "{policy}: split {} same {} {busy}",
            v(&split),
            v(&same)
        );
    }
    let Err(e) = schedlab::run(cfg("piii700-1m", 1, "eevdf", "lat_pipe:pin=split")) else {
        panic!("pin=split on one CPU is refused");
    };
    let err = e.to_string();
    assert!(err.contains("pin=split needs 2 CPUs"), "{err}");
}

/// Two threads yielding on one CPU switch once per yield under every fair class: a
/// reschedule that `schedule()`'s own pick asked for (6.12's `update_curr` in `put_prev`
/// finding prev ineligible) is answered by that switch, not carried to prev's next turn
/// (it was, and EEVDF made two switches per yield: the pair preempted each other).
#[test]
fn a_yield_is_one_switch_under_every_policy() {
    for policy in ["eevdf", "cfs", "o1-2.6", "linux-2.4"] {
        let r = run_json(cfg(
            "piii700-1m",
            1,
            policy,
            "sched_yield:threads=2,duration_ms=40,warmup_ms=5",
        ));
        let c = &r["counters"];
        let (cs, sys) = (
            c["context_switches"].as_f64().unwrap(),
            c["syscalls"].as_f64().unwrap(),
        );
        assert!(
            (cs - sys).abs() < 0.02 * sys,
            "{policy}: {cs} switches for {sys} syscalls"
        );
    }
}

/// Issue 18 item 3: `numa-1024` boots all 1024 CPUs, and 96 of them, under every policy;
/// a small hackbench runs to its result with the kernel's and the policy's invariants
/// checked at the end (and every 4096 events in debug builds). With 1024 CPUs the
/// spreading policies put tasks past CPU 63, where the old 64-bit cpumask ended: a
/// cpumask that lost those bits would make `schedule()`'s affinity assertion panic.
#[test]
fn every_policy_runs_on_numa_1024_at_all_its_cpus_and_at_96() {
    let mut past_64 = Vec::new();
    for p in POLICIES {
        for cpus in [1024, 96] {
            let c = cfg("numa-1024", cpus, p.name, "hackbench:groups=2,loops=5");
            let mut sim = Simulation::new(c).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(sim.k.nr_cpus(), cpus);
            sim.run(&mut |_, _| {})
                .unwrap_or_else(|e| panic!("{} on {cpus} CPUs: {e}", p.name));
            sim.check()
                .unwrap_or_else(|e| panic!("{} on {cpus} CPUs: {e}", p.name));
            let r = sim.report().unwrap();
            assert!(
                r.result.value.is_finite() && r.result.value > 0.0,
                "{} on {cpus} CPUs: {}",
                p.name,
                r.result.value
            );
            let top = sim
                .k
                .tasks
                .iter()
                .filter(|t| !t.is_idle)
                .filter_map(|t| t.last_ran)
                .max();
            assert!(
                top.is_some_and(|c| c < cpus),
                "{}: ran on {top:?} of {cpus}",
                p.name
            );
            if cpus == 1024 && top.is_some_and(|c| c >= 64) {
                past_64.push(p.name);
            }
        }
    }
    // linux-2.4's reschedule_idle and O(1)'s idle balancer spread 80 tasks over idle
    // CPUs up to the top ones; fifo keeps tasks near their parent, and the fair class's
    // fork placement takes the first idlest group on ties, so its 80 fit below CPU 64.
    for spreads in ["linux-2.4", "mq", "o1-2.6"] {
        assert!(
            past_64.contains(&spreads),
            "{spreads} stayed below CPU 64: {past_64:?}"
        );
    }
}

/// Issue 45 item 1: today's presets boot at their full CPU count under every policy; a
/// small hackbench (threads over pipes) and schbench run to their results with the
/// kernel's and the policy's invariants checked, the same seed giving the same report,
/// and tasks reaching past CPU 64 (the spreading policies) and into the SMT siblings'
/// numbers (n + cores) on the two-socket boxes.
#[test]
fn every_policy_runs_on_todays_presets_at_all_their_cpus() {
    for (machine, cpus) in [
        ("zen3-2s", 256),
        ("spr-2s", 224),
        ("icx-2s", 128),
        ("haswell-4c", 8),
        ("zen3-2s:nps=4,sockets=1", 128),
    ] {
        for p in POLICIES {
            for w in [
                "hackbench:groups=2,loops=5,threads=on,pipe=on",
                "schbench:m=2,t=4,r=1",
            ] {
                let run = || {
                    let mut sim = Simulation::new(cfg(machine, cpus, p.name, w))
                        .unwrap_or_else(|e| panic!("{machine} {}: {e}", p.name));
                    assert_eq!(sim.k.nr_cpus(), cpus);
                    sim.run(&mut |_, _| {})
                        .unwrap_or_else(|e| panic!("{machine} {} {w}: {e}", p.name));
                    sim.check()
                        .unwrap_or_else(|e| panic!("{machine} {} {w}: {e}", p.name));
                    serde_json::to_string(&sim.report().unwrap()).unwrap()
                };
                let (a, b) = (run(), run());
                assert_eq!(a, b, "{machine} {} {w}: not deterministic", p.name);
                let v: serde_json::Value = serde_json::from_str(&a).unwrap();
                let r = v["result"]["value"].as_f64().unwrap();
                assert!(r.is_finite() && r > 0.0, "{machine} {} {w}: {r}", p.name);
            }
        }
    }
}

/// `numa-1024`: nodes of two CPUs (PKG) under one NUMA level of 512 node groups, a line
/// across nodes dearer than one within a node, and the kernel limits of a 2 TB machine
/// with a raised `kernel.pid_max`.
#[test]
fn the_numa_1024_preset_has_node_and_numa_levels() {
    let p = schedlab::machine::catalog::find("numa-1024").unwrap();
    assert_eq!(p.cpus, 1024);
    let m = schedlab::machine::Machine::boot(p, None).unwrap();
    assert_eq!(m.line_transfer_ns(0, 1), p.costs.c2c_line_ns);
    assert_eq!(m.line_transfer_ns(0, 700), p.costs.c2c_cross_bus_line_ns);
    assert!(m.line_transfer_ns(0, 700) > m.line_transfer_ns(0, 1));
    let t = schedlab::policy::fair::topology::Topology::of_machine(&m);
    let doms = schedlab::policy::fair::topology::build_domains(&t);
    let levels: Vec<&str> = doms[700].iter().map(|d| d.level).collect();
    assert_eq!(levels, ["PKG", "NUMA"]);
    assert_eq!(doms[700][0].span, vec![700, 701], "a node of two CPUs");
    assert_eq!(doms[700][1].span.len(), 1024);
    assert_eq!(doms[700][1].groups.len(), 512, "one group per node");
    assert_eq!(
        doms[700][1].groups.cpus(0),
        [700, 701],
        "its own node first"
    );
    assert_eq!(
        doms[700][1].groups.cpus(1),
        [702, 703],
        "then wrapping upward"
    );
    // --cpus 96 boots nodes 0-47 only.
    let m96 = schedlab::machine::Machine::boot(p, Some(96)).unwrap();
    let d96 = schedlab::policy::fair::topology::build_domains(
        &schedlab::policy::fair::topology::Topology::of_machine(&m96),
    );
    assert_eq!(d96.len(), 96);
    assert_eq!(d96[0][1].groups.len(), 48);
    assert!(p.limits.pid_max > 100_000 && p.limits.max_threads > 100_000);
    let over = schedlab::machine::Machine::boot(p, Some(1025)).unwrap_err();
    assert!(over.contains("1025") && !over.contains('\n'), "{over}");
}

/// `sched_setaffinity` past the old 64-CPU mask: on `numa-1024` booted with 704 CPUs,
/// init asks for CPU 800 (not online: EINVAL), then pins itself to CPU 700 and forks
/// children that inherit the mask; under every policy every task ends on CPU 700, init
/// moved once, and `schedule()` asserted the mask at every switch-in (a task run
/// anywhere else would have panicked the run).
#[test]
fn a_task_pinned_to_cpu_700_runs_only_there_under_every_policy() {
    use schedlab::kernel::abi::EINVAL;
    use schedlab::machine::CpuMask;
    struct Pinned;
    fn worker(left: u32) -> Box<dyn Program> {
        let mut left = left;
        program(move |_| {
            left = left.saturating_sub(1);
            match left {
                0 => Op::Exit,
                n if n % 3 == 0 => Op::Sleep { ns: 50 * US },
                n if n % 2 == 0 => Op::Yield,
                _ => Op::Compute {
                    ns: 100 * US,
                    ws: 4096,
                },
            }
        })
    }
    impl Workload for Pinned {
        fn root(&self) -> Box<dyn Program> {
            let mut step = 0;
            program(move |env| {
                step += 1;
                match step {
                    1 => Op::SetAffinity {
                        mask: Box::new(CpuMask::single(800)),
                    },
                    2 => {
                        env.count("einval", u64::from(env.ret == EINVAL));
                        Op::SetAffinity {
                            mask: Box::new(CpuMask::single(700)),
                        }
                    }
                    3..=6 => Op::Fork { child: worker(9) },
                    7..=14 if step % 2 == 0 => Op::Compute {
                        ns: 100 * US,
                        ws: 4096,
                    },
                    7..=14 => Op::Yield,
                    15..=18 => Op::Wait,
                    _ => Op::Exit,
                }
            })
        }
        fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
            Ok(metric("einval", rec.count("einval") as f64, "", "higher"))
        }
    }
    for p in POLICIES {
        let c = cfg("numa-1024", 704, p.name, "pinned");
        let mut sim = Simulation::with_workload(c, Box::new(Pinned)).unwrap();
        sim.run(&mut |_, _| {})
            .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        sim.check().unwrap();
        let r = sim.report().unwrap();
        assert_eq!(r.result.value, 1.0, "{}: EINVAL for CPU 800 of 704", p.name);
        assert_eq!(sim.k.stats.affinity_moves, 1, "{}: init moved once", p.name);
        let users: Vec<_> = sim.k.tasks.iter().filter(|t| !t.is_idle).collect();
        assert_eq!(users.len(), 5, "{}", p.name);
        for t in users {
            assert_eq!(
                t.last_ran,
                Some(700),
                "{}: pid {} ran elsewhere",
                p.name,
                t.pid
            );
            assert_eq!(t.cpus_allowed, CpuMask::single(700));
        }
    }
}

/// The many-core preset builds SMT, LLC (package) and NUMA domains, and its cross-package
/// line transfer costs more than a transfer within a package.
#[test]
fn the_manycore_preset_has_smt_llc_and_numa_levels() {
    let p = schedlab::machine::catalog::find("modern-2s-64").unwrap();
    assert_eq!(p.cpus, 64);
    let m = schedlab::machine::Machine::boot(p, None).unwrap();
    assert!(m.line_transfer_ns(0, 40) > m.line_transfer_ns(0, 2));
    let t = schedlab::policy::fair::topology::Topology::of_machine(&m);
    let doms = schedlab::policy::fair::topology::build_domains(&t);
    let levels: Vec<&str> = doms[0].iter().map(|d| d.level).collect();
    assert_eq!(levels.len(), 3, "{levels:?}");
    assert_eq!(doms[0][0].span, vec![0, 1], "SMT siblings");
    assert_eq!(doms[0][1].span.len(), 32, "one package");
    assert_eq!(doms[0][2].span.len(), 64, "both nodes");
    for policy in ["eevdf", "cfs"] {
        let r = run_json(cfg(
            "modern-2s-64",
            64,
            policy,
            "hackbench:groups=4,loops=20",
        ));
        assert!(
            r["counters"]["migrations"].as_u64().unwrap() > 0,
            "{policy}: {r}"
        );
    }
}

/// Seed finding 1 (issue 14): on the 8-way PIII, 2.4's chat throughput falls from 4 to 8
/// CPUs because `runqueue_lock` saturates and its hold grows with the queue scanned under
/// it; O(1)'s per-CPU queues do not fall. Kravetz's table: 20 rooms, 200 messages, ×0.39
/// for 2.4, ×1.01 for O(1) -D1. The targets of the issue: ≤ 0.7 and ≥ 0.95. Each rate is
/// the median run of seeds 1–5: one seed's 8-CPU rate on 2.4 spreads from 106 k to 146 k
/// msg/s, so one seed tests the noise as much as the finding.
#[test]
fn chat_on_2_4_collapses_from_4_to_8_cpus_and_on_o1_it_does_not() {
    let rate = |policy: &str, cpus: usize| {
        let mut runs: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..=5)
                .map(|seed| {
                    s.spawn(move || {
                        let c = cfg("piii700-1m", cpus, policy, "chat:rooms=20,messages=200");
                        schedlab::run(RunConfig { seed, ..c }).expect("run succeeds")
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        runs.sort_by(|a, b| a.result.value.total_cmp(&b.result.value));
        let r = runs.swap_remove(2);
        (r.result.value, r)
    };
    let (v4, r4) = rate("linux-2.4", 4);
    let (v8, r8) = rate("linux-2.4", 8);
    assert!(
        v8 / v4 <= 0.7,
        "2.4: {v4:.0} -> {v8:.0} msg/s (x{:.2})",
        v8 / v4
    );
    // For the right reason: the lock's hold grows and CPUs spin on it.
    let lock = |r: &schedlab::report::RunReport| {
        let l = &r.counters.locks["runqueue_lock"];
        (l.hold_ns_mean, r.counters.cpu_time.spinning_pct)
    };
    let ((hold4, spin4), (hold8, spin8)) = (lock(&r4), lock(&r8));
    assert!(hold8 > 1.5 * hold4, "hold {hold4} -> {hold8} ns");
    assert!(spin8 > 2.0 * spin4, "spinning {spin4} -> {spin8} %");
    let (o4, _) = rate("o1-d1", 4);
    let (o8, _) = rate("o1-d1", 8);
    assert!(o8 / o4 >= 0.95, "O(1): {o4:.0} -> {o8:.0} msg/s");
}

/// A task line its writer has since evicted (an L2 holds 128 task lines: 2.4's
/// `task_struct`s sit at 8 KB boundaries) was written back: with 3 000 tasks, 2.4's walks
/// read most lines from memory, and pull from another cache only the lines written
/// there recently. Served from the writer's cache whatever its age, `schedule()` pulled
/// 35.6 lines a call here and read fewer lines from memory than it pulled.
#[test]
fn lines_evicted_by_their_writer_come_from_memory_not_its_cache() {
    let r = run_json(cfg(
        "piii700-1m",
        8,
        "linux-2.4",
        "synthetic:tasks=3000,ops=20",
    ));
    let l = &r["counters"]["lines"];
    let per_schedule = l["c2c_per_schedule"].as_f64().unwrap();
    assert!(per_schedule < 15.0, "{per_schedule} pulls per schedule()");
    let (memory, c2c) = (
        l["memory_reads"].as_u64().unwrap(),
        l["c2c_transfers"].as_u64().unwrap(),
    );
    assert!(memory > 2 * c2c, "memory reads {memory}, transfers {c2c}");
}

/// `fifo` is a global round robin: a task picked on another CPU than the one it ran on
/// last becomes that CPU's (`processor`) and counts as a migration, as under every other
/// policy — every unaffine switch is one, and on two CPUs passing tokens there are many.
#[test]
fn fifo_counts_a_pick_on_another_cpu_as_a_migration() {
    let mut sim =
        Simulation::new(cfg("piii700-1m", 2, "fifo", "reflex:tasks=6,rounds=200")).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim.check().unwrap();
    let s = &sim.k.stats;
    assert!(s.unaffine_switches > 0, "tokens cross CPUs under one queue");
    // Every unaffine switch is a migration; so is a new task's first pick on another CPU
    // than the one it was forked on (it has run nowhere, so its switch is not unaffine).
    assert!(
        s.migrations >= s.unaffine_switches && s.migrations <= s.unaffine_switches + s.forks,
        "migrations {} unaffine {} forks {}",
        s.migrations,
        s.unaffine_switches,
        s.forks
    );
}

/// Issue 45 item 4: a connected UDP pair keeps datagram boundaries — a read takes one
/// datagram and discards what does not fit — and a receive buffer past `sk_rcvbuf` drops
/// datagrams while every send succeeds; bytes are conserved (`written == read + len`).
#[test]
fn a_udp_pair_keeps_datagrams_whole_and_drops_past_the_receive_buffer() {
    // One task: a socket pair, three 100-byte datagrams read 60 bytes at a time, then 200
    // datagrams of 1000 bytes into the 65535-byte buffer of the era box, unread.
    let sim = run_custom("fifo", 1, 1, || {
        let mut step = 0u32;
        let mut fd = 0u32;
        program(move |e: &mut Env<'_>| {
            step += 1;
            match step {
                1 => Op::UdpPair,
                2 => {
                    fd = e.ret as u32;
                    Op::Write { fd, len: 100 }
                }
                3 | 4 => Op::Write { fd, len: 100 },
                5..=7 => {
                    if step > 5 {
                        e.count("read", e.ret as u64);
                    }
                    Op::Read {
                        fd: fd + 1,
                        len: 60,
                    }
                }
                8 => {
                    e.count("read", e.ret as u64);
                    Op::Write { fd, len: 1000 }
                }
                9..=207 => {
                    e.count("sent", u64::from(e.ret == 1000));
                    Op::Write { fd, len: 1000 }
                }
                _ => {
                    e.count("sent", u64::from(e.ret == 1000));
                    e.count("done", 1);
                    Op::Exit
                }
            }
        })
    });
    assert_eq!(sim.k.rec.count("done"), 1);
    assert_eq!(
        sim.k.rec.count("read"),
        180,
        "three reads of 60 of 100 bytes each"
    );
    assert_eq!(sim.k.rec.count("sent"), 200, "every send succeeds");
    let c = &sim.report().unwrap().counters;
    assert_eq!(c.udp_datagrams, 203);
    // 65535 bytes of 1000-byte datagrams with their skb overhead: 52 fit.
    let truesize = 1000 + sim.k.machine.costs().skb_overhead_bytes;
    let fit = 65535 / truesize;
    assert_eq!(c.udp_drops, 200 - fit);
    let s = &sim.k.streams[0];
    assert_eq!(s.written, s.read + s.len, "bytes conserved");
    assert_eq!((s.read, s.len), (300, 1000 * fit));
}

/// With `lo_queue=end` a packet over loopback reaches its reader only once its path has
/// run on the sending CPU (`Skb::visible_at`, `Frame::WakeQueue`): a request/response can
/// then not beat the sum of its paths. In the calibrated default a reader busy on its own
/// CPU finds the next request queued at the sender's first instant and the two CPUs
/// overlap what causality orders: TCP_RR runs 31 k transactions/s on the P6 box, past
/// this bound.
#[test]
fn a_request_response_over_loopback_cannot_beat_its_paths() {
    fn tcp(c: &schedlab::machine::Costs) -> u64 {
        c.tcp_sendmsg_ns + c.tcp_segment_ns + c.tcp_recvmsg_ns
    }
    fn udp(c: &schedlab::machine::Costs) -> u64 {
        c.udp_sendmsg_ns + c.udp_recvmsg_ns
    }
    type Path = fn(&schedlab::machine::Costs) -> u64;
    let paths: [(&str, Path); 2] = [("TCP_RR", tcp), ("UDP_RR", udp)];
    for (test, path) in paths {
        for policy in ["linux-2.4", "o1-2.6", "eevdf"] {
            let w = format!("netperf:test={test},nodelay=on,duration_ms=100,warmup_ms=10");
            let m = "piii700-4way-1m:lo_queue=end";
            let mut sim = Simulation::new(cfg(m, 4, policy, &w)).unwrap();
            sim.run(&mut |_, _| {}).unwrap();
            let c = sim.k.machine.costs();
            let hop = path(c) + 2 * c.syscall_ns;
            let bound = 1e9 / (2 * hop) as f64;
            let r = sim.report().unwrap().result.value;
            assert!(r <= bound, "{test} {policy}: {r:.0}/s beats {bound:.0}/s");
            assert!(r > 0.5 * bound, "{test} {policy}: {r:.0}/s");
        }
    }
}

/// `tcp_delack=on`: in pingpong mode the reader's ACK rides on its reply (2.4
/// `cleanup_rbuf`, `tcp_event_data_sent`), so a request/response sends pure ACKs only
/// while quick-ACK mode lasts or when the delayed-ACK timer fires. With the causal
/// arrival too, netperf TCP_RR on the 4-way P6 runs at lmbench's published TCP latency
/// (B§6.2: 43.5 µs a round trip) within 25 %; the calibrated default, which sends an ACK
/// from every read and lets the reader see a segment before its path ran, is 36 % off.
#[test]
fn delayed_acks_ride_on_replies_and_tcp_rr_meets_lmbench_latency() {
    let w = "netperf:duration_ms=200,warmup_ms=10";
    let run = |m: &str| {
        let mut sim = Simulation::new(cfg(m, 4, "o1-2.6", w)).unwrap();
        sim.run(&mut |_, _| {}).unwrap();
        sim.check().unwrap();
        sim.report().unwrap()
    };
    let both = run("piii700-4way-1m:tcp_delack=on,lo_queue=end");
    let c = &both.counters;
    assert!(
        c.tcp_piggybacked_acks > c.tcp_segments / 2 - 100,
        "{} piggybacked of {} segments",
        c.tcp_piggybacked_acks,
        c.tcp_segments
    );
    assert!(
        c.tcp_acks <= 2 * 16 + c.tcp_delayed_acks,
        "{} pure ACKs, {} by the timer",
        c.tcp_acks,
        c.tcp_delayed_acks
    );
    let lat_tcp = 1e6 / 43.524; // transactions/s at lmbench's round trip
    let r = both.result.value / lat_tcp;
    assert!(
        (0.8..=1.25).contains(&r),
        "TCP_RR {:.0}/s: x{r:.2}",
        both.result.value
    );
    let default = run("piii700-4way-1m").result.value / lat_tcp;
    assert!(default > 1.25, "the calibrated default: x{default:.2}");
    // Chat's many connections, each direction's ACK riding on the other's data, and a
    // piggybacked ACK releasing held data the other way (it once transmitted a segment
    // twice and hung seed 1): every run ends, its invariants hold.
    for seed in 1..=3 {
        for m in [
            "piii700-1m:tcp_delack=on",
            "piii700-1m:tcp_delack=on,lo_queue=end",
        ] {
            let mut c = cfg(m, 8, "o1-d1", "chat:rooms=20,messages=60");
            c.seed = seed;
            let mut sim = Simulation::new(c).unwrap();
            sim.run(&mut |_, _| {})
                .unwrap_or_else(|e| panic!("{m} seed {seed}: {e}"));
            sim.check()
                .unwrap_or_else(|e| panic!("{m} seed {seed}: {e}"));
        }
    }
}
