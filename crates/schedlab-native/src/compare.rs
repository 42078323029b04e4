//! `--compare`: the real tools beside the native workload, with equal parameters.
//!
//! * hackbench → rt-tests `hackbench -g G -l L -s D -f F [-p] [-T]` (prints `Time: x.xxx`)
//!   and `perf bench sched messaging -g G -l L [-p] [-t]` (prints `Total time: x.xxx
//!   [sec]`; its datasize 100 and 20 fds are fixed, so it is skipped for other values);
//! * lat_pipe → `perf bench sched pipe -l R` (prints `x usecs/op`; one op is one round
//!   trip of the same two-pipe ping-pong).
//!
//! Repetitions are interleaved (ours, tool 1, tool 2, ours, ...) so that a drift of the
//! host's load hits all alike. A tool runs in its own process group and is killed and
//! reaped on timeout or interrupt, like a native run. A missing tool is named with the
//! Debian package that provides it.
//!
//! The rows ([`ToolRow`]) belong to the report, which also renders them: imports run from
//! here to `report`, never back.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use schedlab::report::round;
use schedlab::spec::{Params, SpecError};

use crate::report::{NativeReport, ToolRow};
use crate::runner::{
    guard_group, interrupt_signal, kill_group, release_group, RunError, RunOptions,
};
use crate::{median, parse, report, run_once, NativeConfig, NativeError};

/// A real tool to run beside a workload.
#[derive(Clone, Debug)]
pub struct Tool {
    /// Label in the table.
    pub label: &'static str,
    /// Program name, looked up in `PATH`.
    pub program: &'static str,
    /// Debian package that provides it.
    pub package: &'static str,
    /// Arguments.
    pub args: Vec<String>,
    /// Read the figure (in the native metric's unit) from the tool's standard output.
    pub parse: fn(&str) -> Option<f64>,
    /// Why the tool cannot run these parameters, if it cannot.
    pub unsupported: Option<String>,
    /// Run in this directory and read the figure from the `*.log` files it writes there
    /// (rt-app), not from its standard output. A temporary directory, removed when the
    /// last copy of the tool is dropped.
    pub logs_in: Option<std::sync::Arc<tempfile::TempDir>>,
}

/// The number after `key` on the first line that contains it.
fn number_after(out: &str, key: &str) -> Option<f64> {
    out.lines().find_map(|l| {
        let i = l.find(key)?;
        l[i + key.len()..]
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<f64>().ok())
    })
}

/// rt-tests hackbench: `Time: 0.060`.
pub fn parse_hackbench(out: &str) -> Option<f64> {
    number_after(out, "Time:")
}

/// perf bench sched messaging: `Total time: 0.160 [sec]`.
pub fn parse_perf_messaging(out: &str) -> Option<f64> {
    number_after(out, "Total time:")
}

/// perf bench sched pipe: `55.878250 usecs/op`.
pub fn parse_perf_pipe(out: &str) -> Option<f64> {
    out.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let v = it.next()?.parse::<f64>().ok()?;
        (it.next()? == "usecs/op").then_some(v)
    })
}

/// rt-app's logs (rtapp.md §8): the largest `wu_lat` (the last column) of any row, µs.
pub fn parse_rt_app_logs(logs: &str) -> Option<f64> {
    logs.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .reduce(f64::max)
}

