//! Traces of real runs (`schedlab native … --trace FILE`): the host kernel's own scheduler
//! tracepoints through tracefs, written in the formats of simulated traces.
//!
//! 1. [`probe`] finds tracefs (`/sys/kernel/tracing`, else `/sys/kernel/debug/tracing`)
//!    and checks that this process may switch tracing on and that the sched tracepoints
//!    exist; if not, `Err` is one line naming what is missing (the caller says it and runs
//!    untraced). `perf sched record` needs the same tracefs and privileges, so where this
//!    fails it fails too; where this works tracefs is used directly, without perf.
//! 2. [`Session::start`] clears the ring buffer, enables `sched_switch`, `sched_waking`,
//!    `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`, `sched_process_fork`,
//!    `sched_process_exit`, `sched_process_free`, `task_newtask`, `task_rename` and turns
//!    tracing on; [`Session::finish`] turns it off, restores the events and writes the
//!    buffer: `.txt` as the kernel printed it, `.perfetto-trace`/`.pftrace` converted line
//!    by line ([`convert`]) through schedlab's Perfetto writer. Memory stays bounded: the
//!    kernel's ring buffer has a fixed size (events beyond it overwrite the oldest, and the
//!    header's entries-in-buffer/entries-written says so), and the file is read as a stream.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use schedlab::trace::perfetto::PerfettoWriter;
use schedlab::trace::setup::Format;
use schedlab::trace::{Kind, Output, OutputSummary, Rec, RunInfo, TaskInfo};

/// The events recorded, as `subsystem/event`.
pub const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    "sched/sched_wakeup",
    "sched/sched_wakeup_new",
    "sched/sched_migrate_task",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
    "sched/sched_process_free",
    "task/task_newtask",
    "task/task_rename",
];

/// The tracefs mount points tried, in order.
pub const TRACEFS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Find a usable tracefs among `roots`: `Ok(dir)`, or one line naming what is missing.
pub fn probe_at(roots: &[&Path]) -> Result<PathBuf, String> {
    let Some(dir) = roots.iter().find(|d| d.join("trace").exists()) else {
        let tried: Vec<String> = roots.iter().map(|d| d.display().to_string()).collect();
        return Err(format!(
            "tracefs is not mounted (no trace file in {}; as root: mount -t tracefs nodev /sys/kernel/tracing)",
            tried.join(" or ")
        ));
    };
    let on = dir.join("tracing_on");
    if let Err(e) = fs::OpenOptions::new().write(true).open(&on) {
        return Err(format!(
            "no permission to switch tracing on ({}: {e}; needs root or CAP_SYS_ADMIN)",
            on.display()
        ));
    }
    if !dir.join("events/sched/sched_switch/enable").exists() {
        return Err(format!(
            "the kernel has no sched tracepoints ({} is missing)",
            dir.join("events/sched/sched_switch/enable").display()
        ));
    }
    Ok(dir.to_path_buf())
}

/// [`probe_at`] on the usual mount points.
pub fn probe() -> Result<PathBuf, String> {
    let roots: Vec<&Path> = TRACEFS.iter().map(Path::new).collect();
    probe_at(&roots)
}

/// A recording in progress.
pub struct Session {
    dir: PathBuf,
    out: PathBuf,
    format: Format,
    /// Events enabled by us (restored to 0 at the end).
    enabled: Vec<PathBuf>,
    was_on: bool,
    /// `buffer_size_kb` before the session.
    buffer_kb: Option<String>,
}

/// Per-CPU ring buffer asked for during a session, KB (the kernel's default, 1408 KB,
/// holds about 15 000 events per CPU: a second of hackbench).
pub const BUFFER_KB: u64 = 32 * 1024;

