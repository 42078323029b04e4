//! Every CPU's `rq->nr_running`, with what the balancer's walk over all of them needs
//! kept up to date as they change.
//!
//! model: the G1 and 2.6.0 balancers (`find_busiest_queue`, schedulers.md §2.5.8) read
//! every CPU's `nr_running` at every call and remember them all in `prev_nr_running[]`;
//! an idle CPU calls it at every tick. The modelled kernel's walk is O(CPUs) and stays
//! so in simulated time (the remote reads are charged whole). The host need not repeat
//! it: an idle call's answer is the longest other queue as of the caller's clock, which
//! a max-tree keeps, and its memory is a copy of the current lengths.
//!
//! Design:
//!
//! * `v[c]`: the [`Published`] value, what every reader sees at its own time.
//! * `latest[c]`: `v[c].latest()`, dense, so a snapshot is one copy.
//! * `tree`: a max-tree over `(latest[c], lowest c)`; its root is the longest queue and,
//!   among equal lengths, the lowest CPU — the kernel's strict `>` walk from CPU 0.
//! * `ahead`: `(time of c's newest write, c)` for every CPU. A reader at `now` sees
//!   `latest[c]` exactly when `c`'s newest write is not after `now`; the CPUs whose
//!   newest write is (writes by hooks processed earlier whose clocks ran ahead, few) are
//!   read one by one.
//!
//! Invariants: `latest[c] == v[c].latest()`; the tree's leaf `c` encodes `latest[c]`
//! and every inner node the larger of its children; `ahead` holds exactly one entry
//! per CPU, dated by its newest kept write. [`NrRunning::snapshot`] and
//! [`NrRunning::busiest`] equal the plain walk (the tests compare them on random
//! histories).

use std::collections::BTreeSet;

use crate::engine::Time;
use crate::policy::Published;
use crate::machine::CpuId;

/// `rq->nr_running` of every CPU; see the module doc.
#[derive(Clone, Debug, Default)]
pub struct NrRunning {
    v: Vec<Published<u32>>,
    latest: Vec<u32>,
    /// Leaves at `size..size + n`, as [`key`]s; node `k`'s children are `2k`, `2k + 1`.
    tree: Vec<u64>,
    size: usize,
    ahead: BTreeSet<(Time, CpuId)>,
}

/// A leaf's key: longer queues first, then lower CPUs (a larger key wins).
fn key(len: u32, cpu: CpuId) -> u64 {
    (u64::from(len) << 32) | u64::from(u32::MAX - cpu as u32)
}

fn unkey(k: u64) -> (CpuId, u32) {
    ((u32::MAX - k as u32) as CpuId, (k >> 32) as u32)
}

impl NrRunning {
    /// `n` CPUs, every queue empty since time 0.
    pub fn new(n: usize) -> NrRunning {
        let size = n.next_power_of_two().max(1);
        let mut tree = vec![0; 2 * size];
        for c in 0..n {
            tree[size + c] = key(0, c);
        }
        for k in (1..size).rev() {
            tree[k] = tree[2 * k].max(tree[2 * k + 1]);
        }
        NrRunning {
            v: vec![Published::new(0); n],
            latest: vec![0; n],
            tree,
            size,
            ahead: (0..n).map(|c| (0, c)).collect(),
        }
    }

    /// `c`'s queue length as a read at `now` sees it ([`Published::at`]).
    #[inline]
    pub fn at(&self, c: CpuId, now: Time) -> u32 {
        self.v[c].at(now)
    }

    /// `c`'s newest queue length (under its lock, in checks).
    #[inline]
    pub fn latest(&self, c: CpuId) -> u32 {
        self.latest[c]
    }

    /// Change `c`'s length by `delta` at `now` (under `c`'s lock).
    pub fn add(&mut self, c: CpuId, now: Time, delta: i32) {
        let before = self.v[c].newest_time();
        self.v[c].update(now, |n| *n = n.checked_add_signed(delta).expect("nr_running"));
        let after = self.v[c].newest_time();
        if before != after {
            self.ahead.remove(&(before, c));
            self.ahead.insert((after, c));
        }
        let l = self.v[c].latest();
        if l != self.latest[c] {
            self.latest[c] = l;
            let mut k = self.size + c;
            self.tree[k] = key(l, c);
            while k > 1 {
                k /= 2;
                self.tree[k] = self.tree[2 * k].max(self.tree[2 * k + 1]);
            }
        }
    }

