//! The costs a measured host brings (issue 43): an AF_UNIX skb read on another CPU than
//! its writer's (`skb_remote_ns`), the skb allocator's state every CPU shares turned
//! over (`skb_page_shared_ns` for cold skbs, `skb_shared_ns` by depth), an skb priced by
//! the depth it was queued at (`skb_depth_ns`), a forked child's first steps
//! (`fork_child_ns`), and what a switched-in task brings back by reuse distance
//! (`task_refill_ns`, `wake_refill_ns`, `mm_refill_ns`). Each is counted
//! where it has a counter, priced only where the preset has it, and absent from the era
//! presets.

use schedlab::machine::host::HostFile;
use schedlab::machine::{Machine, Preset};
use schedlab::sim::{RunConfig, Simulation};

/// The shipped host file.
fn shipped() -> HostFile {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/host.json"))
            .expect("data/host.json");
    HostFile::parse(&text, "data/host.json").expect("the shipped host file parses")
}

/// The shipped host file with two costs set.
fn host(remote: Option<u64>, shared: Option<u64>) -> &'static Preset {
    let mut h = shipped();
    h.costs.skb_remote_ns = remote;
    h.costs.skb_page_shared_ns = shared;
    Box::leak(Box::new(h.to_preset()))
}

fn run(preset: &'static Preset, cpus: usize, workload: &str) -> serde_json::Value {
    run_on(Machine::boot(preset, Some(cpus)).expect("boots"), workload)
}

fn counter(v: &serde_json::Value, name: &str) -> u64 {
    v["counters"][name].as_u64().unwrap_or(0)
}

fn seconds(v: &serde_json::Value) -> f64 {
    v["result"]["value"].as_f64().unwrap()
}

const HACKBENCH: &str = "hackbench:groups=2,loops=20,fds=5,threads=on";

#[test]
fn an_skb_read_on_another_cpu_pays_skb_remote_ns_once_per_skb() {
    let without = run(host(None, None), 2, HACKBENCH);
    assert_eq!(
        counter(&without, "skb_remote"),
        0,
        "not counted without the cost"
    );
    let with = run(host(Some(20_000), None), 2, HACKBENCH);
    let remote = counter(&with, "skb_remote");
    // 2 groups x 5 senders x 5 receivers x 20 loops = 1 000 skbs of 100 bytes.
    assert!(remote > 0 && remote <= 1_000, "{remote}");
    assert!(seconds(&with) > seconds(&without), "the price is paid");
    let one_cpu = run(host(Some(20_000), None), 1, HACKBENCH);
    assert_eq!(
        counter(&one_cpu, "skb_remote"),
        0,
        "one CPU: nothing is remote"
    );
}

#[test]
fn a_cold_skb_pulls_the_allocator_state_only_after_another_cpu_freed_one() {
    // Deep queues: 2 groups x 20 x 20 x 100 skbs, most of them read cold.
    let deep = "hackbench:groups=2,loops=100";
    let one_cpu = run(host(None, Some(1_000)), 1, deep);
    assert!(counter(&one_cpu, "skb_cold") > 0);
    assert_eq!(
        counter(&one_cpu, "skb_page_pulls"),
        0,
        "one CPU owns it all along"
    );
    let two = run(host(None, Some(1_000)), 2, deep);
    let pulls = counter(&two, "skb_page_pulls");
    assert!(pulls > 0, "two CPUs take turns");
    assert!(
        pulls <= counter(&two, "skb_cold"),
        "only cold skbs turn pages over"
    );
    let free = run(host(None, None), 2, deep);
    assert_eq!(counter(&free, "skb_page_pulls"), 0);
    assert!(seconds(&two) > seconds(&free));
}

#[test]
fn the_era_presets_have_neither_cost() {
    for m in ["piii700-1m", "piii700-4way-1m", "modern-2s-64"] {
        let r = schedlab::run(RunConfig {
            machine: m.into(),
            cpus: Some(2),
            policy: "eevdf".into(),
            workload: HACKBENCH.into(),
            seed: 1,
        })
        .expect("runs");
        let v = serde_json::to_value(&r).unwrap();
        for c in ["skb_remote", "skb_cold", "skb_page_pulls"] {
            assert_eq!(counter(&v, c), 0, "{m}: {c}");
        }
    }
}

