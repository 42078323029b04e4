//! lat_ctx (lmbench2 `src/lat_ctx.c`, benchmarks.md §4): a ring of `procs` processes joined
//! by pipes passes a 4-byte token; on receiving it each process sums its private array of
//! `size_kb` KB, then writes the token on. The leader is ring member 0 and times `rounds`
//! trips round the ring after `warmup` untimed ones. Parameters: the model's
//! (`schedlab::workload::lat_ctx`).
//!
//! Overhead subtraction as lmbench2 does it: the pipe cost — one process writing the token
//! into each of the ring's pipes in turn and reading it back, no switch — and the sum's
//! cost, timed on one hot 4 KB `CHUNK` and scaled to the array (a hot L1 sum, not the
//! array's own refill, which lmbench cannot subtract and does not try to). Each of the
//! three quantities is timed `TRIES` times and the median kept, as lmbench's `BENCH` keeps
//! the median of its repetitions; the ring's `rounds` trips are those repetitions split in
//! `TRIES` parts. Result: µs per context switch = median hop − pipe cost − sum cost.

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

const NAMES: &[&str] = &["hops", "overhead_ns"];

/// lmbench2's `TRIES` (`bench.h`): repetitions of each timing, of which the median counts.
const TRIES: u64 = 11;
/// lmbench2's `CHUNK`, 4 KB, in words: the sum overhead is timed on this much.
const CHUNK_WORDS: usize = 1024;

/// `total` split into at most `parts` nearly equal non-empty parts.
fn split(total: u64, parts: u64) -> Vec<u64> {
    let parts = parts.min(total).max(1);
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .filter(|&n| n > 0)
        .collect()
}

/// The median over `TRIES` timings of `n` calls of `body`, per call, in ns.
fn median_per_call(n: u64, mut body: impl FnMut() -> Res<()>) -> Res<f64> {
    body()?; // lmbench's BENCH runs the body once untimed to warm the cache
    let mut per = Vec::new();
    for _ in 0..TRIES {
        let t = sys::now_ns();
        for _ in 0..n {
            body()?;
        }
        per.push((sys::now_ns() - t) as f64 / n as f64);
    }
    Ok(crate::median(&per))
}

/// lmbench's "touch the working set": sum every word. The micro-benchmarks that price a
/// refilled line (`measure`'s streams) run this same loop.
pub(crate) fn sum(data: &[u32]) -> u32 {
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

    // pipes[i]: member i reads, member i-1 writes.
    let mut pipes = Vec::with_capacity(procs);
    for _ in 0..procs {
        pipes.push(sys::pipe()?);
    }

    // Overheads, before the ring exists (lmbench's order).
    let n_ovr = o.ovr_iters;
    let mut acc = sum(&data);
    let sum_ns = if words > 0 {
        let chunk: Vec<u32> = (0..CHUNK_WORDS as u32).collect();
        let per_chunk = median_per_call(n_ovr, || {
            acc = acc.wrapping_add(sum(std::hint::black_box(&chunk)));
            Ok(())
        })?;
        per_chunk * words as f64 / CHUNK_WORDS as f64
    } else {
        0.0
    };
    let mut tok = [0u8; 4];
    let mut k = 0;
    let pipe_ns = median_per_call(n_ovr, || {
        let (r, w) = pipes[k];
        k = (k + 1) % procs;
        sys::write_full(w, &tok)?;
        sys::read_full(r, &mut tok, "lat_ctx pipe cost")
    })?;
    let overhead_ns = pipe_ns + sum_ns;

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
    let trip = |tok: &mut [u8; 4], acc: &mut u32| -> Res<()> {
        sys::write_full(wr, tok)?;
        sys::read_full(rd, tok, "lat_ctx leader")?;
        *acc = acc.wrapping_add(sum(&data));
        Ok(())
    };
    for _ in 0..warmup {
        trip(&mut tok, &mut acc)?;
    }
    let mut ns = 0;
    let mut hop_ns = Vec::new();
    for n in split(rounds, TRIES) {
        let t = sys::now_ns();
        for _ in 0..n {
            trip(&mut tok, &mut acc)?;
        }
        let dt = sys::now_ns() - t;
        ns += dt;
        hop_ns.push(dt as f64 / (n * procs as u64) as f64);
    }
    std::hint::black_box(acc);
    ctx.join_all(kids)?;
    c.add(0, rounds * procs as u64);
    c.add(1, overhead_ns as u64);
    let per = crate::median(&hop_ns) - overhead_ns;
    let mut out = Outcome::new("us_per_switch", per / 1e3, "us", "lower", ns);
    out.counts = c.to_map();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{split, TRIES};

    #[test]
    fn the_timed_trips_split_into_lmbench_tries_of_nearly_equal_size() {
        let parts = split(200, TRIES);
        assert_eq!(parts.len(), 11);
        assert_eq!(parts.iter().sum::<u64>(), 200);
        assert!(parts.iter().all(|&n| n == 18 || n == 19), "{parts:?}");
        assert_eq!(
            split(5, TRIES),
            vec![1; 5],
            "fewer trips than tries: one each"
        );
        assert!(split(0, TRIES).is_empty());
    }
}
