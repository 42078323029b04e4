//! A front-side bus as a calendar of transfer slots.
//!
//! Design: time on a bus is cut into slots of one transaction each (`Interconnect` sets
//! the slot length from the bus clock). A transfer requested at `t` takes the first free
//! slot at or after `t`; the gap is its queueing delay. Slots are kept as bits in a ring of
//! 64-slot words tagged with their absolute word number, so a request may come in any
//! order in time — the kernel runs a CPU's scheduler hook atomically while its clock runs
//! a few microseconds ahead of the others' — and still queues only behind transfers that
//! really overlap it. Marking and searching cost O(1) per word.
//!
//! Invariants: a slot is given to at most one transfer; `busy_ns` is the number of slots
//! given times the slot length. A request older than the ring's horizon (never made by
//! the kernel: its clocks stay within one hook of each other) finds a free bus and is not
//! recorded.

use strength_reduce::StrengthReducedU64;

use crate::engine::Time;

/// Words in the ring: 4096 × 64 slots; at 20 ns a slot, a 5.2 ms horizon.
const WORDS: usize = 4096;

/// Counters of one bus over a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BusStats {
    /// Transfers (slots) carried.
    pub transfers: u64,
    /// Time the bus was occupied.
    pub busy_ns: Time,
    /// Total time transfers waited for a free slot.
    pub queued_ns: Time,
}

/// One word of the ring: the absolute word number it holds and its taken slots, side by
/// side (one lookup per request).
#[derive(Clone, Copy)]
struct Word {
    tag: u64,
    bits: u64,
}

/// One bus.
pub struct Bus {
    /// The slot length, as a divisor: every request divides its time by it, and a
    /// multiply-and-shift is several times cheaper than a division.
    slot: StrengthReducedU64,
    /// A fixed-size ring: an index taken modulo `WORDS` needs no bounds check.
    ring: Box<[Word; WORDS]>,
    /// Counters.
    pub stats: BusStats,
}

impl Bus {
    /// An idle bus whose transactions take `slot_ns` each.
    pub fn new(slot_ns: Time) -> Bus {
        assert!(slot_ns > 0, "a bus slot must take time");
        Bus {
            slot: StrengthReducedU64::new(slot_ns),
            ring: vec![
                Word {
                    tag: u64::MAX,
                    bits: 0
                };
                WORDS
            ]
            .into_boxed_slice()
            .try_into()
            .unwrap_or_else(|_| unreachable!("WORDS words")),
            stats: BusStats::default(),
        }
    }

    /// The slot length.
    pub fn slot_ns(&self) -> Time {
        self.slot.get()
    }

    /// The bits of absolute word `w`, reset if the ring slot held an older word; `None`
    /// when it already holds a newer one (`w` is beyond the horizon).
    #[inline]
    fn word(&mut self, w: u64) -> Option<&mut u64> {
        let word = &mut self.ring[(w % WORDS as u64) as usize];
        if word.tag == w {
            Some(&mut word.bits)
        } else if word.tag == u64::MAX || word.tag < w {
            word.tag = w;
            word.bits = 0;
            Some(&mut word.bits)
        } else {
            None
        }
    }

    /// Occupy the first free slot at or after `t`; returns the wait before it starts.
    #[inline]
    pub fn occupy(&mut self, t: Time) -> Time {
        let first = t / self.slot;
        let mut w = first / 64;
        let mut from = (first % 64) as u32;
        loop {
            let Some(bits) = self.word(w) else {
                return 0;
            };
            let free = !*bits & (u64::MAX << from);
            if free != 0 {
                let b = free.trailing_zeros();
                *bits |= 1 << b;
                let start = (w * 64 + b as u64) * self.slot.get();
                let wait = start.saturating_sub(t);
                self.stats.transfers += 1;
                self.stats.busy_ns += self.slot.get();
                self.stats.queued_ns += wait;
                return wait;
            }
            w += 1;
            from = 0;
        }
    }

    /// Occupy `n` slots, the first free ones at or after `t` (a stream of transfers that
    /// the requester overlaps, as a refill does); returns the delay: how much later than
    /// on an idle bus (`n` slots from `t`) the last one ends. That is what the requester
    /// waits and what `queued_ns` counts, so it is computed once.
    #[inline]
    pub fn occupy_many(&mut self, t: Time, n: u64) -> Time {
        let first = t / self.slot;
        let w = first / 64;
        // The common case, a bus mostly idle (every line transfer comes here): the `n`
        // slots from the first free one at or after `t` are all free in `t`'s word, so
        // they are the first `n` free ones. One mask; the general walk (`occupy_walk`)
        // gives the same slots.
        if n > 0 {
            if let Some(bits) = self.word(w) {
                let free = !*bits & (u64::MAX << (first % 64));
                let b = free.trailing_zeros(); // 64 when the word is full: no room
                if n <= u64::from(64 - b) {
                    let run = (u64::MAX >> (64 - n)) << b;
                    if free & run == run {
                        *bits |= run;
                        return self.taken(t, n, w * 64 + u64::from(b) + n);
                    }
                }
            }
        }
        self.occupy_walk(t, n)
    }

