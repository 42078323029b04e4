//! EEVDF as in vanilla Linux 6.12 (modern.md §4): what differs from CFS.
//!
//! 1. **Placement** (`place_entity`, §4.6): `v = V − lag`, the saved lag inflated by
//!    (E13) so that it survives the entity's own effect on V; a new task starts at V with
//!    half a slice to its deadline (PLACE_DEADLINE_INITIAL); a moved task keeps its
//!    relative deadline (PLACE_REL_DEADLINE).
//! 2. **Slice end** (`update_deadline`, §4.5): when `v ≥ vd` a new deadline `v +
//!    r·1024/w`, and curr is rescheduled (unless alone); PREEMPT_SHORT also reschedules
//!    an unprotected, ineligible curr.
//! 3. **Pick** (`pick_eevdf`, §4.7): the eligible entity with the earliest deadline,
//!    curr only if strictly earlier; RUN_TO_PARITY keeps a protected eligible curr.
//!    The timeline is ordered by deadline; eligibility is tested in order (E11), which is
//!    what the kernel's augmented-tree descent finds.
//! 4. **Wake-up** (`check_preempt_wakeup_fair`, §4.11): preempt iff the pick would now
//!    be the wakee.
//! 5. **Sleep** (`dequeue_entity`, §4.10): an ineligible sleeper stays queued, delayed,
//!    until picked (then dequeued with its lag clamped to ≤ 0) or woken
//!    (`requeue_delayed_entity`).
//!
//! Eligibility exceptions, by design of the kernel: a protected curr keeps running while
//! ineligible only until the next `update_curr` notices (PREEMPT_SHORT) — between ticks
//! an ineligible curr runs; and `nr_running == 1` returns the only entity unconditionally.

use crate::kernel::sched::Walk;
use crate::kernel::task::TaskId;
use crate::machine::CpuId;
use crate::policy::SchedCtx;

use super::entity::{self, calc_delta_fair};
use super::Fair;

impl Fair {
    /// (E10) `update_entity_lag`: save `V − v`, clamped.
    pub(super) fn update_entity_lag(&mut self, cpu: CpuId, p: TaskId) {
        let v = self.avg_vruntime(cpu);
        let tick = self.t.tick_nsec;
        let se = &mut self.se[p as usize];
        let limit = entity::lag_limit(se.slice, tick, &se.load);
        se.vlag = (v - se.vruntime).clamp(-limit, limit);
    }

    /// `place_entity(cfs_rq, se, flags)` (§4.6); before `se` counts in W, L and
    /// `nr_running`.
    pub(super) fn place_entity(&mut self, cpu: CpuId, p: TaskId, initial: bool) {
        let v = self.avg_vruntime(cpu);
        let base_slice = self.t.base_slice;
        let nr = self.rqs[cpu].nr_running;
        let wc = self.rqs[cpu].avg_vruntime.load + self.curr_wv(cpu).map_or(0, |(w, _)| w as i64);
        let place_lag = self.t.place_lag;
        let se = &mut self.se[p as usize];
        se.slice = base_slice;
        let mut vslice = calc_delta_fair(se.slice, &se.load) as i64;
        let mut lag = 0;
        if place_lag && nr > 0 {
            lag = entity::inflate_lag(se.vlag, wc, se.load.weight);
        }
        se.vruntime = v - lag;
        if se.rel_deadline {
            se.deadline += se.vruntime;
            se.rel_deadline = false;
            return;
        }
        if initial {
            vslice /= 2;
        }
        se.deadline = se.vruntime + vslice;
    }

    /// The run-to-parity protection of curr (§4.8; v6.17 `vprot`, §4.13).
    pub fn protect_slice(&self, p: TaskId) -> bool {
        let se = &self.se[p as usize];
        if self.t.vprot {
            se.vruntime < se.vprot
        } else {
            se.vlag == se.deadline
        }
    }

    /// `cancel_protect_slice`.
    pub(super) fn cancel_protect_slice(&mut self, p: TaskId) {
        if self.protect_slice(p) {
            let se = &mut self.se[p as usize];
            if self.t.vprot {
                se.vprot = se.vruntime;
            } else {
                se.vlag = se.deadline + 1;
            }
        }
    }

    /// At `set_next_entity`: stash the protection marker.
    pub(super) fn set_protect_slice(&mut self, cpu: CpuId, p: TaskId) {
        if !self.t.vprot {
            // 6.12 keeps the marker only for an entity picked from the tree, which is
            // every set_next_entity the seam makes (prev == next makes none).
            let se = &mut self.se[p as usize];
            se.vlag = se.deadline;
            return;
        }
        // v6.17: s = RUN_TO_PARITY ? min slice of curr and the tree : base slice.
        let min_tree = self.rqs[cpu]
            .timeline
            .iter()
            .map(|(_, q)| self.se[q as usize].slice)
            .min();
        let se = &self.se[p as usize];
        let mut s = if self.t.run_to_parity {
            min_tree.map_or(se.slice, |m| m.min(se.slice))
        } else {
            self.t.base_slice_normalized
        };
        s = s.min(se.slice);
        let vprot = if s == se.slice {
            se.deadline
        } else {
            se.deadline
                .min(se.vruntime + calc_delta_fair(s, &se.load) as i64)
        };
        self.se[p as usize].vprot = vprot;
    }

