//! A measuring window kept by a benchmark's own threads: the native twin of the model's
//! `schedlab::workload::window`, so that `warmup_ms`, `duration_ms` and `rounds=N` mean the
//! same on both sides.
//!
//! Benchmarks whose threads loop forever (reflex, sched_test_yield) count their work and
//! take the time themselves: the first thread to finish a unit of work `warmup` after "go"
//! opens the window, the first to finish one `duration` later closes it, and every thread
//! stops when it sees it closed. No sampler has to win a CPU from the threads. With
//! [`Window::until`] a fixed amount of work is timed instead: the window opens at "go" and
//! closes when the count reaches the target.
//!
//! The count itself is the caller's (a shared atomic, or per-thread [`Tally`] slots summed
//! only when the window opens or closes); [`Window::done`] reads it through a closure.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::sys;

const WAITING: u8 = 0;
const OPENING: u8 = 1;
const OPEN: u8 = 2;
const CLOSING: u8 = 3;
const CLOSED: u8 = 4;

/// A window shared by the threads of one benchmark (put it in an `Arc`).
pub struct Window {
    warmup_ns: u64,
    duration_ns: u64,
    /// Close when this many units are done (and open at go), instead of by time.
    target: Option<u64>,
    state: AtomicU8,
    go_ns: AtomicU64,
    start_ns: AtomicU64,
    start_n: AtomicU64,
    end_ns: AtomicU64,
    end_n: AtomicU64,
}

impl Window {
    /// A window opening `warmup_ns` after [`Window::go`] and lasting `duration_ns`.
    pub fn new(warmup_ns: u64, duration_ns: u64) -> Window {
        Window {
            warmup_ns,
            duration_ns,
            target: None,
            state: AtomicU8::new(WAITING),
            go_ns: AtomicU64::new(u64::MAX),
            start_ns: AtomicU64::new(0),
            start_n: AtomicU64::new(0),
            end_ns: AtomicU64::new(0),
            end_n: AtomicU64::new(0),
        }
    }

    /// A window opening at [`Window::go`] and closing when `target` units are done.
    pub fn until(target: u64) -> Window {
        Window {
            target: Some(target),
            ..Window::new(0, 0)
        }
    }

    /// The benchmark starts now, with `done` units already counted (call before releasing
    /// the workers).
    pub fn go(&self, done: u64) {
        let now = sys::now_ns();
        self.go_ns.store(now, Ordering::Relaxed);
        if self.target.is_some() {
            self.start_ns.store(now, Ordering::Relaxed);
            self.start_n.store(done, Ordering::Relaxed);
            self.state.store(OPEN, Ordering::Release);
        }
    }

    /// A worker has just counted a unit: open or close the window if it is time. `total`
    /// reads the units done by all workers (called only when the window opens or closes,
    /// and on every call in a target window). True once the window is closed: stop.
    pub fn done(&self, total: impl FnOnce() -> u64) -> bool {
        match self.state.load(Ordering::Acquire) {
            WAITING => {
                let go = self.go_ns.load(Ordering::Relaxed);
                if go != u64::MAX && sys::now_ns() >= go.saturating_add(self.warmup_ns) {
                    self.transition(WAITING, OPENING, OPEN, &self.start_ns, &self.start_n, total);
                }
                false
            }
            OPEN => {
                let close = match self.target {
                    Some(t) => {
                        let n = total();
                        if n < t {
                            return false;
                        }
                        self.transition(OPEN, CLOSING, CLOSED, &self.end_ns, &self.end_n, || n);
                        return true;
                    }
                    None => {
                        let start = self.start_ns.load(Ordering::Relaxed);
                        sys::now_ns() >= start + self.duration_ns
                    }
                };
                if close {
                    self.transition(OPEN, CLOSING, CLOSED, &self.end_ns, &self.end_n, total);
                }
                close
            }
            OPENING => false,
            _ => true,
        }
    }

    /// The first caller to move `from` → `busy` records the time and `total()`, then
    /// publishes `to`.
    fn transition(
        &self,
        from: u8,
        busy: u8,
        to: u8,
        at: &AtomicU64,
        n: &AtomicU64,
        total: impl FnOnce() -> u64,
    ) {
        if self
            .state
            .compare_exchange(from, busy, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            at.store(sys::now_ns(), Ordering::Relaxed);
            n.store(total(), Ordering::Relaxed);
            self.state.store(to, Ordering::Release);
        }
    }

    /// True once the window is closing or closed: workers stop.
    pub fn closed(&self) -> bool {
        self.state.load(Ordering::Acquire) >= CLOSING
    }

    /// The window's length in ns and the units done in it, once closed (read after every
    /// worker has been joined).
    pub fn measured(&self) -> Option<(u64, u64)> {
        (self.state.load(Ordering::Acquire) == CLOSED).then(|| {
            let ns = self.end_ns.load(Ordering::Relaxed) - self.start_ns.load(Ordering::Relaxed);
            let n = self.end_n.load(Ordering::Relaxed) - self.start_n.load(Ordering::Relaxed);
            (ns, n)
        })
    }
}

/// One counter per thread, each on its own cache line, so that counting every unit costs
/// a store to a line the thread owns (the original's per-thread counters) and not a
/// contended atomic; summed only when the window opens or closes.
pub struct Tally(Vec<Slot>);

#[repr(align(128))]
struct Slot(AtomicU64);

impl Tally {
    /// `n` counters at zero.
    pub fn new(n: usize) -> Tally {
        Tally((0..n).map(|_| Slot(AtomicU64::new(0))).collect())
    }

    /// Publish thread `i`'s count.
    pub fn set(&self, i: usize, v: u64) {
        self.0[i].0.store(v, Ordering::Relaxed);
    }

    /// The sum over all threads.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_target_window_opens_at_go_and_closes_at_the_target() {
        // As the model's: the target is on the count itself, the window holds what was
        // done between go and the close.
        let w = Window::until(4);
        assert!(!w.done(|| 1), "before go nothing happens");
        w.go(1);
        assert!(!w.done(|| 2));
        assert!(!w.done(|| 3));
        assert!(w.measured().is_none());
        assert!(w.done(|| 4));
        assert!(w.closed() && w.done(|| 9));
        assert_eq!(w.measured().map(|m| m.1), Some(3));
    }

    #[test]
    fn a_time_window_opens_after_the_warmup_and_closes_after_the_duration() {
        let w = Window::new(20_000_000, 30_000_000);
        w.go(0);
        assert!(!w.done(|| 5));
        std::thread::sleep(Duration::from_millis(25));
        assert!(!w.done(|| 10), "opens");
        assert!(!w.done(|| 11));
        std::thread::sleep(Duration::from_millis(35));
        assert!(w.done(|| 17), "closes");
        let (ns, n) = w.measured().unwrap();
        assert_eq!(n, 7);
        assert!(ns >= 30_000_000, "{ns}");
    }

    #[test]
    fn tally_sums_the_threads_slots() {
        let t = Tally::new(3);
        t.set(0, 4);
        t.set(2, 5);
        assert_eq!(t.total(), 9);
    }
}