    /// [`Bus::occupy_many`] slot by slot, word by word.
    #[inline(never)]
    fn occupy_walk(&mut self, t: Time, n: u64) -> Time {
        if n == 0 {
            return 0;
        }
        let first = t / self.slot;
        let mut w = first / 64;
        let mut from = (first % 64) as u32;
        let mut left = n;
        loop {
            let Some(bits) = self.word(w) else {
                return 0;
            };
            let mut free = !*bits & (u64::MAX << from);
            let avail = free.count_ones() as u64;
            if avail >= left {
                // Take the lowest `left` free bits; the last one ends the stream.
                let mut last = 0;
                while left > 0 {
                    last = free.trailing_zeros();
                    *bits |= 1 << last;
                    free &= free - 1;
                    left -= 1;
                }
                return self.taken(t, n, w * 64 + u64::from(last) + 1);
            }
            *bits |= free;
            left -= avail;
            w += 1;
            from = 0;
        }
    }

    /// A paced stream: `lines` requests of `n` slots each, the first at `t`, each next one
    /// `pace` after the previous one started (or after `t`, for the first one) — a refill
    /// whose requester asks for one line at a time at its source's rate. Each request takes
    /// the first `n` free slots at or after its time, as [`Bus::occupy_many`] does, and a
    /// request that waits pushes the later ones back by its wait. Returns the total wait.
    ///
    /// The same slots, waits and counters as `lines` calls of `occupy_many`, without a
    /// division per line: a 64 MB pass is two million requests.
    pub fn occupy_paced(&mut self, t: Time, lines: u64, n: u64, pace: Time) -> Time {
        // Its own copy of the loop: without another bus it keeps its state in registers.
        self.paced(None, false, t, lines, n, pace)
    }

    /// [`Bus::occupy_paced`] for a stream that crosses to `other` too (a transfer from a
    /// cache on the other bus): each request takes its slots on both buses, and waits for
    /// the later of the two. Both buses must have the same slot length.
    pub fn occupy_paced_with(
        &mut self,
        other: Option<&mut Bus>,
        t: Time,
        lines: u64,
        n: u64,
        pace: Time,
    ) -> Time {
        self.paced(other, false, t, lines, n, pace)
    }

    /// [`Bus::occupy_paced`] for a stream relayed from `via` (a line pulled from a cache
    /// on the other bus, one after the other): each request first takes the first `n` free
    /// slots on `via` at or after its time, as [`Bus::occupy_many`] does, and then, from
    /// the moment those started, the first `n` free ones on this bus; the next request is
    /// `pace` after that. The same slots, waits and counters as a request on `via` then
    /// one on this bus at the request's time plus its wait on `via`, line by line. Both
    /// buses must have the same slot length.
    pub fn occupy_paced_after(
        &mut self,
        via: &mut Bus,
        t: Time,
        lines: u64,
        n: u64,
        pace: Time,
    ) -> Time {
        self.paced(Some(via), true, t, lines, n, pace)
    }

