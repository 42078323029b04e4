//! One cache level: an LRU stack of working sets, priced by reuse distance.
//!
//! The stack orders the sets a level has seen by their last touch; a set's *distance* is
//! the number of lines touched by the sets above it (more recent), kept in a Fenwick tree
//! over recency slots so that it costs O(log n) in the sets the level remembers. A line
//! whose reuse distance is `d` — distinct other lines touched since its own last touch —
//! survives in an LRU set-associative cache of `S` sets × `A` ways iff fewer than `A` of
//! those `d` lines map to its cache set:
//!
//! 1. *uniform mapping* (a way no larger than a page, as the P6's 16 KB 4-way L1: a page
//!    covers every set once): `d / S` lines per set exactly, so a line survives iff
//!    `d < S·A` — fully associative LRU;
//! 2. *page colouring* (a way larger than a page, as the 256 KB ways of a 1 MB 4-way L2:
//!    the set of a line depends on the physical frame the kernel happened to give its
//!    page): the lines per set are ≈ Poisson(`d / S`), so a line survives with
//!    probability `P(Poisson(d/S) ≤ A − 1)`.
//!
//! A cyclic pass over a set of `n` lines at distance `D` gives each of its lines reuse
//! distance `D + n − 1`; the expected lines resident of a stack entry are the integral
//! of the survival over its lines (`resident`), which sums to at most `S·A` over the stack
//! (the integrals telescope).
//!
//! Not modelled: pseudo-LRU (P6's L2) is taken as LRU; lines shared between sets.

/// Shape of a level and its survival function.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    /// Capacity in lines (`S·A`).
    pub lines: u64,
    /// Cache sets `S`.
    pub sets: u64,
    /// Ways `A`.
    pub ways: u64,
    /// Whether a page's cache sets depend on its physical frame (way > page).
    pub coloured: bool,
}

impl Geometry {
    /// A level of `bytes` in `line`-byte lines, `ways`-way set-associative, under pages of
    /// `page` bytes.
    pub fn new(bytes: u64, line: u64, ways: u64, page: u64) -> Geometry {
        let lines = (bytes / line).max(1);
        let ways = ways.clamp(1, lines);
        Geometry {
            lines,
            sets: (lines / ways).max(1),
            ways,
            coloured: bytes / ways > page,
        }
    }

    /// Probability that a line with reuse distance `d` lines is still resident.
    pub fn survival(&self, d: f64) -> f64 {
        if !self.coloured {
            return if d < self.lines as f64 { 1.0 } else { 0.0 };
        }
        let (last, _) = poisson_cdfs(self.ways, d / self.sets as f64);
        last
    }

    /// Expected resident lines of `n` lines whose distances run from `d` to `d + n`.
    pub fn resident(&self, d: f64, n: f64) -> f64 {
        if !self.coloured {
            return (self.lines as f64 - d).clamp(0.0, n);
        }
        // ∫_λ^∞ P(Poisson(t) ≤ j) dt = Σ_{k ≤ j} P(Poisson(λ) ≤ k).
        let s = self.sets as f64;
        let (_, a) = poisson_cdfs(self.ways, d / s);
        let (_, b) = poisson_cdfs(self.ways, (d + n) / s);
        (s * (a - b)).clamp(0.0, n)
    }

    /// A distance beyond which nothing survives (to within 1e-13): entries that far down
    /// the stack are forgotten.
    pub fn horizon(&self) -> u64 {
        if self.coloured {
            self.sets * (self.ways + 40)
        } else {
            self.lines
        }
    }
}

/// `(P(Poisson(λ) ≤ ways − 1), Σ_{j < ways} P(Poisson(λ) ≤ j))`.
fn poisson_cdfs(ways: u64, lambda: f64) -> (f64, f64) {
    let mut term = (-lambda).exp();
    let mut cdf = 0.0;
    let mut sum = 0.0;
    for k in 0..ways {
        if k > 0 {
            term *= lambda / k as f64;
        }
        cdf += term;
        sum += cdf;
    }
    (cdf.min(1.0), sum)
}

const NONE: u32 = u32::MAX;

