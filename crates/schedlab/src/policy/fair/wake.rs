//! Wake-up and fork placement (modern.md §7; fair.c: select_task_rq_fair, wake_affine,
//! select_idle_sibling, select_idle_cpu, sched_balance_find_dst_group and _cpu).
//!
//! # Workflow
//!
//! 1. **Wake-up** (`select_task_rq_fair`, WF_TTWU): `record_wakee`; unless `wake_wide`,
//!    the first WAKE_AFFINE domain holding both CPUs decides between the waker's CPU and
//!    `prev` (`wake_affine`: idle tests, then the PELT load comparison E19);
//!    `select_idle_sibling` then looks for an idle CPU sharing the LLC with the target
//!    (none without an LLC domain: the presets' private L2 caches).
//! 2. **Fork** (WF_FORK): from the highest BALANCE_FORK domain down, the idlest group and
//!    in it the idlest CPU (§7.5), with the balancer's group statistics
//!    ([`super::balance::SgStats`]).
//!
//! Lock-free, as the kernel's: placement reads other CPUs' queues without their locks.

use crate::kernel::sched::Shared;
use crate::kernel::task::TaskId;
use crate::machine::CpuId;
use crate::policy::{SchedCtx, Wake};

use super::balance::*;
use super::pelt::SCHED_CAPACITY_SCALE;
use super::topology::*;
use super::Fair;

