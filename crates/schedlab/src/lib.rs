//! schedlab: a laboratory for SMP CPU schedulers.
//!
//! The 2001–2003 Linux schedulers run on a modelled multiprocessor under the era's
//! benchmarks. The crate is layered as the architecture in `system.md`:
//!
//! * [`engine`] — deterministic discrete-event core (time, event queue, random source);
//! * [`machine`] — presets, costs, caches, spinlocks (knows no policy);
//! * [`kernel`] — tasks, system calls, wait queues, pipes and sockets, ticks, and the
//!   scheduler core with the scheduling-class seam ([`kernel::sched`]);
//! * [`policy`] — the scheduling policies, each one `SchedClass`, and their registry;
//! * [`workload`] — the benchmarks as task programs;
//! * [`spec`] — `NAME:key=value` specifications and option declarations;
//! * [`sim`] and [`report`] — a run and its result (the report sits above the run);
//! * [`experiment`] — the published tables as data, scores, the reproduction report;
//! * [`trace`] — Perfetto and ftrace traces, latency summaries and timelines of a run.
#![deny(missing_docs)]

pub mod engine;
pub mod experiment;
pub mod kernel;
pub mod machine;
pub mod policy;
pub mod report;
pub mod sim;
pub mod spec;
pub mod trace;
pub mod workload;

pub use report::run;
pub use sim::{RunConfig, SimError, Simulation};
