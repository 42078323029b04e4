//! The ftrace text trace, as `cat /sys/kernel/tracing/trace` prints it (traces.md §4):
//! the `nop` tracer's header, then one line per event in global time order (the kernel
//! merges its per-CPU buffers by time; ties keep engine order).
//!
//! Streaming: lines are formatted at once into per-CPU byte queues, wait there until
//! global time passes them (no later event can be stamped earlier, see
//! [`super::TraceSink::advance`]) and are merged by time into a body file beside the trace; at the end the header, which counts the entries, is written and the
//! body appended. Simulator-only facts are atrace `print` events
//! (`tracing_mark_write:`): `C|0|rqN_nr_running|n`, `C|0|cpuN_spinning|0/1` (a counter per
//! CPU: a spinning idle task would break per-thread slice nesting) and `I|tgid|ipi:N`.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{state, Kind, Output, OutputSummary, Rec, RunInfo, TaskInfo};
use crate::engine::Time;

/// Lines of one CPU waiting for global time: their bytes back to back, and per line its
/// time, order and length. A CPU's lines are in time order (the tracer stamps them so),
/// so merging the CPUs' queues by (time, order) gives the global order.
#[derive(Default)]
struct CpuLines {
    bytes: Vec<u8>,
    start: usize,
    lines: VecDeque<(Time, u64, u32)>,
}

/// The ftrace text writer.
pub struct FtraceWriter {
    path: PathBuf,
    body_path: PathBuf,
    body: BufWriter<File>,
    info: RunInfo,
    cpus: Vec<CpuLines>,
    seq: u64,
    lines: u64,
    switches: u64,
    body_bytes: u64,
}

/// The header for `entries` events on `cpus` CPUs (`trace.c` `print_trace_header`
/// without latency format, `print_func_help_header_irq`).
pub fn header(entries: u64, cpus: usize) -> String {
    format!(
        "# tracer: nop\n\
         #\n\
         # entries-in-buffer/entries-written: {entries}/{entries}   #P:{cpus}\n\
         #\n\
         #                                _-----=> irqs-off/BH-disabled\n\
         #                               / _----=> need-resched\n\
         #                              | / _---=> hardirq/softirq\n\
         #                              || / _--=> preempt-depth\n\
         #                              ||| / _-=> migrate-disable\n\
         #                              |||| /     delay\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |         |   |||||     |         |\n"
    )
}

/// One line: the prefix (`%16s-%-7d [%03d] flags %5lu.%06lu: `), then `event: ` and the
/// arguments `args` writes.
pub fn write_line(
    w: &mut Vec<u8>,
    by: &TaskInfo,
    cpu: usize,
    ts: Time,
    flags: &str,
    event: &str,
    args: impl FnOnce(&mut Vec<u8>),
) {
    let comm = if by.pid == 0 { "<idle>" } else { &by.comm };
    // ns2usecs: rounded to the microsecond.
    let us = (ts + 500) / 1000;
    let _ = write!(
        w,
        "{comm:>16}-{:<7} [{cpu:03}] {flags} {:>5}.{:06}: {event}: ",
        by.pid,
        us / 1_000_000,
        us % 1_000_000
    );
    args(w);
    w.push(b'\n');
}

/// One line as a string (see [`write_line`]).
pub fn line(by: &TaskInfo, cpu: usize, ts: Time, flags: &str, event: &str, args: &str) -> String {
    let mut v = Vec::new();
    write_line(&mut v, by, cpu, ts, flags, event, |w| {
        w.extend_from_slice(args.as_bytes())
    });
    String::from_utf8(v).expect("ASCII")
}

impl FtraceWriter {
    /// A writer to `path` (the body is written beside it until the end).
    pub fn create(path: &Path, info: RunInfo) -> std::io::Result<FtraceWriter> {
        let mut body_path = path.as_os_str().to_owned();
        body_path.push(".body.tmp");
        let body_path = PathBuf::from(body_path);
        // Fail now, not at the end, when the trace itself cannot be created.
        File::create(path)?;
        let f = File::create(&body_path)?;
        Ok(FtraceWriter {
            path: path.to_path_buf(),
            body_path,
            body: BufWriter::with_capacity(1 << 16, f),
            cpus: (0..info.cpus).map(|_| CpuLines::default()).collect(),
            info,
            seq: 0,
            lines: 0,
            switches: 0,
            body_bytes: 0,
        })
    }

    fn drain(&mut self, upto: Time) {
        loop {
            // The CPU whose next line comes first (determinism: ties by emission order).
            let mut best: Option<(Time, u64, usize)> = None;
            for (c, q) in self.cpus.iter().enumerate() {
                if let Some(&(ts, seq, _)) = q.lines.front() {
                    if ts <= upto && best.is_none_or(|(bt, bs, _)| (ts, seq) < (bt, bs)) {
                        best = Some((ts, seq, c));
                    }
                }
            }
            let Some((_, _, c)) = best else { break };
            let q = &mut self.cpus[c];
            let (_, _, len) = q.lines.pop_front().expect("a line");
            let end = q.start + len as usize;
            let _ = self.body.write_all(&q.bytes[q.start..end]);
            self.body_bytes += u64::from(len);
            self.lines += 1;
            q.start = end;
            if q.lines.is_empty() {
                q.bytes.clear();
                q.start = 0;
            } else if q.start > (1 << 16) && q.start * 2 > q.bytes.len() {
                q.bytes.drain(..q.start);
                q.start = 0;
            }
        }
    }

