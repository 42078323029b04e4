//! Traces (`--trace`, `--latency`, `--timeline`): the Perfetto trace decoded with the
//! writer's own messages and checked against the rules of traces.md §2.4 and against the
//! run's counters; a golden ftrace text; the timeline SVG. See: issue 16.

use std::path::PathBuf;

use schedlab::engine::{Time, US};
use schedlab::kernel::abi::{program, Env, Op, Program, Record};
use schedlab::kernel::Kernel;
use schedlab::report::Metric;
use schedlab::trace::latency::By;
use schedlab::trace::proto::Event;
use schedlab::trace::setup::Request;
use schedlab::trace::{check, perfetto, Window};
use schedlab::workload::{metric, Workload};
use schedlab::{RunConfig, Simulation};

fn cfg(cpus: usize, policy: &str, workload: &str) -> RunConfig {
    RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    }
}

/// A file name in a temporary directory of its own, removed with it when dropped.
struct Tmp {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Tmp {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<std::path::Path> for Tmp {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

fn tmp(name: &str) -> Tmp {
    let dir = tempfile::Builder::new()
        .prefix("schedlab-trace-")
        .tempdir()
        .unwrap();
    Tmp {
        path: dir.path().join(name),
        _dir: dir,
    }
}

/// Run `c` with `req` installed; the report as JSON and the latency summary, if asked.
fn traced(
    mut sim: Simulation,
    req: &Request,
) -> (serde_json::Value, Option<schedlab::trace::latency::Summary>) {
    let h = req.install(&mut sim).expect("trace installs");
    sim.run(&mut |_, _| {}).expect("run succeeds");
    sim.finish_trace().expect("trace written");
    let r = serde_json::to_value(sim.report().expect("report")).unwrap();
    (r, h.map(|h| h.lock().unwrap().clone()))
}

fn trace_file(c: RunConfig, name: &str) -> (serde_json::Value, Tmp) {
    let path = tmp(name);
    let req = Request {
        file: Some(path.to_path_buf()),
        ..Default::default()
    };
    let (r, _) = traced(Simulation::new(c).unwrap(), &req);
    (r, path)
}

#[test]
fn perfetto_traces_are_continuous_ordered_and_count_what_the_counters_count() {
    for (cpus, policy, workload) in [
        (2, "linux-2.4", "reflex:tasks=2,duration_ms=20,warmup_ms=5"),
        (2, "o1-d1", "reflex:tasks=2,duration_ms=20,warmup_ms=5"),
        (4, "mq", "hackbench:groups=2,loops=3,fds=5"),
        (4, "o1-2.6", "chat:rooms=2,users=4,messages=4"),
        (
            2,
            "hamq",
            "hackbench:groups=1,loops=3,fds=4,pipe=on,threads=on",
        ),
        (2, "o1-g1", "lat_proc:op=exec"),
    ] {
        let what = format!("{workload} under {policy} on {cpus} CPUs");
        let name = format!(
            "{}-{}.perfetto-trace",
            policy,
            workload.split(':').next().unwrap()
        );
        let (r, path) = trace_file(cfg(cpus, policy, workload), &name);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[0], 0x0a, "{what}: a Perfetto trace starts with 0a");
        let t = perfetto::decode(&bytes).unwrap();
        let f = check::check(&t, true).unwrap_or_else(|e| panic!("{what}: {e}"));
        let c = &r["counters"];
        assert_eq!(
            f.switches,
            c["context_switches"].as_u64().unwrap(),
            "{what}: sched_switch events vs counters.context_switches"
        );
        assert!(
            f.cpus >= 1 && f.cpus <= cpus,
            "{what}: bundles of {} CPUs",
            f.cpus
        );
        let kind = |k: &str| f.by_kind.get(k).copied().unwrap_or(0);
        assert_eq!(
            kind("sched_migrate_task"),
            c["migrations"].as_u64().unwrap(),
            "{what}"
        );
        assert_eq!(
            kind("sched_wakeup"),
            c["wakeups"].as_u64().unwrap(),
            "{what}"
        );
        assert_eq!(kind("sched_waking"), kind("sched_wakeup"), "{what}");
        assert_eq!(kind("task_newtask"), c["forks"].as_u64().unwrap(), "{what}");
        assert_eq!(
            kind("sched_wakeup_new"),
            c["forks"].as_u64().unwrap(),
            "{what}"
        );
        assert!(f.named > 0 && f.track_events > 0, "{what}: {f:?}");
        std::fs::remove_file(&path).unwrap();
    }
}

/// The comms a run's trace names its tasks by (at fork, and in the process tree).
fn comms_of(c: RunConfig, name: &str) -> std::collections::BTreeSet<String> {
    let (_, path) = trace_file(c, name);
    let t = perfetto::decode(&std::fs::read(&path).unwrap()).unwrap();
    let mut comms = std::collections::BTreeSet::new();
    for p in &t.packet {
        if let Some(b) = &p.ftrace_events {
            for e in &b.event {
                if let Some(Event::TaskNewtask(n)) = &e.event {
                    comms.insert(n.comm.clone().unwrap());
                }
            }
        }
        if let Some(pt) = &p.process_tree {
            for th in &pt.threads {
                comms.insert(th.name.clone().unwrap());
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
    comms
}

#[test]
fn tasks_are_named_as_their_programs() {
    let comms = comms_of(
        cfg(2, "o1-d1", "hackbench:groups=2,loops=2,fds=3"),
        "names.perfetto-trace",
    );
    for want in [
        "hackbench",
        "receiver:1.1",
        "receiver:2.3",
        "sender:1.1",
        "sender:2.3",
    ] {
        assert!(comms.contains(want), "{want} not in {comms:?}");
    }
    // rt-app's threads carry their task's name, as rt-app names them.
    let comms = comms_of(cfg(2, "eevdf", "rtapp:@periodic"), "rtapp.perfetto-trace");
    for want in [
        "rtapp:ctrl-0",
        "rtapp:video-1",
        "rtapp:video-2",
        "rtapp:logger-3",
    ] {
        assert!(comms.contains(want), "{want} not in {comms:?}");
    }
    // A mix's tasks carry their component's workload name, or their program's own.
    let comms = comms_of(
        cfg(
            2,
            "eevdf",
            "mix:lat_pipe:rounds=50,warmup=5+loop_yield:instances=2,duration_ms=5,warmup_ms=0",
        ),
        "mix.perfetto-trace",
    );
    assert!(
        comms.contains("lat_pipe") && comms.contains("loop_yield") && !comms.contains("mix"),
        "{comms:?}"
    );
    let comms = comms_of(
        cfg(
            2,
            "eevdf",
            "mix:hackbench:groups=1,loops=2,fds=2+loop_yield:instances=1,duration_ms=5,warmup_ms=0",
        ),
        "mixhb.perfetto-trace",
    );
    for want in ["hackbench", "sender:1.1", "receiver:1.2", "loop_yield"] {
        assert!(comms.contains(want), "{want} not in {comms:?}");
    }
}

#[test]
fn traces_are_byte_identical_for_equal_runs() {
    let w = "hackbench:groups=1,loops=3,fds=4";
    for ext in ["perfetto-trace", "txt"] {
        let (_, a) = trace_file(cfg(4, "linux-2.4", w), &format!("det-a.{ext}"));
        let (_, b) = trace_file(cfg(4, "linux-2.4", w), &format!("det-b.{ext}"));
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{ext}"
        );
    }
}

#[test]
fn a_trace_window_holds_only_its_events() {
    let path = tmp("window.perfetto-trace");
    let req = Request {
        file: Some(path.to_path_buf()),
        window: Some(Window::parse("5..6").unwrap()),
        ..Default::default()
    };
    let c = cfg(2, "o1-d1", "reflex:tasks=2,duration_ms=10,warmup_ms=2");
    traced(Simulation::new(c).unwrap(), &req);
    let t = perfetto::decode(&std::fs::read(&path).unwrap()).unwrap();
    let f = check::check(&t, false).unwrap();
    assert!(f.switches > 10, "{f:?}");
    for p in &t.packet {
        for e in p.ftrace_events.iter().flat_map(|b| &b.event) {
            let ts = e.timestamp.unwrap();
            assert!((5_000_000..6_000_000).contains(&ts), "{ts}");
        }
    }
}

/// init forks one child that computes 20 µs and exits; init waits for it.
struct Tiny;

impl Workload for Tiny {
    fn root(&self) -> Box<dyn Program> {
        let mut step = 0;
        program(move |_env: &mut Env<'_>| {
            step += 1;
            match step {
                1 => {
                    let mut n = 0;
                    let child = program(move |_env: &mut Env<'_>| {
                        n += 1;
                        if n == 1 {
                            Op::Compute { ns: 20 * US, ws: 0 }
                        } else {
                            Op::Exit
                        }
                    });
                    Op::Fork { child }
                }
                2 => Op::Wait,
                _ => Op::Exit,
            }
        })
    }
    fn result(&self, _rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(metric("done", 1.0, "", "higher"))
    }
    fn limit_ns(&self) -> Time {
        schedlab::engine::SEC
    }
}

#[test]
fn ftrace_text_of_a_tiny_run_is_golden() {
    let path = tmp("tiny.txt");
    let req = Request {
        file: Some(path.to_path_buf()),
        ..Default::default()
    };
    let sim = Simulation::with_workload(cfg(2, "o1-2.6", "tiny"), Box::new(Tiny)).unwrap();
    let (r, _) = traced(sim, &req);
    let got = std::fs::read_to_string(&path).unwrap();
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny.txt");
    if std::env::var_os("SCHEDLAB_BLESS").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("golden file (SCHEDLAB_BLESS=1 writes it)");
    assert_eq!(
        got, want,
        "ftrace text changed (SCHEDLAB_BLESS=1 rewrites the golden file)"
    );
    let switches = got
        .lines()
        .filter(|l| l.contains(": sched_switch: "))
        .count() as u64;
    assert_eq!(
        switches,
        r["counters"]["context_switches"].as_u64().unwrap()
    );
}

#[test]
fn the_latency_summary_accounts_for_every_switch_in() {
    let req = Request {
        latency: Some(By::Group),
        ..Default::default()
    };
    let c = cfg(4, "linux-2.4", "hackbench:groups=2,loops=3,fds=5");
    let (r, s) = traced(Simulation::new(c).unwrap(), &req);
    let s = s.unwrap();
    let names: Vec<&str> = s.rows.iter().map(|r| r.task.as_str()).collect();
    assert!(
        names.contains(&"sender:(10)") && names.contains(&"receiver:(10)"),
        "{names:?}"
    );
    // Every switch-in of a task follows its becoming runnable: one delay each.
    assert_eq!(
        s.total_count,
        r["counters"]["task_switches"].as_u64().unwrap()
    );
    for row in &s.rows {
        assert!(row.max_delay_ns as f64 >= row.avg_delay_ns, "{row:?}");
        assert_eq!(
            row.max_delay_end_ns - row.max_delay_start_ns,
            row.max_delay_ns
        );
    }
    let wl = &r["counters"]["wakeup_latency"];
    assert!(wl["count"].as_u64().unwrap() > 0);
    assert!(wl["p50_ns"].as_f64().unwrap() <= wl["p99_ns"].as_f64().unwrap());
    assert!(wl["p99_ns"].as_f64().unwrap() <= wl["max_ns"].as_f64().unwrap());
}

#[test]
fn the_timeline_is_well_formed_svg_with_one_lane_per_cpu() {
    let path = tmp("timeline.svg");
    let req = Request {
        timeline: Some(path.to_path_buf()),
        window: Some(Window::parse("4..4.2").unwrap()),
        ..Default::default()
    };
    let c = cfg(4, "o1-d1", "reflex:tasks=2,duration_ms=10,warmup_ms=2");
    traced(Simulation::new(c).unwrap(), &req);
    let svg = std::fs::read_to_string(&path).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let lanes = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("lane"))
        .count();
    assert_eq!(lanes, 4);
    assert!(
        svg.contains("reflex:0") && svg.contains("reflex:1"),
        "tasks labelled"
    );
}

#[test]
fn tracing_changes_no_result() {
    let c = || cfg(4, "mq", "chat:rooms=2,users=4,messages=4");
    let plain = serde_json::to_value(schedlab::run(c()).unwrap()).unwrap();
    let (traced, _) = trace_file(c(), "same.perfetto-trace");
    assert_eq!(plain, traced);
}

/// The Python that has Perfetto's compiled trace schema (`pip install perfetto protobuf`):
/// `SCHEDLAB_PYTHON`, else `python3`. `None` when it lacks the schema — the check is then
/// skipped, unless `SCHEDLAB_REQUIRE_PERFETTO=1` (as `.ci/run` sets) makes that a failure.
fn perfetto_python() -> Option<String> {
    let py = std::env::var("SCHEDLAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_schema = std::process::Command::new(&py)
        .args([
            "-c",
            "import google.protobuf.unknown_fields, perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if has_schema {
        return Some(py);
    }
    assert!(
        std::env::var("SCHEDLAB_REQUIRE_PERFETTO").as_deref() != Ok("1"),
        "{py} cannot import Perfetto's trace schema (pip install perfetto protobuf)"
    );
    eprintln!("skipped: {py} has no Perfetto schema (pip install perfetto protobuf)");
    None
}

/// Run `tests/perfetto/check_schema.py` on `trace`: its exit status and its stderr.
fn check_with_perfetto_schema(py: &str, trace: &std::path::Path) -> (bool, String) {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/perfetto/check_schema.py");
    let out = std::process::Command::new(py)
        .arg(&script)
        .arg(trace)
        .output()
        .expect("python runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What Perfetto's UI imports is Perfetto's own schema: decoded with it (the `perfetto`
/// package's `perfetto_trace_pb2`), our traces have no unknown field, per-CPU ftrace
/// bundles in time order, `prev_state` on every switch and a name for every pid that runs.
#[test]
fn perfetto_traces_conform_to_perfettos_own_schema() {
    let Some(py) = perfetto_python() else { return };
    for (cpus, policy, workload) in [
        (2, "linux-2.4", "reflex:tasks=2,duration_ms=20,warmup_ms=5"),
        (8, "linux-2.4", "chat:rooms=2,messages=20"),
        (8, "o1-2.6", "hackbench:groups=2,loops=5"),
    ] {
        let (_, path) = trace_file(
            cfg(cpus, policy, workload),
            &format!("schema-{policy}-{cpus}.perfetto-trace"),
        );
        let (ok, err) = check_with_perfetto_schema(&py, &path);
        assert!(ok, "{policy} {workload}: {err}");
    }
    // The check can fail: a packet with a field Perfetto does not define (2000) and no
    // switch at all.
    let bad = tmp("unknown-field.perfetto-trace");
    std::fs::write(&bad, [0x0a, 0x03, 0x80, 0x7d, 0x01]).unwrap();
    let (ok, err) = check_with_perfetto_schema(&py, &bad);
    assert!(!ok && err.contains("unknown fields [2000]"), "{err}");
}
