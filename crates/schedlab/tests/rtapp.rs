//! rt-app files in the simulator (`workload/rtapp`, rtapp.md): the files Debian's rt-app
//! package ships, the leniencies of rt-app's reader, and what each event does.

use std::io::Write;

use schedlab::workload::rtapp::parse::{self, Event};
use schedlab::RunConfig;

fn cfg(cpus: usize, policy: &str, workload: &str) -> RunConfig {
    RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    }
}

/// Run an rt-app text; the run's JSON.
fn run_text(cpus: usize, policy: &str, text: &str) -> Result<serde_json::Value, String> {
    // The file and its directory go when `dir` is dropped.
    let dir = tempfile::Builder::new()
        .prefix("schedlab-rtapp-")
        .tempdir()
        .unwrap();
    let path = dir.path().join("workload.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let r = schedlab::run(cfg(cpus, policy, &format!("rtapp:{}", path.display())));
    r.map(|r| serde_json::to_value(&r).unwrap())
        .map_err(|e| e.to_string())
}

fn threads(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["result"]["details"]["threads"]
        .as_array()
        .unwrap()
        .clone()
}

fn thread<'a>(v: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    v.iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name} in {v:?}"))
}

fn sim_ms(v: &serde_json::Value) -> f64 {
    v["sim"]["simulated_ns"].as_f64().unwrap() / 1e6
}

/// Every file of Debian's rt-app 1.0 package runs, or is refused in one line for the
/// reason rtapp.md gives.
#[test]
fn the_debian_examples_run_or_are_refused_for_a_named_reason() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp/debian");
    let expect: &[(&str, Option<&str>)] = &[
        ("browser-long.json", None),
        ("browser-short.json", None),
        (
            "cpufreq_governor_efficiency_calibration.json",
            Some("SCHED_FIFO is not modelled"),
        ),
        (
            "cpufreq_governor_efficiency_dvfs.json",
            Some("SCHED_FIFO is not modelled"),
        ),
        ("merge_global.json", Some("no \"tasks\" object")),
        ("merge_resources.json", Some("no \"tasks\" object")),
        (
            "merge_thread0.json",
            Some("event \"lock_order\": expected a string"),
        ),
        (
            "merge_thread1.json",
            Some("event \"lock_order\": expected a string"),
        ),
        (
            "merge_thread2.json",
            Some("event \"lock_order\": expected a string"),
        ),
        (
            "merge_thread3.json",
            Some("event \"lock_order\": expected a string"),
        ),
        ("mp3-long.json", None),
        ("mp3-short.json", None),
        ("spreading-tasks.json", None),
        ("template.json", None),
        ("tutorial_example1.json", None),
        ("tutorial_example2.json", None),
        ("tutorial_example3.json", None),
        ("tutorial_example4.json", None),
        ("tutorial_example5.json", None),
        ("tutorial_example6.json", None),
        ("tutorial_example7.json", None),
        ("tutorial_example8.json", None),
        ("video-long.json", Some("not JSON, even as rt-app reads it")),
        (
            "video-short.json",
            Some("not JSON, even as rt-app reads it"),
        ),
    ];
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".json"))
        .collect();
    files.sort();
    let listed: Vec<&str> = expect.iter().map(|(f, _)| *f).collect();
    assert_eq!(files, listed, "every shipped example has an expectation");
    for (f, refusal) in expect {
        // The long ones run for minutes of simulated time: mp3-long is 600 s.
        let path = dir.join(f);
        let r = schedlab::run(cfg(4, "eevdf", &format!("rtapp:{}", path.display())));
        match (refusal, r) {
            (None, Ok(r)) => {
                let v = serde_json::to_value(&r).unwrap();
                assert!(!threads(&v).is_empty(), "{f}: no thread finished a row");
            }
            (Some(why), Err(e)) => {
                let e = e.to_string();
                assert!(e.contains(why), "{f}: refused as {e:?}, expected {why:?}");
                assert!(!e.contains('\n'), "{f}: refusal is not one line: {e}");
            }
            (None, Err(e)) => panic!("{f}: refused: {e}"),
            (Some(why), Ok(_)) => panic!("{f}: ran, expected a refusal ({why})"),
        }
    }
}

/// json-c's leniencies: comments of both kinds and trailing commas; repeated keys are
/// each their own event, in file order; prefixes pick the longest event name; unknown
/// keys are listed as ignored.
#[test]
fn the_reader_accepts_what_rt_app_accepts() {
    let text = r#"{
        // a comment
        "tasks": {
            /* another */
            "t": {
                "loop": 2,
                "run": 100,
                "runtime1": 200,
                "run": 300,
                "sleep_x": 10,
                "memrun": {"type": "read", "count": 64},
                "mem0": 32,
                "slep": 5,
                "timer_b": {"ref": "b", "period": 1000, "mode": "absolute"},
            },
        },
    }"#;
    let app = parse::parse(text, 2).unwrap();
    let ev: Vec<(&str, &Event)> = app.tasks[0].phases[0]
        .events
        .iter()
        .map(|(k, e)| (k.as_str(), e))
        .collect();
    assert_eq!(
        ev,
        vec![
            ("run", &Event::Run(100)),
            ("runtime1", &Event::Runtime(200)),
            ("run", &Event::Run(300)),
            ("sleep_x", &Event::Sleep(10)),
            ("memrun", &Event::Mem(64)),
            ("mem0", &Event::Mem(32)),
            (
                "timer_b",
                &Event::Timer {
                    name: "b".into(),
                    period_us: 1000,
                    absolute: true
                }
            ),
        ]
    );
    assert!(
        app.ignored.iter().any(|k| k.ends_with(": slep")),
        "{:?}",
        app.ignored
    );
    assert_eq!(app.tasks[0].phases[0].loops, 2);
    assert_eq!(
        app.tasks[0].loops, 1,
        "a loop without phases counts the phase, then ends"
    );
}