/// A set's entry in the stack.
#[derive(Clone, Copy, Debug)]
struct Rec {
    /// Recency slot (larger is more recent); `NONE` when the level holds nothing of it.
    slot: u32,
    /// Lines of the set in the entry (what its last touches left; what it adds to the
    /// distance of the entries below).
    size: u64,
    /// Of these, the lines a cut pass has already touched (its prefix, at the top).
    fresh: u64,
}

const EMPTY: Rec = Rec {
    slot: NONE,
    size: 0,
    fresh: 0,
};

/// The stack entries of every set, for the levels of one kind (every CPU's L1, or every
/// CPU's L2), indexed by set. A set is held by at most one CPU at a time (touching it
/// invalidates it elsewhere), so one table serves all of them: its memory is O(sets),
/// not O(sets × CPUs). Only the holder's level may be asked about a set
/// ([`super::CacheModel`] keeps the holder).
#[derive(Default)]
pub(crate) struct Recs(Vec<Rec>);

impl Recs {
    fn get(&self, set: u32) -> Rec {
        self.0.get(set as usize).copied().unwrap_or(EMPTY)
    }
}

/// One level of one CPU.
pub(crate) struct Level {
    geo: Geometry,
    /// Fenwick tree of entry sizes over recency slots (1-based inside).
    tree: Vec<u64>,
    /// Set held by each slot, `NONE` if free.
    owner: Vec<u32>,
    /// Next free slot; slots below it are used or vacated.
    next: usize,
    /// Sum of entry sizes.
    total: u64,
    live: usize,
}

impl Level {
    pub fn new(geo: Geometry) -> Level {
        Level {
            geo,
            tree: vec![0; 64],
            owner: vec![NONE; 64],
            next: 0,
            total: 0,
            live: 0,
        }
    }

    /// Entries the level remembers (its memory is O(this) plus the set index).
    pub fn entries(&self) -> usize {
        self.live
    }

    /// Recency slots allocated (entries plus free slots before the next compaction).
    #[cfg(test)]
    pub fn slots(&self) -> usize {
        self.owner.len()
    }

    fn add(&mut self, slot: usize, delta: i64) {
        let mut i = slot + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] = self.tree[i - 1].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Sum of the sizes in slots `0..=slot`.
    fn prefix(&self, slot: usize) -> u64 {
        let mut i = slot + 1;
        let mut s = 0u64;
        while i > 0 {
            s = s.wrapping_add(self.tree[i - 1]);
            i &= i - 1;
        }
        s
    }

    /// Lines touched by the entries above `set`'s (None if the level holds none of it).
    fn above(&self, r: &Rec) -> Option<u64> {
        (r.slot != NONE).then(|| self.total - self.prefix(r.slot as usize))
    }

    /// Share of the `todo` lines still to touch of a `ws`-line set that are resident now,
    /// the pass having touched its first `ws − todo` lines already.
    pub fn share(&self, recs: &Recs, set: u32, ws: u64, todo: u64) -> f64 {
        let r = recs.get(set);
        let Some(d) = self.above(&r) else {
            return 0.0;
        };
        if ws == 0 || todo == 0 {
            return 0.0;
        }
        let prefix = ws.saturating_sub(todo);
        // model: the lines of an entry are spread evenly over the set, except a cut
        // pass's prefix, which is known to be the entry's top.
        let spread = if prefix > 0 && r.fresh == prefix {
            (r.size - r.fresh) as f64 / todo as f64
        } else {
            r.size as f64 / ws as f64
        };
        let reuse = (d + r.size).saturating_sub(1) as f64;
        spread.min(1.0) * self.geo.survival(reuse)
    }

    /// A pass has touched `done` of the `todo` lines it had left of a `ws`-line set: put
    /// the set on top of the stack with what is now resident of it.
    pub fn record(&mut self, recs: &mut Recs, set: u32, ws: u64, todo: u64, done: u64) {
        let done = done.min(todo);
        let prefix = ws.saturating_sub(todo);
        let r = recs.get(set);
        // A pass that touched all it had left keeps no rest: its share (a Fenwick walk
        // and an `exp`) is not asked for; times a share, finite, it would give 0 too.
        let kept_rest = if done == todo {
            0
        } else {
            ((todo - done) as f64 * self.share(recs, set, ws, todo)).round() as u64
        };
        let base = if prefix > 0 && r.slot != NONE && r.fresh == prefix {
            prefix
        } else {
            0
        };
        let fresh = base + done;
        self.remove(recs, set);
        self.push(recs, set, fresh + kept_rest, fresh);
    }

