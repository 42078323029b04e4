//! `loop_yield` (Ingo Molnar's O(1) announcement, LKML 4 Jan 2002): N processes calling
//! `sched_yield()` in a tight loop; the figure is the system-wide context-switch rate that
//! `vmstat` prints (benchmarks.md §5b).
//!
//! # The original
//!
//! A process that loops on `sched_yield()` forever; N instances run at once (4 on a 2-way,
//! 16 on an 8-way); the figure is the `cs` column of `vmstat 5` — context switches per
//! second, system-wide. Under 2.4 a yield enters `schedule()` and scans the whole run queue
//! under `runqueue_lock`; under O(1) the yielder goes to its CPU's expired array.
//!
//! # The model
//!
//! 1. init forks `instances` processes, each `loop { sched_yield(); }`.
//! 2. init then plays `vmstat`: it sleeps `warmup_ms`, samples the `ctxt` counter
//!    ([`Env::ctxt`], all context switches idle included, as `/proc/stat` shows it) and
//!    the time, sleeps `duration_ms`, samples again and ends the run.
//! 3. Result: (ctxt₁ − ctxt₀) / (t₁ − t₀), switches per second.
//!
//! The original ran forever; the model's window is \[INFERRED\]: `duration_ms` long enough
//! for a steady rate (many ticks), short enough to simulate, after a `warmup_ms` that lets
//! start-up placement and the first load-balancing passes settle (O(1) -D1 rebalances every
//! 250 ms), as a `vmstat` sample taken well into a run would. Like the real `vmstat`,
//! the sampler is a task on the machine: its own two switches per sample are counted, and
//! it has to win a CPU from the yielders to take its sample.
//!
//! What it counts: `ctxt_start`, `ctxt_end` (the samples), `instances` (forked).

use crate::engine::{Time, MS};
use crate::kernel::abi::{errno_name, program, Env, Op, Program, Record};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{step, Spawn};
use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `loop_yield`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        instances: u64 = int("16", 1, 30000).help("yielding processes (Molnar: 4 on a 2-way, 16 on an 8-way)")
            .source("benchmarks.md §5b");
        duration_ms: u64 = int("500", 1, 3_600_000).help("sampling window, ms (the original ran forever; vmstat 5 sampled 5 s)")
            .unit("ms")
            .source("benchmarks.md §5b");
        warmup_ms: u64 = int("300", 0, 3_600_000).help("time after the forks before the first sample, ms")
            .unit("ms")
            .source("benchmarks.md §5b");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "loop_yield",
    about: "Molnar's loop_yield: N processes in tight sched_yield() loops, vmstat cs rate",
    small: &["loop_yield:instances=5,duration_ms=20,warmup_ms=10"],
    metric: "switches/s",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(LoopYield {
        instances: o.instances,
        duration: o.duration_ms * MS,
        warmup: o.warmup_ms * MS,
    }))
}

/// The loop_yield workload.
pub struct LoopYield {
    instances: u64,
    duration: Time,
    warmup: Time,
}

/// init: the forks, then `vmstat`.
struct Vmstat {
    phase: u8,
    yielders: Spawn,
    duration: Time,
    warmup: Time,
}

impl Program for Vmstat {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                0 => {
                    step!(self
                        .yielders
                        .step(env, |_, _| program(|_env: &mut Env<'_>| Op::Yield)));
                    env.count("instances", self.yielders.spawned());
                }
                1 if self.warmup > 0 => {
                    self.phase += 1;
                    return Op::Sleep { ns: self.warmup };
                }
                1 => {}
                2 => {
                    env.mark("start");
                    env.count("ctxt_start", env.ctxt);
                    self.phase += 1;
                    return Op::Sleep { ns: self.duration };
                }
                _ => {
                    env.mark("end");
                    env.count("ctxt_end", env.ctxt);
                    env.stop();
                    return Op::Exit;
                }
            }
            self.phase += 1;
        }
    }
}

impl Workload for LoopYield {
    fn needs(&self) -> super::Needs {
        super::Needs {
            tasks: self.instances + 1,
            files: 0,
        }
    }

    fn root(&self) -> Box<dyn Program> {
        Box::new(Vmstat {
            phase: 0,
            yielders: Spawn::forks(self.instances, |i, ret| {
                format!(
                    "loop_yield: fork() of instance {} refused ({})",
                    i + 1,
                    errno_name(ret)
                )
            }),
            duration: self.duration,
            warmup: self.warmup,
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        let cs = rec.count("ctxt_end") - rec.count("ctxt_start");
        Ok(metric(
            "switches_per_s",
            cs as f64 / (ns as f64 / 1e9),
            "switches/s",
            "higher",
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::Simulation;

    use crate::workload::tests::run;

    #[test]
    fn the_rate_is_measured_over_the_window() {
        let s = run(2, "loop_yield:instances=4,duration_ms=30,warmup_ms=10");
        assert_eq!(s.k.rec.count("instances"), 4);
        assert_eq!(s.k.stats.forks, 4);
        let start = s.k.rec.first("start").unwrap();
        let end = s.k.rec.last("end").unwrap();
        // nanosleep rounds up to ticks and adds one: the window is 30-50 ms at HZ=100.
        assert!(end - start >= 30_000_000 && end - start <= 50_000_000);
        let cs = s.k.rec.count("ctxt_end") - s.k.rec.count("ctxt_start");
        assert!(cs > 1000, "{cs} switches");
        let r = s.report().unwrap();
        assert_eq!(r.result.metric, "switches_per_s");
        // At most one switch per ~µs per CPU.
        assert!(
            r.result.value > 1e4 && r.result.value < 4e6,
            "{}",
            r.result.value
        );
    }

    #[test]
    fn a_longer_window_counts_proportionally_more_switches() {
        let a = run(2, "loop_yield:instances=4,duration_ms=20,warmup_ms=10");
        let b = run(2, "loop_yield:instances=4,duration_ms=80,warmup_ms=10");
        let cs = |s: &Simulation| s.k.rec.count("ctxt_end") - s.k.rec.count("ctxt_start");
        let w = |s: &crate::Simulation| {
            (s.k.rec.last("end").unwrap() - s.k.rec.first("start").unwrap()) as f64
        };
        assert!(w(&b) > 2.5 * w(&a));
        let ratio = cs(&b) as f64 / cs(&a) as f64 / (w(&b) / w(&a));
        assert!(ratio > 0.8 && ratio < 1.25, "switch rate ratio {ratio}");
    }
}
