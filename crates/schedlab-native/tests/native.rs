//! Native workloads: the simulated workloads' parameters, structural counts on small runs,
//! cleanup on timeout, interrupt and failure, and clear rejection of bad parameters. No
//! wall-clock assertions.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedlab::spec::ParamSpec;
use schedlab::workload::WORKLOADS;
use schedlab_native::runner::{supervise, Outcome, RunError, RunOptions};
use schedlab_native::{parse, run, sys, NativeConfig, NativeError, NativeReport, NATIVE_WORKLOADS};

// ---- One declaration of each workload's parameters --------------------------------------
//
// Every native workload is a simulated workload run for real, so it takes exactly the
// simulated workload's parameters (system.md "Contracts": names, defaults, kinds), and
// `schedlab native W:k=v` means what `schedlab run --workload W:k=v` means.

/// Parameters a native workload may take that its simulated workload lacks, as
/// (workload, parameter, why). Each entry needs a reason the simulated workload has no
/// equivalent (a rounds, yields, messages or window parameter of its own would be one).
/// Empty: every native knob is the model's.
const NATIVE_ONLY: &[(&str, &str, &str)] = &[];

fn row(p: &ParamSpec) -> (String, String, String) {
    (
        p.name.to_string(),
        p.default.to_string(),
        format!("{:?}", p.kind),
    )
}

#[test]
fn every_native_workload_takes_exactly_the_simulated_parameters() {
    for w in NATIVE_WORKLOADS {
        let sim = WORKLOADS
            .iter()
            .find(|s| s.name == w.name)
            .unwrap_or_else(|| panic!("native workload {} has no simulated workload", w.name));
        let native_only: Vec<&str> = NATIVE_ONLY
            .iter()
            .filter(|(n, _, _)| *n == w.name)
            .map(|(_, p, _)| *p)
            .collect();
        let native: Vec<_> = w
            .params
            .iter()
            .filter(|p| !native_only.contains(&p.name))
            .map(row)
            .collect();
        let simulated: Vec<_> = sim.params.iter().map(row).collect();
        assert_eq!(
            native, simulated,
            "{}: native parameters (name, default, kind) differ from the simulated ones",
            w.name
        );
        for p in &native_only {
            assert!(
                w.params.iter().any(|d| d.name == *p),
                "{}: exception for {p}, which it does not take",
                w.name
            );
        }
        assert_eq!(w.metric, sim.metric, "{}: listed metric", w.name);
    }
}

