//! `mix`: workloads at once. The measured one's result is its own (each component keeps
//! its own record), a load that finishes its measurement ends its own tasks and not the
//! run, and a mix runs deterministically like any workload.

use schedlab::report::run;
use schedlab::sim::RunConfig;

fn mix(workload: &str) -> schedlab::report::RunReport {
    on(workload, 2)
}

fn on(workload: &str, cpus: usize) -> schedlab::report::RunReport {
    run(RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: "eevdf".into(),
        workload: workload.into(),
        seed: 1,
    })
    .unwrap_or_else(|e| panic!("{workload}: {e}"))
}

fn load(r: &schedlab::report::RunReport) -> serde_json::Value {
    r.result.details.as_ref().expect("a mix reports its loads")["load"][0].clone()
}

#[test]
fn the_measured_workload_is_measured_under_the_load_and_keeps_its_own_marks() {
    let alone = on("lat_pipe:rounds=2000,warmup=20", 1);
    let loaded = on(
        "mix:lat_pipe:rounds=2000,warmup=20+loop_yield:instances=2,duration_ms=1000,warmup_ms=0",
        1,
    );
    assert_eq!(loaded.result.metric, alone.result.metric);
    // On one CPU with two yielders, a hand-off often passes through a yielder's turn.
    assert!(
        loaded.result.value > 1.2 * alone.result.value,
        "{} against {} us alone",
        loaded.result.value,
        alone.result.value
    );
    // The load ran its window past the measured run's end: no result of its own, and its
    // 'start' mark never reached lat_pipe's record (else lat_pipe would time from it).
    assert!(load(&loaded)["unfinished"].is_string(), "{}", load(&loaded));
}

#[test]
fn a_load_that_finishes_leaves_and_the_measured_one_runs_on() {
    // One CPU: on two, where the yielders stood when hackbench forked decides where its
    // tasks settle (6.x's synchronous wake-ups keep a pair where it met), which would
    // swamp what this test looks at.
    let r = on(
        "mix:hackbench:groups=1,loops=200,fds=4+loop_yield:instances=2,duration_ms=1,warmup_ms=0",
        1,
    );
    assert_eq!(r.result.metric, "seconds");
    let l = load(&r);
    assert_eq!(l["metric"], "switches_per_s", "{l}");
    assert!(l["value"].as_f64().unwrap() > 0.0);
    // The yielders left when their window closed, long before hackbench's end.
    let hb = on("hackbench:groups=1,loops=200,fds=4", 1);
    let ratio = r.result.value / hb.result.value;
    assert!(
        (0.8..1.5).contains(&ratio),
        "hackbench took {ratio}x its time alone"
    );
}

/// The measured program runs in init, which also forked the loads: its `wait()` must
/// reap its own children only, not a load's process that exited first (else hackbench's
/// parent counts a load as one of its children and ends one child early).
#[test]
fn the_measured_parent_reaps_only_its_own_children() {
    for (load, cpus) in [
        ("reflex:tasks=2,rounds=20", 2),
        ("loop_yield:instances=2,duration_ms=1,warmup_ms=0", 1),
        ("lat_proc:op=fork,n=5", 2),
    ] {
        let w = format!("mix:hackbench:groups=2,loops=100+{load}");
        let r = on(&w, cpus);
        assert_eq!(r.result.metric, "seconds", "{w}");
        assert!(
            load_finished(&r),
            "{w}: the load ended before hackbench did"
        );
    }
}

fn load_finished(r: &schedlab::report::RunReport) -> bool {
    load(r)["value"].as_f64().is_some_and(|v| v > 0.0)
}

#[test]
fn a_mix_is_deterministic_and_its_spec_round_trips() {
    let w = "mix:hackbench:groups=1,loops=20,fds=4+hackbench:groups=1,loops=50,fds=4,pipe=on";
    let (a, b) = (mix(w), mix(w));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    let spec = schedlab::spec::Spec::parse("workload", w).unwrap();
    assert_eq!(
        spec.args,
        vec![("of".to_string(), w["mix:".len()..].to_string())]
    );
    let again = schedlab::spec::Spec::parse("workload", &spec.to_string()).unwrap();
    assert_eq!(again.args, spec.args);
}

#[test]
fn a_bad_mix_is_one_clear_line() {
    for (w, says) in [
        ("mix:hackbench", "two workloads or more"),
        ("mix:reflex+mix:reflex", "cannot contain a mix"),
        ("mix:reflex++hackbench", "two workloads or more"),
        (
            "mix:reflex+hackbench:bogus=1",
            "unknown option 'bogus' for workload hackbench",
        ),
        ("mix:reflex+nosuch", "unknown workload 'nosuch'"),
    ] {
        let e = run(RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(2),
            policy: "eevdf".into(),
            workload: w.into(),
            seed: 1,
        })
        .err()
        .unwrap_or_else(|| panic!("{w} ran"))
        .to_string();
        assert!(e.contains(says), "{w}: {e}");
        assert!(!e.contains('\n'), "{w}: {e}");
    }
}
