//! A measuring window kept in the shared memory of a benchmark's threads.
//!
//! Benchmarks whose threads loop forever (reflex, sched_test_yield) count their work in a
//! shared counter and take the time themselves (`gettimeofday()` in the loop): the first
//! thread to finish a unit of work `warmup` after "go" opens the window, the first to
//! finish one `duration` later closes it and ends the run. No sampler task has to win a
//! CPU from the threads, so the window does not depend on how a policy treats a sleeper.
//!
//! A fixed amount of work can be timed instead ([`Window::until`]): the window opens at
//! "go" and closes when the counter reaches the target.
//!
//! Records: marks `start`, `end`; counts `<what>_start`, `<what>_end` (the counter at both).

use std::sync::{Arc, Mutex};

use crate::engine::Time;
use crate::kernel::abi::Env;

#[derive(Default)]
struct State {
    done: u64,
    go: Option<Time>,
    start: Option<Time>,
    closed: bool,
    /// Units done by each worker that says who it is ([`Window::done_by`]), and that count
    /// when the window opened and when it closed.
    by: Vec<u64>,
    by_start: Vec<u64>,
    by_end: Option<(Time, Vec<u64>)>,
}

/// A window shared by the threads of one benchmark (clone it into each thread).
#[derive(Clone)]
pub struct Window {
    state: Arc<Mutex<State>>,
    warmup: Time,
    duration: Time,
    /// Close when this many units are done (and open at "go"), instead of by time.
    target: Option<u64>,
    keys: [&'static str; 2],
}

impl Window {
    /// A window opening `warmup` after [`Window::go`] and lasting `duration`; the counter is
    /// recorded under `keys` = (`<what>_start`, `<what>_end`).
    pub fn new(warmup: Time, duration: Time, keys: [&'static str; 2]) -> Window {
        Window {
            state: Arc::default(),
            warmup,
            duration,
            target: None,
            keys,
        }
    }

    /// A window opening at [`Window::go`] and closing when `target` units are done.
    pub fn until(target: u64, keys: [&'static str; 2]) -> Window {
        Window {
            target: Some(target),
            ..Window::new(0, 0, keys)
        }
    }

    /// The benchmark starts now (the main thread, before releasing the workers).
    pub fn go(&self, env: &mut Env<'_>) {
        env.mark("go");
        let mut s = self.lock();
        s.go = Some(env.now);
        if self.target.is_some() {
            s.start = Some(env.now);
            env.mark("start");
            env.count(self.keys[0], s.done);
        }
    }

    /// One unit of work is done at `env.now`: count it, open or close the window.
    pub fn done(&self, env: &mut Env<'_>) {
        self.step(env, None);
    }

    /// As [`Window::done`], by worker `i`, whose units in the window [`Window::by_worker`]
    /// gives.
    pub fn done_by(&self, env: &mut Env<'_>, i: usize) {
        self.step(env, Some(i));
    }

    /// The window's length and each worker's units in it, once it has closed.
    pub fn by_worker(&self) -> Option<(Time, Vec<u64>)> {
        let s = self.lock();
        let (end, at_end) = s.by_end.as_ref()?;
        let start = s.start?;
        let units = at_end
            .iter()
            .enumerate()
            .map(|(i, n)| n - s.by_start.get(i).copied().unwrap_or(0))
            .collect();
        Some((end - start, units))
    }

    fn step(&self, env: &mut Env<'_>, who: Option<usize>) {
        let warmup = self.warmup;
        let duration = self.duration;
        let keys = self.keys;
        let mut s = self.lock();
        s.done += 1;
        if let Some(i) = who {
            if s.by.len() <= i {
                s.by.resize(i + 1, 0);
            }
            s.by[i] += 1;
        }
        let Some(go) = s.go else { return };
        if let Some(target) = self.target {
            if !s.closed && s.done >= target {
                s.closed = true;
                env.mark("end");
                env.count(keys[1], s.done);
                env.stop();
            }
            return;
        }
        match s.start {
            None if env.now >= go + warmup => {
                s.start = Some(env.now);
                s.by_start = s.by.clone();
                env.mark("start");
                env.count(keys[0], s.done);
            }
            Some(start) if !s.closed && env.now >= start + duration => {
                s.closed = true;
                s.by_end = Some((env.now, s.by.clone()));
                env.mark("end");
                env.count(keys[1], s.done);
                env.stop();
            }
            _ => {}
        }
    }

    /// Units done in the window, from a finished run's record.
    pub fn counted(rec: &crate::kernel::abi::Record, keys: [&str; 2]) -> u64 {
        rec.count(keys[1]).saturating_sub(rec.count(keys[0]))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // determinism: one host thread runs the simulation; the mutex only makes the
        // shared state `Send` and is never contended.
        self.state.lock().expect("window state poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimRng;
    use crate::kernel::abi::Record;

    #[test]
    fn opens_after_the_warmup_and_closes_after_the_duration() {
        let w = Window::new(100, 1000, ["n_start", "n_end"]);
        let mut rng = SimRng::new(1);
        let mut rec = Record::default();
        let mut at = |now, rec: &mut Record, f: &dyn Fn(&Window, &mut Env<'_>)| {
            let mut env = Env {
                ret: 0,
                now,
                pid: 2,
                cpu: 0,
                ctxt: 0,
                rng: &mut rng,
                rec,
            };
            f(&w, &mut env);
        };
        at(5, &mut rec, &|w, e| w.done(e)); // before go: counted, no window
        at(10, &mut rec, &|w, e| w.go(e));
        at(50, &mut rec, &|w, e| w.done(e));
        assert!(rec.first("start").is_none());
        at(110, &mut rec, &|w, e| w.done(e)); // opens: 3 done so far
        at(600, &mut rec, &|w, e| w.done(e));
        assert!(!rec.stop);
        at(1110, &mut rec, &|w, e| w.done(e)); // closes: 5 done
        at(1200, &mut rec, &|w, e| w.done(e)); // after the close: ignored
        assert_eq!(
            (rec.first("start"), rec.last("end")),
            (Some(110), Some(1110))
        );
        assert_eq!((rec.count("n_start"), rec.count("n_end")), (3, 5));
        assert_eq!(Window::counted(&rec, ["n_start", "n_end"]), 2);
        assert!(rec.stop);
    }

    #[test]
    fn a_target_window_opens_at_go_and_closes_at_the_target() {
        let w = Window::until(2, ["n_start", "n_end"]);
        let mut rng = SimRng::new(1);
        let mut rec = Record::default();
        for (now, go) in [(10, true), (20, false), (30, false), (40, false)] {
            let mut env = Env {
                ret: 0,
                now,
                pid: 2,
                cpu: 0,
                ctxt: 0,
                rng: &mut rng,
                rec: &mut rec,
            };
            if go {
                w.go(&mut env);
            } else {
                w.done(&mut env);
            }
        }
        assert_eq!((rec.first("start"), rec.last("end")), (Some(10), Some(30)));
        assert_eq!(Window::counted(&rec, ["n_start", "n_end"]), 2);
    }
}
