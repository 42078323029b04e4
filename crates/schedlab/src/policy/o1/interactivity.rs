//! Interactivity estimators: -D2's `sleep_hist` load estimator, the stock 2.5.2 sleep-time
//! boost and 2.6.0's Kolivas `sleep_avg`.
//!
//! `sleep_hist` (-D1/-D2 as merged into 2.5.2-pre10 and kept by -G1; recovered from the
//! removed side of Libenzi's patch against `linux-2.5.2-pre10.vanilla`, LKML 9 Jan 2002,
//! "Re: [patch] O(1) scheduler, -D1, 2.5.2-pre9, 2.4.17", Message-ID
//! `Pine.LNX.4.40.0201082057560.936-100000@blue1.dev.mcafeelabs.com`): a 4-entry ring of
//! the jiffies slept in each of the last four seconds (`sleep_hist`, current second at
//! `sleep_idx`). Leaving the runqueue stamps `sleep_timestamp` and clears the seconds
//! that passed since `run_timestamp`; joining it adds the sleep to the ring (whole
//! seconds as `HZ`) and, unless the task already joined this jiffy, sets
//! `prio = NICE_TO_PRIO(nice) + MAX_PENALTY·(HZ − sleep_avg)/HZ` with
//! `sleep_avg = Σ sleep_hist·HZ / (3·HZ + jiffies % HZ)` and `MAX_PENALTY = 40/3 = 13`:
//! a penalty, never a boost. Each tick re-runs the pair on the current task (so its
//! penalty follows its load and it goes to the tail of its list); an expired slice
//! goes back to the active array only when `prio ≤ MAX_RT_PRIO + MAX_PENALTY/2` (106:
//! nice −14 or better), else to the expired array.
//!
//! Early (stock 2.5.2, schedulers.md §2.3; used for `o1-d1` and `o1-g1`, see versions.rs
//! for why): on activation a task's priority improves by `JSLEEP_TO_PRIO(slept) =
//! slept·20/HZ` levels (one level per 50 ms asleep), floored at `MAX_RT_PRIO`; every
//! expired slice costs one level (capped at 139). `TASK_INTERACTIVE ⇔ 100 ≤ prio ≤
//! PRIO_INTERACTIVE`. The priority itself is the estimator ("the sleep average is hidden
//! in p->prio", Molnar, -I0 mail).
//!
//! 2.6.0 (§2.5.1, §2.5.3): `sleep_avg` in ns, `0 ≤ sleep_avg ≤ NS_MAX_SLEEP_AVG`;
//! `CURRENT_BONUS = NS_TO_JIFFIES(sleep_avg)·MAX_BONUS/MAX_SLEEP_AVG` (0…10);
//! `effective_prio = clamp(static_prio − (CURRENT_BONUS − 5), 100, 139)`;
//! `TASK_INTERACTIVE ⇔ prio ≤ static_prio − DELTA`, `DELTA = nice·10/40 + 2` (C
//! truncation). Sleep credits `sleep_avg` (scaled by `MAX_BONUS − CURRENT_BONUS`), run
//! time debits it in `schedule()`; `interactive_credit` saturates at ±`CREDIT_LIMIT`.

use super::prio_array::{MAX_PRIO, MAX_RT_PRIO};
use super::versions::{Consts, MAX_BONUS};
use super::TaskSched;

/// 2.6 `CREDIT_LIMIT`.
pub const CREDIT_LIMIT: i64 = 100;

// ---- -D2 sleep_hist ----

/// `SLEEP_HIST_SIZE`.
pub const SLEEP_HIST_SIZE: usize = 4;

/// `MAX_PENALTY = MAX_USER_PRIO/3`.
pub const MAX_PENALTY: i32 = 40 / 3;

/// `update_sleep_avg_deactivate(p)`: the task leaves the runqueue at jiffy `j`.
pub fn hist_deactivate(ts: &mut TaskSched, j: u64, hz: u64) {
    let delta = j / hz - ts.run_timestamp / hz;
    if delta > 0 {
        if delta < SLEEP_HIST_SIZE as u64 {
            for _ in 0..delta {
                ts.sleep_idx = (ts.sleep_idx + 1) % SLEEP_HIST_SIZE;
                ts.sleep_hist[ts.sleep_idx] = 0;
            }
        } else {
            ts.sleep_hist = [0; SLEEP_HIST_SIZE];
            ts.sleep_idx = 0;
        }
    }
    ts.sleep_timestamp = j;
}

