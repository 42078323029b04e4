//! Fields other CPUs read without taking their lock, seen as of the moment of the read.
//!
//! A hook runs atomically in the engine, but its CPU's clock moves on inside it (locks
//! waited for, tasks examined, lines fetched). Another CPU's hook that starts earlier in
//! simulated time than one of those writes may be processed after it. Under a lock that
//! cannot matter: the lock's `free_at` puts every holder after the previous one. A
//! lock-free read can: MQ's `examine_rmt_rqs` reads each queue's `max_na_goodness`
//! without its lock and re-checks it after `spin_trylock` (schedulers.md §3.3), O(1)'s
//! balancer reads every `nr_running` and re-checks the busiest under `double_lock_balance`
//! (§5). For the re-check to be able to disagree with the first read — V4's counter 3
//! against counter 2 — the first read must not see a write made later in simulated time.
//!
//! [`Published`] keeps the last few writes with their times; [`Published::at`] returns the
//! newest written no later than the reader's clock. Under the field's lock that is always
//! the newest write (the writer released the lock before the reader got it), so locked and
//! lock-free readers use the same call.
//!
//! Invariants: versions are kept in increasing time order; at most [`VERSIONS`] are kept,
//! and a read older than all of them sees the oldest kept (hooks last a few µs, writes to
//! one field come µs apart, so four versions cover a hook's span; the rare older read is
//! counted by no one and errs towards the newer value).

use crate::engine::Time;

/// Writes remembered per field.
pub const VERSIONS: usize = 4;

/// A value written at known simulated times; see the module doc.
#[derive(Clone, Copy, Debug)]
pub struct Published<T: Copy> {
    /// `(time written, value)`, a ring: the `i`-th oldest kept at `(head + i) % VERSIONS`;
    /// `len ≥ 1`. A write in time order (nearly all) replaces the oldest in place
    /// instead of moving the others down.
    v: [(Time, T); VERSIONS],
    head: u8,
    len: u8,
}

/// Ring positions wrap with a mask.
const _: () = assert!(VERSIONS.is_power_of_two());

impl<T: Copy> Published<T> {
    /// A field holding `value` since time 0.
    pub fn new(value: T) -> Self {
        Published {
            v: [(0, value); VERSIONS],
            head: 0,
            len: 1,
        }
    }

    /// The `i`-th oldest kept version.
    #[inline(always)]
    fn nth(&self, i: usize) -> &(Time, T) {
        &self.v[(self.head as usize + i) & (VERSIONS - 1)]
    }

    /// The value a read at `now` sees: the newest written at or before `now`.
    #[inline]
    pub fn at(&self, now: Time) -> T {
        *self.at_ref(now)
    }

    /// [`Published::at`] without the copy, for values larger than a word (MQ's
    /// `max_na_*` carries a whole cpumask, read at every remote queue examined).
    #[inline]
    pub fn at_ref(&self, now: Time) -> &T {
        let newest = self.nth(self.len as usize - 1);
        if newest.0 <= now {
            return &newest.1;
        }
        let mut older = (0..self.len as usize - 1).rev().map(|i| self.nth(i));
        &older.find(|(t, _)| *t <= now).unwrap_or(self.nth(0)).1
    }

    /// The newest value, whatever its time (invariant checks, reports).
    #[inline]
    pub fn latest(&self) -> T {
        self.nth(self.len as usize - 1).1
    }

    /// When the newest value was written.
    #[inline]
    pub fn newest_time(&self) -> Time {
        self.nth(self.len as usize - 1).0
    }

    /// Write `value` at `now`. A write dated before newer ones (a hook processed late)
    /// takes its place in time order; when all [`VERSIONS`] are kept the oldest goes (a
    /// write older than all of them is dropped).
    pub fn set(&mut self, now: Time, value: T) {
        let n = self.len as usize;
        if self.newest_time() <= now {
            if n < VERSIONS {
                self.v[(self.head as usize + n) & (VERSIONS - 1)] = (now, value);
                self.len += 1;
            } else {
                self.v[self.head as usize] = (now, value);
                self.head = ((self.head as usize + 1) & (VERSIONS - 1)) as u8;
            }
            return;
        }
        // Out of time order: in a plain array, oldest first.
        let mut kept: [(Time, T); VERSIONS] = [*self.nth(0); VERSIONS];
        for (i, k) in kept.iter_mut().enumerate().take(n) {
            *k = *self.nth(i);
        }
        let pos = kept[..n]
            .iter()
            .rposition(|(t, _)| *t <= now)
            .map_or(0, |i| i + 1);
        if n < VERSIONS {
            kept.copy_within(pos..n, pos + 1);
            kept[pos] = (now, value);
            self.len += 1;
        } else if pos == 0 {
            // Older than every kept version: it is overwritten by all of them anyway.
        } else {
            // Drop the oldest to make room.
            kept.copy_within(1..pos, 0);
            kept[pos - 1] = (now, value);
        }
        self.v = kept;
        self.head = 0;
    }

