//! A `perf sched latency` summary (traces.md §5.1, §5.3): per task, or per task group
//! (tasks whose comms agree up to the first `:`; perf merges by comm), the time on CPU,
//! the number of scheduling delays measured, their mean and the worst one with its start
//! and end. A delay runs from the moment a task became runnable — woken, forked, or
//! switched out while runnable (preempted or yielding) — to its switch-in.
//!
//! Memory is one entry per task, whatever the run's length.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use super::{state, Kind, Output, OutputSummary, Rec, TaskInfo};
use crate::engine::Time;

/// How rows are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// One row per task group (comm up to `:`), `name:(N)` when N tasks are merged.
    Group,
    /// One row per task, `comm:pid`.
    Pid,
}

/// One row.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Row {
    /// `comm:pid`, `group:(N)`, or the group's name for a single task.
    pub task: String,
    /// Tasks merged.
    pub tasks: u64,
    /// Time on CPU, ns.
    pub runtime_ns: Time,
    /// Delays measured (switch-ins of a runnable task).
    pub count: u64,
    /// Mean delay, ns.
    pub avg_delay_ns: f64,
    /// Worst delay, ns.
    pub max_delay_ns: Time,
    /// When the worst delay began (the task became runnable), ns.
    pub max_delay_start_ns: Time,
    /// When it ended (the task was switched in), ns.
    pub max_delay_end_ns: Time,
    #[serde(skip)]
    sum_delay: u128,
}

/// The summary: rows sorted as perf sorts them (mean delay, worst delay, count, runtime,
/// all descending; then by name), and the total.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Rows.
    pub rows: Vec<Row>,
    /// Runtime of all rows, ns.
    pub total_runtime_ns: Time,
    /// Delays of all rows.
    pub total_count: u64,
}

#[derive(Default)]
struct TaskAcc {
    pid: u32,
    comm: String,
    on_since: Option<Time>,
    runnable_since: Option<Time>,
    row: Row,
}

/// The latency summary as an output; [`Latency::summary`] after the run.
pub struct Latency {
    by: By,
    tasks: BTreeMap<u32, TaskAcc>,
    out: Arc<Mutex<Summary>>,
}

impl Latency {
    /// A summary merged `by`; the result appears in the returned handle at the end.
    pub fn new(by: By) -> (Latency, Arc<Mutex<Summary>>) {
        let out = Arc::new(Mutex::new(Summary::default()));
        (
            Latency {
                by,
                tasks: BTreeMap::new(),
                out: out.clone(),
            },
            out,
        )
    }

    fn acc(&mut self, t: &TaskInfo) -> &mut TaskAcc {
        let e = self.tasks.entry(t.pid).or_default();
        e.pid = t.pid;
        if e.comm != t.comm {
            e.comm.clone_from(&t.comm);
        }
        e
    }

    fn runnable(&mut self, t: &TaskInfo, ts: Time) {
        if t.pid == 0 {
            return;
        }
        let a = self.acc(t);
        if a.on_since.is_none() && a.runnable_since.is_none() {
            a.runnable_since = Some(ts);
        }
    }
}

impl Output for Latency {
    fn begin(&mut self, ts: Time, tasks: &[&TaskInfo], running: &[&TaskInfo]) {
        for t in tasks {
            if t.runnable {
                self.runnable(t, ts);
            }
        }
        for t in running {
            if t.pid != 0 {
                let a = self.acc(t);
                a.runnable_since = None;
                a.on_since = Some(ts);
            }
        }
    }

    fn record(&mut self, r: &Rec<'_>) {
        let ts = r.ts;
        match r.kind {
            Kind::Switch {
                prev,
                prev_state,
                next,
            } => {
                if prev.pid != 0 {
                    let a = self.acc(prev);
                    if let Some(s) = a.on_since.take() {
                        a.row.runtime_ns += ts - s;
                    }
                    if prev_state == state::RUNNABLE || prev_state == state::PREEMPTED {
                        a.runnable_since = Some(ts);
                    }
                }
                if next.pid != 0 {
                    let a = self.acc(next);
                    a.on_since = Some(ts);
                    if let Some(s) = a.runnable_since.take() {
                        let d = ts - s;
                        let row = &mut a.row;
                        row.count += 1;
                        row.sum_delay += u128::from(d);
                        if d > row.max_delay_ns || row.count == 1 {
                            row.max_delay_ns = d;
                            row.max_delay_start_ns = s;
                            row.max_delay_end_ns = ts;
                        }
                    }
                }
            }
            Kind::Waking { p, .. } | Kind::Wakeup { p, .. } => self.runnable(p, ts),
            _ => {}
        }
    }