    fn push(&mut self, recs: &mut Recs, set: u32, size: u64, fresh: u64) {
        if size == 0 {
            return;
        }
        if self.next == self.owner.len() {
            self.compact(recs);
        }
        let slot = self.next;
        self.next += 1;
        let i = set as usize;
        if recs.0.len() <= i {
            recs.0.resize(i + 1, EMPTY);
        }
        recs.0[i] = Rec {
            slot: slot as u32,
            size,
            fresh,
        };
        self.owner[slot] = set;
        self.add(slot, size as i64);
        self.total += size;
        self.live += 1;
    }

    /// Forget `set` here (invalidated, or its task exited).
    pub fn remove(&mut self, recs: &mut Recs, set: u32) {
        let r = recs.get(set);
        if r.slot == NONE {
            return;
        }
        self.add(r.slot as usize, -(r.size as i64));
        self.total -= r.size;
        self.owner[r.slot as usize] = NONE;
        recs.0[set as usize] = EMPTY;
        self.live -= 1;
    }

    /// Renumber the live entries from slot 0, dropping those beyond the horizon, and
    /// size the slots at twice what is left (amortised O(1) per push).
    fn compact(&mut self, recs: &mut Recs) {
        let horizon = self.geo.horizon();
        // determinism: slots in recency order, newest first.
        let mut kept = Vec::with_capacity(self.live);
        let mut d = 0u64;
        for slot in (0..self.next).rev() {
            let set = self.owner[slot];
            if set == NONE {
                continue;
            }
            let r = recs.0[set as usize];
            if d >= horizon {
                recs.0[set as usize] = EMPTY;
                self.total -= r.size;
                self.live -= 1;
            } else {
                kept.push(set);
            }
            d += r.size;
        }
        kept.reverse();
        let cap = (2 * kept.len()).max(64).next_power_of_two();
        self.owner = vec![NONE; cap];
        self.tree = vec![0; cap];
        for (slot, &set) in kept.iter().enumerate() {
            self.owner[slot] = set;
            recs.0[set as usize].slot = slot as u32;
            self.tree[slot] = recs.0[set as usize].size;
        }
        // Linear-time Fenwick build.
        for i in 1..=cap {
            let j = i + (i & i.wrapping_neg());
            if j <= cap {
                let v = self.tree[i - 1];
                self.tree[j - 1] = self.tree[j - 1].wrapping_add(v);
            }
        }
        self.next = kept.len();
    }

    /// Expected lines of `set` resident now.
    pub fn resident(&self, recs: &Recs, set: u32) -> f64 {
        let r = recs.get(set);
        match self.above(&r) {
            Some(d) => self.geo.resident(d as f64, r.size as f64),
            None => 0.0,
        }
    }

    /// Check the stack's accounting and that the expected residents fit the capacity.
    pub fn check(&self, recs: &Recs) -> Result<(), String> {
        let mut sum = 0u64;
        let mut live = 0usize;
        let mut resident = 0.0;
        for slot in (0..self.next).rev() {
            let set = self.owner[slot];
            if set == NONE {
                continue;
            }
            let r = recs.get(set);
            if r.slot as usize != slot || r.size == 0 || r.fresh > r.size {
                return Err(format!("set {set}: entry {r:?} in slot {slot}"));
            }
            resident += self.geo.resident(sum as f64, r.size as f64);
            sum += r.size;
            live += 1;
        }
        if sum != self.total || live != self.live || self.prefix(self.owner.len() - 1) != sum {
            return Err(format!(
                "stack total {} / {} entries, slots say {sum} / {live}",
                self.total, self.live
            ));
        }
        if resident > self.geo.lines as f64 * (1.0 + 1e-9) {
            return Err(format!(
                "{resident:.1} lines resident in a {}-line level",
                self.geo.lines
            ));
        }
        Ok(())
    }
}
