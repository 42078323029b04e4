//! Load balancing: the early (pre-G1) balancer, the -G1 balancer and 2.6.0's.
//!
//! All three are called with `this` CPU's `rq->lock` held and return with it held; they
//! may drop and retake it to lock the busiest queue in CPU order (`double_lock_balance`,
//! schedulers.md §2.4 step 4: lower address = lower CPU first). Pulled tasks go to the
//! tail of this CPU's **active** array through `SchedCtx::set_task_cpu`, so every move
//! is a counted migration and the task's next switch-in here is CPU-unaffine; its kernel
//! footprint and working set are refilled by the cache model when it runs.
//!
//! 1. **Early** (`o1-d1`; the stored pre-G1 `load_balance`, §2.4 end): called when a
//!    queue empties in `schedule()`, on idle ticks every `REBALANCE_TICK`, and at the end
//!    of every busy tick (the pre-G1 `expire_task`/`scheduler_tick` ends with
//!    `load_balance(rq)`: "a runqueue balance done at every timer tick", Libenzi, LKML
//!    4 Jan 2002; `busy_rebalance_ms`). Takes the
//!    longest queue length `L` over all CPUs; needs `L − own > 1 + L/8` (≈10 %); wants to
//!    move the *whole* difference (`nr_tasks = L − own`), one busiest queue at a time
//!    (lengths below the last one's), re-checking `busiest > own + 1` only when it changes
//!    queue — after a pull from the expired array it goes on in the active array, which
//!    can overshoot. No cache-hotness test, no memory of previous lengths: the balancer
//!    that "rebalanced runqueues way too often" (-G1 mail).
//! 2. **G1** (§2.2, S6 structure): own length = max(previous, current), remote =
//!    min(previous, current) (current values when idle); busiest needs ≥ 2;
//!    `imbalance = (max − own)/2`, busy needs `imbalance ≥ (max+3)/4`; idle pulls exactly
//!    one task, busy pulls `imbalance`. Expired array first, priorities from the highest,
//!    each list from its tail.
//! 3. **2.6.0** (§2.5.8): as G1 but `imbalance = max − own`, busy needs `4·imbalance ≥
//!    max`, re-check `busiest > own`, then `imbalance /= 2` (0 ⇒ the busy loop never stops:
//!    the literal code's quirk); busy balancing refuses cache-hot tasks (`now −
//!    timestamp ≤ cache_decay_ticks`).
//!
//! Cost: reading another CPU's `nr_running` pulls its runqueue line over (one line
//! transfer); each task looked at in a scan is `examine(p)`; the locks are charged by the
//! spinlock model.
//!
//! Statistics: `balance_rqs_scanned` counts the runqueue lengths the modelled balancers
//! read (every CPU's at every G1/2.6 call, at every pass of the early one's search):
//! their O(CPUs) work per call, which the simulator charges in full. Past 64 CPUs an idle
//! G1/2.6 call's walk is answered by [`super::nr_running::NrRunning`] without a host loop.

use crate::engine::Time;
use crate::kernel::sched::Shared;
use crate::kernel::task::TaskId;
use crate::machine::CpuId;
use crate::policy::SchedCtx;

use super::prio_array::{MAX_PRIO, MAX_RT_PRIO};
use super::O1;

/// Which balancer a version has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balancer {
    /// Pre-G1 (the -A…-D2 code of 2.5.2-pre6 to pre10).
    Early,
    /// -G1.
    G1,
    /// 2.6.0.
    V26,
}

impl O1 {
    /// `load_balance(this_rq, idle)`; `this`'s lock is held.
    pub(super) fn load_balance(&mut self, ctx: &mut SchedCtx<'_>, this: CpuId, idle: bool) {
        debug_assert!(ctx.holds(self.rqs[this].lock));
        self.stats.balance_calls += 1;
        if idle {
            self.stats.idle_balance_calls += 1;
        } else {
            self.stats.busy_balance_calls += 1;
        }
        match self.v.balancer {
            Balancer::Early => self.load_balance_early(ctx, this),
            Balancer::G1 | Balancer::V26 => self.load_balance_g1(ctx, this, idle),
        }
    }

    /// Charge reading every other CPU's `nr_running`.
    fn charge_remote_reads(&self, ctx: &mut SchedCtx<'_>, this: CpuId) {
        ctx.charge(self.rqs[this].remote_reads_ns);
    }

