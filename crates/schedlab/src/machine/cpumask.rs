//! `CpuMask`: a set of CPUs, as the kernel's `cpumask_t` (a task's `cpus_allowed`, the
//! mask `sched_setaffinity` takes, the CPUs online).
//!
//! Design: a fixed-capacity bitset of [`MAX_CPUS`] bits in 64-bit words, `Copy`, so a mask
//! lives inline in a task and passes by value as `cpumask_t` did with `NR_CPUS` bits.
//! Bit `c` is CPU `c`; iteration is in ascending CPU order (`for_each_cpu`), which is what
//! keeps every walk over a mask deterministic. Testing a bit — the scheduler's hot
//! operation (`cpumask_test_cpu`) — reads one word. The capacity is the largest machine
//! the simulator boots (the `numa-1024` preset); per-CPU state elsewhere is sized to the
//! CPUs booted, not to this.

use super::CpuId;

/// CPUs a mask can name: the largest machine the simulator boots.
pub const MAX_CPUS: usize = 1024;

const WORDS: usize = MAX_CPUS / 64;

/// A set of CPUs `0..MAX_CPUS`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuMask([u64; WORDS]);

impl Default for CpuMask {
    fn default() -> CpuMask {
        CpuMask::EMPTY
    }
}

impl CpuMask {
    /// No CPU.
    pub const EMPTY: CpuMask = CpuMask([0; WORDS]);

    /// Every CPU a mask can name (`CPU_MASK_ALL`).
    pub const FULL: CpuMask = CpuMask([u64::MAX; WORDS]);

    /// CPUs `0..n` (`n` ≤ [`MAX_CPUS`]).
    pub fn all(n: usize) -> CpuMask {
        assert!(n <= MAX_CPUS, "a cpumask holds {MAX_CPUS} CPUs, not {n}");
        let mut m = CpuMask::EMPTY;
        for (w, word) in m.0.iter_mut().enumerate() {
            let lo = w * 64;
            *word = match n.saturating_sub(lo) {
                0 => 0,
                k if k >= 64 => u64::MAX,
                k => (1u64 << k) - 1,
            };
        }
        m
    }

    /// CPU `cpu` alone.
    #[inline]
    pub fn single(cpu: CpuId) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        m.set(cpu);
        m
    }

    /// CPUs 0..64 as the bits of `bits` (bit `c` is CPU `c`): the masks of the
    /// machines of 64 CPUs or fewer, written as numbers.
    pub const fn from_bits(bits: u64) -> CpuMask {
        let mut w = [0; WORDS];
        w[0] = bits;
        CpuMask(w)
    }

    /// The CPUs `cpus` names (each below [`MAX_CPUS`]).
    pub fn from_cpus(cpus: impl IntoIterator<Item = CpuId>) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for c in cpus {
            m.set(c);
        }
        m
    }

    /// True when `cpu` is in the mask (`cpumask_test_cpu`); false past [`MAX_CPUS`].
    #[inline(always)]
    pub fn test(&self, cpu: CpuId) -> bool {
        match self.0.get(cpu >> 6) {
            Some(w) => w >> (cpu & 63) & 1 != 0,
            None => false,
        }
    }

    /// Add `cpu` (below [`MAX_CPUS`]).
    #[inline]
    pub fn set(&mut self, cpu: CpuId) {
        assert!(
            cpu < MAX_CPUS,
            "cpu {cpu} is past a cpumask's {MAX_CPUS} CPUs"
        );
        self.0[cpu >> 6] |= 1u64 << (cpu & 63);
    }

    /// Remove `cpu`.
    #[inline]
    pub fn clear(&mut self, cpu: CpuId) {
        if let Some(w) = self.0.get_mut(cpu >> 6) {
            *w &= !(1u64 << (cpu & 63));
        }
    }

    /// The lowest CPU in the mask (`cpumask_first`), `None` when empty.
    #[inline]
    pub fn first(&self) -> Option<CpuId> {
        self.0
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// CPUs in the mask (`cpumask_weight`).
    pub fn weight(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// True when the mask names no CPU.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The CPUs in both masks (`cpumask_and`).
    #[inline]
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (a, b) in m.0.iter_mut().zip(other.0.iter()) {
            *a &= b;
        }
        m
    }

    /// True when the masks share a CPU (`cpumask_intersects`).
    #[inline]
    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    /// True when every CPU of the mask is in `other` (`cpumask_subset`).
    #[inline]
    pub fn is_subset_of(&self, other: &CpuMask) -> bool {
        self.0.iter().zip(other.0.iter()).all(|(a, b)| a & !b == 0)
    }

    /// The CPUs in the mask, ascending (`for_each_cpu`).
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(i * 64 + b)
            })
        })
    }
}

