//! Load tracking glue: PELT signals of entities and queues, `util_est`, and the load and
//! utilisation figures the balancer and `select_task_rq_fair` read (modern.md §5).
//!
//! The arithmetic lives in [`super::pelt`]; this file decides when an entity's signals
//! are updated, attached to a queue and detached from it. Invariant: an entity with
//! `avg.last_update_time == 0` contributes nothing to any queue's sums (it is attached at
//! its next `update_load_avg`, `DO_ATTACH`); a queue's `util_est` is the sum of its
//! enqueued tasks' `util_est`.

use crate::kernel::task::TaskId;
use crate::machine::CpuId;

use super::pelt;
use super::{Fair, SchedCtx};

impl Fair {
    /// `update_load_avg(cfs_rq, se)`: the entity's signals, then its queue's. An entity
    /// not yet attached (new or migrated) is attached here (`DO_ATTACH`).
    pub(super) fn update_load_avg(&mut self, ctx: &SchedCtx<'_>, cpu: CpuId, p: Option<TaskId>) {
        let now = ctx.now();
        if let Some(p) = p {
            let running = self.rqs[cpu].curr == Some(p);
            let se = &mut self.se[p as usize];
            if se.avg.last_update_time != 0 {
                let runnable = se.on_rq && !se.sched_delayed;
                if se
                    .avg
                    .update(now, se.load.weight, se.on_rq, runnable, running)
                {
                    // cfs_se_util_change.
                    se.util_est_unchanged = false;
                }
            }
        }
        let mut changed = self.update_cfs_rq_load_avg(now, cpu);
        if let Some(p) = p {
            let se = &mut self.se[p as usize];
            if se.avg.last_update_time == 0 {
                let w = se.load.weight;
                self.rqs[cpu].avg.attach(&mut se.avg, w);
                if self.t.autogroup {
                    // add_tg_cfs_propagate: the task's sum joins the group entity's.
                    self.rqs[cpu].gse.prop_runnable_sum += se.avg.load_sum as i64;
                }
                changed = true;
            }
        }
        if self.t.autogroup {
            self.update_group_se(now, cpu, changed);
        }
    }

    /// `update_cfs_rq_load_avg`; true when a period ended (the averages moved).
    pub(super) fn update_cfs_rq_load_avg(&mut self, now: u64, cpu: CpuId) -> bool {
        let rq = &mut self.rqs[cpu];
        let runnable = rq.nr_running as u64;
        let crossed = rq.avg.update_sum(now, rq.load, runnable, rq.curr.is_some());
        if crossed {
            rq.avg.update_avg(1);
        }
        crossed
    }

    /// Take `p`'s PELT contribution off its queue (migration, exit:
    /// `remove_entity_load_avg`, applied at once).
    pub(super) fn detach_entity_load_avg(&mut self, p: TaskId) {
        let se = &mut self.se[p as usize];
        if se.avg.last_update_time != 0 {
            let w = se.load.weight;
            let snapshot = se.avg;
            let cpu = se.cpu;
            self.rqs[cpu].avg.detach(&snapshot, w);
            if self.t.autogroup {
                self.rqs[cpu].gse.prop_runnable_sum -= snapshot.load_sum as i64;
            }
        }
        se.avg.last_update_time = 0;
    }

    /// `cpu_load(rq)`: the root queue's PELT load (with `autogroup`, the group entity's).
    pub fn cpu_load(&self, cpu: CpuId) -> u64 {
        if self.t.autogroup {
            self.rqs[cpu].gse.avg.load_avg
        } else {
            self.rqs[cpu].avg.load_avg
        }
    }

    /// `cpu_util_cfs(cpu)`: `max(util_avg, util_est)` capped at the capacity.
    pub fn cpu_util(&self, cpu: CpuId) -> u64 {
        let rq = &self.rqs[cpu];
        rq.avg
            .util_avg
            .max(rq.util_est)
            .min(pelt::SCHED_CAPACITY_SCALE)
    }

    /// `cpu_util_cfs_boost(cpu)`: runnable counts too.
    pub fn cpu_util_boost(&self, cpu: CpuId) -> u64 {
        let rq = &self.rqs[cpu];
        rq.avg
            .util_avg
            .max(rq.avg.runnable_avg)
            .max(rq.util_est)
            .min(pelt::SCHED_CAPACITY_SCALE)
    }

    /// `task_util_est(p)`.
    pub fn task_util_est(&self, p: TaskId) -> u64 {
        let se = &self.se[p as usize];
        se.avg.util_avg.max(se.util_est)
    }

    /// `util_est_enqueue`.
    pub(super) fn util_est_enqueue(&mut self, cpu: CpuId, p: TaskId) {
        self.rqs[cpu].util_est += self.se[p as usize].util_est;
    }

    /// `util_est_dequeue`.
    pub(super) fn util_est_dequeue(&mut self, cpu: CpuId, p: TaskId) {
        let rq = &mut self.rqs[cpu];
        rq.util_est = rq.util_est.saturating_sub(self.se[p as usize].util_est);
    }

    /// `util_est_update` at a sleep (§5.5).
    pub(super) fn util_est_update(&mut self, p: TaskId) {
        let se = &mut self.se[p as usize];
        if se.util_est_unchanged {
            return;
        }
        se.util_est = pelt::util_est_ewma(se.util_est, se.avg.util_avg, se.avg.runnable_avg);
        se.util_est_unchanged = true;
    }

    /// `task_h_load(p)` with FAIR_GROUP_SCHED: on the root queue `load_avg·L/(L+1)`; with
    /// `autogroup`, scaled by the group queue's `h_load` over its load.
    pub fn task_h_load(&self, p: TaskId) -> u64 {
        let se = &self.se[p as usize];
        let l = self.rqs[se.cpu].avg.load_avg;
        if self.t.autogroup {
            return se.avg.load_avg * self.group_h_load(se.cpu) / (l + 1);
        }
        se.avg.load_avg * l / (l + 1)
    }
}
