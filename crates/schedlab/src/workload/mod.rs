//! Workloads: the era's benchmarks as task programs, one file each, one ordered registry.
//!
//! A workload gives the program of the first task (init, pid 1), which sets the benchmark
//! up with system calls — forks, pipes, sockets — exactly as the original program did, and
//! computes its result from what the programs recorded. Setup (forking, creating channels)
//! is simulated but, as in the originals, outside the timed interval.

pub mod bw_pipe;
pub mod chat;
pub mod hackbench;
pub mod lat_ctx;
pub mod lat_pipe;
pub mod lat_proc;
pub mod loop_yield;
pub mod mix;
pub mod mkbench;
pub mod netperf;
pub mod reflex;
pub mod rtapp;
pub mod schbench;
pub mod sched_yield;
pub mod synthetic;
pub mod tbench;
pub mod toolkit;
pub mod window;

use crate::engine::{Time, SEC};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{self, ParamSpec, Params, Spec, SpecError};

use crate::kernel::abi::{Program, Record};

/// A benchmark.
pub trait Workload: Send {
    /// The program of init (pid 1).
    fn root(&self) -> Box<dyn Program>;

    /// The result, as the original benchmark reported it.
    fn result(&self, rec: &Record, k: &Kernel) -> Result<Metric, String>;

    /// Simulated time after which the run is abandoned.
    fn limit_ns(&self) -> Time {
        3600 * SEC
    }

    /// Values the workload derived for parameters given as `auto`, to show in reports.
    fn resolved(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// What the workload certainly needs of the kernel's limits at once (a lower bound),
    /// so that a run the kernel would refuse stops before it starts, naming the limit —
    /// rather than after a long setup (e.g. thousands of forks competing with yielders).
    fn needs(&self) -> Needs {
        Needs::default()
    }
}

pub use crate::kernel::limits::Needs;

/// Constructor of a workload from validated parameters.
pub type Builder = fn(&Params, &Machine) -> Result<Box<dyn Workload>, SpecError>;

/// A registered workload.
pub struct WorkloadInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// One line for `schedlab list workloads`.
    pub about: &'static str,
    /// Small instances: specs of quick runs (a fraction of a second each, under any
    /// policy), which the tests run under every policy. The first is the benchmark scaled
    /// down; any others exercise its modes.
    pub small: &'static [&'static str],
    /// Result metric and unit, for the listing.
    pub metric: &'static str,
    /// Parameters.
    pub params: &'static [ParamSpec],
    /// Constructor from validated parameters.
    pub build: Builder,
}

/// The registry, in `schedlab list workloads` order.
pub static WORKLOADS: &[WorkloadInfo] = &[
    reflex::INFO,
    chat::INFO,
    hackbench::INFO,
    lat_pipe::INFO,
    bw_pipe::INFO,
    lat_ctx::INFO,
    mkbench::INFO,
    tbench::INFO,
    loop_yield::INFO,
    sched_yield::INFO,
    schbench::INFO,
    netperf::INFO,
    rtapp::INFO,
    lat_proc::INFO,
    mix::INFO,
    // The simulator's own stress load stays last.
    synthetic::INFO,
];

/// Build the workload named by `spec`.
pub fn build(spec: &Spec, machine: &Machine) -> Result<(Box<dyn Workload>, Params), SpecError> {
    let info = WORKLOADS
        .iter()
        .find(|w| w.name == spec.name)
        .ok_or_else(|| {
            let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
            SpecError::unknown("workload", &spec.name, &names)
        })?;
    let mut params = spec::resolve("workload", spec, info.params)?;
    let w = (info.build)(&params, machine)?;
    for (k, v) in w.resolved() {
        params.set(k, v);
    }
    Ok((w, params))
}

/// A workload's result, as the original benchmark reported it.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct Metric {
    /// Name, e.g. `us_per_round`.
    pub metric: String,
    /// Value.
    pub value: f64,
    /// Unit, e.g. `us`.
    pub unit: String,
    /// `lower` or `higher`.
    pub better: String,
    /// What the benchmark reports beside its figure (rt-app: per-thread rows), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// The text the original tool prints for this result, where the workload stands for
    /// a tool whose output its users read (hackbench: rt-tests' or `perf bench`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// A metric value in the unit of the original benchmark.
pub fn metric(name: &str, value: f64, unit: &str, better: &str) -> Metric {
    Metric {
        metric: name.into(),
        value,
        unit: unit.into(),
        better: better.into(),
        details: None,
        output: None,
    }
}

/// Time between the first `start` and the last `end` mark.
pub fn interval(rec: &Record, start: &str, end: &str) -> Result<Time, String> {
    let s = rec
        .first(start)
        .ok_or_else(|| format!("the workload never reached '{start}'"))?;
    let e = rec
        .last(end)
        .ok_or_else(|| format!("the workload never reached '{end}'"))?;
    if e <= s {
        return Err(format!(
            "empty timed interval ({start} at {s} ns, {end} at {e} ns)"
        ));
    }
    Ok(e - s)
}

/// Helpers for the workloads' own tests.
#[cfg(test)]
pub(crate) mod tests {
    use crate::{RunConfig, Simulation};

    /// Run `spec` under `fifo` on `cpus` CPUs of piii700-1m, seed 1, to completion.
    pub(crate) fn run(cpus: usize, spec: &str) -> Simulation {
        let mut s = Simulation::new(RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(cpus),
            policy: "fifo".into(),
            workload: spec.into(),
            seed: 1,
        })
        .unwrap();
        s.run(&mut |_, _| {}).unwrap();
        s
    }
}
