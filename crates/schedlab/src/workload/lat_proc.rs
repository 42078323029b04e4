//! `lat_proc` (lmbench2 `src/lat_proc.c`): process creation latency.
//!
//! The original, per timed iteration (benchmarks.md §5b): `fork` — the parent forks a
//! child that exits at once and waits for it ("Process fork+exit", µs per
//! fork+exit+wait); `exec` — the child `execve()`s a tiny program (`/tmp/hello`, which
//! writes a line to its closed stdout and exits) and the parent waits ("Process
//! fork+execve"). lmbench repeats until the timing is stable and prints µs per iteration.
//!
//! The model runs `warmup` untimed iterations, then `n` timed ones, one child at a time,
//! and reports (time of the last reap − start) / `n` in µs. What it counts: every
//! iteration is exactly one fork, one exit and one reap (plus one exec for `op=exec`).
//!
//! Inferences and simplifications:
//! * \[INFERRED\] The lmbench2 copy read for this model creates the child with `vfork()`;
//!   the spec (§5b) and the preset's cost split (`fork_ns`, calibrated on lmbench's
//!   "fork" figure) describe `fork()`, so the model forks. Under `vfork` the parent
//!   would not run until the child exits or execs; with `fork` the parent goes on to
//!   `wait()` and sleeps there, which is where the policy's placement of the child shows.
//! * `hello`'s one `write()` to a closed fd (EBADF, a null system call) is left out: the
//!   program just exits.

use crate::kernel::abi::{errno_name, program, Env, Op, Program, Record};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `lat_proc`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        op: String = choice("fork", &["fork", "exec"]).help("fork: the child exits at once; exec: the child execs a tiny program")
            .source("benchmarks.md §5b");
        n: u64 = int("1000", 1, 10_000_000).help("timed iterations")
            .source("benchmarks.md §5b");
        warmup: u64 = int("20", 0, 1_000_000).help("untimed iterations first")
            .source("benchmarks.md §5b");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lat_proc",
    about: "lmbench lat_proc: fork+exit+wait (op=fork) or fork+execve+exit+wait (op=exec)",
    small: &["lat_proc:n=20,warmup=2", "lat_proc:op=exec,n=20,warmup=2"],
    metric: "us per operation",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(LatProc {
        exec: o.op.as_str() == "exec",
        n: o.n,
        warmup: o.warmup,
    }))
}

struct LatProc {
    exec: bool,
    n: u64,
    warmup: u64,
}

/// `/tmp/hello`: exits at once.
fn hello() -> Box<dyn Program> {
    program(|_env: &mut Env<'_>| Op::Exit)
}

/// The child of one iteration.
fn child(exec: bool) -> Box<dyn Program> {
    let mut execd = false;
    program(move |env: &mut Env<'_>| {
        if exec && !execd {
            execd = true;
            env.count("execs", 1);
            return Op::Exec { program: hello() };
        }
        Op::Exit
    })
}

struct Parent {
    exec: bool,
    i: u64,
    total: u64,
    warmup: u64,
    /// Pid of the child being waited for (0: none yet).
    pid: i64,
    forking: bool,
}

impl Program for Parent {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        if self.forking {
            // Returned from fork: wait for that child (`while (wait(0) != pid)`).
            self.forking = false;
            if env.ret <= 0 {
                env.fail(format!("lat_proc: fork failed ({})", errno_name(env.ret)));
                return Op::Exit;
            }
            self.pid = env.ret;
            return Op::Wait;
        }
        if self.pid != 0 {
            if env.ret != self.pid {
                return Op::Wait;
            }
            self.pid = 0;
            self.i += 1;
            env.count("reaped", 1);
        }
        if self.i == self.warmup {
            env.mark("start");
        }
        if self.i == self.total {
            env.mark("end");
            return Op::Exit;
        }
        self.forking = true;
        env.count("forks", 1);
        Op::Fork {
            child: child(self.exec),
        }
    }
}

impl Workload for LatProc {
    fn root(&self) -> Box<dyn Program> {
        Box::new(Parent {
            exec: self.exec,
            i: 0,
            total: self.warmup + self.n,
            warmup: self.warmup,
            pid: 0,
            forking: false,
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        Ok(metric(
            "us_per_op",
            ns as f64 / self.n as f64 / 1000.0,
            "us",
            "lower",
        ))
    }
}
