//! `mix`: workloads run at once on one machine — a benchmark measured under the load of
//! others, as one runs `rt-app` beside `hackbench` or `lat_ctx` beside a yield loop.
//!
//! `mix:A+B+…` runs every component from the start. The first, A, is measured: the run's
//! result is A's, and the run ends when A's first program exits or A stops its
//! measurement. The others are load: each runs once, as it would alone, and its own
//! result (when it finished its measurement) is reported beside A's in `details`.
//!
//! Design: init forks one child per background component, which plays that component's
//! first program, then plays A's first program itself (so A's setup runs in pid 1, as it
//! does alone). Each component keeps its own [`Record`]: every program of a component —
//! its first and all it forks, clones or execs — is wrapped so that its marks and counts
//! go to the component's record, so two components naming a mark alike do not mix.
//!
//! Invariants: a background component that stops its measurement ends its own tasks (each
//! exits the next time it would run user code), not the run; an error in any component
//! ends the run, naming the component.

use std::sync::{Arc, Mutex};

use crate::engine::Time;
use crate::kernel::abi::{Env, Op, Program, Record};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, Spec, SpecError};
use crate::workload::Metric;

use super::{Needs, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `mix`.
    pub struct Options in PARAMS {
        of: String = text("rtapp:@periodic+loop_yield:instances=2,duration_ms=5000")
            .help("workloads joined by '+', each NAME:key=value,...; the first is measured, the others are load")
            .source("schedlab");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "mix",
    about: "workloads at once: the first measured under the load of the others",
    small: &[
        "mix:lat_pipe:rounds=200,warmup=20+loop_yield:instances=2,duration_ms=50,warmup_ms=0",
        "mix:hackbench:groups=1,loops=5,fds=4+hackbench:groups=1,loops=50,fds=4",
    ],
    metric: "the first workload's",
    params: PARAMS,
    build,
};

/// The components of `of`, as specs, checked: two or more, none itself a mix.
pub fn components(of: &str) -> Result<Vec<Spec>, SpecError> {
    let parts: Vec<&str> = of.split('+').map(str::trim).collect();
    let malformed = |problem: String| SpecError::Malformed {
        problem,
        text: format!("mix:{of}"),
        expected: "mix:NAME[:key=value,...]+NAME[:key=value,...][+...]",
    };
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return Err(malformed(
            "a mix needs two workloads or more joined by '+'".into(),
        ));
    }
    let specs = parts
        .iter()
        .map(|p| Spec::parse("workload", p))
        .collect::<Result<Vec<_>, _>>()?;
    if specs.iter().any(|s| s.name == INFO.name) {
        return Err(malformed("a mix cannot contain a mix".into()));
    }
    Ok(specs)
}

fn build(p: &Params, m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    let mut parts = Vec::new();
    for spec in components(&o.of)? {
        let (w, _) = super::build(&spec, m)?;
        parts.push(Component {
            name: spec.to_string(),
            workload: spec.name.clone(),
            w,
            rec: Arc::default(),
        });
    }
    Ok(Box::new(Mix { parts }))
}

struct Component {
    /// The component's spec, as the user wrote it (normalised).
    name: String,
    /// Its workload's name: the comm of its tasks that have none of their own.
    workload: String,
    w: Box<dyn Workload>,
    rec: Arc<Mutex<Record>>,
}

struct Mix {
    /// The measured component first.
    parts: Vec<Component>,
}

/// A program of one component: its marks and counts go to the component's record.
struct Scoped {
    inner: Box<dyn Program>,
    rec: Arc<Mutex<Record>>,
    /// The component's name, for its errors.
    name: Arc<str>,
    /// The component's first program: named after its workload where the program has no
    /// comm, so a trace (and `--latency`) tells the components apart; the programs it
    /// starts keep their own comm or inherit this one, as fork() does.
    comm: Option<Arc<str>>,
    /// Of the measured component (its stop ends the run) or of a load (its stop ends it).
    measured: bool,
    /// The measured component's first program: its exit ends the run.
    first: bool,
    /// The first program runs in init, whose `wait()` also reaps the loads' processes
    /// (init forked them, and orphans are re-parented to it): the pids it forked or
    /// cloned itself, and whether its last call was a fork, a clone or a wait.
    own: std::collections::BTreeSet<i64>,
    last: Last,
}

/// The first program's last system call, as far as reaping goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    Other,
    Spawn,
    Wait,
}

