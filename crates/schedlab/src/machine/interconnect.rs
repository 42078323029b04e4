//! Where a cache line comes from, and what moving it costs: the front-side buses and a
//! MESI-style directory of the lines scheduler code shares.
//!
//! Design: every line transfer — a miss to memory, a dirty line pulled from another CPU's
//! cache, an invalidation before a write — occupies slots on the buses it crosses
//! ([`Bus`]): the requester's front-side bus, and for a line held on the other ProFusion
//! bus that bus too (the crossbar itself is non-blocking, B§6.1). A transfer waits for a
//! free slot, so a miss costs more while other CPUs keep the bus busy. The directory keeps,
//! for each line scheduler code reads and writes — one line of each task's `task_struct`
//! (the fields `goodness()` reads: counter, nice, policy, mm, processor, run_list) and the
//! lines a class names (list heads, published per-queue values) — which CPU holds it
//! modified and which hold it shared. A read of a line another CPU wrote since this CPU
//! last read it is a cache-to-cache transfer, not an L2 hit — unless that CPU has since
//! evicted it: task lines are evicted LRU, `l2_bytes / 8 KB` of them per CPU, and a
//! dirty line evicted was written back, so it comes from memory.
//!
//! 2.4's counter recalculation reads and writes every task's line. The directory prices
//! only the lines held somewhere one by one and applies the rest of the walk lazily
//! ([`Interconnect::recalc_walk`]), so its cost to the simulator does not grow with the
//! tasks.
//!
//! Each mechanism can be switched off for ablation ([`Model`]): without the bus a
//! transfer costs its unloaded latency; without coherence every task examined costs one
//! memory miss (the flat model of B§6.3, "the scan misses L2 on almost every task").
//!
//! Invariants: a line has at most one owner, and an owner is its only sharer; bus slots
//! are given once (see [`Bus`]). The directory assumes named lines stay in L2 until
//! written elsewhere: they are few and hot; user working sets are the cache model's
//! ([`super::CacheModel`]). A task line whose `Lines::seen` is behind the recalculation
//! count holds what the last recalculation left: nobody's copy.

use crate::engine::Time;

use super::bus::{Bus, BusStats};
use super::tasklist::TaskList;
use super::{Costs, CpuId};

/// Which lock implementation spinlocks follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// 2.4 i386 `spin_lock`: `lock; decb`, then spin on a plain read until the byte is
    /// positive (test-and-test-and-set). A release invalidates every spinner's copy.
    Ttas,
    /// A FIFO ticket lock: one line transfer per hand-off whatever the spinners.
    Ticket,
}

/// The machine model's switchable mechanisms (`--machine NAME:bus=off,...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Model {
    /// Transfers occupy bus slots and queue.
    pub bus: bool,
    /// Spinlock implementation.
    pub lock: LockKind,
    /// Scheduler data lines are tracked per CPU (MESI directory).
    pub coherence: bool,
}

impl Default for Model {
    fn default() -> Model {
        Model {
            bus: true,
            lock: LockKind::Ttas,
            coherence: true,
        }
    }
}

/// A line a scheduling class names (a list head, a published per-queue value).
pub type LineId = u32;

/// Where a line access was served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// This CPU's cache holds the line in a state that allows the access.
    Hit,
    /// Main memory.
    Memory,
    /// Another CPU's cache, which held it modified.
    Cache(CpuId),
    /// A write to a line held shared: other copies are invalidated, no data moves.
    Upgrade {
        /// A sharer on another bus, if any (the lowest): the invalidation crosses to
        /// its bus.
        remote: Option<CpuId>,
    },
}

const NO_OWNER: u64 = u64::MAX;

/// The directory entries of a set of lines.
///
/// Layout: one entry per line, `1 + words` 64-bit words read together on every access:
/// the owner (the CPU holding it modified, then its only sharer, or `NO_OWNER`), then
/// the CPUs holding a copy, one bit each. `words` is sized to the CPUs booted (one word
/// up to 64 CPUs, as the directory always was; sixteen for 1024), not to the largest
/// machine.
#[derive(Default)]
struct Lines {
    /// Sharer words per line: `cpus.div_ceil(64)`.
    words: usize,
    dir: Vec<u64>,
    /// Per CPU, how many of these lines its L2 can hold (0: unbounded), and for each
    /// (line, CPU) the CPU's access count at the line's last access there: a line
    /// accessed `capacity` accesses ago or more has been evicted (LRU by access count).
    capacity: u32,
    cpus: usize,
    clock: Vec<u32>,
    /// Up to 64 CPUs: `stamp[line * cpus + cpu]`, dense.
    stamp: Vec<u32>,
    /// Past 64 CPUs the stamps are paged, 64 CPUs (one sharer word) to a page, a page
    /// made when a CPU of its word first touches the line: `page[line * words + w]` is
    /// 1 + the page's index in `pool`, 0 for none (all stamps 0, as a dense array
    /// starts). A task line is touched by few CPUs, so 100 000 tasks on 1024 CPUs take
    /// tens of MB, not the 400 MB of a dense table.
    page: Vec<u32>,
    pool: Vec<[u32; 64]>,
    /// Task lines only (`lazy`): what 2.4's counter recalculation left, applied when a
    /// line is next accessed ([`Interconnect::recalc_walk`]). `seen[line]` is the
    /// recalculation count the entry is up to date with, or [`UNLISTED`] for a line
    /// that is not in the task list (an idle task's, an exited one's), which no
    /// recalculation walks.
    lazy: bool,
    seen: Vec<u32>,
    /// Recalculations so far.
    epoch: u32,
    /// The lines brought up to date since the last recalculation: every line whose
    /// entry may hold a copy anywhere is among them (or unlisted).
    touched: Vec<u32>,
    /// The task list, in the order a recalculation walks it.
    listed: TaskList,
}

/// [`Lines`]' vectors for a walk ([`Lines::each_dense`]).
struct Parts<'a> {
    dir: &'a mut [u64],
    stamp: &'a mut [u32],
    seen: &'a mut [u32],
    touched: &'a mut Vec<u32>,
    clock: &'a [u32],
}

/// A run of a walk's memory reads being gathered, to be priced as one paced stream:
/// its length and the time of its first read.
#[derive(Default)]
struct MissRun {
    lines: u64,
    start: Time,
}

impl MissRun {
    /// `m` more reads from `now`, each `pace` after the previous one; `now` moves past
    /// them (their queueing is added when the run is priced).
    fn extend(&mut self, m: u64, now: &mut Time, pace: Time) {
        if m == 0 {
            return;
        }
        if self.lines == 0 {
            self.start = *now;
        }
        self.lines += m;
        *now += m * pace;
    }
}

/// `Lines::seen` of a line no recalculation walks.
const UNLISTED: u32 = u32::MAX;

/// The stamp of (line `i`, `cpu`) in a paged table, its page made if need be.
#[inline]
fn paged_stamp<'a>(
    page: &mut [u32],
    pool: &'a mut Vec<[u32; 64]>,
    words: usize,
    i: usize,
    cpu: CpuId,
) -> &'a mut u32 {
    let slot = &mut page[i * words + (cpu >> 6)];
    if *slot == 0 {
        pool.push([0; 64]);
        *slot = pool.len() as u32;
    }
    &mut pool[*slot as usize - 1][cpu & 63]
}

/// Bit of `cpu` in its sharer word: (word index, bit).
#[inline(always)]
fn bit(cpu: CpuId) -> (usize, u64) {
    (cpu >> 6, 1u64 << (cpu & 63))
}

