//! Scheduler traces: what the kernel did, for Perfetto, for ftrace's text readers, for a
//! `perf sched latency`-style summary and for a per-CPU timeline picture.
//!
//! # How it works
//!
//! 1. The kernel calls a [`TraceSink`] at its existing event points, with a [`KEvent`]:
//!    the context switch (at exactly the line that counts `context_switches`, so the
//!    trace's `sched_switch` events and the counter agree by construction), the wake-up,
//!    the run-queue move (`set_task_cpu`, which counts `migrations`), fork, exec, exit,
//!    reaping, `nice`, `sched_yield`, a spin on a contended lock, a reschedule IPI. With no
//!    sink the cost is one `Option` check per point.
//! 2. [`Tracer`], the sink the command line installs, keeps what the kernel does not keep
//!    for it — each task's comm, tgid and prio, which CPU's run queue holds it — turns each
//!    `KEvent` into [`Rec`]s (ftrace's events and simulator-only facts: lock waits, IPIs,
//!    run-queue lengths) and hands them to its [`Output`]s: [`perfetto`], [`ftrace`],
//!    [`latency`], [`timeline`]. Outputs stream: memory stays bounded whatever the run's
//!    length.
//! 3. Timestamps are CPU clocks (simulated ns since boot). A CPU's clock may run ahead of
//!    global time inside a hook; an event one CPU records for another (a wake-up placed on
//!    a remote run queue) is stamped no earlier than that CPU's last event, so every CPU's
//!    events are in time order (`// model:` in [`Tracer::stamp`]).
//!
//! Formats and conventions: `shared/spec/traces.md`. Determinism: outputs depend only on
//! the events, which follow the engine's order.

pub mod check;
pub mod ftrace;
pub mod latency;
pub mod perfetto;
pub mod proto;
pub mod setup;
pub mod timeline;

use crate::engine::Time;
use crate::kernel::task::TaskId;
use crate::kernel::Kernel;

/// `prev_state` report values of Linux ≥ 4.14 (traces.md §2.3).
pub mod state {
    /// Runnable, switched out voluntarily (`sched_yield`).
    pub const RUNNABLE: i64 = 0;
    /// `TASK_INTERRUPTIBLE`.
    pub const S: i64 = 0x1;
    /// `TASK_UNINTERRUPTIBLE`.
    pub const D: i64 = 0x2;
    /// `EXIT_DEAD`: the last switch-out of an exiting task.
    pub const X: i64 = 0x10;
    /// Preempted while runnable (`TASK_REPORT_MAX`).
    pub const PREEMPTED: i64 = 0x100;

    /// The text form (`R`, `R+`, `S`, `D`, `X`, …).
    pub fn letters(s: i64) -> String {
        const L: [char; 8] = ['S', 'D', 'T', 't', 'X', 'Z', 'P', 'I'];
        let bits = s & 0xff;
        let mut o = if bits == 0 {
            "R".to_string()
        } else {
            let v: Vec<String> = (0..8)
                .filter(|i| bits & (1 << i) != 0)
                .map(|i| L[i].to_string())
                .collect();
            v.join("|")
        };
        if s & PREEMPTED != 0 {
            o.push('+');
        }
        o
    }
}

pub use crate::kernel::events::{KEvent, OutputSummary, TraceSink};

/// A task as traces name it.
#[derive(Clone, Debug, Default)]
pub struct TaskInfo {
    /// Kernel pid (thread id); 0 for the idle tasks.
    pub pid: u32,
    /// Process id (the pid of the thread group leader).
    pub tgid: u32,
    /// Parent's pid (0 for init and orphans).
    pub ppid: u32,
    /// comm: at most 15 bytes of `[A-Za-z0-9_./:+-]`.
    pub comm: String,
    /// `p->prio`: 120 + nice.
    pub prio: i32,
    /// The CPU whose run queue holds it (when runnable).
    pub cpu: usize,
    /// Runnable (on a CPU or queued).
    pub runnable: bool,
    /// Its next switch-out while runnable is a `sched_yield`.
    pub yielding: bool,
    /// Reaped.
    pub dead: bool,
}

impl TaskInfo {
    /// The task group: the comm up to its first `:` (`sender:3.7` → `sender`), the unit
    /// the latency summary merges and the timeline colours by.
    pub fn group(&self) -> &str {
        group_of(&self.comm)
    }
}