    /// The paced streams: on this bus alone, or crossing to `other` too, its slots taken
    /// at the request's time (`relay` false) or once the request's slots on `other` have
    /// started (`relay` true).
    #[inline(always)]
    fn paced(
        &mut self,
        mut other: Option<&mut Bus>,
        relay: bool,
        t: Time,
        lines: u64,
        n: u64,
        pace: Time,
    ) -> Time {
        if lines == 0 || n == 0 {
            return 0;
        }
        let s = self.slot.get();
        debug_assert!(other
            .as_ref()
            .is_none_or(|o| o.slot.get() == self.slot.get()));
        // The request time as slot index and remainder; the pace likewise.
        let (mut idx, mut rem) = StrengthReducedU64::div_rem(t, self.slot);
        let (pace_slots, pace_rem) = (pace / s, pace % s);
        // Per bus, slots taken and time waited; and the stream's total delay.
        let (mut taken, mut waited, mut taken_other, mut waited_other, mut lost) = (0, 0, 0, 0, 0);
        // A line whose own slots are free (on both buses when crossing) waits on
        // neither, whichever the semantics: its first free slots are its request's. Such
        // lines are marked without a search, a word at a time, the words held in
        // registers (a refill, a walk's misses, a run of state lines, is mostly this).
        let own = if n <= 64 { u64::MAX >> (64 - n) } else { 0 };
        // The next request: `pace` later. Both remainders are below a slot: at most one
        // carry.
        let next = |idx: &mut u64, rem: &mut u64| {
            *rem += pace_rem;
            *idx += pace_slots;
            if *rem >= s {
                *rem -= s;
                *idx += 1;
            }
        };
        let mut left = lines;
        while left > 0 {
            if own != 0 && other.is_none() {
                taken +=
                    n * self.place_free(&mut idx, &mut rem, &mut left, n, (pace_slots, pace_rem));
                if left == 0 {
                    break;
                }
                // The line at `idx` would queue or straddles two words.
            } else if own != 0 && idx % 64 + n <= 64 {
                let (w, run) = (idx / 64, own << (idx % 64));
                // `other` first, and this bus only if the line is free there: a word this
                // path looks up (and may reset, `Bus::word`) is one the slow path would.
                let theirs = match other.as_deref_mut() {
                    None => Some(None),
                    Some(o) => o.word(w).filter(|bits| **bits & run == 0).map(Some),
                };
                if let Some((theirs, bits)) = theirs.and_then(|o| Some((o, self.word(w)?))) {
                    // Both buses' taken slots as one word: a line goes where both are free.
                    let before = *bits | theirs.as_deref().map_or(0, |b| *b);
                    let (mut both, last, from) = (before, w * 64 + 64 - n, left);
                    let mut clash = false;
                    while left > 0 && idx <= last {
                        let run = own << (idx % 64);
                        if both & run != 0 {
                            clash = true;
                            break;
                        }
                        both |= run;
                        left -= 1;
                        next(&mut idx, &mut rem);
                    }
                    // The lines marked here, on each bus.
                    let marked = both ^ before;
                    *bits |= marked;
                    let k = (from - left) * n;
                    taken += k;
                    if let Some(b) = theirs {
                        *b |= marked;
                        taken_other += k;
                    }
                    if !clash {
                        continue;
                    }
                    // A line that would queue takes the general path below.
                }
            }
            left -= 1;
            // The request starts when its slots on every bus it crosses have started;
            // relayed, this bus is asked from the moment its slots on `other` started.
            let mut start = idx;
            let (mut at, mut at_rem) = (idx, rem);
            if let Some(o) = other.as_deref_mut() {
                if let Some(end) = o.take_first_free(idx, n) {
                    taken_other += n;
                    if end - n > idx {
                        waited_other += (end - n - idx) * s - rem;
                        start = end - n;
                        if relay {
                            (at, at_rem) = (start, 0);
                        }
                    }
                }
            }
            if let Some(end) = self.take_first_free(at, n) {
                taken += n;
                if end - n > at {
                    waited += (end - n - at) * s - at_rem;
                    start = start.max(end - n);
                }
            }
            if start > idx {
                lost += (start - idx) * s - rem;
                idx = start;
                rem = 0;
            }
            next(&mut idx, &mut rem);
        }
        self.stats.transfers += taken;
        self.stats.busy_ns += taken * s;
        self.stats.queued_ns += waited;
        if let Some(o) = other {
            o.stats.transfers += taken_other;
            o.stats.busy_ns += taken_other * s;
            o.stats.queued_ns += waited_other;
        }
        lost
    }

    /// The fast path of a paced stream on this bus alone: from the request at slot `idx`
    /// (`rem` into it), each line whose `n` slots there are free takes them and the next
    /// request is `pace` later, word after word, each word's bits held in a register,
    /// until no line is `left` or one would queue or straddle two words (the general
    /// path takes that one). Returns the lines placed; `n` is 1 to 64.
    #[inline(always)]
    fn place_free(
        &mut self,
        idx: &mut u64,
        rem: &mut u64,
        left: &mut u64,
        n: u64,
        pace: (u64, u64),
    ) -> u64 {
        let (s, (pace_slots, pace_rem)) = (self.slot.get(), pace);
        let own = u64::MAX >> (64 - n);
        let (mut i, mut r, mut l) = (*idx, *rem, *left);
        while i % 64 + n <= 64 {
            let w = i / 64;
            let Some(bits) = self.word(w) else {
                break;
            };
            let last = w * 64 + 64 - n;
            let mut both = *bits;
            let mut clash = false;
            while l > 0 && i <= last {
                let run = own << (i % 64);
                if both & run != 0 {
                    clash = true;
                    break;
                }
                both |= run;
                l -= 1;
                // The next request; both remainders are below a slot: one carry at most.
                r += pace_rem;
                i += pace_slots;
                if r >= s {
                    r -= s;
                    i += 1;
                }
            }
            *bits = both;
            if clash || l == 0 {
                break;
            }
        }
        let placed = *left - l;
        (*idx, *rem, *left) = (i, r, l);
        placed
    }

