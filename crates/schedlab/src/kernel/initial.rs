//! Seeded initial conditions: what `--seed` changes in every run, whatever the workload.
//!
//! A real run of a benchmark never starts twice from the same machine state, so the
//! published numbers carry a spread. The model's costs are fixed; what the seed varies is
//! where the run starts, each draw bounded by a machine fact:
//!
//! 1. **Tick phase, per CPU.** Each CPU's first timer interrupt comes at `tick + phase`,
//!    `phase` uniform in `[0, tick)` (one tick period: `1/HZ`). The local APIC timers of
//!    a P6 SMP were started one by one as the CPUs were brought up, so their phases were
//!    unrelated; all CPUs still count the same `jiffies` (`t / tick`).
//! 2. **Start offset, per task.** A task's first return to user mode (init at boot, a
//!    child after `fork`/`clone`) runs `offset` of user-mode time before its program's
//!    first operation, `offset` uniform in `[0, bound)` with `bound` the copy of one page
//!    from memory (`page_bytes / line_bytes · mem_line_ns`: 128 × 86 ns ≈ 11 µs on the
//!    PIII presets). model: the copy-on-write faults and cold misses a new task takes
//!    on its first instructions depend on what its parent touched since, which the model
//!    does not track; at most about one page copy of it is left to chance. On lat_proc's
//!    fork (≈ 336 µs) that is ≤ 3 %; on anything that forks once, a shift of its start.
//!
//! Not drawn: device interrupts (the workloads have none: tbench runs on loopback, whose
//! "interrupt" is a softirq run in line) and IPI delivery (its latency is a calibrated
//! constant, `ipi_latency_ns`).
//!
//! # Determinism
//!
//! The draws come from stream 1 of the seed's ChaCha8 ([`SimRng::stream`]); workloads
//! and policies draw from stream 0 ([`Kernel::rng`]), so neither shifts the other's
//! sequence. determinism: the tick phases are drawn at boot in CPU order, then init's
//! offset; each child's offset when the `NewTask` frame creates it, in event order. Two
//! first ticks at equal times pop in CPU order (the engine's FIFO tie rule).

use crate::engine::{SimRng, Time};
use crate::machine::Costs;

use super::frame::Frame;
use super::task::TaskId;
use super::Kernel;

/// The ChaCha stream of a seed that initial conditions draw from.
pub const STREAM: u64 = 1;

/// The seeded source of a run's initial conditions.
pub struct Initial {
    rng: SimRng,
    start_bound: Time,
}

impl Initial {
    /// The initial conditions of seed `seed` on a machine with `costs`.
    pub fn new(seed: u64, costs: &Costs) -> Initial {
        Initial {
            rng: SimRng::stream(seed, STREAM),
            start_bound: start_offset_bound(costs),
        }
    }

    /// The next CPU's tick phase: uniform in `[0, tick_ns)`.
    pub fn tick_phase(&mut self, tick_ns: Time) -> Time {
        self.rng.below(tick_ns.max(1))
    }

    /// The next task's start offset: uniform in `[0, start_offset_bound)`.
    pub fn start_offset(&mut self) -> Time {
        self.rng.below(self.start_bound.max(1))
    }
}

/// The (exclusive) bound of a task's start offset: one page copied from memory.
pub fn start_offset_bound(costs: &Costs) -> Time {
    costs.page_bytes / costs.line_bytes.max(1) * costs.mem_line_ns
}

impl Kernel {
    /// Make new task `p` start its program in user mode after its seeded start offset;
    /// `then` is the frame that runs first (a child's return from `fork`).
    pub(super) fn start_program(&mut self, p: TaskId, then: Option<Frame>) {
        let offset = self.initial.start_offset();
        let t = &mut self.tasks[p as usize];
        t.start_offset = offset;
        t.kstack.push(Frame::User);
        t.kstack.push(Frame::Compute {
            left: offset,
            ws: 0,
            todo: 0,
        });
        t.kstack.extend(then);
    }
}
