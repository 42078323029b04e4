//! The task list as 2.4's counter recalculation walks it: the tasks in it, in id order,
//! with each one's rank in that walk.
//!
//! Design: a Fenwick tree of one bit per task id (in the list or not), so that the
//! walk's position of a task (how many listed tasks come before it) and the task at a
//! position are O(log n), and a walk can be priced from the few tasks whose lines are
//! anywhere but memory without visiting the rest. It grows by doubling as ids grow.
//!
//! Invariants: `len` is the number of ids in the list; `tree` sums `member` over the
//! usual Fenwick ranges (index `j` covers `j - lowbit(j) + 1 ..= j`, one-based).

/// Task ids in the task list, with ranks.
#[derive(Clone, Debug, Default)]
pub struct TaskList {
    member: Vec<bool>,
    tree: Vec<u32>,
    len: u64,
}

impl TaskList {
    /// Tasks in the list.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when no task is listed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `id` is in the list.
    pub fn contains(&self, id: u32) -> bool {
        self.member.get(id as usize).copied().unwrap_or(false)
    }

    /// The listed ids, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.member.len() as u32).filter(|&i| self.member[i as usize])
    }

    /// Put `id` in the list (a no-op if it is).
    pub fn insert(&mut self, id: u32) {
        let i = id as usize;
        if i >= self.member.len() {
            self.grow(i + 1);
        }
        if !self.member[i] {
            self.member[i] = true;
            self.len += 1;
            self.add(i, 1);
        }
    }

    /// Take `id` out of the list (a no-op if it is not in it).
    pub fn remove(&mut self, id: u32) {
        let i = id as usize;
        if self.contains(id) {
            self.member[i] = false;
            self.len -= 1;
            self.add(i, u32::MAX); // −1, wrapping
        }
    }

    /// Listed ids below `id`: `id`'s position in the walk, if listed.
    pub fn rank(&self, id: u32) -> u64 {
        let mut j = (id as usize).min(self.member.len());
        let mut sum = 0u64;
        while j > 0 {
            sum += u64::from(self.tree[j - 1]);
            j &= j - 1;
        }
        sum
    }

    /// The listed id at position `k` (0-based) of the walk.
    pub fn select(&self, k: u64) -> u32 {
        assert!(k < self.len, "position {k} of a task list of {}", self.len);
        // Descend the implicit tree: the largest prefix whose sum is at most `k`.
        let n = self.tree.len();
        let mut pos = 0usize;
        let mut left = k;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && u64::from(self.tree[next - 1]) <= left {
                left -= u64::from(self.tree[next - 1]);
                pos = next;
            }
            step >>= 1;
        }
        pos as u32
    }

    /// Add `d` (wrapping) at index `i`.
    fn add(&mut self, i: usize, d: u32) {
        let mut j = i + 1;
        while j <= self.tree.len() {
            self.tree[j - 1] = self.tree[j - 1].wrapping_add(d);
            j += j & j.wrapping_neg();
        }
    }

    /// Room for ids below `n` at least: the size doubles and the tree is rebuilt, O(n).
    #[cold]
    fn grow(&mut self, n: usize) {
        let size = n.next_power_of_two().max(64);
        self.member.resize(size, false);
        self.tree = vec![0; size];
        for i in 0..size {
            if self.member[i] {
                let mut j = i + 1;
                while j <= size {
                    self.tree[j - 1] += 1;
                    j += j & j.wrapping_neg();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Ranks and selections agree with a sorted list of the members, through
        /// insertions and removals that grow the tree.
        #[test]
        fn ranks_and_selections_match_a_sorted_list(
            ops in proptest::collection::vec((proptest::bool::ANY, 0u32..700), 0..300),
        ) {
            let mut l = TaskList::default();
            let mut sorted = std::collections::BTreeSet::new();
            for (add, id) in ops {
                if add {
                    l.insert(id);
                    sorted.insert(id);
                } else {
                    l.remove(id);
                    sorted.remove(&id);
                }
            }
            proptest::prop_assert_eq!(l.len(), sorted.len() as u64);
            for (k, &id) in sorted.iter().enumerate() {
                proptest::prop_assert!(l.contains(id));
                proptest::prop_assert_eq!(l.rank(id), k as u64);
                proptest::prop_assert_eq!(l.select(k as u64), id);
            }
            for id in 0..800u32 {
                proptest::prop_assert_eq!(l.rank(id), sorted.range(..id).count() as u64);
            }
        }
    }
}
