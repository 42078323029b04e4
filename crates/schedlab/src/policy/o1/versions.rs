//! The three versions as data: what differs between `-D1`, `-G1` and 2.6.0, with sources.
//! Their tunable defaults (HZ, sync wake-ups, rebalance periods) are declared once, with
//! their sources, in the options of `mod.rs`.
//!
//! | | `o1-d1` (7 Jan 2002) | `o1-g1` (9 Jan 2002) | `o1-2.6` (Dec 2003) |
//! |---|---|---|---|
//! | HZ | 100 | 100 | 1000 |
//! | MIN / MAX timeslice | 10 / 150 ms | 20 / 150 ms | 10 / 200 ms |
//! | timeslice | `PRIO_TO_TIMESLICE(prio)` | same | `task_timeslice(static_prio)` |
//! | estimator | -D2 `sleep_hist` load penalty (`estimator=jsleep`: stock 2.5.2's boost, +1 per slice) | same | Kolivas `sleep_avg` |
//! | TASK_INTERACTIVE | `prio ≤ 106` at expiry (jsleep: `100 ≤ prio ≤ 110`) | same | `prio ≤ static_prio − DELTA` |
//! | EXPIRED_STARVING | — | — | `STARVATION_LIMIT = MAX_SLEEP_AVG` |
//! | balancer | early (pull on idle, ≈10 %) | G1 (one task on idle, 250 ms) | 2.6 (1 / 200 ms, 25 %, cache-hot) |
//! | sync wake-ups | off (lost) | off | on |
//! | yield | prio + 1, same array | same | to the expired array |
//!
//! Sources and reconstructions:
//! * `o1-d1`/`o1-g1` mechanics follow the earliest O(1) `sched.c` in the stored sources
//!   (schedulers.md §2.4 end, code-index file 12276944425: stock 2.5.2 with Libenzi's
//!   follow-up diff, which still carries `rq->cpu` and the runqueue padding that -G1
//!   removed, so its balancer is the pre-G1 one merged as -D2 into 2.5.2-pre10) and the
//!   stock 2.5.2 constants of §2.3. The estimator is -D2's, as merged into 2.5.2-pre10
//!   (7 Jan 2002) and carried by -G1 (9 Jan, against pre10): its code survives as the
//!   removed side of Libenzi's patch against `linux-2.5.2-pre10.vanilla` (LKML, 9 Jan 2002;
//!   interactivity.rs). -D1 was posted the same day as -D2, which fixed its fork and RT
//!   mappings, not the estimator. Stock 2.5.2's sleep-time boost (Libenzi's, merged by
//!   Linus on 14 Jan) stays as `estimator=jsleep`.
//! * Timeslices: stock 2.5.2 has 20/150 ms; -G1 "increased the minimum timeslice by
//!   10 msec", so -D1 had 10 ms \[INFERRED, §2.2\].
//! * `o1-g1` sync wake-ups: the stored pre-G1 `try_to_wake_up(p, synchronous)` ignores its
//!   flag, the -G1 announcement lists no wake-up change, and the flag is used again only
//!   in the 2.5.3+ code of S6; so -G1 still had no working `__wake_up_sync` → off.

use super::balance::Balancer;

/// Which generation of the core algorithms a version uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gen {
    /// Stock 2.5.2-era: `JSLEEP_TO_PRIO` boost on wake-up, `prio + 1` per expired slice,
    /// `PRIO_TO_TIMESLICE`, no starvation limit, yield steps the priority down.
    Early,
    /// 2.6.0: Kolivas `sleep_avg`, `interactive_credit`, `activated`, granularity
    /// round-robin, `EXPIRED_STARVING`, yield to expired.
    V26,
}

/// One version's constants.
#[derive(Clone, Copy, Debug)]
pub struct Version {
    /// Registry name.
    pub name: &'static str,
    /// Generation of the core algorithms.
    pub gen: Gen,
    /// `MIN_TIMESLICE` in ms.
    pub min_timeslice_ms: u64,
    /// `MAX_TIMESLICE` in ms.
    pub max_timeslice_ms: u64,
    /// `PRIO_INTERACTIVE` of the early estimator (`MAX_RT_PRIO + 40/4` in stock 2.5.2).
    pub prio_interactive: i32,
    /// Load balancer.
    pub balancer: Balancer,
}

/// `o1-d1`.
pub const D1: Version = Version {
    name: "o1-d1",
    gen: Gen::Early,
    min_timeslice_ms: 10,
    max_timeslice_ms: 150,
    prio_interactive: 110,
    balancer: Balancer::Early,
};

/// `o1-g1`.
pub const G1: Version = Version {
    name: "o1-g1",
    gen: Gen::Early,
    min_timeslice_ms: 20,
    max_timeslice_ms: 150,
    prio_interactive: 110,
    balancer: Balancer::G1,
};

/// `o1-2.6`.
pub const V26: Version = Version {
    name: "o1-2.6",
    gen: Gen::V26,
    min_timeslice_ms: 10,
    max_timeslice_ms: 200,
    prio_interactive: 0,
    balancer: Balancer::V26,
};

