//! One task group over every task: the load a CPU shows when the workload runs in an
//! autogroup (option `autogroup`, FAIR_GROUP_SCHED with `kernel.sched_autogroup_enabled=1`,
//! the default of distribution kernels: a benchmark started from a shell is its session's
//! group).
//!
//! Design: every task of the run is in one group. On each CPU the group has its own queue
//! (the task queue the rest of `fair` already keeps, `Rq`) and one entity on the root
//! queue, [`GroupSe`]. Within the group the pick is the flat pick (the root queue holds
//! the group's entity alone, so it always picks it), so only what is *read as load*
//! changes: `cpu_load` is the root queue's load — the group entity's `load_avg`, its
//! weight (the group's 1 024 shares split by the CPUs' queue loads, `calc_group_shares`)
//! times the fraction of time the group was queued there — and `task_h_load` is a task's
//! load scaled by the group entity's over the group queue's (`cfs_rq_h_load`). The shares
//! follow the group's total load `tg->load_avg`, which each CPU updates at most once a
//! millisecond and only on a change of more than 1/64 (`update_tg_load_avg`): after a
//! burst of migrations the CPUs' weights are stale, and `wake_affine_weight` keeps pulling
//! to the CPU that was lighter a moment ago (modern.md §5.6, §7.3; fair.c 6.12
//! `calc_group_shares`, `update_cfs_group`, `update_tg_load_avg`, `update_tg_cfs_load`,
//! `cfs_rq_h_load`).
//!
//! Utilisation and runnable averages are propagated unchanged to the root in the kernel
//! (`update_tg_cfs_util`, `_runnable`), so they stay the group queue's.
//!
//! Invariants: with the option off nothing here runs and `cpu_load`, `task_h_load` are
//! the flat ones; a group entity's weight is within `[MIN_SHARES, shares]`; the group's
//! `tg_load_avg` is the sum of the CPUs' contributions.

use crate::machine::CpuId;

use super::pelt::{self, SchedAvg};
use super::Fair;

/// `tg->shares` of an autogroup at nice 0 (`scale_load_down(NICE_0_LOAD)`).
pub const GROUP_SHARES: u64 = 1024;

/// `MIN_SHARES`.
pub const MIN_SHARES: u64 = 2;

/// `update_tg_load_avg`'s rate limit: once a millisecond per CPU (v6.7+).
pub const TG_LOAD_AVG_PERIOD_NS: u64 = 1_000_000;

/// The group's entity on one CPU's root queue, and that CPU's part of `tg->load_avg`.
#[derive(Clone, Copy, Debug)]
pub struct GroupSe {
    /// `se->load.weight`, unscaled.
    pub weight: u64,
    /// The entity's PELT (unweighted `load_sum`, `load_avg` at `weight`).
    pub avg: SchedAvg,
    /// `gcfs_rq->prop_runnable_sum`: load sums of tasks attached (+) and detached (−)
    /// since the entity was last updated.
    pub prop_runnable_sum: i64,
    /// `cfs_rq->tg_load_avg_contrib`.
    pub tg_contrib: u64,
    /// `cfs_rq->last_update_tg_load_avg`, ns.
    pub tg_stamp: u64,
}

impl Default for GroupSe {
    /// `init_tg_cfs_entry`: weight NICE_0_LOAD; a group entity starts with no load (only
    /// tasks start looking fully loaded).
    fn default() -> Self {
        GroupSe {
            weight: GROUP_SHARES,
            avg: SchedAvg::default(),
            prop_runnable_sum: 0,
            tg_contrib: 0,
            tg_stamp: 0,
        }
    }
}

/// `calc_group_shares`: the group's shares in proportion to this CPU's queue load
/// against the group's, with this CPU's contribution taken fresh.
pub fn calc_group_shares(
    queue_weight: u64,
    queue_load_avg: u64,
    tg_load_avg: u64,
    contrib: u64,
) -> u64 {
    let load = queue_weight.max(queue_load_avg);
    let tg_weight = (tg_load_avg + load).saturating_sub(contrib);
    let shares = (GROUP_SHARES * load)
        .checked_div(tg_weight)
        .unwrap_or(GROUP_SHARES * load);
    shares.clamp(MIN_SHARES, GROUP_SHARES)
}

