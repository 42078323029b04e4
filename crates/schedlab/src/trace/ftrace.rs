//! The ftrace text trace, as `cat /sys/kernel/tracing/trace` prints it (traces.md §4):
//! the `nop` tracer's header, then one line per event in global time order (the kernel
//! merges its per-CPU buffers by time; ties keep engine order).
//!
//! Streaming: lines wait in a small reorder heap until global time passes them (no later
//! event can be stamped earlier, see [`super::TraceSink::advance`]) and go to a body file
//! beside the trace; at the end the header, which counts the entries, is written and the
//! body appended. Simulator-only facts are atrace `print` events
//! (`tracing_mark_write:`): `C|0|rqN_nr_running|n`, `C|0|cpuN_spinning|0/1` (a counter per
//! CPU: a spinning idle task would break per-thread slice nesting) and `I|tgid|ipi:N`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{state, Kind, Output, OutputSummary, Rec, RunInfo, TaskInfo};
use crate::engine::Time;

/// The ftrace text writer.
pub struct FtraceWriter {
    path: PathBuf,
    body_path: PathBuf,
    body: BufWriter<File>,
    info: RunInfo,
    heap: BinaryHeap<Reverse<(Time, u64, String)>>,
    seq: u64,
    /// Time of the last line written (a late line is written at this time).
    written_to: Time,
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

/// One line: the prefix (`%16s-%-7d [%03d] flags %5lu.%06lu: `), then `event: args`.
pub fn line(by: &TaskInfo, cpu: usize, ts: Time, flags: &str, event: &str, args: &str) -> String {
    let comm = if by.pid == 0 { "<idle>" } else { &by.comm };
    // ns2usecs: rounded to the microsecond.
    let us = (ts + 500) / 1000;
    format!(
        "{comm:>16}-{:<7} [{cpu:03}] {flags} {:>5}.{:06}: {event}: {args}\n",
        by.pid,
        us / 1_000_000,
        us % 1_000_000
    )
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
            info,
            heap: BinaryHeap::new(),
            seq: 0,
            written_to: 0,
            lines: 0,
            switches: 0,
            body_bytes: 0,
        })
    }

    fn drain(&mut self, upto: Time) {
        while let Some(Reverse((ts, _, _))) = self.heap.peek() {
            if *ts > upto {
                break;
            }
            let Reverse((ts, _, l)) = self.heap.pop().expect("peeked");
            // Lines are formatted with their own time; one that arrives after a later
            // line was written keeps its time (the order of the file is then off by
            // less than one hook; Perfetto sorts anyway).
            self.written_to = self.written_to.max(ts);
            self.body_bytes += l.len() as u64;
            let _ = self.body.write_all(l.as_bytes());
            self.lines += 1;
        }
    }

    fn push(&mut self, ts: Time, l: String) {
        self.seq += 1;
        self.heap.push(Reverse((ts, self.seq, l)));
    }
}

/// The text of one record: (flags, event name, arguments).
pub fn format_rec(r: &Rec<'_>) -> (&'static str, &'static str, String) {
    let mut a = String::new();
    let sched = "d..2.";
    let ev = match r.kind {
        Kind::Switch {
            prev,
            prev_state,
            next,
        } => {
            let _ = write!(
                a,
                "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                prev.comm,
                prev.pid,
                prev.prio,
                state::letters(prev_state),
                next.comm,
                next.pid,
                next.prio
            );
            "sched_switch"
        }
        Kind::Waking { p, target } | Kind::Wakeup { p, target, .. } => {
            let _ = write!(
                a,
                "comm={} pid={} prio={} target_cpu={:03}",
                p.comm, p.pid, p.prio, target
            );
            match r.kind {
                Kind::Waking { .. } => "sched_waking",
                Kind::Wakeup { new: true, .. } => "sched_wakeup_new",
                _ => "sched_wakeup",
            }
        }
        Kind::Migrate { p, from, to } => {
            let _ = write!(
                a,
                "comm={} pid={} prio={} orig_cpu={from} dest_cpu={to}",
                p.comm, p.pid, p.prio
            );
            "sched_migrate_task"
        }
        Kind::Fork { child, .. } => {
            let _ = write!(
                a,
                "comm={} pid={} child_comm={} child_pid={}",
                r.by.comm, r.by.pid, child.comm, child.pid
            );
            "sched_process_fork"
        }
        Kind::Rename { p, old } => {
            let _ = write!(
                a,
                "pid={} oldcomm={old} newcomm={} oom_score_adj=0",
                p.pid, p.comm
            );
            "task_rename"
        }
        Kind::Exit { p } | Kind::Free { p } => {
            let _ = write!(a, "comm={} pid={} prio={}", p.comm, p.pid, p.prio);
            if matches!(r.kind, Kind::Exit { .. }) {
                "sched_process_exit"
            } else {
                "sched_process_free"
            }
        }
        Kind::SpinBegin { .. } | Kind::SpinEnd { .. } => {
            let on = u8::from(matches!(r.kind, Kind::SpinBegin { .. }));
            let _ = write!(a, "C|0|cpu{}_spinning|{on}", r.cpu);
            return (".....", "tracing_mark_write", a);
        }
        Kind::Ipi { target } => {
            let _ = write!(a, "I|{}|ipi:{target}", r.by.tgid);
            return (".....", "tracing_mark_write", a);
        }
        Kind::RqLen { rq, n } => {
            let _ = write!(a, "C|0|rq{rq}_nr_running|{n}");
            return (".....", "tracing_mark_write", a);
        }
    };
    (sched, ev, a)
}

impl Output for FtraceWriter {
    fn begin(&mut self, _ts: Time, _tasks: &[&TaskInfo], _running: &[&TaskInfo]) {}

    fn record(&mut self, r: &Rec<'_>) {
        if let Kind::Fork { child, thread } = r.kind {
            // task_newtask first, as the kernel emits it (copy_process) before the fork
            // tracepoint (kernel_clone).
            let flags = if thread { 0x0001_0f00 } else { 0x11 };
            let args = format!(
                "pid={} comm={} clone_flags={flags:x} oom_score_adj=0",
                child.pid, child.comm
            );
            let l = line(r.by, r.cpu, r.ts, "d..2.", "task_newtask", &args);
            self.push(r.ts, l);
        }
        if let Kind::Switch { .. } = r.kind {
            self.switches += 1;
        }
        let (flags, ev, args) = format_rec(r);
        let l = line(r.by, r.cpu, r.ts, flags, ev, &args);
        self.push(r.ts, l);
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
