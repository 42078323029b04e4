//! Per-CPU caches with per-task residency.
//!
//! Model: each CPU has an L1 and an L2 level. A level remembers, for each task, how many
//! bytes of that task's working set it holds, and evicts least-recently-run tasks first
//! when a task's working set streams in. A task that touches `W` bytes on a CPU pays for
//! the part of `W` its L1 lacks: at L2-hit cost for what the L2 still holds, and at the
//! caller's price (memory, or a line transfer from the CPU where the lines sit dirty) for
//! the rest. Touching a working set also invalidates the task's lines on other CPUs — the
//! model assumes working sets are written, as lat_ctx's summed arrays and kernel stacks are.
//!
//! A task owns two independent working sets: its user working set ([`CacheModel::touch`])
//! and its kernel footprint — task_struct, kernel stack — touched at every switch-in
//! ([`CacheModel::touch_kernel`]). They are tracked separately, so the small kernel
//! touch at a switch does not shrink the record of the user set the task left resident.
//!
//! Invariants: per level, `used == Σ resident ≤ capacity`; a working set's residency
//! never exceeds the bytes last touched of it.

use std::collections::BTreeMap;

use super::CpuId;

#[derive(Default)]
struct Level {
    cap: u64,
    used: u64,
    resident: Vec<u64>,
    stamp: Vec<u64>,
    // determinism: ordered by use stamp; stamps are unique per level.
    lru: BTreeMap<u64, u32>,
}

impl Level {
    fn new(cap: u64) -> Level {
        Level {
            cap,
            ..Default::default()
        }
    }

    fn resident(&self, task: u32) -> u64 {
        self.resident.get(task as usize).copied().unwrap_or(0)
    }

    fn ensure(&mut self, task: u32) {
        let n = task as usize + 1;
        if self.resident.len() < n {
            self.resident.resize(n, 0);
            self.stamp.resize(n, 0);
        }
    }

    fn drop_task(&mut self, task: u32) {
        if (task as usize) < self.resident.len() {
            let r = self.resident[task as usize];
            if r > 0 {
                self.used -= r;
                self.resident[task as usize] = 0;
                self.lru.remove(&self.stamp[task as usize]);
            }
        }
    }

    /// Make `bytes` of `task` resident (capped at the capacity) and evict others to fit.
    fn fill(&mut self, task: u32, bytes: u64, stamp: u64) {
        self.ensure(task);
        let t = task as usize;
        let want = bytes.min(self.cap);
        if self.resident[t] > 0 {
            self.lru.remove(&self.stamp[t]);
        }
        self.used = self.used - self.resident[t] + want;
        self.resident[t] = want;
        if want > 0 {
            self.stamp[t] = stamp;
            self.lru.insert(stamp, task);
        }
        while self.used > self.cap {
            let (&s, &victim) = self
                .lru
                .iter()
                .next()
                .expect("over capacity with empty LRU");
            debug_assert_ne!(
                victim, task,
                "a task cannot evict itself below its own fill"
            );
            let v = victim as usize;
            let evict = self.resident[v].min(self.used - self.cap);
            self.resident[v] -= evict;
            self.used -= evict;
            if self.resident[v] == 0 {
                self.lru.remove(&s);
            }
        }
    }
}

/// What a working-set touch missed, in lines, by where the lines must come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Miss {
    /// Lines found in this CPU's L2 but not its L1.
    pub from_l2: u64,
    /// Lines in neither level: memory, or another CPU's cache.
    pub from_outside: u64,
}

/// Index of a task's user working set in a [`Level`].
fn user_set(task: u32) -> u32 {
    2 * task
}

/// Index of a task's kernel footprint in a [`Level`].
fn kernel_set(task: u32) -> u32 {
    2 * task + 1
}

/// The caches of every CPU.
pub struct CacheModel {
    line: u64,
    l1: Vec<Level>,
    l2: Vec<Level>,
    stamp: u64,
}

impl CacheModel {
    /// Caches for `cpus` CPUs.
    pub fn new(cpus: usize, line: u64, l1_bytes: u64, l2_bytes: u64) -> CacheModel {
        CacheModel {
            line,
            l1: (0..cpus).map(|_| Level::new(l1_bytes)).collect(),
            l2: (0..cpus).map(|_| Level::new(l2_bytes)).collect(),
            stamp: 0,
        }
    }

    /// `task` touches `bytes` of its user working set on `cpu`: report the misses, make
    /// the set resident there, evict other sets as needed and invalidate it elsewhere.
    pub fn touch(&mut self, cpu: CpuId, task: u32, bytes: u64) -> Miss {
        let miss = self.lookup(cpu, task, bytes, bytes);
        self.record(cpu, task, bytes, bytes);
        miss
    }

    /// `task`'s kernel footprint (task_struct, kernel stack) is touched on `cpu`: as
    /// [`CacheModel::touch`], for the task's second, kernel-side working set.
    pub fn touch_kernel(&mut self, cpu: CpuId, task: u32, bytes: u64) -> Miss {
        let set = kernel_set(task);
        let miss = self.lookup_set(cpu, set, bytes, bytes);
        self.record_set(cpu, set, bytes, bytes);
        miss
    }

