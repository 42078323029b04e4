//! schedlab-native: the schedlab workloads as real processes on this host.
//!
//! `schedlab native WORKLOAD[:key=value,...]` runs hackbench, lat_pipe, bw_pipe, lat_ctx,
//! reflex, chat, loop_yield, sched_yield or lat_proc for real — processes via `fork` or
//! threads, pipes, AF_UNIX socketpairs, TCP on 127.0.0.1 — with the parameters and the
//! result metric of the simulated workload, and can put the real tools beside it
//! (`--compare`: rt-tests `hackbench`, `perf bench sched messaging|pipe`).
//!
//! Workflow:
//!
//! 1. [`parse`] checks the spec with `schedlab::spec`, as `schedlab run` does.
//! 2. [`run`] supervises each repetition ([`runner::supervise`]): the workload runs in a
//!    leader process in its own process group; the supervisor kills and reaps the group on
//!    failure, timeout or interrupt, so nothing is left behind.
//! 3. The result of the median repetition becomes a [`report::NativeReport`], the JSON
//!    shape of `schedlab run` with the host described instead of a preset.
//!
//! Not modelled / future work (`--pin` exists: see [`host::pin`]): `SCHED_FIFO` (rt-tests `-F`), lmbench's
//! repeat-until-stable harness (use `--runs`).
#![deny(missing_docs)]

pub mod compare;
pub mod host;
pub mod limits;
pub mod measure;
pub mod report;
pub mod runner;
pub mod sys;
pub mod targets;
pub mod trace;
pub mod validate;
pub mod workload;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use schedlab::spec::{self, Params, Spec, SpecError};

pub use report::NativeReport;
pub use runner::{RunError, RunOptions};
pub use workload::{NativeWorkload, NATIVE_WORKLOADS};

/// Stack size of worker threads (hackbench uses `PTHREAD_STACK_MIN`; Rust code needs a
/// little more).
pub const THREAD_STACK: usize = 128 * 1024;

/// The pause before each native repetition. A run leaves its CPUs' blocked load and
/// utilisation behind (PELT, half-life 32 ms) and the deferred work of its exits; the next
/// run's fork placement reads them (`find_idlest_group` counts an idle CPU with a high
/// blocked utilisation as fully busy). Eight half-lives bring them to 1/256, so each
/// repetition starts on a machine at rest, as a simulation does. Measured on a 2-vCPU
/// guest, lat_pipe beside two yield loops: back to back, 5.0 to 30 us a round trip as the
/// pipe pair was forked alone, beside a loop or across the CPUs; after the pause, one or
/// two of those placements (5.0 or 6.3 us; in `validate`, 6.3–6.7 us every run).
pub const SETTLE: Duration = Duration::from_millis(256);

/// A native run as asked for.
#[derive(Clone, Default)]
pub struct NativeConfig {
    /// `NAME[:key=value,...]`.
    pub workload: String,
    /// Stop each repetition after this long.
    pub timeout: Option<Duration>,
    /// Repetitions (the median is reported); 0 counts as 1.
    pub runs: usize,
    /// Interrupt flag (see [`runner::interrupt_flag`]).
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// Why a native run failed.
#[derive(Clone, Debug, PartialEq)]
pub enum NativeError {
    /// Bad workload specification.
    Spec(SpecError),
    /// The run failed, timed out or was interrupted.
    Run(RunError),
}

impl std::fmt::Display for NativeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NativeError::Spec(e) => write!(f, "{e}"),
            NativeError::Run(e) => write!(f, "native run failed: {e}"),
        }
    }
}

impl std::error::Error for NativeError {}

/// Look up and validate a workload spec.
pub fn parse(text: &str) -> Result<(&'static NativeWorkload, Spec, Params), SpecError> {
    let s = Spec::parse("workload", text)?;
    let w = NATIVE_WORKLOADS
        .iter()
        .find(|w| w.name == s.name)
        .ok_or_else(|| {
            let names: Vec<&str> = NATIVE_WORKLOADS.iter().map(|w| w.name).collect();
            SpecError::unknown("native workload", &s.name, &names)
        })?;
    let mut p = spec::resolve("workload", &s, w.params)?;
    (w.prepare)(&mut p)?;
    Ok((w, s, p))
}

/// One supervised repetition.
pub fn run_once(
    w: &NativeWorkload,
    p: &Params,
    opts: &RunOptions,
) -> Result<report::OneRun, RunError> {
    std::thread::sleep(SETTLE);
    let before = host::stat();
    let run = w.run;
    let sup = runner::supervise(opts, THREAD_STACK, |ctx| run(p, ctx))?;
    let after = host::stat();
    Ok(report::OneRun {
        outcome: sup.outcome,
        wall_ns: sup.wall_ns,
        stat: host::delta(&before, &after),
    })
}

/// Run `cfg.runs` repetitions and report the median one.
pub fn run(cfg: &NativeConfig) -> Result<NativeReport, NativeError> {
    let (w, _, p) = parse(&cfg.workload).map_err(NativeError::Spec)?;
    // Nothing is forked for a run the host's limits would stop.
    limits::check(&cfg.workload, w.name, &p).map_err(|e| NativeError::Run(RunError::Failed(e)))?;
    let opts = RunOptions {
        timeout: cfg.timeout,
        interrupt: cfg.interrupt.clone(),
    };
    let mut runs = Vec::new();
    for _ in 0..cfg.runs.max(1) {
        runs.push(run_once(w, &p, &opts).map_err(NativeError::Run)?);
    }
    Ok(report::build(w, &p, runs))
}

/// The median of `v` (mean of the middle two for an even count); 0 for none.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}
