//! The sched-domain load balancer (modern.md §6; fair.c: sched_balance_trigger,
//! sched_balance_domains, sched_balance_newidle, sched_balance_rq, update_sd_lb_stats,
//! calculate_imbalance, sched_balance_find_src_rq, detach_tasks, can_migrate_task,
//! task_hot), and the group statistics it shares with fork placement ([`super::wake`]).
//! 6.10 renamed the balancer; the 6.1 names are used in prose where they are better known
//! (`load_balance`, `find_busiest_group`).
//!
//! # Workflow
//!
//! (Wake-up and fork placement, steps 1 and 2, are [`super::wake`]'s.)
//!
//! 3. **Periodic balance** (`sched_balance_trigger` from every tick, the idle ones too —
//!    NOHZ is not modelled): per domain bottom-up, at `balance_interval` (× busy_factor
//!    when busy) in jiffies, `load_balance` as `CPU_IDLE` or `CPU_NOT_IDLE`.
//! 4. **Newidle balance** (from `pick_next_task` when the queue is empty): if the root
//!    domain is overloaded and `avg_idle` exceeds the domains' measured balance costs,
//!    `load_balance` as `CPU_NEWLY_IDLE` bottom-up until one task is pulled.
//! 5. **load_balance**: `should_we_balance`; group statistics and types; the busiest
//!    group and the imbalance with its migration type; the busiest queue; detach from the
//!    tail of its MRU `cfs_tasks` under its lock (`can_migrate_task`, `task_hot`), attach
//!    here under this lock; intervals double while balanced.
//!
//! Host cost: the group walks (`update_sg_lb_stats`, `update_sg_wakeup_stats`) read every
//! CPU of a domain, 1 024 of them in `numa-1024`'s NUMA domain at each newly idle
//! balance. Where a read of another CPU's line is free (no coherence model) they read
//! each queue and each CPU's `curr` at the reader's clock without the line charges, and
//! the balancer's walk reads each published `nr_running` once where `idle_cpu` read it
//! again (`sg_sums_free`, `sg_wakeup_sums_free`); debug builds check every group's sums
//! against the charged loops', which read as the kernel does.
//!
//! Not modelled: misfit, asym packing and capacity, SD_NUMA imbalance adjustment and the
//! SERIALIZE lock (no preset has NUMA), active balance, LBF_DST_PINNED retargeting,
//! the NOHZ kick; `sched_exec` placement. SMT's `has_idle_cores` hint is
//! computed exactly when asked instead of being maintained lazily.

use crate::kernel::sched::Shared;
use crate::kernel::task::TaskId;
use crate::machine::{CpuId, CpuMask};
use crate::policy::{SchedCtx, Wake};

use super::pelt::SCHED_CAPACITY_SCALE;
use super::topology::*;
use super::Fair;

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    /// `CPU_NOT_IDLE`.
    NotIdle,
    /// `CPU_IDLE`.
    Idle,
    /// `CPU_NEWLY_IDLE`.
    NewlyIdle,
}

/// `enum group_type`, in pull-priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// `group_has_spare`.
    HasSpare,
    /// `group_fully_busy`.
    FullyBusy,
    /// `group_smt_balance`.
    SmtBalance,
    /// `group_overloaded`.
    Overloaded,
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    /// `migrate_load`.
    Load,
    /// `migrate_util`.
    Util,
    /// `migrate_task`.
    Task,
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgStats {
    /// `avg_load`.
    pub avg_load: u64,
    /// `group_load`.
    pub group_load: u64,
    /// `group_capacity`.
    pub group_capacity: u64,
    /// `group_util`.
    pub group_util: u64,
    /// `group_runnable`.
    pub group_runnable: u64,
    /// `sum_nr_running`.
    pub sum_nr_running: u64,
    /// `sum_h_nr_running`.
    pub sum_h_nr_running: u64,
    /// `idle_cpus`.
    pub idle_cpus: u64,
    /// `group_weight`.
    pub group_weight: u64,
    /// `group_type`.
    pub group_type: GroupType,
    /// Cores in the group (`sg->cores`).
    pub cores: u64,
}

impl Default for SgStats {
    fn default() -> Self {
        SgStats {
            avg_load: 0,
            group_load: 0,
            group_capacity: 0,
            group_util: 0,
            group_runnable: 0,
            sum_nr_running: 0,
            sum_h_nr_running: 0,
            idle_cpus: 0,
            group_weight: 0,
            group_type: GroupType::HasSpare,
            cores: 0,
        }
    }
}

