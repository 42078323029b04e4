//! Every queue's published `max_na_goodness` in decreasing order, for `examine_rmt_rqs`
//! on a large machine.
//!
//! model: `schedule()` on MQ reads every other queue's `max_na_goodness` without its
//! lock (§3.3 step 3) and stays O(CPUs) in simulated time. The host need not repeat the
//! walk where its reads are free (no coherence model: the kernel's index of idle CPUs is
//! kept, [`SchedCtx::idle_indexed`](crate::kernel::sched::SchedCtx::idle_indexed)) and
//! the scan spans every CPU (mq, not mq-pool): its answer, the queues whose value beats
//! the local best, comes from here in the order it tries them.
//!
//! Design, as the kernel's index of idle CPUs:
//!
//! * `order`: `(Reverse(goodness), cpu)` of each queue's newest `max_na_goodness`;
//! * `ahead`: when each queue's value was last written ([`WrittenAfter`]). A read at `now`
//!   sees the newest value exactly when it was written no later than `now`; the queues
//!   written after (few) are read one by one.
//!
//! Invariants: `latest[c]` is queue `c`'s newest published goodness and `order` holds
//! one entry per queue built from it; `ahead` holds each queue's newest write time.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::engine::Time;
use crate::kernel::sched::published::WrittenAfter;
use crate::machine::CpuId;

use super::MIN_GOODNESS;

/// The queues' published goodness; see the module doc.
#[derive(Clone, Debug, Default)]
pub(super) struct StealIndex {
    order: BTreeSet<(Reverse<i32>, CpuId)>,
    latest: Vec<i32>,
    ahead: WrittenAfter,
}

impl StealIndex {
    /// `n` queues, each publishing nothing (`MIN_GOODNESS`) since time 0.
    pub(super) fn new(n: usize) -> Self {
        StealIndex {
            order: (0..n).map(|c| (Reverse(MIN_GOODNESS), c)).collect(),
            latest: vec![MIN_GOODNESS; n],
            ahead: WrittenAfter::new(n),
        }
    }

    /// Queue `c` now publishes `goodness` as its newest value, written at `at`.
    pub(super) fn note(&mut self, c: CpuId, goodness: i32, at: Time) {
        if goodness != self.latest[c] {
            self.order.remove(&(Reverse(self.latest[c]), c));
            self.order.insert((Reverse(goodness), c));
            self.latest[c] = goodness;
        }
        self.ahead.note(c, at);
    }

    /// The queues whose newest value a read at `now` sees and beats `floor`, highest
    /// first (the lower CPU on ties), with that value.
    pub(super) fn above(&self, floor: i32, now: Time) -> impl Iterator<Item = (i32, CpuId)> + '_ {
        self.order
            .iter()
            .take_while(move |&&(Reverse(g), _)| g > floor)
            .filter(move |&&(_, c)| !self.ahead.is_after(c, now))
            .map(|&(Reverse(g), c)| (g, c))
    }

    /// The queues whose newest value was written after `now`: read them one by one.
    pub(super) fn ahead_of(&self, now: Time) -> impl Iterator<Item = CpuId> + '_ {
        self.ahead.after(now)
    }

    /// Check the entries against each queue's newest `(goodness, time)`.
    pub(super) fn check(&self, queues: impl Iterator<Item = (i32, Time)>) -> Result<(), String> {
        let (goodness, times): (Vec<i32>, Vec<Time>) = queues.unzip();
        self.ahead
            .check(times.into_iter())
            .map_err(|e| format!("mq steal index: {e}"))?;
        for (c, &g) in goodness.iter().enumerate() {
            if self.latest[c] != g || !self.order.contains(&(Reverse(g), c)) {
                return Err(format!(
                    "mq steal index: queue {c} kept {}, publishes {g}",
                    self.latest[c]
                ));
            }
        }
        if self.order.len() != goodness.len() {
            return Err("mq steal index: entries for queues that do not exist".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Published;
    use proptest::prelude::*;

    proptest! {
        /// The index and its queues read one by one give the plain walk's candidates:
        /// every queue whose value a read at `now` sees beats the floor, strictly.
        #[test]
        fn candidates_are_the_walks(
            n in 1usize..40,
            writes in prop::collection::vec((0usize..40, 0u64..2_000, -3i32..6), 1..300),
            reads in prop::collection::vec((0u64..2_200, -3i32..6), 1..20),
        ) {
            let mut v = vec![Published::new(MIN_GOODNESS); n];
            let mut x = StealIndex::new(n);
            let mut clock = 0u64;
            for (i, &(c, jitter, g)) in writes.iter().enumerate() {
                let c = c % n;
                clock += 100;
                let t = (clock + jitter).saturating_sub(1_000);
                v[c].set(t, g);
                x.note(c, v[c].latest(), v[c].newest_time());
                x.check(v.iter().map(|p| (p.latest(), p.newest_time())))
                    .map_err(TestCaseError::fail)?;
                let (back, floor) = reads[i % reads.len()];
                let now = (clock + 1_100).saturating_sub(back);
                let mut got: Vec<(i32, CpuId)> = x.above(floor, now).collect();
                got.extend(
                    x.ahead_of(now)
                        .map(|c| (v[c].at(now), c))
                        .filter(|&(g, _)| g > floor),
                );
                got.sort_unstable();
                let want: Vec<(i32, CpuId)> = (0..n)
                    .map(|c| (v[c].at(now), c))
                    .filter(|&(g, _)| g > floor)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
