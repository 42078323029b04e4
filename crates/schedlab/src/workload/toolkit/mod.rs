//! A toolkit of program pieces for the workloads: the patterns their programs share.
//!
//! A program ([`Program`]) is a state machine asked for one [`Op`] at a time, handed the
//! last call's return value in [`Env::ret`]. The workloads repeat a few patterns: open `n`
//! pipes or sockets, fork or clone `n` children, reap them, read or write messages until a
//! count is done (looping on short reads), and a ready/go start barrier. Each pattern is a
//! *piece* here; a program holds its pieces as fields and drives them in order.
//!
//! # The convention
//!
//! A piece has a `step(&mut self, env, ..) -> Option<Op>` method:
//!
//! * `Some(op)`: the program returns `op` from [`Program::next`]. On the next call, `env.ret`
//!   is that op's return value and the program calls the same piece's `step` again, which
//!   checks it.
//! * `None`: the piece is done, and stays done (`step` returns `None` without looking at
//!   `env.ret` again) until the program asks it for more (`more`, `restart`), so a program
//!   can step its pieces from the top on every call.
//! * A bad return value fails the run: the piece records the message its *blame* closure
//!   words ([`Env::fail`]) and asks for [`Op::Exit`]. A blame closure gets the index of the
//!   unit the failed call was for (a channel, a child, a message — 0-based) and the value
//!   returned, so each workload keeps its own wording.
//!
//! `step!` returns the op a piece asks for and falls through once it is done:
//!
//! ```ignore
//! fn next(&mut self, env: &mut Env<'_>) -> Op {
//!     step!(self.pipes.step(env)); // n pipes
//!     let fds = self.pipes.fds();
//!     step!(self.kids.step(env, |i, _| child(fds[i as usize])));
//!     step!(self.reap.step(env));
//!     Op::Exit
//! }
//! ```
//!
//! Pieces issue exactly the system calls a hand-written state machine would, in the same
//! order and with the same arguments: converting a program to pieces changes no result.
//! They check every return value, though, so a refused call that a hand-written program let
//! pass (and went on with a bad fd) fails the run at once, with a message.
//!
//! The pieces: [`Open`] (channels), [`Spawn`] and [`Reap`] (children), [`Reads`] and
//! [`Writes`] (message loops), [`Gate`] and [`Arrive`] (the start barrier), [`script`] and
//! [`exec`] (fixed op lists).

mod chans;
mod gate;
mod io;
mod procs;

pub use chans::{Chan, Open};
pub use gate::{Arrive, Gate};
pub use io::{Reads, Writes};
pub use procs::{exec, script, How, Reap, Spawn};

use crate::kernel::abi::{Env, Op};

#[cfg(doc)]
use crate::kernel::abi::Program;

/// How a piece words a bad return value: `(index, ret)` → the run's error message, where
/// `index` is the 0-based unit (channel, child, message) the failed call was for.
pub type Blame = Box<dyn Fn(u64, i64) -> String + Send>;

fn blame(f: impl Fn(u64, i64) -> String + Send + 'static) -> Blame {
    Box::new(f)
}

/// Fail the run with `msg`; the task exits (the op to return).
pub fn fail(env: &mut Env<'_>, msg: impl Into<String>) -> Op {
    env.fail(msg);
    Op::Exit
}

/// `step!(piece.step(env))`: return the op the piece asks for from the enclosing
/// [`Program::next`]; fall through once the piece is done.
macro_rules! step {
    ($step:expr) => {
        if let Some(op) = $step {
            return op;
        }
    };
}
pub(crate) use step;

/// A program with a name: its comm in traces ([`Program::comm`]).
struct Named {
    comm: String,
    inner: Box<dyn crate::kernel::abi::Program>,
}

impl crate::kernel::abi::Program for Named {
    #[inline]
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        self.inner.next(env)
    }

    fn comm(&self) -> Option<String> {
        Some(self.comm.clone())
    }
}

/// `program`, named `comm` in traces (`group:index`: the part before `:` is its group).
pub fn named(
    comm: impl Into<String>,
    program: Box<dyn crate::kernel::abi::Program>,
) -> Box<dyn crate::kernel::abi::Program> {
    Box::new(Named {
        comm: comm.into(),
        inner: program,
    })
}