    /// Change the value in place at `now` (read, modify, write).
    pub fn update(&mut self, now: Time, f: impl FnOnce(&mut T)) {
        let mut x = self.at(now);
        f(&mut x);
        self.set(now, x);
    }
}

/// The newest write of each of a set of [`Published`] fields (one per CPU or queue),
/// `(time, value)`, in one dense array beside them: a walk over every field reading at a
/// clock not before a field's newest write sees that value here, without going through
/// the field's history in its owner's large record.
///
/// Invariant: `v[c]` is field `c`'s `(newest_time(), latest())`: [`Newest::note`] follows
/// every write.
#[derive(Clone, Debug, Default)]
pub struct Newest<T: Copy> {
    v: Vec<(Time, T)>,
}

impl<T: Copy + PartialEq> Newest<T> {
    /// The copy of `fields`, in order.
    pub fn of<'a>(fields: impl Iterator<Item = &'a Published<T>>) -> Self
    where
        T: 'a,
    {
        Newest {
            v: fields.map(|p| (p.newest_time(), p.latest())).collect(),
        }
    }

    /// Field `c`, `p`, was written.
    #[inline]
    pub fn note(&mut self, c: usize, p: &Published<T>) {
        self.v[c] = (p.newest_time(), p.latest());
    }

    /// Field `c`, `p`, as a read at `now` sees it: [`Published::at`].
    #[inline(always)]
    pub fn at(&self, c: usize, p: &Published<T>, now: Time) -> T {
        match self.v[c] {
            (t, x) if t <= now => x,
            _ => p.at(now),
        }
    }

    /// When field `c` was last written.
    #[inline]
    pub fn time(&self, c: usize) -> Time {
        self.v[c].0
    }

    /// Each field's newest write time, in order.
    pub fn times(&self) -> impl Iterator<Item = Time> + '_ {
        self.v.iter().map(|&(t, _)| t)
    }

    /// True when the copy of field `c` is `p`'s newest write.
    pub fn matches(&self, c: usize, p: &Published<T>) -> bool {
        self.v.get(c) == Some(&(p.newest_time(), p.latest()))
    }

    /// Fields copied.
    pub fn len(&self) -> usize {
        self.v.len()
    }

    /// True when no field is copied.
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
}

/// When each of a set of [`Published`] fields (one per CPU or queue) was last written,
/// for an index over their newest values: a read at `now` sees a field's newest value
/// exactly when it was written no later than `now`, and the few written after (by hooks
/// processed earlier whose clocks ran ahead) must be read one by one.
///
/// Design: a log of `(time, field)` sorted by time, one entry per write that moved a
/// field's newest time; an entry is live while it is its field's newest. A write is
/// dated near the latest ones, so it goes in near the log's end (a short move, where a
/// balanced tree paid a search and a rebalance for the removal and again for the
/// insertion at every write), and a read finds the entries after `now` by binary
/// search. Dead entries are dropped once the log holds more than twice the fields
/// (plus a margin of 64).
///
/// Invariant: `newest[c]` is field `c`'s newest write time; `log` is sorted and holds a
/// live entry `(newest[c], c)` for every `c`.
#[derive(Clone, Debug, Default)]
pub struct WrittenAfter {
    newest: Vec<Time>,
    log: Vec<(Time, usize)>,
}

impl WrittenAfter {
    /// `n` fields, each written at time 0.
    pub fn new(n: usize) -> Self {
        WrittenAfter {
            newest: vec![0; n],
            log: (0..n).map(|c| (0, c)).collect(),
        }
    }