    /// `double_lock_balance`: take `busiest`'s lock while holding `this`'s, in CPU order.
    /// Returns true when `this`'s lock was dropped meanwhile.
    fn double_lock_balance(&self, ctx: &mut SchedCtx<'_>, this: CpuId, busiest: CpuId) -> bool {
        let (tl, bl) = (self.rqs[this].lock, self.rqs[busiest].lock);
        let try_first = self.v.balancer != Balancer::Early;
        if try_first && ctx.trylock(bl) {
            return false;
        }
        if busiest < this {
            ctx.unlock(tl);
            ctx.lock(bl);
            ctx.lock(tl);
            true
        } else {
            ctx.lock(bl);
            false
        }
    }

    /// Own load as G1/2.6 see it: the larger of previous and current (current if idle).
    fn own_load(&mut self, this: CpuId, idle: bool) -> u32 {
        let cur = self.nr_running.latest(this);
        if idle {
            return cur;
        }
        cur.max(self.nr_running.prev(this, this))
    }

    /// `can_migrate_task` (all versions): not running, allowed here; and, in 2.6, not
    /// cache-hot for busy balancing. D1 and G1 have no cache-hotness test:
    /// `cache_decay_ticks` came with 2.5.3-pre5, after G1 (schedulers.md §2.1).
    fn can_migrate(&self, ctx: &SchedCtx<'_>, p: TaskId, this: CpuId, idle: bool) -> bool {
        if ctx.task(p).on_cpu.is_some() || !ctx.allowed(p, this) {
            return false;
        }
        match (self.v.balancer, self.cache_decay_ticks) {
            (Balancer::V26, Some(d)) if !idle => {
                let hot = self.c.jiffies_to_ns(d);
                ctx.now().saturating_sub(self.ts[p as usize].timestamp) > hot
            }
            _ => true,
        }
    }