impl Scoped {
    fn wrap(&self, inner: Box<dyn Program>) -> Box<dyn Program> {
        Box::new(Scoped {
            inner,
            rec: Arc::clone(&self.rec),
            name: Arc::clone(&self.name),
            comm: None,
            measured: self.measured,
            first: false,
            own: Default::default(),
            last: Last::Other,
        })
    }
}

impl Program for Scoped {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        let mut mine = self.rec.lock().expect("a component's record");
        if !self.measured && mine.stop {
            // This load has measured what it runs for: its tasks leave, the run goes on.
            return Op::Exit;
        }
        if self.first {
            match self.last {
                Last::Spawn if env.ret > 0 => {
                    self.own.insert(env.ret);
                }
                // A load's process reaped by init: not the program's child; wait again.
                Last::Wait if env.ret > 0 && !self.own.contains(&env.ret) => return Op::Wait,
                _ => {}
            }
        }
        std::mem::swap(env.rec, &mut *mine);
        let op = self.inner.next(env);
        if self.first {
            self.last = match op {
                Op::Fork { .. } | Op::Clone { .. } => Last::Spawn,
                Op::Wait => Last::Wait,
                _ => Last::Other,
            };
        }
        std::mem::swap(env.rec, &mut *mine);
        let (error, stop) = (mine.error.clone(), mine.stop);
        drop(mine);
        if let Some(e) = error {
            env.fail(format!("{} (in the mix): {e}", self.name));
        }
        if self.measured && (stop || (self.first && matches!(op, Op::Exit))) {
            env.stop();
        }
        match op {
            Op::Fork { child } => Op::Fork {
                child: self.wrap(child),
            },
            Op::Clone { child } => Op::Clone {
                child: self.wrap(child),
            },
            Op::Exec { program } => Op::Exec {
                program: self.wrap(program),
            },
            op => op,
        }
    }

    fn comm(&self) -> Option<String> {
        self.inner
            .comm()
            .or_else(|| self.comm.as_deref().map(String::from))
    }
}

/// Init: fork each load's first program, then play the measured one's.
struct Root {
    loads: Vec<Box<dyn Program>>,
    measured: Box<dyn Program>,
    forked: bool,
}

impl Program for Root {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        if let Some(child) = self.loads.pop() {
            return Op::Fork { child };
        }
        if !std::mem::replace(&mut self.forked, true) {
            // The measured program starts as it would alone: no system call behind it.
            env.ret = 0;
        }
        self.measured.next(env)
    }

    fn comm(&self) -> Option<String> {
        self.measured.comm()
    }
}

impl Mix {
    fn scoped(&self, i: usize) -> Box<dyn Program> {
        let c = &self.parts[i];
        Box::new(Scoped {
            inner: c.w.root(),
            rec: Arc::clone(&c.rec),
            name: c.name.as_str().into(),
            comm: Some(c.workload.as_str().into()),
            measured: i == 0,
            first: i == 0,
            own: Default::default(),
            last: Last::Other,
        })
    }
}

impl Workload for Mix {
    fn root(&self) -> Box<dyn Program> {
        for c in &self.parts {
            *c.rec.lock().expect("a component's record") = Record::default();
        }
        // Popped from the end: loads fork in the order given.
        let loads = (1..self.parts.len())
            .rev()
            .map(|i| self.scoped(i))
            .collect();
        Box::new(Root {
            loads,
            measured: self.scoped(0),
            forked: false,
        })
    }

    fn result(&self, _rec: &Record, k: &Kernel) -> Result<Metric, String> {
        let first = &self.parts[0];
        let mut m = first
            .w
            .result(&first.rec.lock().expect("a component's record"), k)?;
        let loads: Vec<serde_json::Value> = self.parts[1..]
            .iter()
            .map(|c| {
                let rec = c.rec.lock().expect("a component's record");
                match c.w.result(&rec, k) {
                    Ok(r) => serde_json::json!({
                        "workload": c.name, "metric": r.metric, "value": r.value, "unit": r.unit,
                    }),
                    Err(why) => serde_json::json!({ "workload": c.name, "unfinished": why }),
                }
            })
            .collect();
        let mut details = serde_json::json!({ "measured": first.name, "load": loads });
        if let Some(d) = m.details.take() {
            details["measured_details"] = d;
        }
        m.details = Some(details);
        Ok(m)
    }

    fn limit_ns(&self) -> Time {
        self.parts[0].w.limit_ns()
    }

    fn needs(&self) -> Needs {
        self.parts.iter().fold(Needs::default(), |a, c| {
            let n = c.w.needs();
            Needs {
                tasks: a.tasks + n.tasks,
                files: a.files.max(n.files),
            }
        })
    }
}
