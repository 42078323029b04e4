//! LSE reflex (benchmarks.md §2), natively: `tasks` threads of one process partitioned
//! into `sets` active sets; in each set a 1-byte token circulates through pipes, so about
//! `sets` threads are runnable. As the model (`schedlab::workload::reflex`) and with its
//! parameters:
//!
//! 1. The leader creates one pipe per thread and a start pipe, then the threads set by
//!    set (set `s` holds a contiguous block of threads; sizes differ by at most one); each
//!    blocks reading one byte of the start pipe. Then it says "go" and writes a byte per
//!    thread into the start pipe in one write: every thread passes the barrier, and each
//!    set's first member goes on holding its set's token.
//! 2. Every thread loops: read the token; compute `delay_us` (a busy loop, ±5 % uniform
//!    perturbation); with probability `yield_pct` % call `sched_yield()` and compute again
//!    (Path I, the token stays); otherwise write the token into its successor's pipe
//!    (Path II). When a set's last member has passed the token back to the first, the set
//!    has completed a round and adds one to the shared round counter.
//! 3. The threads time themselves ([`super::window`]): with `rounds=auto` the first round
//!    completed `warmup_ms` after go opens the window and the first one `duration_ms` later
//!    closes it; with `rounds=N` the window opens at go and closes when the sets together
//!    have completed `sets × N` rounds. A thread that finds the window closed passes the
//!    token on once more (so that its successor finds out too) and exits.
//!
//! Result (the model's): window / rounds completed by all sets in it, µs per round.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use schedlab::spec::{Params, SpecError};

use super::window::Window;
use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

/// Resolve `sets=auto` and check that every set has at least two threads.
pub fn prepare(p: &mut Params) -> Result<(), SpecError> {
    let o = schedlab::workload::reflex::Options::from_params(p);
    let tasks = o.tasks;
    let sets = o.sets.unwrap_or(tasks / 2);
    p.set("sets", sets.to_string());
    if sets * 2 > tasks {
        return Err(SpecError::Invalid(format!(
            "bad value sets={sets} for workload reflex: each set needs at least 2 of the {tasks} tasks (sets <= tasks/2 = {})",
            tasks / 2
        )));
    }
    Ok(())
}

const NAMES: &[&str] = &["token_passes", "yields"];

/// xorshift64*: a thread's own cheap random numbers for the perturbation and Path I.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed: distinct, non-zero states for nearby seeds.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What one thread of a set does.
struct Member {
    /// The start pipe's read end: the barrier every thread waits at.
    start: i32,
    /// The set's first member: holds its token when the barrier opens.
    leader: bool,
    own: i32,
    succ: i32,
    /// Closes the set's ring: counts its rounds.
    last: bool,
    delay_ns: f64,
    yield_p: f64,
    rng: Rng,
}

impl Member {
    fn compute(&mut self) {
        if self.delay_ns > 0.0 {
            // model: as the simulated workload, a ±5 % uniform perturbation.
            let f = 0.95 + 0.1 * self.rng.unit();
            sys::spin_ns((self.delay_ns * f).round() as u64);
        }
    }

    /// Rounds of the token until the window closes; (token passes, Path I yields).
    fn run(mut self, rounds: &AtomicU64, window: &Window) -> Res<(u64, u64)> {
        let mut tok = [b'r'; 1];
        let (mut passes, mut yields) = (0u64, 0u64);
        sys::read_full(self.start, &mut tok, "reflex start")?;
        let mut holding = self.leader;
        loop {
            if !std::mem::take(&mut holding) {
                sys::read_full(self.own, &mut tok, "reflex")?;
            }
            if window.closed() {
                sys::write_full(self.succ, &tok)?;
                return Ok((passes, yields));
            }
            self.compute();
            while self.yield_p > 0.0 && self.rng.unit() < self.yield_p {
                sys::sched_yield();
                yields += 1;
                self.compute();
            }
            sys::write_full(self.succ, &tok)?;
            passes += 1;
            if self.last {
                let n = rounds.fetch_add(1, Ordering::Relaxed) + 1;
                window.done(|| n);
            }
        }
    }
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::reflex::Options::from_params(p);
    let tasks = o.tasks as usize;
    // `prepare` resolved `sets=auto`.
    let sets = o.sets.unwrap_or(o.tasks / 2) as usize;
    let delay_ns = o.delay_us * 1000.0;
    let yield_p = o.yield_pct / 100.0;
    let window = Arc::new(match o.rounds {
        None => Window::new(o.warmup_ms * 1_000_000, o.duration_ms * 1_000_000),
        Some(rounds) => Window::until(rounds * sets as u64),
    });
    let rounds = Arc::new(AtomicU64::new(0));
    let c = Counters::new(NAMES)?;
    let mut pipes = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        pipes.push(sys::pipe()?);
    }
    let start = sys::pipe()?;
    let mut workers = Vec::with_capacity(tasks);
    let mut first = 0;
    for s in 0..sets {
        // Contiguous blocks, the first tasks % sets sets one larger (as the model).
        let n = tasks / sets + usize::from(s < tasks % sets);
        for j in 0..n {
            let i = first + j;
            let m = Member {
                start: start.0,
                leader: j == 0,
                own: pipes[i].0,
                succ: pipes[first + (j + 1) % n].1,
                last: j == n - 1,
                delay_ns,
                yield_p,
                rng: Rng::new(i as u64),
            };
            let (w, r) = (Arc::clone(&window), Arc::clone(&rounds));
            workers.push(ctx.thread(move || {
                // The simulated thread's comm, so a host trace tells the sets apart.
                sys::set_comm(&format!("reflex:{i}"));
                let (passes, yields) = m.run(&r, &w)?;
                c.add(0, passes);
                c.add(1, yields);
                Ok(())
            })?);
        }
        first += n;
    }
    window.go(0);
    // The start barrier: a byte per thread, one write; each set's first member then
    // holds its token.
    sys::write_full(start.1, &vec![b'r'; tasks])?;
    ctx.join_all(workers)?;
    let (ns, n) = window
        .measured()
        .ok_or_else(|| sys::Fail("reflex: the measuring window never closed".into()))?;
    if n == 0 {
        return Err(sys::Fail("reflex: no round completed in the window".into()));
    }
    let mut out = Outcome::new(
        "us_per_round",
        ns as f64 / n as f64 / 1e3,
        "us",
        "lower",
        ns,
    );
    out.counts = c.to_map();
    out.counts.insert("rounds".into(), n as f64);
    out.counts
        .insert("rounds_total".into(), rounds.load(Ordering::Relaxed) as f64);
    Ok(out)
}
