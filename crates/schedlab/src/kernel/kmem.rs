//! Low memory as a resource: what the workload's tasks, files and skbs hold in the
//! kernel's directly mapped memory, against what the release left of it
//! ([`crate::kernel::release`]).
//!
//! Design: every allocation the model makes on a task's behalf — a fork's stack and, for
//! a new process, its mm and page tables; a socket or pipe; an AF_UNIX skb — charges
//! [`Kmem`](crate::kernel::release::Kmem)'s size for it here, and the matching free
//! returns it. Machines without low memory (`Limits::kmem_kb` = `None`) count nothing.
//! When an allocation would pass the budget the kernel of the era did not fail it:
//! 2.4's `__alloc_pages` retries an order ≤ 3 request for ever and `out_of_memory()`
//! returns while swap is free (2.4.17 `mm/page_alloc.c`, `mm/oom_kill.c`; still so in
//! 2.5.74), so the box hangs. The model ends the run there, naming low memory
//! ([`super::limits::Limit::Lowmem`]) and what held it.
//!
//! TCP's skbs are not counted (the retransmit queue's clones and their ACK timing are
//! not modelled); no workload that reaches the budget uses TCP.
//!
//! Invariant: every free matches a charge (`held` never underflows); `used()` passes the
//! budget only once the run has failed.

use super::limits::Limit;
use super::task::TaskId;
use super::Kernel;

/// What holds low memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KmemKind {
    /// Kernel stacks, `task_struct`s, mms and page tables.
    Tasks = 0,
    /// Sockets and pipes with their inodes, dentries and files.
    Files = 1,
    /// AF_UNIX skbs queued, not yet read.
    Skbs = 2,
}

/// Low memory in use by the workload.
#[derive(Clone, Debug, Default)]
pub struct KmemUse {
    /// Bytes held, per [`KmemKind`].
    pub held: [u64; 3],
    /// What each task's fork charged (freed when it is released).
    per_task: Vec<u64>,
}

impl KmemUse {
    /// Bytes held in all.
    pub fn used(&self) -> u64 {
        self.held.iter().sum()
    }
}

impl Kernel {
    /// Charge `bytes` of low memory for `kind`; past the budget the run fails (the box
    /// hangs there). The bytes are held either way, so that every free matches a charge
    /// while the run winds down. `what` names the allocation for the run's error.
    pub(super) fn kmem_alloc(&mut self, kind: KmemKind, bytes: u64, what: &str) {
        let Some(kb) = self.machine.limits.kmem_kb else {
            return;
        };
        if self.kmem.used() + bytes > kb * 1024 && self.rec.error.is_none() {
            let [t, f, s] = self.kmem.held.map(|b| b / 1024);
            self.rec.error = Some(format!(
                "the kernel hung allocating {what}: {} KB of low memory held (tasks {t} KB, \
                 sockets and pipes {f} KB, skbs in flight {s} KB)",
                self.kmem.used() / 1024
            ));
            self.limit_hit = Some(Limit::Lowmem);
        }
        self.kmem.held[kind as usize] += bytes;
    }

    /// Return `bytes` of `kind`.
    pub(super) fn kmem_free(&mut self, kind: KmemKind, bytes: u64) {
        if self.machine.limits.kmem_kb.is_some() {
            self.kmem.held[kind as usize] -= bytes;
        }
    }

    /// A fork: the stack (and task_struct), and for a new process its mm.
    pub(super) fn kmem_fork(&mut self, child: TaskId, thread: bool) {
        let k = self.kmem_sizes;
        let pae = self.machine.limits.ram_mb > 4096;
        let bytes = k.task + if thread { 0 } else { k.process(pae) };
        let i = child as usize;
        if self.kmem.per_task.len() <= i {
            self.kmem.per_task.resize(i + 1, 0);
        }
        self.kmem_alloc(KmemKind::Tasks, bytes, "a forked task's stack and mm");
        self.kmem.per_task[i] = bytes;
    }

    /// A released task gives back what its fork charged.
    pub(super) fn kmem_release(&mut self, p: TaskId) {
        if let Some(b) = self.kmem.per_task.get_mut(p as usize) {
            let bytes = std::mem::take(b);
            self.kmem_free(KmemKind::Tasks, bytes);
        }
    }
}