/// Constants derived from a version and HZ, in ticks unless named `ns_`.
#[derive(Clone, Copy, Debug)]
pub struct Consts {
    /// HZ.
    pub hz: u64,
    /// Nanoseconds per jiffy (`1e9 / HZ`).
    pub ns_per_tick: u64,
    /// `MIN_TIMESLICE` (at least 1).
    pub min_timeslice: u64,
    /// `MAX_TIMESLICE`.
    pub max_timeslice: u64,
    /// 2.6 `AVG_TIMESLICE`.
    pub avg_timeslice: u64,
    /// 2.6 `MAX_SLEEP_AVG` = `AVG_TIMESLICE · MAX_BONUS`.
    pub max_sleep_avg: u64,
    /// 2.6 `NS_MAX_SLEEP_AVG`.
    pub ns_max_sleep_avg: u64,
    /// `STARVATION_LIMIT` (0: no starvation check, as before -J4).
    pub starvation_limit: u64,
    /// Early `PRIO_INTERACTIVE`.
    pub prio_interactive: i32,
}

/// 2.6 `MAX_BONUS = MAX_USER_PRIO · PRIO_BONUS_RATIO / 100`.
pub const MAX_BONUS: u64 = 40 * 25 / 100;

impl Consts {
    /// Derive the constants of `v` at `hz` (C integer arithmetic, §2.5.1).
    pub fn new(v: &Version, hz: u32) -> Consts {
        let hz = hz as u64;
        let min = (v.min_timeslice_ms * hz / 1000).max(1);
        let max = (v.max_timeslice_ms * hz / 1000).max(min);
        let avg = min + (max - min) * (139 - 120) / 39;
        let msa = avg * MAX_BONUS;
        let ns_per_tick = crate::engine::SEC / hz;
        Consts {
            hz,
            ns_per_tick,
            min_timeslice: min,
            max_timeslice: max,
            avg_timeslice: avg,
            max_sleep_avg: msa,
            ns_max_sleep_avg: msa * ns_per_tick,
            starvation_limit: if v.gen == Gen::V26 { msa } else { 0 },
            prio_interactive: v.prio_interactive,
        }
    }

    /// Early `PRIO_TO_TIMESLICE(p)` (§2.3): `((39 − USER_PRIO(p))·(MAX−MIN) + 39)/40 + MIN`.
    #[allow(clippy::manual_div_ceil)] // the macro as written
    pub fn prio_to_timeslice(&self, prio: i32) -> u64 {
        let up = (prio - 100).clamp(0, 39) as u64;
        ((39 - up) * (self.max_timeslice - self.min_timeslice) + 39) / 40 + self.min_timeslice
    }

    /// Early `RT_PRIO_TO_TIMESLICE(p)` (§2.3).
    #[allow(clippy::manual_div_ceil)] // the macro as written
    pub fn rt_prio_to_timeslice(&self, prio: i32) -> u64 {
        let p = prio.clamp(0, 99) as u64;
        ((99 - p) * (self.max_timeslice - self.min_timeslice) + 99) / 100 + self.min_timeslice
    }

    /// 2.6 `task_timeslice(p)` (§2.5.1): `MIN + (MAX − MIN)·(139 − static_prio)/39`.
    pub fn task_timeslice(&self, static_prio: i32) -> u64 {
        let s = (139 - static_prio.clamp(100, 139)) as u64;
        self.min_timeslice + (self.max_timeslice - self.min_timeslice) * s / 39
    }

    /// `JIFFIES_TO_NS`.
    pub fn jiffies_to_ns(&self, j: u64) -> u64 {
        j * self.ns_per_tick
    }

    /// `NS_TO_JIFFIES`.
    pub fn ns_to_jiffies(&self, ns: u64) -> u64 {
        ns / self.ns_per_tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice(n: i32) -> i32 {
        120 + n
    }

    #[test]
    fn timeslices_per_version_and_nice_level() {
        // o1-d1 at HZ=100: MIN 1 tick, MAX 15 ticks.
        let d1 = Consts::new(&D1, 100);
        assert_eq!((d1.min_timeslice, d1.max_timeslice), (1, 15));
        assert_eq!(d1.prio_to_timeslice(nice(-20)), 15);
        assert_eq!(d1.prio_to_timeslice(nice(0)), 8);
        assert_eq!(d1.prio_to_timeslice(nice(19)), 1);
        // o1-g1: MIN 2 ticks; nice 0 gets the "default 90 ms" of stock 2.5.2.
        let g1 = Consts::new(&G1, 100);
        assert_eq!(g1.prio_to_timeslice(nice(-20)), 15);
        assert_eq!(g1.prio_to_timeslice(nice(0)), 9);
        assert_eq!(g1.prio_to_timeslice(nice(10)), 5);
        assert_eq!(g1.prio_to_timeslice(nice(19)), 2);
        assert_eq!(g1.rt_prio_to_timeslice(0), 15);
        // o1-2.6 at HZ=1000 (§2.5.1): −20 → 200, −10 → 151, 0 → 102, +10 → 53, +19 → 10.
        let v = Consts::new(&V26, 1000);
        let got: Vec<u64> = [-20, -10, 0, 10, 19]
            .iter()
            .map(|&n| v.task_timeslice(nice(n)))
            .collect();
        assert_eq!(got, vec![200, 151, 102, 53, 10]);
        assert_eq!(v.avg_timeslice, 102);
        assert_eq!(v.max_sleep_avg, 1020);
        assert_eq!(v.starvation_limit, 1020);
        assert_eq!(d1.starvation_limit, 0);
    }
}
