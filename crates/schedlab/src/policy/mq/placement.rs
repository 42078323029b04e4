//! `reschedule_idle(p)` (schedulers.md §3.4): where a woken or forked task goes. Every
//! CPU is keyed by what it runs (idle: the longest idle first; busy: its published
//! `curr_na_goodness` plus PROC_CHANGE_PENALTY away from the task's CPU), and the CPUs
//! keyed below the task's `na_goodness` are tried in increasing key order, each by
//! `spin_trylock` and a re-check under the lock. mq-pool confines the keys to the task's
//! pool and reaches idle CPUs outside it through the non-idle bitmap. Above 64 CPUs
//! without the coherence model the first target may come from the kernel's index of idle
//! CPUs (`Mq::indexed_target`), which finds what the walk would.

use super::{ad_line, Mq, MqVersion, Placement};
use crate::engine::Time;
use crate::kernel::sched::Shared;
use crate::kernel::task::{Task, TaskId};
use crate::machine::CpuId;
use crate::policy::sched24::{can_schedule, MIN_GOODNESS};
use crate::policy::SchedCtx;

/// `reschedule_idle`'s key of a CPU, for a walk that started at `now` for a task last on
/// `tsk_cpu` (§3.4): lower is a better target.
struct ResKey {
    now: Time,
    mhz: u64,
    pcp: i32,
    tsk_cpu: CpuId,
}