impl Lines {
    fn new(cpus: usize, capacity: u32) -> Lines {
        Lines {
            words: cpus.div_ceil(64).max(1),
            capacity,
            cpus,
            clock: vec![0; cpus],
            ..Lines::default()
        }
    }

    /// Lines with entries.
    fn len(&self) -> usize {
        self.dir.len() / (1 + self.words)
    }

    /// Make room for line `i` (a new task, a new name): off the access path.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: usize) {
        let stride = 1 + self.words;
        let old = self.len();
        self.dir.resize((i + 1) * stride, 0);
        for l in old..=i {
            self.dir[l * stride] = NO_OWNER;
        }
        if self.capacity > 0 {
            if self.words == 1 {
                self.stamp.resize((i + 1) * self.cpus, 0);
            } else {
                self.page.resize((i + 1) * self.words, 0);
            }
        }
        if self.lazy {
            self.seen.resize(i + 1, UNLISTED);
        }
    }

    /// Bring line `i`'s entry up to date: a listed line that a recalculation walked
    /// since it was last accessed holds what the walk left, nobody's copy (see
    /// [`Interconnect::recalc_walk`]). A no-op for named lines.
    #[inline(always)]
    fn freshen(&mut self, i: usize) {
        if let Some(s) = self.seen.get_mut(i) {
            if *s < self.epoch {
                *s = self.epoch;
                self.touched.push(i as u32);
                let stride = 1 + self.words;
                let e = &mut self.dir[i * stride..(i + 1) * stride];
                e[0] = NO_OWNER;
                e[1..].fill(0);
            }
        }
    }

    /// Task line `i` joins the task list (a task created).
    fn list(&mut self, i: usize) {
        let stride = 1 + self.words;
        if (i + 1) * stride > self.dir.len() {
            self.grow(i);
        }
        self.listed.insert(i as u32);
        if self.lazy {
            self.seen[i] = self.epoch;
            self.touched.push(i as u32);
        }
    }

    /// `cpu` holds line `i` modified, its only copy, last accessed at `stamp` of its
    /// access count.
    fn own(&mut self, i: usize, cpu: CpuId, stamp: u32) {
        let stride = 1 + self.words;
        let e = &mut self.dir[i * stride..(i + 1) * stride];
        let (w, me) = bit(cpu);
        e[0] = cpu as u64;
        e[1..].fill(0);
        e[1 + w] = me;
        if self.words == 1 {
            self.stamp[i * self.cpus + cpu] = stamp;
        } else {
            *paged_stamp(&mut self.page, &mut self.pool, self.words, i, cpu) = stamp;
        }
    }

    /// Line `i`'s entry after `cpu` accessed it: LRU eviction of `cpu`'s copy applied
    /// (a dirty copy is written back), then the access recorded. `[owner, sharers...]`.
    #[inline(always)]
    fn touch(&mut self, i: usize, cpu: CpuId) -> &mut [u64] {
        let stride = 1 + self.words;
        if (i + 1) * stride > self.dir.len() {
            self.grow(i);
        }
        self.freshen(i);
        let e = &mut self.dir[i * stride..(i + 1) * stride];
        if self.capacity != 0 {
            let now = self.clock[cpu];
            let stamp = if self.words == 1 {
                &mut self.stamp[i * self.cpus + cpu]
            } else {
                paged_stamp(&mut self.page, &mut self.pool, self.words, i, cpu)
            };
            let (w, me) = bit(cpu);
            if e[1 + w] & me != 0 && now.wrapping_sub(*stamp) >= self.capacity {
                // Evicted since: a dirty copy was written back.
                e[1 + w] &= !me;
                if e[0] == cpu as u64 {
                    e[0] = NO_OWNER;
                }
            }
            let now = now.wrapping_add(1);
            *stamp = now;
            self.clock[cpu] = now;
        }
        e
    }

    /// Before `cpu` accesses line `i`: if another CPU owns it but has since evicted its
    /// copy (LRU by access count, as `touch` finds for the accessing CPU), the dirty line
    /// was written back and is nobody's: it comes from memory, not from that cache.
    #[inline(always)]
    fn settle(&mut self, i: usize, cpu: CpuId) {
        let stride = 1 + self.words;
        let o = self.dir[i * stride];
        if self.capacity == 0 || o == NO_OWNER || o == cpu as u64 {
            return;
        }
        let o = o as CpuId;
        let stamp = if self.words == 1 {
            self.stamp[i * self.cpus + o]
        } else {
            match self.page[i * self.words + (o >> 6)] {
                0 => 0,
                pg => self.pool[pg as usize - 1][o & 63],
            }
        };
        if self.clock[o].wrapping_sub(stamp) >= self.capacity {
            let (w, b) = bit(o);
            self.dir[i * stride] = NO_OWNER;
            self.dir[i * stride + 1 + w] &= !b;
        }
    }

    /// `cpu` holds a copy of line `i`. Where lines are never evicted (`capacity` 0, the
    /// named lines) a read by it is then a hit that changes nothing.
    #[inline(always)]
    fn holds(&self, i: usize, cpu: CpuId) -> bool {
        debug_assert_eq!(self.capacity, 0, "a bounded cache's hit moves its stamp");
        let (w, me) = bit(cpu);
        self.dir
            .get(i * (1 + self.words) + 1 + w)
            .is_some_and(|&s| s & me != 0)
    }

    #[inline(always)]
    fn read(&mut self, i: usize, cpu: CpuId) -> Source {
        self.touch(i, cpu);
        self.settle(i, cpu);
        let stride = 1 + self.words;
        let e = &mut self.dir[i * stride..(i + 1) * stride];
        let (w, me) = bit(cpu);
        if e[1 + w] & me != 0 {
            return Source::Hit;
        }
        let o = e[0];
        e[0] = NO_OWNER;
        e[1 + w] |= me;
        if o == NO_OWNER {
            Source::Memory
        } else {
            Source::Cache(o as CpuId)
        }
    }

    /// [`Lines::read`] of each line of `lines` in order by `cpu`, each source handed to
    /// `served` as it is found (the caller prices it before the next read). Up to 64
    /// CPUs with bounded caches (every task-line walk on the presets up to 64 CPUs) it
    /// is one [`Lines::each_dense`] walk.
    #[inline(always)]
    fn read_each(
        &mut self,
        cpu: CpuId,
        lines: impl IntoIterator<Item = u32>,
        mut served: impl FnMut(Source),
    ) {
        if self.words != 1 || self.capacity == 0 {
            for i in lines {
                served(self.read(i as usize, cpu));
            }
            return;
        }
        let (capacity, me) = (self.capacity, 1u64 << cpu);
        self.each_dense(cpu, lines, |e, stamp, now| {
            // `touch` then `read`, with one sharer word: `[owner, sharers]`.
            let mut sharers = e[1];
            let held = sharers & me != 0;
            let evicted = held && now.wrapping_sub(*stamp) >= capacity;
            *now = now.wrapping_add(1);
            *stamp = *now;
            if held && !evicted {
                served(Source::Hit);
                return;
            }
            if evicted && e[0] == cpu as u64 {
                // A dirty copy was written back.
                e[0] = NO_OWNER;
            }
            sharers |= me;
            let o = std::mem::replace(&mut e[0], NO_OWNER);
            e[1] = sharers;
            served(if o == NO_OWNER {
                Source::Memory
            } else {
                Source::Cache(o as CpuId)
            });
        });
    }

    /// The walk of [`Lines::read_each`] up to 64 CPUs with
    /// bounded caches: each line of `lines` in order, its entry `[owner, sharers]` and
    /// `cpu`'s stamp of it handed to `visit` with `cpu`'s running clock. The per-walk
    /// state is loaded once and the clock written back once, not per line: a walk of a
    /// queue longer than the L2 holds is mostly misses, each a few instructions.
    #[inline(always)]
    fn each_dense(
        &mut self,
        cpu: CpuId,
        lines: impl IntoIterator<Item = u32>,
        mut visit: impl FnMut(&mut [u64], &mut u32, &mut u32),
    ) {
        let (cpus, capacity, epoch) = (self.cpus, self.capacity, self.epoch);
        let mut now = self.clock[cpu];
        let mut p = self.parts();
        for i in lines {
            let i = i as usize;
            if 2 * i + 2 > p.dir.len() {
                self.grow(i);
                p = self.parts();
            }
            let e = &mut p.dir[2 * i..2 * i + 2];
            // `freshen`.
            if let Some(s) = p.seen.get_mut(i) {
                if *s < epoch {
                    *s = epoch;
                    p.touched.push(i as u32);
                    e[0] = NO_OWNER;
                    e[1] = 0;
                }
            }
            // `settle`: an owner that has evicted its copy wrote it back.
            let o = e[0];
            if o != NO_OWNER && o != cpu as u64 {
                let o = o as usize;
                if p.clock[o].wrapping_sub(p.stamp[i * cpus + o]) >= capacity {
                    e[0] = NO_OWNER;
                    e[1] &= !(1u64 << o);
                }
            }
            visit(e, &mut p.stamp[i * cpus + cpu], &mut now);
        }
        self.clock[cpu] = now;
    }

    /// The vectors a dense walk reads and writes, borrowed apart.
    #[inline(always)]
    fn parts(&mut self) -> Parts<'_> {
        Parts {
            dir: &mut self.dir,
            stamp: &mut self.stamp,
            seen: &mut self.seen,
            touched: &mut self.touched,
            clock: &self.clock,
        }
    }

    /// A write by `cpu`; `mine_bus` is the mask of the CPUs on `cpu`'s bus (`words`
    /// words). A write to a line shared beyond the bus names the lowest such sharer.
    #[inline(always)]
    fn write(&mut self, i: usize, cpu: CpuId, mine_bus: &[u64]) -> Source {
        self.touch(i, cpu);
        self.settle(i, cpu);
        let stride = 1 + self.words;
        let e = &mut self.dir[i * stride..(i + 1) * stride];
        let (w, me) = bit(cpu);
        let o = e[0];
        let was_sharer = e[1 + w] & me != 0;
        e[1 + w] &= !me;
        // The other sharers, and the first of them off this CPU's bus.
        let mut others = false;
        let mut remote = None;
        for (k, (s, &bus)) in e[1..].iter_mut().zip(mine_bus).enumerate() {
            if *s != 0 {
                others = true;
                let off = *s & !bus;
                if off != 0 && remote.is_none() {
                    remote = Some(k * 64 + off.trailing_zeros() as usize);
                }
                *s = 0;
            }
        }
        e[0] = cpu as u64;
        e[1 + w] = me;
        if o == cpu as u64 {
            Source::Hit
        } else if o != NO_OWNER {
            Source::Cache(o as CpuId)
        } else if was_sharer {
            if !others {
                // Exclusive clean copy: a silent upgrade.
                return Source::Hit;
            }
            Source::Upgrade { remote }
        } else {
            Source::Memory
        }
    }

    /// Line `i`'s task exited: its entry is cleared and it leaves the task list.
    fn forget(&mut self, i: usize) {
        let stride = 1 + self.words;
        if let Some(e) = self.dir.get_mut(i * stride..(i + 1) * stride) {
            e[0] = NO_OWNER;
            e[1..].fill(0);
        }
        self.listed.remove(i as u32);
        if let Some(s) = self.seen.get_mut(i) {
            *s = UNLISTED;
        }
    }

    /// Check every entry: an owner is its line's only sharer.
    fn check(&self, what: &str) -> Result<(), String> {
        for (i, e) in self.dir.chunks(1 + self.words).enumerate() {
            let o = e[0];
            if o == NO_OWNER {
                continue;
            }
            let (w, me) = bit(o as CpuId);
            let only = e[1..]
                .iter()
                .enumerate()
                .all(|(k, &s)| s == if k == w { me } else { 0 });
            if !only {
                return Err(format!(
                    "{what} line {i}: owner cpu {o} but sharers {:x?}",
                    &e[1..]
                ));
            }
        }
        Ok(())
    }
}

