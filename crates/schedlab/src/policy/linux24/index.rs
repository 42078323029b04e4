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
//! Invariants: a task is in `all` ⇔ it is on the run queue; it is in the three other sets
//! ⇔ its key says eligible; set entries equal the key the policy stored for the task.
//! Skipping unschedulable heads (tasks running on another CPU, or not allowed here) costs
//! at most one step per busy CPU plus the affinity-excluded tasks.

use std::collections::{BTreeMap, BTreeSet};

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

/// The sets described in the module docs.
#[derive(Default)]
pub struct GoodnessIndex {
    all: BTreeSet<Entry>,
    by_cpu: Vec<BTreeSet<Entry>>,
    by_mm: BTreeMap<u32, BTreeSet<Entry>>,
    by_cpu_mm: BTreeMap<(CpuId, u32), BTreeSet<Entry>>,
}

/// A candidate: (goodness, list position, task).
pub type Pick = (i64, i64, TaskId);

impl GoodnessIndex {
    /// An empty index for `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> Self {
        GoodnessIndex {
            by_cpu: vec![BTreeSet::new(); nr_cpus],
            ..Default::default()
        }
    }

    /// Number of indexed tasks.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.all.clear();
        self.by_cpu.iter_mut().for_each(BTreeSet::clear);
        self.by_mm.clear();
        self.by_cpu_mm.clear();
    }

    /// Index `p` under `k`.
    pub fn insert(&mut self, p: TaskId, k: &IndexKey) {
        let e = entry(p, k);
        let fresh = self.all.insert(e);
        debug_assert!(fresh, "task {p} indexed twice");
        if k.eligible {
            self.by_cpu[k.cpu].insert(e);
            if k.mm != 0 {
                self.by_mm.entry(k.mm).or_default().insert(e);
                self.by_cpu_mm.entry((k.cpu, k.mm)).or_default().insert(e);
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
                remove_from(&mut self.by_mm, k.mm, &e);
                remove_from(&mut self.by_cpu_mm, (k.cpu, k.mm), &e);
            }
        }
    }

    /// The scan's pick on `cpu` with `this_mm`: `schedulable` is `can_schedule`,
    /// `goodness` the true goodness. `None` when no task is schedulable (idle).
    pub fn pick(
        &self,
        cpu: CpuId,
        this_mm: u32,
        schedulable: impl Fn(TaskId) -> bool,
        goodness: impl Fn(TaskId) -> i64,
    ) -> Option<Pick> {
        let sets = [
            self.by_cpu_mm.get(&(cpu, this_mm)),
            self.by_cpu.get(cpu),
            self.by_mm.get(&this_mm),
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
                    || (self.by_mm.get(&ik.mm).is_some_and(|s| s.contains(&e))
                        && self
                            .by_cpu_mm
                            .get(&(ik.cpu, ik.mm))
                            .is_some_and(|s| s.contains(&e)));
                if !in_cpu || !in_mm {
                    return Err(format!("index: eligible task {p} missing from a set"));
                }
                if ik.mm != 0 {
                    with_mm += 1;
                }
            }
        }
        let n_cpu: usize = self.by_cpu.iter().map(BTreeSet::len).sum();
        let n_mm: usize = self.by_mm.values().map(BTreeSet::len).sum();
        let n_cpu_mm: usize = self.by_cpu_mm.values().map(BTreeSet::len).sum();
        if n_cpu != eligible || n_mm != with_mm || n_cpu_mm != with_mm {
            return Err(format!(
                "index: set sizes {n_cpu}/{n_mm}/{n_cpu_mm}, expected {eligible}/{with_mm}/{with_mm}"
            ));
        }
        Ok(())
    }
}

fn remove_from<K: Ord>(m: &mut BTreeMap<K, BTreeSet<Entry>>, k: K, e: &Entry) {
    if let Some(s) = m.get_mut(&k) {
        s.remove(e);
        if s.is_empty() {
            m.remove(&k);
        }
    }
}
