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

fn strip_wall(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_ms\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn run_prints_the_contract_json_and_is_deterministic() {
    let a = schedlab(RUN);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = schedlab(RUN);
    let (ta, tb) = (
        String::from_utf8(a.stdout).unwrap(),
        String::from_utf8(b.stdout).unwrap(),
    );
    // Identical bytes but for the host's wall-clock time.
    assert_eq!(strip_wall(&ta), strip_wall(&tb));
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
        "/sim/wall_ms",
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
        "unknown option 'bogus' for workload lat_pipe (accepted: rounds, warmup)",
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
    one_line_error(&["run", "--machine", "piii700-1m"], "required");
    one_line_error(&["frobnicate"], "unrecognized subcommand");
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
