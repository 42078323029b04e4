//! `schedule()`'s scan (schedulers.md §3.3): the local queue's best and second best,
//! then the remote queues whose published `max_na_goodness` beats the local best, tried
//! by `spin_trylock` in decreasing value. The second best of every scan is what this
//! queue publishes for other CPUs' remote scans; a failed trylock that leaves this CPU
//! with nothing is a premature idle, which withdraws the advertisement and rescans.

use super::{MaxNa, Mq, MqVersion, ScheduleSeen};
use crate::kernel::sched::Shared;
use crate::kernel::task::{TaskId, TaskState};
use crate::machine::CpuId;
use crate::policy::sched24::{can_schedule, MIN_GOODNESS};
use crate::policy::SchedCtx;

impl Mq {
    /// `scan_runqueue` (§3.3 step 2): best local task into `next`/`cg`, second best
    /// published as this queue's `max_na_*`, then the CPU boost.
    pub(super) fn scan_runqueue(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        this: CpuId,
        cg: &mut i32,
        this_mm: u32,
        mut next: TaskId,
    ) -> TaskId {
        let idle = ctx.idle_task(this);
        let mut prev_next = idle;
        let mut prev_next_weight = MIN_GOODNESS;
        let n = self.rq[this].list.len();
        for i in 0..n {
            let p = self.rq[this].list[i];
            ctx.read(Shared::Task(p));
            // The 2.4 ports scan only tasks no CPU runs (`local_can_schedule`): the
            // running `prev` came in through `still_running`.
            let schedulable = if self.cfg.version < MqVersion::V250 {
                !Self::has_cpu(ctx, p)
            } else {
                can_schedule(ctx, p, this)
            };
            if !schedulable {
                continue;
            }
            let w = self.core.local_goodness(ctx, p, this_mm);
            if w > *cg {
                if !Self::has_cpu(ctx, next) {
                    prev_next_weight = *cg;
                    prev_next = next;
                }
                *cg = w;
                next = p;
            } else if w > prev_next_weight && !Self::has_cpu(ctx, p) {
                prev_next_weight = w;
                prev_next = p;
            }
        }
        let m = if prev_next != idle {
            MaxNa::of(ctx, prev_next, self.core.na_goodness(ctx, prev_next))
        } else {
            MaxNa::NONE
        };
        self.set_max_na(ctx, this, m);
        ctx.write(Shared::Line(self.rq[this].line));
        if *cg > 0 {
            *cg += self.cfg.pcp;
        }
        next
    }

    /// Where `schedule()` starts its scan: the idle task at `MIN_GOODNESS`; in the 2.4
    /// ports a `prev` still runnable here starts as `next` with its full `goodness()`,
    /// PROC_CHANGE_PENALTY included (2.4's `still_running` label), and the boost the scan
    /// adds to the winner comes on top of it.
    pub(super) fn still_running(
        &self,
        ctx: &SchedCtx<'_>,
        this: CpuId,
        prev: TaskId,
        this_mm: u32,
    ) -> (i32, TaskId) {
        let t = ctx.task(prev);
        if self.cfg.version < MqVersion::V250
            && !t.is_idle
            && t.state == TaskState::Running
            && ctx.allowed(prev, this)
        {
            (self.core.goodness(ctx, prev, this, this_mm), prev)
        } else {
            (MIN_GOODNESS, ctx.idle_task(this))
        }
    }

    /// The remote queues to try, in the order the kernel's scan tries them: each next one
    /// is the highest published value left above `cg`, ties to the lower CPU (its strict
    /// `>`). `cg` changes only when a steal succeeds, which ends the tries, so one sort
    /// gives that order: decreasing value, then increasing CPU.
    pub(super) fn order_remotes(candidates: &mut [(i32, CpuId)]) {
        candidates.sort_unstable_by_key(|&(g, c)| (std::cmp::Reverse(g), c));
    }

    /// `examine_rmt_rqs` (§3.3 step 3). Called with this CPU's queue locked.
    pub(super) fn examine_rmt_rqs(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        this: CpuId,
        cg: &mut i32,
        mut next: TaskId,
        seen: &mut ScheduleSeen,
    ) -> TaskId {
        let idle = ctx.idle_task(this);
        let pool = self.pool_of(this);
        // The queues worth a try; kept between calls, so that a scan allocates nothing.
        let mut remotes = std::mem::take(&mut self.remotes);
        loop {
            let mut premature_idle = 0u32;
            remotes.clear();
            if let Some(x) = &self.steal {
                // The reads are free: the queues that qualify come from the index.
                let now = ctx.now();
                for (g, r) in x.above(*cg, now) {
                    if r != this && self.max_na(ctx, r).cpus_allowed.test(this) {
                        remotes.push((g, r));
                    }
                }
                for r in x.ahead_of(now) {
                    let m = self.max_na(ctx, r);
                    if r != this && m.cpus_allowed.test(this) && m.goodness > *cg {
                        remotes.push((m.goodness, r));
                    }
                }
            } else {
                for r in pool.clone() {
                    if r == this {
                        continue;
                    }
                    // Lock-free: the value of this moment, which the owner may change
                    // before our trylock (item 4 of issue 14; counter 3 vs counter 2).
                    ctx.read(Shared::Line(self.rq[r].line));
                    let m = self.max_na(ctx, r);
                    if m.cpus_allowed.test(this) && m.goodness > *cg {
                        remotes.push((m.goodness, r));
                    }
                }
            }
            if !remotes.is_empty() {
                seen.remote_better = true;
            }
            Self::order_remotes(&mut remotes);
            for &(_, r) in &remotes {
                if self.trylock_rq(ctx, r) {
                    seen.remote_lock_ok = true;
                    let m = *self.max_na(ctx, r);
                    if m.goodness > *cg && m.cpus_allowed.test(this) {
                        seen.remote_still_better = true;
                        if next != idle && !Self::has_cpu(ctx, next) {
                            let g = self.core.na_goodness(ctx, next);
                            self.set_max_na(ctx, this, MaxNa::of(ctx, next, g));
                        }
                        let t = m.ptr.expect("mq: max_na_goodness without max_na_ptr");
                        *cg = m.goodness;
                        self.del_from_runqueue(ctx, t, true);
                        ctx.set_task_cpu(t, this);
                        self.add_to_runqueue(ctx, t, false);
                        next = t;
                        ctx.unlock(self.rq[r].lock);
                        break;
                    }
                    ctx.unlock(self.rq[r].lock);
                } else {
                    premature_idle += 1;
                }
            }
            self.st.premature_idle += u64::from(premature_idle);
            if next == idle && premature_idle > 0 {
                // Withdraw our own advertisement before looking again ("otherwise there
                // is the potential for deadlock", S9).
                self.set_max_na(ctx, this, MaxNa::NONE);
                self.st.rescans += 1;
                continue;
            }
            self.remotes = remotes;
            return next;
        }
    }
}
