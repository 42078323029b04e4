//! sched_yield (Bill Hartner's `sched_test_yield`, benchmarks.md §2 "Precursors" and §5b):
//! `threads` threads of one process each call `sched_yield()` `yields` times. They start
//! together on a barrier; the clock runs from the barrier to the last join.
//!
//! [INFERRED]: µs per yield = elapsed / (threads · yields), i.e. the time the whole machine
//! takes per yield; the original's exact definition is not in the sources at hand.
//! (Hartner's caution stands: with nothing else runnable a yield may not switch.)

use std::sync::{Arc, Barrier};

use schedlab::spec::{Kind, ParamSpec, Params};

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

/// Parameters (`threads` as the simulated workload; `yields` added).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "threads",
        default: "4",
        kind: Kind::Int {
            min: 1,
            max: 100_000,
        },
        help: "yielding threads",
    },
    ParamSpec {
        name: "yields",
        default: "100000",
        kind: Kind::Int {
            min: 1,
            max: 1_000_000_000,
        },
        help: "sched_yield() calls per thread",
    },
];

const NAMES: &[&str] = &["yields"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let n = p.uint("threads") as usize;
    let yields = p.uint("yields");
    let c = Counters::new(NAMES)?;
    let barrier = Arc::new(Barrier::new(n + 1));
    let mut ts = Vec::with_capacity(n);
    for _ in 0..n {
        let b = Arc::clone(&barrier);
        ts.push(ctx.thread(move || {
            b.wait();
            for _ in 0..yields {
                sys::sched_yield();
            }
            c.add(0, yields);
            Ok(())
        })?);
    }
    barrier.wait();
    let t0 = sys::now_ns();
    ctx.join_all(ts)?;
    let ns = sys::now_ns() - t0;
    let per = ns as f64 / (n as u64 * yields) as f64 / 1e3;
    let mut out = Outcome::new("us_per_yield", per, "us", "lower", ns);
    out.counts = c.to_map();
    Ok(out)
}
