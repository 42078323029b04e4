//! sched_yield (Bill Hartner's `sched_test_yield`, benchmarks.md §2 "Precursors" and §5b),
//! natively, as the model (`schedlab::workload::sched_yield`) and with its parameters:
//! `threads` threads of one process each call `sched_yield()` in a loop, counting every
//! completed call in a counter of their own. They start together on a barrier ("go") and
//! time themselves ([`super::window`]): the first yield completed `warmup_ms` after go
//! opens the window, the first one `duration_ms` later closes it, and every thread stops.
//!
//! Result (the model's, \[INFERRED\] there): the CPU time one yield costs, window ×
//! min(threads, CPUs) / yields in the window, in µs — CPUs being those this process may run
//! on (`sched_getaffinity`, so `--pin` counts). (Hartner's caution stands: with nothing
//! else runnable on a CPU a yield may not switch.)

use std::sync::{Arc, Barrier};

use schedlab::spec::Params;

use super::window::{Tally, Window};
use crate::host;
use crate::runner::{Ctx, Outcome};
use crate::sys::{self, Fail, Res};

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::sched_yield::Options::from_params(p);
    let n = o.threads as usize;
    let window = Arc::new(Window::new(
        o.warmup_ms * 1_000_000,
        o.duration_ms * 1_000_000,
    ));
    let tally = Arc::new(Tally::new(n));
    let barrier = Arc::new(Barrier::new(n + 1));
    let mut ts = Vec::with_capacity(n);
    for i in 0..n {
        let (b, w, t) = (
            Arc::clone(&barrier),
            Arc::clone(&window),
            Arc::clone(&tally),
        );
        ts.push(ctx.thread(move || {
            b.wait();
            let mut yields = 0u64;
            loop {
                sys::sched_yield();
                yields += 1;
                t.set(i, yields);
                if w.done(|| t.total()) {
                    return Ok(());
                }
            }
        })?);
    }
    window.go(0);
    barrier.wait();
    ctx.join_all(ts)?;
    let (ns, yields) = window
        .measured()
        .ok_or_else(|| Fail("sched_yield: the measuring window never closed".into()))?;
    if yields == 0 {
        return Err(Fail("sched_yield: no yield completed in the window".into()));
    }
    let cpus = host::allowed_cpus().len().max(1);
    let busy = n.min(cpus) as f64;
    let per = ns as f64 * busy / yields as f64 / 1e3;
    let mut out = Outcome::new("us_per_yield", per, "us", "lower", ns);
    out.counts.insert("yields".into(), yields as f64);
    out.counts
        .insert("yields_total".into(), tally.total() as f64);
    out.counts.insert("cpus".into(), cpus as f64);
    Ok(out)
}