    fn finish(&mut self, end: Time) -> std::io::Result<OutputSummary> {
        let mut merged: BTreeMap<String, Row> = BTreeMap::new();
        for a in self.tasks.values_mut() {
            if let Some(s) = a.on_since.take() {
                a.row.runtime_ns += end.saturating_sub(s);
            }
            let key = match self.by {
                By::Group => super::group_of(&a.comm).to_string(),
                By::Pid => format!("{}:{}", a.comm, a.pid),
            };
            let m = merged.entry(key.clone()).or_default();
            m.task = key;
            m.tasks += 1;
            m.runtime_ns += a.row.runtime_ns;
            m.count += a.row.count;
            m.sum_delay += a.row.sum_delay;
            if a.row.count > 0 && (a.row.max_delay_ns > m.max_delay_ns || m.count == a.row.count) {
                m.max_delay_ns = a.row.max_delay_ns;
                m.max_delay_start_ns = a.row.max_delay_start_ns;
                m.max_delay_end_ns = a.row.max_delay_end_ns;
            }
        }
        let mut rows: Vec<Row> = merged
            .into_values()
            .map(|mut r| {
                r.avg_delay_ns = if r.count > 0 {
                    crate::report::round(r.sum_delay as f64 / r.count as f64)
                } else {
                    0.0
                };
                if self.by == By::Group && r.tasks > 1 {
                    r.task = format!("{}:({})", r.task, r.tasks);
                }
                r
            })
            .collect();
        rows.sort_by(|a, b| {
            b.avg_delay_ns
                .total_cmp(&a.avg_delay_ns)
                .then(b.max_delay_ns.cmp(&a.max_delay_ns))
                .then(b.count.cmp(&a.count))
                .then(b.runtime_ns.cmp(&a.runtime_ns))
                .then(a.task.cmp(&b.task))
        });
        let s = Summary {
            total_runtime_ns: rows.iter().map(|r| r.runtime_ns).sum(),
            total_count: rows.iter().map(|r| r.count).sum(),
            rows,
        };
        let n = s.rows.len() as u64;
        *self.out.lock().expect("latency summary") = s;
        Ok(OutputSummary {
            what: "latency summary".into(),
            bytes: 0,
            events: n,
            switches: 0,
        })
    }
}

impl Summary {
    /// The table as `perf sched latency` (6.12) prints it, with exact simulated times.
    pub fn to_text(&self) -> String {
        let rule = format!(" {}\n", "-".repeat(140));
        let mut o = String::new();
        o += &rule;
        o += "  Task                  |   Runtime ms  |  Count   | Avg delay ms    | Max delay ms    | Max delay start           | Max delay end          |\n";
        o += &rule;
        let ms = |ns: f64| ns / 1e6;
        let s = |ns: Time| ns as f64 / 1e9;
        for r in &self.rows {
            let _ = writeln!(
                o,
                "  {:<22}|{:11.3} ms |{:9} | avg:{:9.3} ms | max:{:9.3} ms | max start: {:12.6} s | max end: {:12.6} s",
                r.task,
                ms(r.runtime_ns as f64),
                r.count,
                ms(r.avg_delay_ns),
                ms(r.max_delay_ns as f64),
                s(r.max_delay_start_ns),
                s(r.max_delay_end_ns)
            );
        }
        o += &rule;
        let _ = writeln!(
            o,
            "  TOTAL:                |{:11.3} ms |{:9} |",
            ms(self.total_runtime_ns as f64),
            self.total_count
        );
        o += &format!(" {}\n", "-".repeat(48));
        o
    }
}
