//! A histogram of durations with bounded relative error, for latency percentiles over runs
//! of any length in constant memory.
//!
//! Values below 128 ns have a bucket each; above, a value `v` with its highest set bit at
//! position `e ≥ 7` falls in one of 64 buckets of width `2^(e-6)` — a relative width under
//! 1/64, so a percentile read at a bucket's middle is within 0.8 % of the exact value.
//! The maximum and the count are exact.

use super::Time;

const SUB: u32 = 6;
const LINEAR: u64 = 1 << (SUB + 1);

/// A histogram of durations (ns).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Histogram {
    #[serde(skip)]
    buckets: Vec<u64>,
    count: u64,
    max: Time,
}

fn index(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let shift = e - SUB;
    let sub = (v >> shift) as usize & ((1 << SUB) - 1);
    LINEAR as usize + ((e - SUB - 1) as usize) * (1 << SUB) + sub
}

/// The lowest value of bucket `i` and its width.
fn bounds(i: usize) -> (u64, u64) {
    if (i as u64) < LINEAR {
        return (i as u64, 1);
    }
    let j = i - LINEAR as usize;
    let e = (j >> SUB) as u32 + SUB + 1;
    let sub = (j & ((1 << SUB) - 1)) as u64;
    let shift = e - SUB;
    (((1u64 << SUB) | sub) << shift, 1u64 << shift)
}

impl Histogram {
    /// Count one value.
    #[inline]
    pub fn record(&mut self, v: Time) {
        let i = index(v);
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, 0);
        }
        self.buckets[i] += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest value (0 when empty).
    pub fn max(&self) -> Time {
        self.max
    }

    /// The `q`-quantile (0 < q ≤ 1): the middle of the bucket holding the value of rank
    /// ⌈q·count⌉, at most the maximum (the maximum itself for the last rank); 0 when
    /// empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return self.max as f64;
        }
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (lo, w) = bounds(i);
                let mid = lo as f64 + (w as f64 - 1.0) / 2.0;
                return mid.min(self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            65_537,
            1 << 40,
            u64::MAX / 3,
        ] {
            let i = index(v);
            assert!(i >= last, "{v}");
            last = i;
            let (lo, w) = bounds(i);
            assert!(lo <= v && v - lo < w, "{v}: bucket {i} = {lo}+{w}");
        }
    }

    #[test]
    fn quantiles_are_within_one_percent() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 10);
        }
        let p50 = h.quantile(0.5);
        let p99 = h.quantile(0.99);
        assert!((p50 / 50_000.0 - 1.0).abs() < 0.01, "{p50}");
        assert!((p99 / 99_000.0 - 1.0).abs() < 0.01, "{p99}");
        assert_eq!(h.max(), 100_000);
        assert_eq!(h.quantile(1.0), 100_000.0);
    }
}