/// `group_is_overloaded`.
fn group_is_overloaded(pct: u64, s: &SgStats) -> bool {
    if s.sum_nr_running <= s.group_weight {
        return false;
    }
    s.group_capacity * 100 < s.group_util * pct || s.group_capacity * pct < s.group_runnable * 100
}

/// `group_has_capacity`.
fn group_has_capacity(pct: u64, s: &SgStats) -> bool {
    if s.sum_nr_running < s.group_weight {
        return true;
    }
    if s.group_capacity * pct < s.group_runnable * 100 {
        return false;
    }
    s.group_capacity * 100 > s.group_util * pct
}

/// `group_classify` (the types this model has).
pub fn group_classify(pct: u64, s: &SgStats, smt_balance: bool) -> GroupType {
    if group_is_overloaded(pct, s) {
        GroupType::Overloaded
    } else if smt_balance {
        GroupType::SmtBalance
    } else if !group_has_capacity(pct, s) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `struct lb_env`, what one `load_balance` decides.
#[derive(Clone, Debug)]
pub struct LbEnv {
    /// The domain's index in the destination CPU's domains.
    pub sd: usize,
    /// `dst_cpu`.
    pub dst: CpuId,
    /// `idle`.
    pub idle: IdleType,
    /// `imbalance`.
    pub imbalance: i64,
    /// `migration_type`.
    pub migration_type: MigrationType,
    /// CPUs still considered (`env->cpus`): a mask, as the kernel's, so the test every
    /// group walk makes per CPU is one word read, not a search of the span.
    pub cpus: CpuMask,
}

impl Fair {
    /// `get_sd_balance_interval` in jiffies.
    pub fn sd_balance_interval(&self, cpu: CpuId, sd: usize, busy: bool) -> u64 {
        let d = &self.sd[cpu][sd];
        let hz = self.t.hz as u64;
        let mut ms = d.balance_interval;
        if busy {
            ms *= d.busy_factor;
        }
        let mut j = (ms * hz).div_ceil(1000);
        if busy {
            j = j.saturating_sub(1);
        }
        let max = (hz * self.topo.nr_cpus() as u64 / 10).max(1);
        j.clamp(1, max)
    }

    /// `update_newidle_stats` (NI_RANDOM): one more newly idle balance of `sd`, `success`
    /// its weighted pull; every 1024 the ratio is taken and the counts halved.
    pub(super) fn update_newidle_stats(&mut self, cpu: CpuId, sd: usize, success: u32) {
        let d = &mut self.sd[cpu][sd];
        d.newidle_call += 1;
        d.newidle_success += success;
        if d.newidle_call >= 1024 {
            d.newidle_ratio = d.newidle_success;
            d.newidle_call /= 2;
            d.newidle_success /= 2;
        }
    }

    /// NI_RANDOM's die for a newly idle balance of `sd`: `None` when it says skip (counted
    /// as a failure), else the weight of a success, 1024 over the odds it ran with.
    fn newidle_die(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, sd: usize) -> Option<u32> {
        let d1k = ctx.rng().below(1024) as u32;
        let weight = 1 + self.sd[cpu][sd].newidle_ratio;
        if d1k > weight {
            self.update_newidle_stats(cpu, sd, 0);
            return None;
        }
        Some((1024 + weight / 2) / weight)
    }

    /// `update_newidle_cost`; true when the cost decayed.
    fn update_newidle_cost(&mut self, cpu: CpuId, sd: usize, cost: u64, jiffies: u64) -> bool {
        let hz = self.t.hz as u64;
        let d = &mut self.sd[cpu][sd];
        if cost > d.max_newidle_lb_cost {
            d.max_newidle_lb_cost = cost;
            d.last_decay_max_lb_cost = jiffies;
        } else if jiffies > d.last_decay_max_lb_cost + hz {
            d.max_newidle_lb_cost = d.max_newidle_lb_cost * 253 / 256;
            d.last_decay_max_lb_cost = jiffies;
            return true;
        }
        false
    }

    /// `sched_balance_trigger` and the softirq it raises (`sched_balance_domains`),
    /// from the tick; no lock held.
    pub(super) fn sched_balance_trigger(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, idle: bool) {
        let j = ctx.jiffies();
        if j < self.rqs[cpu].next_balance || self.sd[cpu].is_empty() {
            return;
        }
        // sched_balance_update_blocked_averages: decay this queue's PELT.
        let l = self.rqs[cpu].lock;
        ctx.lock(l);
        let now = ctx.now();
        let decayed = self.update_cfs_rq_load_avg(now, cpu);
        if self.t.autogroup {
            self.update_group_se(now, cpu, decayed);
        }
        ctx.unlock(l);
        let hz = self.t.hz as u64;
        let mut idle_type = if idle && self.rqs[cpu].nr_running == 0 {
            IdleType::Idle
        } else {
            IdleType::NotIdle
        };
        let mut busy = idle_type != IdleType::Idle;
        let mut next_balance = j + 60 * hz;
        let mut update_next = false;
        let mut continue_balancing = true;
        let mut need_decay = false;
        let mut max_cost = 0;
        for i in 0..self.sd[cpu].len() {
            let decayed = self.update_newidle_cost(cpu, i, 0, j);
            need_decay |= decayed;
            max_cost += self.sd[cpu][i].max_newidle_lb_cost;
            if !continue_balancing {
                if need_decay {
                    continue;
                }
                break;
            }
            let mut interval = self.sd_balance_interval(cpu, i, busy);
            if j >= self.sd[cpu][i].last_balance + interval {
                if self.load_balance(ctx, cpu, i, idle_type, &mut continue_balancing) > 0 {
                    let now_idle = self.rqs[cpu].nr_running == 0 && ctx.cpu_is_idle(cpu);
                    idle_type = if now_idle {
                        IdleType::Idle
                    } else {
                        IdleType::NotIdle
                    };
                    busy = !now_idle;
                }
                self.sd[cpu][i].last_balance = j;
                interval = self.sd_balance_interval(cpu, i, busy);
            }
            let nb = self.sd[cpu][i].last_balance + interval;
            if next_balance > nb {
                next_balance = nb;
                update_next = true;
            }
        }
        if need_decay {
            self.rqs[cpu].max_idle_balance_cost = self.t.migration_cost.max(max_cost);
        }
        if update_next {
            self.rqs[cpu].next_balance = next_balance;
        }
    }

    /// `sched_balance_newidle` (§6.9) from `pick_next_task`, with `cpu`'s lock held
    /// (dropped while balancing, as the kernel does). Returns the tasks pulled.
    pub(super) fn sched_balance_newidle(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) -> u32 {
        let j = ctx.jiffies();
        self.rqs[cpu].idle_stamp = ctx.now().max(1);
        let hz = self.t.hz as u64;
        let mut next_balance = j + hz;
        if self.sd[cpu].is_empty() {
            return 0;
        }
        ctx.read(Shared::Line(self.rd_line));
        let mut pulled = 0;
        if !self.rd_overloaded || self.rqs[cpu].avg_idle < self.sd[cpu][0].max_newidle_lb_cost {
            let nb = self.sd[cpu][0].last_balance + self.sd_balance_interval(cpu, 0, false);
            next_balance = next_balance.min(nb);
        } else {
            let l = self.rqs[cpu].lock;
            ctx.unlock(l);
            let mut t0 = ctx.now();
            let mut curr_cost = 0;
            let mut continue_balancing = true;
            for i in 0..self.sd[cpu].len() {
                let nb = self.sd[cpu][i].last_balance + self.sd_balance_interval(cpu, i, false);
                next_balance = next_balance.min(nb);
                if self.rqs[cpu].avg_idle < curr_cost + self.sd[cpu][i].max_newidle_lb_cost {
                    break;
                }
                if self.sd[cpu][i].flags & SD_BALANCE_NEWIDLE != 0 {
                    // NI_RANDOM: balance only with the odds of recent success.
                    let weight = if self.t.ni_random {
                        match self.newidle_die(ctx, cpu, i) {
                            Some(w) => w,
                            None => continue,
                        }
                    } else {
                        1
                    };
                    pulled = self.load_balance(
                        ctx,
                        cpu,
                        i,
                        IdleType::NewlyIdle,
                        &mut continue_balancing,
                    );
                    let t1 = ctx.now();
                    let cost = t1 - t0;
                    // update_newidle_cost counts a balance that ran (cost > 0 there).
                    if self.t.ni_random {
                        self.update_newidle_stats(cpu, i, weight * u32::from(pulled > 0));
                    }
                    self.update_newidle_cost(cpu, i, cost, ctx.jiffies());
                    curr_cost += cost;
                    t0 = t1;
                }
                if pulled > 0 || !continue_balancing {
                    break;
                }
            }
            ctx.lock(l);
            let rq = &mut self.rqs[cpu];
            rq.max_idle_balance_cost = rq.max_idle_balance_cost.max(curr_cost);
            if rq.nr_running > 0 && pulled == 0 {
                pulled = 1;
            }
        }
        let rq = &mut self.rqs[cpu];
        if rq.next_balance > next_balance {
            rq.next_balance = next_balance;
        }
        if pulled > 0 {
            rq.idle_stamp = 0;
        }
        pulled
    }

    /// `should_we_balance`.
    fn should_we_balance(&self, ctx: &mut SchedCtx<'_>, env: &LbEnv) -> bool {
        if !env.cpus.test(env.dst) {
            return false;
        }
        if env.idle == IdleType::NewlyIdle {
            return self.rqs[env.dst].nr_running == 0;
        }
        let local = self.sd[env.dst][env.sd].groups.cpus(0);
        for &c in local {
            if !env.cpus.test(c) {
                continue;
            }
            if self.idle_cpu(ctx, c) {
                return c == env.dst;
            }
        }
        local[0] == env.dst
    }

    /// `update_sg_lb_stats` for group `g` of the domain.
    fn sg_lb_stats(
        &self,
        ctx: &mut SchedCtx<'_>,
        env: &LbEnv,
        g: usize,
        overloaded: &mut bool,
    ) -> SgStats {
        let d = &self.sd[env.dst][env.sd];
        let group = d.groups.cpus(g);
        let gflags = d.group_flags[g];
        let pct = d.imbalance_pct;
        let local = g == 0;
        let mut s = SgStats::default();
        if ctx.line_reads_free() {
            let over = self.sg_sums_free(ctx, env, group, &mut s);
            #[cfg(debug_assertions)]
            {
                // The charged loop without the coherence model moves no clock: the same sums.
                let (mut c, mut o) = (SgStats::default(), false);
                self.sg_sums_charged(ctx, env, group, &mut c, &mut o);
                assert_eq!(
                    (c, o),
                    (s, over),
                    "fair: free and charged group sums differ"
                );
            }
            *overloaded |= over;
        } else {
            self.sg_sums_charged(ctx, env, group, &mut s, overloaded);
        }
        s.group_capacity = SCHED_CAPACITY_SCALE * group.len() as u64;
        s.group_weight = group.len() as u64;
        s.cores = d.groups.cores(g) as u64;
        let smt_balance = !local
            && env.idle != IdleType::NotIdle
            && gflags & SD_SHARE_CPUCAPACITY != 0
            && s.sum_h_nr_running > 1;
        s.group_type = group_classify(pct, &s, smt_balance);
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.group_load * SCHED_CAPACITY_SCALE / s.group_capacity;
        }
        s
    }

    /// The per-CPU sums of `update_sg_lb_stats` over `group`, each read charged as the
    /// kernel's loop makes it (`idle_cpu` re-reads the queue it was called for).
    fn sg_sums_charged(
        &self,
        ctx: &mut SchedCtx<'_>,
        env: &LbEnv,
        group: &[CpuId],
        s: &mut SgStats,
        overloaded: &mut bool,
    ) {
        for &i in group {
            if !env.cpus.test(i) {
                continue;
            }
            if i != ctx.cpu() {
                ctx.read(Shared::Line(self.rqs[i].line));
            }
            s.group_load += self.cpu_load(i);
            s.group_util += self.cpu_util(i);
            s.group_runnable += self.rqs[i].avg.runnable_avg;
            let nr = self.nr_running_seen(ctx, i) as u64;
            s.sum_h_nr_running += nr;
            s.sum_nr_running += nr;
            if nr > 1 {
                *overloaded = true;
            }
            if nr == 0 && self.idle_cpu(ctx, i) {
                s.idle_cpus += 1;
            }
        }
    }

    /// [`Fair::sg_sums_charged`] where reading another CPU's line is free (no coherence
    /// model): the clock stands still through the loop, so each queue's `nr_running` and
    /// each CPU's `curr` are read once, at one moment, with no line charge. At 1 024 CPUs
    /// a newly idle CPU's balance reads every queue: this loop is most of such a run.
    /// Returns whether some queue runs more than one task (the root's overload flag).
    fn sg_sums_free(
        &self,
        ctx: &SchedCtx<'_>,
        env: &LbEnv,
        group: &[CpuId],
        s: &mut SgStats,
    ) -> bool {
        let (me, now) = (ctx.cpu(), ctx.now());
        let (mut over, mut idle) = (false, 0);
        for &i in group {
            if !env.cpus.test(i) {
                continue;
            }
            let rq = &self.rqs[i];
            s.group_load += self.cpu_load(i);
            s.group_util += self.cpu_util(i);
            s.group_runnable += rq.avg.runnable_avg;
            let (nr, curr) = if i == me {
                (rq.nr_running, ctx.curr(i))
            } else {
                (self.nr_newest.at(i, &rq.nr_pub, now), ctx.curr_seen(i))
            };
            s.sum_nr_running += u64::from(nr);
            over |= nr > 1;
            idle += u64::from(nr == 0 && curr == ctx.idle_task(i));
        }
        s.sum_h_nr_running = s.sum_nr_running;
        s.idle_cpus = idle;
        over
    }

    /// `update_sd_pick_busiest` (the types this model has).
    fn pick_busiest(
        &self,
        env: &LbEnv,
        s: &SgStats,
        g: usize,
        busiest: &SgStats,
        bg: Option<usize>,
    ) -> bool {
        if s.sum_h_nr_running == 0 {
            return false;
        }
        if s.group_type > busiest.group_type {
            return true;
        }
        if s.group_type < busiest.group_type {
            return false;
        }
        let d = &self.sd[env.dst][env.sd];
        let smt = |gi: usize| d.group_flags[gi] & SD_SHARE_CPUCAPACITY != 0;
        let has_spare = |s: &SgStats, b: &SgStats| {
            !(s.idle_cpus > b.idle_cpus
                || (s.idle_cpus == b.idle_cpus && s.sum_nr_running <= b.sum_nr_running))
        };
        match s.group_type {
            GroupType::Overloaded => s.avg_load > busiest.avg_load,
            GroupType::SmtBalance if s.idle_cpus != 0 || busiest.idle_cpus != 0 => {
                has_spare(s, busiest)
            }
            GroupType::SmtBalance | GroupType::FullyBusy => {
                if s.avg_load < busiest.avg_load {
                    return false;
                }
                !(s.avg_load == busiest.avg_load && bg.is_some_and(smt))
            }
            GroupType::HasSpare => {
                if let Some(b) = bg {
                    if smt(b) != smt(g) {
                        // smt_vs_nonsmt_groups.
                        return !(smt(g) && s.sum_h_nr_running <= 1);
                    }
                }
                has_spare(s, busiest)
            }
        }
    }

    /// `find_busiest_group` (`sched_balance_find_src_group`, §6.4–6.5): the busiest
    /// group's index in the domain, with `env.imbalance` and `env.migration_type` set.
    fn find_busiest_group(&mut self, ctx: &mut SchedCtx<'_>, env: &mut LbEnv) -> Option<usize> {
        let ngroups = self.sd[env.dst][env.sd].groups.len();
        let mut local = SgStats::default();
        let mut busiest = SgStats {
            idle_cpus: u64::MAX,
            ..SgStats::default()
        };
        let mut bg: Option<usize> = None;
        let mut total_load = 0;
        let mut total_capacity = 0;
        let mut sum_util = 0;
        let mut overloaded = false;
        // Every group's CPUs still in `env.cpus` (a subset of the span) are read.
        self.stats.lb_cpus_scanned += env.cpus.weight() as u64;
        for g in 0..ngroups {
            let s = self.sg_lb_stats(ctx, env, g, &mut overloaded);
            total_load += s.group_load;
            total_capacity += s.group_capacity;
            sum_util += s.group_util;
            if g == 0 {
                local = s;
            } else if self.pick_busiest(env, &s, g, &busiest, bg) {
                busiest = s;
                bg = Some(g);
            }
        }
        let d = &self.sd[env.dst][env.sd];
        let prefer_sibling =
            env.sd > 0 && self.sd[env.dst][env.sd - 1].flags & SD_PREFER_SIBLING != 0;
        let pct = d.imbalance_pct;
        if env.sd + 1 == self.sd[env.dst].len() && self.rd_overloaded != overloaded {
            // Root domain: recompute the overload indicator.
            self.rd_overloaded = overloaded;
            ctx.write(Shared::Line(self.rd_line));
        }
        self.update_idle_cpu_scan(env, sum_util);
        let bgi = bg?;
        let mut force = false;
        if local.group_type > busiest.group_type {
            return None;
        }
        let mut sds_avg = 0;
        if local.group_type == GroupType::Overloaded {
            if local.avg_load >= busiest.avg_load {
                return None;
            }
            sds_avg = total_load * SCHED_CAPACITY_SCALE / total_capacity;
            if local.avg_load >= sds_avg {
                return None;
            }
            if 100 * busiest.avg_load <= pct * local.avg_load {
                return None;
            }
        }
        if prefer_sibling
            && local.group_type == GroupType::HasSpare
            && self.sibling_imbalance(env, &busiest, &local) > 1
        {
            force = true;
        }
        if !force && busiest.group_type != GroupType::Overloaded {
            if env.idle == IdleType::NotIdle {
                return None;
            }
            if busiest.group_type == GroupType::SmtBalance && local.cores != local.group_weight {
                force = true;
            }
            if !force {
                if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                    return None;
                }
                if busiest.sum_h_nr_running == 1 {
                    return None;
                }
            }
        }
        self.calculate_imbalance(
            env,
            &mut local,
            &busiest,
            prefer_sibling,
            total_load,
            total_capacity,
            sds_avg,
        );
        (env.imbalance > 0).then_some(bgi)
    }

    /// `sibling_imbalance`.
    fn sibling_imbalance(&self, env: &LbEnv, busiest: &SgStats, local: &SgStats) -> i64 {
        if env.idle == IdleType::NotIdle || busiest.sum_nr_running == 0 {
            return 0;
        }
        let (nb, nl) = (busiest.cores as i64, local.cores as i64);
        let (b, l) = (busiest.sum_nr_running as i64, local.sum_nr_running as i64);
        if nb == nl {
            return (b - l).max(0);
        }
        let mut imb = (nl * b - nb * l).max(0);
        imb = (2 * imb + nl + nb) / (nl + nb);
        if imb <= 1 && l == 0 && b > 1 {
            imb = 2;
        }
        imb
    }

    /// `calculate_imbalance` (§6.5).
    #[allow(clippy::too_many_arguments)]
    fn calculate_imbalance(
        &self,
        env: &mut LbEnv,
        local: &mut SgStats,
        busiest: &SgStats,
        prefer_sibling: bool,
        total_load: u64,
        total_capacity: u64,
        mut sds_avg: u64,
    ) {
        let d = &self.sd[env.dst][env.sd];
        if busiest.group_type == GroupType::SmtBalance {
            env.migration_type = MigrationType::Task;
            env.imbalance = 1;
            return;
        }
        if local.group_type == GroupType::HasSpare {
            if busiest.group_type > GroupType::FullyBusy && d.flags & SD_SHARE_LLC == 0 {
                env.migration_type = MigrationType::Util;
                env.imbalance =
                    (local.group_capacity.max(local.group_util) - local.group_util) as i64;
                if env.idle != IdleType::NotIdle && env.imbalance == 0 {
                    env.migration_type = MigrationType::Task;
                    env.imbalance = 1;
                }
                return;
            }
            env.migration_type = MigrationType::Task;
            env.imbalance = if busiest.group_weight == 1 || prefer_sibling {
                self.sibling_imbalance(env, busiest, local)
            } else {
                (local.idle_cpus as i64 - busiest.idle_cpus as i64).max(0)
            };
            env.imbalance >>= 1;
            return;
        }
        if local.group_type < GroupType::Overloaded {
            local.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity;
            if local.avg_load >= busiest.avg_load {
                env.imbalance = 0;
                return;
            }
            sds_avg = total_load * SCHED_CAPACITY_SCALE / total_capacity;
            if local.avg_load >= sds_avg {
                env.imbalance = 0;
                return;
            }
        }
        env.migration_type = MigrationType::Load;
        let a = (busiest.avg_load as i64 - sds_avg as i64) * busiest.group_capacity as i64;
        let b = (sds_avg as i64 - local.avg_load as i64) * local.group_capacity as i64;
        env.imbalance = a.min(b) / SCHED_CAPACITY_SCALE as i64;
    }

    /// (E20) `update_idle_cpu_scan` at the LLC domain.
    fn update_idle_cpu_scan(&mut self, env: &LbEnv, sum_util: u64) {
        if env.idle == IdleType::NewlyIdle {
            return;
        }
        let Some(llc) = self.sd_llc[env.dst] else {
            return;
        };
        if llc != env.sd {
            return;
        }
        let d = &self.sd[env.dst][llc];
        let w = d.span.len() as u64;
        let x = sum_util / w;
        let pct = d.imbalance_pct;
        let t = (x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE)).min(SCHED_CAPACITY_SCALE);
        let y = (SCHED_CAPACITY_SCALE - t) * w / SCHED_CAPACITY_SCALE;
        for &c in &d.span {
            self.rqs[c].nr_idle_scan = y as u32;
        }
    }

    /// `find_busiest_queue` (`sched_balance_find_src_rq`, §6.6).
    fn find_busiest_queue(&self, env: &LbEnv, group: &[CpuId]) -> Option<CpuId> {
        let mut busiest = None;
        let (mut busiest_load, mut busiest_cap) = (0u64, 1u64);
        let mut busiest_util = 0;
        let mut busiest_nr = 0;
        for &i in group {
            if !env.cpus.test(i) {
                continue;
            }
            let nr = self.rqs[i].nr_running;
            if nr == 0 {
                continue;
            }
            let cap = SCHED_CAPACITY_SCALE;
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.cpu_load(i);
                    if nr == 1 && load as i64 > env.imbalance {
                        continue;
                    }
                    if load * busiest_cap > busiest_load * cap {
                        busiest_load = load;
                        busiest_cap = cap;
                        busiest = Some(i);
                    }
                }
                MigrationType::Util => {
                    let util = self.cpu_util_boost(i);
                    if nr <= 1 {
                        continue;
                    }
                    if busiest_util < util {
                        busiest_util = util;
                        busiest = Some(i);
                    }
                }
                MigrationType::Task => {
                    if busiest_nr < nr {
                        busiest_nr = nr;
                        busiest = Some(i);
                    }
                }
            }
        }
        busiest
    }

    /// (E17) `task_hot`.
    fn task_hot(&self, ctx: &SchedCtx<'_>, env: &LbEnv, p: TaskId, src: CpuId) -> bool {
        if self.sd[env.dst][env.sd].flags & SD_SHARE_CPUCAPACITY != 0 {
            return false;
        }
        let rq = &self.rqs[src];
        if self.rqs[env.dst].nr_running > 0 && (rq.next == Some(p) || rq.last == Some(p)) {
            return true;
        }
        let se = &self.se[p as usize];
        (ctx.now() as i64 - se.exec_start as i64) < self.t.migration_cost as i64
    }

    /// `can_migrate_task`; `all_pinned` is cleared when `p` may run on `dst`.
    fn can_migrate_task(
        &self,
        ctx: &SchedCtx<'_>,
        env: &LbEnv,
        p: TaskId,
        src: CpuId,
        all_pinned: &mut bool,
    ) -> bool {
        if !ctx.allowed(p, env.dst) {
            return false;
        }
        *all_pinned = false;
        if self.rqs[src].curr == Some(p) || ctx.task(p).on_cpu.is_some() {
            return false;
        }
        if self.se[p as usize].sched_delayed {
            // model choice: delayed entities stay (modern.md §11 item 3).
            return false;
        }
        let hot = self.task_hot(ctx, env, p, src);
        !hot || self.sd[env.dst][env.sd].nr_balance_failed
            > self.sd[env.dst][env.sd].cache_nice_tries
    }

    /// `detach_tasks` from `src` (its lock held): the tasks to move.
    fn detach_tasks(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        env: &mut LbEnv,
        src: CpuId,
        all_pinned: &mut bool,
    ) -> Vec<TaskId> {
        let mut out = Vec::new();
        if env.imbalance <= 0 {
            return out;
        }
        let nr = self.rqs[src].nr_running as usize;
        let loop_max = nr.min(self.t.nr_migrate as usize);
        let failed = self.sd[env.dst][env.sd].nr_balance_failed;
        let mut examined = 0;
        while !self.rqs[src].cfs_tasks.is_empty() {
            if env.idle != IdleType::NotIdle && self.rqs[src].nr_running <= 1 {
                break;
            }
            examined += 1;
            if examined > loop_max && !(*all_pinned && examined <= nr) {
                break;
            }
            let p = *self.rqs[src].cfs_tasks.back().expect("not empty");
            ctx.read(Shared::Task(p));
            let ok = self.can_migrate_task(ctx, env, p, src, all_pinned) && {
                let shr = |v: u64| v >> failed.min(63);
                match env.migration_type {
                    MigrationType::Load => {
                        let load = self.task_h_load(p).max(1);
                        if shr(load) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= load as i64;
                            true
                        }
                    }
                    MigrationType::Util => {
                        let util = self.task_util_est(p);
                        if shr(util) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= util as i64;
                            true
                        }
                    }
                    MigrationType::Task => {
                        env.imbalance -= 1;
                        true
                    }
                }
            };
            if !ok {
                // list_move to the head.
                let q = &mut self.rqs[src].cfs_tasks;
                let t = q.pop_back().expect("not empty");
                q.push_front(t);
                continue;
            }
            self.move_queued_task(ctx, src, p, env.dst);
            out.push(p);
            // CONFIG_PREEMPTION: a newidle balance moves one task.
            if env.idle == IdleType::NewlyIdle || env.imbalance <= 0 {
                break;
            }
        }
        out
    }

    /// `load_balance` (`sched_balance_rq`, §6.3) of `this`'s domain `sd`; no lock held.
    /// Returns the tasks moved.
    pub fn load_balance(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        this: CpuId,
        sd: usize,
        idle: IdleType,
        continue_balancing: &mut bool,
    ) -> u32 {
        self.stats.lb_calls += 1;
        if idle == IdleType::NewlyIdle {
            self.stats.lb_newidle_calls += 1;
        }
        let mut env = LbEnv {
            sd,
            dst: this,
            idle,
            imbalance: 0,
            migration_type: MigrationType::Load,
            cpus: self.sd[this][sd].span_mask,
        };
        let mut moved = 0u32;
        loop {
            if !self.should_we_balance(ctx, &env) {
                *continue_balancing = false;
                break;
            }
            let Some(g) = self.find_busiest_group(ctx, &mut env) else {
                break;
            };
            let group = self.sd[this][sd].groups.cpus(g);
            let Some(busiest) = self.find_busiest_queue(&env, group) else {
                break;
            };
            let mut all_pinned = true;
            if self.rqs[busiest].nr_running > 1 {
                let bl = self.rqs[busiest].lock;
                ctx.lock(bl);
                let tasks = self.detach_tasks(ctx, &mut env, busiest, &mut all_pinned);
                ctx.unlock(bl);
                if !tasks.is_empty() {
                    let tl = self.rqs[this].lock;
                    ctx.lock(tl);
                    for &p in &tasks {
                        self.util_est_enqueue(this, p);
                        self.enqueue_entity(
                            ctx,
                            this,
                            p,
                            super::EnqFlags {
                                migrated: true,
                                ..Default::default()
                            },
                        );
                        if idle != IdleType::NewlyIdle {
                            // attach_task: wakeup_preempt (newidle: this CPU is about to pick).
                            self.wakeup_preempt_attached(ctx, this, p);
                        }
                    }
                    ctx.unlock(tl);
                    moved += tasks.len() as u32;
                    self.stats.lb_pulled += tasks.len() as u64;
                }
                if all_pinned {
                    env.cpus.clear(busiest);
                    let local =
                        CpuMask::from_cpus(self.sd[this][sd].groups.cpus(0).iter().copied());
                    if !env.cpus.is_subset_of(&local) {
                        continue;
                    }
                    // out_all_pinned.
                    let d = &mut self.sd[this][sd];
                    if idle != IdleType::NewlyIdle && d.balance_interval < 512 {
                        d.balance_interval *= 2;
                    }
                    return 0;
                }
            }
            let d = &mut self.sd[this][sd];
            if moved == 0 {
                self.stats.lb_failed += 1;
                if idle != IdleType::NewlyIdle {
                    d.nr_balance_failed += 1;
                }
            } else {
                d.nr_balance_failed = 0;
            }
            d.balance_interval = d.min_interval;
            return moved;
        }
        // out_balanced.
        let d = &mut self.sd[this][sd];
        d.nr_balance_failed = 0;
        if idle != IdleType::NewlyIdle && d.balance_interval < d.max_interval {
            d.balance_interval *= 2;
        }
        0
    }

    fn wakeup_preempt_attached(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        use crate::policy::SchedClass;
        self.wakeup_preempt(ctx, cpu, p, Wake::default());
    }
}