    fn push(&mut self, r: &Rec<'_>, flags: &str, event: &str, args: impl FnOnce(&mut Vec<u8>)) {
        self.seq += 1;
        let q = &mut self.cpus[r.cpu];
        let before = q.bytes.len();
        write_line(&mut q.bytes, r.by, r.cpu, r.ts, flags, event, args);
        let len = (q.bytes.len() - before) as u32;
        q.lines.push_back((r.ts, self.seq, len));
    }
}

/// The flags and event name of one record.
pub fn event_of(r: &Rec<'_>) -> (&'static str, &'static str) {
    let sched = "d..2.";
    match r.kind {
        Kind::Switch { .. } => (sched, "sched_switch"),
        Kind::Waking { .. } => (sched, "sched_waking"),
        Kind::Wakeup { new: true, .. } => (sched, "sched_wakeup_new"),
        Kind::Wakeup { .. } => (sched, "sched_wakeup"),
        Kind::Migrate { .. } => (sched, "sched_migrate_task"),
        Kind::Fork { .. } => (sched, "sched_process_fork"),
        Kind::Rename { .. } => (sched, "task_rename"),
        Kind::Exit { .. } => (sched, "sched_process_exit"),
        Kind::Free { .. } => (sched, "sched_process_free"),
        Kind::SpinBegin { .. }
        | Kind::SpinEnd { .. }
        | Kind::Ipi { .. }
        | Kind::RqLen { .. }
        | Kind::Dsq { .. } => (".....", "tracing_mark_write"),
    }
}

/// Write the arguments of one record (`TP_printk` of its event, traces.md §4.3).
pub fn write_args(a: &mut Vec<u8>, r: &Rec<'_>) {
    let _ = match r.kind {
        Kind::Switch {
            prev,
            prev_state,
            next,
        } => {
            let other;
            let st = match prev_state {
                state::RUNNABLE => "R",
                state::PREEMPTED => "R+",
                state::S => "S",
                state::D => "D",
                state::X => "X",
                _ => {
                    other = state::letters(prev_state);
                    other.as_str()
                }
            };
            write!(
                a,
                "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                prev.comm, prev.pid, prev.prio, st, next.comm, next.pid, next.prio
            )
        }
        Kind::Waking { p, target } | Kind::Wakeup { p, target, .. } => write!(
            a,
            "comm={} pid={} prio={} target_cpu={:03}",
            p.comm, p.pid, p.prio, target
        ),
        Kind::Migrate { p, from, to } => write!(
            a,
            "comm={} pid={} prio={} orig_cpu={from} dest_cpu={to}",
            p.comm, p.pid, p.prio
        ),
        Kind::Fork { child, .. } => write!(
            a,
            "comm={} pid={} child_comm={} child_pid={}",
            r.by.comm, r.by.pid, child.comm, child.pid
        ),
        Kind::Rename { p, old } => write!(
            a,
            "pid={} oldcomm={old} newcomm={} oom_score_adj=0",
            p.pid, p.comm
        ),
        Kind::Exit { p } | Kind::Free { p } => {
            write!(a, "comm={} pid={} prio={}", p.comm, p.pid, p.prio)
        }
        Kind::SpinBegin { .. } => write!(a, "C|0|cpu{}_spinning|1", r.cpu),
        Kind::SpinEnd { .. } => write!(a, "C|0|cpu{}_spinning|0", r.cpu),
        Kind::Ipi { target } => write!(a, "I|{}|ipi:{target}", r.by.tgid),
        Kind::RqLen { rq, n } => write!(a, "C|0|rq{rq}_nr_running|{n}"),
        Kind::Dsq { p, op, dsq } => write!(
            a,
            "I|{}|scx_{op}:{}:{} dsq=0x{dsq:x}",
            r.by.tgid, p.comm, p.pid
        ),
    };
}

impl Output for FtraceWriter {
    fn begin(&mut self, _ts: Time, _tasks: &[&TaskInfo], _running: &[&TaskInfo]) {}

    fn record(&mut self, r: &Rec<'_>) {
        if let Kind::Fork { child, thread } = r.kind {
            // task_newtask first, as the kernel emits it (copy_process) before the fork
            // tracepoint (kernel_clone).
            let flags: u64 = if thread { 0x0001_0f00 } else { 0x11 };
            self.push(r, "d..2.", "task_newtask", |w| {
                let _ = write!(
                    w,
                    "pid={} comm={} clone_flags={flags:x} oom_score_adj=0",
                    child.pid, child.comm
                );
            });
        }
        if let Kind::Switch { .. } = r.kind {
            self.switches += 1;
        }
        let (flags, ev) = event_of(r);
        self.push(r, flags, ev, |w| write_args(w, r));
    }

    fn advance(&mut self, now: Time) {
        self.drain(now);
    }

    fn finish(&mut self, _end: Time) -> std::io::Result<OutputSummary> {
        self.drain(Time::MAX);
        self.body.flush()?;
        let mut out = File::create(&self.path)?;
        let h = header(self.lines, self.info.cpus);
        out.write_all(h.as_bytes())?;
        let mut body = File::open(&self.body_path)?;
        // File to file: the copy stays in the kernel (copy_file_range) where it can.
        std::io::copy(&mut body, &mut out)?;
        std::fs::remove_file(&self.body_path)?;
        Ok(OutputSummary {
            what: self.path.display().to_string(),
            bytes: h.len() as u64 + self.body_bytes,
            events: self.lines,
            switches: self.switches,
        })
    }
}
