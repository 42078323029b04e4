//! Which CPUs run their idle task, kept up to date as they switch, for the lock-free
//! walks over every CPU that the 2.4-derived policies make: 2.4's `reschedule_idle` (the
//! CPU idle longest, by `last_schedule`), its `sys_sched_yield` (the CPUs running a real
//! task), haMQ's placement on an idle CPU, MQ's `reschedule_idle` (its first target).
//!
//! model: the modelled kernels read every CPU's `curr` and stay O(CPUs) in simulated
//! time; each policy still charges what its walk does (the tasks it examines before it
//! meets an idle CPU). The host need not repeat the walk where its reads are free: with
//! the coherence model off a read of another CPU's `curr` costs nothing, so the rest of a
//! walk is only its answer, which this index gives. With the coherence model on every
//! read is a priced line access the walk must make anyway, and up to [`INDEX_ABOVE`] CPUs
//! the walk is cheaper than the index's upkeep: there is no index, and callers walk. Nor
//! is there one for a class that does not ask it (`SchedClass::uses_idle_index`): its
//! upkeep at every switch would be lost.
//!
//! Design:
//!
//! * `since`: each CPU's `last_schedule`, kept here with or without the index, in one
//!   dense array (the walks over every CPU read it for each, and a field of the large
//!   per-CPU record was a cache line apart from the next CPU's); `curr`, each CPU's
//!   newest published `curr` with its time, likewise.
//! * `idle`: `(last_schedule, cpu)` of every CPU whose newest published `curr` is its idle
//!   task, in order: the first a caller accepts is the walk's answer, the smallest
//!   `last_schedule` and the lower CPU on ties (the kernel's strict `<` walk from CPU 0).
//! * `key[c]`: CPU `c`'s entry in `idle`, if any.
//! * `ahead`: when each CPU's `curr` was last written ([`WrittenAfter`]). A read at `now`
//!   sees the newest value exactly when that write is not after `now`; the CPUs whose
//!   newest write is (written by hooks processed earlier whose clocks ran ahead: few) are
//!   read one by one through [`Published::at`](crate::kernel::sched::published::Published::at).
//! * `busy`: CPUs whose newest `curr` is a real task.
//!
//! Invariants: `since` has one entry per CPU; `curr[c]` is `cpus[c]`'s newest published
//! `curr` and its time. With the index: `key[c]` is
//! `Some(since[c])` exactly when `cpus[c].curr_seen.latest()` is `cpus[c].idle`, and
//! `idle` holds exactly those keys; `ahead` holds each `cpus[c].curr_seen.newest_time()`;
//! `busy` is the CPUs without a key. [`IdleCpus::check`] compares them with the CPUs; the
//! tests compare the answers with the plain walks on random histories.

use std::collections::BTreeSet;

use crate::engine::Time;
use crate::kernel::sched::published::{Newest, WrittenAfter};
use crate::kernel::task::TaskId;
use crate::kernel::Cpu;
use crate::machine::CpuId;

/// CPUs up to which there is no index: the walks read every CPU in the host.
pub const INDEX_ABOVE: usize = 64;

/// The idle CPUs of the machine; see the module doc.
#[derive(Clone, Debug, Default)]
pub struct IdleCpus {
    /// Each CPU's `last_schedule`, kept with or without the index, in one dense array:
    /// the walks over every CPU (2.4's and MQ's `reschedule_idle`) read it for each.
    since: Vec<Time>,
    /// Each CPU's newest published `curr` and when it was written, densely, with or
    /// without the index: a read at a clock not before that write sees it without
    /// going through the CPU's record.
    curr: Newest<TaskId>,
    on: bool,
    idle: BTreeSet<(Time, CpuId)>,
    key: Vec<Option<Time>>,
    ahead: WrittenAfter,
    busy: usize,
}

impl IdleCpus {
    /// The index over `cpus` (booted: each runs its idle task), kept only when `on`.
    pub fn new(cpus: &[Cpu], on: bool) -> Self {
        let mut x = IdleCpus {
            on,
            since: vec![0; cpus.len()],
            curr: Newest::of(cpus.iter().map(|c| &c.curr_seen)),
            key: vec![None; cpus.len()],
            ahead: WrittenAfter::new(cpus.len()),
            busy: cpus.len(),
            ..IdleCpus::default()
        };
        if on {
            for (c, cpu) in cpus.iter().enumerate() {
                x.note(c, cpu);
            }
        }
        x
    }

