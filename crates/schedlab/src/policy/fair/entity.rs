//! The arithmetic of a fair entity and its run queue, shared by `cfs` and `eevdf`:
//! weights and inverse weights, `calc_delta_fair`, `avg_vruntime`, lag, eligibility and
//! deadlines (modern.md §1, §4.2–4.5), in the kernel's integers.
//!
//! Virtual times are `i64`: the kernel keeps them in `u64` and compares the sign of the
//! wrapped difference; ordering the signed values is the same as long as any two live
//! values are within 2^63 ns of each other — 292 years of simulated time.

use std::collections::BTreeMap;

/// `sched_prio_to_weight[nice + 20]` (core.c; modern.md §1).
pub const PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// `sched_prio_to_wmult[nice + 20]` ≈ 2^32 / weight (core.c; modern.md §1, used verbatim).
pub const PRIO_TO_WMULT: [u64; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644,
    704093, 875809, 1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765,
    6557202, 8165337, 10153587, 12820798, 15790321, 19976592, 24970740, 31350126, 39045157,
    49367440, 61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294, 286331153,
];

/// `NICE_0_LOAD`, unscaled (modern.md §1: a simulator stores unscaled weights).
pub const NICE_0_LOAD: u64 = 1024;

const WMULT_CONST: u64 = u32::MAX as u64;
const WMULT_SHIFT: u32 = 32;

/// A load weight and its inverse (`struct load_weight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadWeight {
    /// Unscaled weight (1024 for nice 0).
    pub weight: u64,
    /// `inv_weight` ≈ 2^32 / weight; 0 until computed (`__update_inv_weight`).
    pub inv_weight: u64,
}

impl LoadWeight {
    /// The weight of a task at `nice` (`set_load_weight`): both table entries.
    pub fn of_nice(nice: i32) -> LoadWeight {
        let i = (nice.clamp(-20, 19) + 20) as usize;
        LoadWeight {
            weight: PRIO_TO_WEIGHT[i],
            inv_weight: PRIO_TO_WMULT[i],
        }
    }

    /// A sum of weights (a cfs_rq's `load`): the inverse is computed on demand.
    pub fn sum(weight: u64) -> LoadWeight {
        LoadWeight {
            weight,
            inv_weight: 0,
        }
    }

    /// `__update_inv_weight`: `floor((2^32 − 1)/W)`, `2^32 − 1` for W = 0 (modern.md §1).
    fn inv(&self) -> u64 {
        if self.inv_weight != 0 {
            return self.inv_weight;
        }
        if self.weight >= WMULT_CONST {
            1
        } else {
            WMULT_CONST.checked_div(self.weight).unwrap_or(WMULT_CONST)
        }
    }
}

/// (E1) `__calc_delta(delta, weight, lw)` ≈ `delta · weight / lw.weight`, with the
/// inverse weight, the shift and the 128-bit product of the kernel (`mul_u64_u32_shr`).
pub fn calc_delta(delta: u64, weight: u64, lw: &LoadWeight) -> u64 {
    let mut fact = weight;
    let mut shift = WMULT_SHIFT;
    fact = fact.wrapping_mul(lw.inv());
    let hi = fact >> 32;
    if hi != 0 {
        let k = 64 - hi.leading_zeros();
        shift -= k;
        fact >>= k;
    }
    // fact now fits in 32 bits (`mul_u64_u32_shr`).
    ((delta as u128 * fact as u128) >> shift) as u64
}

/// (E2) `calc_delta_fair(delta, se)`: `delta · 1024 / w`; exact for nice 0.
pub fn calc_delta_fair(delta: u64, lw: &LoadWeight) -> u64 {
    if lw.weight != NICE_0_LOAD {
        calc_delta(delta, NICE_0_LOAD, lw)
    } else {
        delta
    }
}

/// Signed [`calc_delta_fair`] for the lag clamp (the kernel clamps with a positive limit).
fn calc_delta_fair_i(delta: u64, lw: &LoadWeight) -> i64 {
    calc_delta_fair(delta, lw) as i64
}

/// `ilog2` of a positive integer.
pub fn ilog2(n: u64) -> u32 {
    63 - n.leading_zeros()
}

/// `get_update_sysctl_factor` with the default SCHED_TUNABLESCALING_LOG:
/// `1 + ilog2(min(ncpus, 8))` (modern.md §2).
pub fn sysctl_factor(ncpus: usize) -> u64 {
    1 + ilog2(ncpus.clamp(1, 8) as u64) as u64
}

