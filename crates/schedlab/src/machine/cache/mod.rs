//! Per-CPU caches: working sets priced by their reuse distance in each level.
//!
//! Design: each CPU has an L1 and an L2 ([`level::Level`]); where the costs name one, the
//! CPUs of one LLC domain share a last-level cache behind them, a third level kept the
//! same way over the sets touched on any of those CPUs (a host's L3: its lines refill at
//! their own price, `Costs::llc_line_ps`). A level keeps an LRU stack of
//! the working sets touched on it — a task's user working set and its kernel footprint
//! (task_struct, kernel stack) are two sets — and prices a pass over a set by the lines
//! touched since by the sets above it: a line survives if fewer than `ways` of those lines
//! fell in its cache set, exactly for the L1 (a way is one page, every page covers every
//! set) and in expectation for the L2 (pages land in sets by the colour of the frame
//! 2.4's allocator gave them, ≈ at random), so occupancy degrades gradually as the sets
//! outgrow the L2, as lmbench's lat_ctx rows do (benchmarks.md §6.2). A pass misses in L1
//! what does not survive there; of that, the L2 serves what survives in it, and the rest
//! comes from outside at the caller's price (memory, or a line transfer from the CPU where
//! the lines sit dirty). Touching a set invalidates it on every other CPU — working sets
//! are written, as lat_ctx's summed arrays and kernel stacks are. A pass cut by an
//! interrupt records the share it touched ([`CacheModel::record`]); the rest of it is
//! priced when it resumes, knowing the touched prefix is on top of the stack.
//!
//! Cost: O(log n) per access in the sets a level remembers (a Fenwick tree over recency),
//! O(1) for the invalidation (a set is recorded on at most one CPU, whose id is kept),
//! never proportional to a working set's size or to the CPUs; a level
//! forgets sets below the distance at which nothing survives, so its entries are bounded
//! by the model (at most the sets whose lines fit in that distance), not the working sets.
//! `tests` compares the model with an exact line-level set-associative LRU (error table:
//! docs/model.md).
//!
//! Invariants: per level, the stack's total equals the sum of its entries' sizes, each
//! entry holds at least one line and its cut-pass prefix is part of it, and the expected
//! resident lines summed over the stack never exceed the level's capacity; a set is
//! recorded on at most one CPU (and in the LLC of that CPU's domain only).

mod level;

#[cfg(test)]
mod exact;

use level::{Geometry, Level, Recs};

use super::{Costs, CpuId};

/// What a working-set touch missed, in lines, by where the lines must come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Miss {
    /// Lines found in this CPU's L2 but not its L1.
    pub from_l2: u64,
    /// Lines found in the LLC shared with this CPU's domain but in neither private level.
    pub from_llc: u64,
    /// Lines in no level: memory, or another CPU's cache.
    pub from_outside: u64,
}

/// Size and associativity of one level.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Capacity, bytes.
    pub bytes: u64,
    /// Ways per cache set.
    pub ways: u64,
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
    page: u64,
    l1: Vec<Level>,
    l2: Vec<Level>,
    /// The entries of every set in the L1s and in the L2s ([`Recs`]: one table per kind,
    /// since a set is recorded on one CPU at most).
    recs1: Recs,
    recs2: Recs,
    /// The shared last-level caches, one per LLC domain (none: no such level), the
    /// domain of each CPU, and their entries.
    llc: Vec<Level>,
    llc_of: Vec<usize>,
    recs3: Recs,
    /// Per set, the CPU it was last recorded on (`NO_CPU`: none): the only CPU whose
    /// levels may hold it.
    holder: Vec<u32>,
}

const NO_CPU: u32 = u32::MAX;

