//! Every CPU's `rq->nr_running`, with what the balancer's walk over all of them needs
//! kept up to date as they change.
//!
//! model: the G1 and 2.6.0 balancers (`find_busiest_queue`, schedulers.md §2.5.8) read
//! every CPU's `nr_running` at every call and remember them all in `prev_nr_running[]`;
//! an idle CPU calls it at every tick. The modelled kernel's walk is O(CPUs) and stays
//! so in simulated time (the remote reads are charged whole). The host need not repeat
//! it: an idle call's answer is the longest other queue as of the caller's clock, which
//! a max-tree keeps, and its memory is the current lengths, which only a later busy
//! call reads: the idle call notes where the log of changes stood, and the busy call
//! rebuilds the lengths of that moment from it.
//!
//! The index pays only with many CPUs: its upkeep at every enqueue and dequeue (the tree
//! path, the log, `ahead`) costs more than the walks it spares at 8 (the 8-way
//! `hackbench:groups=10,loops=50` under o1-2.6 runs 4.6 % fewer instructions without it).
//! Up to `INDEX_ABOVE` CPUs there is none: the walks read every queue in the host, as
//! the kernel does, with the same answers.
//!
//! Design (with the index):
//!
//! * `v[c]`: the [`Published`] value, what every reader sees at its own time.
//! * `latest[c]`: `v[c].latest()`, dense, so a snapshot is one copy.
//! * `tree`: a max-tree over `(latest[c], lowest c)`; its root is the longest queue and,
//!   among equal lengths, the lowest CPU — the kernel's strict `>` walk from CPU 0.
//! * `ahead`: when each CPU's value was last written ([`WrittenAfter`]). A reader at `now` sees
//!   `latest[c]` exactly when `c`'s newest write is not after `now`; the CPUs whose
//!   newest write is (writes by hooks processed earlier whose clocks ran ahead, few) are
//!   read one by one.
//! * `changed`: every change of a `latest` entry, oldest first, with the value it
//!   replaced; entry `k` is change `base + k`.
//! * `prev[this]`: `this` CPU's `prev_nr_running[]`. Only a busy call reads it, an
//!   idle call (every tick of an idle CPU) only rewrites it, so an idle call
//!   ([`NrRunning::remember`]) leaves a [`Snapshot`] instead: the change count it saw
//!   and the CPUs it read ahead of `latest`, with what it read. The next read
//!   ([`NrRunning::prev`], [`NrRunning::exchange`]) materialises it: `latest`, with each
//!   CPU changed since then put back to the value its first later change replaced.
//!   The log keeps at most `LOG_PER_CPU` changes per CPU; dropping its older half first
//!   materialises the snapshots that still need it.
//!
//! Invariants: `latest[c] == v[c].latest()`; with the index, the tree's leaf `c` encodes
//! `latest[c]` and every inner node the larger of its children; `ahead` holds exactly
//! one entry per CPU, dated by its newest kept write; every snapshot's change count is
//! at least `base`; a CPU's `prev_nr_running[c]` is, with a snapshot, its `patched`
//! value or else `latest[c]` as of the snapshot's change count, and without one,
//! `vals[c]`. [`NrRunning::remember`], [`NrRunning::exchange`] and
//! [`NrRunning::busiest`] equal the plain walk (the tests compare them on random
//! histories).

use crate::engine::Time;
use crate::kernel::sched::published::WrittenAfter;
use crate::machine::CpuId;
use crate::policy::Published;

/// CPUs up to which the walks read every queue in the host (see the module doc).
const INDEX_ABOVE: usize = 64;

/// The walk without the index: every CPU's length as a read at `now` sees it (copied into
/// `remember` when given), and the longest but `this`'s, strict `>` from CPU 0.
fn plain_busiest(
    v: &[Published<u32>],
    this: CpuId,
    now: Time,
    mut remember: Option<&mut [u32]>,
) -> Option<(CpuId, u32)> {
    let mut best: Option<(CpuId, u32)> = None;
    for (c, v) in v.iter().enumerate() {
        let l = v.at(now);
        if let Some(r) = remember.as_deref_mut() {
            r[c] = l;
        }
        if c != this && best.is_none_or(|(_, m)| l > m) {
            best = Some((c, l));
        }
    }
    best
}

