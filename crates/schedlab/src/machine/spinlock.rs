//! Spinlocks: when a requester is granted the lock, and what the hand-off costs.
//!
//! Model: a critical section runs atomically in the event that requests its lock; the lock
//! is then busy until the section's simulated work is done (`free_at`). A requester at
//! virtual time `t` is granted the lock at `max(t, free_at)` plus the hand-off; the
//! difference is spinning, charged to the requester's CPU. Requests are served in the
//! order the simulation reaches them, i.e. in simulated request-time order, so every
//! section sees the state left by every section serialized before it: the decision is made
//! with the state at the moment the lock is acquired. Lock-free readers may see a
//! section's effects up to one spin-wait early.
//!
//! The hand-off depends on the lock kind ([`crate::machine::LockKind`], kernel side in
//! `SchedCtx::lock`): a *ticket* lock moves one line from the last holder; 2.4's
//! *test-and-test-and-set* byte lock (`lock; decb`, spin on a plain read) makes every
//! spinner re-read the line and race for the locked op at each release, so the hand-off
//! and the bus traffic it causes grow with the number of spinners.
//!
//! Where the lock's own cache line is: a lock declared alone (`SchedCtx::new_lock`) is a
//! line of its own that moves from its last holder (`last_cpu`) to each acquirer. A lock
//! declared on a named line of the interconnect (`SchedCtx::new_lock` with its line: MQ's
//! `runqueue_lock` inside the cache-line-padded `runqueue_data` it protects) is that line
//! in the directory: acquiring it is a read-for-ownership of the line, wherever the line
//! is (another CPU's cache, shared copies of lock-free readers, memory).
//!
//! Invariants: a lock is held by at most one CPU; `free_at` never moves backwards.

use std::collections::VecDeque;

use crate::engine::Time;

use super::{CpuId, LineId};

/// Index of a lock in the kernel's lock table.
pub type LockId = u32;

/// Counters of one lock, summed over a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct LockStats {
    /// Successful acquisitions (including successful trylocks).
    pub acquisitions: u64,
    /// Acquisitions that had to spin.
    pub contended: u64,
    /// Failed trylocks.
    pub trylock_failures: u64,
    /// Total time held.
    pub hold_ns: Time,
    /// Total time spent spinning by requesters.
    pub wait_ns: Time,
    /// Of contended acquisitions under `lock=ttas`: total time from the release to the
    /// grant (the re-read storm and the locked op).
    pub handoff_ns: Time,
    /// Of contended acquisitions under `lock=ttas`: CPUs spinning at the hand-off,
    /// summed (the grantee included).
    pub spinners: u64,
}

/// One spinlock.
#[derive(Debug)]
pub struct SpinLock {
    /// Name as reported in `counters.locks` (locks of one name are reported together).
    pub name: &'static str,
    /// Time at which the lock next becomes free.
    pub free_at: Time,
    /// CPU holding it now, if any.
    pub holder: Option<CpuId>,
    /// When the current holder was granted it.
    pub granted_at: Time,
    /// CPU that held it last (for the cache-line transfer).
    pub last_cpu: Option<CpuId>,
    /// The interconnect line the lock lives on, if it shares one with the data it
    /// protects; `None`: a line of its own, followed by `last_cpu`.
    pub line: Option<LineId>,
    /// Grant times of the last 64 acquisitions, oldest first, for the spinners still
    /// queued at a request (a ring: the oldest goes at every grant once full).
    pub queued: VecDeque<Time>,
    /// Counters.
    pub stats: LockStats,
}

impl SpinLock {
    /// A free lock on a line of its own.
    pub fn new(name: &'static str) -> SpinLock {
        SpinLock {
            name,
            free_at: 0,
            holder: None,
            granted_at: 0,
            last_cpu: None,
            line: None,
            queued: VecDeque::new(),
            stats: LockStats::default(),
        }
    }

    /// A free lock living on the interconnect line `line`.
    pub fn on_line(name: &'static str, line: LineId) -> SpinLock {
        SpinLock {
            line: Some(line),
            ..SpinLock::new(name)
        }
    }

    /// True when a request at `t` would be granted without spinning.
    #[inline]
    pub fn is_free_at(&self, t: Time) -> bool {
        self.holder.is_none() && self.free_at <= t
    }
}