fn write(p: &Path, v: &str) -> Result<(), String> {
    fs::write(p, v).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

impl Session {
    /// Start recording into tracefs `dir`; the trace goes to `out` (format by extension).
    pub fn start(dir: &Path, out: &Path) -> Result<Session, String> {
        let format = Format::of(out)?;
        // The output must be writable before anything is switched on.
        fs::File::create(out)
            .map_err(|e| format!("cannot write the trace {}: {e}", out.display()))?;
        let was_on = fs::read_to_string(dir.join("tracing_on")).is_ok_and(|s| s.trim() == "1");
        write(&dir.join("tracing_on"), "0")?;
        write(&dir.join("current_tracer"), "nop")?;
        let buffer_kb = fs::read_to_string(dir.join("buffer_size_kb")).ok();
        // Best effort: a kernel that refuses keeps its own size.
        let _ = write(&dir.join("buffer_size_kb"), &BUFFER_KB.to_string());
        // Opening `trace` for writing with truncation clears the buffer.
        write(&dir.join("trace"), "")?;
        let mut enabled = Vec::new();
        for ev in EVENTS {
            let p = dir.join("events").join(ev).join("enable");
            if p.exists() && fs::read_to_string(&p).is_ok_and(|s| s.trim() == "0") {
                write(&p, "1")?;
                enabled.push(p);
            }
        }
        write(&dir.join("tracing_on"), "1")?;
        Ok(Session {
            dir: dir.to_path_buf(),
            out: out.to_path_buf(),
            format,
            enabled,
            was_on,
            buffer_kb,
        })
    }

    /// Stop, restore what was changed and write the trace. The note, if any, says that
    /// the ring buffer overflowed (the oldest events were overwritten).
    pub fn finish(self) -> Result<(OutputSummary, Option<String>), String> {
        let _ = write(&self.dir.join("tracing_on"), "0");
        for p in &self.enabled {
            let _ = write(p, "0");
        }
        let src = self.dir.join("trace");
        let note = overflow(&src);
        let input =
            fs::File::open(&src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let res = match self.format {
            Format::Text => copy_text(BufReader::new(input), &self.out),
            Format::Perfetto => convert(BufReader::new(input), &self.out, cpus),
        };
        if let Some(kb) = &self.buffer_kb {
            let _ = write(&self.dir.join("buffer_size_kb"), kb.trim());
        }
        if self.was_on {
            let _ = write(&self.dir.join("tracing_on"), "1");
        }
        res.map(|s| (s, note))
    }
}

/// From the header of the kernel's trace: a note when fewer entries are in the buffer
/// than were written.
fn overflow(trace: &Path) -> Option<String> {
    let f = fs::File::open(trace).ok()?;
    let line = BufReader::new(f)
        .lines()
        .take(8)
        .map_while(Result::ok)
        .find(|l| l.contains("entries-in-buffer/entries-written:"))?;
    let nums = line.split(':').nth(1)?.split_whitespace().next()?;
    let (kept, written) = nums.split_once('/')?;
    let (kept, written): (u64, u64) = (kept.parse().ok()?, written.parse().ok()?);
    (kept < written).then(|| {
        format!(
            "the kernel's trace buffer overflowed: {kept} of {written} events kept, the oldest were overwritten (buffer_size_kb)"
        )
    })
}

fn copy_text(input: impl BufRead, out: &Path) -> Result<OutputSummary, String> {
    let bad = |e: std::io::Error| format!("writing the trace {}: {e}", out.display());
    let mut w = std::io::BufWriter::new(fs::File::create(out).map_err(bad)?);
    let (mut bytes, mut events, mut switches) = (0u64, 0u64, 0u64);
    for line in input.lines() {
        let line = line.map_err(bad)?;
        if !line.starts_with('#') {
            events += 1;
            switches += u64::from(line.contains(": sched_switch: "));
        }
        writeln!(w, "{line}").map_err(bad)?;
        bytes += line.len() as u64 + 1;
    }
    w.flush().map_err(bad)?;
    Ok(OutputSummary {
        what: out.display().to_string(),
        bytes,
        events,
        switches,
    })
}

/// One parsed line of ftrace text: (comm, pid, cpu, ns, event, arguments).
pub struct Line<'a> {
    /// The emitting task's comm (`<idle>` for pid 0).
    pub comm: &'a str,
    /// Its pid.
    pub pid: u32,
    /// CPU.
    pub cpu: usize,
    /// Time, ns (µs resolution).
    pub ts: u64,
    /// Event name.
    pub event: &'a str,
    /// `key=value` arguments, in order.
    pub args: Vec<(&'a str, &'a str)>,
}

/// Parse one line of ftrace text (traces.md §4.2); `None` for comments and lines of
/// another shape.
pub fn parse_line(l: &str) -> Option<Line<'_>> {
    if l.starts_with('#') {
        return None;
    }
    let open = l.find(" [")?;
    let close = open + l[open..].find(']')?;
    let task = l[..open].trim_start();
    let dash = task.rfind('-')?;
    let (comm, pid) = (&task[..dash], task[dash + 1..].trim());
    let pid: u32 = pid.trim_start_matches('(').parse().ok()?;
    let cpu: usize = l[open + 2..close].parse().ok()?;
    let rest = &l[close + 1..];
    // flags, then "  secs.usecs: event: args"
    let colon = rest.find(": ")?;
    let ts_s = rest[..colon].split_whitespace().last()?;
    let (secs, frac) = ts_s.split_once('.')?;
    let frac_ns: u64 = format!("{frac:0<9}")[..9].parse().ok()?;
    let ts = secs.parse::<u64>().ok()? * 1_000_000_000 + frac_ns;
    let rest = &rest[colon + 2..];
    let (event, args) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    let args = args
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    Some(Line {
        comm,
        pid,
        cpu,
        ts,
        event,
        args,
    })
}

