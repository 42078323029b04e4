//! The directory of the interconnect: for each line it tracks, which CPU holds it
//! modified and which hold a copy, and when each CPU last touched it (so a line its L2
//! has since evicted comes from memory).
//!
//! Design and invariants: see [`super`]. A line has at most one owner, and an owner is
//! its only sharer; task lines may lag behind 2.4's counter recalculations and are
//! brought up to date when next accessed.

use crate::engine::Time;

use super::super::tasklist::TaskList;
use super::super::CpuId;
use super::Source;

pub(super) const NO_OWNER: u64 = u64::MAX;

/// The directory entries of a set of lines.
///
/// Layout: one entry per line, `1 + words` 64-bit words read together on every access:
/// the owner (the CPU holding it modified, then its only sharer, or `NO_OWNER`), then
/// the CPUs holding a copy, one bit each. `words` is sized to the CPUs booted (one word
/// up to 64 CPUs, as the directory always was; sixteen for 1024), not to the largest
/// machine.
#[derive(Default)]
pub(super) struct Lines {
    /// Sharer words per line: `cpus.div_ceil(64)`.
    pub(super) words: usize,
    pub(super) dir: Vec<u64>,
    /// Per CPU, how many of these lines its L2 can hold (0: unbounded), and for each
    /// (line, CPU) the CPU's access count at the line's last access there: a line
    /// accessed `capacity` accesses ago or more has been evicted (LRU by access count).
    pub(super) capacity: u32,
    pub(super) cpus: usize,
    pub(super) clock: Vec<u32>,
    /// Up to 64 CPUs: `stamp[line * cpus + cpu]`, dense.
    pub(super) stamp: Vec<u32>,
    /// Past 64 CPUs the stamps are paged, 64 CPUs (one sharer word) to a page, a page
    /// made when a CPU of its word first touches the line: `page[line * words + w]` is
    /// 1 + the page's index in `pool`, 0 for none (all stamps 0, as a dense array
    /// starts). A task line is touched by few CPUs, so 100 000 tasks on 1024 CPUs take
    /// tens of MB, not the 400 MB of a dense table.
    pub(super) page: Vec<u32>,
    pub(super) pool: Vec<[u32; 64]>,
    /// Task lines only (`lazy`): what 2.4's counter recalculation left, applied when a
    /// line is next accessed ([`Interconnect::recalc_walk`]). `seen[line]` is the
    /// recalculation count the entry is up to date with, or [`UNLISTED`] for a line
    /// that is not in the task list (an idle task's, an exited one's), which no
    /// recalculation walks.
    pub(super) lazy: bool,
    pub(super) seen: Vec<u32>,
    /// Recalculations so far.
    pub(super) epoch: u32,
    /// The lines brought up to date since the last recalculation: every line whose
    /// entry may hold a copy anywhere is among them (or unlisted).
    pub(super) touched: Vec<u32>,
    /// The task list, in the order a recalculation walks it.
    pub(super) listed: TaskList,
}

/// [`Lines`]' vectors for a walk ([`Lines::each_dense`]).
pub(super) struct Parts<'a> {
    pub(super) dir: &'a mut [u64],
    pub(super) stamp: &'a mut [u32],
    pub(super) seen: &'a mut [u32],
    pub(super) touched: &'a mut Vec<u32>,
    pub(super) clock: &'a [u32],
}

/// A run of a walk's memory reads being gathered, to be priced as one paced stream:
/// its length and the time of its first read.
#[derive(Default)]
pub(super) struct MissRun {
    pub(super) lines: u64,
    pub(super) start: Time,
}

impl MissRun {
    /// `m` more reads from `now`, each `pace` after the previous one; `now` moves past
    /// them (their queueing is added when the run is priced).
    pub(super) fn extend(&mut self, m: u64, now: &mut Time, pace: Time) {
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
pub(super) const UNLISTED: u32 = u32::MAX;

/// The stamp of (line `i`, `cpu`) in a paged table, its page made if need be.
#[inline]
pub(super) fn paged_stamp<'a>(
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
pub(super) fn bit(cpu: CpuId) -> (usize, u64) {
    (cpu >> 6, 1u64 << (cpu & 63))
}

impl Lines {
    pub(super) fn new(cpus: usize, capacity: u32) -> Lines {
        Lines {
            words: cpus.div_ceil(64).max(1),
            capacity,
            cpus,
            clock: vec![0; cpus],
            ..Lines::default()
        }
    }

    /// Lines with entries.
    pub(super) fn len(&self) -> usize {
        self.dir.len() / (1 + self.words)
    }

    /// Make room for line `i` (a new task, a new name): off the access path.
    #[cold]
    #[inline(never)]
    pub(super) fn grow(&mut self, i: usize) {
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
    pub(super) fn freshen(&mut self, i: usize) {
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
    pub(super) fn list(&mut self, i: usize) {
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
    pub(super) fn own(&mut self, i: usize, cpu: CpuId, stamp: u32) {
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
    pub(super) fn touch(&mut self, i: usize, cpu: CpuId) -> &mut [u64] {
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
    pub(super) fn settle(&mut self, i: usize, cpu: CpuId) {
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
    pub(super) fn holds(&self, i: usize, cpu: CpuId) -> bool {
        debug_assert_eq!(self.capacity, 0, "a bounded cache's hit moves its stamp");
        let (w, me) = bit(cpu);
        self.dir
            .get(i * (1 + self.words) + 1 + w)
            .is_some_and(|&s| s & me != 0)
    }

    #[inline(always)]
    pub(super) fn read(&mut self, i: usize, cpu: CpuId) -> Source {
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
    pub(super) fn read_each(
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
    pub(super) fn each_dense(
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
    pub(super) fn parts(&mut self) -> Parts<'_> {
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
    pub(super) fn write(&mut self, i: usize, cpu: CpuId, mine_bus: &[u64]) -> Source {
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
    pub(super) fn forget(&mut self, i: usize) {
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
    pub(super) fn check(&self, what: &str) -> Result<(), String> {
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