    /// Whether walks over every CPU are worth indexing: more than [`INDEX_ABOVE`] CPUs,
    /// and reads of other CPUs' lines free (no coherence model).
    pub fn wanted(cpus: usize, coherence: bool) -> bool {
        #[cfg(test)]
        if tests::WALK.get() {
            return false;
        }
        cpus > INDEX_ABOVE && !coherence
    }

    /// CPU `c`'s `last_schedule`: the time of its last context switch.
    #[inline(always)]
    pub fn last_schedule(&self, c: CpuId) -> Time {
        self.since[c]
    }

    /// Every CPU's `last_schedule`.
    #[inline]
    pub fn last_schedules(&self) -> &[Time] {
        &self.since
    }

    /// CPU `c` switched at `t`; [`IdleCpus::note`] follows.
    #[inline]
    pub fn set_last_schedule(&mut self, c: CpuId, t: Time) {
        self.since[c] = t;
    }

    /// True when the index is kept (otherwise callers walk).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// CPU `c` changed its published `curr` or its `last_schedule`: refresh its entries.
    #[inline]
    pub fn note(&mut self, c: CpuId, cpu: &Cpu) {
        self.curr.note(c, &cpu.curr_seen);
        if !self.on {
            return;
        }
        self.ahead.note(c, cpu.curr_seen.newest_time());
        let key = (cpu.curr_seen.latest() == cpu.idle).then_some(self.since[c]);
        if key != self.key[c] {
            match self.key[c] {
                Some(old) => {
                    self.idle.remove(&(old, c));
                }
                None => self.busy -= 1,
            }
            match key {
                Some(new) => {
                    self.idle.insert((new, c));
                }
                None => self.busy += 1,
            }
            self.key[c] = key;
        }
    }

    /// Of the CPUs a read of `curr` at `now` finds idle, the one `ok` accepts with the
    /// smallest `(last_schedule, cpu)`: 2.4 `reschedule_idle`'s walk.
    pub fn oldest_seen(
        &self,
        cpus: &[Cpu],
        now: Time,
        mut ok: impl FnMut(CpuId) -> bool,
    ) -> Option<CpuId> {
        debug_assert!(self.on);
        let mut best = self
            .idle
            .iter()
            .find(|&&(_, c)| !self.ahead.is_after(c, now) && ok(c))
            .copied();
        for c in self.ahead.after(now) {
            let cpu = &cpus[c];
            let k = (self.since[c], c);
            if cpu.curr_seen.at(now) == cpu.idle && best.is_none_or(|b| k < b) && ok(c) {
                best = Some(k);
            }
        }
        best.map(|(_, c)| c)
    }

    /// Of the CPUs whose newest published `curr` is idle, the one `ok` accepts with the
    /// smallest `(last_schedule, cpu)`: a walk that reads the newest values (haMQ).
    pub fn oldest_latest(&self, mut ok: impl FnMut(CpuId) -> bool) -> Option<CpuId> {
        debug_assert!(self.on);
        self.idle.iter().map(|&(_, c)| c).find(|&c| ok(c))
    }