    /// `pull_task`: move `p` from `src`'s array `arr` to the tail of `this`'s active
    /// array; reschedule here if it beats the current task.
    pub(super) fn pull_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        src: CpuId,
        arr: usize,
        p: TaskId,
        this: CpuId,
        idle: bool,
    ) {
        let prio = self.ts[p as usize].prio;
        self.rqs[src].arrays[arr].dequeue(p, prio);
        let now = ctx.now();
        self.nr_running.add(src, now, -1);
        ctx.set_task_cpu(p, this);
        self.ts[p as usize].pulled = true;
        let act = self.rqs[this].active;
        self.rqs[this].arrays[act].enqueue(p, prio);
        self.ts[p as usize].array = Some(act);
        self.nr_running.add(this, now, 1);
        if idle {
            self.stats.pulled_idle += 1;
        } else {
            self.stats.pulled_busy += 1;
        }
        if prio < self.prio_of(ctx, ctx.curr(this)) {
            ctx.resched_cpu(this);
        }
    }

    /// `find_busiest_queue` of G1 and 2.6.0: the busiest other queue and its load (> 1),
    /// every CPU's current length remembered in `prev_nr_running[]`. Lock-free, as of
    /// this moment; the caller re-checks under the lock.
    fn find_busiest_queue(&mut self, this: CpuId, now: Time, idle: bool) -> Option<(CpuId, u32)> {
        self.stats.balance_rqs_scanned += self.rqs.len() as u64;
        if idle {
            // Idle, the load is the current length: the same walk, kept incrementally.
            return self
                .nr_running
                .idle_walk(this, now)
                .filter(|&(_, load)| load > 1);
        }
        let mut busiest = None;
        let mut max_load = 1;
        for i in 0..self.rqs.len() {
            let cur = self.nr_running.at(i, now);
            let prev = self.nr_running.exchange(this, i, cur);
            let load = cur.min(prev);
            // determinism: ties go to the lowest CPU (strict `>`).
            if i != this && load > max_load {
                max_load = load;
                busiest = Some((i, load));
            }
        }
        busiest
    }

    /// G1 and 2.6.0 (`find_busiest_queue` + `load_balance`).
    fn load_balance_g1(&mut self, ctx: &mut SchedCtx<'_>, this: CpuId, idle: bool) {
        let v26 = self.v.balancer == Balancer::V26;
        let mut nr = self.own_load(this, idle);
        self.charge_remote_reads(ctx, this);
        let Some((b, max_load)) = self.find_busiest_queue(this, ctx.now(), idle) else {
            return;
        };
        let mut imbalance: i64 = if v26 {
            max_load as i64 - nr as i64
        } else {
            (max_load as i64 - nr as i64) / 2
        };
        if v26 {
            if !idle && imbalance * 4 < max_load as i64 {
                return;
            }
        } else if imbalance <= 0 || (!idle && imbalance < (max_load as i64 + 3) / 4) {
            return;
        }
        if self.double_lock_balance(ctx, this, b) {
            nr = self.own_load(this, idle);
        }
        let bn = self.nr_running.latest(b);
        let enough = if v26 { bn > nr } else { bn > nr + 1 };
        if !enough {
            ctx.unlock(self.rqs[b].lock);
            return;
        }
        if v26 {
            imbalance /= 2;
        }
        let exp = 1 - self.rqs[b].active;
        let first = if self.rqs[b].arrays[exp].nr_active > 0 {
            exp
        } else {
            self.rqs[b].active
        };
        let mut arr = first;
        'arrays: loop {
            let mut idx = self.rqs[b].arrays[arr].find_first_bit();
            while idx < MAX_PRIO {
                // The list from its tail backwards (pulls only remove entries).
                let list: Vec<TaskId> = self.rqs[b].arrays[arr]
                    .list(idx)
                    .iter()
                    .rev()
                    .copied()
                    .collect();
                for t in list {
                    ctx.read(Shared::Task(t));
                    if !self.can_migrate(ctx, t, this, idle) {
                        continue;
                    }
                    self.pull_task(ctx, b, arr, t, this, idle);
                    if idle {
                        break 'arrays;
                    }
                    imbalance -= 1;
                    if imbalance == 0 {
                        break 'arrays;
                    }
                }
                idx = self.rqs[b].arrays[arr].find_next_bit(idx + 1);
            }
            if arr == exp && arr == first {
                arr = self.rqs[b].active;
            } else {
                break;
            }
        }
        ctx.unlock(self.rqs[b].lock);
    }

    /// The pre-G1 balancer (see the module doc, step 1).
    fn load_balance_early(&mut self, ctx: &mut SchedCtx<'_>, this: CpuId) {
        let n = self.rqs.len();
        self.charge_remote_reads(ctx, this);
        let now = ctx.now();
        // The longest queue of all, this CPU's included: the kernel reads all `n`; the
        // host asks the index for the others' longest (the same answer).
        let others = self.nr_running.busiest(now, this).map_or(0, |(_, l)| l);
        let mut prev_max_load = others.max(self.nr_running.at(this, now));
        self.stats.balance_rqs_scanned += n as u64;
        let mut nr_tasks = prev_max_load as i64 - self.nr_running.latest(this) as i64;
        // "It needs an at least ~10% imbalance to trigger balancing".
        if nr_tasks <= 1 + prev_max_load as i64 / 8 {
            return;
        }
        prev_max_load += 1;
        let last = 'search: loop {
            let mut busiest = None;
            let mut max_load = 0;
            self.stats.balance_rqs_scanned += n as u64;
            for i in 0..n {
                let load = self.nr_running.at(i, ctx.now());
                if load > max_load && load < prev_max_load && i != this {
                    busiest = Some(i);
                    max_load = load;
                }
            }
            let Some(b) = busiest else { return };
            if max_load <= self.nr_running.latest(this) {
                return;
            }
            prev_max_load = max_load;
            self.double_lock_balance(ctx, this, b);
            if self.nr_running.latest(b) <= self.nr_running.latest(this) + 1 {
                ctx.unlock(self.rqs[b].lock);
                return;
            }
            let exp = 1 - self.rqs[b].active;
            let mut arr = if self.rqs[b].arrays[exp].nr_active > 0 {
                exp
            } else {
                self.rqs[b].active
            };
            'array: loop {
                // RT tasks are not balanced: the scan starts at MAX_RT_PRIO; each list
                // from its head.
                let mut idx = self.rqs[b].arrays[arr].find_next_bit(MAX_RT_PRIO as usize);
                let mut pulled = None;
                while idx < MAX_PRIO && pulled.is_none() {
                    let list: Vec<TaskId> =
                        self.rqs[b].arrays[arr].list(idx).iter().copied().collect();
                    for t in list {
                        ctx.read(Shared::Task(t));
                        if ctx.curr(b) != t && ctx.allowed(t, this) {
                            pulled = Some(t);
                            break;
                        }
                    }
                    idx = self.rqs[b].arrays[arr].find_next_bit(idx + 1);
                }
                let Some(t) = pulled else {
                    if arr == exp {
                        arr = self.rqs[b].active;
                        continue 'array;
                    }
                    ctx.unlock(self.rqs[b].lock);
                    continue 'search;
                };
                self.pull_task(ctx, b, arr, t, this, true);
                nr_tasks -= 1;
                if nr_tasks == 0 {
                    break 'search b;
                }
                if arr == exp {
                    arr = self.rqs[b].active;
                    continue 'array;
                }
                ctx.unlock(self.rqs[b].lock);
                continue 'search;
            }
        };
        // Reached only after the last wanted pull, with that busiest queue still locked.
        ctx.unlock(self.rqs[last].lock);
    }
}
