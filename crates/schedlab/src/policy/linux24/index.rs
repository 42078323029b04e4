//! The goodness index: finds the task the 2.4 run-queue scan would pick without walking
//! the queue.
//!
//! # Why it is exact
//!
//! For a scan on CPU `c` with `this_mm = m`, `goodness(p) = key(p) + bonus(p)`, where the
//! *key* is the part that does not depend on the scanning CPU (`counter + 20 − nice`, +1
//! for a kernel thread; −1 when yielded; 1000 + rt_priority; 0 when the counter is spent)
//! and the bonus is `PCP·[p.processor = c] + [p.mm = m]`, only for *eligible* tasks
//! (SCHED_OTHER, not yielded, counter > 0, `mm ≠ NULL`). Every task sits in the set
//! `all`; eligible ones also in `by_cpu[processor]`, `by_mm[mm]` and
//! `by_cpu_mm[(processor, mm)]`. Each set is ordered by (key descending, list position
//! ascending) and has a bonus `b` that every member earns *at least* for this query:
//! 0, PCP, 1 and PCP + 1 respectively.
//!
//! Let `t*` be the scan's pick (greatest goodness, first in list order on ties). `t*`
//! belongs to a set `S` whose bonus is exactly its own bonus, so
//! `goodness(t*) = key(t*) + b_S`. The first schedulable member `u` of `S` has
//! `key(u) ≥ key(t*)` (ties: `u` earlier in the list), hence
//! `goodness(u) ≥ key(u) + b_S ≥ goodness(t*)`; `t*` being the pick forces equality and
//! then list order forces `u = t*`. So the best of the (at most four) set heads, compared
//! by true goodness and then list position, is the scan's pick.
//!
//! The policy keeps tasks that are on a CPU out of the index (no other CPU may pick them)
//! and weighs the scanning CPU's own `prev` separately, so every indexed task passes
//! `can_schedule` except those whose affinity excludes the scanning CPU; skipping those
//! is the only walk the index ever does.
//!
//! Invariants: a task is in `all` ⇔ the policy indexed it; it is in the three other sets
//! ⇔ its key says eligible; set entries equal the key the policy stored for the task.

use std::collections::BTreeSet;

use crate::kernel::task::TaskId;
use crate::machine::CpuId;

/// What a queued task is indexed under, as stored for it by the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexKey {
    /// The CPU-independent part of goodness.
    pub key: i64,
    /// Run-queue list position (smaller = closer to the head).
    pub pos: i64,
    /// `processor` when indexed.
    pub cpu: CpuId,
    /// `mm` when indexed (0 = kernel thread: never in the mm sets).
    pub mm: u32,
    /// Earns the PROC_CHANGE_PENALTY and same-mm bonuses.
    pub eligible: bool,
}

type Entry = (i64, i64, TaskId);

fn entry(p: TaskId, k: &IndexKey) -> Entry {
    (-k.key, k.pos, p)
}

/// The sets described in the module docs. mm ids are small dense integers (the kernel
/// numbers address spaces from 1), so the per-mm sets live in vectors indexed by mm.
#[derive(Default)]
pub struct GoodnessIndex {
    nr_cpus: usize,
    all: BTreeSet<Entry>,
    by_cpu: Vec<BTreeSet<Entry>>,
    by_mm: Vec<BTreeSet<Entry>>,
    /// Indexed by `mm * nr_cpus + cpu`.
    by_cpu_mm: Vec<BTreeSet<Entry>>,
}

/// A candidate: (goodness, list position, task).
pub type Pick = (i64, i64, TaskId);

