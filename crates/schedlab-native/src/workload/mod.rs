//! The native workloads, one module each, in one ordered registry.
//!
//! Each native workload *is* a simulated one run for real: its name, parameters and result
//! metric come from the simulated workload's registry entry (`schedlab::workload::*::INFO`,
//! system.md "Contracts"), never from a copy here, so `reflex:tasks=16` means the same on
//! both sides and errors read the same (`schedlab::spec`). A native module only adds the
//! `run` that plays the benchmark's main program inside the supervised leader, and a
//! `prepare` that resolves `auto` values and refuses, in one line, a value it cannot honour
//! on a real host.

pub mod bw_pipe;
pub mod chat;
pub mod hackbench;
pub mod lat_ctx;
pub mod lat_pipe;
pub mod lat_proc;
pub mod loop_yield;
pub mod mix;
pub mod netperf;
pub mod reflex;
pub mod rtapp;
pub mod schbench;
pub mod sched_yield;
pub mod tbench;
pub mod window;

use schedlab::spec::{ParamSpec, Params, SpecError};
use schedlab::workload::{self as sim, WorkloadInfo};

use crate::runner::{Ctx, Outcome};
use crate::sys::Res;

/// A native workload.
pub struct NativeWorkload {
    /// Name on the command line (the simulated workload's).
    pub name: &'static str,
    /// One line for the listing: how it runs natively.
    pub about: &'static str,
    /// Result metric and unit, for the listing (the simulated workload's).
    pub metric: &'static str,
    /// Parameters: the simulated workload's declaration itself.
    pub params: &'static [ParamSpec],
    /// Resolve `auto` values and check relations between parameters.
    pub prepare: fn(&mut Params) -> Result<(), SpecError>,
    /// Run in the leader; return the result.
    pub run: fn(&Params, &mut Ctx) -> Res<Outcome>,
}

/// The native run of simulated workload `sim`: name, metric and parameters are `sim`'s.
const fn native(
    sim: WorkloadInfo,
    about: &'static str,
    prepare: fn(&mut Params) -> Result<(), SpecError>,
    run: fn(&Params, &mut Ctx) -> Res<Outcome>,
) -> NativeWorkload {
    NativeWorkload {
        name: sim.name,
        about,
        metric: sim.metric,
        params: sim.params,
        prepare,
        run,
    }
}

fn no_prepare(_: &mut Params) -> Result<(), SpecError> {
    Ok(())
}

/// The registry, in listing order.
pub static NATIVE_WORKLOADS: &[NativeWorkload] = &[
    native(
        sim::hackbench::INFO,
        "groups of senders spraying messages at receivers over socketpairs or pipes",
        no_prepare,
        hackbench::run,
    ),
    native(
        sim::lat_pipe::INFO,
        "lmbench lat_pipe: 1-byte token ping-pong between two processes over two pipes",
        lat_pipe::prepare,
        lat_pipe::run,
    ),
    native(
        sim::bw_pipe::INFO,
        "lmbench bw_pipe: a child writes 64 KB chunks into a pipe the parent reads",
        no_prepare,
        bw_pipe::run,
    ),
    native(
        sim::lat_ctx::INFO,
        "lmbench lat_ctx: a token round a ring of processes, each summing its array",
        no_prepare,
        lat_ctx::run,
    ),
    native(
        sim::reflex::INFO,
        "LSE reflex: tokens circulating in active sets of threads over pipes",
        reflex::prepare,
        reflex::run,
    ),
    native(
        sim::chat::INFO,
        "IBM chat: rooms of users, 4 threads per user, 100-byte messages over TCP loopback",
        no_prepare,
        chat::run,
    ),
    native(
        sim::tbench::INFO,
        "tbench: client processes and forked servers exchange NetBench-sized packets over TCP loopback",
        no_prepare,
        tbench::run,
    ),
    native(
        sim::loop_yield::INFO,
        "processes calling sched_yield() in a tight loop; system-wide switches per second",
        no_prepare,
        loop_yield::run,
    ),
    native(
        sim::sched_yield::INFO,
        "threads of one process each calling sched_yield() in a loop",
        no_prepare,
        sched_yield::run,
    ),
    native(
        sim::netperf::INFO,
        "netperf TCP_RR: netperf and netserver processes exchanging requests and responses over TCP loopback",
        no_prepare,
        netperf::run,
    ),
    native(
        sim::schbench::INFO,
        "schbench: message threads waking workers by futex; each request a sleep and a matrix multiply",
        no_prepare,
        schbench::run,
    ),
    native(
        sim::lat_proc::INFO,
        "lmbench lat_proc: fork (and exec) a child that exits, and wait for it",
        no_prepare,
        lat_proc::run,
    ),
    native(
        sim::mix::INFO,
        "workloads at once: the first measured in the leader, each other one in a process of its own",
        mix::prepare,
        mix::run,
    ),
    native(
        sim::rtapp::INFO,
        "an rt-app file played by threads of this process with pthread objects and real timers",
        no_prepare,
        rtapp::run,
    ),
];