/// As the kernel's `%*pbl`: ranges of CPUs, e.g. `0-3,8,700`.
impl std::fmt::Display for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        let mut run: Option<(CpuId, CpuId)> = None;
        let mut emit = |f: &mut std::fmt::Formatter<'_>, (a, b): (CpuId, CpuId)| {
            let sep = if first { "" } else { "," };
            first = false;
            if a == b {
                write!(f, "{sep}{a}")
            } else {
                write!(f, "{sep}{a}-{b}")
            }
        };
        for c in self.iter() {
            run = match run {
                Some((a, b)) if b + 1 == c => Some((a, c)),
                Some(r) => {
                    emit(f, r)?;
                    Some((c, c))
                }
                None => Some((c, c)),
            };
        }
        match run {
            Some(r) => emit(f, r),
            None => write!(f, "(none)"),
        }
    }
}

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuMask({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_across_word_boundaries_set_test_and_clear() {
        let mut m = CpuMask::EMPTY;
        for c in [0, 63, 64, 127, 128, 700, 1023] {
            assert!(!m.test(c));
            m.set(c);
            assert!(m.test(c), "cpu {c}");
        }
        assert_eq!(m.weight(), 7);
        assert!(!m.test(1) && !m.test(62) && !m.test(65) && !m.test(1022));
        assert!(
            !m.test(1024) && !m.test(usize::MAX),
            "past the capacity: not in"
        );
        m.clear(64);
        assert!(!m.test(64) && m.test(63) && m.test(127));
        assert_eq!(m.weight(), 6);
    }

    #[test]
    fn iteration_is_ascending_and_first_is_the_lowest() {
        let cpus = [1023, 5, 64, 700, 63, 128, 0];
        let m = CpuMask::from_cpus(cpus);
        let mut sorted = cpus.to_vec();
        sorted.sort_unstable();
        assert_eq!(m.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(m.first(), Some(0));
        assert_eq!(CpuMask::single(700).first(), Some(700));
        assert_eq!(CpuMask::single(1023).iter().collect::<Vec<_>>(), vec![1023]);
        assert_eq!(CpuMask::EMPTY.first(), None);
        assert_eq!(CpuMask::EMPTY.iter().count(), 0);
        assert!(CpuMask::EMPTY.is_empty() && !m.is_empty());
    }

    #[test]
    fn all_n_is_exactly_the_first_n_cpus() {
        for n in [0, 1, 2, 63, 64, 65, 96, 127, 128, 700, 1023, 1024] {
            let m = CpuMask::all(n);
            assert_eq!(m.weight(), n, "all({n})");
            assert_eq!(m.iter().collect::<Vec<_>>(), (0..n).collect::<Vec<_>>());
            assert!(n == 0 || m.test(n - 1));
            assert!(!m.test(n));
        }
        assert_eq!(CpuMask::all(8), CpuMask::from_bits(0xff));
        assert_eq!(CpuMask::all(64), CpuMask::from_bits(u64::MAX));
    }

    #[test]
    fn and_and_intersects_look_at_every_word() {
        let a = CpuMask::from_cpus([3, 700]);
        let b = CpuMask::from_cpus([700, 1023]);
        assert!(a.intersects(&b));
        assert_eq!(a.and(&b), CpuMask::single(700));
        assert!(!CpuMask::single(3).intersects(&CpuMask::single(67)));
        assert!(a.and(&CpuMask::all(700)) == CpuMask::single(3));
    }

    #[test]
    fn subset_looks_at_every_word() {
        let a = CpuMask::from_cpus([3, 700]);
        assert!(a.is_subset_of(&CpuMask::from_cpus([3, 5, 700])));
        assert!(
            !a.is_subset_of(&CpuMask::single(3)),
            "700 is in another word"
        );
        assert!(!a.is_subset_of(&CpuMask::single(700)));
        assert!(CpuMask::EMPTY.is_subset_of(&CpuMask::EMPTY) && a.is_subset_of(&a));
    }

    #[test]
    fn prints_as_cpu_ranges() {
        let m = CpuMask::from_cpus([0, 1, 2, 3, 8, 63, 64, 65, 700]);
        assert_eq!(m.to_string(), "0-3,8,63-65,700");
        assert_eq!(CpuMask::EMPTY.to_string(), "(none)");
        assert_eq!(CpuMask::all(1024).to_string(), "0-1023");
    }

    #[test]
    #[should_panic(expected = "past a cpumask")]
    fn setting_a_cpu_past_the_capacity_is_a_bug() {
        let mut m = CpuMask::EMPTY;
        m.set(MAX_CPUS);
    }
}