/// Counters of line traffic over a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TrafficStats {
    /// Scheduler-line reads and writes the modelled kernel made (a recalculation
    /// counts a read and a write per task, though it looks up only the lines held
    /// somewhere).
    pub line_accesses: u64,
    /// Of which served by this CPU's cache.
    pub line_hits: u64,
    /// Line transfers from another CPU's cache (scheduler lines, locks, copies).
    pub c2c_transfers: u64,
    /// Of which across the two buses.
    pub cross_bus_transfers: u64,
    /// Line reads from memory (scheduler lines and locks; working-set refills are
    /// counted by the bus only).
    pub memory_reads: u64,
    /// Invalidations without data (writes to shared lines).
    pub invalidations: u64,
}

/// The buses and the directory of a booted machine.
pub struct Interconnect {
    model: Model,
    /// Lines the recalculation walks priced one by one, over all of them: the
    /// simulator's work, against the `nr_threads` per walk the modelled kernel does.
    recalc_lines_named: u64,
    /// Each CPU's bus: a lookup, not a division, on every transfer.
    bus_index: Vec<u16>,
    costs: &'static Costs,
    buses: Vec<Bus>,
    /// Per bus, the CPUs `bus_of` puts on it: `tasks.words` words each, bus `b` at
    /// `b * words`.
    bus_masks: Vec<u64>,
    tasks: Lines,
    named: Lines,
    names: Vec<&'static str>,
    /// Counters.
    pub stats: TrafficStats,
}

impl Interconnect {
    /// The interconnect of `cpus` CPUs, `cpus_per_bus` to a bus.
    pub fn new(cpus: usize, cpus_per_bus: usize, costs: &'static Costs, model: Model) -> Self {
        let nbus = cpus.div_ceil(cpus_per_bus);
        Interconnect {
            model,
            recalc_lines_named: 0,
            bus_index: {
                assert!(cpus_per_bus > 0, "a bus holds a CPU");
                (0..cpus).map(|c| (c / cpus_per_bus) as u16).collect()
            },
            costs,
            buses: (0..nbus).map(|_| Bus::new(costs.bus_slot_ns)).collect(),
            bus_masks: {
                let words = cpus.div_ceil(64).max(1);
                let mut m = vec![0u64; nbus * words];
                for c in 0..cpus {
                    m[(c / cpus_per_bus) * words + c / 64] |= 1u64 << (c % 64);
                }
                m
            },
            // 2.4 i386 puts each task_struct at the base of its 8 KB kernel stack, so the
            // same line of every task_struct maps to the same few L2 sets: an L2 holds
            // at most l2_bytes / 8 KB of them whatever its associativity.
            tasks: {
                let mut l = Lines::new(cpus, (costs.l2_bytes / costs.task_align_bytes) as u32);
                // A recalculation can be applied lazily only where its walk evicts.
                l.lazy = l.capacity > 0;
                l
            },
            named: Lines::new(cpus, 0),
            // Lines 0..cpus: each CPU's `curr` (2.4 `aligned_data[cpu].schedule_data`,
            // 2.6 `rq->curr`), written by that CPU at every switch.
            names: vec!["cpu_curr"; cpus],
            stats: TrafficStats::default(),
        }
    }

