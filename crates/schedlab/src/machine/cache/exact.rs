//! Test-only reference: an exact line-level set-associative LRU cache whose pages get
//! physical frames of random colour, and the comparison of the model against it.

use std::collections::BTreeMap;

use crate::engine::SimRng;

use super::level::{Geometry, Level, Recs};

/// One cache, line by line.
pub struct Exact {
    line: u64,
    page: u64,
    ways: usize,
    colours: u64,
    /// Tags per cache set, most recent first.
    tags: Vec<Vec<u64>>,
    /// determinism: frames by (set, page), assigned on first touch.
    frames: BTreeMap<(u32, u64), u64>,
    /// Where each set starts in its first page, in lines (as `malloc` places arrays).
    offsets: BTreeMap<u32, u64>,
    next_frame: u64,
    rng: SimRng,
}

impl Exact {
    pub fn new(bytes: u64, line: u64, ways: u64, page: u64, seed: u64) -> Exact {
        let sets = (bytes / line / ways) as usize;
        Exact {
            line,
            page,
            ways: ways as usize,
            colours: (bytes / ways / page).max(1),
            tags: vec![Vec::new(); sets],
            frames: BTreeMap::new(),
            offsets: BTreeMap::new(),
            next_frame: 0,
            rng: SimRng::new(seed),
        }
    }

    /// A pass over the first `bytes` of working set `set`, from its start: the misses.
    pub fn pass(&mut self, set: u32, from: u64, bytes: u64) -> u64 {
        let mut misses = 0;
        let per_page = self.page / self.line;
        let rng = &mut self.rng;
        let base = *self
            .offsets
            .entry(set)
            .or_insert_with(|| rng.below(per_page));
        for l in base + from / self.line..base + (from + bytes).div_ceil(self.line) {
            let page = l / per_page;
            let colours = self.colours;
            let frame = match self.frames.get(&(set, page)) {
                Some(&f) => f,
                None => {
                    // A fresh frame of random colour (unique, so no two pages alias).
                    let f = self.next_frame * colours + self.rng.below(colours);
                    self.next_frame += 1;
                    self.frames.insert((set, page), f);
                    f
                }
            };
            let phys = frame * per_page + l % per_page;
            let idx = (phys % self.tags.len() as u64) as usize;
            let v = &mut self.tags[idx];
            if let Some(pos) = v.iter().position(|&t| t == phys) {
                v.remove(pos);
            } else {
                misses += 1;
            }
            v.insert(0, phys);
            v.truncate(self.ways);
        }
        misses
    }
}

/// A cache shape for a comparison.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub bytes: u64,
    pub ways: u64,
}

pub const LINE: u64 = 32;
pub const PAGE: u64 = 4096;

/// Misses of the model's level over a sequence of whole passes `(set, bytes)`.
pub fn model_misses(c: Case, passes: &[(u32, u64)]) -> f64 {
    let mut l = Level::new(Geometry::new(c.bytes, LINE, c.ways, PAGE));
    let mut recs = Recs::default();
    let mut misses = 0.0;
    for &(set, bytes) in passes {
        let n = bytes.div_ceil(LINE);
        misses += n as f64 * (1.0 - l.share(&recs, set, n, n));
        l.record(&mut recs, set, n, n, n);
        l.check(&recs).unwrap();
    }
    misses
}

/// Misses of the exact cache, averaged over `seeds` colourings.
pub fn exact_misses(c: Case, passes: &[(u32, u64)], seeds: u64) -> f64 {
    let mut total = 0;
    for seed in 1..=seeds {
        let mut e = Exact::new(c.bytes, LINE, c.ways, PAGE, seed);
        for &(set, bytes) in passes {
            total += e.pass(set, 0, bytes);
        }
    }
    total as f64 / seeds as f64
}

/// Round robin over `tasks` sets of `bytes`, `rounds` times.
pub fn round_robin(tasks: u32, bytes: u64, rounds: u32) -> Vec<(u32, u64)> {
    (0..rounds)
        .flat_map(|_| (0..tasks).map(move |t| (t, bytes)))
        .collect()
}

/// `n` passes over sets drawn at random among `tasks` (seeded).
pub fn random_order(tasks: u32, bytes: u64, n: u32, seed: u64) -> Vec<(u32, u64)> {
    let mut r = SimRng::new(seed);
    (0..n)
        .map(|_| (r.below(u64::from(tasks)) as u32, bytes))
        .collect()
}
