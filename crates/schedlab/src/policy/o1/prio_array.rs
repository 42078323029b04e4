//! `struct prio_array`: 140 FIFO lists and a 141-bit bitmap (schedulers.md §2.4, §2.5.2).
//!
//! Invariants: bit `i` (`i < 140`) is set ⇔ list `i` is non-empty; bit 140, the
//! delimiter, is always set so the bit search terminates; `nr_active` = Σ list lengths.

use std::collections::VecDeque;

use crate::kernel::task::TaskId;

/// `MAX_PRIO`: 100 RT levels and 40 nice levels.
pub const MAX_PRIO: usize = 140;
/// `MAX_RT_PRIO`.
pub const MAX_RT_PRIO: i32 = 100;
const WORDS: usize = MAX_PRIO / 64 + 1;

/// One priority array.
#[derive(Clone, Debug)]
pub struct PrioArray {
    /// Tasks queued in this array.
    pub nr_active: u32,
    bitmap: [u64; WORDS],
    queue: Vec<VecDeque<TaskId>>,
}

impl Default for PrioArray {
    fn default() -> Self {
        let mut bitmap = [0u64; WORDS];
        // The delimiter bit (sched_init: `__set_bit(MAX_PRIO, array->bitmap)`).
        bitmap[MAX_PRIO / 64] |= 1 << (MAX_PRIO % 64);
        PrioArray {
            nr_active: 0,
            bitmap,
            queue: vec![VecDeque::new(); MAX_PRIO],
        }
    }
}

impl PrioArray {
    fn set(&mut self, prio: usize) {
        self.bitmap[prio / 64] |= 1 << (prio % 64);
    }

    fn clear(&mut self, prio: usize) {
        self.bitmap[prio / 64] &= !(1 << (prio % 64));
    }

    /// `enqueue_task`: append at the tail of list `prio` and set its bit.
    pub fn enqueue(&mut self, p: TaskId, prio: i32) {
        let i = prio as usize;
        self.queue[i].push_back(p);
        self.set(i);
        self.nr_active += 1;
    }

    /// Insert `p` at list `prio` just before `before` (2.6 `wake_up_forked_process`:
    /// `list_add_tail(&p->run_list, &current->run_list)`).
    pub fn enqueue_before(&mut self, p: TaskId, prio: i32, before: TaskId) {
        let i = prio as usize;
        let at = self.queue[i].iter().position(|&t| t == before);
        match at {
            Some(k) => self.queue[i].insert(k, p),
            None => self.queue[i].push_back(p),
        }
        self.set(i);
        self.nr_active += 1;
    }

    /// Insert `p` as the second entry of list `prio` (S6 `sys_sched_yield`).
    pub fn enqueue_second(&mut self, p: TaskId, prio: i32) {
        let i = prio as usize;
        let k = self.queue[i].len().min(1);
        self.queue[i].insert(k, p);
        self.set(i);
        self.nr_active += 1;
    }

    /// `dequeue_task`: unlink `p` from list `prio`; clear the bit if the list empties.
    pub fn dequeue(&mut self, p: TaskId, prio: i32) {
        let i = prio as usize;
        let k = self.queue[i]
            .iter()
            .position(|&t| t == p)
            .unwrap_or_else(|| panic!("o1: task {p} not on list {prio}"));
        self.queue[i].remove(k);
        if self.queue[i].is_empty() {
            self.clear(i);
        }
        self.nr_active -= 1;
    }

    /// `sched_find_first_bit`: the lowest set bit, 140 (the delimiter) when empty.
    pub fn find_first_bit(&self) -> usize {
        self.find_next_bit(0)
    }

    /// `find_next_bit`: the lowest set bit at or above `from` (140 when none).
    pub fn find_next_bit(&self, from: usize) -> usize {
        let mut w = from / 64;
        if w >= WORDS {
            return MAX_PRIO;
        }
        let mut word = self.bitmap[w] & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return (w * 64 + word.trailing_zeros() as usize).min(MAX_PRIO);
            }
            w += 1;
            if w >= WORDS {
                return MAX_PRIO;
            }
            word = self.bitmap[w];
        }
    }

    /// List `prio`, head first.
    pub fn list(&self, prio: usize) -> &VecDeque<TaskId> {
        &self.queue[prio]
    }

    /// Head of list `prio`.
    pub fn head(&self, prio: usize) -> Option<TaskId> {
        self.queue[prio].front().copied()
    }

    /// Check the bitmap against the lists; `Err` names the first mismatch.
    pub fn check(&self) -> Result<(), String> {
        let mut n = 0;
        for (i, q) in self.queue.iter().enumerate() {
            let bit = self.bitmap[i / 64] & (1 << (i % 64)) != 0;
            if bit == q.is_empty() {
                return Err(format!("bit {i} is {bit} but list has {} tasks", q.len()));
            }
            n += q.len() as u32;
        }
        if self.bitmap[MAX_PRIO / 64] & (1 << (MAX_PRIO % 64)) == 0 {
            return Err("delimiter bit 140 cleared".into());
        }
        if n != self.nr_active {
            return Err(format!("nr_active {} but lists hold {n}", self.nr_active));
        }
        Ok(())
    }

    /// Every queued task with its priority, in (priority, list) order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, TaskId)> + '_ {
        self.queue
            .iter()
            .enumerate()
            .flat_map(|(i, q)| q.iter().map(move |&t| (i, t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_pick_is_the_lowest_nonempty_list_head() {
        let mut a = PrioArray::default();
        assert_eq!(a.find_first_bit(), MAX_PRIO, "empty: the delimiter");
        a.enqueue(7, 120);
        a.enqueue(8, 120);
        a.enqueue(9, 139);
        a.enqueue(3, 64);
        assert_eq!(a.find_first_bit(), 64);
        a.dequeue(3, 64);
        assert_eq!(a.find_first_bit(), 120);
        assert_eq!(a.head(120), Some(7));
        assert_eq!(a.find_next_bit(121), 139);
        a.dequeue(7, 120);
        a.dequeue(8, 120);
        assert_eq!(a.find_first_bit(), 139);
        a.check().unwrap();
        a.dequeue(9, 139);
        assert_eq!(a.find_first_bit(), MAX_PRIO);
        assert_eq!(a.nr_active, 0);
        a.check().unwrap();
    }

    #[test]
    fn insertion_positions() {
        let mut a = PrioArray::default();
        a.enqueue(1, 120);
        a.enqueue(2, 120);
        a.enqueue_before(3, 120, 2);
        a.enqueue_second(4, 120);
        let l: Vec<_> = a.list(120).iter().copied().collect();
        assert_eq!(l, vec![1, 4, 3, 2]);
        a.check().unwrap();
    }
}