    /// The line holding `cpu`'s current task pointer.
    pub fn curr_line(cpu: CpuId) -> LineId {
        cpu as LineId
    }

    /// The mechanisms switched on.
    pub fn model(&self) -> Model {
        self.model
    }

    #[inline]
    fn bus_of(&self, cpu: CpuId) -> usize {
        usize::from(self.bus_index[cpu])
    }

    /// Counters of each bus.
    pub fn bus_stats(&self) -> impl Iterator<Item = &BusStats> {
        self.buses.iter().map(|b| &b.stats)
    }

    /// Put `slots` slots on bus `b` at `t`; the extra wait over an idle bus.
    #[inline]
    fn on_bus(&mut self, b: usize, t: Time, slots: u64) -> Time {
        if !self.model.bus {
            return 0;
        }
        self.buses[b].occupy_many(t, slots)
    }

    /// Cost, at time `t`, of an access served from `src` by `cpu`: unloaded latency plus
    /// queueing on the buses it crosses.
    #[inline]
    pub fn serve(&mut self, t: Time, cpu: CpuId, src: Source) -> Time {
        // Most scheduler-line accesses hit; keep that path small enough to inline into
        // a run-queue walk and the rest out of line.
        if src == Source::Hit {
            self.stats.line_hits += 1;
            self.costs.l2_line_ns
        } else {
            self.serve_transfer(t, cpu, src)
        }
    }

    /// [`Interconnect::serve`] for everything but a hit.
    #[inline(never)]
    fn serve_transfer(&mut self, t: Time, cpu: CpuId, src: Source) -> Time {
        let c = self.costs;
        let line = c.line_slots;
        let mine = self.bus_of(cpu);
        match src {
            Source::Hit => unreachable!("a hit is served inline"),
            Source::Memory => {
                self.stats.memory_reads += 1;
                c.mem_latency_ns + self.on_bus(mine, t, line)
            }
            Source::Cache(o) => {
                self.stats.c2c_transfers += 1;
                let theirs = self.bus_of(o);
                if theirs == mine {
                    c.c2c_line_ns + self.on_bus(mine, t, line)
                } else {
                    self.stats.cross_bus_transfers += 1;
                    let q = self.on_bus(theirs, t, line);
                    c.c2c_cross_bus_line_ns + q + self.on_bus(mine, t + q, line)
                }
            }
            Source::Upgrade { remote } => {
                self.stats.invalidations += 1;
                let q = self.on_bus(mine, t, 1);
                if let Some(r) = remote {
                    let other = self.bus_of(r);
                    c.upgrade_ns
                        + (c.c2c_cross_bus_line_ns - c.c2c_line_ns)
                        + q
                        + self.on_bus(other, t + q, 1)
                } else {
                    c.upgrade_ns + q
                }
            }
        }
    }

    /// Move one line last written on `from` (memory when `None` or this CPU) to `cpu`.
    pub fn transfer(&mut self, t: Time, from: Option<CpuId>, cpu: CpuId) -> Time {
        match from {
            Some(o) if o != cpu => self.serve(t, cpu, Source::Cache(o)),
            Some(_) => 0,
            None => self.serve(t, cpu, Source::Memory),
        }
    }

    /// `lines` lines last written on `from` (another CPU), read by `cpu` one after the
    /// other, each read issued when the previous line arrived: what as many
    /// [`Interconnect::transfer`]s in a row cost, and the same slots, waits and counters.
    /// The run is one paced stream: on one bus [`Bus::occupy_paced`]; across the buses
    /// [`Bus::occupy_paced_after`], each line queueing on the other bus and then, once
    /// its slots there started, on this one.
    pub fn transfer_run(&mut self, t: Time, from: CpuId, cpu: CpuId, lines: u64) -> Time {
        let (mine, theirs) = (self.bus_of(cpu), self.bus_of(from));
        let slots = self.costs.line_slots;
        self.stats.c2c_transfers += lines;
        if theirs == mine {
            let latency = self.costs.c2c_line_ns;
            let wait = if self.model.bus {
                self.buses[mine].occupy_paced(t, lines, slots, latency)
            } else {
                0
            };
            return lines * latency + wait;
        }
        self.stats.cross_bus_transfers += lines;
        let latency = self.costs.c2c_cross_bus_line_ns;
        let wait = if self.model.bus {
            let (this, that) = self.bus_pair(mine, theirs);
            this.occupy_paced_after(that, t, lines, slots, latency)
        } else {
            0
        };
        lines * latency + wait
    }

    /// Buses `a` and `b` (two different ones), mutably.
    fn bus_pair(&mut self, a: usize, b: usize) -> (&mut Bus, &mut Bus) {
        let (lo, hi) = self.buses.split_at_mut(a.max(b));
        if a < b {
            (&mut lo[a], &mut hi[0])
        } else {
            (&mut hi[0], &mut lo[b])
        }
    }

    /// A stream of `lines` line transfers into `cpu` (a refill or a copy) that the core
    /// overlaps at its own pace: returns only the extra time lost to queueing.
    ///
    /// The stream asks for one line at a time, at the rate its source serves it (memory:
    /// `mem_line_ns`, B§6.3's ≈ 370 MB/s of one CPU; another cache: a line transfer), and
    /// never for two bus transactions back to back: P6 bus agents take turns (rotating
    /// priority), so a request from another CPU waits for at most the transaction in
    /// progress, not for the whole stream. A line held up by the bus delays the rest.
    pub fn stream(&mut self, t: Time, lines: u64, from: Option<CpuId>, cpu: CpuId) -> Time {
        if !self.model.bus || lines == 0 {
            return 0;
        }
        let c = self.costs;
        let mine = self.bus_of(cpu);
        let theirs = from.map(|o| self.bus_of(o)).filter(|&b| b != mine);
        let serve = match from {
            Some(o) if o != cpu => {
                if theirs.is_some() {
                    c.c2c_cross_bus_line_ns
                } else {
                    c.c2c_line_ns
                }
            }
            _ => c.mem_line_ns,
        };
        let slots = c.line_slots;
        let busy = slots * self.buses[mine].slot_ns();
        let pace = serve.max(2 * busy);
        match theirs {
            None => self.buses[mine].occupy_paced(t, lines, slots, pace),
            // Across buses each line needs its slots on both.
            Some(b) => {
                let (this, that) = self.bus_pair(mine, b);
                this.occupy_paced_with(Some(that), t, lines, slots, pace)
            }
        }
    }

    /// `cpu` reads task `p`'s scheduler line at `t`: the access's cost.
    // A run-queue walk calls this once per task: inlined there, the directory's vectors
    // stay in registers across the walk.
    #[inline(always)]
    pub fn read_task(&mut self, t: Time, cpu: CpuId, p: u32) -> Time {
        if !self.model.coherence {
            return self.serve_transfer(t, cpu, Source::Memory);
        }
        self.stats.line_accesses += 1;
        let src = self.tasks.read(p as usize, cpu);
        self.serve(t, cpu, src)
    }

