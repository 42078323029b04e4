//! The native workloads, one module each, in one ordered registry. Each declares its
//! parameters with the names and defaults of the simulated workload (system.md
//! "Contracts"), parsed and checked by `schedlab::spec` so that errors read the same, and a
//! `run` that plays the benchmark's main program inside the supervised leader.

pub mod bw_pipe;
pub mod chat;
pub mod hackbench;
pub mod lat_ctx;
pub mod lat_pipe;
pub mod lat_proc;
pub mod loop_yield;
pub mod reflex;
pub mod sched_yield;
pub mod window;

use schedlab::spec::{ParamSpec, Params, SpecError};

use crate::runner::{Ctx, Outcome};
use crate::sys::Res;

/// A native workload.
pub struct NativeWorkload {
    /// Name on the command line (as the simulated workload's).
    pub name: &'static str,
    /// One line for the listing.
    pub about: &'static str,
    /// Result metric and unit, for the listing.
    pub metric: &'static str,
    /// Parameters.
    pub params: &'static [ParamSpec],
    /// Resolve `auto` values and check relations between parameters.
    pub prepare: fn(&mut Params) -> Result<(), SpecError>,
    /// Run in the leader; return the result.
    pub run: fn(&Params, &mut Ctx) -> Res<Outcome>,
}

fn no_prepare(_: &mut Params) -> Result<(), SpecError> {
    Ok(())
}

/// The registry, in listing order.
pub static NATIVE_WORKLOADS: &[NativeWorkload] = &[
    NativeWorkload {
        name: "hackbench",
        about: "groups of senders spraying messages at receivers over socketpairs or pipes",
        metric: "s",
        params: hackbench::PARAMS,
        prepare: no_prepare,
        run: hackbench::run,
    },
    NativeWorkload {
        name: "lat_pipe",
        about: "lmbench lat_pipe: 1-byte token ping-pong between two processes over two pipes",
        metric: "us per round trip",
        params: lat_pipe::PARAMS,
        prepare: no_prepare,
        run: lat_pipe::run,
    },
    NativeWorkload {
        name: "bw_pipe",
        about: "lmbench bw_pipe: a child writes 64 KB chunks into a pipe the parent reads",
        metric: "MB/s",
        params: bw_pipe::PARAMS,
        prepare: no_prepare,
        run: bw_pipe::run,
    },
    NativeWorkload {
        name: "lat_ctx",
        about: "lmbench lat_ctx: a token round a ring of processes, each summing its array",
        metric: "us per switch",
        params: lat_ctx::PARAMS,
        prepare: no_prepare,
        run: lat_ctx::run,
    },
    NativeWorkload {
        name: "reflex",
        about: "LSE reflex: tokens circulating in active sets of threads over pipes",
        metric: "us per round",
        params: reflex::PARAMS,
        prepare: reflex::prepare,
        run: reflex::run,
    },
    NativeWorkload {
        name: "chat",
        about: "IBM chat: rooms of users, 4 threads per user, 100-byte messages over TCP loopback",
        metric: "messages/s delivered",
        params: chat::PARAMS,
        prepare: no_prepare,
        run: chat::run,
    },
    NativeWorkload {
        name: "loop_yield",
        about: "processes calling sched_yield() in a tight loop; system-wide switches per second",
        metric: "switches/s",
        params: loop_yield::PARAMS,
        prepare: no_prepare,
        run: loop_yield::run,
    },
    NativeWorkload {
        name: "sched_yield",
        about: "threads of one process each calling sched_yield() in a loop",
        metric: "us per yield",
        params: sched_yield::PARAMS,
        prepare: no_prepare,
        run: sched_yield::run,
    },
    NativeWorkload {
        name: "lat_proc",
        about: "lmbench lat_proc: fork (and exec) a child that exits, and wait for it",
        metric: "us",
        params: lat_proc::PARAMS,
        prepare: no_prepare,
        run: lat_proc::run,
    },
];
