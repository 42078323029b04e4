//! The load-balancing module of pooled MQ (`loadbalance.c`, schedulers.md §3.6).
//!
//! What the sources establish (S11, S12): a loadable module that periodically moves tasks
//! between run queues "to equalise run-queue lengths", globally ("load is equally
//! distributed across all run queues"), with the period a module parameter.
//!
//! \[INFERRED\] (the algorithm is not in the stored sources; §3.6 "reasonable reading"):
//! every `lb_interval_ms` a timer on CPU 0 takes every queue lock in CPU order (the lock
//! order that makes holding several locks safe), then repeatedly moves one waiting task
//! from the longest queue to the shortest while their lengths differ by more than one.
//! Lengths count the running task (MQ queues keep it). The task taken is the one nearest
//! the tail that is not running and may run on the target — the longest-queued, hence
//! the most likely cache-cold (queues are filled at the head). Ties between queues go to
//! the lower CPU number. A task moved to an idle CPU kicks it.

use crate::kernel::sched::Shared;
use crate::policy::SchedCtx;

use super::Mq;

impl Mq {
    /// Balancer period in ticks (at least one).
    pub(super) fn lb_ticks(ms: u64, hz: u32) -> u64 {
        (ms * hz as u64).div_ceil(1000).max(1)
    }

    /// One run of the balancer.
    pub(super) fn load_balance(&mut self, ctx: &mut SchedCtx<'_>) {
        self.st.lb_runs += 1;
        let n = self.ncpu();
        for c in 0..n {
            self.rq_lock(ctx, c);
        }
        let mut exhausted = vec![false; n];
        loop {
            let len = |q: &super::RunQueue| q.list.len();
            let Some(src) = (0..n)
                .filter(|&c| !exhausted[c])
                .max_by_key(|&c| (len(&self.rq[c]), std::cmp::Reverse(c)))
            else {
                break;
            };
            let dst = (0..n)
                .min_by_key(|&c| (len(&self.rq[c]), c))
                .expect("at least one cpu");
            if len(&self.rq[src]) <= len(&self.rq[dst]) + 1 {
                break;
            }
            let mut pick = None;
            for &t in self.rq[src].list.iter().rev() {
                ctx.read(Shared::Task(t));
                if !Self::has_cpu(ctx, t) && ctx.allowed(t, dst) {
                    pick = Some(t);
                    break;
                }
            }
            let Some(t) = pick else {
                exhausted[src] = true;
                continue;
            };
            self.del_from_runqueue(ctx, t, true);
            ctx.set_task_cpu(t, dst);
            self.add_to_runqueue(ctx, t, true);
            self.st.lb_moves += 1;
            if ctx.cpu_is_idle(dst) {
                ctx.resched_cpu(dst);
            }
        }
        for c in (0..n).rev() {
            ctx.unlock(self.rq[c].lock);
        }
    }
}