    /// The CPUs whose newest published `curr` is idle, by `(last_schedule, cpu)`: for a
    /// class whose own notion of idle follows `curr` (MQ's `curr_na_goodness`, written in
    /// the same `schedule()` just before it).
    pub fn idle_latest(&self) -> impl Iterator<Item = (Time, CpuId)> + '_ {
        debug_assert!(self.on);
        self.idle.iter().copied()
    }

    /// The CPUs whose newest `curr` was written after `now` (by hooks whose clocks ran
    /// ahead): a read at `now` may see an older value than the newest.
    pub fn curr_written_after(&self, now: Time) -> impl Iterator<Item = CpuId> + '_ {
        debug_assert!(self.on);
        self.ahead.after(now)
    }

    /// The CPUs a read of `curr` at `now` finds running a real task: 2.4
    /// `sys_sched_yield`'s count.
    pub fn busy_seen(&self, cpus: &[Cpu], now: Time) -> usize {
        debug_assert!(self.on);
        let mut busy = self.busy;
        for c in self.ahead.after(now) {
            let cpu = &cpus[c];
            busy -= usize::from(self.key[c].is_none());
            busy += usize::from(cpu.curr_seen.at(now) != cpu.idle);
        }
        busy
    }

    /// `cpu`'s `curr` as a read at `now` sees it ([`Published::at`] of `cpus[cpu]`).
    #[inline(always)]
    pub fn curr_seen(&self, cpus: &[Cpu], cpu: CpuId, now: Time) -> TaskId {
        self.curr.at(cpu, &cpus[cpu].curr_seen, now)
    }

    /// Check the invariants against the CPUs.
    pub fn check(&self, cpus: &[Cpu]) -> Result<(), String> {
        if self.since.len() != cpus.len() {
            return Err(format!(
                "idle index: last_schedule kept for {} of {} CPUs",
                self.since.len(),
                cpus.len()
            ));
        }
        let kept = self.curr.len() == cpus.len()
            && cpus
                .iter()
                .enumerate()
                .all(|(c, cpu)| self.curr.matches(c, &cpu.curr_seen));
        if !kept {
            return Err("idle index: the dense copy of curr differs from the CPUs'".into());
        }
        if !self.on {
            return Ok(());
        }
        let mut idle = BTreeSet::new();
        for (c, cpu) in cpus.iter().enumerate() {
            let key = (cpu.curr_seen.latest() == cpu.idle).then_some(self.since[c]);
            if self.key[c] != key {
                return Err(format!(
                    "idle index: cpu {c} keyed {:?}, its state says {key:?}",
                    self.key[c]
                ));
            }
            if let Some(k) = key {
                idle.insert((k, c));
            }
        }
        self.ahead
            .check(cpus.iter().map(|c| c.curr_seen.newest_time()))
            .map_err(|e| format!("idle index: {e}"))?;
        if idle != self.idle {
            return Err("idle index: the ordered sets differ from the CPUs".into());
        }
        if self.busy != cpus.len() - idle.len() {
            return Err(format!(
                "idle index: {} busy counted, {} found",
                self.busy,
                cpus.len() - idle.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sched::testbed::Bed;
    use crate::kernel::TaskId;
    use proptest::prelude::*;
    use std::cell::Cell;

    thread_local! {
        /// Boot without the index, whatever the machine: the walks' answers, to compare.
        pub(super) static WALK: Cell<bool> = const { Cell::new(false) };
    }

    /// A run's report, as JSON, with the index or with the walks.
    fn report(policy: &str, workload: &str, walk: bool) -> (String, crate::report::RunReport) {
        WALK.set(walk);
        let mut sim = crate::Simulation::new(crate::RunConfig {
            machine: "numa-1024:coherence=off".into(),
            cpus: Some(72),
            policy: policy.into(),
            workload: workload.into(),
            seed: 3,
        })
        .unwrap();
        WALK.set(false);
        let uses = sim.k.class().uses_idle_index();
        assert_eq!(sim.k.idle_cpus.is_on(), !walk && uses);
        sim.run(&mut |_, _| {}).unwrap();
        sim.check().unwrap();
        let r = sim.report().unwrap();
        (serde_json::to_string(&r).unwrap(), r)
    }

    /// 2.4's `reschedule_idle` and `sys_sched_yield`, haMQ's placement, idle pull and
    /// yield, MQ's remote scan decide with their indexes exactly as with their walks: the
    /// runs are identical.
    #[test]
    fn runs_with_the_index_equal_runs_with_the_walks() {
        for (policy, workload, used) in [
            (
                "linux-2.4",
                "hackbench:groups=3,loops=10",
                "reschedule_idle_idle",
            ),
            (
                "linux-2.4",
                "reflex:tasks=16,yield_pct=50,rounds=500",
                "yields",
            ),
            ("hamq", "hackbench:groups=3,loops=10", "wake_moves"),
            ("hamq", "hackbench:groups=3,loops=10", "idle_pulls"),
            // Its threads yield: `sys_sched_yield`'s count of waiting tasks.
            (
                "hamq",
                "reflex:tasks=16,yield_pct=50,rounds=500",
                "wake_moves",
            ),
            // MQ's remote scan from its index of published goodness (`policy/mq`), and its
            // `reschedule_idle` from this index.
            ("mq", "hackbench:groups=3,loops=10", "steals"),
            ("mq", "hackbench:groups=3,loops=10", "resched_moves"),
            (
                "mq",
                "reflex:tasks=16,yield_pct=50,rounds=500",
                "premature_idle",
            ),
        ] {
            let resched_indexed = crate::policy::mq::RESCHED_INDEXED.get();
            let (indexed, r) = report(policy, workload, false);
            let resched_indexed = crate::policy::mq::RESCHED_INDEXED.get() - resched_indexed;
            let (walked, _) = report(policy, workload, true);
            assert!(indexed == walked, "{policy} {workload}: the runs differ");
            // The paths the index replaces were taken.
            let n = r.counters.policy.get(used).copied().unwrap_or(0.0);
            assert!(n > 0.0, "{policy} {workload}: {used} = {n}");
            // MQ's `reschedule_idle` took its first target from the index (and, in this
            // debug build, checked it against the walk every time).
            if policy == "mq" {
                assert!(
                    resched_indexed > 0,
                    "{policy} {workload}: no indexed placement"
                );
            }
        }
    }

    /// 2.4 `reschedule_idle`'s walk: from CPU 0, the strictly smaller `last_schedule`
    /// among those a read at `now` finds idle.
    fn plain_oldest(
        cpus: &[Cpu],
        since: &IdleCpus,
        now: Time,
        ok: impl Fn(CpuId) -> bool,
    ) -> Option<CpuId> {
        let mut best: Option<CpuId> = None;
        for (c, cpu) in cpus.iter().enumerate() {
            if ok(c)
                && cpu.curr_seen.at(now) == cpu.idle
                && best.is_none_or(|b| since.last_schedule(c) < since.last_schedule(b))
            {
                best = Some(c);
            }
        }
        best
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn the_index_answers_as_the_walks_do(
            n in 65usize..90,
            writes in prop::collection::vec((0usize..90, 0u64..2_000, any::<bool>(), any::<bool>()), 1..300),
            reads in prop::collection::vec((0u64..2_200, 1usize..5, 0usize..5), 1..20),
        ) {
            let class = crate::policy::build_named("fifo", "numa-1024", n).unwrap();
            let mut bed = Bed::new("numa-1024:coherence=off", n, class);
            let k = &mut bed.k;
            // A bed's kernel boots under a bystander class, which asks for no index.
            k.idle_cpus = IdleCpus::new(&k.cpus, true);
            let mut clock = 0u64;
            for (i, &(c, jitter, idle, switch)) in writes.iter().enumerate() {
                let c = c % n;
                // Time goes on, but a write may be dated up to 1 µs back or ahead.
                clock += 100;
                let t = (clock + jitter).saturating_sub(1_000);
                let next = if idle { k.cpus[c].idle } else { 1_000 + c as TaskId };
                k.cpus[c].curr_seen.set(t, next);
                if switch {
                    k.idle_cpus.set_last_schedule(c, t);
                }
                k.idle_cpus.note(c, &k.cpus[c]);
                k.idle_cpus.check(&k.cpus).map_err(TestCaseError::fail)?;
                let (back, m, r) = reads[i % reads.len()];
                let now = (clock + 1_100).saturating_sub(back);
                let ok = |c: CpuId| c % m != r;
                prop_assert_eq!(
                    k.idle_cpus.oldest_seen(&k.cpus, now, ok),
                    plain_oldest(&k.cpus, &k.idle_cpus, now, ok)
                );
                let busy = k.cpus.iter().filter(|c| c.curr_seen.at(now) != c.idle).count();
                prop_assert_eq!(k.idle_cpus.busy_seen(&k.cpus, now), busy);
                prop_assert_eq!(
                    k.idle_cpus.oldest_latest(ok),
                    plain_oldest(&k.cpus, &k.idle_cpus, Time::MAX, ok)
                );
            }
        }
    }

    #[test]
    fn small_machines_and_coherence_keep_no_index() {
        assert!(!IdleCpus::wanted(INDEX_ABOVE, false));
        assert!(!IdleCpus::wanted(1024, true));
        assert!(IdleCpus::wanted(INDEX_ABOVE + 1, false));
        let class = crate::policy::build_named("fifo", "numa-1024", 65).unwrap();
        let bed = Bed::new("numa-1024", 65, class);
        assert!(!bed.k.idle_cpus.is_on());
    }
}
