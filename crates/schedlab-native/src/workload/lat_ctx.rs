//! lat_ctx (lmbench2 `src/lat_ctx.c`, benchmarks.md §4): a ring of `procs` processes joined
//! by pipes passes a 4-byte token; on receiving it each process sums its private array of
//! `size_kb` KB, then writes the token on. The leader is ring member 0 and times `rounds`
//! trips round the ring after `warmup` untimed ones. Parameters: the model's
//! (`schedlab::workload::lat_ctx`).
//!
//! Overhead subtraction as lmbench: the cost of one hop without a switch — one process
//! writing the token into a pipe and reading it back, plus one sum of a hot array — is
//! measured first, over `ovr_iters` iterations, and subtracted. Result: µs per context switch =
//! elapsed / (rounds · procs) − overhead.

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

const NAMES: &[&str] = &["hops", "overhead_ns"];

/// lmbench's "touch the working set": sum every word.
fn sum(data: &[u32]) -> u32 {
    data.iter().fold(0u32, |a, &x| a.wrapping_add(x))
}

/// One ring member: `trips` times read the token, sum, pass it on.
fn member(rd: i32, wr: i32, data: &[u32], trips: u64) -> Res<u32> {
    let mut tok = [0u8; 4];
    let mut acc = 0u32;
    for _ in 0..trips {
        sys::read_full(rd, &mut tok, "lat_ctx ring member")?;
        acc = acc.wrapping_add(sum(data));
        sys::write_full(wr, &tok)?;
    }
    Ok(acc)
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::lat_ctx::Options::from_params(p);
    let procs = o.procs as usize;
    let words = o.size_kb as usize * 256;
    let rounds = o.rounds;
    let warmup = o.warmup;
    let trips = rounds + warmup;
    let c = Counters::new(NAMES)?;
    let data: Vec<u32> = (0..words as u32).collect();

    // Overhead: token through a pipe to ourselves plus a hot sum, per hop.
    let (or, ow) = sys::pipe()?;
    let mut tok = [0u8; 4];
    let mut acc = sum(&data);
    let n_ovr = o.ovr_iters;
    let t = sys::now_ns();
    for _ in 0..n_ovr {
        sys::write_full(ow, &tok)?;
        sys::read_full(or, &mut tok, "lat_ctx overhead")?;
        acc = acc.wrapping_add(sum(&data));
    }
    let overhead_ns = (sys::now_ns() - t) as f64 / n_ovr as f64;
    sys::close(or);
    sys::close(ow);

    // pipes[i]: member i reads, member i-1 writes.
    let mut pipes = Vec::with_capacity(procs);
    for _ in 0..procs {
        pipes.push(sys::pipe()?);
    }
    let mut kids = Vec::new();
    for i in 1..procs {
        let rd = pipes[i].0;
        let wr = pipes[(i + 1) % procs].1;
        let all = pipes.clone();
        kids.push(ctx.fork(|| {
            for (j, &(r, w)) in all.iter().enumerate() {
                if j != i {
                    sys::close(r);
                }
                if j != (i + 1) % procs {
                    sys::close(w);
                }
            }
            // Each member has its own copy of the array (copied on write by fork); touch it
            // once so the copy exists before timing.
            let mine: Vec<u32> = data.clone();
            let s = sum(&mine);
            member(rd, wr, &mine, trips).map(|a| {
                std::hint::black_box(a.wrapping_add(s));
            })
        })?);
    }
    let (rd, wr) = (pipes[0].0, pipes[1 % procs].1);
    for (j, &(r, w)) in pipes.iter().enumerate() {
        if j != 0 {
            sys::close(r);
        }
        if j != 1 {
            sys::close(w);
        }
    }
    let mut t0 = sys::now_ns();
    for i in 0..trips {
        if i == warmup {
            t0 = sys::now_ns();
        }
        sys::write_full(wr, &tok)?;
        sys::read_full(rd, &mut tok, "lat_ctx leader")?;
        acc = acc.wrapping_add(sum(&data));
    }
    let ns = sys::now_ns() - t0;
    std::hint::black_box(acc);
    ctx.join_all(kids)?;
    c.add(0, rounds * procs as u64);
    c.add(1, overhead_ns as u64);
    let per = ns as f64 / (rounds * procs as u64) as f64 - overhead_ns;
    let mut out = Outcome::new("us_per_switch", per / 1e3, "us", "lower", ns);
    out.counts = c.to_map();
    Ok(out)
}