/// `update_sleep_avg_activate(p, j)`: add the sleep since `sleep_timestamp`.
fn hist_add_sleep(ts: &mut TaskSched, j: u64, hz: u64) {
    let delta = j / hz - ts.sleep_timestamp / hz;
    let delta_ticks = if delta > 0 {
        if delta < SLEEP_HIST_SIZE as u64 {
            ts.sleep_hist[ts.sleep_idx] += hz - ts.sleep_timestamp % hz;
            ts.sleep_idx = (ts.sleep_idx + 1) % SLEEP_HIST_SIZE;
            for _ in 1..delta {
                ts.sleep_idx = (ts.sleep_idx + 1) % SLEEP_HIST_SIZE;
                ts.sleep_hist[ts.sleep_idx] = hz;
            }
        } else {
            ts.sleep_hist = [hz; SLEEP_HIST_SIZE];
            ts.sleep_idx = 0;
        }
        ts.sleep_hist[ts.sleep_idx] = 0;
        j % hz
    } else {
        j - ts.sleep_timestamp
    };
    ts.sleep_hist[ts.sleep_idx] += delta_ticks;
    ts.run_timestamp = j;
}

/// `get_sleep_avg(p, j)`: jiffies slept per second over the ring.
pub fn hist_sleep_avg(ts: &TaskSched, j: u64, hz: u64) -> u64 {
    let sum: u64 = ts.sleep_hist.iter().sum();
    sum * hz / ((SLEEP_HIST_SIZE as u64 - 1) * hz + j % hz)
}

/// -D2 `activate_task`'s estimator step at jiffy `j`: nothing when the task already
/// joined this jiffy; else the sleep is added and a non-RT task's priority becomes its
/// nice level plus the load penalty. The C arithmetic is unsigned 32-bit (`load =
/// HZ − sleep`), kept as such.
pub fn hist_activate(ts: &mut TaskSched, j: u64, hz: u64) {
    if ts.run_timestamp == j {
        return;
    }
    hist_add_sleep(ts, j, hz);
    let sleep = hist_sleep_avg(ts, j, hz) as u32;
    let load = (hz as u32).wrapping_sub(sleep);
    let penalty = ((MAX_PENALTY as u32).wrapping_mul(load) / hz as u32) as i32;
    if !ts.rt {
        ts.prio = (ts.static_prio + penalty).min(MAX_PRIO as i32 - 1);
    }
}

/// -D2's test at slice expiry: back into the active array.
pub fn hist_task_interactive(ts: &TaskSched) -> bool {
    ts.prio <= MAX_RT_PRIO + MAX_PENALTY / 2
}

// ---- early ----

/// `JSLEEP_TO_PRIO(t) = t·20/HZ`.
pub fn jsleep_to_prio(c: &Consts, slept_jiffies: u64) -> i64 {
    (slept_jiffies * 20 / c.hz) as i64
}

/// Early `activate_task` bonus: improve `prio` by the sleep since `sleep_jtime`.
pub fn early_wake_bonus(ts: &mut TaskSched, c: &Consts, jiffies: u64) {
    if ts.rt {
        return;
    }
    let bonus = jsleep_to_prio(c, jiffies.saturating_sub(ts.sleep_jtime)).min(140);
    ts.prio = (ts.prio as i64 - bonus).max(MAX_RT_PRIO as i64) as i32;
}

/// Early `TASK_INTERACTIVE(p)`.
pub fn early_task_interactive(ts: &TaskSched, c: &Consts) -> bool {
    ts.prio >= MAX_RT_PRIO && ts.prio <= c.prio_interactive
}

// ---- 2.6.0 ----

/// `CURRENT_BONUS(p)`.
pub fn current_bonus(ts: &TaskSched, c: &Consts) -> u64 {
    c.ns_to_jiffies(ts.sleep_avg) * MAX_BONUS / c.max_sleep_avg
}

/// `effective_prio(p)`.
pub fn effective_prio(ts: &TaskSched, c: &Consts) -> i32 {
    if ts.rt {
        return ts.prio;
    }
    let bonus = current_bonus(ts, c) as i32 - MAX_BONUS as i32 / 2;
    (ts.static_prio - bonus).clamp(MAX_RT_PRIO, 139)
}

