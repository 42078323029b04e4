//! `runqueue_head` as 2.4 threads it: a doubly linked list through the queued tasks.
//!
//! Design: each task's `run_list` links (previous and next task) sit in one array indexed
//! by task id, apart from the rest of the policy's per-task state, so that `schedule()`'s
//! walk of the whole queue — every pass examines every queued task — follows a compact
//! array instead of searching an ordered map. Each queued task also keeps its list
//! position (a number, below every other at the head, above at the tail) for the
//! goodness index's tie-break; the list's order is the positions' order.
//!
//! Invariants: a task is linked at most once; following `next` from the head meets
//! exactly `len` tasks and ends at the tail, `prev` the same way back.

use crate::kernel::task::TaskId;

/// No task: the end of the list.
const NIL: TaskId = TaskId::MAX;

/// A task's links: `[prev, next]`.
type Links = [TaskId; 2];

/// The run queue's list.
#[derive(Default)]
pub(super) struct RunList {
    head: Option<TaskId>,
    tail: Option<TaskId>,
    len: usize,
    /// By task id; unlinked tasks' entries are stale.
    links: Vec<Links>,
}

impl RunList {
    /// Tasks on the list.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// True when no task is queued.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last task.
    pub(super) fn last(&self) -> Option<TaskId> {
        self.tail
    }

    /// The task before queued task `p` (`None`: `p` is first).
    pub(super) fn before(&self, p: TaskId) -> Option<TaskId> {
        Some(self.links[p as usize][0]).filter(|&q| q != NIL)
    }

    /// The queued tasks, head to tail.
    pub(super) fn iter(&self) -> Iter<'_> {
        Iter {
            links: &self.links,
            at: self.head.unwrap_or(NIL),
            left: self.len,
        }
    }

    /// Link `p`, not queued, first (`list_add`) or last (`list_add_tail`).
    pub(super) fn link(&mut self, p: TaskId, last: bool) {
        if self.links.len() <= p as usize {
            self.links.resize(p as usize + 1, [NIL; 2]);
        }
        let (end, far) = if last {
            (&mut self.tail, &mut self.head)
        } else {
            (&mut self.head, &mut self.tail)
        };
        let old = end.replace(p);
        if far.is_none() {
            *far = Some(p);
        }
        // `p`'s link towards the list, and the old end's link out to `p`.
        let (inward, outward) = if last { (0, 1) } else { (1, 0) };
        self.links[p as usize] = [NIL; 2];
        self.links[p as usize][inward] = old.unwrap_or(NIL);
        if let Some(o) = old {
            self.links[o as usize][outward] = p;
        }
        self.len += 1;
    }

    /// Unlink queued task `p` (`list_del`).
    pub(super) fn unlink(&mut self, p: TaskId) {
        let [prev, next] = self.links[p as usize];
        match prev {
            NIL => self.head = Some(next).filter(|&n| n != NIL),
            q => self.links[q as usize][1] = next,
        }
        match next {
            NIL => self.tail = Some(prev).filter(|&q| q != NIL),
            n => self.links[n as usize][0] = prev,
        }
        self.len -= 1;
    }

    /// Check the links both ways against `len`.
    pub(super) fn check(&self) -> Result<(), String> {
        let forward = self.iter().take(self.len + 1).count();
        let (mut back, mut at) = (0, self.tail);
        while let Some(p) = at {
            back += 1;
            if back > self.len {
                break;
            }
            at = self.before(p);
        }
        if forward != self.len || back != self.len {
            return Err(format!(
                "linux-2.4: run list of {} tasks walks {forward} forward, {back} back",
                self.len
            ));
        }
        Ok(())
    }
}

/// The queued tasks in list order. It knows how many are left, so that a charge that
/// needs only their number (the walk without the coherence model) does not follow the
/// links to count them.
pub(super) struct Iter<'a> {
    links: &'a [Links],
    at: TaskId,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = TaskId;

    #[inline]
    fn next(&mut self) -> Option<TaskId> {
        let p = self.at;
        if p == NIL {
            return None;
        }
        self.at = self.links[p as usize][1];
        // `check` walks one past `len` to catch a corrupt list: no underflow there.
        self.left = self.left.saturating_sub(1);
        Some(p)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    proptest::proptest! {
        /// Links at either end and unlinks anywhere keep the list in the order a plain
        /// sequence has, with predecessors and the last task to match.
        #[test]
        fn the_list_keeps_the_order_of_a_sequence(
            ops in proptest::collection::vec((0u32..40, proptest::bool::ANY), 0..300),
        ) {
            let (mut list, mut seq) = (RunList::default(), VecDeque::new());
            for (p, last) in ops {
                if let Some(at) = seq.iter().position(|&q| q == p) {
                    list.unlink(p);
                    seq.remove(at);
                } else {
                    list.link(p, last);
                    if last { seq.push_back(p) } else { seq.push_front(p) }
                }
                proptest::prop_assert_eq!(list.iter().collect::<Vec<_>>(), Vec::from(seq.clone()));
                proptest::prop_assert_eq!(list.last(), seq.back().copied());
                for (i, &q) in seq.iter().enumerate() {
                    proptest::prop_assert_eq!(list.before(q), i.checked_sub(1).map(|j| seq[j]));
                }
                proptest::prop_assert!(list.check().is_ok());
            }
        }
    }
}