/// The `prev_state` report value of its text (`R`, `R+`, `S`, `D|W`, …).
pub fn state_value(s: &str) -> i64 {
    let mut v = 0;
    if s.ends_with('+') {
        v |= 0x100;
    }
    for part in s.trim_end_matches('+').split('|') {
        v |= match part {
            "S" => 0x1,
            "D" => 0x2,
            "T" => 0x4,
            "t" => 0x8,
            "X" => 0x10,
            "Z" => 0x20,
            "P" => 0x40,
            "I" => 0x80,
            _ => 0,
        };
    }
    v
}

fn task(comm: &str, pid: &str, prio: Option<&str>) -> TaskInfo {
    let pid = pid.parse().unwrap_or(0);
    TaskInfo {
        pid,
        tgid: pid,
        comm: comm.to_string(),
        prio: prio.and_then(|p| p.parse().ok()).unwrap_or(120),
        ..Default::default()
    }
}

/// Convert ftrace text to a Perfetto trace at `out` (`cpus` CPUs): the sched and task
/// events; other lines are skipped.
pub fn convert(input: impl BufRead, out: &Path, cpus: usize) -> Result<OutputSummary, String> {
    let bad = |e: std::io::Error| format!("writing the trace {}: {e}", out.display());
    let info = RunInfo {
        cpus,
        machine: "host".into(),
    };
    let mut w = PerfettoWriter::create(out, info).map_err(bad)?;
    w.begin(0, &[], &[]);
    for line in input.lines() {
        let line = line.map_err(bad)?;
        let Some(l) = parse_line(&line) else { continue };
        if l.cpu >= cpus {
            continue;
        }
        let get = |k: &str| l.args.iter().find(|(a, _)| *a == k).map(|(_, v)| *v);
        let by = TaskInfo {
            pid: l.pid,
            tgid: l.pid,
            comm: l.comm.to_string(),
            prio: 120,
            ..Default::default()
        };
        let rec = |kind| Rec {
            cpu: l.cpu,
            ts: l.ts,
            by: &by,
            kind,
        };
        let num = |k: &str| get(k).and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
        match l.event {
            "sched_switch" => {
                let prev = task(
                    get("prev_comm").unwrap_or(""),
                    get("prev_pid").unwrap_or("0"),
                    get("prev_prio"),
                );
                let next = task(
                    get("next_comm").unwrap_or(""),
                    get("next_pid").unwrap_or("0"),
                    get("next_prio"),
                );
                let st = state_value(get("prev_state").unwrap_or("R"));
                w.record(&Rec {
                    by: &prev,
                    ..rec(Kind::Switch {
                        prev: &prev,
                        prev_state: st,
                        next: &next,
                    })
                });
            }
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
                let p = task(
                    get("comm").unwrap_or(""),
                    get("pid").unwrap_or("0"),
                    get("prio"),
                );
                let target = num("target_cpu");
                let kind = match l.event {
                    "sched_waking" => Kind::Waking { p: &p, target },
                    e => Kind::Wakeup {
                        p: &p,
                        target,
                        new: e == "sched_wakeup_new",
                    },
                };
                w.record(&rec(kind));
            }
            "sched_migrate_task" => {
                let p = task(
                    get("comm").unwrap_or(""),
                    get("pid").unwrap_or("0"),
                    get("prio"),
                );
                let (from, to) = (num("orig_cpu"), num("dest_cpu"));
                w.record(&rec(Kind::Migrate { p: &p, from, to }));
            }
            "sched_process_fork" => {
                let child = task(
                    get("child_comm").unwrap_or(""),
                    get("child_pid").unwrap_or("0"),
                    None,
                );
                w.record(&rec(Kind::Fork {
                    child: &child,
                    thread: false,
                }));
            }
            "sched_process_exit" | "sched_process_free" => {
                let p = task(
                    get("comm").unwrap_or(""),
                    get("pid").unwrap_or("0"),
                    get("prio"),
                );
                let kind = if l.event == "sched_process_exit" {
                    Kind::Exit { p: &p }
                } else {
                    Kind::Free { p: &p }
                };
                w.record(&rec(kind));
            }
            _ => {}
        }
    }
    w.finish(0).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory removed when dropped.
    fn tmpdir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("schedlab-ntrace-")
            .tempdir()
            .unwrap()
    }

    #[test]
    fn without_tracefs_the_probe_names_what_is_missing_in_one_line() {
        let t = tmpdir();
        let d = t.path().to_path_buf();
        let e = probe_at(&[&d]).unwrap_err();
        assert!(e.starts_with("tracefs is not mounted"), "{e}");
        assert!(!e.contains('\n'));
        // Mounted, but without the sched tracepoints.
        fs::write(d.join("trace"), "").unwrap();
        fs::write(d.join("tracing_on"), "0").unwrap();
        let e = probe_at(&[&d]).unwrap_err();
        assert!(e.contains("no sched tracepoints"), "{e}");
        fs::create_dir_all(d.join("events/sched/sched_switch")).unwrap();
        fs::write(d.join("events/sched/sched_switch/enable"), "0").unwrap();
        assert_eq!(probe_at(&[&d]).unwrap(), d);
    }

    const SAMPLE: &str = "\
# tracer: nop
#
          <idle>-0       [000] d..2.     0.001500: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ping next_pid=101 next_prio=120
            ping-101     [000] d..3.     0.002000: sched_waking: comm=pong pid=102 prio=120 target_cpu=001
          <idle>-0       [001] d..2.     0.002500: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pong next_pid=102 next_prio=120
            pong-102     [001] d..2.     0.003000: sched_switch: prev_comm=pong prev_pid=102 prev_prio=120 prev_state=R+ ==> next_comm=swapper/1 next_pid=0 next_prio=120
            ping-101     [000] d..2.     0.005000: sched_switch: prev_comm=ping prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       [000] d..2.     0.008000: sched_migrate_task: comm=pong pid=102 prio=120 orig_cpu=1 dest_cpu=0
";

    #[test]
    fn kernel_text_converts_to_a_perfetto_trace_that_checks() {
        let l = parse_line(SAMPLE.lines().nth(3).unwrap()).unwrap();
        assert_eq!((l.comm, l.pid, l.cpu, l.ts), ("ping", 101, 0, 2_000_000));
        assert_eq!(l.event, "sched_waking");
        assert_eq!(state_value("R+"), 0x100);
        assert_eq!(state_value("S"), 1);
        let t = tmpdir();
        let out = t.path().join("t.perfetto-trace");
        let s = convert(SAMPLE.as_bytes(), &out, 2).unwrap();
        assert_eq!(s.switches, 4);
        let t = schedlab::trace::perfetto::decode(&fs::read(&out).unwrap()).unwrap();
        let f = schedlab::trace::check::check(&t, true).unwrap();
        assert_eq!(f.switches, 4);
        assert_eq!(f.by_kind.get("sched_migrate_task"), Some(&1));
    }
}