/// `update_tg_cfs_load`'s new unweighted `load_sum` of a group entity after tasks joined
/// (`prop` > 0) or left (`prop` < 0) its queue: joined sums add up to a full divider; on
/// a departure the queue's per-weight sum bounds it. Never below the running sum.
pub fn propagated_load_sum(
    prop: i64,
    se_load_sum: u64,
    se_util_sum: u64,
    queue_load_sum: u64,
    queue_weight: u64,
    divider: u64,
) -> u64 {
    let runnable = if prop >= 0 {
        (prop as u64 + se_load_sum).min(divider)
    } else {
        let per_weight = queue_load_sum.checked_div(queue_weight).unwrap_or(0);
        se_load_sum.min(per_weight)
    };
    runnable.max(se_util_sum >> pelt::SCHED_CAPACITY_SHIFT)
}

impl Fair {
    /// After `cpu`'s group queue was updated at `now` (a task's `update_load_avg`):
    /// `update_tg_load_avg` (when `changed`: a PELT period ended or a task joined or left),
    /// the group entity's PELT and propagation, then `update_cfs_group`.
    pub(super) fn update_group_se(&mut self, now: u64, cpu: CpuId, changed: bool) {
        if changed {
            self.update_tg_load_avg(now, cpu);
        }
        let rq = &mut self.rqs[cpu];
        let queued = rq.nr_running > 0;
        let running = rq.curr.is_some();
        let g = &mut rq.gse;
        if g.avg.last_update_time == 0 {
            g.avg.last_update_time = now.max(1);
        } else {
            // The entity's runnable average is never read (the root's is the group
            // queue's, module doc): `queued` stands in for it.
            g.avg.update(now, g.weight, queued, queued, running);
        }
        if g.prop_runnable_sum != 0 {
            let divider = g.avg.divider();
            let sum = propagated_load_sum(
                g.prop_runnable_sum,
                g.avg.load_sum,
                g.avg.util_sum,
                rq.avg.load_sum,
                rq.load,
                divider,
            );
            g.prop_runnable_sum = 0;
            g.avg.load_sum = sum;
            g.avg.load_avg = g.weight * sum / divider;
        }
        if rq.load > 0 {
            let shares =
                calc_group_shares(rq.load, rq.avg.load_avg, self.tg_load_avg, g.tg_contrib);
            if shares != g.weight {
                // reweight_entity: the average follows the new weight at once.
                g.weight = shares;
                g.avg.load_avg = shares * g.avg.load_sum / g.avg.divider();
            }
        }
    }

    /// `update_tg_load_avg(cfs_rq)`: fold this CPU's queue load into the group's, at most
    /// once a millisecond and only when it moved by more than 1/64 of the last contribution.
    fn update_tg_load_avg(&mut self, now: u64, cpu: CpuId) {
        let rq = &mut self.rqs[cpu];
        let g = &mut rq.gse;
        if g.tg_stamp != 0 && now < g.tg_stamp + TG_LOAD_AVG_PERIOD_NS {
            return;
        }
        let load = rq.avg.load_avg;
        if load.abs_diff(g.tg_contrib) > g.tg_contrib / 64 {
            self.tg_load_avg = (self.tg_load_avg + load).saturating_sub(g.tg_contrib);
            g.tg_contrib = load;
            g.tg_stamp = now.max(1);
        }
    }

    /// The group's invariants (module doc): its total is the CPUs' contributions, each
    /// entity's weight within its bounds.
    pub(super) fn check_group(&self) -> Result<(), String> {
        if !self.t.autogroup {
            return Ok(());
        }
        let sum: u64 = self.rqs.iter().map(|q| q.gse.tg_contrib).sum();
        if sum != self.tg_load_avg {
            return Err(format!(
                "{}: the group's load_avg {} but its CPUs' contributions sum to {sum}",
                self.name_str(),
                self.tg_load_avg
            ));
        }
        match self
            .rqs
            .iter()
            .position(|q| !(MIN_SHARES..=GROUP_SHARES).contains(&q.gse.weight))
        {
            Some(c) => Err(format!(
                "{}: cpu {c}'s group entity weighs {}, outside [{MIN_SHARES}, {GROUP_SHARES}]",
                self.name_str(),
                self.rqs[c].gse.weight
            )),
            None => Ok(()),
        }
    }

    /// `cfs_rq_h_load` of `cpu`'s group queue: the root's load, scaled by the group
    /// entity's share of it (the root holds the entity alone).
    pub(super) fn group_h_load(&self, cpu: CpuId) -> u64 {
        let root = self.rqs[cpu].gse.avg.load_avg;
        root * root / (root + 1)
    }
}
