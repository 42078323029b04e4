//! The cache lines of per-CPU scheduling data that other CPUs read without a lock (MQ's
//! published values, haMQ's queue counts), as seen by the CPUs reading them.
//!
//! model: MQ publishes per-CPU values (`max_na_goodness`, `curr_na_goodness`,
//! `nt_running`, `running_non_idle`) that other CPUs read without a lock. Such a read
//! costs a cache-line transfer when the line was written by another CPU since this CPU
//! last had it, and nothing otherwise (a hit in its own cache). Lines are versioned:
//! every write bumps the version and makes the writer the owner. A write to a line owned
//! by another CPU that this CPU does not hold in its latest version pays a transfer too
//! (read-for-ownership); writes under the line's own run-queue lock are free, the lock
//! acquisition having already moved the line (`runqueue_lock` sits in the same
//! cache-line-padded `runqueue_data` union as the values it protects).

use crate::machine::CpuId;
use crate::policy::SchedCtx;

/// Versioned lines.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    ncpu: usize,
    version: Vec<u64>,
    owner: Vec<Option<CpuId>>,
    /// `seen[line * ncpu + cpu]`: the version `cpu` holds.
    seen: Vec<u64>,
}

impl Lines {
    /// `nlines` lines shared by `ncpu` CPUs.
    pub fn new(nlines: usize, ncpu: usize) -> Lines {
        Lines {
            ncpu,
            version: vec![1; nlines],
            owner: vec![None; nlines],
            seen: vec![0; nlines * ncpu],
        }
    }

    fn fetch(&mut self, ctx: &mut SchedCtx<'_>, line: usize) {
        let me = ctx.cpu();
        let i = line * self.ncpu + me;
        if self.seen[i] != self.version[line] {
            if let Some(o) = self.owner[line] {
                if o != me {
                    let ns = ctx.machine().line_transfer_ns(o, me);
                    ctx.charge(ns);
                }
            }
            self.seen[i] = self.version[line];
        }
    }

    /// A lock-free read of `line` by the executing CPU.
    pub fn read(&mut self, ctx: &mut SchedCtx<'_>, line: usize) {
        self.fetch(ctx, line);
    }

    /// A write of `line` by the executing CPU without holding the line's lock.
    pub fn write(&mut self, ctx: &mut SchedCtx<'_>, line: usize) {
        self.fetch(ctx, line);
        self.bump(ctx.cpu(), line);
    }

    /// A read or write of `line` under its lock: the line came with the lock.
    pub fn locked(&mut self, cpu: CpuId, line: usize, write: bool) {
        if write {
            self.bump(cpu, line);
        } else {
            self.seen[line * self.ncpu + cpu] = self.version[line];
        }
    }

    fn bump(&mut self, cpu: CpuId, line: usize) {
        self.version[line] += 1;
        self.owner[line] = Some(cpu);
        self.seen[line * self.ncpu + cpu] = self.version[line];
    }
}
