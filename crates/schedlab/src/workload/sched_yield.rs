//! `sched_yield` (Bill Hartner's `sched_test_yield`, IBM LTC, posted to lse-tech Dec 2000):
//! N threads of one process loop on `sched_yield()`; the figure is microseconds per yield
//! (benchmarks.md §2 "Precursors", §5b).
//!
//! # The original
//!
//! N threads each call `sched_yield()` in a loop; the program reports microseconds per
//! yield, repeating until a Student-t 95 % interval is within 1 %. Kravetz's 8 × PIII 700
//! runs (Jan 2001) go from 16 to 4096 threads. Hartner warned that 2.4.0's
//! `sys_sched_yield` returns without calling `schedule()` when nothing else is runnable.
//!
//! # The model
//!
//! 1. init (the main thread) creates a "go" pipe and clones `threads` threads; each polls
//!    the pipe, then loops on `sched_yield()`, adding one to a counter in the process's
//!    shared memory after every completed call.
//! 2. The main thread writes "go" and waits in `wait()`. The threads time themselves
//!    ([`super::window`]): the first yield completed `warmup_ms` after "go" opens the
//!    window, the first one `duration_ms` later closes it and ends the run.
//! 3. Result: window × min(threads, CPUs) / yields in the window.
//!
//! **µs per yield** \[INFERRED\]: the CPU time one yield costs — elapsed time times the CPUs
//! the threads can occupy, divided by the yields done. Why: Kravetz's multi-queue column is
//! flat at ≈ 1.46 µs from 16 to 256 threads on 8 CPUs, the price of one yield (system call,
//! `schedule()`, switch) on one CPU; elapsed / total yields would be 8× smaller and time per
//! yield of one thread would grow with the thread count. The counters are shared memory of
//! the threads' one mm, read at no cost, as the original's per-thread counters were. The
//! measuring window replaces the Student-t loop; the warm-up lets the freshly cloned
//! threads (all on the parent's CPU) be spread by the policy's balancer first (O(1) -D1
//! rebalances every 250 ms).
//!
//! What it counts: `yields_start`, `yields_end` (the counter when the window opens and
//! closes), `threads` (cloned).

use crate::engine::{Time, MS};
use crate::kernel::abi::{errno_name, Env, Op, Program, Record};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{step, Arrive, Open, Spawn};
use super::window::Window;
use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `sched_yield`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        threads: u64 = int("16", 1, 30000).help("yielding threads (Kravetz: 16..4096)")
            .source("benchmarks.md §5b");
        duration_ms: u64 = int("500", 1, 3_600_000).help("measuring window, ms")
            .unit("ms")
            .source("benchmarks.md §5b");
        warmup_ms: u64 = int("300", 0, 3_600_000).help("time after go before the window opens, ms")
            .unit("ms")
            .source("benchmarks.md §5b");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "sched_yield",
    about: "Hartner's sched_test_yield: N threads of one process looping on sched_yield()",
    small: &["sched_yield:threads=5,duration_ms=20,warmup_ms=10"],
    metric: "us per yield",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(SchedYield {
        threads: o.threads,
        duration: o.duration_ms * MS,
        warmup: o.warmup_ms * MS,
    }))
}

/// Where the window records the yield counter.
const KEYS: [&str; 2] = ["yields_start", "yields_end"];

/// The sched_yield workload.
pub struct SchedYield {
    threads: u64,
    duration: Time,
    warmup: Time,
}

/// A yielding thread: wait for go, then yield forever, counting.
struct Yielder {
    start: Arrive,
    yielding: bool,
    window: Window,
}

impl Program for Yielder {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        step!(self.start.step(env));
        if self.yielding {
            self.window.done(env);
        }
        self.yielding = true;
        Op::Yield
    }
}

/// The main thread.
struct Main {
    phase: u8,
    /// The "go" pipe.
    pipe: Open,
    threads: Spawn,
    /// The yield counter and the measuring window.
    window: Window,
}

impl Program for Main {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                0 => step!(self.pipe.step(env)),
                1 => {
                    let (go, window) = (self.pipe.fds()[0], &self.window);
                    step!(self.threads.step(env, |_, _| {
                        Box::new(Yielder {
                            start: Arrive::go(go),
                            yielding: false,
                            window: window.clone(),
                        })
                    }));
                    env.count("threads", self.threads.spawned());
                }
                2 => {
                    self.window.go(env);
                    self.phase += 1;
                    return Op::Write {
                        fd: self.pipe.fds()[0] + 1,
                        len: 1,
                    };
                }
                _ => return Op::Wait,
            }
            self.phase += 1;
        }
    }
}

impl Workload for SchedYield {
    fn needs(&self) -> super::Needs {
        super::Needs {
            tasks: self.threads + 1,
            files: 2,
        }
    }

    fn root(&self) -> Box<dyn Program> {
        Box::new(Main {
            phase: 0,
            pipe: Open::pipes(1, |_, ret| {
                format!("sched_yield: pipe() failed ({})", errno_name(ret))
            }),
            threads: Spawn::clones(self.threads, |i, ret| {
                format!(
                    "sched_yield: clone() of thread {} refused ({})",
                    i + 1,
                    errno_name(ret)
                )
            }),
            window: Window::new(self.warmup, self.duration, KEYS),
        })
    }

    fn result(&self, rec: &Record, k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        let yields = Window::counted(rec, KEYS);
        if yields == 0 {
            return Err("sched_yield: no yield completed in the window".into());
        }
        let busy = self.threads.min(k.nr_cpus() as u64);
        Ok(metric(
            "us_per_yield",
            ns as f64 * busy as f64 / yields as f64 / 1000.0,
            "us",
            "lower",
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::Simulation;

    use crate::workload::tests::run;

    #[test]
    fn threads_of_one_mm_yield_in_the_window() {
        let s = run(4, "sched_yield:threads=8,duration_ms=20,warmup_ms=10");
        assert_eq!(s.k.rec.count("threads"), 8);
        assert_eq!(s.k.stats.forks, 8);
        assert!(s.k.tasks.iter().filter(|t| !t.is_idle).all(|t| t.mm == 1));
        let y = s.k.rec.count("yields_end") - s.k.rec.count("yields_start");
        assert!(y > 1000, "{y} yields");
        let r = s.report().unwrap();
        assert_eq!(r.result.metric, "us_per_yield");
        assert!(
            r.result.value > 0.2 && r.result.value < 100.0,
            "{}",
            r.result.value
        );
    }

    #[test]
    fn a_longer_window_counts_proportionally_more_yields() {
        let y = |s: &Simulation| s.k.rec.count("yields_end") - s.k.rec.count("yields_start");
        let a = run(2, "sched_yield:threads=4,duration_ms=20,warmup_ms=10");
        let b = run(2, "sched_yield:threads=4,duration_ms=80,warmup_ms=10");
        let w = |s: &crate::Simulation| {
            (s.k.rec.last("end").unwrap() - s.k.rec.first("start").unwrap()) as f64
        };
        assert!(w(&b) > 2.5 * w(&a));
        let ratio = y(&b) as f64 / y(&a) as f64 / (w(&b) / w(&a));
        assert!(ratio > 0.8 && ratio < 1.25, "yield rate ratio {ratio}");
    }
}