/// Floor division of a signed numerator by a positive denominator, as `avg_vruntime`
/// does it: subtract `den − 1` from a negative numerator, then truncate (modern.md E9).
pub fn div_floor(num: i128, den: i128) -> i128 {
    debug_assert!(den > 0);
    if num < 0 {
        (num - (den - 1)) / den
    } else {
        num / den
    }
}

/// The weighted-average bookkeeping of a cfs_rq (modern.md §4.2): `S = Σ w·(v − v0)`,
/// `L = Σ w` over the entities in the tree (curr excluded), `v0 = min_vruntime`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AvgVruntime {
    /// `cfs_rq->avg_vruntime` (S). 128-bit: §9 allows any width that does not overflow.
    pub sum: i128,
    /// `cfs_rq->avg_load` (L), unscaled.
    pub load: i64,
}

impl AvgVruntime {
    /// `avg_vruntime_add`.
    pub fn add(&mut self, w: u64, v: i64, v0: i64) {
        self.sum += w as i128 * (v - v0) as i128;
        self.load += w as i64;
    }

    /// `avg_vruntime_sub`.
    pub fn sub(&mut self, w: u64, v: i64, v0: i64) {
        self.sum -= w as i128 * (v - v0) as i128;
        self.load -= w as i64;
    }

    /// `update_min_vruntime`'s shift of the reference by `delta` (`S −= L·Δ`).
    pub fn shift(&mut self, delta: i64) {
        self.sum -= self.load as i128 * delta as i128;
    }

    /// (E9) `avg_vruntime`: `v0 + floor((S + w_c·key(c)) / (L + w_c))`; `curr` is
    /// `(w, v)` of an on-rq curr.
    pub fn avg(&self, v0: i64, curr: Option<(u64, i64)>) -> i64 {
        let (mut s, mut l) = (self.sum, self.load as i128);
        if let Some((w, v)) = curr {
            s += w as i128 * (v - v0) as i128;
            l += w as i128;
        }
        if l == 0 {
            return v0;
        }
        v0 + div_floor(s, l) as i64
    }

    /// (E11) `vruntime_eligible`: `S' ≥ (v − v0)·L'` — `v` at or before the rational
    /// average, without dividing.
    pub fn eligible(&self, v0: i64, curr: Option<(u64, i64)>, v: i64) -> bool {
        let (mut s, mut l) = (self.sum, self.load as i128);
        if let Some((w, cv)) = curr {
            s += w as i128 * (cv - v0) as i128;
            l += w as i128;
        }
        s >= (v - v0) as i128 * l
    }
}

/// (E10) the lag limit: `calc_delta_fair(max(2·r, TICK_NSEC), se)`.
pub fn lag_limit(slice: u64, tick_nsec: u64, lw: &LoadWeight) -> i64 {
    calc_delta_fair_i((2 * slice).max(tick_nsec), lw)
}

/// (E13) the lag placed on enqueue: `trunc(lag·(Wc + w)/Wc)`, signed, toward zero.
pub fn inflate_lag(lag: i64, wc: i64, w: u64) -> i64 {
    let wc = wc.max(1);
    ((lag as i128 * (wc as i128 + w as i128)) / wc as i128) as i64
}

/// A deterministic ordered run queue: entities keyed by `(key, seq)`, `seq` the insertion
/// order, so equal keys come out first in, first out — the rbtree's order, ties
/// included (modern.md §9).
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    tree: BTreeMap<(i64, u64), u32>,
    seq: u64,
}

impl Timeline {
    /// Insert `p` at `key`; returns its tie-break sequence number.
    pub fn insert(&mut self, key: i64, p: u32) -> u64 {
        self.seq += 1;
        self.tree.insert((key, self.seq), p);
        self.seq
    }

    /// Remove the entry `(key, seq)`.
    pub fn remove(&mut self, key: i64, seq: u64) -> u32 {
        self.tree
            .remove(&(key, seq))
            .expect("removing an entity that is not in the timeline")
    }

    /// The leftmost entry.
    pub fn first(&self) -> Option<(i64, u32)> {
        self.tree.iter().next().map(|(&(k, _), &p)| (k, p))
    }

    /// Entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
        self.tree.iter().map(|(&(k, _), &p)| (k, p))
    }

    /// The entry after `(key, seq)`.
    pub fn next_after(&self, key: i64, seq: u64) -> Option<(i64, u32)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.tree
            .range((Excluded((key, seq)), Unbounded))
            .next()
            .map(|(&(k, _), &p)| (k, p))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }
}