#[test]
fn bad_files_are_refused_in_one_line_naming_the_key() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"tasks": {"t": {"run": "10"}}}"#,
            "event \"run\": expected an integer, found a string",
        ),
        (
            r#"{"tasks": {"t": {"sleep": false}}}"#,
            "event \"sleep\": expected an integer",
        ),
        (
            r#"{"tasks": {"t": {"cpus": [7], "run": 1}}}"#,
            "invalid cpu 7",
        ),
        (
            r#"{"tasks": {"t": {"policy": "SCHED_WEIRD", "run": 1}}}"#,
            "unknown policy \"SCHED_WEIRD\"",
        ),
        (
            r#"{"tasks": {"t": {"fork": "nobody"}}}"#,
            "names task \"nobody\"",
        ),
        (
            r#"{"tasks": {"t": {"phases": {"p": {"loop": 0, "run": 1}}}}}"#,
            "loop 0",
        ),
        (r#"{"tasks": {"t": {"suspend", "run": 1}}}"#, "not JSON"),
        (
            r#"{"tasks": {"t": {"timer": {"period": 10}}}}"#,
            "no \"ref\"",
        ),
    ];
    for (text, why) in cases {
        let e = parse::parse(text, 2).unwrap_err();
        assert!(e.contains(why), "{text}: {e:?} lacks {why:?}");
        assert!(!e.contains('\n'));
    }
}

