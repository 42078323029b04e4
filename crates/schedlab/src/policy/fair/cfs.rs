//! CFS as in Linux 6.1 (modern.md §3): what differs from EEVDF.
//!
//! 1. **Slice** (E5, E6): `period(n) = n·min_gran` beyond `sched_nr_latency` tasks, else
//!    `latency`; `sched_slice = __calc_delta(period, w, W')`, at least `min_gran`.
//! 2. **Tick** (`check_preempt_tick`, §3.5): reschedule when curr ran more than its slice
//!    (strictly), or — after `min_gran` — leads the leftmost by more than the slice.
//! 3. **Wake-up** (`check_preempt_wakeup`, E8): preempt when `v_curr − v_p` exceeds the
//!    wakeup granularity weighted by the **woken** task; then `p` is the next buddy and,
//!    with 8 or more queued, curr the last buddy.
//! 4. **Placement** (`place_entity`, E7): a woken task gets `max(v, min_vruntime −
//!    latency/2)` (GENTLE_FAIR_SLEEPERS; `latency` without), a new one `min_vruntime +
//!    vslice` (START_DEBIT). vruntime crosses CPUs relative to `min_vruntime`.
//! 5. **Pick** (§3.7): the leftmost (curr if strictly before it); a skip buddy (yield)
//!    gives way to the second if that is not too far behind; `next` then `last` buddies
//!    win if within the wakeup granularity of the leftmost.

use crate::kernel::sched::Shared;
use crate::kernel::task::TaskId;
use crate::machine::CpuId;
use crate::policy::{SchedCtx, Wake};

use super::entity::{calc_delta, calc_delta_fair, LoadWeight};
use super::Fair;

impl Fair {
    /// (E5) `__sched_period(nr_running)`.
    pub fn sched_period(&self, nr_running: u64) -> u64 {
        if nr_running > self.t.nr_latency {
            nr_running * self.t.min_gran
        } else {
            self.t.latency
        }
    }

    /// (E6) `sched_slice(cfs_rq, se)` with ALT_PERIOD and BASE_SLICE.
    pub fn sched_slice(&self, cpu: CpuId, p: TaskId) -> u64 {
        let rq = &self.rqs[cpu];
        let se = &self.se[p as usize];
        let extra = !se.on_rq as u64;
        let period = self.sched_period(rq.nr_running as u64 + extra);
        let w = rq.load + if se.on_rq { 0 } else { se.load.weight };
        let slice = calc_delta(period, se.load.weight, &LoadWeight::sum(w));
        slice.max(self.t.min_gran)
    }

    /// `sched_vslice`.
    pub fn sched_vslice(&self, cpu: CpuId, p: TaskId) -> u64 {
        calc_delta_fair(self.sched_slice(cpu, p), &self.se[p as usize].load)
    }

    /// `task_fork_fair` (6.1): the child starts at the parent CPU's curr vruntime,
    /// placed with START_DEBIT, and is kept relative to that queue's `min_vruntime`.
    pub(super) fn task_fork_cfs(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        parent: Option<TaskId>,
    ) {
        let cpu = match parent {
            Some(pp) => self.se[pp as usize].cpu,
            None => ctx.task(p).processor,
        };
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        self.update_curr(ctx, cpu);
        if let Some(c) = self.rqs[cpu].curr {
            self.se[p as usize].vruntime = self.se[c as usize].vruntime;
        }
        self.place_entity_cfs(ctx, cpu, p, true);
        let min = self.rqs[cpu].min_vruntime;
        let se = &mut self.se[p as usize];
        se.vruntime -= min;
        se.v_relative = true;
        ctx.unlock(l);
    }