/// The shipped host file with an skb depth curve (and `skb_cold_ns` as it ships).
fn host_with_curve(curve: Vec<[u64; 2]>) -> &'static Preset {
    let mut h = shipped();
    h.costs.skb_depth_ns = curve.try_into().expect("a valid curve");
    Box::leak(Box::new(h.to_preset()))
}

fn run_on(m: Machine, workload: &str) -> serde_json::Value {
    let cfg = RunConfig {
        machine: "host".into(),
        cpus: None,
        policy: "eevdf:hz=250".into(),
        workload: workload.into(),
        seed: 1,
    };
    let mut sim = Simulation::on_machine(cfg, m).expect("builds");
    sim.run(&mut |_, _| {}).expect("runs");
    serde_json::to_value(sim.report().expect("reports")).unwrap()
}

/// An skb pays what the host measured at the depth it was queued: a curve that is the
/// step (nothing up to the L2, `skb_cold_ns` beyond) prices exactly as the step does; a
/// curve that rises beyond the L2 charges deep queues more; `skb_depth=off` is the step.
#[test]
fn an_skb_pays_the_measured_cost_of_its_depth() {
    let deep = "hackbench:groups=2,loops=100";
    let plain = host_with_curve(vec![]);
    let (l2, step) = (
        plain.costs.l2_bytes,
        plain
            .costs
            .skb_cold_ns
            .expect("the shipped host measured skb_cold_ns"),
    );
    let stepped = run(plain, 1, deep);
    let cold = counter(&stepped, "skb_cold");
    assert!(cold > 0, "deep queues on one CPU: cold skbs");
    assert_eq!(counter(&stepped, "skb_depth_ns"), cold * step);
    let as_step = run(host_with_curve(vec![[l2, 0], [4 * l2, step]]), 1, deep);
    assert_eq!(as_step["result"], stepped["result"], "the step as a curve");
    assert_eq!(counter(&as_step, "skb_depth_ns"), cold * step);
    let rising = host_with_curve(vec![[l2, 0], [2 * l2, step], [4 * l2, 10 * step]]);
    let steep = run(rising, 1, deep);
    assert!(counter(&steep, "skb_depth_ns") > cold * step);
    assert!(seconds(&steep) > seconds(&stepped), "deeper skbs cost more");
    let mut off = Machine::boot(rising, Some(1)).expect("boots");
    off.skb_depth = false;
    let off = run_on(off, deep);
    assert_eq!(off["result"], stepped["result"], "skb_depth=off: the step");
}

/// The shipped host file with `fork_child_ns = first` and `exit_ns` less `out`.
fn host_with_first_steps(first: u64, out: u64) -> &'static Preset {
    let mut h = shipped();
    h.costs.exit_ns -= out;
    h.costs.fork_child_ns = first;
    Box::leak(Box::new(h.to_preset()))
}

/// A forked process pays `fork_child_ns` when it first runs, a thread does not: moved
/// out of `exit_ns`, it leaves fork+exit+wait on one CPU as it was; threads pay only
/// the lower exit; where the child runs first is what changes.
#[test]
fn a_forked_childs_first_steps_are_paid_when_it_first_runs() {
    let (none, some) = (
        host_with_first_steps(0, 0),
        host_with_first_steps(10_000, 10_000),
    );
    let fork = "lat_proc:op=fork,n=200";
    let (a, b) = (run(none, 1, fork), run(some, 1, fork));
    let (x, y) = (seconds(&a), seconds(&b));
    assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{x} vs {y}");
    let threads = "hackbench:groups=1,loops=20,fds=5,threads=on";
    let lower_exit = host_with_first_steps(0, 10_000);
    assert_eq!(
        run(lower_exit, 1, threads)["result"],
        run(some, 1, threads)["result"]
    );
    // Processes on two CPUs: a child still busy with its first steps when the next is
    // forked keeps that one off its CPU (find_idlest_group), so placements change.
    let procs = "hackbench:groups=1,loops=20,fds=5";
    let (p, q) = (run(none, 2, procs), run(some, 2, procs));
    assert_ne!(p["result"], q["result"]);
}

/// The shipped host file with an allocator-sharing curve (`skb_shared_ns`) beside
/// `skb_page_shared_ns`.
fn host_with_shared(curve: Vec<[u64; 2]>, scalar: Option<u64>) -> &'static Preset {
    let mut h = shipped();
    h.costs.skb_page_shared_ns = scalar;
    h.costs.skb_shared_ns = curve.try_into().expect("a valid curve");
    Box::leak(Box::new(h.to_preset()))
}