/// Helpers for the pieces' tests: drive a piece by hand, or run a program in a simulation.
#[cfg(test)]
pub(crate) mod testing {
    use crate::engine::SimRng;
    use crate::kernel::abi::{Env, Op, Program, Record};
    use crate::kernel::Kernel;
    use crate::workload::{metric, Metric, Workload};
    use crate::{RunConfig, Simulation};

    /// An op, as text (ops are neither `Debug` nor `PartialEq`: they may hold programs).
    /// Exhaustive on purpose: a new op must say how it reads.
    pub(crate) fn show(op: &Op) -> String {
        match op {
            Op::Compute { ns, ws } => format!("compute {ns} {ws}"),
            Op::Read { fd, len } => format!("read {fd} {len}"),
            Op::Write { fd, len } => format!("write {fd} {len}"),
            Op::Poll { fds } => format!("poll {fds:?}"),
            Op::Yield => "yield".into(),
            Op::Sleep { ns } => format!("sleep {ns}"),
            Op::Fork { .. } => "fork".into(),
            Op::Clone { .. } => "clone".into(),
            Op::Exit => "exit".into(),
            Op::Wait => "wait".into(),
            Op::Pipe => "pipe".into(),
            Op::SocketPair => "socketpair".into(),
            Op::TcpPair { nodelay: false } => "tcppair".into(),
            Op::TcpPair { nodelay: true } => "tcppair nodelay".into(),
            Op::UdpPair => "udppair".into(),
            Op::Close { fd } => format!("close {fd}"),
            Op::Exec { .. } => "exec".into(),
            Op::Nice { inc } => format!("nice {inc}"),
            Op::SetAffinity { mask } => format!("setaffinity {mask}"),
            Op::SleepUntil { at } => format!("sleep-until {at}"),
            Op::Sync(s) => format!("{s:?}"),
        }
    }

    /// Drive `step` by hand: call it with each return value in turn (the first call sees
    /// `rets[0]`, as a program sees 0 at start), collecting the ops it asks for until it
    /// is done (`"done"`) or the values run out. Returns the ops and the record.
    pub(crate) fn drive(
        rets: &[i64],
        mut step: impl FnMut(&mut Env<'_>) -> Option<Op>,
    ) -> (Vec<String>, Record) {
        let mut rng = SimRng::new(1);
        let mut rec = Record::default();
        let mut ops = Vec::new();
        for &ret in rets {
            let mut env = Env {
                ret,
                now: 0,
                pid: 1,
                cpu: 0,
                ctxt: 0,
                rng: &mut rng,
                rec: &mut rec,
            };
            match step(&mut env) {
                Some(op) => ops.push(show(&op)),
                None => {
                    ops.push("done".into());
                    break;
                }
            }
        }
        (ops, rec)
    }

    /// A workload whose init runs `root`; its result is counter `done`.
    struct Custom<F: Fn() -> Box<dyn Program> + Send>(F);

    impl<F: Fn() -> Box<dyn Program> + Send> Workload for Custom<F> {
        fn root(&self) -> Box<dyn Program> {
            (self.0)()
        }
        fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
            Ok(metric("done", rec.count("done") as f64, "", "higher"))
        }
        fn limit_ns(&self) -> crate::engine::Time {
            10 * crate::engine::SEC
        }
    }

    /// Run `root` as init under `fifo` on `cpus` CPUs of piii700-1m, seed 1: the run's
    /// outcome and the simulation.
    pub(crate) fn run(
        cpus: usize,
        root: impl Fn() -> Box<dyn Program> + Send + 'static,
    ) -> (Result<(), crate::SimError>, Simulation) {
        let config = RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(cpus),
            policy: "fifo".into(),
            workload: "toolkit".into(),
            seed: 1,
        };
        let mut sim = Simulation::with_workload(config, Box::new(Custom(root))).unwrap();
        let r = sim.run(&mut |_, _| {});
        (r, sim)
    }
}
