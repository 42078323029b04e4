//! Wait queues (2.4 `wait_queue_head_t`).
//!
//! model: a wake-up removes the entries of the tasks it wakes, where Linux leaves them for
//! the woken task to remove; the woken task re-checks its condition either way, so only
//! the moment of removal differs. Entries of tasks that are not asleep stay put.

use std::collections::VecDeque;

use super::types::TaskId;
pub use super::types::WqId;

/// One waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The sleeping task.
    pub task: TaskId,
    /// Exclusive waiters are woken one at a time (`nr_exclusive`).
    pub exclusive: bool,
}

/// A wait queue: non-exclusive waiters are added at the head, exclusive at the tail, and
/// a wake-up walks from the head — as `add_wait_queue`/`__wake_up_common` did.
#[derive(Default, Debug)]
pub struct WaitQueue {
    /// Waiters in walk order.
    pub waiters: VecDeque<Waiter>,
}

impl WaitQueue {
    /// Register `task`.
    pub fn add(&mut self, task: TaskId, exclusive: bool) {
        if exclusive {
            self.waiters.push_back(Waiter { task, exclusive });
        } else {
            self.waiters.push_front(Waiter { task, exclusive });
        }
    }

    /// Remove `task`'s entry if present.
    pub fn remove(&mut self, task: TaskId) {
        if let Some(i) = self.waiters.iter().position(|w| w.task == task) {
            self.waiters.remove(i);
        }
    }
}