/// `rq->nr_running` of every CPU; see the module doc.
#[derive(Clone, Debug, Default)]
pub struct NrRunning {
    v: Vec<Published<u32>>,
    latest: Vec<u32>,
    /// The index (`tree`, `ahead`, `changed`, the snapshots) is kept; without it
    /// those stay empty and unused.
    indexed: bool,
    /// Leaves at `size..size + n`, as [`key`]s; node `k`'s children are `2k`, `2k + 1`.
    tree: Vec<u64>,
    size: usize,
    ahead: WrittenAfter,
    /// Changes of `latest`, oldest first: `(cpu, the value replaced)`; entry `k` is
    /// change `base + k`.
    changed: Vec<(CpuId, u32)>,
    base: u64,
    prev: Vec<Prev>,
}

/// One CPU's `prev_nr_running[]`.
#[derive(Clone, Debug, Default)]
struct Prev {
    vals: Vec<u32>,
    /// Left by an idle call: `vals` is stale until materialised.
    snapshot: Option<Snapshot>,
}

/// What an idle call remembered: every CPU's `latest` as of change `seq`, except the
/// CPUs it read ahead of their latest, with the values it read.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    seq: u64,
    patched: Vec<(CpuId, u32)>,
}

/// Changes kept, per CPU, before the older half of the log is dropped.
const LOG_PER_CPU: usize = 8;

/// A leaf's key: longer queues first, then lower CPUs (a larger key wins).
fn key(len: u32, cpu: CpuId) -> u64 {
    (u64::from(len) << 32) | u64::from(u32::MAX - cpu as u32)
}

fn unkey(k: u64) -> (CpuId, u32) {
    ((u32::MAX - k as u32) as CpuId, (k >> 32) as u32)
}

impl NrRunning {
    /// `n` CPUs, every queue empty since time 0; indexed past `INDEX_ABOVE` CPUs.
    pub fn new(n: usize) -> NrRunning {
        NrRunning::with_index(n, n > INDEX_ABOVE)
    }

