//! The 2.4 priority arithmetic MQ keeps, and MQ's split of `goodness()` into its
//! variants (schedulers.md §1.3, §1.6, §3.2).
//!
//! | function | SCHED_OTHER, yielding | counter 0 | counter > 0 | FIFO/RR |
//! |---|---|---|---|---|
//! | `base_goodness` | −1 | 0 | counter + 20 − nice | (not used) |
//! | `na_goodness` | −1 | 0 | base | 1000 + rt_priority |
//! | `local_goodness` | −1 | 0 | base + [mm == this_mm] | 1000 + rt_priority |
//! | `goodness` | −1 | 0 | base + [mm == this_mm] + PCP·[processor == cpu] | 1000 + rt_priority |
//!
//! Unlike 2.4, the mm bonus is not given to kernel threads (`mm == NULL`), and the bonuses
//! are only added to a positive base (§3.2). Also used by `hamq`, whose goodness is 2.4's.

use crate::kernel::task::SchedPolicy;

/// `MIN_GOODNESS`: "nothing" in the published per-CPU values (an idle CPU, an empty
/// stealable slot).
pub const MIN_GOODNESS: i32 = -1000;

/// `RT_GOODNESS_MIN`.
pub const RT_GOODNESS_MIN: i32 = 1000;

/// `TICK_SCALE(x)` for a given HZ (§1.3).
pub fn tick_scale(x: i32, hz: u32) -> i32 {
    if hz < 200 {
        x >> 2
    } else if hz < 400 {
        x >> 1
    } else if hz < 800 {
        x
    } else if hz < 1600 {
        x << 1
    } else {
        x << 2
    }
}

/// `NICE_TO_TICKS(nice) = TICK_SCALE(20 − nice) + 1` (§1.3): 6 ticks for nice 0 at HZ=100.
pub fn nice_to_ticks(nice: i32, hz: u32) -> i32 {
    tick_scale(20 - nice, hz) + 1
}

/// `DEF_COUNTER = 10*HZ/100` (§1.2): init's first timeslice.
pub fn def_counter(hz: u32) -> i32 {
    (10 * hz / 100) as i32
}

/// `MAX_COUNTER = 20*HZ/100` (§1.2): the cap when a parent inherits a child's ticks.
pub fn max_counter(hz: u32) -> i32 {
    (20 * hz / 100) as i32
}

/// The scheduling facts of one task that the goodness functions read.
#[derive(Clone, Copy, Debug)]
pub struct Prio {
    /// `counter`: ticks left.
    pub counter: i32,
    /// `policy & SCHED_YIELD`.
    pub yielding: bool,
    /// Class.
    pub policy: SchedPolicy,
    /// Nice.
    pub nice: i32,
    /// RT priority.
    pub rt_priority: u32,
    /// Address space.
    pub mm: u32,
    /// `processor`.
    pub processor: usize,
}

impl Prio {
    fn rt(&self) -> Option<i32> {
        (self.policy != SchedPolicy::Other).then(|| RT_GOODNESS_MIN + self.rt_priority as i32)
    }

    /// `base_goodness`: −1 when yielding, 0 when out of ticks, else counter + 20 − nice.
    pub fn base_goodness(&self) -> i32 {
        if self.yielding {
            -1
        } else if self.counter == 0 {
            0
        } else {
            self.counter + 20 - self.nice
        }
    }

    /// `na_goodness`: non-affinity goodness, what a queue publishes for stealing.
    pub fn na_goodness(&self) -> i32 {
        self.rt().unwrap_or_else(|| self.base_goodness())
    }

    /// `local_goodness`: for a task on this CPU's own queue (the CPU bonus is added to
    /// the best value afterwards).
    pub fn local_goodness(&self, this_mm: u32) -> i32 {
        self.rt().unwrap_or_else(|| {
            let w = self.base_goodness();
            if w > 0 {
                w + i32::from(self.mm == this_mm)
            } else {
                w
            }
        })
    }

    /// `goodness`: the full value, with PROC_CHANGE_PENALTY `pcp` when the task's
    /// `processor` is `cpu`.
    pub fn goodness(&self, cpu: usize, this_mm: u32, pcp: i32) -> i32 {
        self.rt().unwrap_or_else(|| {
            let w = self.base_goodness();
            if w > 0 {
                w + i32::from(self.mm == this_mm) + if self.processor == cpu { pcp } else { 0 }
            } else {
                w
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_to_ticks_matches_the_table() {
        // schedulers.md §1.3: HZ=100.
        let t: Vec<i32> = [-20, -10, -5, 0, 5, 10, 15, 19]
            .iter()
            .map(|&n| nice_to_ticks(n, 100))
            .collect();
        assert_eq!(t, [11, 8, 7, 6, 4, 3, 2, 1]);
        assert_eq!(nice_to_ticks(0, 1024), 41);
        assert_eq!(def_counter(100), 10);
        assert_eq!(max_counter(100), 20);
    }

    #[test]
    fn goodness_variants() {
        let p = Prio {
            counter: 5,
            yielding: false,
            policy: SchedPolicy::Other,
            nice: 0,
            rt_priority: 0,
            mm: 7,
            processor: 2,
        };
        assert_eq!(p.na_goodness(), 25);
        assert_eq!(p.local_goodness(7), 26);
        assert_eq!(p.local_goodness(8), 25);
        assert_eq!(p.goodness(2, 7, 15), 41);
        assert_eq!(p.goodness(3, 8, 15), 25);
        let z = Prio { counter: 0, ..p };
        assert_eq!(z.goodness(2, 7, 15), 0, "no bonus on an empty slice");
        let y = Prio {
            yielding: true,
            ..p
        };
        assert_eq!(y.local_goodness(7), -1);
        let rt = Prio {
            policy: SchedPolicy::Fifo,
            rt_priority: 5,
            ..p
        };
        assert_eq!(rt.na_goodness(), 1005);
    }
}
