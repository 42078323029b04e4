//! A line that many CPUs write with locked operations: one owner at a time.
//!
//! Design: a `lock`-prefixed operation needs the line exclusive, so a line written by
//! several CPUs moves from cache to cache, and a request for it while it is on its way to
//! another CPU waits until that CPU has it (P6: the snoop of a line in transit is retried).
//! Its transfers queue behind each other, whatever the buses' load. The line keeps the
//! intervals in which it was in transit, in time order; a transfer requested at `t` takes
//! the first gap of its length at or after `t`. Requests may come out of time order (a
//! CPU's hook runs atomically while its clock runs a few microseconds ahead of the
//! others'), as on the buses (`bus.rs`), so the gap is searched, not appended.
//!
//! Invariants: intervals are disjoint, sorted, and touching ones are merged (a line busy
//! without a break is one interval); intervals that ended more than [`HORIZON`] before a
//! request are dropped, so the list stays short: at most one interval per transfer of the
//! last [`HORIZON`].

use std::collections::VecDeque;

use crate::engine::Time;

/// How far back a request may come behind the latest one: far beyond the skew of the
/// CPUs' clocks (one hook).
const HORIZON: Time = 100_000;

/// The transit intervals of one line.
#[derive(Clone, Debug, Default)]
pub struct HotLine {
    busy: VecDeque<(Time, Time)>,
}

impl HotLine {
    /// A transfer of `d` ns requested at `t`: it starts in the first gap of length `d` at
    /// or after `t`. Returns the wait before it starts.
    pub fn transfer(&mut self, t: Time, d: Time) -> Time {
        while self.busy.front().is_some_and(|&(_, end)| end + HORIZON < t) {
            self.busy.pop_front();
        }
        // The first interval that ends after `t`: the gaps before it are behind `t`.
        let mut i = self.busy.partition_point(|&(_, end)| end <= t);
        let mut start = t;
        while let Some(&(s, e)) = self.busy.get(i) {
            if start + d <= s {
                break;
            }
            start = start.max(e);
            i += 1;
        }
        self.insert(i, start, start + d);
        start - t
    }

    /// Put `[s, e)` before interval `i` (all before it end at or before `s`), merged with
    /// the neighbours it touches.
    fn insert(&mut self, i: usize, s: Time, e: Time) {
        let joins_prev = i > 0 && self.busy[i - 1].1 == s;
        let joins_next = self.busy.get(i).is_some_and(|&(ns, _)| ns == e);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = e,
            (false, true) => self.busy[i].0 = s,
            (false, false) => self.busy.insert(i, (s, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_of_one_line_queue_behind_each_other() {
        let mut l = HotLine::default();
        assert_eq!(l.transfer(1_000, 200), 0); // 1000..1200
        assert_eq!(l.transfer(1_100, 200), 100); // 1200..1400
        assert_eq!(l.transfer(1_050, 200), 350); // 1400..1600
        assert_eq!(l.busy, VecDeque::from([(1_000, 1_600)]));
    }

    #[test]
    fn an_earlier_request_made_later_takes_a_gap_that_fits() {
        let mut l = HotLine::default();
        assert_eq!(l.transfer(2_000, 200), 0); // 2000..2200
        assert_eq!(l.transfer(1_000, 200), 0); // 1000..1200, before it
        assert_eq!(l.transfer(1_900, 200), 300); // no room before 2000: 2200..2400
        assert_eq!(l.transfer(1_300, 200), 0); // 1300..1500 fits the gap
        assert_eq!(l.transfer(1_500, 400), 0); // 1500..1900 fits before 2000, touching
        assert_eq!(l.transfer(1_500, 100), 400); // 1900..2000, closing the gap
        assert_eq!(l.transfer(1_100, 150), 1_300); // the gaps left are too short: 2400..2550
        assert_eq!(l.busy, VecDeque::from([(1_000, 1_200), (1_300, 2_550)]));
    }

    #[test]
    fn old_intervals_are_dropped() {
        let mut l = HotLine::default();
        for k in 0..1_000 {
            l.transfer(k * 1_000, 200);
        }
        assert!(
            l.busy.len() <= (HORIZON / 1_000 + 2) as usize,
            "{}",
            l.busy.len()
        );
        // Against a slow line: each transfer after the first waits for all before it.
        let mut l = HotLine::default();
        let waits: Vec<Time> = (0..4).map(|_| l.transfer(0, 300)).collect();
        assert_eq!(waits, vec![0, 300, 600, 900]);
    }
}