impl CacheModel {
    /// Caches for `cpus` CPUs with `line`-byte lines under `page`-byte pages.
    pub fn new(cpus: usize, line: u64, page: u64, l1: Shape, l2: Shape) -> CacheModel {
        let g1 = Geometry::new(l1.bytes, line, l1.ways, page);
        let g2 = Geometry::new(l2.bytes, line, l2.ways, page);
        CacheModel {
            line,
            page,
            l1: (0..cpus).map(|_| Level::new(g1)).collect(),
            l2: (0..cpus).map(|_| Level::new(g2)).collect(),
            recs1: Recs::default(),
            recs2: Recs::default(),
            llc: Vec::new(),
            llc_of: Vec::new(),
            recs3: Recs::default(),
            holder: Vec::new(),
        }
    }

    /// The same caches with a last-level cache of `shape` shared by the CPUs of each
    /// domain, `llc_of[cpu]` naming the domain of every CPU.
    pub fn with_llc(mut self, shape: Shape, llc_of: Vec<usize>) -> Self {
        let g = Geometry::new(shape.bytes, self.line, shape.ways, self.page);
        let domains = llc_of.iter().max().map_or(0, |&d| d + 1);
        self.llc = (0..domains).map(|_| Level::new(g)).collect();
        self.llc_of = llc_of;
        self
    }

    /// The caches a preset's costs describe, with their LLC where they name one, shared
    /// by the CPUs `llc_of` puts in one domain.
    pub fn for_costs(cpus: usize, c: &Costs, llc_of: Vec<usize>) -> CacheModel {
        let l1 = Shape {
            bytes: c.l1_bytes,
            ways: c.l1_ways,
        };
        let l2 = Shape {
            bytes: c.l2_bytes,
            ways: c.l2_ways,
        };
        let m = CacheModel::new(cpus, c.line_bytes, c.page_bytes, l1, l2);
        match (c.llc_bytes, c.llc_ways, c.llc_line_ps) {
            (Some(bytes), Some(ways), Some(_)) if bytes > c.l2_bytes => {
                m.with_llc(Shape { bytes, ways }, llc_of)
            }
            _ => m,
        }
    }

    /// `task` touches `bytes` of its user working set on `cpu` in one whole pass: report
    /// the misses, record the set there and invalidate it elsewhere.
    pub fn touch(&mut self, cpu: CpuId, task: u32, bytes: u64) -> Miss {
        let miss = self.lookup(cpu, task, bytes, bytes);
        self.record(cpu, task, bytes, bytes, bytes);
        miss
    }

    /// `task`'s kernel footprint (task_struct, kernel stack) is touched on `cpu`: as
    /// [`CacheModel::touch`], for the task's second, kernel-side working set.
    pub fn touch_kernel(&mut self, cpu: CpuId, task: u32, bytes: u64) -> Miss {
        let set = kernel_set(task);
        let miss = self.lookup_set(cpu, set, bytes, bytes);
        self.record_set(cpu, set, bytes, bytes, bytes);
        miss
    }

    /// What the rest of a pass — the last `todo` bytes of `task`'s `ws`-byte user working
    /// set — misses on `cpu` now. No state changes: [`CacheModel::record`] commits.
    pub fn lookup(&self, cpu: CpuId, task: u32, ws: u64, todo: u64) -> Miss {
        self.lookup_set(cpu, user_set(task), ws, todo)
    }

    /// A pass that had `todo` bytes of `task`'s `ws`-byte user working set left has
    /// touched `done` of them on `cpu` (all when it ran to its end, a share when an
    /// interrupt cut it): put the set on top of `cpu`'s stacks and invalidate it elsewhere.
    pub fn record(&mut self, cpu: CpuId, task: u32, ws: u64, todo: u64, done: u64) {
        self.record_set(cpu, user_set(task), ws, todo, done)
    }