/// The tools for a workload, or why there are none.
pub fn tools_for(name: &str, p: &Params) -> Result<Vec<Tool>, String> {
    let s = |v: u64| v.to_string();
    match name {
        "hackbench" => {
            let hb = schedlab::workload::hackbench::Options::from_params(p);
            let mut rt = vec![
                "-g".into(),
                s(hb.groups),
                "-l".into(),
                s(hb.loops),
                "-s".into(),
                s(hb.datasize),
                "-f".into(),
                s(hb.fds),
            ];
            let mut perf: Vec<String> = ["bench", "sched", "messaging", "-g"]
                .iter()
                .map(|x| x.to_string())
                .collect();
            perf.extend([s(hb.groups), "-l".into(), s(hb.loops)]);
            if hb.pipe {
                rt.push("-p".into());
                perf.push("-p".into());
            }
            if hb.threads {
                rt.push("-T".into());
                perf.push("-t".into());
            }
            if hb.inet {
                rt.push("-i".into());
            }
            let fixed = hb.datasize != 100 || hb.fds != 20 || hb.inet;
            Ok(vec![
                Tool {
                    label: "rt-tests hackbench",
                    program: "hackbench",
                    package: "rt-tests",
                    args: rt,
                    parse: parse_hackbench,
                    unsupported: None,
                    logs_in: None,
                },
                Tool {
                    label: "perf bench sched messaging",
                    program: "perf",
                    package: "linux-perf",
                    args: perf,
                    parse: parse_perf_messaging,
                    unsupported: fixed.then(|| {
                        "perf bench sched messaging has fixed datasize=100 and fds=20, and no inet mode".into()
                    }),
                    logs_in: None,
                },
            ])
        }
        "lat_pipe" => {
            let lp = schedlab::workload::lat_pipe::Options::from_params(p);
            Ok(vec![Tool {
            label: "perf bench sched pipe",
            program: "perf",
            package: "linux-perf",
            args: ["bench", "sched", "pipe", "-l"]
                .iter()
                .map(|x| x.to_string())
                .chain([s(lp.rounds)])
                .collect(),
            parse: parse_perf_pipe,
            unsupported: None,
            logs_in: None,
        }])
        }
        "rtapp" => {
            let o = schedlab::workload::rtapp::Options::from_params(p);
            let dir = tempfile::Builder::new()
                .prefix("schedlab-rt-app-")
                .tempdir()
                .map_err(|e| format!("--compare: a temporary directory: {e}"))?;
            // rt-app writes its logs to the file's `logdir`, relative to where it runs.
            let text = schedlab::workload::rtapp::file_text(&o.file)?;
            let file = dir.path().join("workload.json");
            std::fs::write(&file, text).map_err(|e| format!("--compare: {}: {e}", file.display()))?;
            Ok(vec![Tool {
                label: "rt-app",
                program: "rt-app",
                package: "rt-app",
                args: vec![file.display().to_string()],
                parse: parse_rt_app_logs,
                unsupported: None,
                logs_in: Some(std::sync::Arc::new(dir)),
            }])
        }
        other => Err(format!(
            "--compare: no reference tool for {other} (supported: hackbench with rt-tests hackbench and perf bench sched messaging, lat_pipe with perf bench sched pipe, rtapp with rt-app)"
        )),
    }
}

/// `program` in `PATH`, if present.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|f| f.is_file())
}

/// Run a tool once, supervised like a native run; its figure or why not.
pub fn run_tool(t: &Tool, opts: &RunOptions) -> Result<f64, RunError> {
    let mut cmd = Command::new(t.program);
    if let Some(dir) = &t.logs_in {
        clear_logs(dir.path());
        cmd.current_dir(dir.path());
    }
    cmd.args(&t.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: prctl and getppid are async-signal-safe. The tool dies with us, even by
    // SIGKILL; its own children go with its group ([`guard_group`]).
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| RunError::Failed(format!("{}: cannot start: {e}", t.program)))?;
    let pid = child.id() as libc::pid_t;
    guard_group(pid);
    let result = watch_tool(t, opts, &mut child);
    release_group(pid);
    result
}

fn watch_tool(
    t: &Tool,
    opts: &RunOptions,
    child: &mut std::process::Child,
) -> Result<f64, RunError> {
    let pid = child.id() as libc::pid_t;
    let mut so = child.stdout.take().expect("piped");
    let mut se = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if opts
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst))
        {
            return Err(RunError::Interrupted {
                stopped: kill_group(pid),
                signal: interrupt_signal(),
            });
        }
        if let Some(to) = opts.timeout {
            if start.elapsed() >= to {
                return Err(RunError::Timeout {
                    secs: to.as_secs_f64(),
                    stopped: kill_group(pid),
                });
            }
        }
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(RunError::Failed(format!("{}: wait: {e}", t.program))),
        }
    };
    // Strays of the tool (none expected) go with its group.
    kill_group(pid);
    let out = out_t.join().unwrap_or_default();
    let err = err_t.join().unwrap_or_default();
    if !status.success() {
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        return Err(RunError::Failed(format!(
            "{} {} ({last})",
            t.program, status
        )));
    }
    let out = match &t.logs_in {
        Some(dir) => read_logs(dir.path()),
        None => out,
    };
    (t.parse)(&out).ok_or_else(|| {
        RunError::Failed(format!(
            "{}: could not find the figure in its output: {:?}",
            t.program,
            out.lines().last().unwrap_or("")
        ))
    })
}

