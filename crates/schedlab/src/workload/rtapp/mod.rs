//! `rtapp`: an rt-app JSON file as a workload (`--workload rtapp:FILE.json`; the spec is
//! `../shared/spec/rtapp.md`, rt-app's own grammar).
//!
//! # Design
//!
//! The file is read by [`parse`] (json-c's leniencies, key order, workgen's repeated keys).
//! init plays rt-app's main thread: it clones one thread per instance of every task, in
//! file order (global index from 0, named `<task>-<index>`), notes the use-case start,
//! clones a watchdog that ends the run at `duration`, and opens the start barrier every
//! non-forked thread waits on. Each thread ([`thread::Thread`]) runs rt-app's loop over
//! phases and events (§5) with the simulated kernel's calls: `run` is CPU work, `runtime`
//! CPU work polled against the clock, `sleep` `nanosleep`, `timer` `clock_nanosleep` to an
//! absolute instant, mutexes, condition variables, barriers and semaphores pthread calls
//! on futexes (`kernel/usync.rs`), `yield` `sched_yield`, `fork` a `clone` of the named
//! task, `cpus` `sched_setaffinity`, `priority` `nice`. The run ends when every thread has
//! ended or at `duration` (−1: when every thread has ended, at most 10 s).
//!
//! # Results
//!
//! Per thread, what rt-app's log rows say (§8): rows (phase iterations completed), Σ`run`,
//! wake-up latency of its timers (mean, max), least slack, timers missed. The result is
//! the largest wake-up latency of any thread, µs, lower is better.
//!
//! # Not modelled (refused in one line, or listed as ignored in `result.details.ignored`)
//!
//! SCHED_FIFO/RR/DEADLINE/BATCH/IDLE (refused: the simulated kernel has no
//! `sched_setscheduler`); `pi_enabled` (no priority inheritance), `calibration`, logs,
//! `ftrace` markers, `nodes_membind`, uclamp and task groups (ignored). Timers fire on the
//! tick (no high-resolution timers in the modelled kernels).
//!
//! Determinism: every map is ordered; objects get ids in first-use order.

pub mod parse;
mod thread;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::engine::{Time, SEC};
use crate::kernel::abi::{program, Env, Op, Program, Record, SyncOp, ECHILD};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};

use super::{metric, Metric, Workload, WorkloadInfo};
use parse::{RtApp, TaskDef};
use thread::Thread;

crate::options! {
    /// The parameter of `rtapp`.
    pub struct Options in PARAMS {
        file: String = text("@periodic").help("the rt-app JSON file (@periodic, @prodcons, @phases: built-in examples)")
            .source("rtapp.md");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "rtapp",
    about: "an rt-app JSON file: tasks, phases, run/sleep/timer/lock/wait/barrier/fork events",
    small: &["rtapp:@prodcons", "rtapp:@periodic"],
    metric: "max wake-up latency, us",
    params: PARAMS,
    build,
};

/// The built-in examples (rtapp.md §9).
const BUILTIN: &[(&str, &str)] = &[
    ("@periodic", include_str!("examples/periodic.json")),
    ("@prodcons", include_str!("examples/prodcons.json")),
    ("@phases", include_str!("examples/phases.json")),
];

/// The text of `file`: a built-in example (`@name`) or a file read from disk.
pub fn file_text(file: &str) -> Result<String, String> {
    match BUILTIN.iter().find(|(n, _)| *n == file) {
        Some((_, t)) => Ok(t.to_string()),
        None => std::fs::read_to_string(file).map_err(|e| {
            format!("rtapp: cannot read {file}: {e} (give a path, or one of @periodic, @prodcons, @phases)")
        }),
    }
}

/// When `duration` is −1, the run stops here at the latest.
const UNBOUNDED_LIMIT_S: i64 = 10;

fn build(p: &Params, m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    let text = file_text(&o.file).map_err(SpecError::Invalid)?;
    let app = parse::parse(&text, m.cpus)
        .map_err(|e| SpecError::Invalid(format!("rtapp: {}: {e}", o.file)))?;
    let c = m.costs();
    Ok(Box::new(RtAppWorkload {
        app: Arc::new(app),
        mem_byte_ps: c.mem_line_ns * 1000 / c.line_bytes.max(1),
        shared: Mutex::new(None),
    }))
}

/// One log row (rtapp.md §8), times in ns and µs as rt-app prints them.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Phase index.
    pub phase: u32,
    /// Start of the iteration, ns.
    pub start: Time,
    /// End, ns.
    pub end: Time,
    /// Work done, µs of `run` (rt-app: loops).
    pub perf: u64,
    /// Wall time inside `run`/`runtime`, ns.
    pub run: Time,
    /// Σ configured `run`/`runtime`, µs.
    pub c_duration: u64,
    /// Σ configured timer periods, µs.
    pub c_period: u64,
    /// Slack at the (last) timer, µs.
    pub slack: i64,
    /// Σ wake-up latency of the timers, µs.
    pub wu_lat: u64,
    /// Timers used in the iteration.
    pub timers: u64,
    /// Timers already past when used.
    pub missed: u64,
}