#[test]
fn every_native_workload_accepts_its_defaults_and_every_single_default_given() {
    // Giving each parameter explicitly at its default is accepted natively, as it is by
    // the model (no simulated knob is refused at its default).
    for w in NATIVE_WORKLOADS {
        parse(w.name).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        for p in w.params.iter().filter(|p| p.default != "auto") {
            let spec = format!("{}:{}={}", w.name, p.name, p.default);
            parse(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        }
    }
}

#[test]
fn exceptions_are_few_and_named() {
    for (w, p, why) in NATIVE_ONLY {
        assert!(
            NATIVE_WORKLOADS.iter().any(|n| n.name == *w),
            "exception for unknown workload {w}"
        );
        assert!(!why.is_empty(), "{w}:{p} needs a reason");
    }
}

// ---- Runs ---------------------------------------------------------------------------------

fn native(spec: &str) -> NativeReport {
    run(&NativeConfig {
        workload: spec.into(),
        timeout: Some(Duration::from_secs(120)),
        runs: 1,
        interrupt: None,
    })
    .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn counts(r: &NativeReport) -> &BTreeMap<String, f64> {
    &r.counters.workload
}

#[test]
fn hackbench_counts_every_message_and_byte() {
    // groups · fds · fds · loops messages of datasize bytes, in all four modes.
    for mode in [
        "",
        ",pipe=on",
        ",threads=on",
        ",pipe=true,threads=true",
        ",inet=on",
    ] {
        let spec = format!("hackbench:groups=2,loops=7,datasize=33,fds=4{mode}");
        let r = native(&spec);
        let c = counts(&r);
        let msgs = (2 * 4 * 4 * 7) as f64;
        assert_eq!(c["messages"], msgs, "{spec}");
        assert_eq!(c["bytes_received"], msgs * 33.0, "{spec}");
        assert_eq!(c["bytes_sent"], msgs * 33.0, "{spec}");
        assert_eq!(r.native.tasks, 2 * 2 * 4, "{spec}");
        assert_eq!(r.result.metric, "seconds");
        assert_eq!(r.result.unit, "s");
        assert!(r.result.value > 0.0);
        assert_eq!(r.policy.name, "host");
        assert_eq!(r.workload.params["groups"], "2");
    }
}

#[test]
fn hackbench_prints_what_rt_tests_and_perf_print() {
    let r = native("hackbench:groups=1,loops=5,fds=4");
    let out = r.result.output.as_deref().unwrap();
    assert!(out.starts_with(
        "Running in process mode with 1 groups using 8 file descriptors each (== 8 tasks)\nEach sender will pass 5 messages of 100 bytes\nTime: "
    ), "{out}");
    let r = native("hackbench:groups=1,loops=5,tool=perf,threads=on");
    let out = r.result.output.as_deref().unwrap();
    assert!(out.starts_with("# Running 'sched/messaging' benchmark:\n# 20 sender and receiver threads per group\n# 1 groups == 40 threads run\n\n     Total time: "), "{out}");
}

#[test]
fn schbench_times_every_request_and_prints_its_percentiles() {
    let r = native("schbench:m=1,t=2,r=1,n=1,f=16,s=10");
    let d = r.result.details.as_ref().unwrap();
    let requests = counts(&r)["requests"];
    assert!(requests > 10.0, "{requests}");
    assert_eq!(
        d["request_latency_us"]["samples"].as_f64().unwrap(),
        requests
    );
    assert_eq!(d["rps"]["samples"], 2);
    assert_eq!(counts(&r)["threads"], 3.0);
    let out = r.result.output.as_deref().unwrap();
    assert!(
        out.starts_with("Wakeup Latencies percentiles (usec) runtime 1 (s) ("),
        "{out}"
    );
    assert!(out.contains("\n\t* 99.0th: "), "{out}");
    assert!(out.contains("\naverage rps: "), "{out}");
}

#[test]
fn netperf_counts_transactions_of_every_instance() {
    let r = native("netperf:instances=2,duration_ms=50,warmup_ms=5,req=10,resp=100");
    assert!(counts(&r)["transactions"] > 10.0);
    assert_eq!(r.result.metric, "transactions_per_s");
    let out = r.result.output.as_deref().unwrap();
    assert_eq!(out.matches("MIGRATED TCP REQUEST/RESPONSE TEST").count(), 2);
    assert!(out.contains("\n16384  131072 10       100     "), "{out}");
    // UDP_RR: connected datagram sockets; the servers end on the clients' empty datagram.
    let r = native("netperf:test=UDP_RR,instances=2,duration_ms=50,warmup_ms=5,req=10,resp=100");
    assert!(counts(&r)["transactions"] > 10.0);
    let out = r.result.output.as_deref().unwrap();
    assert_eq!(out.matches("MIGRATED UDP REQUEST/RESPONSE TEST").count(), 2);
    assert!(out.contains("\n212992 212992 10       100     "), "{out}");
}

#[test]
fn pipe_benchmarks_count_round_trips_and_bytes() {
    let r = native("lat_pipe:rounds=300,warmup=7");
    assert_eq!(counts(&r)["round_trips"], 300.0);
    assert_eq!(counts(&r)["child_round_trips"], 307.0);
    assert_eq!(r.result.metric, "us_per_round_trip");

    // warmup_ms=0: the untimed part is warmup_kb alone; the writer is stopped after the
    // timed part and the reader drains what it still wrote.
    let r = native("bw_pipe:mb=2,chunk_kb=16,warmup_kb=32,warmup_ms=0");
    let c = counts(&r);
    assert_eq!(c["bytes_timed"], (2 * 1024 * 1024) as f64);
    assert!(
        c["bytes_read"] >= (2 * 1024 * 1024 + 32 * 1024) as f64,
        "{c:?}"
    );
    assert_eq!(c["bytes_written"], c["bytes_read"], "{c:?}");
    assert_eq!(r.result.unit, "MB/s");
    let r = native("bw_pipe:mb=1,warmup_ms=30");
    assert!(counts(&r)["bytes_read"] > counts(&r)["bytes_timed"]);

    let r = native("lat_ctx:procs=3,size_kb=4,rounds=50,warmup=2,ovr_iters=10");
    assert_eq!(counts(&r)["hops"], 150.0);
    assert_eq!(r.native.tasks, 2, "the leader is ring member 0");
}

#[test]
fn thread_workloads_count_rounds_and_yields() {
    // rounds=N: the window closes when the 3 sets together have done 3 · 40 rounds (a set
    // finishing a round at the same moment may add one).
    let r = native("reflex:tasks=7,sets=3,rounds=40");
    let c = counts(&r);
    assert!(c["rounds"] >= 120.0 && c["rounds"] <= 123.0, "{c:?}");
    assert!(c["rounds_total"] >= c["rounds"], "{c:?}");
    // Sets of 3, 2, 2: every member passes the token once per round of its set.
    assert!(c["token_passes"] >= 2.0 * c["rounds_total"], "{c:?}");
    assert_eq!(c["yields"], 0.0, "yield_pct=0: Path II only");
    assert_eq!(r.workload.params["sets"], "3");
    assert_eq!(r.result.metric, "us_per_round");
    let r = native("reflex:tasks=6,rounds=10");
    assert_eq!(r.workload.params["sets"], "3", "sets defaults to tasks/2");
    // Path I and a fractional compute delay are honoured.
    let r = native("reflex:tasks=4,yield_pct=50,delay_us=0.5,rounds=50");
    assert!(counts(&r)["yields"] > 0.0, "{:?}", counts(&r));
    // rounds=auto: a window of duration_ms after warmup_ms.
    let r = native("reflex:tasks=4,warmup_ms=10,duration_ms=40");
    assert!(counts(&r)["rounds"] > 0.0);
    assert!(r.native.timed_ns >= 40_000_000, "{}", r.native.timed_ns);

    let r = native("sched_yield:threads=3,warmup_ms=10,duration_ms=40");
    let c = counts(&r);
    assert!(
        c["yields"] > 0.0 && c["yields_total"] >= c["yields"],
        "{c:?}"
    );
    assert!(r.native.timed_ns >= 40_000_000, "{}", r.native.timed_ns);
    assert_eq!(r.native.tasks, 3);
    assert_eq!(r.result.metric, "us_per_yield");

    let r = native("loop_yield:instances=2,duration_ms=50,warmup_ms=10");
    assert!(counts(&r)["yields"] > 0.0);
    assert_eq!(r.result.metric, "switches_per_s");
}

#[test]
fn chat_delivers_every_message_to_the_other_users() {
    let r = native("chat:rooms=2,messages=15,users=5");
    let c = counts(&r);
    assert_eq!(c["sent"], 2.0 * 5.0 * 15.0);
    assert_eq!(c["delivered"], 2.0 * 5.0 * 15.0 * 4.0);
    assert_eq!(c["server_forwarded"], c["delivered"]);
    // 2 client threads per user in the leader, the server process.
    assert_eq!(r.native.tasks, 2 * 2 * 5 + 1);
}

#[test]
fn tbench_runs_the_simulated_mix_through_a_server_per_client() {
    let r = native("tbench:clients=3,ops=40");
    let c = counts(&r);
    assert_eq!(c["exchanges"], 3.0 * 40.0);
    // Each server also answers its client's set-up exchange.
    assert_eq!(c["replies"], 3.0 * 41.0);
    // The payload is the mix's, drawn from one stream per client as the runner draws it.
    let payload: u64 = (0..3)
        .map(|k| {
            let mut rng = schedlab::engine::SimRng::stream(1, k);
            (0..40)
                .map(|_| schedlab::workload::tbench::exchange(&mut rng).2)
                .sum::<u64>()
        })
        .sum();
    assert_eq!(c["payload_bytes"], payload as f64);
    assert_eq!(
        r.native.tasks, 6,
        "a client and a server process per connection"
    );
    assert_eq!(r.result.metric, "mb_per_s");
}

#[test]
fn a_mix_measures_its_first_workload_and_ends_the_loads() {
    // The load would yield for 60 s: the run ends with the measured ping-pong.
    let r = native("mix:lat_pipe:rounds=300,warmup=10+loop_yield:instances=1,duration_ms=60000");
    assert_eq!(r.result.metric, "us_per_round_trip");
    assert_eq!(counts(&r)["load_workloads"], 1.0);
    assert!(
        r.native.wall_ms < 30_000,
        "the load was not ended: {} ms",
        r.native.wall_ms
    );
}

#[test]
fn lat_proc_forks_and_execs() {
    let r = native("lat_proc:op=fork,n=20,warmup=3");
    assert_eq!(counts(&r)["children"], 23.0);
    assert_eq!(r.native.tasks, 23);
    assert_eq!(r.result.metric, "us_per_op");
    if std::path::Path::new("/bin/true").exists() {
        let r = native("lat_proc:op=exec,n=5,warmup=0");
        assert_eq!(r.result.metric, "us_per_op");
        assert_eq!(counts(&r)["children"], 5.0);
    }
}

#[test]
fn bad_parameters_are_rejected_with_one_clear_line() {
    let e = |s: &str| {
        parse(s)
            .err()
            .unwrap_or_else(|| panic!("{s} accepted"))
            .to_string()
    };
    assert!(e("hackbench:groups=0")
        .contains("bad value groups=0 for workload hackbench: expected an integer in 1..="));
    assert!(e("hackbench:gropus=3").contains("did you mean 'groups'"));
    assert!(e("hackbnch").contains("did you mean 'hackbench'"));
    assert!(e("hackbench:pipe=maybe").contains("expected on or off"));
    assert!(e("lat_proc:op=shell").contains("one of fork, exec"));
    assert!(e("reflex:tasks=4,sets=3").contains("sets <= tasks/2 = 2"));
    assert!(e("chat:users=1").contains("users=1"));
    assert!(e("lat_ctx:procs=1").contains("procs=1"));
    // The native-only names of old are gone: the simulated workload's are accepted.
    assert!(e("lat_proc:iterations=5").contains("(accepted: op, n, warmup)"));
    assert!(e("sched_yield:yields=5").contains("(accepted: threads, duration_ms, warmup_ms)"));
    for s in ["hackbench:groups", "hackbench:groups=1,groups=2", ":a=1"] {
        assert!(!e(s).contains('\n'));
    }
    // Run-time errors are lines too, never panics.
    let err = run(&NativeConfig {
        workload: "nosuch".into(),
        ..NativeConfig::default()
    })
    .unwrap_err();
    assert!(matches!(err, NativeError::Spec(_)));
}

/// True when `pid` no longer exists, not even as a zombie.
fn gone(pid: i32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// A workload whose workers report their pids on `pid_w` and then block forever.
fn stuck_workers(
    pid_w: i32,
    n: usize,
) -> impl FnOnce(&mut schedlab_native::runner::Ctx) -> sys::Res<Outcome> {
    move |ctx| {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        sys::write_full(pid_w, &me.to_le_bytes())?;
        let (r, _w) = sys::pipe()?;
        for i in 0..n {
            let spawn_grandchild = i == 0;
            ctx.fork(move || {
                if spawn_grandchild {
                    // A grandchild, to check that orphans are reaped too.
                    // SAFETY: the grandchild only writes, blocks and is killed.
                    let pid = unsafe { libc::fork() };
                    if pid == 0 {
                        let gp = unsafe { libc::getpid() };
                        let _ = sys::write_full(pid_w, &gp.to_le_bytes());
                        let mut b = [0u8; 1];
                        let _ = sys::read(r, &mut b);
                        unsafe { libc::_exit(0) };
                    }
                }
                // SAFETY: getpid has no preconditions.
                let p = unsafe { libc::getpid() };
                sys::write_full(pid_w, &p.to_le_bytes())?;
                let mut b = [0u8; 1];
                sys::read(r, &mut b)?; // never returns: nobody writes
                Ok(())
            })?;
        }
        let mut b = [0u8; 1];
        sys::read(r, &mut b)?;
        Ok(Outcome::default())
    }
}

fn read_pids(fd: i32) -> Vec<i32> {
    // SAFETY: non-blocking flag on our own descriptor.
    unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
    let mut buf = [0u8; 4096];
    let n = sys::read(fd, &mut buf).unwrap_or(0);
    buf[..n]
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn a_timed_out_run_leaves_no_process_behind() {
    let (pr, pw) = sys::pipe().unwrap();
    let opts = RunOptions {
        timeout: Some(Duration::from_millis(1000)),
        interrupt: None,
    };
    let err = supervise(&opts, 64 * 1024, stuck_workers(pw, 5)).unwrap_err();
    sys::close(pw);
    // Leader, 5 workers and a grandchild report themselves (all of them unless the host is
    // too slow to fork 7 processes within the second: no count is asserted).
    let pids = read_pids(pr);
    match err {
        RunError::Timeout { stopped, .. } => assert!(stopped as usize >= pids.len(), "{pids:?}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(!pids.is_empty() && pids.len() <= 7, "{pids:?}");
    for p in pids {
        assert!(gone(p), "process {p} left behind");
    }
}

#[test]
fn an_interrupted_run_leaves_no_process_behind() {
    let (pr, pw) = sys::pipe().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = Arc::clone(&flag);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        f2.store(true, Ordering::SeqCst);
    });
    let opts = RunOptions {
        timeout: Some(Duration::from_secs(60)),
        interrupt: Some(flag),
    };
    let err = supervise(&opts, 64 * 1024, stuck_workers(pw, 3)).unwrap_err();
    t.join().unwrap();
    sys::close(pw);
    assert!(matches!(err, RunError::Interrupted { .. }), "{err:?}");
    let pids = read_pids(pr);
    assert!(!pids.is_empty() && pids.len() <= 5, "{pids:?}");
    for p in pids {
        assert!(gone(p), "process {p} left behind");
    }
}

#[test]
fn a_failing_worker_stops_the_run_and_its_siblings() {
    let (pr, pw) = sys::pipe().unwrap();
    let opts = RunOptions {
        timeout: Some(Duration::from_secs(60)),
        interrupt: None,
    };
    let err = supervise(&opts, 64 * 1024, move |ctx| {
        let (r, _w) = sys::pipe()?;
        for _ in 0..3 {
            ctx.fork(move || {
                // SAFETY: getpid has no preconditions.
                let p = unsafe { libc::getpid() };
                sys::write_full(pw, &p.to_le_bytes())?;
                let mut b = [0u8; 1];
                sys::read(r, &mut b)?;
                Ok(())
            })?;
        }
        std::thread::sleep(Duration::from_millis(100));
        ctx.fork(|| Err(sys::Fail("worker 4 refused".into())))?;
        let mut b = [0u8; 1];
        sys::read(r, &mut b)?;
        Ok(Outcome::default())
    })
    .unwrap_err();
    sys::close(pw);
    assert_eq!(err, RunError::Failed("worker 4 refused".into()));
    let pids = read_pids(pr);
    assert!(pids.len() <= 3);
    for p in pids {
        assert!(gone(p), "process {p} left behind");
    }
}

#[test]
fn resource_failures_name_the_limit() {
    let f = sys::explain("socketpair", libc::EMFILE).0;
    assert!(
        f.starts_with("socketpair failed: ") && f.contains("RLIMIT_NOFILE = "),
        "{f}"
    );
    let f = sys::explain("fork", libc::EAGAIN).0;
    assert!(
        f.contains("RLIMIT_NPROC = ") && f.contains("kernel.threads-max"),
        "{f}"
    );
    let f = sys::explain("pipe", libc::ENFILE).0;
    assert!(f.contains("fs.file-max"), "{f}");
}

// ---- property test: the native spec parser (issue 17 item 15) ----------------------------

mod parser {
    use proptest::prelude::*;
    use schedlab_native::{limits, parse, NATIVE_WORKLOADS};

    fn cases(default: u32) -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn word() -> impl Strategy<Value = String> {
        let mut known: Vec<String> = Vec::new();
        for w in NATIVE_WORKLOADS {
            known.push(w.name.into());
            known.extend(w.params.iter().map(|p| p.name.to_string()));
        }
        for v in [
            "",
            "0",
            "-1",
            "1",
            "auto",
            "on",
            "off",
            "1e309",
            "NaN",
            "18446744073709551616",
        ] {
            known.push(v.into());
        }
        prop_oneof![
            prop::sample::select(known),
            "\\PC{0,10}",
            any::<i64>().prop_map(|n| n.to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(3000), ..ProptestConfig::default() })]

        /// Any text: a workload with parameters, or one line naming what is wrong; and
        /// the host check of whatever parses answers without a panic. Nothing is run.
        /// `PROPTEST_CASES=100000 cargo test --release -p schedlab-native --test native parser`
        #[test]
        fn any_text_parses_or_names_the_problem(
            name in word(),
            kv in prop::collection::vec((word(), word()), 0..5),
        ) {
            let mut s = name;
            for (i, (k, v)) in kv.iter().enumerate() {
                s += if i == 0 { ":" } else { "," };
                s += &format!("{k}={v}");
            }
            match parse(&s) {
                Ok((w, _, p)) => {
                    let _ = limits::check(&s, w.name, &p);
                }
                Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
            }
        }
    }
}
