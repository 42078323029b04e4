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

mod directory;

use directory::{Lines, MissRun, NO_OWNER};

use super::bus::{Bus, BusStats};
use super::{Costs, CpuId, Layout};

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
    /// Each CPU's bus, package and core: lookups, not divisions, on every transfer.
    layout: std::sync::Arc<Layout>,
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
    /// The interconnect of the CPUs `layout` places.
    pub fn new(layout: std::sync::Arc<Layout>, costs: &'static Costs, model: Model) -> Self {
        let (cpus, nbus) = (layout.cpus(), layout.buses());
        Interconnect {
            model,
            recalc_lines_named: 0,
            costs,
            buses: (0..nbus).map(|_| Bus::new(costs.bus_slot_ns)).collect(),
            bus_masks: {
                let words = cpus.div_ceil(64).max(1);
                let mut m = vec![0u64; nbus * words];
                for c in 0..cpus {
                    m[layout.bus_of(c) * words + c / 64] |= 1u64 << (c % 64);
                }
                m
            },
            layout,
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
        self.layout.bus_of(cpu)
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
                let latency = self.layout.line_ns(c, o, cpu);
                if theirs == mine {
                    latency + self.on_bus(mine, t, line)
                } else {
                    self.stats.cross_bus_transfers += 1;
                    let q = self.on_bus(theirs, t, line);
                    latency + q + self.on_bus(mine, t + q, line)
                }
            }
            Source::Upgrade { remote } => {
                self.stats.invalidations += 1;
                let q = self.on_bus(mine, t, 1);
                if let Some(r) = remote {
                    let other = self.bus_of(r);
                    c.upgrade_ns
                        + self.layout.invalidate_extra_ns(c, cpu, r)
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
        let latency = self.layout.line_ns(self.costs, from, cpu);
        if theirs == mine {
            let wait = if self.model.bus {
                self.buses[mine].occupy_paced(t, lines, slots, latency)
            } else {
                0
            };
            return lines * latency + wait;
        }
        self.stats.cross_bus_transfers += lines;
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
            Some(o) if o != cpu => self.layout.line_ns(c, o, cpu),
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
mod tests;