/// The group of a comm: up to its first `:`.
pub fn group_of(comm: &str) -> &str {
    comm.split(':').next().unwrap_or(comm)
}

/// A comm as the kernel keeps it: at most 15 bytes, characters outside
/// `[A-Za-z0-9_./:+-]` replaced by `_`.
pub fn sanitize_comm(s: &str) -> String {
    let mut o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_./:+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    o.truncate(15);
    o
}

/// One record for the outputs: an ftrace event or a simulator-only fact, on `cpu`, by
/// task `pid` (the emitting task: `FtraceEvent.pid`, the text prefix).
#[derive(Clone, Copy, Debug)]
pub struct Rec<'a> {
    /// CPU whose buffer holds it.
    pub cpu: usize,
    /// Time, ns.
    pub ts: Time,
    /// The emitting task.
    pub by: &'a TaskInfo,
    /// What.
    pub kind: Kind<'a>,
}

/// The kinds of [`Rec`].
#[allow(missing_docs)] // fields are named by their variant docs
#[derive(Clone, Copy, Debug)]
pub enum Kind<'a> {
    /// `sched_switch`.
    Switch {
        prev: &'a TaskInfo,
        prev_state: i64,
        next: &'a TaskInfo,
    },
    /// `sched_waking` (by `by`).
    Waking { p: &'a TaskInfo, target: usize },
    /// `sched_wakeup` / `sched_wakeup_new`.
    Wakeup {
        p: &'a TaskInfo,
        target: usize,
        new: bool,
    },
    /// `sched_migrate_task`.
    Migrate {
        p: &'a TaskInfo,
        from: usize,
        to: usize,
    },
    /// `task_newtask` and `sched_process_fork` (by the parent, `by`).
    Fork { child: &'a TaskInfo, thread: bool },
    /// `task_rename`.
    Rename { p: &'a TaskInfo, old: &'a str },
    /// `sched_process_exit`.
    Exit { p: &'a TaskInfo },
    /// `sched_process_free`.
    Free { p: &'a TaskInfo },
    /// The CPU starts spinning on a lock (simulator-only).
    SpinBegin { lock: &'static str },
    /// The CPU got the lock (simulator-only).
    SpinEnd { lock: &'static str },
    /// A reschedule IPI to `target` (simulator-only).
    Ipi { target: usize },
    /// sched_ext moved `p` into (`dsq_insert`) or out of (`dsq_move_to_local`) the
    /// dispatch queue `dsq` (simulator-only: ext.c has no tracepoint for it).
    Dsq {
        p: &'a TaskInfo,
        op: &'static str,
        dsq: u64,
    },
    /// Run queue `rq` now holds `n` runnable tasks, the running one included
    /// (simulator-only; `nr_running`).
    RqLen { rq: usize, n: u32 },
}

/// A consumer of [`Rec`]s.
pub trait Output: Send {
    /// The window opened at `ts` (the run's start when there is no window): `tasks` are
    /// the tasks alive, `running[c]` the task on CPU `c`.
    fn begin(&mut self, ts: Time, tasks: &[&TaskInfo], running: &[&TaskInfo]);
    /// One record inside the window.
    fn record(&mut self, r: &Rec<'_>);
    /// Global time reached `now` (see [`TraceSink::advance`]).
    fn advance(&mut self, _now: Time) {}
    /// The window closed at `end` (or the run ended).
    fn finish(&mut self, end: Time) -> std::io::Result<OutputSummary>;
}

/// Static facts about the run the outputs print.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// CPUs.
    pub cpus: usize,
    /// Machine preset name.
    pub machine: String,
}

/// The trace window: records with `start <= ts < end` reach the windowed outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start, ns.
    pub start: Time,
    /// End, ns (`Time::MAX`: the end of the run).
    pub end: Time,
}

impl Window {
    /// The whole run.
    pub const ALL: Window = Window {
        start: 0,
        end: Time::MAX,
    };

    /// Parse `START_MS..END_MS` (either side may be empty; decimals allowed).
    pub fn parse(s: &str) -> Result<Window, String> {
        let bad = || {
            format!(
                "--trace-window {s:?} is not START_MS..END_MS (accepted: e.g. 10..20, 0.5..1.5, 100..)"
            )
        };
        let (a, b) = s.split_once("..").ok_or_else(bad)?;
        let ms = |x: &str, dflt: Time| -> Result<Time, String> {
            let x = x.trim();
            if x.is_empty() {
                return Ok(dflt);
            }
            let v: f64 = x.parse().map_err(|_| bad())?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad());
            }
            Ok((v * 1e6).round() as Time)
        };
        let w = Window {
            start: ms(a, 0)?,
            end: ms(b, Time::MAX)?,
        };
        if w.end <= w.start {
            return Err(format!(
                "--trace-window {s}: the end must be after the start (accepted: START_MS..END_MS with START < END)"
            ));
        }
        Ok(w)
    }
}

/// An output and the window it sees.
struct Attached {
    out: Box<dyn Output>,
    window: Window,
    open: bool,
    closed: bool,
}

/// The sink the command line installs: keeps the task table traces need and feeds its
/// outputs.
pub struct Tracer {
    tasks: Vec<TaskInfo>,
    /// Per CPU: the task running, and the time of its last event.
    curr: Vec<TaskId>,
    last: Vec<Time>,
    /// Per run queue: runnable tasks (`nr_running`).
    nr: Vec<u32>,
    outs: Vec<Attached>,
    cpus: usize,
}

impl Tracer {
    /// A tracer for `cpus` CPUs with no outputs yet.
    pub fn new(cpus: usize) -> Tracer {
        Tracer {
            tasks: Vec::new(),
            curr: vec![0; cpus],
            last: vec![0; cpus],
            nr: vec![0; cpus],
            outs: Vec::new(),
            cpus,
        }
    }

    /// Add `out`, fed the records inside `window`.
    pub fn add(&mut self, out: Box<dyn Output>, window: Window) {
        self.outs.push(Attached {
            out,
            window,
            open: false,
            closed: false,
        });
    }

    /// CPUs traced.
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    // model: an event a CPU records for another CPU (a remote wake-up) may be stamped
    // earlier than that CPU's last event, which its clock, run ahead inside a hook, gave
    // it; it is stamped at that last event instead (a shift of at most one hook's length),
    // so every CPU's events are in time order, as in a kernel's per-CPU ring buffer.
    fn stamp(&mut self, cpu: usize, ts: Time) -> Time {
        let t = ts.max(self.last[cpu]);
        self.last[cpu] = t;
        t
    }

    fn ensure(&mut self, p: TaskId) {
        if self.tasks.len() <= p as usize {
            self.tasks.resize(p as usize + 1, TaskInfo::default());
        }
    }

    /// Open windows that start at or before `ts`; close those that ended. An output whose
    /// window opens is told the tasks alive, who runs where, and the run-queue lengths.
    fn windows(&mut self, ts: Time) {
        for i in 0..self.outs.len() {
            let a = &self.outs[i];
            if a.closed {
                continue;
            }
            if a.open {
                if ts >= a.window.end {
                    self.outs[i].closed = true;
                }
                continue;
            }
            if ts < a.window.start {
                continue;
            }
            let start = a.window.start;
            let t = &self.tasks;
            let alive: Vec<&TaskInfo> = t.iter().filter(|t| t.pid != 0 && !t.dead).collect();
            let running: Vec<&TaskInfo> = self.curr.iter().map(|&c| &t[c as usize]).collect();
            let a = &mut self.outs[i];
            a.out.begin(start, &alive, &running);
            a.open = true;
            for (rq, by) in running.iter().enumerate() {
                let r = Rec {
                    cpu: rq,
                    ts: start,
                    by,
                    kind: Kind::RqLen { rq, n: self.nr[rq] },
                };
                a.out.record(&r);
            }
            if ts >= a.window.end {
                a.closed = true;
            }
        }
    }

    fn rq_change(&mut self, cpu: usize, ts: Time, by: TaskId, rq: usize, delta: i32) {
        let n = (i64::from(self.nr[rq]) + i64::from(delta)).max(0) as u32;
        self.nr[rq] = n;
        let r = Rec {
            cpu,
            ts,
            by: &self.tasks[by as usize],
            kind: Kind::RqLen { rq, n },
        };
        send(&mut self.outs, &r);
    }
}

/// Hand `r` to the outputs whose window holds it.
fn send(outs: &mut [Attached], r: &Rec<'_>) {
    for a in outs {
        if a.open && !a.closed && r.ts >= a.window.start && r.ts < a.window.end {
            a.out.record(r);
        }
    }
}

/// The comm of init when its program has no name: the workload's.
fn root_comm(workload: &str) -> String {
    sanitize_comm(workload)
}

impl TraceSink for Tracer {
    fn attach(&mut self, k: &Kernel, workload: &str) {
        for (id, t) in k.tasks.iter().enumerate() {
            self.ensure(id as TaskId);
            let comm = if t.is_idle {
                format!("swapper/{}", t.processor)
            } else if let Some(c) = k.programs[id].as_ref().and_then(|p| p.comm()) {
                sanitize_comm(&c)
            } else if t.parent.is_none() && t.pid == 1 {
                root_comm(workload)
            } else {
                "task".into()
            };
            let runnable = !t.is_idle && t.state == crate::kernel::task::TaskState::Running;
            self.tasks[id] = TaskInfo {
                pid: if t.is_idle { 0 } else { t.pid },
                tgid: if t.is_idle { 0 } else { t.pid },
                ppid: t.parent.map_or(0, |p| k.tasks[p as usize].pid),
                comm,
                prio: 120 + t.nice,
                cpu: t.processor,
                runnable,
                yielding: false,
                dead: t.state == crate::kernel::task::TaskState::Dead,
            };
            if runnable {
                self.nr[t.processor] += 1;
            }
        }
        for (c, cpu) in k.cpus.iter().enumerate() {
            self.curr[c] = cpu.curr;
            self.last[c] = cpu.clock;
        }
        self.windows(k.now);
    }

    fn event(&mut self, ev: &KEvent<'_>) {
        use crate::kernel::task::TaskState;
        match *ev {
            KEvent::Switch {
                cpu,
                ts,
                prev,
                next,
                prev_state,
            } => {
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let pt = &mut self.tasks[prev as usize];
                let st = if pt.pid == 0 {
                    state::RUNNABLE
                } else {
                    match prev_state {
                        TaskState::Running if pt.yielding => state::RUNNABLE,
                        TaskState::Running => state::PREEMPTED,
                        TaskState::Interruptible => state::S,
                        TaskState::Uninterruptible => state::D,
                        TaskState::Zombie | TaskState::Dead => state::X,
                    }
                };
                pt.yielding = false;
                let left = pt.pid != 0 && prev_state != TaskState::Running && pt.runnable;
                if left {
                    pt.runnable = false;
                }
                let rq = pt.cpu;
                self.curr[cpu] = next;
                let t = &self.tasks;
                let r = Rec {
                    cpu,
                    ts,
                    by: &t[prev as usize],
                    kind: Kind::Switch {
                        prev: &t[prev as usize],
                        prev_state: st,
                        next: &t[next as usize],
                    },
                };
                send(&mut self.outs, &r);
                if left {
                    self.rq_change(cpu, ts, next, rq, -1);
                }
            }
            KEvent::Wakeup {
                cpu,
                waking,
                ts,
                waker,
                p,
                target,
                new,
            } => {
                let w = self.stamp(cpu, waking);
                self.windows(w);
                let task = &mut self.tasks[p as usize];
                task.cpu = target;
                let was = std::mem::replace(&mut task.runnable, true);
                let t = &self.tasks;
                if !new {
                    let r = Rec {
                        cpu,
                        ts: w,
                        by: &t[waker as usize],
                        kind: Kind::Waking {
                            p: &t[p as usize],
                            target,
                        },
                    };
                    send(&mut self.outs, &r);
                }
                let ts = self.stamp(target, ts);
                self.windows(ts);
                let on = self.curr[target];
                let t = &self.tasks;
                let r = Rec {
                    cpu: target,
                    ts,
                    by: &t[on as usize],
                    kind: Kind::Wakeup {
                        p: &t[p as usize],
                        target,
                        new,
                    },
                };
                send(&mut self.outs, &r);
                if !was {
                    self.rq_change(target, ts, on, target, 1);
                }
            }
            KEvent::Migrate {
                cpu,
                ts,
                p,
                from,
                to,
            } => {
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let task = &mut self.tasks[p as usize];
                task.cpu = to;
                let runnable = task.runnable;
                let by = self.curr[cpu];
                let t = &self.tasks;
                let r = Rec {
                    cpu,
                    ts,
                    by: &t[by as usize],
                    kind: Kind::Migrate {
                        p: &t[p as usize],
                        from,
                        to,
                    },
                };
                send(&mut self.outs, &r);
                if runnable {
                    self.rq_change(cpu, ts, by, from, -1);
                    self.rq_change(cpu, ts, by, to, 1);
                }
            }
            KEvent::Fork {
                cpu,
                ts,
                parent,
                child,
                pid,
                thread,
                comm,
            } => {
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                self.ensure(child);
                let pt = &self.tasks[parent as usize];
                let info = TaskInfo {
                    pid,
                    tgid: if thread { pt.tgid } else { pid },
                    ppid: pt.pid,
                    comm: comm.map_or_else(|| pt.comm.clone(), sanitize_comm),
                    prio: pt.prio,
                    cpu,
                    runnable: false,
                    yielding: false,
                    dead: false,
                };
                self.tasks[child as usize] = info;
                let t = &self.tasks;
                let r = Rec {
                    cpu,
                    ts,
                    by: &t[parent as usize],
                    kind: Kind::Fork {
                        child: &t[child as usize],
                        thread,
                    },
                };
                send(&mut self.outs, &r);
            }
            KEvent::Exec { cpu, ts, p, comm } => {
                let Some(comm) = comm else { return };
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let new = sanitize_comm(comm);
                let old = std::mem::replace(&mut self.tasks[p as usize].comm, new);
                let t = &self.tasks[p as usize];
                let r = Rec {
                    cpu,
                    ts,
                    by: t,
                    kind: Kind::Rename { p: t, old: &old },
                };
                send(&mut self.outs, &r);
            }
            KEvent::Exit { cpu, ts, p } => {
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let t = &self.tasks[p as usize];
                let r = Rec {
                    cpu,
                    ts,
                    by: t,
                    kind: Kind::Exit { p: t },
                };
                send(&mut self.outs, &r);
            }
            KEvent::Free { cpu, ts, p } => {
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let t = &self.tasks;
                let r = Rec {
                    cpu,
                    ts,
                    by: &t[self.curr[cpu] as usize],
                    kind: Kind::Free { p: &t[p as usize] },
                };
                send(&mut self.outs, &r);
                self.tasks[p as usize].dead = true;
            }
            KEvent::Nice { p, nice } => {
                self.tasks[p as usize].prio = 120 + nice;
            }
            KEvent::Yield { p } => {
                self.tasks[p as usize].yielding = true;
            }
            KEvent::LockWait {
                cpu,
                curr,
                from,
                to,
                lock,
            } => {
                for (ts, kind) in [
                    (from, Kind::SpinBegin { lock }),
                    (to, Kind::SpinEnd { lock }),
                ] {
                    let ts = self.stamp(cpu, ts);
                    self.windows(ts);
                    let r = Rec {
                        cpu,
                        ts,
                        by: &self.tasks[curr as usize],
                        kind,
                    };
                    send(&mut self.outs, &r);
                }
            }
            KEvent::Dsq {
                cpu,
                curr,
                ts,
                p,
                op,
                dsq,
            } => {
                self.ensure(p);
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let r = Rec {
                    cpu,
                    ts,
                    by: &self.tasks[curr as usize],
                    kind: Kind::Dsq {
                        p: &self.tasks[p as usize],
                        op,
                        dsq,
                    },
                };
                send(&mut self.outs, &r);
            }
            KEvent::Ipi {
                cpu,
                curr,
                ts,
                target,
            } => {
                let ts = self.stamp(cpu, ts);
                self.windows(ts);
                let r = Rec {
                    cpu,
                    ts,
                    by: &self.tasks[curr as usize],
                    kind: Kind::Ipi { target },
                };
                send(&mut self.outs, &r);
            }
        }
    }

    fn advance(&mut self, now: Time) {
        for a in &mut self.outs {
            if a.open && !a.closed {
                a.out.advance(now);
            }
        }
    }

    fn finish(&mut self, end: Time) -> std::io::Result<Vec<OutputSummary>> {
        self.windows(end);
        let mut v = Vec::new();
        for a in &mut self.outs {
            if !a.open {
                // The window never opened: an empty output still gets its header.
                let running: Vec<&TaskInfo> =
                    self.curr.iter().map(|&c| &self.tasks[c as usize]).collect();
                a.out.begin(a.window.start.min(end), &[], &running);
            }
            v.push(a.out.finish(a.window.end.min(end))?);
        }
        Ok(v)
    }
}