/// `DELTA(p) = TASK_NICE(p)·MAX_BONUS/40 + INTERACTIVE_DELTA` (C truncation).
pub fn delta(static_prio: i32) -> i32 {
    let nice = static_prio - 120;
    nice * MAX_BONUS as i32 / 40 + 2
}

/// 2.6 `TASK_INTERACTIVE(p)`.
pub fn task_interactive(ts: &TaskSched) -> bool {
    ts.prio <= ts.static_prio - delta(ts.static_prio)
}

/// `JUST_INTERACTIVE_SLEEP(p)` in ns.
pub fn just_interactive_sleep(ts: &TaskSched, c: &Consts) -> u64 {
    let j = c.max_sleep_avg as i64 * (MAX_BONUS as i64 / 2 + delta(ts.static_prio) as i64 + 1)
        / MAX_BONUS as i64
        - 1;
    c.jiffies_to_ns(j.max(0) as u64)
}

/// `HIGH_CREDIT(p)`.
pub fn high_credit(ts: &TaskSched) -> bool {
    ts.interactive_credit > CREDIT_LIMIT
}

/// `LOW_CREDIT(p)`.
pub fn low_credit(ts: &TaskSched) -> bool {
    ts.interactive_credit < -CREDIT_LIMIT
}

/// `recalc_task_prio(p, now)` (§2.5.3). All workload tasks are user tasks (`p->mm`).
pub fn recalc_task_prio(ts: &mut TaskSched, c: &Consts, now: u64) {
    let mut sleep = now.saturating_sub(ts.timestamp).min(c.ns_max_sleep_avg);
    if sleep > 0 {
        if ts.activated != -1 && sleep > just_interactive_sleep(ts, c) {
            ts.sleep_avg = c.jiffies_to_ns(c.max_sleep_avg - c.avg_timeslice);
            if !high_credit(ts) {
                ts.interactive_credit += 1;
            }
        } else {
            let f = (MAX_BONUS - current_bonus(ts, c)).max(1);
            sleep *= f;
            if low_credit(ts) {
                sleep = sleep.min(c.jiffies_to_ns(c.task_timeslice(ts.static_prio)));
            }
            if ts.activated == -1 && !high_credit(ts) {
                let jis = just_interactive_sleep(ts, c);
                if ts.sleep_avg >= jis {
                    sleep = 0;
                } else if ts.sleep_avg + sleep >= jis {
                    ts.sleep_avg = jis;
                    sleep = 0;
                }
            }
            ts.sleep_avg += sleep;
            if ts.sleep_avg > c.ns_max_sleep_avg {
                ts.sleep_avg = c.ns_max_sleep_avg;
                if !high_credit(ts) {
                    ts.interactive_credit += 1;
                }
            }
        }
    }
    ts.prio = effective_prio(ts, c);
}

/// `TIMESLICE_GRANULARITY(p)` in ticks (SMP form, with `num_online_cpus`).
pub fn timeslice_granularity(ts: &TaskSched, c: &Consts, cpus: usize) -> u64 {
    let e = (MAX_BONUS - current_bonus(ts, c)).max(1) - 1;
    c.min_timeslice * (1u64 << e) * cpus as u64
}

/// The run-time debit of `schedule()` for `prev` (§2.5.3): `run_time` capped at
/// `NS_MAX_SLEEP_AVG`, divided by `CURRENT_BONUS` for high-credit tasks.
pub fn charge_run_time(ts: &mut TaskSched, c: &Consts, now: u64) {
    let mut run_time = now.saturating_sub(ts.timestamp).min(c.ns_max_sleep_avg);
    if high_credit(ts) {
        run_time /= current_bonus(ts, c).max(1);
    }
    if ts.sleep_avg <= run_time {
        ts.sleep_avg = 0;
        if !high_credit(ts) && !low_credit(ts) {
            ts.interactive_credit -= 1;
        }
    } else {
        ts.sleep_avg -= run_time;
    }
}

#[cfg(test)]
mod tests {
    use super::super::versions::{D1, V26};
    use super::*;

    fn task(nice: i32) -> TaskSched {
        TaskSched::new(120 + nice, false)
    }

