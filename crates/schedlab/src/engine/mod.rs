//! The discrete-event engine: simulated time, the event queue and the one random source.
//!
//! Design: time is an integer count of simulated nanoseconds ([`Time`]); an event is a
//! small `Copy` value kept in a binary heap keyed by `(time, seq)`, where `seq` is a
//! counter incremented at every insertion. The engine knows nothing of CPUs, tasks or
//! policies: the simulation that owns the queue interprets the events.
//!
//! # Ordering guarantees
//!
//! 1. Events pop in non-decreasing time order.
//! 2. Events with equal time pop in the order they were scheduled (FIFO by `seq`).
//! 3. Nothing else — no hash, pointer or heap-layout accident — influences the order,
//!    so equal inputs and seed give the same event sequence on any machine.
//!
//! Randomness comes only from [`SimRng`], seeded once per run.

mod hist;
mod queue;
mod rng;

pub use hist::Histogram;
pub use queue::EventQueue;
pub use rng::SimRng;

/// Simulated time in nanoseconds since the start of the run.
pub type Time = u64;

/// Nanoseconds per microsecond, for readable constants.
pub const US: Time = 1_000;
/// Nanoseconds per millisecond.
pub const MS: Time = 1_000_000;
/// Nanoseconds per second.
pub const SEC: Time = 1_000_000_000;
