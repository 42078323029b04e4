//! LSE reflex (benchmarks.md §2): `tasks` threads partitioned into `sets` active sets; in
//! each set a 1-byte token circulates through pipes, so about `sets` threads are runnable.
//! Each thread, holding the token, computes for `delay_us` and passes it to its successor
//! (Path II: write the successor's pipe, then block reading its own).
//!
//! [INFERRED] (benchmarks.md §2): a *round* is one trip of the token round a set; the
//! result is elapsed time divided by the rounds completed across all sets (µs per round),
//! each set making `rounds` rounds. Kravetz's runs used Path II only and delay 0, so the
//! random choice of Path I (`sched_yield`) and the random perturbation of the delay are not
//! reproduced. Threads start together on a barrier; the clock runs from the barrier to the
//! last join.

use std::sync::{Arc, Barrier};

use schedlab::spec::{Kind, ParamSpec, Params, SpecError};

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

/// Parameters (names and defaults of the simulated workload; `rounds` added).
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "tasks",
        default: "16",
        kind: Kind::Int {
            min: 2,
            max: 100_000,
        },
        help: "threads (Kravetz: 2 to 128)",
    },
    ParamSpec {
        name: "sets",
        default: "auto",
        kind: Kind::Int {
            min: 1,
            max: 50_000,
        },
        help: "active sets (auto: tasks/2, Kravetz's runs)",
    },
    ParamSpec {
        name: "delay_us",
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: 1_000_000,
        },
        help: "busy-loop compute per token hold, us (Kravetz: 0)",
    },
    ParamSpec {
        name: "rounds",
        default: "10000",
        kind: Kind::Int {
            min: 1,
            max: 100_000_000,
        },
        help: "token trips round each set",
    },
];

/// Resolve `sets=auto` and check that every set has at least two threads.
pub fn prepare(p: &mut Params) -> Result<(), SpecError> {
    let tasks = p.int("tasks");
    if p.is_auto("sets") {
        p.set("sets", (tasks / 2).to_string());
    }
    let sets = p.int("sets");
    if sets * 2 > tasks {
        return Err(SpecError(format!(
            "bad value sets={sets} for workload reflex: each set needs at least 2 of the {tasks} tasks (sets <= tasks/2 = {})",
            tasks / 2
        )));
    }
    Ok(())
}

const NAMES: &[&str] = &["token_passes", "rounds"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let tasks = p.uint("tasks") as usize;
    let sets = p.uint("sets") as usize;
    let delay = p.uint("delay_us");
    let rounds = p.uint("rounds");
    let c = Counters::new(NAMES)?;
    let barrier = Arc::new(Barrier::new(tasks + 1));
    let mut workers = Vec::with_capacity(tasks);
    for s in 0..sets {
        // Tasks are dealt out as evenly as possible: set s has tasks/sets or one more.
        let n = tasks / sets + usize::from(s < tasks % sets);
        let mut pipes = Vec::with_capacity(n);
        for _ in 0..n {
            pipes.push(sys::pipe()?);
        }
        for m in 0..n {
            let own = pipes[m].0;
            let next = pipes[(m + 1) % n].1;
            let b = Arc::clone(&barrier);
            workers.push(ctx.thread(move || {
                let mut tok = [b'r'; 1];
                b.wait();
                for _ in 0..rounds {
                    if m == 0 {
                        sys::spin_us(delay);
                        sys::write_full(next, &tok)?;
                        sys::read_full(own, &mut tok, "reflex")?;
                    } else {
                        sys::read_full(own, &mut tok, "reflex")?;
                        sys::spin_us(delay);
                        sys::write_full(next, &tok)?;
                    }
                }
                c.add(0, rounds);
                if m == 0 {
                    c.add(1, rounds);
                }
                Ok(())
            })?);
        }
    }
    barrier.wait();
    let t0 = sys::now_ns();
    ctx.join_all(workers)?;
    let ns = sys::now_ns() - t0;
    let per = ns as f64 / (rounds * sets as u64) as f64 / 1e3;
    let mut out = Outcome::new("us_per_round", per, "us", "lower", ns);
    out.counts = c.to_map();
    Ok(out)
}