/// With the host's curve, every read that frees an skb after another CPU freed one pays
/// the band of its deepest skb's depth, warm skbs too: a flat curve charges exactly its
/// price per pull; a band that starts beyond some depths charges less; one CPU never
/// pulls; `skb_shared=off` is the cold-only price, as a host without the curve.
#[test]
fn freed_skbs_pay_the_allocators_shared_state_by_their_depth() {
    let deep = "hackbench:groups=2,loops=100";
    let flat = host_with_shared(vec![[1 << 40, 700]], Some(1_000));
    let two = run(flat, 2, deep);
    let pulls = counter(&two, "skb_page_pulls");
    assert!(pulls > 0, "two CPUs take turns");
    assert_eq!(counter(&two, "skb_shared_ns"), pulls * 700);
    assert_eq!(counter(&run(flat, 1, deep), "skb_page_pulls"), 0);
    let scalar_only = run(host_with_shared(vec![], Some(1_000)), 2, deep);
    assert!(
        pulls > counter(&scalar_only, "skb_page_pulls"),
        "warm skbs pull too: {pulls}"
    );
    let l2 = flat.costs.l2_bytes;
    let banded = run(
        host_with_shared(vec![[l2 / 64, 0], [1 << 40, 700]], Some(1_000)),
        2,
        deep,
    );
    let banded_pulls = counter(&banded, "skb_page_pulls");
    assert!(banded_pulls > 0);
    assert!(
        counter(&banded, "skb_shared_ns") < banded_pulls * 700,
        "shallow reads pay the first band"
    );
    let mut off = Machine::boot(flat, Some(2)).expect("boots");
    off.skb_shared = false;
    assert_eq!(
        run_on(off, deep)["result"],
        scalar_only["result"],
        "skb_shared=off"
    );
}

/// The shipped host file with reuse-distance refill curves.
fn host_with_refill(task: u64, wake: u64, mm: u64) -> &'static Preset {
    let mut h = shipped();
    let flat = |ns: u64| {
        vec![[1, 0], [1 << 40, ns]]
            .try_into()
            .expect("a valid curve")
    };
    h.costs.task_refill_ns = flat(task);
    h.costs.wake_refill_ns = flat(wake);
    h.costs.mm_refill_ns = flat(mm);
    Box::leak(Box::new(h.to_preset()))
}

/// A task switched back in on its CPU pays the curves' bands by the switches that CPU
/// made since it last switched the task in: two threads taking turns (one switch apart)
/// pay only their first switch-ins, sixteen pay nearly every one; processes pay the mm's
/// band as well, threads of one mm do not; woken tasks pay the wake band, yielding ones
/// not; `switch_refill=off` is the cache model, as a host without curves.
#[test]
fn a_switched_in_task_pays_for_the_switches_since_it_last_ran_there() {
    let refill = host_with_refill(100, 1_000, 10_000);
    let yields = |n: u32| format!("sched_yield:threads={n},duration_ms=5,warmup_ms=2");
    let two = run(refill, 1, &yields(2));
    assert!(counter(&two, "task_switches") > 1_000);
    assert!(
        counter(&two, "switch_refill_ns") < 2 * (100 + 1_000 + 10_000),
        "two threads taking turns: only the set-up's first switch-ins pay"
    );
    // (task switches, what their refills cost) of a workload on one CPU.
    let paid = |w: &str| {
        let r = run(refill, 1, w);
        (
            counter(&r, "task_switches"),
            counter(&r, "switch_refill_ns"),
        )
    };
    let (switches, ns) = paid(&yields(16));
    assert!(
        ns >= 100 * switches * 9 / 10 && ns < 1_000 * switches,
        "sixteen threads yielding: the task band nearly every time, no wake or mm band: {ns} for {switches}"
    );
    let (switches, ns) = paid("loop_yield:instances=16,duration_ms=5,warmup_ms=2");
    assert!(
        ns >= 10_100 * switches * 8 / 10,
        "processes: the mm band too: {ns} for {switches}"
    );
    let (switches, ns) = paid("lat_ctx:procs=8,rounds=100,warmup=2,ovr_iters=20");
    assert!(
        ns >= 11_100 * switches * 8 / 10,
        "a ring of processes: woken, another mm: {ns} for {switches}"
    );
    let mut off = Machine::boot(refill, Some(1)).expect("boots");
    off.switch_refill = false;
    let plain = run(host_with_refill(0, 0, 0), 1, &yields(16));
    assert_eq!(counter(&plain, "switch_refill_ns"), 0);
    let mut none = shipped();
    none.costs.kernel_footprint_bytes = refill.costs.kernel_footprint_bytes;
    let none: &'static Preset = Box::leak(Box::new(none.to_preset()));
    assert_eq!(
        run_on(off, &yields(16))["result"],
        run(none, 1, &yields(16))["result"],
        "switch_refill=off: the cache model"
    );
}