/// A thread's summary over its rows.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct ThreadStats {
    name: String,
    task: String,
    rows: u64,
    run_us: u64,
    perf: u64,
    timers: u64,
    missed_timers: u64,
    wakeup_latency_mean_us: f64,
    wakeup_latency_max_us: u64,
    slack_min_us: Option<i64>,
    #[serde(skip)]
    wu_lat_sum: u64,
}

/// What the threads of one run share: rt-app's process memory.
pub struct Shared {
    t_zero: Time,
    start_barrier: u32,
    start_parties: u32,
    cumulative_slack: bool,
    ids: BTreeMap<(&'static str, String), u32>,
    timers: BTreeMap<String, Time>,
    barriers: BTreeMap<String, u32>,
    tasks: Vec<Arc<TaskDef>>,
    next_index: u32,
    forks: BTreeMap<String, u32>,
    live: u32,
    mem_byte_ps: u64,
    mem_buffer: u64,
    threads: BTreeMap<u32, ThreadStats>,
    ended_by_duration: bool,
}

impl Shared {
    /// The id of the `kind` object `name` (ids in first-use order).
    fn id(&mut self, kind: &'static str, name: &str) -> u32 {
        let n = self.ids.len() as u32;
        *self.ids.entry((kind, name.to_string())).or_insert(n)
    }

    /// A thread forked from task `name` (rt-app: at most 1024 forks of a task).
    fn fork(&mut self, name: &str, me: &Arc<Mutex<Shared>>) -> Option<Box<dyn Program>> {
        let task = self.tasks.iter().find(|t| t.name == name)?.clone();
        let k = self.forks.entry(name.to_string()).or_insert(0);
        if *k >= 1024 {
            return None;
        }
        let index = self.next_index;
        let thread_name = format!("{name}-{index}-{:04}", *k);
        *k += 1;
        self.next_index += 1;
        self.live += 1;
        Some(Box::new(Thread::new(
            index,
            thread_name,
            task,
            me.clone(),
            true,
        )))
    }

    /// Thread `index` finished an iteration.
    fn record(&mut self, index: u32, name: &str, task: &str, row: Row) {
        let s = self.threads.entry(index).or_insert_with(|| ThreadStats {
            name: name.to_string(),
            task: task.to_string(),
            ..ThreadStats::default()
        });
        s.rows += 1;
        s.run_us += row.run / 1000;
        s.perf += row.perf;
        s.timers += row.timers;
        s.missed_timers += row.missed;
        if row.timers > 0 {
            s.wu_lat_sum += row.wu_lat;
            s.wakeup_latency_max_us = s.wakeup_latency_max_us.max(row.wu_lat);
            s.slack_min_us = Some(s.slack_min_us.map_or(row.slack, |m| m.min(row.slack)));
        }
    }
}

/// The workload.
struct RtAppWorkload {
    app: Arc<RtApp>,
    mem_byte_ps: u64,
    shared: Mutex<Option<Arc<Mutex<Shared>>>>,
}

impl RtAppWorkload {
    fn duration_ns(&self) -> Time {
        let d = self.app.global.duration_s;
        let s = if d < 0 { UNBOUNDED_LIMIT_S } else { d };
        s as Time * SEC
    }