    /// (E7) `place_entity(cfs_rq, se, initial)` (6.1).
    pub(super) fn place_entity_cfs(
        &mut self,
        ctx: &SchedCtx<'_>,
        cpu: CpuId,
        p: TaskId,
        initial: bool,
    ) {
        let mut v = self.rqs[cpu].min_vruntime;
        if initial && self.t.start_debit {
            v += self.sched_vslice(cpu, p) as i64;
        }
        if !initial {
            let mut thresh = self.t.latency as i64;
            if self.t.gentle_fair_sleepers {
                thresh >>= 1;
            }
            v -= thresh;
        }
        let se = &mut self.se[p as usize];
        // entity_is_long_sleeper: idle longer than 2^63/NICE_0_LOAD ns (~104 days).
        let long_sleeper =
            se.exec_start != 0 && ctx.now().saturating_sub(se.exec_start) > (1u64 << 63) / 1024;
        se.vruntime = if long_sleeper { v } else { se.vruntime.max(v) };
    }

    /// (E8) `wakeup_preempt_entity(curr, se)`: −1, 0 or 1.
    pub fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> i32 {
        let c = &self.se[curr as usize];
        let s = &self.se[se as usize];
        let vdiff = c.vruntime - s.vruntime;
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(self.t.wakeup_gran, &s.load) as i64;
        if vdiff > gran {
            1
        } else {
            0
        }
    }

    /// `check_preempt_tick` (§3.5); `rq->lock` held, curr updated.
    pub(super) fn check_preempt_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId) {
        let ideal = self.sched_slice(cpu, curr);
        let se = &self.se[curr as usize];
        let ran = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if ran > ideal {
            self.stats.tick_preemptions += 1;
            ctx.resched_cpu(cpu);
            self.clear_buddies(cpu, curr);
            return;
        }
        if ran < self.t.min_gran {
            return;
        }
        let Some((lv, left)) = self.rqs[cpu].timeline.first() else {
            return;
        };
        ctx.read(Shared::Task(left));
        let d = self.se[curr as usize].vruntime - lv;
        if d < 0 {
            return;
        }
        if d as u64 > ideal {
            self.stats.tick_preemptions += 1;
            ctx.resched_cpu(cpu);
        }
    }

    /// `check_preempt_wakeup` (6.1, §3.6): true to reschedule curr.
    pub(super) fn check_preempt_wakeup_cfs(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        p: TaskId,
        _wake: Wake,
    ) -> bool {
        let Some(curr) = self.rqs[cpu].curr else {
            return true;
        };
        self.update_curr(ctx, cpu);
        ctx.read(Shared::Task(curr));
        if self.wakeup_preempt_entity(curr, p) == 1 {
            self.rqs[cpu].next = Some(p);
            // preempt: LAST_BUDDY when the queue is crowded and curr still queued.
            if self.se[curr as usize].on_rq && self.rqs[cpu].nr_running as u64 >= self.t.nr_latency
            {
                self.rqs[cpu].last = Some(curr);
            }
            return true;
        }
        false
    }

    /// `pick_next_entity` (6.1, §3.7), curr considered when on_rq.
    pub(super) fn pick_next_entity_cfs(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        let rq = &self.rqs[cpu];
        let curr = rq.curr.filter(|&c| self.se[c as usize].on_rq);
        let first = rq.timeline.first().map(|(_, p)| p);
        let before =
            |a: TaskId, b: TaskId| self.se[a as usize].vruntime < self.se[b as usize].vruntime;
        let left = match (first, curr) {
            (None, c) => c?,
            (Some(f), Some(c)) if before(c, f) => c,
            (Some(f), _) => f,
        };
        let mut se = left;
        if rq.skip == Some(se) {
            let second = if Some(se) == curr {
                first
            } else {
                let s = &self.se[se as usize];
                let nx = rq.timeline.next_after(s.key, s.seq).map(|(_, p)| p);
                match (nx, curr) {
                    (None, c) => c,
                    (Some(n), Some(c)) if before(c, n) => Some(c),
                    (n, _) => n,
                }
            };
            if let Some(s2) = second {
                ctx.read(Shared::Task(s2));
                if self.wakeup_preempt_entity(s2, left) < 1 {
                    se = s2;
                }
            }
        }
        let rq = &self.rqs[cpu];
        if let Some(n) = rq.next.filter(|&n| self.wakeup_preempt_entity(n, left) < 1) {
            se = n;
        } else if let Some(l) = rq.last.filter(|&l| self.wakeup_preempt_entity(l, left) < 1) {
            se = l;
        }
        Some(se)
    }
}