    fn lines(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.line)
    }

    /// True when `set` may be held on `cpu` (it was last recorded there).
    #[inline]
    fn holds(&self, cpu: CpuId, set: u32) -> bool {
        self.holder.get(set as usize) == Some(&(cpu as u32))
    }

    fn lookup_set(&self, cpu: CpuId, set: u32, ws: u64, todo: u64) -> Miss {
        let (ws, todo) = (self.lines(ws), self.lines(todo.min(ws)));
        if todo == 0 {
            return Miss::default();
        }
        // determinism: plain f64 arithmetic in a fixed order, rounded once per level.
        let hits = |share: f64| ((todo as f64 * share).round() as u64).min(todo);
        if !self.holds(cpu, set) {
            // Held elsewhere or nowhere: nothing of it is here (a share of 0).
            return Miss {
                from_outside: todo,
                ..Miss::default()
            };
        }
        let h1 = hits(self.l1[cpu].share(&self.recs1, set, ws, todo));
        // model: inclusive levels — what the L1 holds, the L2 holds. All of it in the L1
        // is all of it in the L2: its share is not asked for.
        let h2 = if h1 == todo {
            todo
        } else {
            hits(self.l2[cpu].share(&self.recs2, set, ws, todo)).max(h1)
        };
        // model: the LLC is inclusive too, and is asked only for what the L2 lost.
        let h3 = match self.llc_of.get(cpu) {
            Some(&d) if h2 < todo => hits(self.llc[d].share(&self.recs3, set, ws, todo)).max(h2),
            _ => h2,
        };
        Miss {
            from_l2: h2 - h1,
            from_llc: h3 - h2,
            from_outside: todo - h3,
        }
    }

    fn record_set(&mut self, cpu: CpuId, set: u32, ws: u64, todo: u64, done: u64) {
        let todo = todo.min(ws);
        let rest = self.lines(todo - done.min(todo));
        let (ws, todo) = (self.lines(ws), self.lines(todo));
        // In lines as the rest's lookup will count them, so the prefix it sees is this one.
        let done = todo - rest;
        if done == 0 {
            return;
        }
        // Invalidate it where it was (first: the tables are shared), then record it here.
        let i = set as usize;
        if self.holder.len() <= i {
            self.holder.resize(i + 1, NO_CPU);
        }
        let h = self.holder[i];
        if h != NO_CPU && h as usize != cpu {
            self.l1[h as usize].remove(&mut self.recs1, set);
            self.l2[h as usize].remove(&mut self.recs2, set);
            if let (Some(&was), Some(&now)) = (self.llc_of.get(h as usize), self.llc_of.get(cpu)) {
                if was != now {
                    self.llc[was].remove(&mut self.recs3, set);
                }
            }
        }
        self.holder[i] = cpu as u32;
        self.l1[cpu].record(&mut self.recs1, set, ws, todo, done);
        self.l2[cpu].record(&mut self.recs2, set, ws, todo, done);
        if let Some(&d) = self.llc_of.get(cpu) {
            self.llc[d].record(&mut self.recs3, set, ws, todo, done);
        }
    }

    /// Forget a task that has exited (both of its working sets).
    pub fn forget(&mut self, task: u32) {
        for set in [user_set(task), kernel_set(task)] {
            if let Some(h) = self.holder.get_mut(set as usize) {
                if *h != NO_CPU {
                    self.l1[*h as usize].remove(&mut self.recs1, set);
                    self.l2[*h as usize].remove(&mut self.recs2, set);
                    if let Some(&d) = self.llc_of.get(*h as usize) {
                        self.llc[d].remove(&mut self.recs3, set);
                    }
                    *h = NO_CPU;
                }
            }
        }
    }

    /// Expected bytes of `task`'s user working set resident in `cpu`'s L2.
    pub fn l2_resident(&self, cpu: CpuId, task: u32) -> u64 {
        let set = user_set(task);
        if !self.holds(cpu, set) {
            return 0;
        }
        (self.l2[cpu].resident(&self.recs2, set) * self.line as f64).round() as u64
    }

    /// Entries remembered over every level of every CPU: the model's size.
    pub fn entries(&self) -> usize {
        self.l1
            .iter()
            .chain(self.l2.iter())
            .chain(self.llc.iter())
            .map(Level::entries)
            .sum()
    }

    /// Check the per-level accounting (used by the invariant checks).
    pub fn check(&self) -> Result<(), String> {
        for (name, levels, recs) in [
            ("L1", &self.l1, &self.recs1),
            ("L2", &self.l2, &self.recs2),
            ("LLC", &self.llc, &self.recs3),
        ] {
            for (cpu, l) in levels.iter().enumerate() {
                l.check(recs)
                    .map_err(|e| format!("{name} of cpu {cpu}: {e}"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::exact::{exact_misses, model_misses, random_order, round_robin, Case};
    use super::*;

    const KB: u64 = 1024;

    /// The P6 shapes: 16 KB 4-way L1 (uniform), 1 MB 4-way L2 (coloured).
    fn piii(cpus: usize) -> CacheModel {
        let l1 = Shape {
            bytes: 16 * KB,
            ways: 4,
        };
        let l2 = Shape {
            bytes: 1024 * KB,
            ways: 4,
        };
        CacheModel::new(cpus, 32, 4096, l1, l2)
    }

    #[test]
    fn a_set_the_l2_lost_streams_back_from_a_shared_llc_until_both_cpus_outgrow_it() {
        let shapes = |cpus| {
            piii(cpus).with_llc(
                Shape {
                    bytes: 8 * 1024 * KB,
                    ways: 16,
                },
                vec![0; cpus],
            )
        };
        let mut c = shapes(2);
        c.touch(0, 1, 512 * KB);
        // 3 MB since on the same CPU: gone from its 1 MB L2, kept by the 8 MB LLC.
        for t in 2..8 {
            c.touch(0, t, 512 * KB);
        }
        let m = c.touch(0, 1, 512 * KB);
        assert!(m.from_llc > 16_384 * 95 / 100, "{m:?}");
        assert!(m.from_outside < 16_384 / 20, "{m:?}");
        // Out of CPU 0's L2 again, then the other CPU of the domain fills the shared
        // level (12 MB on CPU 1): task 1's set is gone from the LLC too. (CPU 1 alone
        // would not have evicted it from CPU 0's private L2.)
        for t in 2..6 {
            c.touch(0, t, 512 * KB);
        }
        for t in 10..34 {
            c.touch(1, t, 512 * KB);
        }
        let m = c.touch(0, 1, 512 * KB);
        assert!(m.from_outside > 16_384 * 95 / 100, "{m:?}");
        c.check().unwrap();
        // No LLC: the same first sequence finds nothing beyond the L2.
        let mut c = piii(1);
        c.touch(0, 1, 512 * KB);
        for t in 2..8 {
            c.touch(0, t, 512 * KB);
        }
        let m = c.touch(0, 1, 512 * KB);
        assert_eq!(m.from_llc, 0);
        assert!(m.from_outside > 16_384 * 95 / 100, "{m:?}");
    }

    #[test]
    fn a_set_moved_to_another_llc_domain_leaves_the_first_one() {
        let mut c = piii(2).with_llc(
            Shape {
                bytes: 8 * 1024 * KB,
                ways: 16,
            },
            vec![0, 1],
        );
        c.touch(0, 1, 256 * KB);
        c.touch(1, 1, 256 * KB);
        // Back on CPU 0 after 2 MB there: neither its L2 nor its LLC has it.
        for t in 2..6 {
            c.touch(0, t, 512 * KB);
        }
        let m = c.touch(0, 1, 256 * KB);
        assert_eq!(m.from_llc, 0, "{m:?}");
        assert_eq!(m.from_outside, 8_192, "{m:?}");
        c.check().unwrap();
    }

    #[test]
    fn a_resident_set_costs_nothing_and_others_push_it_out() {
        let mut c = piii(1);
        // Cold: every line from outside.
        assert_eq!(
            c.touch(0, 1, 64 * KB),
            Miss {
                from_l2: 0,
                from_outside: 2048,
                ..Miss::default()
            }
        );
        // Again: the L1 (16 KB) cannot hold a 64 KB pass, the L2 holds all of it.
        assert_eq!(
            c.touch(0, 1, 64 * KB),
            Miss {
                from_l2: 2048,
                from_outside: 0,
                ..Miss::default()
            }
        );
        // An 8 KB set twice in a row lives in L1.
        c.touch(0, 2, 8 * KB);
        assert_eq!(c.touch(0, 2, 8 * KB), Miss::default());
        // 3 MB of other sets since: task 1's lines are (almost) all gone, gradually —
        // after 512 KB most of them are still there.
        c.touch(0, 3, 512 * KB);
        let m = c.touch(0, 1, 64 * KB);
        assert!(m.from_outside > 0 && m.from_outside < 2048 / 4, "{m:?}");
        for t in 4..10 {
            c.touch(0, t, 512 * KB);
        }
        let m = c.touch(0, 1, 64 * KB);
        assert!(m.from_outside > 2048 * 99 / 100, "{m:?}");
        c.check().unwrap();
    }

    #[test]
    fn touching_on_another_cpu_invalidates() {
        let mut c = piii(2);
        c.touch(0, 7, 512);
        c.touch(1, 7, 512);
        assert_eq!(c.l2_resident(0, 7), 0);
        assert_eq!(c.l2_resident(1, 7), 512);
        assert_eq!(c.touch(0, 7, 512).from_outside, 16);
        c.forget(7);
        c.check().unwrap();
        assert_eq!(c.l2_resident(0, 7), 0);
        assert_eq!(c.entries(), 0);
    }

    #[test]
    fn the_kernel_footprint_does_not_shrink_the_user_set() {
        let mut c = piii(1);
        c.touch(0, 1, 8192);
        // A switch-in touches the task's 3 KB kernel footprint: a separate set.
        assert_eq!(c.touch_kernel(0, 1, 3072).from_outside, 96);
        assert_eq!(c.l2_resident(0, 1), 8192);
        assert_eq!(c.touch(0, 1, 8192), Miss::default());
        c.forget(1);
        c.check().unwrap();
    }

    // See: issue 14 item 7 — the rest of a cut pass pays for its own lines only.
    #[test]
    fn a_cut_pass_pays_for_the_rest_only() {
        let mut c = piii(1);
        // 64 KB: beyond the L1, and alone in the L2 it loses no line to its own colours.
        let ws = 64 * KB;
        let lines = ws / 32;
        // Cold pass cut at a quarter: the rest still misses all of its lines.
        let m = c.lookup(0, 1, ws, ws);
        assert_eq!(m.from_outside, lines);
        c.record(0, 1, ws, ws, ws / 4);
        let m = c.lookup(0, 1, ws, ws * 3 / 4);
        assert_eq!(m.from_outside, lines * 3 / 4);
        c.record(0, 1, ws, ws * 3 / 4, ws * 3 / 4);
        // The whole set is now resident in L2.
        assert_eq!(c.lookup(0, 1, ws, ws).from_outside, 0);
        // A warm pass cut in half: the rest is still warm.
        c.record(0, 1, ws, ws, ws / 2);
        assert_eq!(c.lookup(0, 1, ws, ws / 2).from_outside, 0);
        c.check().unwrap();
    }

    // See: issue 14 item 7 — 64 MB working sets: entries, not bytes, whatever the sizes.
    #[test]
    fn huge_sets_cost_entries_not_bytes() {
        let mut c = piii(2);
        for round in 0..5u32 {
            for t in 0..200u32 {
                let cpu = (t % 2) as usize;
                let m = c.touch(cpu, t, 64 << 20);
                assert!(m.from_outside >= (63 << 20) / 32, "round {round}: {m:?}");
                c.touch_kernel(cpu, t, 3072);
            }
        }
        // 400 sets per CPU: each level keeps at most its minimum 64 slots, since a
        // 64 MB pass leaves nothing below it within the horizon.
        for l in c.l1.iter().chain(c.l2.iter()) {
            assert!(
                l.entries() <= 64 && l.slots() == 64,
                "{} entries",
                l.entries()
            );
        }
        c.check().unwrap();
    }

    #[test]
    fn many_small_sets_keep_a_bounded_stack() {
        let mut c = piii(1);
        for i in 0..40_000u32 {
            c.touch(0, i % 20_000, 4 * KB);
        }
        // 4 KB sets: within the L2's horizon (44 × 8192 lines) fit 2 816 of them; a level
        // keeps at most twice that many slots.
        let within = (1024 * KB / 32 / 4) * (4 + 40) / 128 + 1;
        assert!(c.l2[0].slots() as u64 <= (2 * within).next_power_of_two());
        assert!(c.l2[0].entries() < 20_000);
        assert!(c.l1[0].slots() == 64);
        c.check().unwrap();
    }

    /// The comparison cases: (name, cache, passes). Caches are scaled down (64 KB and
    /// 256 KB, 4-way; 4 KB pages) so that the exact simulation stays fast.
    type Passes = Vec<(u32, u64)>;

    fn cases() -> Vec<(String, Case, Passes)> {
        let l1 = Case {
            bytes: 16 * KB,
            ways: 4,
        };
        let l2 = Case {
            bytes: 256 * KB,
            ways: 4,
        };
        let mut v = Vec::new();
        for (cname, c) in [("L1 16K/4", l1), ("L2 256K/4", l2)] {
            for frac in [4u64, 8, 16, 32, 64, 128] {
                // Per-task sets of frac/32 of the cache, for 2..8 tasks.
                let bytes = c.bytes * frac / 32;
                for tasks in [2u32, 4, 8] {
                    let rounds = (12 * c.bytes / (bytes * u64::from(tasks))).clamp(4, 12) as u32;
                    v.push((
                        format!("{cname} rr {tasks} x {} KB", bytes / KB),
                        c,
                        round_robin(tasks, bytes, rounds),
                    ));
                    v.push((
                        format!("{cname} random {tasks} x {} KB", bytes / KB),
                        c,
                        random_order(tasks, bytes, rounds * tasks, u64::from(tasks)),
                    ));
                }
            }
        }
        v
    }

    /// Model against exact LRU: the miss ratio (misses per line touched) of each case.
    /// Bounds (docs/model.md): the L2 (page colouring) within 0.07 of exact in every case
    /// and 0.03 on average; the L1 (uniform) exact but for sets smaller than a page
    /// filling it exactly (they do not cover its sets evenly: 0.31 worst).
    /// `cargo test -p schedlab --release cache::tests::error_table -- --nocapture` prints
    /// the table.
    #[test]
    fn error_table() {
        let mut worst = [0.0f64; 2];
        let mut sum = [0.0; 2];
        let mut n = [0; 2];
        for (name, c, passes) in &cases() {
            let touched: u64 = passes.iter().map(|p| p.1 / 32).sum();
            let m = model_misses(*c, passes) / touched as f64;
            let e = exact_misses(*c, passes, 3) / touched as f64;
            let err = (m - e).abs();
            println!("| {name} | {e:.3} | {m:.3} | {:+.3} |", m - e);
            let k = usize::from(c.bytes > 16 * KB);
            worst[k] = worst[k].max(err);
            sum[k] += err;
            n[k] += 1;
        }
        let mean = [sum[0] / n[0] as f64, sum[1] / n[1] as f64];
        println!(
            "worst L1 {:.3} L2 {:.3}; mean L1 {:.3} L2 {:.3}",
            worst[0], worst[1], mean[0], mean[1]
        );
        assert!(
            worst[1] <= 0.07 && mean[1] <= 0.03,
            "L2 error {worst:?} {mean:?}"
        );
        assert!(
            worst[0] <= 0.32 && mean[0] <= 0.02,
            "L1 error {worst:?} {mean:?}"
        );
    }
}
