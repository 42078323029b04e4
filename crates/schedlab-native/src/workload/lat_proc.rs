//! lat_proc (lmbench2 `src/lat_proc.c`, benchmarks.md §5b): `fork` — fork a child that
//! exits at once and wait for it; `exec` — the child execs a tiny program that exits.
//! `warmup` untimed, then `iterations` timed. Result: µs per fork+exit+wait (or
//! fork+exec+exit+wait).
//!
//! [INFERRED]: lmbench's `hello` is replaced by `/bin/true` (the smallest program every
//! host has); its output is not redirected since `true` prints nothing.

use std::ffi::CString;

use schedlab::spec::{Kind, ParamSpec, Params};

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, explain, Fail, Res};

/// Parameters (`op` as the simulated workload; `iterations`, `warmup` added).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "op",
        default: "fork",
        kind: Kind::Choice(&["fork", "exec"]),
        help: "what the child does (lmbench lat_proc fork|exec)",
    },
    ParamSpec {
        name: "iterations",
        default: "500",
        kind: Kind::Int {
            min: 1,
            max: 10_000_000,
        },
        help: "timed repetitions",
    },
    ParamSpec {
        name: "warmup",
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: 100_000,
        },
        help: "untimed repetitions first",
    },
];

/// The program `op=exec` runs.
pub const EXEC_PROGRAM: &str = "/bin/true";

const NAMES: &[&str] = &["children"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let exec = p.raw("op") == "exec";
    let iters = p.uint("iterations");
    let warmup = p.uint("warmup");
    let c = Counters::new(NAMES)?;
    let prog = CString::new(EXEC_PROGRAM).expect("no NUL");
    if exec && !std::path::Path::new(EXEC_PROGRAM).exists() {
        return Err(Fail(format!(
            "lat_proc:op=exec needs {EXEC_PROGRAM}, which is missing"
        )));
    }
    let argv = [prog.as_ptr(), std::ptr::null()];
    let mut t0 = sys::now_ns();
    for i in 0..warmup + iters {
        if i == warmup {
            t0 = sys::now_ns();
        }
        let kid = ctx.fork(|| {
            if exec {
                // SAFETY: argv is a NULL-terminated array of valid C strings.
                unsafe { libc::execv(prog.as_ptr(), argv.as_ptr()) };
                return Err(explain("execv /bin/true", sys::errno()));
            }
            Ok(())
        })?;
        ctx.join_all(vec![kid])?;
    }
    let ns = sys::now_ns() - t0;
    c.add(0, warmup + iters);
    let metric = if exec { "us_per_exec" } else { "us_per_fork" };
    let mut out = Outcome::new(metric, ns as f64 / iters as f64 / 1e3, "us", "lower", ns);
    out.counts = c.to_map();
    Ok(out)
}