    /// Field `c`'s newest write is now dated `at`.
    #[inline]
    pub fn note(&mut self, c: usize, at: Time) {
        if at == self.newest[c] {
            return;
        }
        // A field's newest write time only grows (`Published::newest_time`), so its
        // entries never repeat.
        debug_assert!(at > self.newest[c], "field {c} written back to {at}");
        self.newest[c] = at;
        let e = (at, c);
        let i = self.log.len() - self.log.iter().rev().take_while(|&&x| x > e).count();
        self.log.insert(i, e);
        if self.log.len() > 2 * self.newest.len() + 64 {
            let newest = &self.newest;
            self.log.retain(|&(t, c)| newest[c] == t);
        }
    }

    /// True when a read of field `c` at `now` may see an older value than its newest.
    #[inline]
    pub fn is_after(&self, c: usize, now: Time) -> bool {
        self.newest[c] > now
    }

    /// The fields whose newest write is after `now`.
    pub fn after(&self, now: Time) -> impl Iterator<Item = usize> + '_ {
        let from = self.log.partition_point(|&(t, _)| t <= now);
        self.log[from..]
            .iter()
            .filter(|&&(t, c)| self.newest[c] == t)
            .map(|&(_, c)| c)
    }

    /// Check against each field's newest write time, in order.
    pub fn check(&self, times: impl Iterator<Item = Time>) -> Result<(), String> {
        let mut n = 0;
        for (c, t) in times.enumerate() {
            n += 1;
            if self.newest.get(c) != Some(&t) || self.log.binary_search(&(t, c)).is_err() {
                return Err(format!("field {c}'s newest write at {t} is not kept"));
            }
        }
        if n != self.newest.len() {
            return Err(format!(
                "write times kept for {} fields, {n} given",
                self.newest.len()
            ));
        }
        if !self.log.is_sorted() {
            return Err("write times out of order".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_sees_the_newest_write_not_after_it() {
        let mut p = Published::new(0);
        p.set(100, 1);
        p.set(200, 2);
        assert_eq!(p.at(50), 0);
        assert_eq!(p.at(100), 1);
        assert_eq!(p.at(199), 1);
        assert_eq!(p.at(1_000), 2);
        assert_eq!(p.latest(), 2);
    }

    #[test]
    fn a_late_processed_write_takes_its_place_in_time() {
        let mut p = Published::new(0);
        p.set(300, 3);
        p.set(200, 2);
        assert_eq!(p.at(250), 2);
        assert_eq!(p.at(300), 3);
        assert_eq!(p.latest(), 3);
    }

    proptest::proptest! {
        /// The ring answers as the plain array it replaced: the newest [`VERSIONS`]
        /// writes by time, a write older than all of them dropped when full, reads
        /// older than all of them seeing the oldest kept.
        #[test]
        fn the_ring_keeps_what_an_array_in_time_order_keeps(
            ops in proptest::collection::vec((0u64..400, -5i32..5, 0u64..450), 1..60),
        ) {
            let mut p = Published::new(0);
            let mut plain: Vec<(Time, i32)> = vec![(0, 0)];
            for (t, x, read) in ops {
                p.set(t, x);
                let pos = plain.iter().rposition(|v| v.0 <= t).map_or(0, |i| i + 1);
                if plain.len() < VERSIONS {
                    plain.insert(pos, (t, x));
                } else if pos > 0 {
                    plain.remove(0);
                    plain.insert(pos - 1, (t, x));
                }
                let seen = plain.iter().rev().find(|v| v.0 <= read).unwrap_or(&plain[0]).1;
                proptest::prop_assert_eq!(p.at(read), seen);
                proptest::prop_assert_eq!(p.latest(), plain.last().unwrap().1);
                proptest::prop_assert_eq!(p.newest_time(), plain.last().unwrap().0);
            }
        }
    }

    #[test]
    fn only_the_last_versions_are_kept() {
        let mut p = Published::new(0);
        for t in 1..=10u64 {
            p.set(t * 10, t as i32);
        }
        assert_eq!(p.len as usize, VERSIONS);
        assert_eq!(p.at(100), 10);
        assert_eq!(p.at(75), 7);
        // Older than everything kept: the oldest kept.
        assert_eq!(p.at(5), 7);
        // A write older than every kept version changes nothing.
        p.set(1, -1);
        assert_eq!(p.at(5), 7);
        assert_eq!(p.latest(), 10);
    }
}
