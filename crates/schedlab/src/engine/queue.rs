//! The event queue: a binary min-heap on `(time, seq)`, whose popped top is removed lazily.
//!
//! Design: almost every event's handler schedules one event of its own (a CPU's next
//! `Resume`, the next tick). Removing the top at `pop` and inserting the new event at
//! `push` would walk the heap twice (down from the root, then up from a leaf); instead
//! `pop` copies the top out and leaves it in place as a *hole*, and the next `push` writes
//! its event into the hole and moves it down to its place: one walk instead of two. A
//! `pop` that finds the hole still open removes it first, as a plain heap pop would have. The set of pending keys and the rule "the least key pops" are those of
//! a plain heap, so the order is the same (the keys are unique: `seq` never repeats).
//!
//! Periodic events (every CPU's next tick: one per CPU, a 1 024-CPU machine's heap was
//! mostly ticks) go in a second lane, a FIFO: each is pushed one period after the event
//! that re-arms it pops, and events pop in time order, so pushed in time order too. `pop`
//! takes the lesser `(time, seq)` of the heap's top and the FIFO's front; `seq` is shared,
//! so the order is the one heap's.
//!
//! Invariant: `heap[1..]` (and `heap[0]` unless `hole`) is a min-heap on `(time, seq)`;
//! with `hole`, `heap[0]` is the entry last popped, no longer pending. `fifo` is sorted
//! by `(time, seq)`.

use std::collections::VecDeque;

use super::Time;

#[derive(Clone, Copy)]
struct Entry<E> {
    time: Time,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// True when `self` pops before `other`.
    #[inline]
    fn before(&self, other: &Self) -> bool {
        (self.time, self.seq) < (other.time, other.seq)
    }
}

/// A deterministic priority queue of events; see the module docs for the ordering rules.
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    /// Periodic events, in time order ([`EventQueue::push_periodic`]).
    fifo: VecDeque<Entry<E>>,
    /// `heap[0]` has been popped and awaits its replacement (module docs).
    hole: bool,
    seq: u64,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            fifo: VecDeque::new(),
            hole: false,
            seq: 0,
            popped: 0,
        }
    }

    /// Schedule `event` at `time`. Among equal times, earlier calls pop first.
    #[inline]
    pub fn push(&mut self, time: Time, event: E) {
        let seq = self.seq;
        self.seq += 1;
        let e = Entry { time, seq, event };
        if self.hole {
            self.hole = false;
            self.heap[0] = e;
            self.sift_down(0);
        } else {
            self.heap.push(e);
            self.sift_up(self.heap.len() - 1);
        }
    }

    /// Schedule a periodic `event` at `time`, not before any periodic event pending or
    /// popped (a tick re-armed one period after the one popping): it waits in the FIFO
    /// lane. It pops exactly where [`EventQueue::push`] would have put it.
    #[inline]
    pub fn push_periodic(&mut self, time: Time, event: E) {
        debug_assert!(
            self.fifo.back().is_none_or(|b| b.time <= time),
            "periodic event at {time} before a pending one"
        );
        let seq = self.seq;
        self.seq += 1;
        self.fifo.push_back(Entry { time, seq, event });
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.hole {
            self.remove_top();
        }
        let e = match (self.heap.first(), self.fifo.front()) {
            (Some(h), Some(f)) if f.before(h) => self.fifo.pop_front()?,
            (Some(&h), _) => {
                self.hole = true;
                h
            }
            (None, _) => self.fifo.pop_front()?,
        };
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Time> {
        let heap = if self.hole {
            // The hole's children head the two halves of the heap.
            self.heap
                .iter()
                .skip(1)
                .take(2)
                .min_by_key(|e| (e.time, e.seq))
        } else {
            self.heap.first()
        };
        [heap, self.fifo.front()]
            .into_iter()
            .flatten()
            .min_by_key(|e| (e.time, e.seq))
            .map(|e| e.time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.hole) + self.fifo.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events popped so far (the `sim.events` counter).
    #[inline]
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Close the hole with no event to fill it: the last entry takes its place.
    fn remove_top(&mut self) {
        self.hole = false;
        let last = self.heap.pop().expect("a hole is an entry");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
    }

    /// Move the entry at `pos` up to its place.
    #[inline]
    fn sift_up(&mut self, mut pos: usize) {
        let h = &mut self.heap[..];
        let e = h[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !e.before(&h[parent]) {
                break;
            }
            h[pos] = h[parent];
            pos = parent;
        }
        h[pos] = e;
    }

    /// Move the entry at `pos` down to its place.
    #[inline]
    fn sift_down(&mut self, mut pos: usize) {
        let h = &mut self.heap[..];
        let e = h[pos];
        let end = h.len();
        loop {
            let mut child = 2 * pos + 1;
            if child >= end {
                break;
            }
            if child + 1 < end && h[child + 1].before(&h[child]) {
                child += 1;
            }
            if !h[child].before(&e) {
                break;
            }
            h[pos] = h[child];
            pos = child;
        }
        h[pos] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the tests' random schedules.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        q.push(3, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        q.push(0, 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['e', 'b', 'd', 'a', 'c']);
        assert_eq!(q.popped(), 5);
    }

    /// Pushes interleaved with pops (the hole filled, or closed by the next pop) pop in
    /// the order of a plain sorted list of `(time, seq)`.
    #[test]
    fn interleaved_pushes_and_pops_match_a_sorted_list() {
        let mut q = EventQueue::new();
        let mut model: Vec<(Time, u64)> = Vec::new();
        let mut seq = 0u64;
        let mut rand = xorshift(12_345);
        let mut now = 0;
        for _ in 0..20_000 {
            let r = rand();
            // 0-2 pushes per step, at or after the last popped time, some at equal times.
            for _ in 0..(r % 3) {
                let t = now + rand() % 50;
                q.push(t, seq);
                model.push((t, seq));
                seq += 1;
            }
            assert_eq!(q.len(), model.len());
            let want = model.iter().copied().min();
            assert_eq!(q.peek_time(), want.map(|(t, _)| t));
            if !r.is_multiple_of(5) {
                let got = q.pop();
                if let Some(w) = want {
                    model.retain(|&m| m != w);
                    now = w.0;
                }
                assert_eq!(got, want);
            }
        }
        assert_eq!(q.is_empty(), model.is_empty());
    }

    /// Periodic events, each re-armed one period after it pops, mixed with ordinary
    /// ones at equal and nearby times, pop in the order of a plain sorted list.
    #[test]
    fn periodic_events_pop_where_the_heap_would_put_them() {
        let mut q = EventQueue::new();
        let mut model: Vec<(Time, u64, bool)> = Vec::new();
        let mut seq = 0u64;
        let mut rand = xorshift(99_991);
        let period = 40;
        // Ticks of 5 "CPUs" at phases, the first ones through the heap as at boot.
        for c in 0..5u64 {
            let t = (c * 7) % period;
            q.push(t, (seq, true));
            model.push((t, seq, true));
            seq += 1;
        }
        for _ in 0..20_000 {
            let w = model.iter().copied().min().unwrap();
            model.retain(|&m| m != w);
            assert_eq!(q.peek_time(), Some(w.0));
            assert_eq!(q.pop(), Some((w.0, (w.1, w.2))));
            if w.2 {
                q.push_periodic(w.0 + period, (seq, true));
                model.push((w.0 + period, seq, true));
                seq += 1;
            }
            for _ in 0..(rand() % 3) {
                let t = w.0 + rand() % 50;
                q.push(t, (seq, false));
                model.push((t, seq, false));
                seq += 1;
            }
            assert_eq!(q.len(), model.len());
        }
    }
}
