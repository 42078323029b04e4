//! lat_pipe (lmbench2 `src/lat_pipe.c`, benchmarks.md §4): a parent and a child pass a
//! 1-byte token through two pipes; the parent writes, then reads the echo. `warmup` untimed
//! round trips, then `rounds` timed ones. Result: µs per round trip (as `perf bench sched
//! pipe`'s usecs/op, which runs the same ping-pong).

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

const NAMES: &[&str] = &["round_trips", "child_round_trips"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::lat_pipe::Options::from_params(p);
    let rounds = o.rounds;
    let warmup = o.warmup;
    let total = rounds + warmup;
    let c = Counters::new(NAMES)?;
    let (p1r, p1w) = sys::pipe()?;
    let (p2r, p2w) = sys::pipe()?;
    let child = ctx.fork(|| {
        sys::close(p1w);
        sys::close(p2r);
        let mut b = [0u8; 1];
        for _ in 0..total {
            sys::read_full(p1r, &mut b, "lat_pipe child")?;
            sys::write_full(p2w, &b)?;
        }
        c.add(1, total);
        Ok(())
    })?;
    sys::close(p1r);
    sys::close(p2w);
    let mut b = [b'x'; 1];
    let mut t0 = sys::now_ns();
    for i in 0..total {
        if i == warmup {
            t0 = sys::now_ns();
        }
        sys::write_full(p1w, &b)?;
        sys::read_full(p2r, &mut b, "lat_pipe parent")?;
    }
    let ns = sys::now_ns() - t0;
    c.add(0, rounds);
    ctx.join_all(vec![child])?;
    let mut out = Outcome::new(
        "us_per_round_trip",
        ns as f64 / rounds as f64 / 1e3,
        "us",
        "lower",
        ns,
    );
    out.counts = c.to_map();
    Ok(out)
}