    /// The CPUs a read at `now` may see an older value of than their latest, ascending.
    fn ahead_of(&self, now: Time) -> Vec<CpuId> {
        let mut cs: Vec<CpuId> = self
            .ahead
            .range((now.saturating_add(1), 0)..)
            .map(|&(_, c)| c)
            .collect();
        cs.sort_unstable();
        cs
    }

    /// Every CPU's length as a read at `now` sees it, into `out` (`prev_nr_running[]`
    /// after a walk).
    pub fn snapshot(&self, now: Time, out: &mut [u32]) {
        out.copy_from_slice(&self.latest);
        for c in self.ahead_of(now) {
            out[c] = self.at(c, now);
        }
    }

    /// The longest queue other than `this`'s as seen at `now`, the lowest CPU among
    /// equals: `(cpu, length)`.
    pub fn busiest(&self, now: Time, this: CpuId) -> Option<(CpuId, u32)> {
        let mut skip = self.ahead_of(now);
        let mut best = 0u64;
        for &c in &skip {
            if c != this {
                best = best.max(key(self.at(c, now), c));
            }
        }
        if let Err(i) = skip.binary_search(&this) {
            skip.insert(i, this);
        }
        let mut lo = 0;
        for &c in skip.iter().chain(std::iter::once(&self.latest.len())) {
            best = best.max(self.max_in(lo, c));
            lo = c + 1;
        }
        (best != 0).then(|| unkey(best))
    }

    /// The largest key among CPUs `lo..hi` (0 when empty).
    fn max_in(&self, lo: usize, hi: usize) -> u64 {
        let (mut l, mut r) = (lo + self.size, hi + self.size);
        let mut m = 0;
        while l < r {
            if l & 1 == 1 {
                m = m.max(self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                m = m.max(self.tree[r]);
            }
            l /= 2;
            r /= 2;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The walk the kernel makes: every CPU's `at(now)`; the strict `>` from CPU 0.
    fn plain_busiest(nr: &NrRunning, now: Time, this: CpuId) -> Option<(CpuId, u32)> {
        let mut best: Option<(CpuId, u32)> = None;
        for c in 0..nr.latest.len() {
            let l = nr.at(c, now);
            let longer = match best {
                Some((_, m)) => l > m,
                None => true,
            };
            if c != this && longer {
                best = Some((c, l));
            }
        }
        best
    }

    proptest! {
        #[test]
        fn snapshot_and_busiest_equal_the_plain_walk(
            n in 1usize..40,
            writes in prop::collection::vec((0usize..40, 0u64..2_000, any::<bool>()), 0..300),
            reads in prop::collection::vec((0usize..40, 0u64..2_200), 1..20),
        ) {
            let mut nr = NrRunning::new(n);
            let mut clock = 0u64;
            for (i, &(c, jitter, up)) in writes.iter().enumerate() {
                let c = c % n;
                // Time goes on, but a write may be dated up to 2 µs back or ahead.
                clock += 100;
                let t = (clock + jitter).saturating_sub(1_000);
                let delta = if up || nr.latest(c) == 0 { 1 } else { -1 };
                nr.add(c, t, delta);
                if i % 7 == 0 {
                    for &(this, back) in &reads {
                        let this = this % n;
                        let now = (clock + 1_100).saturating_sub(back);
                        prop_assert_eq!(nr.busiest(now, this), plain_busiest(&nr, now, this));
                        let mut snap = vec![u32::MAX; n];
                        nr.snapshot(now, &mut snap);
                        let plain: Vec<u32> = (0..n).map(|c| nr.at(c, now)).collect();
                        prop_assert_eq!(snap, plain);
                    }
                }
            }
            for c in 0..n {
                prop_assert_eq!(nr.latest(c), nr.v[c].latest());
            }
        }
    }

    #[test]
    fn ties_go_to_the_lowest_cpu_and_this_is_skipped() {
        let mut nr = NrRunning::new(8);
        for c in [2, 5, 6] {
            nr.add(c, 10, 1);
            nr.add(c, 11, 1);
        }
        assert_eq!(nr.busiest(100, 0), Some((2, 2)));
        assert_eq!(nr.busiest(100, 2), Some((5, 2)));
        // A write after the reader's clock is not seen yet.
        nr.add(7, 500, 3);
        assert_eq!(nr.busiest(100, 0), Some((2, 2)));
        assert_eq!(nr.busiest(500, 0), Some((7, 3)));
        assert_eq!(NrRunning::new(1).busiest(0, 0), None);
    }
}
