//! The command-line contract of `system.md`: JSON shape, determinism, one-line errors.

use std::process::{Command, Output};

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .output()
        .expect("run schedlab")
}

const RUN: &[&str] = &[
    "run",
    "--machine",
    "piii700-1m",
    "--cpus",
    "2",
    "--policy",
    "fifo",
    "--workload",
    "lat_pipe",
    "--format",
    "json",
];

#[test]
fn run_prints_the_contract_json_and_is_deterministic() {
    let a = schedlab(RUN);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = schedlab(RUN);
    let (ta, tb) = (
        String::from_utf8(a.stdout).unwrap(),
        String::from_utf8(b.stdout).unwrap(),
    );
    // Identical bytes: host timing is not part of the result (system.md, "Contracts").
    assert_eq!(ta, tb);
    assert!(!ta.contains("wall"), "host timing leaked into the result");
    let v: serde_json::Value = serde_json::from_str(&ta).unwrap();
    for path in [
        "/machine/name",
        "/cpus",
        "/policy/name",
        "/policy/options",
        "/workload/name",
        "/workload/params",
        "/seed",
        "/result/metric",
        "/result/value",
        "/result/unit",
        "/result/better",
        "/counters/context_switches",
        "/counters/migrations",
        "/counters/unaffine_switch_pct",
        "/counters/ipis",
        "/counters/idle_pct",
        "/counters/locks",
        "/counters/policy",
        "/sim/simulated_ns",
        "/sim/events",
    ] {
        assert!(v.pointer(path).is_some(), "missing {path}");
    }
    assert_eq!(v["cpus"], 2);
    assert_eq!(v["result"]["metric"], "us_per_round_trip");
    assert!(
        v["counters"]["locks"]["fifo_lock"]["acquisitions"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(v["result"]["value"].as_f64().unwrap() > 0.0);
}

/// `--timing` reports the host's wall time on stderr, never on stdout: the result stays
/// byte-identical with and without it.
#[test]
fn timing_goes_to_stderr_only() {
    let mut args = RUN.to_vec();
    args.push("--timing");
    let t = schedlab(&args);
    let plain = schedlab(RUN);
    assert!(t.status.success());
    assert_eq!(t.stdout, plain.stdout);
    let err = String::from_utf8(t.stderr).unwrap();
    assert!(
        err.contains(" s wall, ") && err.contains("M events/s"),
        "{err}"
    );
}

/// A reader that stops reading (`schedlab list workloads | head -1`) ends the command
/// quietly and successfully, not with a panic.
#[test]
fn a_closed_stdout_is_a_quiet_exit() {
    use std::process::Stdio;
    for args in [&["list", "workloads"][..], RUN] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away before reading anything
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {:?} {err}", o.status);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

fn one_line_error(args: &[&str], needle: &str) {
    let o = schedlab(args);
    assert_eq!(o.status.code(), Some(2), "exit status");
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("schedlab: ") && err.contains(needle),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_input_gets_one_clear_line() {
    let mut a = RUN.to_vec();
    a[6] = "nosuch";
    one_line_error(&a, "unknown policy 'nosuch' (accepted: fifo");
    let mut a = RUN.to_vec();
    a[8] = "lat_pipe:bogus=1";
    one_line_error(
        &a,
        "unknown option 'bogus' for workload lat_pipe (accepted: rounds, warmup, pin)",
    );
    let mut a = RUN.to_vec();
    a[8] = "lat_pipe:rounds=x";
    one_line_error(&a, "bad value rounds=x");
    let mut a = RUN.to_vec();
    a[2] = "piii700";
    one_line_error(&a, "unknown machine 'piii700'");
    let mut a = RUN.to_vec();
    a[4] = "16";
    one_line_error(&a, "has 8 CPUs");
    let mut a = RUN.to_vec();
    a[2] = "piii700-1m:bus=maybe";
    one_line_error(&a, "bad value bus=maybe");
    let mut a = RUN.to_vec();
    a[2] = "piii700-1m:lock=mcs";
    one_line_error(&a, "one of ttas, ticket");
    one_line_error(
        &["reproduce", "V3b", "--model", "bogus=1"],
        "unknown option 'bogus'",
    );
}

/// The model switches change the run and are reported with it.
#[test]
fn machine_model_switches_are_applied_and_reported() {
    let json = |machine: &str| {
        let mut a = RUN.to_vec();
        a[2] = machine;
        let o = schedlab(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let on = json("piii700-1m");
    let off = json("piii700-1m:bus=off,lock=ticket,coherence=off");
    assert_eq!(on["machine"]["model"]["lock"], "ttas");
    assert_eq!(off["machine"]["model"]["lock"], "ticket");
    assert_eq!(off["machine"]["model"]["bus"], false);
    assert!(on["counters"]["buses"]
        .as_array()
        .is_some_and(|b| !b.is_empty()));
    assert!(off["counters"]["buses"]
        .as_array()
        .is_some_and(|b| b.is_empty()));
    assert!(on["counters"]["lines"]["accesses"].as_u64().unwrap() > 0);
    assert_eq!(off["counters"]["lines"]["accesses"].as_u64(), Some(0));
}

/// A run that starts and fails is not bad input: exit 1, one line naming what failed.
#[test]
fn a_failed_simulated_run_exits_1() {
    let o = schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "fifo",
        "--workload",
        "tbench:clients=4096,ops=1",
    ]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("schedlab: workload failed: "), "{err}");
}

/// Usage errors keep clap's whole message: what is missing or wrong, the usage line and
/// the pointer to --help (exit 2, nothing on stdout).
#[test]
fn usage_errors_keep_clap_s_whole_message() {
    for (args, needles) in [
        (
            &["run", "--machine", "piii700-1m"][..],
            &[
                "required arguments were not provided",
                "--policy <POLICY>",
                "--workload <WORKLOAD>",
                "Usage:",
                "--help",
            ][..],
        ),
        (
            &["frobnicate"][..],
            &["unrecognized subcommand", "Usage:", "--help"][..],
        ),
        (
            &["list", "nothing"][..],
            &[
                "invalid value 'nothing'",
                "possible values",
                "machines",
                "counters",
            ][..],
        ),
    ] {
        let o = schedlab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty());
        let err = String::from_utf8(o.stderr).unwrap();
        for n in needles {
            assert!(err.contains(n), "{args:?}: no {n:?} in {err}");
        }
    }
}

#[test]
fn list_names_every_registered_thing() {
    let o = schedlab(&["list", "machines"]);
    let s = String::from_utf8(o.stdout).unwrap();
    for m in ["piii700-1m", "piii700-2m", "piii700-4way-1m"] {
        assert!(s.contains(m), "{s}");
    }
    let s = String::from_utf8(schedlab(&["list", "policies"]).stdout).unwrap();
    assert!(s.contains("fifo") && s.contains("slice_ms"));
    let s = String::from_utf8(schedlab(&["list", "workloads"]).stdout).unwrap();
    assert!(s.contains("lat_pipe") && s.contains("bw_pipe") && s.contains("rounds"));
    let s = String::from_utf8(schedlab(&["list", "counters"]).stdout).unwrap();
    assert!(s.contains("unaffine_switch_pct"));
}

/// `list machines --detail`: the topology as the kernel sees it and every cost with its
/// source, as text and as JSON; a variant the part lacks is one line, exit 2.
#[test]
fn list_machines_detail_prints_topology_domains_and_every_cost_with_its_source() {
    let o = schedlab(&["list", "machines", "--detail", "zen3-2s:nps=4"]);
    assert!(o.status.success());
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("nodes      8: 0-15,128-143;"), "{s}");
    assert!(
        s.contains("domains    CPU 0: SMT 0,128 [2 groups] -> MC 0-7,128-135 [8 groups] -> NODE"),
        "{s}"
    );
    assert!(s.contains("c2c_cross_package_line_ns         197  line ping-pong between sockets"));
    let o = schedlab(&[
        "list",
        "machines",
        "--detail",
        "haswell-4c",
        "--cpus",
        "4",
        "--format",
        "json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["booted"], 4);
    assert_eq!(
        v["topology"]["smt_siblings_of_cpu0"], "0",
        "maxcpus=4: no sibling booted"
    );
    let costs = v["costs"].as_array().unwrap();
    assert!(costs.len() > 50);
    assert!(costs
        .iter()
        .all(|c| !c["source"].as_str().unwrap().is_empty()));
    one_line_error(
        &["list", "machines", "--detail", "icx-2s:nps=2"],
        "nps=2 is not an option of machine icx-2s",
    );
    one_line_error(
        &["list", "policies", "--detail", "icx-2s"],
        "--detail applies to",
    );
}

// ---- schedlab native -------------------------------------------------------------------

/// Live processes whose environment carries `mark` (the CLI's workers inherit it).
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("SCHEDLAB_TEST_MARK={mark}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
                out.push(pid);
            }
        }
    }
    out
}

fn native_cmd(args: &[&str], mark: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    c.arg("native").args(args).env("SCHEDLAB_TEST_MARK", mark);
    c
}

#[test]
fn native_rejects_bad_input_with_one_line() {
    one_line_error(
        &["native", "hackbench:groups=0"],
        "bad value groups=0 for workload hackbench: expected an integer in 1..=",
    );
    one_line_error(&["native", "hackbnch"], "did you mean 'hackbench'");
    one_line_error(&["native", "lat_pipe:bogus=1"], "accepted: rounds, warmup");
    one_line_error(&["native", "reflex:tasks=4,sets=3"], "sets <= tasks/2");
    one_line_error(&["native"], "native needs a workload");
    let flag_cases: [(&[&str], &str); 5] = [
        (&["lat_pipe", "--timeout", "-1"], "bad value --timeout -1"),
        (&["lat_pipe", "--timeout", "0"], "bad value --timeout 0"),
        (&["lat_ctx", "--compare"], "no reference tool for lat_ctx"),
        (&["lat_pipe", "--pin", "0-x"], "bad CPU list '0-x'"),
        (&["lat_pipe", "--pin", "1000"], "cannot pin to CPU 1000"),
    ];
    for (args, needle) in flag_cases {
        let mut a = vec!["native"];
        a.extend_from_slice(args);
        one_line_error(&a, needle);
    }
    one_line_error(
        &["native", "lat_proc:iterations=5"],
        "unknown option 'iterations' for workload lat_proc (accepted: op, n, warmup)",
    );
}

#[test]
fn native_list_prints_the_simulated_parameters() {
    let s = String::from_utf8(schedlab(&["native", "--list"]).stdout).unwrap();
    for w in [
        "hackbench",
        "lat_pipe",
        "bw_pipe",
        "lat_ctx",
        "reflex",
        "chat",
        "loop_yield",
        "sched_yield",
        "lat_proc",
    ] {
        let sim = schedlab::workload::WORKLOADS
            .iter()
            .find(|i| i.name == w)
            .unwrap();
        assert!(
            s.contains(&schedlab::spec::describe(sim.params)),
            "{w}: not the simulated parameters in\n{s}"
        );
    }
}

#[test]
fn native_json_follows_the_run_schema() {
    let o = schedlab(&[
        "native",
        "hackbench:groups=1,loops=3,fds=3",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for path in [
        "/machine/name",
        "/machine/kernel",
        "/machine/cpu_model",
        "/machine/nproc",
        "/cpus",
        "/policy/options",
        "/workload/params",
        "/result/value",
        "/counters/context_switches",
        "/counters/voluntary_switches",
        "/counters/idle_pct",
        "/native/wall_ms",
        "/native/runs",
    ] {
        assert!(v.pointer(path).is_some(), "missing {path}");
    }
    assert_eq!(v["policy"]["name"], "host");
    assert_eq!(v["workload"]["name"], "hackbench");
    assert_eq!(v["result"]["metric"], "seconds");
    assert_eq!(v["counters"]["workload"]["messages"], 27.0);
}

#[test]
fn native_timeout_kills_and_reaps_everything() {
    let mark = format!("timeout-{}", std::process::id());
    let o = native_cmd(
        &["hackbench:groups=5,loops=1000000", "--timeout", "1"],
        &mark,
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "a failed run exits 1: {err}");
    assert!(
        err.contains("timed out after 1 s (--timeout); stopped "),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(marked(&mark), Vec::<i32>::new(), "processes left behind");
}

#[test]
fn native_sigint_kills_and_reaps_everything() {
    let mark = format!("sigint-{}", std::process::id());
    let child = native_cmd(&["hackbench:groups=5,loops=1000000"], &mark)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is under way: the CLI, its leader and workers exist.
    let t = std::time::Instant::now();
    while marked(&mark).len() < 100 && t.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted; stopped ") && err.contains("(SIGINT)"),
        "{err}"
    );
    assert_eq!(marked(&mark), Vec::<i32>::new(), "processes left behind");
}

/// See: issue 17 item 14. The exit status follows the signal, not the message:
/// 128 + SIGTERM = 143, 128 + SIGHUP = 129.
#[test]
fn native_exit_status_follows_the_signal() {
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let mark = format!("sig{sig}-{}", std::process::id());
        let child = native_cmd(&["sched_yield:threads=2,duration_ms=60000"], &mark)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        while marked(&mark).len() < 2 && t.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "signal {sig}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert_eq!(marked(&mark), Vec::<i32>::new(), "processes left behind");
    }
}

/// The live processes carrying `mark` whose command is one of `comm` (the command is read
/// first: reading a busy process's environment slows it down).
fn marked_named(mark: &str, comm: &[&str]) -> Vec<i32> {
    let needle = format!("SCHEDLAB_TEST_MARK={mark}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let named = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| comm.contains(&c.trim_end()));
        if named
            && std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        {
            out.push(pid);
        }
    }
    out
}

/// See: issue 17 item 14. SIGKILL of `native --compare`, when no code of ours can run,
/// still takes the real tool and the children it forked.
#[test]
fn a_killed_compare_leaves_no_tool_behind() {
    if !on_path("hackbench") && !on_path("perf") {
        eprintln!("skipped: neither rt-tests hackbench nor perf is installed");
        return;
    }
    let mark = format!("compare-kill-{}", std::process::id());
    let mut child = native_cmd(
        &[
            "hackbench:groups=2,loops=4000",
            "--compare",
            "--runs",
            "3",
            "--timeout",
            "120",
        ],
        &mark,
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Wait for a tool with its workers (perf 6.1 names its workers `sched-messaging`).
    let t = std::time::Instant::now();
    while marked_named(&mark, &["perf", "hackbench", "sched-messaging"]).len() < 10
        && t.elapsed().as_secs() < 120
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        marked_named(&mark, &["perf", "hackbench", "sched-messaging"]).len() >= 10,
        "no tool started"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Well before the tool would have finished by itself.
    let t = std::time::Instant::now();
    while !marked(&mark).is_empty() && t.elapsed().as_millis() < 1500 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(marked(&mark), Vec::<i32>::new(), "processes left behind");
}

/// Forks on the whole host since boot (`processes` of `/proc/stat`).
fn host_forks() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("processes "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// See: issue 17 item 13. A run beyond the host's limits is refused in one line naming the
/// limit, before anything is forked (the thousands of forks, or the panic of a thread
/// whose signal stack cannot be mapped, never happen).
#[test]
fn native_refuses_a_run_beyond_the_host_limits_before_forking() {
    for spec in [
        "hackbench:groups=100000",
        "chat:rooms=1000,users=1000",
        "reflex:tasks=16384",
    ] {
        let before = host_forks();
        let t = std::time::Instant::now();
        let o = schedlab(&["native", spec]);
        let forks = host_forks() - before;
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{spec}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{spec}: {err}");
        assert!(
            err.starts_with(&format!(
                "schedlab: native run failed: {spec} cannot run on this host: it needs"
            )),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        // Other builders fork too; the refused run would have forked thousands.
        assert!(forks < 500, "{spec}: {forks} forks on the host meanwhile");
        assert!(
            t.elapsed().as_secs() < 20,
            "{spec}: refused only after {:?}",
            t.elapsed()
        );
    }
}

#[test]
fn native_resource_failure_names_the_limit() {
    use std::os::unix::process::CommandExt;
    let mark = format!("nofile-{}", std::process::id());
    let mut c = native_cmd(&["hackbench:groups=1,threads=on"], &mark);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            let r = libc::rlimit {
                rlim_cur: 24,
                rlim_max: 24,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            Ok(())
        });
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "a failed run exits 1: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        (err.contains("Too many open files") || err.contains("open-file limit"))
            && err.contains("RLIMIT_NOFILE = 24"),
        "{err}"
    );
    assert_eq!(marked(&mark), Vec::<i32>::new(), "processes left behind");
}

fn on_path(p: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
}

#[test]
fn native_compare_runs_the_real_tools() {
    if !on_path("hackbench") && !on_path("perf") {
        eprintln!("skipped: neither rt-tests hackbench nor perf is installed (apt-get install rt-tests linux-perf)");
        return;
    }
    let o = schedlab(&[
        "native",
        "hackbench:groups=1,loops=5",
        "--compare",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["compare"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        let tool = r["tool"].as_str().unwrap();
        let present = on_path(if tool.starts_with("rt-tests") {
            "hackbench"
        } else {
            "perf"
        });
        if present && r["note"].is_null() {
            assert_eq!(r["runs"].as_array().unwrap().len(), 1, "{r}");
            assert!(r["median"].as_f64().unwrap() > 0.0, "{r}");
        } else {
            // Absent, or present but unable to run here: the note says why.
            eprintln!("skipped {tool}: {}", r["note"]);
            assert!(r["note"].is_string(), "{r}");
        }
    }
    if on_path("perf") {
        let o = schedlab(&["native", "lat_pipe:rounds=500", "--compare"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let s = String::from_utf8(o.stdout).unwrap();
        assert!(s.contains("perf bench sched pipe"), "{s}");
    } else {
        eprintln!("skipped lat_pipe --compare: perf is not installed (apt-get install linux-perf)");
    }
}

/// issue 19 item 1: an rt-app file runs natively (threads, pthread objects, real timers)
/// and, where rt-app is installed, beside the real rt-app, read from its logs.
#[test]
fn native_runs_rt_app_files_beside_rt_app() {
    let o = schedlab(&[
        "native",
        "rtapp:@prodcons",
        "--runs",
        "1",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["result"]["metric"], "max_wakeup_latency_us");
    let counts = &v["counters"]["workload"];
    // Every thread logged rows; the producer's timer drives 200 iterations (fewer only if
    // a loaded host pushes it past `duration`).
    let producer = counts["producer-1.rows"].as_f64().unwrap();
    assert!((100.0..=200.0).contains(&producer), "{v}");
    assert!(counts["consumer-0.rows"].as_f64().unwrap() >= 1.0, "{v}");
    assert!(
        counts["producer-1.wakeup_latency_max_us"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    if !on_path("rt-app") {
        eprintln!("skipped rtapp --compare: rt-app is not installed (apt-get install rt-app)");
        return;
    }
    let o = schedlab(&[
        "native",
        "rtapp:@prodcons",
        "--runs",
        "1",
        "--compare",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = &v["compare"][0];
    assert_eq!(row["tool"], "rt-app", "{v}");
    assert!(row["note"].is_null(), "{row}");
    assert!(row["median"].as_f64().unwrap() > 0.0, "{row}");
}

#[test]
fn reproduce_refuses_an_unwritable_out_before_any_work() {
    let o = schedlab(&["reproduce", "--out", "/proc/schedlab-cannot-be-here"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot write to --out /proc/schedlab-cannot-be-here"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "nothing was simulated");
}

/// See: issue 17 item 3. Every table id, option and cell is checked before any
/// simulation: one line, exit 2, no table finished, nothing on stdout.
#[test]
fn reproduce_checks_every_table_and_cell_before_any_work() {
    for (args, needle) in [
        (
            &["reproduce", "BOGUS_TABLE"][..],
            "unknown table 'BOGUS_TABLE'",
        ),
        (
            &["reproduce", "V1", "--model", "bad=x"][..],
            "unknown option 'bad'",
        ),
        (
            &["reproduce", "V1", "--model", "file_max=16"][..],
            "fs.file-max = 16",
        ),
        (&["reproduce", "V1", "--jobs", "0"][..], "--jobs 0"),
    ] {
        let o = schedlab(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("schedlab: ") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!err.contains(" done ("), "{args:?}: a table ran: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    for (machine, policy, needle) in [
        ("nope", "fifo", "unknown machine 'nope'"),
        (
            "piii700-1m",
            "linux-2.4:bogus=1",
            "unknown option 'bogus' for policy linux-2.4",
        ),
    ] {
        let mut a = RUN.to_vec();
        a[2] = machine;
        a[6] = policy;
        one_line_error(&a, needle);
    }
}

/// system.md contract: with `--repeat N` the run uses seeds 1..N, `result.value` is the
/// median and `result.repeats` lists all N values; without it, no `repeats`.
#[test]
fn run_repeat_reports_the_median_and_every_value() {
    let args = [
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "4",
        "--policy",
        "linux-2.4",
        "--workload",
        "synthetic:tasks=20,ops=10",
        "--format",
        "json",
    ];
    let json = |extra: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(extra);
        let o = schedlab(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = json(&["--repeat", "3"]);
    let reps: Vec<f64> = v["result"]["repeats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(reps.len(), 3);
    let mut sorted = reps.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(v["result"]["value"].as_f64(), Some(sorted[1]));
    // Seed s of the repeats is the run --seed s gives.
    for (i, r) in reps.iter().enumerate() {
        let one = json(&["--seed", &(i + 1).to_string()]);
        assert_eq!(one["result"]["value"].as_f64(), Some(*r), "seed {}", i + 1);
        assert!(one["result"].get("repeats").is_none());
    }
}

/// issue 17 item 7: `--repeat` on a workload that used to ignore the seed (lat_pipe)
/// shows a spread, with `result.min` and `result.max`.
#[test]
fn run_repeat_spreads_lat_pipe_and_reports_min_and_max() {
    let o = schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "o1-2.6",
        "--workload",
        "lat_pipe:rounds=300,warmup=10",
        "--repeat",
        "5",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reps: Vec<f64> = v["result"]["repeats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(reps.len(), 5);
    let min = reps.iter().copied().fold(f64::INFINITY, f64::min);
    let max = reps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(min < max, "five seeds, one value: {reps:?}");
    assert_eq!(v["result"]["min"].as_f64(), Some(min));
    assert_eq!(v["result"]["max"].as_f64(), Some(max));
    let value = v["result"]["value"].as_f64().unwrap();
    assert!(min <= value && value <= max);
}

/// See: issue 17 item 10. `bench` says what its columns are, and every row has them; the
/// JSON rows carry the same figures by name.
#[test]
fn bench_explains_its_columns() {
    let o = schedlab(&["bench", "--quick"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("columns:"), "{text}");
    for unit in [
        "events simulated",
        "wall seconds",
        "wall ns per event",
        "peak resident",
    ] {
        assert!(text.contains(unit), "legend lacks {unit:?}: {text}");
    }
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(" ev/s ")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    for r in rows {
        for col in [" s ", "M ev/s", "ns/ev", "MB", "sim/wall"] {
            assert!(r.contains(col), "row lacks {col:?}: {r}");
        }
    }
    let o = schedlab(&["bench", "--quick", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert!(r["events"].as_u64().unwrap() > 0, "{r}");
        assert!(r["wall_s"].as_f64().unwrap() > 0.0, "{r}");
        let (eps, nspe) = (
            r["events_per_s"].as_f64().unwrap(),
            r["ns_per_event"].as_f64().unwrap(),
        );
        assert!((eps * nspe / 1e9 - 1.0).abs() < 1e-9, "{r}");
    }
}

#[test]
fn list_tables_names_every_table_with_its_source() {
    let o = schedlab(&["list", "tables"]);
    assert!(o.status.success());
    let s = String::from_utf8(o.stdout).unwrap();
    for t in schedlab::experiment::all_tables() {
        assert!(
            s.contains(&t.id) && s.contains(&t.source),
            "{} missing",
            t.id
        );
    }
    assert!(s.contains("cells on piii700-1m"));
}

#[test]
fn reproduce_writes_the_report_plots_and_results() {
    let dir = std::env::temp_dir().join(format!("schedlab-reproduce-{}", std::process::id()));
    let o = schedlab(&["reproduce", "V3", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("V3a-lat-pipe-sync") && text.contains("V3b-bw-pipe-sync"),
        "{text}"
    );
    assert!(text.contains("scores: order") && text.contains("The seed findings"));
    // stderr is not a terminal here: one line per finished table.
    let err = String::from_utf8(o.stderr).unwrap();
    for t in [
        "V3a-lat-pipe-sync done (2 cells",
        "V3b-bw-pipe-sync done (2 cells",
    ] {
        assert!(err.contains(t), "no progress line {t:?} in {err}");
    }
    for f in [
        "report.md",
        "results.json",
        "V3a-lat-pipe-sync.svg",
        "V3b-bw-pipe-sync.svg",
    ] {
        let p = dir.join(f);
        assert!(
            std::fs::metadata(&p)
                .map(|m| m.len() > 100)
                .unwrap_or(false),
            "{f} missing"
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let cells = v["tables"][1]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert!(cells.iter().all(|c| c["simulated"].as_f64().unwrap() > 0.0));
    // Every cell lists its runs' values; the value is their median, within min..max.
    for c in v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["cells"].as_array().unwrap())
    {
        let reps = c["repeats"].as_array().unwrap();
        assert!((1..=3).contains(&reps.len()), "{c}");
        let (lo, hi, x) = (
            c["min"].as_f64().unwrap(),
            c["max"].as_f64().unwrap(),
            c["simulated"].as_f64().unwrap(),
        );
        assert!(lo <= x && x <= hi, "{c}");
    }
    let svg = std::fs::read_to_string(dir.join("V3b-bw-pipe-sync.svg")).unwrap();
    assert!(
        svg.contains(">\nbw_pipe\n<") || svg.contains(">bw_pipe<"),
        "row label on the x axis"
    );
    let _ = std::fs::remove_dir_all(&dir);
    one_line_error(
        &["reproduce", "V9"],
        "unknown table 'V9' (accepted: V1-reflex-2002",
    );
}

// ---- the documentation ------------------------------------------------------------------

/// Every file of the repository, as paths relative to its root.
fn repo_files(root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if name == "target" || name == ".git" {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().to_string());
            }
        }
    }
    out
}

/// See: issue 17 item 11. README and docs/ cite only files that exist in the repository
/// (a path may be given relative to a crate's `src/`), show how to put `schedlab` on PATH,
/// and never print a seed as "000".
#[test]
fn docs_cite_only_files_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = repo_files(&root);
    // What `reproduce --out` and `sweep` write, and the placeholders of a usage line, are
    // not files of ours.
    let outputs = [
        "report.md",
        "results.json",
        "SPEC.toml",
        "DIR/cells/ID.json",
        "FILE.json",
        "myhost.json",
        "my-use-case.json",
        "A.json",
        "B.json",
        "C.json",
    ];
    let mut docs = vec!["README.md".to_string()];
    docs.extend(
        files
            .iter()
            .filter(|f| f.starts_with("docs/") && f.ends_with(".md"))
            .cloned(),
    );
    let mut dangling = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for (n, line) in text.lines().enumerate() {
            let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)));
            for w in words {
                let w = w.trim_start_matches("./").trim_end_matches('.');
                let cited = [".md", ".rs", ".json", ".toml"]
                    .iter()
                    .any(|e| w.len() > e.len() && w.ends_with(e));
                if !cited || outputs.contains(&w) {
                    continue;
                }
                if !files
                    .iter()
                    .any(|f| f == w || f.ends_with(&format!("/{w}")))
                {
                    dangling.push(format!("{doc}:{}: {w}", n + 1));
                }
            }
        }
        assert!(!text.contains("seed 000"), "{doc} prints a seed as 000");
    }
    assert!(
        dangling.is_empty(),
        "cited but absent:\n{}",
        dangling.join("\n")
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("cargo install --path crates/schedlab-cli"));
}

/// See: issue 16 (traces).
#[test]
fn run_writes_traces_latency_and_timeline() {
    let dir = std::env::temp_dir().join(format!("schedlab-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pf = dir.join("t.perfetto-trace");
    let svg = dir.join("t.svg");
    let o = schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "o1-d1",
        "--workload",
        "hackbench:groups=1,loops=3,fds=4",
        "--trace",
        pf.to_str().unwrap(),
        "--timeline",
        svg.to_str().unwrap(),
        "--latency",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["latency"]["rows"].as_array().unwrap().len() >= 2);
    assert!(v["counters"]["wakeup_latency"]["max_ns"].as_u64().unwrap() > 0);
    let bytes = std::fs::read(&pf).unwrap();
    assert_eq!(bytes[0], 0x0a);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("sched_switch"), "{err}");
    // Text: the perf-style table follows the report.
    let o = schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "linux-2.4",
        "--workload",
        "hackbench:groups=1,loops=3,fds=4",
        "--latency",
        "pid",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Max delay start") && text.contains("TOTAL:"),
        "{text}"
    );
    assert!(text.contains("sender:1.1:"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_trace_arguments_are_input_errors() {
    let base = [
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "fifo",
        "--workload",
        "lat_pipe",
    ];
    for extra in [
        &["--trace", "x.json"][..],
        &["--trace", "x.txt", "--trace-window", "5..2"][..],
        &["--trace-window", "1..2"][..],
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let o = schedlab(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("accepted"), "{err}");
    }
}

/// `validate`: bad filters and unwritable host files are refused in one line, exit 2.
#[test]
fn validate_refuses_bad_input_in_one_line() {
    one_line_error(
        &["validate", "--only", "no-such-row"],
        "no validate row matches",
    );
    one_line_error(
        &["validate", "--measure", "/proc/no/such/dir/host.json"],
        "cannot write /proc/no/such/dir/host.json",
    );
    let o = schedlab(&["validate", "--runs", "2"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "fewer than 5 native runs is refused"
    );
    one_line_error(
        &["validate", "--model", "tcp_delack=maybe"],
        "bad value tcp_delack=maybe",
    );
    one_line_error(
        &["validate", "--targets", "/no/such/report.json"],
        "cannot read /no/such/report.json",
    );
    one_line_error(
        &["validate", "--targets", "Cargo.toml"],
        "Cargo.toml: not a `schedlab validate --format json` report",
    );
}

/// `validate --format json` prints `{"rows": [{"workload", "native", "simulated",
/// "ratio"}]}` with ratio = simulated / native and the median of the native runs.
#[test]
fn validate_prints_native_simulated_and_ratio_per_row() {
    let o = schedlab(&[
        "validate",
        "--only",
        "lat_pipe:pin=same",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["workload"], "lat_pipe:pin=same,rounds=20000");
    let (n, s) = (
        r["native"].as_f64().unwrap(),
        r["simulated"].as_f64().unwrap(),
    );
    assert!(n > 0.0 && s > 0.0, "{r}");
    assert!((r["ratio"].as_f64().unwrap() - s / n).abs() < 1e-9, "{r}");
    let mut runs: Vec<f64> = r["native_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(runs.len(), 5);
    runs.sort_by(f64::total_cmp);
    assert_eq!(runs[2], n, "the native figure is the median run");
    // The simulated median is over nine seeds at a time, at most 135; one CPU's lat_pipe
    // is deterministic across seeds, so nine pin it.
    let seeds = r["seeds"].as_u64().unwrap();
    assert_eq!(seeds, 9, "{r}");
    let (lo, hi) = (
        r["simulated_min"].as_f64().unwrap(),
        r["simulated_max"].as_f64().unwrap(),
    );
    assert!(lo <= s && s <= hi, "{r}");
    assert!(v.get("model").is_none(), "no switches, no model key");
    // With model switches the simulations run on `host:SWITCHES`, and the report says so;
    // a pipe row does not send a packet over loopback, so its figure is the same.
    let o = schedlab(&[
        "validate",
        "--only",
        "lat_pipe:pin=same",
        "--model",
        "lo_queue=end,tcp_delack=on",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(w["model"], "lo_queue=end,tcp_delack=on");
    assert_eq!(w["rows"][0]["simulated"], r["simulated"]);
    // `--targets` judges saved reports and runs nothing: one micro-benchmark row is fewer
    // than thirty rows, a missed target (exit 1), and nothing moved between the two.
    let dir = tempfile::Builder::new()
        .prefix("schedlab-targets-")
        .tempdir()
        .expect("a temporary directory");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, serde_json::to_string(&v).unwrap()).unwrap();
    std::fs::write(&b, serde_json::to_string(&w).unwrap()).unwrap();
    let o = schedlab(&[
        "validate",
        "--targets",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "a missed target fails");
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(t["all_hold"], false);
    assert_eq!(t["reports"][0]["rows"], 1);
    assert_eq!(t["reports"][0]["predictions"], 0);
    assert_eq!(t["stable"], serde_json::json!([1, 1]));
    let o = schedlab(&["validate", "--targets", a.to_str().unwrap()]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(" 1 (at least 30)  MISSED") && text.ends_with("a target is missed\n"),
        "{text}"
    );
}

/// `validate --measure FILE --measure-only` writes a host preset that `run --machine host`
/// then uses through $SCHEDLAB_HOST: its costs and provenance are in the report.
#[test]
fn a_measured_host_file_becomes_the_host_preset() {
    if schedlab_native_cpus() < 2 {
        eprintln!("skipped: measuring needs 2 CPUs");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("schedlab-host-")
        .tempdir()
        .expect("a temporary directory");
    let file = dir.path().join("host.json");
    let f = file.to_str().unwrap();
    let o = schedlab(&["validate", "--measure", f, "--measure-only"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(h["schema"], "schedlab-host/1");
    assert!(h["measured"]["command"]
        .as_str()
        .unwrap()
        .contains("--measure"));
    let syscall = h["costs"]["syscall_ns"].as_u64().unwrap();
    assert!(syscall > 0, "{}", h["costs"]);
    assert!(h["sources"]["syscall_ns"]
        .as_str()
        .unwrap()
        .starts_with("measured"));
    let run = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "run",
            "--machine",
            "host",
            "--policy",
            "eevdf",
            "--workload",
        ])
        .arg("lat_pipe:pin=split,rounds=200,warmup=10")
        .args(["--format", "json"])
        .env("SCHEDLAB_HOST", &file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(r["machine"]["name"], "host");
    assert_eq!(r["cpus"], h["cpus"]);
    let bad = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "run",
            "--machine",
            "host",
            "--policy",
            "eevdf",
            "--workload",
            "lat_pipe",
        ])
        .env("SCHEDLAB_HOST", dir.path().join("missing.json"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(
        e.contains("cannot read host file") && e.lines().count() == 1,
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn schedlab_native_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The reproduction's page: `reproduce --out` writes it beside results.json, and `report`
/// redraws the same page from results.json alone; a file that is not a results.json is
/// one clear line.
#[test]
fn report_redraws_the_reproduction_page_from_its_results_alone() {
    let dir = std::env::temp_dir().join(format!("schedlab-report-{}", std::process::id()));
    let (a, b) = (dir.join("a"), dir.join("b"));
    let out = schedlab(&["reproduce", "V3b", "--out", a.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(a.join("index.html")).expect("index.html written");
    assert!(page.contains("data-table=\"V3b-bw-pipe-sync\""));
    let out = schedlab(&[
        "report",
        a.join("results.json").to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        page,
        std::fs::read_to_string(b.join("index.html")).unwrap(),
        "the same page from the results alone"
    );
    let bad = a.join("report.md");
    let out = schedlab(&["report", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("is not a results.json (accepted:"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run --html` writes one self-contained page with the run's result, counters, latency
/// summary and timeline.
#[test]
fn run_html_writes_the_runs_page() {
    let dir = std::env::temp_dir().join(format!("schedlab-run-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (page, timeline) = (dir.join("run.html"), dir.join("t.svg"));
    let mut args: Vec<&str> = RUN.to_vec();
    args.extend([
        "--html",
        page.to_str().unwrap(),
        "--latency",
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    let out = schedlab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for part in [
        "id=\"counters\"",
        "id=\"latency\"",
        "id=\"timeline\"",
        "context_switches",
    ] {
        assert!(html.contains(part), "{part}");
    }
    assert!(html.contains("default-src 'none'") && !html.contains(" src="));
    let mut args: Vec<&str> = RUN.to_vec();
    args.extend(["--html", page.to_str().unwrap(), "--repeat", "2"]);
    let out = schedlab(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--html draws one run"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `reproduce --trace-dir` links each traced cell to its trace and timeline in
/// results.json and on the page; a page drawn elsewhere from those results still finds
/// them.
#[test]
fn traced_cells_are_linked_from_the_page() {
    let dir = std::env::temp_dir().join(format!("schedlab-traced-{}", std::process::id()));
    let (a, b) = (dir.join("a"), dir.join("b"));
    let traces = a.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    let out = schedlab(&[
        "reproduce",
        "V3b",
        "--out",
        a.to_str().unwrap(),
        "--trace-dir",
        traces.to_str().unwrap(),
        "--trace-cell",
        "V3b-bw-pipe-sync#1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("results.json")).unwrap()).unwrap();
    let t = &json["traces"]["V3b-bw-pipe-sync#1"];
    let (trace, timeline) = (
        t["perfetto"].as_str().unwrap(),
        t["timeline"].as_str().unwrap(),
    );
    assert!(
        trace.starts_with("traces/") && timeline.ends_with(".timeline.svg"),
        "{t}"
    );
    assert!(a.join(trace).is_file() && a.join(timeline).is_file());
    let page = std::fs::read_to_string(a.join("index.html")).unwrap();
    assert!(
        page.contains(&format!("href=\"{trace}\"")),
        "linked from the page"
    );
    assert!(
        page.contains("ui.perfetto.dev"),
        "with a line on opening it"
    );
    let out = schedlab(&[
        "report",
        a.join("results.json").to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let elsewhere = std::fs::read_to_string(b.join("index.html")).unwrap();
    let abs = std::fs::canonicalize(a.join(trace)).unwrap();
    assert!(
        elsewhere.contains(&format!("href=\"{}\"", abs.display())),
        "drawn elsewhere, the link points back"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// See: issue 45 (per-task schedstats): the kernel's wait counts and the trace's
/// `perf sched latency` delays are counted apart and must agree, per task group.
#[test]
fn schedstats_agree_with_the_latency_summary_and_print_under_latency() {
    let args = [
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "eevdf",
        "--workload",
        "hackbench:groups=1,loops=20,fds=4",
        "--latency",
    ];
    let o = schedlab(&[&args[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["latency"]["rows"].as_array().unwrap();
    let stats = v["result"]["details"]["schedstats"].as_array().unwrap();
    for g in ["receiver", "sender"] {
        let row = rows
            .iter()
            .find(|r| r["task"] == format!("{g}:(4)"))
            .unwrap_or_else(|| panic!("no latency row for {g}: {rows:?}"));
        let s = stats.iter().find(|s| s["group"] == g).unwrap();
        assert_eq!(s["wait_count"], row["count"], "{g}");
        // The trace's delay starts at `sched_waking`, the kernel's wait at the enqueue
        // inside that wake-up: longer by at most the wake-up's own few microseconds.
        let d_max = row["max_delay_ns"].as_f64().unwrap() - s["wait_max"].as_f64().unwrap();
        let avg = s["wait_sum"].as_f64().unwrap() / s["wait_count"].as_f64().unwrap();
        let d_avg = row["avg_delay_ns"].as_f64().unwrap() - avg;
        assert!((0.0..5_000.0).contains(&d_max), "{g}: max {d_max} ns apart");
        assert!(
            (0.0..5_000.0).contains(&d_avg),
            "{g}: mean {d_avg} ns apart"
        );
    }
    let o = schedlab(&args);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Task group") && text.contains("preempt/tried"),
        "{text}"
    );
}

/// See: issue 44 (sched_ext): the scheduler's DSQ moves are trace events, and a
/// scheduler that ends fails the command after printing the run.
#[test]
fn scx_runs_trace_their_dsq_moves_and_a_failed_scheduler_exits_1() {
    let dir = std::env::temp_dir().join(format!("schedlab-cli-scx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let txt = dir.join("t.txt");
    let o = schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "scx:@vtime",
        "--workload",
        "hackbench:groups=1,loops=10,fds=4",
        "--trace",
        txt.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = std::fs::read_to_string(&txt).unwrap();
    assert!(
        t.contains("scx_dsq_insert:") && t.contains("scx_dsq_move_to_local:"),
        "{t}"
    );
    let src = dir.join("zero.bpf.c");
    std::fs::write(
        &src,
        "#include \"schedlab_scx.h\"\n\
         s32 BPF_STRUCT_OPS_SLEEPABLE(z_init) { scx_bpf_error(\"refusing %d tasks\", 7); return 0; }\n\
         SCX_OPS_DEFINE(z_ops, .init = (void *)z_init, .name = \"zero\");\n",
    )
    .unwrap();
    let policy = format!("scx:src={}", src.display());
    let o = schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        &policy,
        "--workload",
        "hackbench:groups=1,loops=5,fds=2",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["scheduler_exit"], "zero: refusing 7 tasks");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the scheduler ended during the run: zero: refusing 7 tasks"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