impl ResKey {
    /// CPU `cpu`, running a task of `curr_na_goodness` `na`, last switched at `since`:
    /// when idle, minus the cycles since then (the longest idle first, counted from the
    /// walk's start); when busy, `na` plus the PROC_CHANGE_PENALTY away from the task's
    /// CPU.
    #[inline(always)]
    fn of(&self, cpu: CpuId, na: i32, since: Time) -> i32 {
        if na == MIN_GOODNESS {
            let cycles = self.now.saturating_sub(since) * self.mhz / 1000;
            i32::try_from(cycles).map_or(i32::MIN, |c| -c)
        } else {
            na + if cpu != self.tsk_cpu { self.pcp } else { 0 }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// `reschedule_idle` calls whose first target the kernel's idle index gave.
    pub(crate) static RESCHED_INDEXED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `can_schedule(t, cpu)` for each `cpu` of a walk, `t`'s fields read once.
fn schedulable(t: &Task) -> impl Fn(CpuId) -> bool {
    let (allowed, runs_on) = (t.cpus_allowed, t.on_cpu);
    move |cpu| allowed.test(cpu) && runs_on.is_none_or(|c| c == cpu)
}

/// The CPU of the lowest key below `thr`, the lower CPU on ties: `reschedule_idle`'s
/// next target once one has failed.
fn lowest(keys: &[i32], thr: i32) -> Option<CpuId> {
    let (mut best, mut v) = (None, thr);
    for (c, &k) in keys.iter().enumerate() {
        if k < v {
            v = k;
            best = Some(c);
        }
    }
    best
}

impl Mq {
    /// `reschedule_idle`'s margin: `preemption_goodness` must exceed it (2.4.7 and before:
    /// 1, as 2.4.0's `max_prio = 1`; later: 0).
    fn preempt_margin(&self) -> i32 {
        i32::from(self.cfg.version == MqVersion::V247)
    }

    /// `reschedule_idle(p)` (§3.4), called with the queue of `p->processor` locked; `p`
    /// is not running. Decides where `p` goes and whether that CPU is kicked; a target
    /// other than `p`'s own CPU comes back locked (by `spin_trylock`). The caller moves
    /// `p` there ([`Mq::place`]) or lets the wake-up path do it.
    pub(super) fn reschedule_idle(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) -> Placement {
        let tsk_cpu = ctx.task(p).processor;
        debug_assert!(ctx.holds(self.rq[tsk_cpu].lock));
        self.st.resched_calls += 1;
        let stay = |kick| Placement { cpu: tsk_cpu, kick };

        // Fast path: the task's last CPU is idle.
        ctx.read(Shared::Line(ad_line(tsk_cpu)));
        if can_schedule(ctx, p, tsk_cpu) && ctx.cpu_is_idle(tsk_cpu) {
            self.st.resched_fast_path += 1;
            return stay(true);
        }

        // mq-pool: an idle CPU outside the pool, found through the non-idle bitmap.
        // [INFERRED] S11 says the bitmap exists "so that idle CPUs anywhere in the system
        // can be found quickly", not how reschedule_idle uses it; we use it when the
        // task's pool has no idle CPU, before preempting inside the pool.
        let pool = self.pool_of(tsk_cpu);
        if self.cfg.idle_bitmap && pool.len() < self.ncpu() {
            if let Some(c) = self.idle_outside_pool(ctx, p) {
                self.st.resched_bitmap_moves += 1;
                return Placement { cpu: c, kick: true };
            }
        }

        let margin = self.preempt_margin();
        let thr = self.core.na_goodness(ctx, p) - margin;
        let key = ResKey {
            now: ctx.now(),
            mhz: ctx.costs().cpu_mhz,
            pcp: self.cfg.pcp,
            tsk_cpu,
        };
        let mut keys = std::mem::take(&mut self.resched_keys);
        keys.clear();
        // The index spans every CPU: only a walk over all of them may ask it.
        let indexed = if pool.len() == self.ncpu() {
            self.indexed_target(ctx, p, thr, &key)
        } else {
            None
        };
        let mut target = match indexed {
            Some(t) => {
                #[cfg(debug_assertions)]
                {
                    let mut scratch = Vec::new();
                    let walk = self.target_keys(ctx, p, pool.clone(), thr, &key, &mut scratch);
                    assert_eq!(t, walk, "mq: the idle index and the walk disagree");
                }
                #[cfg(test)]
                RESCHED_INDEXED.set(RESCHED_INDEXED.get() + 1);
                t
            }
            None => self.target_keys(ctx, p, pool.clone(), thr, &key, &mut keys),
        };
        if target.is_some() {
            self.st.resched_target_exists += 1;
        }
        let (mut saw_task_cpu, mut saw_lock) = (false, false);
        let placement = loop {
            let Some(t) = target else {
                break stay(false);
            };
            if t == tsk_cpu {
                saw_task_cpu = true;
            }
            let curr = ctx.curr(t);
            if t == tsk_cpu && self.preemption_goodness(ctx, curr, p, t) > margin {
                // Its queue is the one we hold: no extra lock.
                break stay(true);
            } else if self.trylock_rq(ctx, t) {
                if t != tsk_cpu {
                    saw_lock = true;
                }
                ctx.read(Shared::Line(ad_line(t)));
                let curr = ctx.curr(t);
                if ctx.cpu_is_idle(t) || self.preemption_goodness(ctx, curr, p, t) > margin {
                    self.st.resched_moved += 1;
                    break Placement { cpu: t, kick: true };
                }
                ctx.unlock(self.rq[t].lock);
            }
            if keys.is_empty() {
                // The index gave the first target: the walk's keys for the next ones,
                // as of the walk's start (reads are free there; nothing they read has
                // changed since).
                self.target_keys(ctx, p, pool.clone(), thr, &key, &mut keys);
            }
            keys[t] = thr;
            target = lowest(&keys, thr);
        };
        self.resched_keys = keys;
        self.count_resched(saw_task_cpu, saw_lock);
        placement
    }

    /// The keys of `reschedule_idle`'s walk over `pool` for `p`, into `keys` (one per CPU;
    /// `thr`, never a target, for a CPU outside the pool or not allowed), and the first
    /// target: the lowest key below `thr`, the lower CPU on ties. An idle CPU's key is
    /// minus the cycles since its last switch (longest idle first), a busy one's
    /// `curr_na_goodness`, plus the PROC_CHANGE_PENALTY away from `p`'s CPU.
    fn target_keys(
        &self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        pool: std::ops::Range<CpuId>,
        thr: i32,
        key: &ResKey,
        keys: &mut Vec<i32>,
    ) -> Option<CpuId> {
        let schedulable = schedulable(ctx.task(p));
        keys.clear();
        keys.resize(self.ncpu(), thr);
        // One pass both keys every CPU and finds the lowest: ascending CPUs with a
        // strict `<` keep the lower CPU on ties, as a second pass over `keys` would.
        let (mut best, mut v) = (None, thr);
        let mut offer = |cpu: CpuId, k: i32, keys: &mut [i32]| {
            keys[cpu] = k;
            if k < v {
                v = k;
                best = Some(cpu);
            }
        };
        if ctx.line_reads_free() {
            // The reads cost nothing and the clock stands still: the values at the walk's
            // start, read from dense arrays.
            let since = ctx.last_schedules();
            for cpu in pool {
                if schedulable(cpu) {
                    let na = self.curr_na_seen(cpu, key.now);
                    offer(cpu, key.of(cpu, na, since[cpu]), keys);
                }
            }
            return best;
        }
        for cpu in pool {
            if cpu != key.tsk_cpu {
                ctx.read(Shared::Line(ad_line(cpu)));
            }
            if schedulable(cpu) {
                // Lock-free, at the walk's moment (its line reads move the clock):
                // re-checked under the target's lock by the caller.
                let na = self.curr_na_seen(cpu, ctx.now());
                offer(cpu, key.of(cpu, na, ctx.last_schedule(cpu)), keys);
            }
        }
        best
    }

    /// `reschedule_idle`'s first target from the kernel's index of idle CPUs, without the
    /// walk over every CPU; `None` when the index cannot tell (no index, a
    /// PROC_CHANGE_PENALTY below 2, no idle CPU below `thr`) and the walk decides.
    ///
    /// Exact, given an idle CPU below `thr`: an idle CPU's key is at most 0, and a busy
    /// CPU's other than the task's at least `pcp − 1` (a running task's `na_goodness` is
    /// −1 at the least), so only idle CPUs and the task's own CPU compete. A CPU that a
    /// read at `now` finds idle (`curr_na_goodness` MIN) is in the index (its newest
    /// `curr` is idle: the `schedule()` that writes MIN publishes the idle task after it,
    /// in the same hook), or has written its `curr` after `now`, or is this CPU, inside
    /// its own hook; each is tested with the walk's own reads. Idle keys grow with
    /// `last_schedule`, so the index is read in order only while they tie.
    fn indexed_target(
        &self,
        ctx: &SchedCtx<'_>,
        p: TaskId,
        thr: i32,
        key: &ResKey,
    ) -> Option<Option<CpuId>> {
        if !ctx.idle_indexed() || self.cfg.pcp < 2 {
            return None;
        }
        let ok = schedulable(ctx.task(p));
        let now = key.now;
        let idle_now = |c: CpuId| ok(c) && self.curr_na_seen(c, now) == MIN_GOODNESS;
        // The lowest (key, CPU) below `thr`.
        let mut best: Option<(i32, CpuId)> = None;
        let offer = |best: &mut Option<(i32, CpuId)>, k: i32, c: CpuId| {
            if k < thr && best.is_none_or(|b| (k, c) < b) {
                *best = Some((k, c));
            }
        };
        let mut first = None;
        for (since, c) in ctx.idle_cpus_latest() {
            let k = key.of(c, MIN_GOODNESS, since);
            if first.is_some_and(|f| k > f) {
                break;
            }
            if idle_now(c) {
                offer(&mut best, k, c);
                first.get_or_insert(k);
            }
        }
        for c in ctx.curr_written_after(now).chain([ctx.cpu()]) {
            if idle_now(c) {
                offer(&mut best, key.of(c, MIN_GOODNESS, ctx.last_schedule(c)), c);
            }
        }
        best?;
        // The task's own CPU, busy: its key carries no penalty, so it competes (−1 or 0
        // for a yielded or spent task there).
        let tc = key.tsk_cpu;
        let na = self.curr_na_seen(tc, now);
        if ok(tc) && na != MIN_GOODNESS {
            offer(&mut best, key.of(tc, na, 0), tc);
        }
        Some(best.map(|(_, c)| c))
    }

    /// `aligned_data[cpu].curr_na_goodness` as a lock-free read at `now` sees it.
    #[inline(always)]
    fn curr_na_seen(&self, cpu: CpuId, now: Time) -> i32 {
        self.curr_na_newest
            .at(cpu, &self.curr_na_goodness[cpu], now)
    }

    /// Carry out a placement for `p`, which is on its CPU's queue (`__schedule_tail`): move
    /// it to the target (whose lock `reschedule_idle` took) and kick as decided.
    pub(super) fn place(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, pl: Placement) {
        let from = ctx.task(p).processor;
        if pl.cpu != from {
            self.del_from_runqueue(ctx, p, true);
            ctx.set_task_cpu(p, pl.cpu);
            self.add_to_runqueue(ctx, p, true);
        }
        if pl.kick {
            ctx.resched_cpu(pl.cpu);
        }
        if pl.cpu != from {
            ctx.unlock(self.rq[pl.cpu].lock);
        }
    }

    fn count_resched(&mut self, task_cpu: bool, lock: bool) {
        self.st.resched_target_is_task_cpu += u64::from(task_cpu);
        self.st.resched_remote_lock_ok += u64::from(lock);
    }

    /// mq-pool: when no CPU of the task's pool is idle, an idle CPU of another pool for
    /// `p`, found in the non-idle bitmap (lowest number first, as a find-first-zero-bit
    /// would), by `spin_trylock` and re-check. It comes back locked.
    fn idle_outside_pool(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) -> Option<CpuId> {
        let tsk_cpu = ctx.task(p).processor;
        let pool = self.pool_of(tsk_cpu);
        ctx.read(Shared::Line(self.bitmap_line));
        let now = ctx.now();
        let idle_in_pool = pool.clone().any(|c| !self.rq[c].running_non_idle.at(now));
        if idle_in_pool {
            return None;
        }
        for c in 0..self.ncpu() {
            if pool.contains(&c) || self.rq[c].running_non_idle.at(now) || !ctx.allowed(p, c) {
                continue;
            }
            if !self.trylock_rq(ctx, c) {
                continue;
            }
            if ctx.cpu_is_idle(c) {
                return Some(c);
            }
            ctx.unlock(self.rq[c].lock);
        }
        None
    }
}