/// A timer wakes at absolute instants: a task that needs less than its period misses
/// none and completes one row per period; one that needs more misses, and its slack is
/// negative. A `sleep` instead drifts: the same task does fewer rows.
#[test]
fn timers_are_absolute_and_sleeps_relative() {
    let periodic = |run: u64, event: &str| {
        format!(
            r#"{{"global": {{"duration": 1}}, "tasks": {{"t": {{"loop": -1, "run": {run}, {event} }}}}}}"#
        )
    };
    let v = run_text(
        2,
        "eevdf",
        &periodic(3000, r#""timer": {"ref": "unique", "period": 10000}"#),
    )
    .unwrap();
    let t = &threads(&v)[0];
    assert_eq!(t["missed_timers"], 0, "{t}");
    let rows = t["rows"].as_u64().unwrap();
    assert!((98..=100).contains(&rows), "{t}");
    assert!(t["slack_min_us"].as_i64().unwrap() > 5000, "{t}");
    let v = run_text(
        2,
        "eevdf",
        &periodic(12000, r#""timer": {"ref": "unique", "period": 10000}"#),
    )
    .unwrap();
    let t = &threads(&v)[0];
    assert!(t["missed_timers"].as_u64().unwrap() > 50, "{t}");
    assert!(t["slack_min_us"].as_i64().unwrap() < 0, "{t}");
    let v = run_text(2, "eevdf", &periodic(3000, r#""sleep": 10000"#)).unwrap();
    let t = &threads(&v)[0];
    let rows = t["rows"].as_u64().unwrap();
    assert!((70..=78).contains(&rows), "3 ms run + 10 ms sleep: {t}");
}

/// Under a kernel with high-resolution timers (eevdf's) a timer wakes its task within the
/// timer slack of its instant on an idle machine; under 2.4's tick it waits for the tick.
#[test]
fn wakeup_latency_follows_the_kernel_s_timers() {
    let text = r#"{"global": {"duration": 1}, "tasks": {"t": {"loop": -1, "run": 1000,
        "timer": {"ref": "unique", "period": 7000}}}}"#;
    let v = run_text(2, "eevdf", text).unwrap();
    let t = &threads(&v)[0];
    let max = t["wakeup_latency_max_us"].as_u64().unwrap();
    assert!((50..60).contains(&max), "eevdf: {t}");
    let v = run_text(2, "linux-2.4", text).unwrap();
    let t = &threads(&v)[0];
    assert!(
        t["wakeup_latency_mean_us"].as_f64().unwrap() > 1000.0,
        "2.4: {t}"
    );
}

/// A mutex serialises its holders: two threads that run 2 ms under one mutex, 20 times,
/// take at least 80 ms on 2 CPUs; without the mutex, about half of that.
#[test]
fn a_mutex_serialises_its_holders() {
    let text = |locked: bool| {
        let (l, u) = if locked {
            (r#""lock": "m","#, r#","unlock": "m""#)
        } else {
            ("", "")
        };
        format!(r#"{{"tasks": {{"t": {{"instance": 2, "loop": 20, {l} "run": 2000 {u} }}}}}}"#)
    };
    let v = run_text(2, "eevdf", &text(true)).unwrap();
    assert!(sim_ms(&v) >= 80.0, "locked: {} ms", sim_ms(&v));
    for t in threads(&v) {
        assert_eq!(t["rows"], 20, "{t}");
    }
    let v = run_text(2, "eevdf", &text(false)).unwrap();
    assert!(sim_ms(&v) < 60.0, "unlocked: {} ms", sim_ms(&v));
}

/// A barrier holds every participant until the last arrives: three threads that run 1,
/// 2 and 4 ms before it, 10 times, take 10 × 4 ms, not less.
#[test]
fn a_barrier_releases_all_at_the_last_arrival() {
    let text = r#"{"tasks": {
        "a": {"loop": 10, "run": 1000, "barrier": "b"},
        "b": {"loop": 10, "run": 2000, "barrier": "b"},
        "c": {"loop": 10, "run": 4000, "barrier": "b"}}}"#;
    let v = run_text(4, "eevdf", text).unwrap();
    let ms = sim_ms(&v);
    assert!((40.0..45.0).contains(&ms), "{ms} ms");
    for t in threads(&v) {
        assert_eq!(t["rows"], 10, "{t}");
    }
}

/// `fork` creates a thread of the named task, named as rt-app names it (§9 (c)): the
/// launcher logs 5 + 1 + 10 rows, each worker 3.
#[test]
fn fork_creates_the_named_task() {
    let v = schedlab::run(cfg(2, "eevdf", "rtapp:@phases")).unwrap();
    let v = serde_json::to_value(&v).unwrap();
    let t = threads(&v);
    assert_eq!(thread(&t, "launcher-0")["rows"], 16);
    assert_eq!(thread(&t, "worker-1-0000")["rows"], 3);
    assert_eq!(thread(&t, "worker-2-0001")["rows"], 3);
    assert_eq!(v["result"]["details"]["ended"], "every thread ended");
}

/// `cpus` is honoured: two threads pinned to CPU 0 share it (their 10 × 10 ms take
/// 200 ms), unpinned they run side by side.
#[test]
fn affinity_is_honoured() {
    let text = |cpus: &str| {
        format!(r#"{{"tasks": {{"t": {{"instance": 2, "loop": 10, {cpus} "run": 10000}}}}}}"#)
    };
    let v = run_text(2, "o1-2.6", &text(r#""cpus": [0],"#)).unwrap();
    assert!(sim_ms(&v) >= 200.0, "pinned: {} ms", sim_ms(&v));
    let v = run_text(2, "o1-2.6", &text("")).unwrap();
    assert!(sim_ms(&v) < 150.0, "free: {} ms", sim_ms(&v));
}

/// suspend/resume and signal/wait: a signal with no waiter is lost, a resume wakes every
/// suspended thread of the task.
#[test]
fn suspend_waits_for_resume() {
    let text = r#"{"global": {"duration": 1}, "tasks": {
        "waker": {"loop": 5, "sleep": 10000, "resume": "sleeper"},
        "sleeper": {"instance": 2, "loop": -1, "suspend": "", "run": 100}}}"#;
    let v = run_text(4, "eevdf", text).unwrap();
    let t = threads(&v);
    // Each resume after the sleepers suspended wakes both: 5 rows each (the run then
    // ends at `duration`, the sleepers suspended for good).
    assert_eq!(thread(&t, "sleeper-1")["rows"], 5, "{t:?}");
    assert_eq!(thread(&t, "sleeper-2")["rows"], 5, "{t:?}");
    assert_eq!(v["result"]["details"]["ended"], "duration");
}

#[test]
fn equal_inputs_give_identical_results() {
    for f in ["@periodic", "@prodcons", "@phases"] {
        let a =
            serde_json::to_string(&schedlab::run(cfg(2, "cfs", &format!("rtapp:{f}"))).unwrap())
                .unwrap();
        let b =
            serde_json::to_string(&schedlab::run(cfg(2, "cfs", &format!("rtapp:{f}"))).unwrap())
                .unwrap();
        assert_eq!(a, b, "{f}");
    }
}

/// A thread that changes its own affinity every phase, under every policy: `schedule()`
/// takes it off its CPU's queue and the switch's tail places it on the new CPU; between
/// the two the invariant checks (debug builds) must accept it. Found by tutorial
/// example 8 under eevdf.
#[test]
fn affinity_moves_keep_the_invariants_under_every_policy() {
    let text = r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [2], "phases": {
        "a": {"cpus": [0], "run": 1500},
        "b": {"cpus": [1], "run": 1500},
        "c": {"run": 1500}}}}}"#;
    for p in schedlab::policy::POLICIES {
        let v = run_text(4, p.name, text).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let rows = threads(&v)[0]["rows"].as_u64().unwrap();
        assert!(
            rows > 300,
            "{}: {rows} rows in 1 s of 1.5 ms phases",
            p.name
        );
    }
}
