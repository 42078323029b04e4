//! Which CPU's scheduler state each named line belongs to, for
//! the cost rule's debug check ([`SchedCtx`](super::SchedCtx)): a hook may read another
//! CPU's `curr` for free only once it has paid for reaching that CPU's state — its
//! `curr` line, a line the class declared as that CPU's (read, written, or locked), or
//! that CPU's own run-queue lock: a kernel's run-queue structure opens with its lock and
//! the fields beside it (2.6's `runqueue_t`: `lock`, `nr_running`, `curr` in its first
//! 32-byte line), so taking the lock brings them. A lock several CPUs share (2.4's
//! `runqueue_lock`) is no one CPU's.
//!
//! Invariants: `line_cpu[l]` is the CPU a named line was declared for; `lock_cpu[l]` is
//! the one CPU whose `rq_lockp` is `l`, once the class is initialised.

#[cfg(debug_assertions)]
use crate::machine::LockId;
use crate::machine::{CpuId, LineId};

/// The owners of lines and locks a class declared.
#[derive(Debug, Default)]
pub struct StateMap {
    line_cpu: Vec<Option<CpuId>>,
    #[cfg(debug_assertions)]
    lock_cpu: Vec<Option<CpuId>>,
}

impl StateMap {
    /// Record that named line `l` carries `cpu`'s scheduler state (or no one CPU's).
    pub(crate) fn declare_line(&mut self, l: LineId, cpu: Option<CpuId>) {
        let i = l as usize;
        if self.line_cpu.len() <= i {
            self.line_cpu.resize(i + 1, None);
        }
        self.line_cpu[i] = cpu;
    }

    /// The CPU whose state line `l` carries: a `curr` line's CPU, or what the class
    /// declared.
    #[cfg(debug_assertions)]
    pub(crate) fn cpu_of_line(&self, l: LineId, cpus: usize) -> Option<CpuId> {
        let i = l as usize;
        if i < cpus {
            return Some(i);
        }
        self.line_cpu.get(i).copied().flatten()
    }

    /// Record each CPU's run-queue lock (`rq_locks[c]`, after the class's `init`): a lock
    /// that is one CPU's alone reaches that CPU's state.
    #[cfg(debug_assertions)]
    pub(crate) fn set_rq_locks(&mut self, rq_locks: &[LockId]) {
        self.lock_cpu.clear();
        for (c, &l) in rq_locks.iter().enumerate() {
            let i = l as usize;
            if self.lock_cpu.len() <= i {
                self.lock_cpu.resize(i + 1, None);
            }
            let shared = rq_locks.iter().filter(|&&m| m == l).count() > 1;
            self.lock_cpu[i] = (!shared).then_some(c);
        }
    }

    /// The one CPU whose run-queue lock `l` is, if any (read by the debug check only).
    #[cfg(debug_assertions)]
    pub(crate) fn cpu_of_lock(&self, l: LockId) -> Option<CpuId> {
        self.lock_cpu.get(l as usize).copied().flatten()
    }
}