/// The shipped host file with a pipe depth curve.
fn host_with_pipe_curve(curve: Vec<[u64; 2]>) -> &'static Preset {
    let mut h = shipped();
    h.costs.pipe_depth_ns = curve.try_into().expect("a valid curve");
    Box::leak(Box::new(h.to_preset()))
}

/// 6.x pipe data pays the band of its depth, per 100 bytes read: a flat curve charges
/// exactly its price per 100 bytes of every message read; a curve that starts beyond
/// the depths hackbench's pipes reach charges nothing; the era's pipe and
/// `pipe_depth=off` pay nothing by depth.
#[test]
fn pipe_data_pays_the_measured_cost_of_its_depth() {
    let w = "hackbench:groups=2,loops=50,pipe=on";
    let messages = 2 * 20 * 20 * 50;
    let flat = host_with_pipe_curve(vec![[1 << 40, 30]]);
    let priced = run(flat, 2, w);
    assert_eq!(counter(&priced, "pipe_depth_ns"), messages * 30);
    let none = run(host_with_pipe_curve(vec![]), 2, w);
    assert_eq!(counter(&none, "pipe_depth_ns"), 0);
    assert!(seconds(&priced) > seconds(&none));
    let beyond = run(
        host_with_pipe_curve(vec![[64 << 20, 0], [1 << 40, 30]]),
        2,
        w,
    );
    assert_eq!(
        counter(&beyond, "pipe_depth_ns"),
        0,
        "40 pipes never hold 64 MB"
    );
    let mut off = Machine::boot(flat, Some(2)).expect("boots");
    off.pipe_depth = false;
    assert_eq!(run_on(off, w)["result"], none["result"], "pipe_depth=off");
    let mut era_pipe = Machine::boot(flat, Some(2)).expect("boots");
    era_pipe.pipe_ring = Some(false);
    assert_eq!(
        counter(&run_on(era_pipe, w), "pipe_depth_ns"),
        0,
        "2.4's pipe"
    );
}

/// The shipped host with an IPI delivered to a running CPU in `ipi` ns and a halted CPU
/// woken `idle_exit` ns later still.
fn host_with_wakeup(ipi: u64, idle_exit: u64) -> &'static Preset {
    let mut h = shipped();
    h.costs.ipi_latency_ns = ipi;
    h.costs.idle_exit_ns = idle_exit;
    Box::leak(Box::new(h.to_preset()))
}

/// Split lat_pipe: both CPUs halt between hops, so every round trip wakes two halted CPUs
/// and pays the idle exit twice, and nothing else about it moves — the round trip grows
/// by twice each step, steadily (an IPI's delivery to a running CPU stays short, so no IPI
/// in flight outlives its hop to serve a later one).
#[test]
fn waking_a_halted_cpu_pays_its_idle_exit_on_every_hop() {
    let split = "lat_pipe:pin=split,rounds=400,warmup=20";
    let us = |exit: u64| seconds(&run(host_with_wakeup(1_500, exit), 2, split));
    let rounds: Vec<f64> = [0, 5_000, 10_000, 15_000, 20_000]
        .into_iter()
        .map(us)
        .collect();
    for w in rounds.windows(2) {
        let step = w[1] - w[0];
        assert!(
            (9.0..11.0).contains(&step),
            "5 us more idle exit moved the round trip by {step:.2} us ({rounds:?})"
        );
    }
    // On one CPU nobody halts between hops: the idle exit costs nothing.
    let same = "lat_pipe:pin=same,rounds=400,warmup=20";
    let one = |exit: u64| seconds(&run(host_with_wakeup(1_500, exit), 2, same));
    assert_eq!(one(0), one(20_000));
}