    /// A run-queue walk by `cpu` from `t`: each task of `tasks` in order is examined
    /// (`examine_ns` of `goodness()`) and its scheduler line read, each read made when
    /// the walk reaches it. Returns the walk's cost: what [`Interconnect::read_task`] per
    /// task, each priced at the walk's moment, adds up to.
    ///
    /// A run of reads that miss to memory is one paced stream on this CPU's bus
    /// ([`Bus::occupy_paced`]: the same slots, waits and counters as one request per
    /// line), so a walk over a queue longer than the L2 holds of task lines costs one bus
    /// calendar walk, not one lookup per task.
    // Inlined into each run-queue walk (`pick_next_task`), as `read_task` is: left to the
    // heuristics it was taken out of line there when another walk was added beside it.
    #[inline(always)]
    pub fn read_tasks(
        &mut self,
        t: Time,
        cpu: CpuId,
        tasks: impl IntoIterator<Item = u32, IntoIter: ExactSizeIterator>,
        examine_ns: Time,
    ) -> Time {
        let miss_pace = examine_ns + self.costs.mem_latency_ns;
        if !self.model.coherence {
            // Only their number: not a walk of the tasks (2.4's run list has its length).
            let n = tasks.into_iter().len() as u64;
            return n * miss_pace + self.memory_run(t, cpu, n, miss_pace);
        }
        let mut now = t;
        let (mut run, mut run_start) = (0, t);
        // The directory is taken out for the walk, so that the buses are charged as it
        // goes (each read priced at its moment) while the walk holds its entries.
        let mut lines = std::mem::take(&mut self.tasks);
        lines.read_each(cpu, tasks, |src| {
            self.stats.line_accesses += 1;
            match src {
                Source::Memory => {
                    if run == 0 {
                        run_start = now;
                    }
                    run += 1;
                    now += miss_pace;
                }
                src => {
                    if run > 0 {
                        now += self.memory_run(run_start, cpu, run, miss_pace);
                        run = 0;
                    }
                    now += examine_ns + self.serve(now, cpu, src);
                }
            }
        });
        self.tasks = lines;
        if run > 0 {
            now += self.memory_run(run_start, cpu, run, miss_pace);
        }
        now - t
    }

    /// Task `p` joins the task list, which a recalculation walks ([`Interconnect::recalc_walk`]).
    pub fn list_task(&mut self, p: u32) {
        self.tasks.list(p as usize);
    }

    /// Lines the recalculation walks have priced one by one so far (the rest of each
    /// walk is priced as memory streams).
    pub fn recalc_lines_named(&self) -> u64 {
        self.recalc_lines_named
    }

    /// Tasks in the task list.
    pub fn listed_tasks(&self) -> u64 {
        self.tasks.listed.len()
    }

    /// 2.4's counter recalculation by `cpu` from `t` (schedulers.md §1.7 step 6): each
    /// task of the task list, in id order, is examined (`examine_ns`), its scheduler line
    /// read and then written (the new counter). Returns the walk's cost: what
    /// [`Interconnect::read_task`] then [`Interconnect::write_task`] per task, each
    /// priced at the walk's moment, add up to; the directory is left as they leave it.
    ///
    /// The walk covers every task in the system, far more than an L2 holds of task
    /// lines, and most of its lines are nobody's: each such line is a read from memory
    /// and a write that hits (this CPU is then its only holder). A run of them is one
    /// paced stream on this CPU's bus, each next read `examine_ns`, the miss and the hit
    /// after the previous one was served. So only the lines held somewhere need pricing
    /// one by one: those accessed since the last recalculation (`Lines::touched`), found
    /// at their positions in the walk through the task list's ranks. The rest cost the
    /// simulator nothing per task.
    ///
    /// What the walk leaves is applied lazily, and is exact by LRU: every line it wrote
    /// is this CPU's, and all but the last `capacity / 2` (two accesses each) are
    /// evicted again by the time the walk ends. Evicted dirty lines were written back, so
    /// they are nobody's (`Lines::settle`); those are reset when next accessed
    /// (`Lines::freshen`), and only the last ones are written here. Without the coherence
    /// model the walk is [`Interconnect::read_write_count`]'s: one paced memory run.
    #[inline(never)]
    pub fn recalc_walk(&mut self, t: Time, cpu: CpuId, examine_ns: Time) -> Time {
        let n = self.tasks.listed.len();
        if !self.model.coherence {
            return self.read_write_count(t, cpu, n, examine_ns);
        }
        let miss_pace = examine_ns + self.costs.mem_latency_ns + self.costs.l2_line_ns;
        let mut now = t;
        let mut misses = MissRun::default();
        // The directory (and the bus masks a write reads) are taken out for the walk, so
        // that the buses are charged as it goes.
        let mut lines = std::mem::take(&mut self.tasks);
        let masks = std::mem::take(&mut self.bus_masks);
        let (w, b) = (lines.words, self.bus_of(cpu) * lines.words);
        let mine_bus = &masks[b..b + w];
        // The lines to price one by one, in walk order: those that may be held anywhere
        // (without the lazy scheme, every listed line).
        let mut held = std::mem::take(&mut lines.touched);
        if lines.lazy {
            held.retain(|&i| lines.listed.contains(i));
            held.sort_unstable();
            held.dedup();
        } else {
            held.clear();
            held.extend(lines.listed.iter());
        }
        self.recalc_lines_named += held.len() as u64;
        let start = lines.clock[cpu];
        let mut next = 0; // the walk position after the last line priced
        for &i in &held {
            let k = lines.listed.rank(i);
            // Lines before `i` since the last one priced: nobody's, a memory read and a
            // write hit each.
            self.stats.line_hits += k - next;
            misses.extend(k - next, &mut now, miss_pace);
            next = k + 1;
            // Line `i` at its position: this CPU's access count as the walk reaches it.
            lines.clock[cpu] = start.wrapping_add(2 * k as u32);
            let read = lines.read(i as usize, cpu);
            let write = lines.write(i as usize, cpu, mine_bus);
            if (read, write) == (Source::Memory, Source::Hit) {
                self.stats.line_hits += 1;
                misses.extend(1, &mut now, miss_pace);
                continue;
            }
            now += self.close_run(&mut misses, cpu, miss_pace);
            now += examine_ns + self.serve(now, cpu, read);
            now += self.serve(now, cpu, write);
        }
        self.stats.line_hits += n - next;
        misses.extend(n - next, &mut now, miss_pace);
        now += self.close_run(&mut misses, cpu, miss_pace);
        self.stats.line_accesses += 2 * n;
        lines.clock[cpu] = start.wrapping_add(2 * n as u32);
        held.clear();
        lines.touched = held;
        if lines.lazy {
            // Every listed line is now this CPU's; all but the last `tail` evicted again.
            lines.epoch += 1;
            let tail = n.min(u64::from(lines.capacity).div_ceil(2));
            for k in n - tail..n {
                let i = lines.listed.select(k) as usize;
                lines.own(i, cpu, start.wrapping_add(2 * (k as u32 + 1)));
                lines.seen[i] = lines.epoch;
                lines.touched.push(i as u32);
            }
        }
        self.tasks = lines;
        self.bus_masks = masks;
        now - t
    }