    #[test]
    fn delta_truncates_toward_zero() {
        let d: Vec<i32> = [-20, -10, 0, 10, 19]
            .iter()
            .map(|n| delta(120 + n))
            .collect();
        assert_eq!(d, vec![-3, 0, 2, 4, 6]);
    }

    #[test]
    fn kolivas_bonus_range_and_interactivity() {
        let c = Consts::new(&V26, 1000);
        let mut t = task(0);
        t.sleep_avg = 0;
        assert_eq!(effective_prio(&t, &c), 125);
        t.sleep_avg = c.ns_max_sleep_avg;
        assert_eq!(effective_prio(&t, &c), 115);
        t.prio = effective_prio(&t, &c);
        assert!(task_interactive(&t));
        // A nice 0 task is interactive from bonus 2 on: prio ≤ 118.
        t.sleep_avg = c.jiffies_to_ns(c.max_sleep_avg * 7 / 10);
        t.prio = effective_prio(&t, &c);
        assert_eq!(t.prio, 118);
        assert!(task_interactive(&t));
        t.sleep_avg = c.jiffies_to_ns(c.max_sleep_avg * 6 / 10);
        t.prio = effective_prio(&t, &c);
        assert!(!task_interactive(&t));
        // A long sleep makes a task "just interactive".
        let mut s = task(0);
        s.timestamp = 0;
        recalc_task_prio(&mut s, &c, 2 * crate::engine::SEC);
        assert_eq!(s.sleep_avg, c.jiffies_to_ns(1020 - 102));
        assert_eq!(s.interactive_credit, 1);
    }

    #[test]
    fn sleep_hist_penalises_a_runner_and_spares_a_sleeper() {
        let hz = 100;
        // A task that never sleeps: every activation finds no sleep, full penalty.
        let mut hog = task(0);
        hist_deactivate(&mut hog, 1_000, hz);
        hist_activate(&mut hog, 1_000, hz);
        assert_eq!(hog.prio, 120 + MAX_PENALTY);
        // Joining again within the same jiffy changes nothing.
        hog.prio = 120;
        hist_activate(&mut hog, 1_000, hz);
        assert_eq!(hog.prio, 120);
        // A task asleep for 5 s: the ring is full of whole seconds, no penalty.
        let mut sleeper = task(0);
        hist_deactivate(&mut sleeper, 1_000, hz);
        hist_activate(&mut sleeper, 1_500, hz);
        assert_eq!(sleeper.sleep_hist, [0, 100, 100, 100]);
        assert_eq!(sleeper.prio, 120);
        let mut s2 = task(0);
        s2.run_timestamp = 1_000;
        hist_deactivate(&mut s2, 1_000, hz);
        hist_activate(&mut s2, 1_350, hz); // 3.5 s asleep, ending 50 ticks into a second
                                           // 3 whole seconds (idx 1, 2, 3) then the current one (idx 3 rewritten): slept
                                           // HZ in the first partial second, HZ, HZ, and 50 ticks now.
        assert_eq!(hist_sleep_avg(&s2, 1_350, hz), (100 + 100 + 50) * 100 / 350);
        // Half asleep over the ring: about half the penalty.
        let mut half = task(0);
        half.sleep_hist = [50, 50, 50, 0];
        half.sleep_idx = 3;
        half.run_timestamp = 1_200;
        half.sleep_timestamp = 1_200;
        hist_activate(&mut half, 1_250, hz);
        // sum = 150 + 50 = 200 over 300 + 50 → sleep 57, load 43, penalty 13·43/100 = 5.
        assert_eq!(half.prio, 125);
        assert!(!hist_task_interactive(&half));
        let mut rich = task(-20);
        rich.prio = 100 + MAX_PENALTY / 2;
        assert!(hist_task_interactive(&rich));
    }

    #[test]
    fn early_sleep_boost_is_one_level_per_50_ms() {
        let c = Consts::new(&D1, 100);
        let mut t = task(0);
        t.sleep_jtime = 100;
        early_wake_bonus(&mut t, &c, 115); // 150 ms asleep
        assert_eq!(t.prio, 117);
        early_wake_bonus(&mut t, &c, 100_000);
        assert_eq!(t.prio, 100);
        assert!(early_task_interactive(&t, &c));
        t.prio = 111;
        assert!(!early_task_interactive(&t, &c));
    }
}
