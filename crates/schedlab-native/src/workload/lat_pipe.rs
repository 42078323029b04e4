//! lat_pipe (lmbench2 `src/lat_pipe.c`, benchmarks.md §4): a parent and a child pass a
//! 1-byte token through two pipes; the parent writes, then reads the echo. `warmup` untimed
//! round trips, then `rounds` timed ones. Result: µs per round trip (as `perf bench sched
//! pipe`'s usecs/op, which runs the same ping-pong).
//!
//! `pin=same|split`: both ends on the first CPU this process may use, or the parent there
//! and the child on the second (as the simulated workload pins to CPUs 0 and 1).

use schedlab::spec::{Params, SpecError};

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

const NAMES: &[&str] = &["round_trips", "child_round_trips"];

/// Refuse `pin=split` on a process confined to one CPU.
pub fn prepare(p: &mut Params) -> Result<(), SpecError> {
    let o = schedlab::workload::lat_pipe::Options::from_params(p);
    let allowed = crate::host::allowed_cpus();
    if o.pin == "split" && allowed.len() < 2 {
        return Err(SpecError::Invalid(format!(
            "lat_pipe: pin=split needs 2 CPUs, this process may run on {} only (accepted: pin=none|same)",
            crate::host::format_cpu_list(&allowed)
        )));
    }
    Ok(())
}

/// The CPUs the parent and the child are pinned to, if any.
fn pins(pin: &str) -> Option<(usize, usize)> {
    let allowed = crate::host::allowed_cpus();
    match pin {
        "same" => Some((allowed[0], allowed[0])),
        "split" => Some((allowed[0], allowed[1])),
        _ => None,
    }
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::lat_pipe::Options::from_params(p);
    let pins = pins(&o.pin);
    if let Some((parent, _)) = pins {
        crate::host::set_affinity(&[parent])?;
    }
    let rounds = o.rounds;
    let warmup = o.warmup;
    let total = rounds + warmup;
    let c = Counters::new(NAMES)?;
    let (p1r, p1w) = sys::pipe()?;
    let (p2r, p2w) = sys::pipe()?;
    let child = ctx.fork(|| {
        if let Some((_, child)) = pins {
            crate::host::set_affinity(&[child])?;
        }
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