    /// [`Interconnect::recalc_walk`] over `n` tasks without the coherence model: each
    /// task one memory miss, whichever it is (B§6.3's flat model). Not `read_tasks`
    /// itself: a second caller would take it out of line from the run-queue walks
    /// (`pick_next_task`), where it is inlined.
    pub fn read_write_count(&mut self, t: Time, cpu: CpuId, n: u64, examine_ns: Time) -> Time {
        debug_assert!(!self.model.coherence);
        let pace = examine_ns + self.costs.mem_latency_ns;
        n * pace + self.memory_run(t, cpu, n, pace)
    }

    /// Price the gathered run of memory reads (nothing if empty) and start a new one:
    /// its queueing on `cpu`'s bus.
    fn close_run(&mut self, run: &mut MissRun, cpu: CpuId, pace: Time) -> Time {
        let r = std::mem::take(run);
        if r.lines == 0 {
            return 0;
        }
        self.memory_run(r.start, cpu, r.lines, pace)
    }

    /// `lines` reads from memory by `cpu`, the first at `t` and each next one `pace`
    /// after the previous one was served: their queueing on `cpu`'s bus.
    fn memory_run(&mut self, t: Time, cpu: CpuId, lines: u64, pace: Time) -> Time {
        self.stats.memory_reads += lines;
        if !self.model.bus {
            return 0;
        }
        let mine = self.bus_of(cpu);
        let slots = self.costs.line_slots;
        self.buses[mine].occupy_paced(t, lines, slots, pace)
    }

    /// `cpu` writes task `p`'s scheduler line at `t`: the access's cost (0 without the
    /// coherence model, whose flat costs include the writes).
    #[inline]
    pub fn write_task(&mut self, t: Time, cpu: CpuId, p: u32) -> Time {
        if !self.model.coherence {
            return 0;
        }
        self.stats.line_accesses += 1;
        let w = self.tasks.words;
        let b = self.bus_of(cpu) * w;
        let src = self.tasks.write(p as usize, cpu, &self.bus_masks[b..b + w]);
        self.serve(t, cpu, src)
    }

    /// Forget an exited task's line.
    pub fn forget_task(&mut self, p: u32) {
        self.tasks.forget(p as usize);
    }

    /// Name a new shared line (at a class's `init`).
    pub fn new_line(&mut self, name: &'static str) -> LineId {
        self.names.push(name);
        (self.names.len() - 1) as LineId
    }

    /// `cpu` reads the named line `l` at `t`.
    ///
    /// A read of a line already held (a published value re-read, another CPU's `curr`
    /// unchanged since) changes no entry, named lines being never evicted: it is priced
    /// here, inlined into the caller; the rest out of line.
    #[inline(always)]
    pub fn read_line(&mut self, t: Time, cpu: CpuId, l: LineId) -> Time {
        if !self.model.coherence {
            return 0;
        }
        self.stats.line_accesses += 1;
        if self.named.holds(l as usize, cpu) {
            self.stats.line_hits += 1;
            return self.costs.l2_line_ns;
        }
        self.read_line_fetch(t, cpu, l)
    }

    /// [`Interconnect::read_line`] of a line `cpu` does not hold.
    #[inline(never)]
    fn read_line_fetch(&mut self, t: Time, cpu: CpuId, l: LineId) -> Time {
        let src = self.named.read(l as usize, cpu);
        self.serve(t, cpu, src)
    }

    /// `cpu` writes the named line `l` at `t`.
    #[inline]
    pub fn write_line(&mut self, t: Time, cpu: CpuId, l: LineId) -> Time {
        if !self.model.coherence {
            return 0;
        }
        self.stats.line_accesses += 1;
        let w = self.named.words;
        let b = self.bus_of(cpu) * w;
        let src = self.named.write(l as usize, cpu, &self.bus_masks[b..b + w]);
        self.serve(t, cpu, src)
    }

    /// `cpu`'s locked operation at `t` on a spinlock living on the named line `l` (a
    /// `lock; decb`, a `spin_trylock`'s test-and-set, the release store): a write, whose
    /// hit costs nothing beyond the operation (`lock_ns` prices a locked op on a line in
    /// this CPU's cache, as for a lock of its own re-taken by its last holder), and
    /// otherwise the read-for-ownership from wherever the line is. 0 without the coherence
    /// model (the lock then follows its last holder, as every lock does).
    #[inline]
    pub fn lock_line(&mut self, t: Time, cpu: CpuId, l: LineId) -> Time {
        if !self.model.coherence {
            return 0;
        }
        self.stats.line_accesses += 1;
        let w = self.named.words;
        let b = self.bus_of(cpu) * w;
        match self.named.write(l as usize, cpu, &self.bus_masks[b..b + w]) {
            Source::Hit => {
                self.stats.line_hits += 1;
                0
            }
            src => self.serve_transfer(t, cpu, src),
        }
    }

    /// Record that `cpu` now holds the named line `l` modified, every other copy gone,
    /// without pricing it: a spinlock hand-off that priced the line's transfers itself
    /// (`SchedCtx::ttas_handoff`) leaves the line at its winner.
    pub fn claim_line(&mut self, cpu: CpuId, l: LineId) {
        if !self.model.coherence {
            return;
        }
        let w = self.named.words;
        let b = self.bus_of(cpu) * w;
        self.named.write(l as usize, cpu, &self.bus_masks[b..b + w]);
    }

    /// The CPU holding the named line `l` modified, if any.
    pub fn line_owner(&self, l: LineId) -> Option<CpuId> {
        let stride = 1 + self.named.words;
        match self.named.dir.get(l as usize * stride) {
            Some(&o) if o != NO_OWNER => Some(o as CpuId),
            _ => None,
        }
    }