    /// The eevdf part of `update_curr` for curr `c` (§4.5): `update_deadline`,
    /// `update_min_vruntime`, then the reschedule.
    pub(super) fn update_curr_eevdf(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, c: TaskId) {
        let base = self.t.base_slice;
        let se = &mut self.se[c as usize];
        let mut resched = false;
        if se.vruntime >= se.deadline {
            se.slice = base;
            se.deadline = se.vruntime + calc_delta_fair(se.slice, &se.load) as i64;
            resched = true;
        }
        self.update_min_vruntime(cpu);
        if self.rqs[cpu].nr_running == 1 {
            return;
        }
        if resched || self.did_preempt_short(cpu, c) {
            self.stats.tick_preemptions += 1;
            ctx.resched_cpu(cpu);
            self.clear_buddies(cpu, c);
        }
    }

    /// `did_preempt_short` (6.12) / v6.17's unprotected-and-ineligible test.
    fn did_preempt_short(&self, cpu: CpuId, c: TaskId) -> bool {
        if !self.t.preempt_short && !self.t.vprot {
            return false;
        }
        if self.protect_slice(c) {
            return false;
        }
        !self.entity_eligible(cpu, c)
    }

    /// `pick_eevdf(cfs_rq)` (§4.7).
    pub fn pick_eevdf(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> Option<TaskId> {
        let rq = &self.rqs[cpu];
        let first = rq.timeline.first().map(|(_, p)| p);
        let curr_on = rq.curr.filter(|&c| self.se[c as usize].on_rq);
        if rq.nr_running == 1 {
            return curr_on.or(first);
        }
        let curr = curr_on.filter(|&c| self.entity_eligible(cpu, c));
        if let Some(c) = curr {
            if (self.t.run_to_parity || self.t.vprot) && self.protect_slice(c) {
                return Some(c);
            }
        }
        // model: the kernel descends its augmented tree, testing about one entity per
        // level; the scan tests entities in deadline order and is charged that many
        // entity reads at most.
        let depth = (entity::ilog2(rq.timeline.len().max(1) as u64) + 1) as usize;
        let mut best = None;
        let mut tested = Vec::new();
        for (_, q) in rq.timeline.iter() {
            if tested.len() < depth {
                tested.push(q);
            }
            if self.entity_eligible(cpu, q) {
                best = Some(q);
                break;
            }
        }
        ctx.read(Walk(tested));
        match (best, curr) {
            (None, c) => c.or(best),
            (Some(b), Some(c)) if self.se[c as usize].deadline < self.se[b as usize].deadline => {
                Some(c)
            }
            (b, _) => b,
        }
    }

    /// `check_preempt_wakeup_fair` (§4.11) for the wakee `p`: true to reschedule curr.
    pub(super) fn check_preempt_wakeup_fair(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        p: TaskId,
    ) -> bool {
        let Some(curr) = self.rqs[cpu].curr else {
            return true;
        };
        self.update_curr(ctx, cpu);
        // do_preempt_short: inert with uniform slices (no custom slices are modelled),
        // written out for the day they are.
        let (sp, sc) = (self.se[p as usize].slice, self.se[curr as usize].slice);
        if self.t.preempt_short
            && sp < sc
            && self.entity_eligible(cpu, p)
            && (self.se[p as usize].deadline < self.se[curr as usize].deadline
                || !self.entity_eligible(cpu, curr))
        {
            self.cancel_protect_slice(curr);
        }
        self.pick_eevdf(ctx, cpu) == Some(p)
    }

    /// `requeue_delayed_entity` (§4.10): a delayed task woken where it is queued.
    pub(super) fn requeue_delayed_entity(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        debug_assert!(ctx.holds(self.rqs[cpu].lock));
        // DELAY_ZERO.
        self.update_entity_lag(cpu, p);
        if self.se[p as usize].vlag > 0 {
            self.rqs[cpu].nr_running -= 1;
            let in_tree = self.rqs[cpu].curr != Some(p);
            if in_tree {
                self.dequeue_tree(cpu, p);
            }
            self.se[p as usize].vlag = 0;
            self.place_entity(cpu, p, false);
            if in_tree {
                self.enqueue_tree(cpu, p);
            }
            self.rqs[cpu].nr_running += 1;
        }
        self.update_load_avg(ctx, cpu, Some(p));
        self.se[p as usize].sched_delayed = false;
        self.publish_nr(ctx, cpu);
    }
}