    /// Mark the first `n` free slots at or after slot `first`; the slot after the last
    /// one, or `None` when the walk meets a word beyond the horizon.
    #[inline]
    fn take_first_free(&mut self, first: u64, n: u64) -> Option<u64> {
        let mut w = first / 64;
        let mut from = (first % 64) as u32;
        let mut left = n;
        loop {
            let bits = self.word(w)?;
            let mut free = !*bits & (u64::MAX << from);
            while free != 0 {
                let b = free.trailing_zeros();
                *bits |= 1 << b;
                free &= free - 1;
                left -= 1;
                if left == 0 {
                    return Some(w * 64 + u64::from(b) + 1);
                }
            }
            w += 1;
            from = 0;
        }
    }

    /// Account `n` slots taken for a request at `t`, the last ending before slot `end`;
    /// returns the request's delay: the time from `t` to that end, less the `n` slots'
    /// own length (nothing when the first slot started before `t`, within its slot).
    #[inline]
    fn taken(&mut self, t: Time, n: u64, end: u64) -> Time {
        let s = self.slot.get();
        let delay = ((end - n) * s).saturating_sub(t);
        self.stats.transfers += n;
        self.stats.busy_ns += n * s;
        self.stats.queued_ns += delay;
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_queue_in_slot_order_whatever_the_request_order() {
        let mut b = Bus::new(20);
        assert_eq!(b.occupy(100), 0); // slot 5
        assert_eq!(b.occupy(100), 20); // slot 6
        assert_eq!(b.occupy(105), 35); // slot 7 starts at 140
                                       // An earlier request, made later, takes the free slot before.
        assert_eq!(b.occupy(60), 0); // slot 3
        assert_eq!(b.occupy(80), 0); // slot 4
        assert_eq!(b.occupy(80), 80); // slot 8 at 160
        assert_eq!(b.stats.transfers, 6);
        assert_eq!(b.stats.busy_ns, 120);
        assert_eq!(b.stats.queued_ns, 20 + 35 + 80);
    }

    #[test]
    fn a_stream_takes_the_gaps_and_crosses_words() {
        let mut b = Bus::new(10);
        b.occupy(0);
        b.occupy(20);
        // 100 slots from 0: slots 1 and 3..=101 → ends at 1020, 20 past an idle bus.
        assert_eq!(b.occupy_many(0, 100), 20);
        assert_eq!(b.occupy(0), 1020);
        assert_eq!(b.stats.transfers, 103);
    }

    #[test]
    fn a_paced_stream_takes_the_slots_of_one_request_per_line() {
        // Against `occupy_many` line by line, on buses already carrying other traffic.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let same = |x: &Bus, y: &Bus| {
            assert_eq!(x.stats.transfers, y.stats.transfers);
            assert_eq!(x.stats.busy_ns, y.stats.busy_ns);
            assert_eq!(x.stats.queued_ns, y.stats.queued_ns);
            for w in 0..WORDS {
                assert_eq!(
                    (x.ring[w].tag, x.ring[w].bits),
                    (y.ring[w].tag, y.ring[w].bits)
                );
            }
        };
        for round in 0..600 {
            // Buses a and c take the requests one by one; b and d the paced stream.
            let mut buses: Vec<Bus> = (0..4).map(|_| Bus::new(20)).collect();
            for _ in 0..(next() % 400) {
                let (t, u) = (next() % 200_000, next() % 200_000);
                buses[0].occupy(t);
                buses[1].occupy(t);
                buses[2].occupy(u);
                buses[3].occupy(u);
            }
            // One bus; crossing to the other at the same time; relayed from it.
            let (crossing, relay) = (round % 3 == 1, round % 3 == 2);
            let (t, lines, n, pace) = (
                next() % 100_000,
                next() % 300,
                1 + next() % 3,
                1 + next() % 200,
            );
            let (mut at, mut lost) = (t, 0);
            for _ in 0..lines {
                let q = if relay {
                    let q = buses[2].occupy_many(at, n);
                    q + buses[0].occupy_many(at + q, n)
                } else {
                    let q = buses[0].occupy_many(at, n);
                    if crossing {
                        q.max(buses[2].occupy_many(at, n))
                    } else {
                        q
                    }
                };
                lost += q;
                at += q + pace;
            }
            let [a, b, c, d] = &mut buses[..] else {
                unreachable!()
            };
            let paced = if relay {
                b.occupy_paced_after(d, t, lines, n, pace)
            } else {
                b.occupy_paced_with(crossing.then_some(d), t, lines, n, pace)
            };
            assert_eq!(paced, lost);
            same(a, b);
            same(c, d);
        }
    }

    #[test]
    fn the_ring_reuses_old_words() {
        let mut b = Bus::new(20);
        let horizon = (WORDS as u64) * 64 * 20;
        assert_eq!(b.occupy(0), 0);
        assert_eq!(b.occupy(horizon), 0);
        // Beyond the horizon behind: free and unrecorded.
        assert_eq!(b.occupy(0), 0);
        assert_eq!(b.stats.transfers, 2);
    }
}
