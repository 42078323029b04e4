//! The modelled multiprocessor: topology, named costs, caches and spinlocks.
//!
//! Design: a [`Machine`] is a preset ([`preset::Preset`]) booted with some number of CPUs.
//! Every cost is a named field of [`Costs`] whose doc comment cites the machine fact it
//! comes from (`benchmarks.md` §6). The machine knows no policy and no task program: the
//! kernel asks it what an operation costs (a switch, a copy, a cache refill, a lock
//! hand-over) and charges the answer to the CPU doing the work.
//!
//! Invariants: costs are fixed for a run; one set of constants per preset, shared by every
//! policy and workload (the fidelity rule of `system.md`).

pub mod cache;
pub mod preset;
pub mod spinlock;

pub use cache::CacheModel;
pub use preset::{Costs, Limits, Preset, PRESETS};
pub use spinlock::{LockId, LockStats, SpinLock};

use crate::engine::Time;

/// Index of a CPU, `0..cpus`.
pub type CpuId = usize;

/// A booted machine: a preset and the number of CPUs `maxcpus=` left online.
#[derive(Clone, Debug)]
pub struct Machine {
    /// The preset this machine was booted from.
    pub preset: &'static Preset,
    /// CPUs online.
    pub cpus: usize,
}

impl Machine {
    /// Boot `preset` with `cpus` CPUs (`None` = all of them).
    pub fn boot(preset: &'static Preset, cpus: Option<usize>) -> Result<Machine, String> {
        let n = cpus.unwrap_or(preset.cpus);
        if n == 0 || n > preset.cpus {
            return Err(format!(
                "--cpus {n} is not possible on {}: it has {} CPUs (accepted: 1..={})",
                preset.name, preset.cpus, preset.cpus
            ));
        }
        Ok(Machine { preset, cpus: n })
    }

    /// The cost table.
    #[inline]
    pub fn costs(&self) -> &'static Costs {
        &self.preset.costs
    }

    /// Which front-side bus a CPU sits on (ProFusion: CPUs 0-3 on bus 0, 4-7 on bus 1).
    #[inline]
    pub fn bus_of(&self, cpu: CpuId) -> usize {
        cpu / self.preset.cpus_per_bus
    }

    /// Cost of moving one dirty cache line from `from`'s cache to `to`.
    #[inline]
    pub fn line_transfer_ns(&self, from: CpuId, to: CpuId) -> Time {
        let c = self.costs();
        if from == to {
            0
        } else if self.bus_of(from) == self.bus_of(to) {
            c.c2c_line_ns
        } else {
            c.c2c_cross_bus_line_ns
        }
    }

    /// Cost of copying `bytes` of kernel-buffered data whose lines were last written on
    /// `last_cpu` into (or out of) a buffer on `cpu`: an in-cache copy, plus a line
    /// transfer per line when the data sits dirty in another CPU's cache.
    pub fn copy_ns(&self, bytes: u64, last_cpu: Option<CpuId>, cpu: CpuId) -> Time {
        let c = self.costs();
        let copy = bytes * c.copy_ns_per_kb / 1024;
        let remote = match last_cpu {
            Some(from) if from != cpu => {
                let lines = bytes.div_ceil(c.line_bytes);
                lines * self.line_transfer_ns(from, cpu)
            }
            _ => 0,
        };
        copy + remote
    }

    /// Timer tick period for a kernel running at `hz`.
    pub fn tick_ns(hz: u32) -> Time {
        crate::engine::SEC / hz as Time
    }
}