    /// The non-forked threads, in index order: (task, thread name).
    fn threads(&self) -> Vec<(Arc<TaskDef>, String)> {
        let mut v = Vec::new();
        for t in &self.app.tasks {
            let t = Arc::new(t.clone());
            for _ in 0..t.instance {
                let name = format!("{}-{}", t.name, v.len());
                v.push((t.clone(), name));
            }
        }
        v
    }
}

impl Workload for RtAppWorkload {
    fn root(&self) -> Box<dyn Program> {
        let threads = self.threads();
        let mut shared = Shared {
            t_zero: 0,
            start_barrier: 0,
            start_parties: threads.len() as u32 + 1,
            cumulative_slack: self.app.global.cumulative_slack,
            ids: BTreeMap::new(),
            timers: BTreeMap::new(),
            barriers: parse::barrier_parties(&self.app),
            tasks: self.app.tasks.iter().map(|t| Arc::new(t.clone())).collect(),
            next_index: threads.len() as u32,
            forks: BTreeMap::new(),
            live: threads.len() as u32,
            mem_byte_ps: self.mem_byte_ps,
            mem_buffer: 4 << 20,
            threads: BTreeMap::new(),
            ended_by_duration: false,
        };
        shared.start_barrier = shared.id("barrier", "\u{0}start");
        let shared = Arc::new(Mutex::new(shared));
        *self.shared.lock().expect("shared") = Some(shared.clone());
        let duration = self.duration_ns();
        let mut stage = 0usize;
        let mut spawned = 0usize;
        program(move |env: &mut Env<'_>| loop {
            match stage {
                // Create every thread (rt-app's main thread).
                0 => {
                    if spawned > 0 && env.ret < 0 {
                        env.fail(format!(
                            "rtapp: creating thread {} failed: {}",
                            threads[spawned - 1].1,
                            crate::kernel::abi::errno_name(env.ret)
                        ));
                        return Op::Exit;
                    }
                    if let Some((task, name)) = threads.get(spawned) {
                        spawned += 1;
                        let child = Thread::new(
                            spawned as u32 - 1,
                            name.clone(),
                            task.clone(),
                            shared.clone(),
                            false,
                        );
                        return Op::Clone {
                            child: Box::new(child),
                        };
                    }
                    stage = 1;
                }
                // The use case starts; the watchdog ends it at `duration`.
                1 => {
                    let t_zero = env.now;
                    shared.lock().expect("shared").t_zero = t_zero;
                    stage = 2;
                    let sh = shared.clone();
                    let mut slept = false;
                    return Op::Clone {
                        child: program(move |env: &mut Env<'_>| {
                            if !slept {
                                slept = true;
                                return Op::SleepUntil {
                                    at: t_zero + duration,
                                };
                            }
                            sh.lock().expect("shared").ended_by_duration = true;
                            env.stop();
                            Op::Exit
                        }),
                    };
                }
                2 => {
                    stage = 3;
                    let sh = shared.lock().expect("shared");
                    if sh.live == 0 {
                        env.stop();
                    }
                    return Op::Sync(SyncOp::Barrier {
                        id: sh.start_barrier,
                        parties: sh.start_parties,
                    });
                }
                _ => {
                    if env.ret == ECHILD && stage == 4 {
                        return Op::Exit;
                    }
                    stage = 4;
                    return Op::Wait;
                }
            }
        })
    }

    fn result(&self, _rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let guard = self.shared.lock().expect("shared");
        let sh = guard.as_ref().ok_or("rtapp: the run never started")?;
        let sh = sh.lock().expect("shared");
        let mut threads: Vec<ThreadStats> = sh.threads.values().cloned().collect();
        for t in &mut threads {
            if t.timers > t.missed_timers {
                t.wakeup_latency_mean_us = {
                    // To 0.01 µs: the log's figures are whole µs.
                    let mean = t.wu_lat_sum as f64 / (t.timers - t.missed_timers) as f64;
                    (mean * 100.0).round() / 100.0
                };
            }
        }
        let worst = threads
            .iter()
            .map(|t| t.wakeup_latency_max_us)
            .max()
            .unwrap_or(0);
        let mut m = metric("max_wakeup_latency_us", worst as f64, "us", "lower");
        m.details = Some(serde_json::json!({
            "threads": threads,
            "ended": if sh.ended_by_duration { "duration" } else { "every thread ended" },
            "ignored": self.app.ignored,
        }));
        Ok(m)
    }

    fn limit_ns(&self) -> Time {
        self.duration_ns() + 10 * SEC
    }

    fn needs(&self) -> super::Needs {
        super::Needs {
            tasks: self.threads().len() as u64 + 2,
            files: 0,
        }
    }
}