    /// Check the directory's invariant: an owner is its line's only sharer.
    pub fn check(&self) -> Result<(), String> {
        self.tasks.check("task")?;
        self.named.check("named")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::catalog;

    fn ic(model: Model) -> Interconnect {
        let p = catalog::find("piii700-1m").unwrap();
        Interconnect::new(8, 4, &p.costs, model)
    }

    /// `a` and `b` took the same traffic: equal counters and bus calendars, and a later
    /// stream into `cpu` at `later` finds the same free slots on both.
    fn same_traffic(
        a: &mut Interconnect,
        b: &mut Interconnect,
        later: Time,
        cpu: CpuId,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        proptest::prop_assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
        let buses = |x: &Interconnect| format!("{:?}", x.bus_stats().collect::<Vec<_>>());
        proptest::prop_assert_eq!(buses(a), buses(b));
        for x in [&mut *a, &mut *b] {
            x.stream(later, 40, None, cpu);
        }
        proptest::prop_assert_eq!(buses(a), buses(b));
        Ok(())
    }

    /// The same scattered reads and writes of task lines (`(cpu, task, time, write)`) on
    /// both interconnects, with a copy after each when `copies` (loading the buses).
    fn scatter(
        a: &mut Interconnect,
        b: &mut Interconnect,
        before: &[(usize, u32, Time, bool)],
        copies: bool,
    ) {
        let n = a.bus_index.len();
        for &(w, p, t, write) in before {
            for x in [&mut *a, &mut *b] {
                if write {
                    x.write_task(t, w, p);
                } else {
                    x.read_task(t, w, p);
                }
                if copies {
                    x.stream(t, 6, Some(w), (w + 1) % n);
                }
            }
        }
    }

    /// `a` walks its task list as one recalculation at `t`, `b` reads then writes each
    /// listed line in id order at the walk's moment: the same cost.
    fn recalc_both(
        a: &mut Interconnect,
        b: &mut Interconnect,
        cpu: CpuId,
        t: Time,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let examine = a.costs.task_examine_ns;
        let walked = a.recalc_walk(t, cpu, examine);
        let mut now = t;
        let listed: Vec<u32> = b.tasks.listed.iter().collect();
        for p in listed {
            now += examine + b.read_task(now, cpu, p);
            now += b.write_task(now, cpu, p);
        }
        proptest::prop_assert_eq!(walked, now - t);
        proptest::prop_assert_eq!(&a.tasks.clock, &b.tasks.clock);
        Ok(())
    }

    /// The same accesses on both, each costing the same: `(cpu, task, time, write)`.
    fn same_accesses(
        a: &mut Interconnect,
        b: &mut Interconnect,
        ops: &[(usize, u32, Time, bool)],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        for &(w, p, t, write) in ops {
            let w = w % a.bus_index.len();
            let (x, y) = if write {
                (a.write_task(t, w, p), b.write_task(t, w, p))
            } else {
                (a.read_task(t, w, p), b.read_task(t, w, p))
            };
            proptest::prop_assert_eq!(x, y, "cpu {} task {} write {}", w, p, write);
        }
        Ok(())
    }

    /// A directory with `listed` in the task list on both interconnects.
    fn list_both(a: &mut Interconnect, b: &mut Interconnect, listed: &[u32]) {
        for &p in listed {
            a.list_task(p);
            b.list_task(p);
        }
    }

    #[test]
    fn a_line_written_elsewhere_is_a_transfer_then_a_hit() {
        let mut x = ic(Model::default());
        let c = x.costs;
        assert_eq!(x.read_task(0, 0, 5), c.mem_latency_ns);
        assert_eq!(x.read_task(1_000, 0, 5), c.l2_line_ns);
        // CPU 1 (same bus) reads it clean from memory, then writes it: CPU 0's copy is
        // invalidated, and CPU 0's next read pulls the dirty line from CPU 1.
        assert_eq!(x.read_task(1_500, 1, 5), c.mem_latency_ns);
        assert_eq!(x.write_task(2_000, 1, 5), c.upgrade_ns);
        assert_eq!(x.read_task(3_000, 0, 5), c.c2c_line_ns);
        // CPU 4 (other bus) writes it without a copy: read for ownership from memory.
        assert_eq!(x.write_task(4_000, 4, 5), c.mem_latency_ns);
        assert_eq!(x.read_task(5_000, 0, 5), c.c2c_cross_bus_line_ns);
        // A write to a line shared across the buses invalidates through the filter.
        let up = x.write_task(6_000, 0, 5);
        assert_eq!(up, c.upgrade_ns + c.c2c_cross_bus_line_ns - c.c2c_line_ns);
        assert_eq!(x.stats.cross_bus_transfers, 1);
        x.check().unwrap();
    }

    #[test]
    fn transfers_at_one_time_queue_on_the_bus_unless_it_is_off() {
        let mut x = ic(Model::default());
        let c = x.costs;
        let a = x.transfer(0, Some(1), 0);
        let b = x.transfer(0, Some(2), 3);
        assert_eq!(a, c.c2c_line_ns);
        assert_eq!(b, c.c2c_line_ns + c.line_slots * c.bus_slot_ns);
        // The other bus is idle.
        assert_eq!(x.transfer(0, Some(5), 4), c.c2c_line_ns);
        let mut off = ic(Model {
            bus: false,
            ..Model::default()
        });
        assert_eq!(off.transfer(0, Some(1), 0), c.c2c_line_ns);
        assert_eq!(off.transfer(0, Some(2), 3), c.c2c_line_ns);
    }

    proptest::proptest! {
        /// A walk priced as one call (memory runs as paced bus streams) costs, and
        /// leaves the directory, buses and counters, exactly as one read per task at
        /// the walk's moment does — hits, transfers and bus queueing mixed in.
        #[test]
        fn a_walk_costs_what_its_reads_one_by_one_cost(
            writes in proptest::collection::vec((0usize..8, 0u32..300, 0u64..4_000), 0..200),
            walk in proptest::collection::vec(0u32..300, 0..400),
            cpu in 0usize..8,
            model in 0usize..3,
        ) {
            let model = match model {
                0 => Model::default(),
                1 => Model { bus: false, ..Model::default() },
                _ => Model { coherence: false, ..Model::default() },
            };
            let (mut a, mut b) = (ic(model), ic(model));
            for &(w, p, t) in &writes {
                // Writes and copies at scattered times make lines dirty elsewhere and
                // load both buses.
                for x in [&mut a, &mut b] {
                    x.write_task(t, w, p);
                    x.stream(t, 6, Some(w), (w + 1) % 8);
                }
            }
            let examine = a.costs.task_examine_ns;
            let walked = a.read_tasks(2_000, cpu, walk.iter().copied(), examine);
            let mut t = 2_000;
            for &p in &walk {
                t += examine + b.read_task(t, cpu, p);
            }
            proptest::prop_assert_eq!(walked, t - 2_000);
            same_traffic(&mut a, &mut b, 2_500, cpu)?;
        }
    }

    proptest::proptest! {
        /// A recalculation walk priced lazily — one by one only the lines held
        /// somewhere, the rest as memory streams, what it leaves applied when a line is
        /// next accessed — costs exactly what a read then a write per listed task at the
        /// walk's moment do, and leaves a directory that prices every later access, walk
        /// and recalculation the same: lines held elsewhere dirty or shared (on this bus
        /// and the other), evicted, hit; tasks exiting and created between the walks;
        /// with and without bus and coherence.
        #[test]
        fn a_recalc_walk_costs_what_its_reads_and_writes_one_by_one_cost(
            listed in proptest::collection::btree_set(0u32..300, 0..250),
            before in proptest::collection::vec(
                (0usize..8, 0u32..300, 0u64..4_000, proptest::bool::ANY), 0..200),
            between in proptest::collection::vec(
                (0usize..8, 0u32..320, 3_000u64..6_000, proptest::bool::ANY), 0..200),
            exits in proptest::collection::vec(0u32..300, 0..20),
            born in proptest::collection::vec(300u32..320, 0..10),
            cpu in 0usize..8,
            model in 0usize..4,
        ) {
            let model = match model {
                0 => Model::default(),
                1 => Model { bus: false, ..Model::default() },
                2 => Model { coherence: false, ..Model::default() },
                _ => Model { bus: false, coherence: false, ..Model::default() },
            };
            let (mut a, mut b) = (ic(model), ic(model));
            let listed: Vec<u32> = listed.into_iter().collect();
            list_both(&mut a, &mut b, &listed);
            // Writes and reads at scattered times leave lines dirty or shared elsewhere;
            // copies load both buses.
            scatter(&mut a, &mut b, &before, true);
            recalc_both(&mut a, &mut b, cpu, 2_000)?;
            // Exits and births, then accesses by every CPU: the same costs.
            for &p in &exits {
                a.forget_task(p);
                b.forget_task(p);
            }
            list_both(&mut a, &mut b, &born);
            same_accesses(&mut a, &mut b, &between)?;
            // A run-queue walk and a second recalculation, by other CPUs.
            let examine = a.costs.task_examine_ns;
            let other = (cpu + 5) % 8;
            let (x, y) = (a.read_tasks(7_000, other, listed.iter().copied(), examine),
                b.read_tasks(7_000, other, listed.iter().copied(), examine));
            proptest::prop_assert_eq!(x, y);
            recalc_both(&mut a, &mut b, (cpu + 3) % 8, 9_000)?;
            same_accesses(&mut a, &mut b, &before)?;
            same_traffic(&mut a, &mut b, 12_500, cpu)?;
            a.check().unwrap();
        }
    }

    proptest::proptest! {
        /// The same on a machine past 64 CPUs (several sharer words, paged stamps), a
        /// walk's CPU and the writers spread over the nodes.
        #[test]
        fn a_recalc_walk_past_64_cpus_costs_what_one_by_one_costs(
            listed in proptest::collection::btree_set(0u32..200, 0..180),
            before in proptest::collection::vec(
                (0usize..130, 0u32..200, 0u64..4_000, proptest::bool::ANY), 0..150),
            cpu in 0usize..130,
            bus in proptest::bool::ANY,
        ) {
            let p = catalog::find("numa-1024").unwrap();
            let model = Model { bus, ..Model::default() };
            let mk = || Interconnect::new(130, 2, &p.costs, model);
            let (mut a, mut b) = (mk(), mk());
            let listed: Vec<u32> = listed.into_iter().collect();
            list_both(&mut a, &mut b, &listed);
            scatter(&mut a, &mut b, &before, false);
            recalc_both(&mut a, &mut b, cpu, 2_000)?;
            let later: Vec<_> = before.iter().map(|&(w, p, t, wr)| (w, p, t + 5_000, wr)).collect();
            same_accesses(&mut a, &mut b, &later)?;
            recalc_both(&mut a, &mut b, (cpu + 77) % 130, 11_000)?;
            same_accesses(&mut a, &mut b, &later)?;
            proptest::prop_assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
            let buses = |x: &Interconnect| format!("{:?}", x.bus_stats().collect::<Vec<_>>());
            proptest::prop_assert_eq!(buses(&a), buses(&b));
        }
    }

    /// A recalculation over 10 000 tasks prices one by one only the lines accessed
    /// since the previous one (and the last walk's tail): the simulator's work does not
    /// grow with the tasks.
    #[test]
    fn a_recalc_names_only_the_lines_held_somewhere() {
        let mut x = ic(Model::default());
        let examine = x.costs.task_examine_ns;
        let tail = u64::from(x.tasks.capacity.div_ceil(2));
        for p in 0..10_000 {
            x.list_task(p);
        }
        // The first walk finds every line just listed (each may hold a copy).
        x.recalc_walk(0, 0, examine);
        assert_eq!(x.recalc_lines_named, 10_000);
        for round in 1..4u64 {
            for p in (0..10_000).step_by(500) {
                x.read_task(1_000_000 * round, (p % 8) as CpuId, p);
            }
            let before = x.recalc_lines_named;
            let cost = x.recalc_walk(1_000_000 * round + 500_000, 3, examine);
            assert!(x.recalc_lines_named - before <= 20 + tail, "round {round}");
            // The walk still costs the modelled kernel every task.
            assert!(
                cost >= 10_000 * (examine + x.costs.mem_latency_ns),
                "round {round}"
            );
        }
        assert_eq!(x.listed_tasks(), 10_000);
        x.check().unwrap();
    }

    /// A line another CPU wrote and has since evicted (its L2 holds `capacity` task
    /// lines, LRU) was written back: the next reader gets it from memory.
    #[test]
    fn a_dirty_line_evicted_by_its_owner_comes_from_memory() {
        let mut x = ic(Model {
            bus: false,
            ..Model::default()
        });
        let c = x.costs;
        let cap = x.tasks.capacity;
        x.write_task(0, 1, 7);
        assert_eq!(
            x.read_task(10, 0, 7),
            c.c2c_line_ns,
            "still in CPU 1's cache"
        );
        x.write_task(20, 1, 7);
        // CPU 1 touches `capacity` other lines: line 7 is evicted from its cache.
        for p in 100..100 + cap {
            x.read_task(30, 1, p);
        }
        assert_eq!(x.read_task(40, 0, 7), c.mem_latency_ns, "written back");
        x.check().unwrap();
    }

    proptest::proptest! {
        /// A run of dependent transfers (a pipe's or socket's state pulled from the CPU
        /// that wrote it) costs, and leaves the buses and counters, as one
        /// [`Interconnect::transfer`] after another does, on one bus and across the two.
        #[test]
        fn a_transfer_run_costs_what_its_transfers_one_by_one_cost(
            load in proptest::collection::vec((0usize..8, 0u64..3_000, 1u64..40), 0..60),
            from in 0usize..8,
            cpu in 0usize..8,
            lines in 0u64..12,
            bus in proptest::bool::ANY,
        ) {
            proptest::prop_assume!(from != cpu);
            let model = Model { bus, ..Model::default() };
            let (mut a, mut b) = (ic(model), ic(model));
            for &(w, t, n) in &load {
                for x in [&mut a, &mut b] {
                    x.stream(t, n, Some(w), (w + 3) % 8);
                }
            }
            let run = a.transfer_run(1_500, from, cpu, lines);
            let mut t = 1_500;
            for _ in 0..lines {
                t += b.transfer(t, Some(from), cpu);
            }
            proptest::prop_assert_eq!(run, t - 1_500);
            same_traffic(&mut a, &mut b, 1_800, cpu)?;
        }
    }

    #[test]
    fn without_coherence_every_examined_task_is_a_memory_miss() {
        let mut x = ic(Model {
            coherence: false,
            ..Model::default()
        });
        let c = x.costs;
        assert_eq!(x.read_task(0, 0, 1), c.mem_latency_ns);
        assert_eq!(x.read_task(1_000, 0, 1), c.mem_latency_ns);
        assert_eq!(x.write_task(0, 1, 1), 0);
    }

    /// The directory past 64 CPUs: sharers in every word of the entry, an invalidation
    /// that names the remote sharer's bus, and an owner on the last CPU.
    #[test]
    fn the_directory_holds_sharers_of_1024_cpus() {
        let p = catalog::find("numa-1024").unwrap();
        // Without bus queueing: the costs are the unloaded latencies.
        let flat = Model {
            bus: false,
            ..Model::default()
        };
        let mut x = Interconnect::new(1024, 2, &p.costs, flat);
        let c = x.costs;
        for cpu in [3, 64, 700, 1023] {
            assert_eq!(x.read_task(0, cpu, 9), c.mem_latency_ns, "cpu {cpu}");
        }
        assert_eq!(
            x.read_task(10, 1023, 9),
            c.l2_line_ns,
            "a hit in the last word"
        );
        // CPU 700 writes: the others' copies go, one of them on another node.
        assert_eq!(
            x.tasks.write(9, 700, &x.bus_masks[350 * 16..351 * 16]),
            Source::Upgrade { remote: Some(3) }
        );
        x.check().unwrap();
        assert_eq!(
            x.read_task(20, 1023, 9),
            c.c2c_cross_bus_line_ns,
            "owner on CPU 700"
        );
        // Clean in 700's and 1023's caches now: a third reader gets it from memory.
        assert_eq!(x.read_task(30, 701, 9), c.mem_latency_ns);
        // A write shared only within the node invalidates no other node.
        let mut y = Interconnect::new(1024, 2, &p.costs, flat);
        y.read_task(0, 700, 1);
        y.read_task(0, 701, 1);
        assert_eq!(
            y.tasks.write(1, 700, &y.bus_masks[350 * 16..351 * 16]),
            Source::Upgrade { remote: None }
        );
        y.check().unwrap();
    }
}