    /// [`NrRunning::new`], the index kept or not whatever the CPUs (the tests check
    /// both against the plain walk).
    fn with_index(n: usize, indexed: bool) -> NrRunning {
        let size = if indexed {
            n.next_power_of_two().max(1)
        } else {
            0
        };
        let mut tree = vec![0; 2 * size];
        for c in 0..n.min(size) {
            tree[size + c] = key(0, c);
        }
        for k in (1..size).rev() {
            tree[k] = tree[2 * k].max(tree[2 * k + 1]);
        }
        NrRunning {
            v: vec![Published::new(0); n],
            latest: vec![0; n],
            indexed,
            tree,
            size,
            ahead: WrittenAfter::new(if indexed { n } else { 0 }),
            changed: Vec::new(),
            base: 0,
            prev: vec![
                Prev {
                    vals: vec![0; n],
                    snapshot: None,
                };
                n
            ],
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
        self.v[c].update(now, |n| {
            *n = n.checked_add_signed(delta).expect("nr_running")
        });
        if !self.indexed {
            self.latest[c] = self.v[c].latest();
            return;
        }
        self.ahead.note(c, self.v[c].newest_time());
        let l = self.v[c].latest();
        if l != self.latest[c] {
            if self.changed.len() >= LOG_PER_CPU * self.latest.len() {
                self.trim_log();
            }
            self.changed.push((c, self.latest[c]));
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
        let mut cs: Vec<CpuId> = self.ahead.after(now).collect();
        cs.sort_unstable();
        cs
    }

    /// `this` CPU's `prev_nr_running[c]`.
    #[inline]
    pub fn prev(&mut self, this: CpuId, c: CpuId) -> u32 {
        self.materialize(this);
        self.prev[this].vals[c]
    }

    /// A walk's step: `prev_nr_running[c] = cur` for `this`, returning the old entry.
    #[inline]
    pub fn exchange(&mut self, this: CpuId, c: CpuId, cur: u32) -> u32 {
        self.materialize(this);
        std::mem::replace(&mut self.prev[this].vals[c], cur)
    }

    /// Write `this`'s snapshot, if it has one, into its `prev_nr_running[]`: `latest`,
    /// each CPU changed since put back to what its first later change replaced (the log
    /// read newest first, so the earliest change writes last), then the patched CPUs.
    fn materialize(&mut self, this: CpuId) {
        let Some(snap) = self.prev[this].snapshot.take() else {
            return;
        };
        let vals = &mut self.prev[this].vals;
        vals.copy_from_slice(&self.latest);
        for &(c, replaced) in self.changed[(snap.seq - self.base) as usize..].iter().rev() {
            vals[c] = replaced;
        }
        for &(c, seen) in &snap.patched {
            vals[c] = seen;
        }
    }

    /// Drop the older half of the log, first materialising the snapshots taken before
    /// its end. Idle CPUs take a new snapshot at every tick, so the ones left that old
    /// are of CPUs gone busy since, few.
    fn trim_log(&mut self) {
        let half = self.changed.len() / 2;
        let cutoff = self.base + half as u64;
        for t in 0..self.prev.len() {
            if self.prev[t]
                .snapshot
                .as_ref()
                .is_some_and(|s| s.seq < cutoff)
            {
                self.materialize(t);
            }
        }
        self.changed.drain(..half);
        self.base = cutoff;
    }

    /// An idle `find_busiest_queue` walk by `this` at `now`: [`NrRunning::busiest`],
    /// then [`NrRunning::remember`], reading the CPUs ahead of `now` once for both.
    pub fn idle_walk(&mut self, this: CpuId, now: Time) -> Option<(CpuId, u32)> {
        if !self.indexed {
            return self.plain_walk(this, now);
        }
        let ahead = self.ahead_of(now);
        let b = self.busiest_given(&ahead, this, now);
        self.remember_given(ahead, this, now);
        b
    }

    /// What a walk over every CPU at `now` leaves in `this`'s `prev_nr_running[]`: each
    /// CPU's length as a read at `now` sees it.
    pub fn remember(&mut self, this: CpuId, now: Time) {
        if !self.indexed {
            self.plain_walk(this, now);
            return;
        }
        self.remember_given(self.ahead_of(now), this, now);
    }

    /// [`NrRunning::idle_walk`] without the index: every CPU's length read at `now` and
    /// remembered in `this`'s `prev_nr_running[]`; the longest but `this`'s.
    fn plain_walk(&mut self, this: CpuId, now: Time) -> Option<(CpuId, u32)> {
        plain_busiest(&self.v, this, now, Some(&mut self.prev[this].vals))
    }

    fn remember_given(&mut self, ahead: Vec<CpuId>, this: CpuId, now: Time) {
        let patched = ahead.into_iter().map(|c| (c, self.v[c].at(now))).collect();
        self.prev[this].snapshot = Some(Snapshot {
            seq: self.base + self.changed.len() as u64,
            patched,
        });
    }

    /// The longest queue other than `this`'s as seen at `now`, the lowest CPU among
    /// equals: `(cpu, length)`.
    pub fn busiest(&self, now: Time, this: CpuId) -> Option<(CpuId, u32)> {
        if !self.indexed {
            return plain_busiest(&self.v, this, now, None);
        }
        self.busiest_given(&self.ahead_of(now), this, now)
    }

    /// [`NrRunning::busiest`] with `ahead`, the CPUs ahead of `now`, ascending: those are
    /// read one by one, the ranges between them from the tree.
    fn busiest_given(&self, ahead: &[CpuId], this: CpuId, now: Time) -> Option<(CpuId, u32)> {
        let n = self.latest.len();
        let mut best = 0u64;
        let mut lo = 0;
        for &c in ahead.iter().chain(std::iter::once(&n)) {
            best = best.max(self.max_in_except(lo, c, this));
            if c < n && c != this {
                best = best.max(key(self.at(c, now), c));
            }
            lo = c + 1;
        }
        (best != 0).then(|| unkey(best))
    }

    /// The largest key among CPUs `lo..hi` but `this` (0 when none).
    fn max_in_except(&self, lo: usize, hi: usize, this: CpuId) -> u64 {
        if (lo..hi).contains(&this) {
            self.max_in(lo, this).max(self.max_in(this + 1, hi))
        } else {
            self.max_in(lo, hi)
        }
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

    impl NrRunning {
        /// `prev_nr_running[c]` of `this` without materialising a snapshot: the lazy
        /// state read as the invariant states it.
        fn prev_seen(&self, this: CpuId, c: CpuId) -> u32 {
            let p = &self.prev[this];
            let Some(snap) = &p.snapshot else {
                return p.vals[c];
            };
            if let Some(&(_, seen)) = snap.patched.iter().find(|&&(d, _)| d == c) {
                return seen;
            }
            self.changed[(snap.seq - self.base) as usize..]
                .iter()
                .find(|&&(d, _)| d == c)
                .map_or(self.latest[c], |&(_, replaced)| replaced)
        }
    }

    proptest! {
        #[test]
        fn remember_exchange_and_busiest_equal_the_plain_walk(
            n in 1usize..40,
            writes in prop::collection::vec((0usize..40, 0u64..2_000, any::<bool>()), 0..400),
            reads in prop::collection::vec((0usize..40, 0u64..2_200, 0u8..4), 1..20),
            indexed in any::<bool>(),
        ) {
            let mut nr = NrRunning::with_index(n, indexed);
            // The plain `prev_nr_running[][]`, rewritten whole at every walk.
            let mut plain_prev = vec![vec![0u32; n]; n];
            let mut clock = 0u64;
            for (i, &(c, jitter, up)) in writes.iter().enumerate() {
                let c = c % n;
                // Time goes on, but a write may be dated up to 2 µs back or ahead.
                clock += 100;
                let t = (clock + jitter).saturating_sub(1_000);
                // A write changes the value it sees (the kernel's, under the lock).
                let delta = if up || nr.at(c, t) == 0 { 1 } else { -1 };
                nr.add(c, t, delta);
                let (this, back, how) = reads[i % reads.len()];
                let this = this % n;
                let now = (clock + 1_100).saturating_sub(back);
                let plain: Vec<u32> = (0..n).map(|c| nr.at(c, now)).collect();
                if how == 0 {
                    // A busy walk, entry by entry.
                    for (c, &cur) in plain.iter().enumerate() {
                        prop_assert_eq!(nr.exchange(this, c, cur), plain_prev[this][c]);
                    }
                } else if how == 1 {
                    let b = plain_busiest(&nr, now, this);
                    prop_assert_eq!(nr.idle_walk(this, now), b);
                } else if i % 3 == 0 {
                    prop_assert_eq!(nr.busiest(now, this), plain_busiest(&nr, now, this));
                    nr.remember(this, now);
                } else {
                    continue;
                }
                plain_prev[this] = plain;
                for (t, row) in plain_prev.iter().enumerate() {
                    for (c, &v) in row.iter().enumerate() {
                        prop_assert_eq!(nr.prev_seen(t, c), v, "prev[{}][{}]", t, c);
                    }
                }
            }
            for c in 0..n {
                prop_assert_eq!(nr.latest(c), nr.v[c].latest());
            }
        }
    }

    #[test]
    fn a_snapshot_outlives_the_log_it_was_taken_in() {
        let n = 4;
        let mut nr = NrRunning::with_index(n, true);
        nr.add(2, 0, 1);
        nr.remember(0, 10);
        let seen: Vec<u32> = (0..n).map(|c| nr.latest(c)).collect();
        // Enough changes to trim the log twice past the snapshot.
        for k in 0..(3 * LOG_PER_CPU * n) as u64 {
            nr.add(1 + k as usize % 3, 100 + k, 1);
        }
        assert!(nr.base > 0, "the log was trimmed");
        assert!(
            nr.prev[0].snapshot.is_none(),
            "materialised before its changes went"
        );
        for (c, &len) in seen.iter().enumerate() {
            assert_eq!(nr.prev(0, c), len, "cpu {c}");
        }
        // A busy walk reads the remembered lengths back, entry by entry.
        assert_eq!(nr.exchange(0, 2, 9), 1);
        assert_eq!(nr.prev(0, 2), 9);
    }

    #[test]
    fn ties_go_to_the_lowest_cpu_and_this_is_skipped() {
        for indexed in [false, true] {
            let mut nr = NrRunning::with_index(8, indexed);
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
            assert_eq!(NrRunning::with_index(1, indexed).busiest(0, 0), None);
        }
    }

    #[test]
    fn the_index_is_kept_past_64_cpus_only() {
        assert!(!NrRunning::new(INDEX_ABOVE).indexed);
        assert!(NrRunning::new(INDEX_ABOVE + 1).indexed);
    }
}