    /// What a pass touching `todo` bytes of `task`'s `ws`-byte user working set would
    /// miss on `cpu` now (no state changes: [`CacheModel::record`] commits the pass).
    pub fn lookup(&self, cpu: CpuId, task: u32, ws: u64, todo: u64) -> Miss {
        self.lookup_set(cpu, user_set(task), ws, todo)
    }

    /// `task` has touched `done` bytes of its `ws`-byte user working set on `cpu`: make
    /// them resident there (the untouched rest keeps its share of what was resident),
    /// evict other sets as needed and invalidate the set elsewhere.
    pub fn record(&mut self, cpu: CpuId, task: u32, ws: u64, done: u64) {
        self.record_set(cpu, user_set(task), ws, done)
    }

    fn lookup_set(&self, cpu: CpuId, set: u32, ws: u64, todo: u64) -> Miss {
        if ws == 0 || todo == 0 {
            return Miss::default();
        }
        let share = |r: u64| (u128::from(todo) * u128::from(r.min(ws)) / u128::from(ws)) as u64;
        let r1 = self.l1[cpu].resident(set);
        let r2 = self.l2[cpu].resident(set).max(r1);
        let lines = |b: u64| b.div_ceil(self.line);
        let miss1 = todo - share(r1);
        let miss2 = todo - share(r2);
        Miss {
            from_l2: lines(miss1) - lines(miss2),
            from_outside: lines(miss2),
        }
    }

    fn record_set(&mut self, cpu: CpuId, set: u32, ws: u64, done: u64) {
        if ws == 0 || done == 0 {
            return;
        }
        let done = done.min(ws);
        let keep =
            |r: u64| done + (u128::from(ws - done) * u128::from(r.min(ws)) / u128::from(ws)) as u64;
        self.stamp += 1;
        let s = self.stamp;
        let b1 = keep(self.l1[cpu].resident(set));
        let b2 = keep(self.l2[cpu].resident(set));
        self.l1[cpu].fill(set, b1, s);
        self.l2[cpu].fill(set, b2, s);
        for other in 0..self.l1.len() {
            if other != cpu {
                self.l1[other].drop_task(set);
                self.l2[other].drop_task(set);
            }
        }
    }

    /// Forget a task that has exited (both of its working sets).
    pub fn forget(&mut self, task: u32) {
        for l in self.l1.iter_mut().chain(self.l2.iter_mut()) {
            l.drop_task(user_set(task));
            l.drop_task(kernel_set(task));
        }
    }

    /// Bytes of `task`'s user working set resident in `cpu`'s L2.
    pub fn l2_resident(&self, cpu: CpuId, task: u32) -> u64 {
        self.l2[cpu].resident(user_set(task))
    }

    /// Check the per-level accounting (used by the invariant checks).
    pub fn check(&self) -> Result<(), String> {
        for (name, levels) in [("L1", &self.l1), ("L2", &self.l2)] {
            for (cpu, l) in levels.iter().enumerate() {
                let sum: u64 = l.resident.iter().sum();
                if sum != l.used || l.used > l.cap {
                    return Err(format!(
                        "{name} of cpu {cpu}: used {} resident sum {sum} capacity {}",
                        l.used, l.cap
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_set_costs_nothing_and_eviction_is_lru() {
        let mut c = CacheModel::new(2, 32, 1024, 4096);
        let m = c.touch(0, 1, 2048);
        assert_eq!(
            m,
            Miss {
                from_l2: 0,
                from_outside: 64
            }
        );
        // Still in L2, half evicted from L1 (L1 holds only 1 KB of it).
        let m = c.touch(0, 1, 2048);
        assert_eq!(
            m,
            Miss {
                from_l2: 32,
                from_outside: 0
            }
        );
        // Task 2 fills L2 completely: task 1 (least recent) is evicted.
        c.touch(0, 2, 4096);
        assert_eq!(c.l2_resident(0, 1), 0);
        let m = c.touch(0, 1, 2048);
        assert_eq!(m.from_outside, 64);
        c.check().unwrap();
    }

    #[test]
    fn touching_on_another_cpu_invalidates() {
        let mut c = CacheModel::new(2, 32, 1024, 4096);
        c.touch(0, 7, 512);
        c.touch(1, 7, 512);
        assert_eq!(c.l2_resident(0, 7), 0);
        assert_eq!(c.touch(0, 7, 512).from_outside, 16);
        c.forget(7);
        c.check().unwrap();
        assert_eq!(c.l2_resident(0, 7), 0);
    }

    #[test]
    fn the_kernel_footprint_does_not_shrink_the_user_set() {
        let mut c = CacheModel::new(1, 32, 16 * 1024, 1 << 20);
        c.touch(0, 1, 8192);
        // A switch-in touches the task's 3 KB kernel footprint: a separate set.
        assert_eq!(c.touch_kernel(0, 1, 3072).from_outside, 96);
        assert_eq!(c.l2_resident(0, 1), 8192);
        assert_eq!(c.touch(0, 1, 8192), Miss::default());
        c.forget(1);
        c.check().unwrap();
    }
}
