//! `schedlab sweep`: shards merged equal the unsharded run, a killed shard resumes, an
//! incomplete directory does not merge, bad specs are one line; the Ray example on a
//! local Ray cluster and the Parquet file read by pandas (when the Python has them).
//! See: issue 19.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SPEC: &str = r#"
machine = "piii700-1m"
cpus = 2
policy = ["fifo", "o1-2.6"]
workload = ["lat_pipe:rounds=2000", "reflex:tasks=2,duration_ms=20,warmup_ms=5"]
seeds = [1, 2]
"#;

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .output()
        .expect("run schedlab")
}

/// A fresh directory with the spec in it.
fn workdir(name: &str) -> (PathBuf, String) {
    let d = std::env::temp_dir().join(format!("schedlab-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let spec = d.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    (d, spec.display().to_string())
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sweep(spec: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["sweep", spec, "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    schedlab(&args)
}

fn cell_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn shards_merged_equal_the_unsharded_run_row_for_row() {
    let (d, spec) = workdir("shards");
    let (a, b) = (d.join("sharded"), d.join("whole"));
    let s1 = ok(&sweep(&spec, &a, &["--shard", "1/2"]));
    assert!(
        s1.contains("4 cells, 4 run now, 0 already done, 0 failed"),
        "{s1}"
    );
    ok(&sweep(&spec, &a, &["--shard", "2/2"]));
    ok(&sweep(&spec, &a, &["--merge"]));
    ok(&sweep(&spec, &b, &["--jobs", "1"]));
    ok(&sweep(&spec, &b, &["--merge"]));
    let csv = std::fs::read_to_string(a.join("results.csv")).unwrap();
    assert_eq!(csv, std::fs::read_to_string(b.join("results.csv")).unwrap());
    // The sweep's page: the same from the shards as from the whole, every cell a row.
    let page = std::fs::read_to_string(a.join("index.html")).unwrap();
    assert_eq!(page, std::fs::read_to_string(b.join("index.html")).unwrap());
    assert_eq!(page.matches("<tr><td>").count(), 8, "one row per cell");
    assert!(page.contains("<svg") && page.contains("default-src 'none'"));
    assert_eq!(
        std::fs::read(a.join("results.parquet")).unwrap(),
        std::fs::read(b.join("results.parquet")).unwrap()
    );
    // A header and one row per cell, in product order (the last key fastest).
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 9);
    assert!(lines[0].starts_with("id,machine,cpus,policy,workload,seed,metric,value,unit,error,"));
    assert!(
        lines[1].contains(",fifo,lat_pipe:rounds=2000,1,"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains(",fifo,lat_pipe:rounds=2000,2,"),
        "{}",
        lines[2]
    );
    assert!(lines[8].contains(",o1-2.6,\"reflex:tasks=2,duration_ms=20,warmup_ms=5\",2,"));
    // Every row has a value, and the values are the runs' own.
    let run = ok(&schedlab(&[
        "run",
        "--machine",
        "piii700-1m",
        "--cpus",
        "2",
        "--policy",
        "fifo",
        "--workload",
        "lat_pipe:rounds=2000",
        "--format",
        "json",
    ]));
    let v: serde_json::Value = serde_json::from_str(&run).unwrap();
    let value = v["result"]["value"].as_f64().unwrap();
    assert!(
        lines[1].contains(&format!(",{value},")),
        "{} vs {value}",
        lines[1]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_shard_run_again_resumes_and_rewrites_nothing_done() {
    let (d, spec) = workdir("resume");
    let out = d.join("out");
    ok(&sweep(&spec, &out, &["--shard", "1/2"]));
    let files = cell_files(&out);
    assert_eq!(files.len(), 4);
    let kept = std::fs::read(&files[1]).unwrap();
    let modified = std::fs::metadata(&files[1]).unwrap().modified().unwrap();
    // A killed run loses at most the cells in flight: take one away.
    let lost = std::fs::read(&files[0]).unwrap();
    std::fs::remove_file(&files[0]).unwrap();
    let s = ok(&sweep(&spec, &out, &["--shard", "1/2"]));
    assert!(s.contains("4 cells, 1 run now, 3 already done"), "{s}");
    assert_eq!(std::fs::read(&files[0]).unwrap(), lost);
    assert_eq!(std::fs::read(&files[1]).unwrap(), kept);
    assert_eq!(
        std::fs::metadata(&files[1]).unwrap().modified().unwrap(),
        modified
    );
    // Half the cells: merge refuses, naming how many are missing.
    let m = sweep(&spec, &out, &["--merge"]);
    assert_eq!(m.status.code(), Some(1));
    let err = String::from_utf8_lossy(&m.stderr);
    assert!(err.contains("4 of 8 cells have no result"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_sweeps_are_refused_in_one_line_before_any_cell_runs() {
    let (d, _) = workdir("bad");
    let out = d.join("out");
    for (text, extra, says) in [
        ("machine = \"piii700-1m\"\npolicy = \"fifo\"\n", &[][..], "missing field `workload`"),
        (
            "machine = \"piii700-1m\"\npolicy = \"fifo\"\nworkload = \"lat_pipe\"\nroom = 1\n",
            &[][..],
            "unknown field `room`",
        ),
        (
            "machine = \"piii700-1m\"\npolicy = [\"fifo\", \"nosuch\"]\nworkload = \"lat_pipe\"\n",
            &[][..],
            "cell piii700-1m cpus=all nosuch lat_pipe seed=1",
        ),
        (
            "machine = \"piii700-1m\"\ncpus = [2, 64]\npolicy = \"fifo\"\nworkload = \"lat_pipe\"\n",
            &[][..],
            "cpus=64",
        ),
        (
            "machine = \"piii700-1m\"\npolicy = \"fifo\"\nworkload = \"lat_pipe\"\n",
            &["--shard", "3/2"][..],
            "expected I/N",
        ),
    ] {
        let spec = d.join("bad.toml");
        std::fs::write(&spec, text).unwrap();
        let o = sweep(spec.to_str().unwrap(), &out, extra);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(says), "{text}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out.join("cells").exists(), "{text}: a cell directory was made");
    }
    let o = schedlab(&[
        "sweep",
        "/nonexistent/spec.toml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read the sweep spec"));
    std::fs::remove_dir_all(&d).unwrap();
}

/// The Python with the sweep's Python tools (`ray`, `pandas`, `pyarrow`):
/// `SCHEDLAB_PYTHON`, else `python3`. `None` (the test skips) when they are missing,
/// unless `SCHEDLAB_REQUIRE_RAY=1` (as `.ci/run` sets).
fn python_with(modules: &str) -> Option<String> {
    let py = std::env::var("SCHEDLAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let has = Command::new(&py)
        .args(["-c", &format!("import {modules}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if has {
        return Some(py);
    }
    assert!(
        std::env::var("SCHEDLAB_REQUIRE_RAY").as_deref() != Ok("1"),
        "{py} cannot import {modules} (pip install ray pandas pyarrow)"
    );
    eprintln!("skipped: {py} lacks {modules} (pip install ray pandas pyarrow)");
    None
}

#[test]
fn the_ray_example_runs_the_shards_on_a_local_ray_cluster_and_merges_the_same_rows() {
    let Some(py) = python_with("ray, pandas, pyarrow") else {
        return;
    };
    let (d, spec) = workdir("ray");
    let (by_ray, whole) = (d.join("ray"), d.join("whole"));
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/ray_sweep.py");
    let o = Command::new(&py)
        .arg(&example)
        .args([
            &spec,
            by_ray.to_str().unwrap(),
            "--shards",
            "3",
            "--schedlab",
        ])
        .arg(env!("CARGO_BIN_EXE_schedlab"))
        .env_remove("RAY_ADDRESS")
        .output()
        .expect("python runs");
    let stdout = ok(&o);
    assert_eq!(stdout.matches("shard ").count(), 3, "{stdout}");
    ok(&sweep(&spec, &whole, &[]));
    ok(&sweep(&spec, &whole, &["--merge"]));
    assert_eq!(
        std::fs::read_to_string(by_ray.join("results.csv")).unwrap(),
        std::fs::read_to_string(whole.join("results.csv")).unwrap()
    );
    // The Parquet file is what pandas reads: the same rows and values as the CSV.
    let check = "import sys, pandas as pd\n\
                 p = pd.read_parquet(sys.argv[1]); c = pd.read_csv(sys.argv[2])\n\
                 assert list(p.columns) == list(c.columns), (p.columns, c.columns)\n\
                 assert len(p) == len(c) == 8\n\
                 assert (p['value'] - c['value']).abs().max() < 1e-9\n\
                 assert list(p['policy']) == list(c['policy'])\n\
                 print('ok')";
    let o = Command::new(&py)
        .args(["-c", check])
        .arg(whole.join("results.parquet"))
        .arg(whole.join("results.csv"))
        .output()
        .unwrap();
    assert_eq!(ok(&o).trim(), "ok");
    std::fs::remove_dir_all(&d).unwrap();
}