impl Fair {
    /// `cpus_share_cache(a, b)`.
    pub fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        if a == b {
            return true;
        }
        match self.sd_llc[a] {
            Some(i) => self.sd[a][i].contains(b),
            None => false,
        }
    }

    /// `sd_llc_size` of `cpu`.
    pub fn sd_llc_size(&self, cpu: CpuId) -> u32 {
        self.sd_llc[cpu].map_or(1, |i| self.sd[cpu][i].span_weight() as u32)
    }

    /// `ttwu_do_activate`'s `avg_idle` update on a wake-up onto `cpu` (§6.9).
    pub(super) fn ttwu_avg_idle(&mut self, ctx: &SchedCtx<'_>, cpu: CpuId) {
        let rq = &mut self.rqs[cpu];
        if rq.idle_stamp != 0 {
            let delta = ctx.now().saturating_sub(rq.idle_stamp) as i64;
            let max = 2 * rq.max_idle_balance_cost;
            let diff = delta - rq.avg_idle as i64;
            rq.avg_idle = (rq.avg_idle as i64 + diff / 8).max(0) as u64;
            rq.avg_idle = rq.avg_idle.min(max);
            rq.idle_stamp = 0;
        }
    }

    /// `record_wakee`: the waker's flip counter (§7.2).
    fn record_wakee(&mut self, ctx: &SchedCtx<'_>, p: TaskId) {
        let waker = ctx.curr(ctx.cpu());
        let j = ctx.jiffies();
        let hz = self.t.hz as u64;
        let w = &mut self.se[waker as usize];
        if j > w.wakee_flip_decay_ts + hz {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = j;
        }
        if w.last_wakee != Some(p) {
            w.last_wakee = Some(p);
            w.wakee_flips += 1;
        }
    }

    /// (E18) `wake_wide(p)`.
    fn wake_wide(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        let waker = ctx.curr(ctx.cpu());
        let mut master = self.se[waker as usize].wakee_flips;
        let mut slave = self.se[p as usize].wakee_flips;
        let factor = self.sd_llc_size(ctx.cpu());
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || master < slave * factor)
    }

    /// `select_task_rq_fair` (§7.2); lock-free.
    pub(super) fn select_task_rq_fair(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        prev: CpuId,
        wake: Wake,
    ) -> CpuId {
        let cpu = ctx.cpu();
        let sync = wake.sync && self.t.sync_wakeups && !ctx.task(ctx.curr(cpu)).is_idle;
        let mut new_cpu = prev;
        let mut want_affine = false;
        let ttwu = !wake.fork;
        let sd_flag = if wake.fork {
            SD_BALANCE_FORK
        } else {
            SD_BALANCE_WAKE
        };
        if ttwu {
            self.record_wakee(ctx, p);
            want_affine = !self.wake_wide(ctx, p) && ctx.allowed(p, cpu);
        }
        let mut sd: Option<usize> = None;
        for i in 0..self.sd[cpu].len() {
            let d = &self.sd[cpu][i];
            if want_affine && d.flags & SD_WAKE_AFFINE != 0 && d.contains(prev) {
                if cpu != prev {
                    new_cpu = self.wake_affine(ctx, i, p, cpu, prev, sync);
                }
                sd = None;
                break;
            }
            if d.flags & sd_flag != 0 {
                sd = Some(i);
            } else if !want_affine {
                break;
            }
        }
        if let Some(i) = sd {
            let c = self.find_dst_cpu(ctx, cpu, i, p, prev, sd_flag);
            if c != cpu {
                self.stats.fork_balanced += 1;
            }
            c
        } else if ttwu {
            let c = self.select_idle_sibling(ctx, p, prev, new_cpu);
            if c != new_cpu {
                self.stats.wake_idle_sibling += 1;
            }
            c
        } else {
            new_cpu
        }
    }

    /// `wake_affine` (§7.3): `this` or `prev`.
    fn wake_affine(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        sd: usize,
        p: TaskId,
        this: CpuId,
        prev: CpuId,
        sync: bool,
    ) -> CpuId {
        let mut target = self.wake_affine_idle(ctx, this, prev, sync);
        if target.is_none() {
            target = self.wake_affine_weight(ctx, sd, p, this, prev, sync);
        }
        ctx.schedstat_wake_affine(p, target == Some(this));
        if target == Some(this) {
            self.stats.wake_affine += 1;
            this
        } else {
            prev
        }
    }

    fn wake_affine_idle(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        this: CpuId,
        prev: CpuId,
        sync: bool,
    ) -> Option<CpuId> {
        if self.idle_cpu(ctx, this) && self.cpus_share_cache(this, prev) {
            return Some(if self.idle_cpu(ctx, prev) { prev } else { this });
        }
        if sync && self.runs_alone(this) {
            return Some(this);
        }
        if self.idle_cpu(ctx, prev) {
            return Some(prev);
        }
        None
    }

    /// `rq->nr_running == 1`, or with `sync_delayed` `rq->nr_running - cfs_h_nr_delayed(rq)
    /// == 1`: delayed-dequeue tasks sleep, though queued. The queue's task list holds
    /// curr and the delayed ones; the count stops at two.
    pub(super) fn runs_alone(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu];
        if !self.t.sync_delayed || rq.nr_running <= 1 {
            return rq.nr_running == 1;
        }
        let mut runnable = rq
            .cfs_tasks
            .iter()
            .filter(|&&t| !self.se[t as usize].sched_delayed);
        runnable.next().is_some() && runnable.next().is_none()
    }

    /// (E19) `wake_affine_weight`, signed.
    fn wake_affine_weight(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        sd: usize,
        p: TaskId,
        this: CpuId,
        prev: CpuId,
        sync: bool,
    ) -> Option<CpuId> {
        ctx.read(Shared::Line(self.rqs[prev].line));
        let mut this_eff = self.cpu_load(this) as i64;
        if sync {
            let current = ctx.curr(this);
            let current_load = self.task_h_load(current) as i64;
            if current_load > this_eff {
                return Some(this);
            }
            this_eff -= current_load;
        }
        let task_load = self.task_h_load(p) as i64;
        this_eff += task_load;
        this_eff *= 100;
        this_eff *= SCHED_CAPACITY_SCALE as i64;
        let pct = self.sd[this][sd].imbalance_pct as i64;
        let mut prev_eff = self.cpu_load(prev) as i64;
        prev_eff -= task_load;
        prev_eff *= 100 + (pct - 100) / 2;
        prev_eff *= SCHED_CAPACITY_SCALE as i64;
        if sync {
            prev_eff += 1;
        }
        (this_eff < prev_eff).then_some(this)
    }

    /// `select_idle_sibling(p, prev, target)` (§7.4).
    fn select_idle_sibling(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        prev: CpuId,
        target: CpuId,
    ) -> CpuId {
        if self.idle_cpu(ctx, target) {
            return target;
        }
        if prev != target && self.cpus_share_cache(prev, target) && self.idle_cpu(ctx, prev) {
            return prev;
        }
        let recent = self.se[p as usize].recent_used_cpu;
        self.se[p as usize].recent_used_cpu = prev;
        if recent != prev
            && recent != target
            && recent < ctx.nr_cpus()
            && self.cpus_share_cache(recent, target)
            && self.idle_cpu(ctx, recent)
            && ctx.allowed(p, recent)
        {
            return recent;
        }
        let Some(llc) = self.sd_llc[target] else {
            return target;
        };
        let mut has_idle_core = false;
        if self.topo.has_smt() {
            // has_idle_cores, computed exactly (see the module doc).
            let span = &self.sd[target][llc].span;
            has_idle_core = span.iter().any(|&c| self.core_idle(ctx, c));
            if !has_idle_core && self.cpus_share_cache(prev, target) {
                // select_idle_smt: an idle sibling of prev.
                for &c in self.topo.siblings(prev) {
                    if c != prev
                        && ctx.allowed(p, c)
                        && self.sd[target][llc].contains(c)
                        && self.idle_cpu(ctx, c)
                    {
                        return c;
                    }
                }
            }
        }
        if let Some(i) = self.select_idle_cpu(ctx, p, llc, has_idle_core, target) {
            return i;
        }
        target
    }

    /// True when every SMT sibling of `cpu`'s core is idle.
    fn core_idle(&self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> bool {
        self.topo
            .siblings(cpu)
            .iter()
            .all(|&c| self.idle_cpu(ctx, c))
    }

    /// `select_idle_cpu` over the LLC from `target + 1`, wrapping; SIS_UTIL bounds the
    /// scan without an idle-core hint (E20).
    fn select_idle_cpu(
        &self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        llc: usize,
        has_idle_core: bool,
        target: CpuId,
    ) -> Option<CpuId> {
        let span = &self.sd[target][llc].span;
        let mut nr = self.rqs[target].nr_idle_scan as i64 + 1;
        if !has_idle_core && nr == 1 {
            return None;
        }
        let start = span.iter().position(|&c| c > target).unwrap_or(0);
        let mut idle_cpu = None;
        for k in 0..span.len() {
            let c = span[(start + k) % span.len()];
            if !ctx.allowed(p, c) {
                continue;
            }
            if has_idle_core {
                if self.core_idle(ctx, c) {
                    return Some(c);
                }
                if idle_cpu.is_none() && self.idle_cpu(ctx, c) {
                    idle_cpu = Some(c);
                }
            } else {
                nr -= 1;
                if nr <= 0 {
                    return None;
                }
                if self.idle_cpu(ctx, c) {
                    return Some(c);
                }
            }
        }
        idle_cpu
    }

    /// Group statistics for fork placement (`update_sg_wakeup_stats`; the new task is
    /// on no queue yet, so nothing is taken out of the sums).
    fn sg_wakeup_stats(
        &self,
        ctx: &mut SchedCtx<'_>,
        pct: u64,
        group: &[CpuId],
        p: TaskId,
    ) -> SgStats {
        let mut s = SgStats::default();
        if ctx.line_reads_free() {
            self.sg_wakeup_sums_free(ctx, group, p, &mut s);
            #[cfg(debug_assertions)]
            {
                // The charged loop without the coherence model moves no clock: the same sums.
                let mut c = SgStats::default();
                self.sg_wakeup_sums_charged(ctx, group, p, &mut c);
                assert_eq!(c, s, "fair: free and charged fork-placement sums differ");
            }
        } else {
            self.sg_wakeup_sums_charged(ctx, group, p, &mut s);
        }
        s.group_capacity = SCHED_CAPACITY_SCALE * group.len() as u64;
        s.group_weight = group.len() as u64;
        s.group_type = group_classify(pct, &s, false);
        if matches!(s.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            s.avg_load = s.group_load * SCHED_CAPACITY_SCALE / s.group_capacity;
        }
        s
    }

    /// The per-CPU sums of `update_sg_wakeup_stats` over `group`, each read charged.
    fn sg_wakeup_sums_charged(
        &self,
        ctx: &mut SchedCtx<'_>,
        group: &[CpuId],
        p: TaskId,
        s: &mut SgStats,
    ) {
        for &i in group {
            if !ctx.allowed(p, i) {
                continue;
            }
            if i != ctx.cpu() {
                ctx.read(Shared::Line(self.rqs[i].line));
            }
            s.group_load += self.cpu_load(i);
            s.group_util += self.cpu_util(i);
            s.group_runnable += self.rqs[i].avg.runnable_avg;
            let nr = self.rqs[i].nr_running as u64;
            s.sum_h_nr_running += nr;
            s.sum_nr_running += nr;
            if nr == 0 && self.idle_cpu(ctx, i) {
                s.idle_cpus += 1;
            }
        }
    }

    /// [`Fair::sg_wakeup_sums_charged`] where reading another CPU's line is free, as
    /// [`Fair::sg_sums_free`] is to its loop: a fork on 1 024 CPUs reads every queue.
    fn sg_wakeup_sums_free(&self, ctx: &SchedCtx<'_>, group: &[CpuId], p: TaskId, s: &mut SgStats) {
        let (me, now) = (ctx.cpu(), ctx.now());
        for &i in group {
            if !ctx.allowed(p, i) {
                continue;
            }
            let rq = &self.rqs[i];
            s.group_load += self.cpu_load(i);
            s.group_util += self.cpu_util(i);
            s.group_runnable += rq.avg.runnable_avg;
            let nr = u64::from(rq.nr_running);
            s.sum_nr_running += nr;
            // `idle_cpu`: `curr` and `nr_running` as this CPU reads them now.
            s.idle_cpus += u64::from(
                nr == 0
                    && if i == me {
                        ctx.curr(i) == ctx.idle_task(i)
                    } else {
                        ctx.curr_seen(i) == ctx.idle_task(i)
                            && self.nr_newest.at(i, &rq.nr_pub, now) == 0
                    },
            );
        }
        s.sum_h_nr_running = s.sum_nr_running;
    }

    /// `sched_balance_find_dst_group` (§7.5): the idlest group, or `None` to stay local.
    fn find_dst_group(
        &self,
        ctx: &mut SchedCtx<'_>,
        this: CpuId,
        sd: usize,
        p: TaskId,
    ) -> Option<usize> {
        let d = &self.sd[this][sd];
        let pct = d.imbalance_pct;
        let mut idlest: Option<(usize, SgStats)> = None;
        let mut local: Option<SgStats> = None;
        for (gi, g) in d.groups.iter().enumerate() {
            if !g.iter().any(|&c| ctx.allowed(p, c)) {
                continue;
            }
            let s = self.sg_wakeup_stats(ctx, pct, g, p);
            if g.contains(&this) {
                local = Some(s);
                continue;
            }
            let better = match &idlest {
                None => true,
                Some((_, i)) => {
                    if s.group_type != i.group_type {
                        s.group_type < i.group_type
                    } else {
                        match s.group_type {
                            GroupType::Overloaded | GroupType::FullyBusy => i.avg_load > s.avg_load,
                            GroupType::SmtBalance => false,
                            GroupType::HasSpare => {
                                !(i.idle_cpus > s.idle_cpus
                                    || (i.idle_cpus == s.idle_cpus && i.group_util <= s.group_util))
                            }
                        }
                    }
                }
            };
            if better {
                idlest = Some((gi, s));
            }
        }
        let (gi, i) = idlest?;
        let Some(l) = local else {
            return Some(gi);
        };
        if l.group_type < i.group_type {
            return None;
        }
        if l.group_type > i.group_type {
            return Some(gi);
        }
        match l.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = 1024 * (pct - 100) / 100;
                if i.avg_load >= l.avg_load + imbalance {
                    return None;
                }
                if 100 * l.avg_load <= pct * i.avg_load {
                    return None;
                }
            }
            GroupType::SmtBalance => return None,
            GroupType::HasSpare => {
                if l.idle_cpus >= i.idle_cpus {
                    return None;
                }
            }
        }
        Some(gi)
    }

    /// `sched_balance_find_dst_group_cpu`.
    fn find_dst_group_cpu(
        &self,
        ctx: &mut SchedCtx<'_>,
        group: &[CpuId],
        p: TaskId,
        this: CpuId,
    ) -> CpuId {
        if group.len() == 1 {
            return group[0];
        }
        let mut min_load = u64::MAX;
        let mut least_loaded = this;
        let mut latest_idle = 0;
        let mut shallowest: Option<CpuId> = None;
        for &i in group {
            if !ctx.allowed(p, i) {
                continue;
            }
            if self.idle_cpu(ctx, i) {
                // No cpuidle states: the most recently idle CPU (idle_stamp) wins.
                if self.rqs[i].idle_stamp > latest_idle {
                    latest_idle = self.rqs[i].idle_stamp;
                    shallowest = Some(i);
                }
            } else if shallowest.is_none() {
                let load = self.cpu_load(i);
                if load < min_load {
                    min_load = load;
                    least_loaded = i;
                }
            }
        }
        shallowest.unwrap_or(least_loaded)
    }

    /// `sched_balance_find_dst_cpu` from `cpu`'s domain `sd` down (§7.5).
    fn find_dst_cpu(
        &self,
        ctx: &mut SchedCtx<'_>,
        mut cpu: CpuId,
        sd: usize,
        p: TaskId,
        prev: CpuId,
        sd_flag: u32,
    ) -> CpuId {
        if !self.sd[cpu][sd].span.iter().any(|&c| ctx.allowed(p, c)) {
            return prev;
        }
        let mut new_cpu = cpu;
        let mut level = Some(sd);
        while let Some(l) = level {
            let d = &self.sd[cpu][l];
            let child = l.checked_sub(1);
            if d.flags & sd_flag == 0 {
                level = child;
                continue;
            }
            let Some(g) = self.find_dst_group(ctx, cpu, l, p) else {
                level = child;
                continue;
            };
            new_cpu = self.find_dst_group_cpu(ctx, self.sd[cpu][l].groups.cpus(g), p, cpu);
            if new_cpu == cpu {
                level = child;
                continue;
            }
            let weight = self.sd[cpu][l].span_weight();
            cpu = new_cpu;
            level = None;
            for (i, t) in self.sd[cpu].iter().enumerate() {
                if weight <= t.span_weight() {
                    break;
                }
                if t.flags & sd_flag != 0 {
                    level = Some(i);
                }
            }
        }
        new_cpu
    }
}