fn log_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn clear_logs(dir: &std::path::Path) {
    for f in log_files(dir) {
        let _ = std::fs::remove_file(f);
    }
}

fn read_logs(dir: &std::path::Path) -> String {
    log_files(dir)
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run the workload and its tools `cfg.runs` times, interleaved; the report of the
/// native runs with the tools' rows in `compare`.
pub fn compare(cfg: &NativeConfig) -> Result<NativeReport, NativeError> {
    let (w, _, p) = parse(&cfg.workload).map_err(NativeError::Spec)?;
    crate::limits::check(&cfg.workload, w.name, &p)
        .map_err(|e| NativeError::Run(RunError::Failed(e)))?;
    let tools = tools_for(w.name, &p).map_err(|m| NativeError::Spec(SpecError::Invalid(m)))?;
    let opts = RunOptions {
        timeout: cfg.timeout,
        interrupt: cfg.interrupt.clone(),
    };
    let mut rows: Vec<ToolRow> = tools
        .iter()
        .map(|t| ToolRow {
            tool: t.label.into(),
            command: format!("{} {}", t.program, t.args.join(" ")),
            runs: Vec::new(),
            median: None,
            ratio_to_native: None,
            note: t.unsupported.clone().or_else(|| {
                which(t.program).is_none().then(|| {
                    format!(
                        "{} not found; install the Debian package {} (apt-get install {})",
                        t.program, t.package, t.package
                    )
                })
            }),
        })
        .collect();
    let mut ours = Vec::new();
    for _ in 0..cfg.runs.max(1) {
        ours.push(run_once(w, &p, &opts).map_err(NativeError::Run)?);
        for (t, row) in tools.iter().zip(rows.iter_mut()) {
            if row.note.is_some() {
                continue;
            }
            // The real tool starts on CPUs at rest too, as each of our repetitions does.
            std::thread::sleep(crate::SETTLE);
            match run_tool(t, &opts) {
                Ok(v) => row.runs.push(v),
                Err(e @ RunError::Interrupted { .. }) => return Err(NativeError::Run(e)),
                Err(e) => row.note = Some(e.to_string()),
            }
        }
    }
    let mut rep = report::build(w, &p, ours);
    let native = rep.result.value;
    for row in &mut rows {
        if !row.runs.is_empty() {
            let m = median(&row.runs);
            row.median = Some(round(m));
            row.ratio_to_native = (native > 0.0).then(|| round(m / native));
        }
    }
    rep.compare = Some(rows);
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rt_app_logs() {
        let log = "# Policy : SCHED_OTHER priority : 0\n#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat\n   0    10000      228    10056     40475933017     40475943074             153       9760       1000      10000         68\n   0    10000      259     9991     40475943078     40475953069           10214       9669       1000      10000         63\n";
        assert_eq!(parse_rt_app_logs(log), Some(68.0));
        assert_eq!(parse_rt_app_logs("# only a header\n"), None);
    }

    #[test]
    fn parses_the_tools_outputs() {
        let hb = "Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)\nEach sender will pass 20 messages of 100 bytes\nTime: 0.060\n";
        assert_eq!(parse_hackbench(hb), Some(0.060));
        let pm = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n# 2 groups == 80 processes run\n\n     Total time: 0.160 [sec]\n";
        assert_eq!(parse_perf_messaging(pm), Some(0.160));
        let pp = "# Running 'sched/pipe' benchmark:\n# Executed 20000 pipe operations between two processes\n\n     Total time: 1.117 [sec]\n\n      55.878250 usecs/op\n          17896 ops/sec\n";
        assert_eq!(parse_perf_pipe(pp), Some(55.878250));
        assert_eq!(parse_hackbench("garbage"), None);
        assert_eq!(parse_perf_pipe("Total time: 1 [sec]"), None);
    }
}
