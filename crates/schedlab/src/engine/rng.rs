//! The single seeded random source of a run.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// ChaCha8 seeded from the run's `--seed`: portable and reproducible across platforms.
pub struct SimRng(ChaCha8Rng);

impl SimRng {
    /// A generator for seed `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Stream `stream` of seed `seed`: independent of [`SimRng::new`]'s stream (0), so
    /// drawing from one never shifts the other's sequence.
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        SimRng(r)
    }

    /// Uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.gen_range(0..n)
    }

    /// Uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0.gen::<f64>()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Exponentially distributed value with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        let u = 1.0 - self.unit();
        -mean * u.ln()
    }
}