impl GoodnessIndex {
    /// An empty index for `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> Self {
        GoodnessIndex {
            nr_cpus,
            by_cpu: vec![BTreeSet::new(); nr_cpus],
            ..Default::default()
        }
    }

    fn cpu_mm(&self, cpu: CpuId, mm: u32) -> usize {
        mm as usize * self.nr_cpus + cpu
    }

    /// Number of indexed tasks.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Index `p` under `k`.
    pub fn insert(&mut self, p: TaskId, k: &IndexKey) {
        let e = entry(p, k);
        let fresh = self.all.insert(e);
        debug_assert!(fresh, "task {p} indexed twice");
        if k.eligible {
            self.by_cpu[k.cpu].insert(e);
            if k.mm != 0 {
                let (m, cm) = (k.mm as usize, self.cpu_mm(k.cpu, k.mm));
                if self.by_mm.len() <= m {
                    self.by_mm.resize_with(m + 1, BTreeSet::new);
                    self.by_cpu_mm
                        .resize_with((m + 1) * self.nr_cpus, BTreeSet::new);
                }
                self.by_mm[m].insert(e);
                self.by_cpu_mm[cm].insert(e);
            }
        }
    }

    /// Remove `p`, indexed under `k`.
    pub fn remove(&mut self, p: TaskId, k: &IndexKey) {
        let e = entry(p, k);
        let was = self.all.remove(&e);
        debug_assert!(was, "task {p} not indexed under {k:?}");
        if k.eligible {
            self.by_cpu[k.cpu].remove(&e);
            if k.mm != 0 {
                let cm = self.cpu_mm(k.cpu, k.mm);
                self.by_mm[k.mm as usize].remove(&e);
                self.by_cpu_mm[cm].remove(&e);
            }
        }
    }

    /// The scan's pick on `cpu` with `this_mm` among the indexed tasks: `schedulable` is
    /// `can_schedule`,
    /// `goodness` the true goodness. `None` when no task is schedulable (idle).
    pub fn pick(
        &self,
        cpu: CpuId,
        this_mm: u32,
        schedulable: impl Fn(TaskId) -> bool,
        goodness: impl Fn(TaskId) -> i64,
    ) -> Option<Pick> {
        let sets = [
            self.by_cpu_mm.get(self.cpu_mm(cpu, this_mm)),
            self.by_cpu.get(cpu),
            self.by_mm.get(this_mm as usize),
            Some(&self.all),
        ];
        let mut best: Option<Pick> = None;
        for set in sets.into_iter().flatten() {
            let Some(&(_, pos, p)) = set.iter().find(|e| schedulable(e.2)) else {
                continue;
            };
            let g = goodness(p);
            if best.is_none_or(|(bg, bpos, _)| g > bg || (g == bg && pos < bpos)) {
                best = Some((g, pos, p));
            }
        }
        best
    }

    /// Structural check: the eligible sets hold exactly what `keys` says.
    pub fn check(&self, keys: impl Fn(TaskId) -> Option<IndexKey>) -> Result<(), String> {
        let mut eligible = 0usize;
        let mut with_mm = 0usize;
        for &(k, pos, p) in &self.all {
            let Some(ik) = keys(p) else {
                return Err(format!("index: task {p} indexed but has no key"));
            };
            if (-k, pos) != (ik.key, ik.pos) {
                return Err(format!("index: task {p} entry ({}, {pos}) vs {ik:?}", -k));
            }
            if ik.eligible {
                eligible += 1;
                let e = (k, pos, p);
                let in_cpu = self.by_cpu[ik.cpu].contains(&e);
                let in_mm = ik.mm == 0
                    || (self.by_mm[ik.mm as usize].contains(&e)
                        && self.by_cpu_mm[self.cpu_mm(ik.cpu, ik.mm)].contains(&e));
                if !in_cpu || !in_mm {
                    return Err(format!("index: eligible task {p} missing from a set"));
                }
                if ik.mm != 0 {
                    with_mm += 1;
                }
            }
        }
        let n_cpu: usize = self.by_cpu.iter().map(BTreeSet::len).sum();
        let n_mm: usize = self.by_mm.iter().map(BTreeSet::len).sum();
        let n_cpu_mm: usize = self.by_cpu_mm.iter().map(BTreeSet::len).sum();
        if n_cpu != eligible || n_mm != with_mm || n_cpu_mm != with_mm {
            return Err(format!(
                "index: set sizes {n_cpu}/{n_mm}/{n_cpu_mm}, expected {eligible}/{with_mm}/{with_mm}"
            ));
        }
        Ok(())
    }
}
