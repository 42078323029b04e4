//! lat_proc (lmbench2 `src/lat_proc.c`, benchmarks.md §5b): `fork` — fork a child that
//! exits at once and wait for it; `exec` — the child execs a tiny program that exits.
//! `warmup` untimed, then `n` timed, one child at a time, as the model
//! (`schedlab::workload::lat_proc`) and with its parameters. Result: µs per operation,
//! fork+exit+wait (or fork+exec+exit+wait).
//!
//! \[INFERRED\]: lmbench's `hello` is replaced by `/bin/true` (the smallest program every
//! host has); its output is not redirected since `true` prints nothing.

use std::ffi::CString;

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, explain, Fail, Res};

/// The program `op=exec` runs.
pub const EXEC_PROGRAM: &str = "/bin/true";

const NAMES: &[&str] = &["children"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::lat_proc::Options::from_params(p);
    let exec = o.op.as_str() == "exec";
    let iters = o.n;
    let warmup = o.warmup;
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
    let mut out = Outcome::new(
        "us_per_op",
        ns as f64 / iters as f64 / 1e3,
        "us",
        "lower",
        ns,
    );
    out.counts = c.to_map();
    Ok(out)
}
