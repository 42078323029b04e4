//! `synthetic`: a stress load for the simulator itself, not a benchmark of the era.
//!
//! `tasks` processes in pairs; each runs `ops` rounds of: compute for an exponentially
//! distributed time (mean `compute_us`) over a working set of `ws_kb`, then — at random —
//! `sched_yield()`, a short `nanosleep()`, or a 64-byte ping through a pipe that its
//! partner echoes. It exercises every scheduler path (yield, timer wake-ups, pipe
//! wake-ups, preemption at the tick, cache refills) with thousands of tasks, so
//! `schedlab bench` can report events/s for a load far from the two-task lmbench tests.
//! Result: rounds completed per simulated second.

use crate::engine::{Time, MS, US};
use crate::kernel::abi::{errno_name, program, Env, Op, Program, Record};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{step, Open, Reap, Spawn};
use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `synthetic`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        tasks: u64 = int("2000", 2, 1_000_000).help("tasks (rounded up to pairs)")
            .source("model choice (the simulator's stress load)");
        ops: u64 = int("50", 1, 1_000_000).help("rounds per task")
            .source("model choice (the simulator's stress load)");
        compute_us: u64 = int("200", 0, 1_000_000).help("mean compute per round, µs")
            .unit("us")
            .source("model choice (the simulator's stress load)");
        ws_kb: u64 = int("16", 0, 65536).help("working set per task, KB")
            .unit("KB")
            .source("model choice (the simulator's stress load)");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "synthetic",
    about: "simulator stress load: task pairs computing, yielding, sleeping and pinging",
    small: &["synthetic:tasks=20,ops=10"],
    metric: "rounds/s",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(Synthetic {
        pairs: o.tasks.div_ceil(2),
        ops: o.ops,
        compute: o.compute_us * US,
        ws: o.ws_kb * 1024,
    }))
}

struct Synthetic {
    pairs: u64,
    ops: u64,
    compute: Time,
    ws: u64,
}

/// One side of a pair. `lead` sides choose the action; the partner answers pings.
fn member(lead: bool, rd: Fd, wr: Fd, ops: u64, compute: Time, ws: u64) -> Box<dyn Program> {
    let mut round = 0;
    let mut step = 0u8;
    let mut pinging = false;
    program(move |e: &mut Env<'_>| {
        loop {
            match step {
                0 => {
                    if round == ops {
                        // Tell the partner we are done (a zero-length marker is not
                        // possible through a pipe, so the lead sends a final 1-byte ping).
                        step = 9;
                        return if lead {
                            Op::Write { fd: wr, len: 1 }
                        } else {
                            Op::Exit
                        };
                    }
                    round += 1;
                    e.count("rounds", 1);
                    step = 1;
                    let ns = e.rng.exp(compute as f64) as Time;
                    return Op::Compute { ns, ws };
                }
                1 => {
                    step = 0;
                    if !lead {
                        step = 2;
                        continue;
                    }
                    let r = e.rng.below(10);
                    if r < 4 {
                        return Op::Yield;
                    } else if r < 6 {
                        return Op::Sleep {
                            ns: (1 + e.rng.below(20)) * MS,
                        };
                    }
                    pinging = true;
                    step = 3;
                    return Op::Write { fd: wr, len: 64 };
                }
                2 => {
                    // Partner: wait for a ping (or the final byte) and echo it.
                    step = 4;
                    return Op::Read { fd: rd, len: 64 };
                }
                3 => {
                    step = 0;
                    if pinging {
                        pinging = false;
                        return Op::Read { fd: rd, len: 64 };
                    }
                }
                4 => {
                    if e.ret == 1 {
                        return Op::Exit;
                    }
                    step = 0;
                    return Op::Write {
                        fd: wr,
                        len: e.ret as u64,
                    };
                }
                _ => return Op::Exit,
            }
        }
    })
}

struct Root {
    phase: u8,
    pairs: u64,
    ops: u64,
    compute: Time,
    ws: u64,
    /// Two pipes per pair: the lead writes the first, its partner the second.
    pipes: Open,
    /// The lead, then its partner, per pair.
    members: Spawn,
    reap: Reap,
}

impl Program for Root {
    fn next(&mut self, e: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                // Per pair: two pipes, the lead, its partner.
                0 => loop {
                    step!(self.pipes.step(e));
                    let (pipes, ops, c, ws) = (self.pipes.fds(), self.ops, self.compute, self.ws);
                    step!(self.members.step(e, |k, _| {
                        let pair = (k / 2) as usize;
                        let (a, b) = (pipes[2 * pair], pipes[2 * pair + 1]);
                        if k % 2 == 0 {
                            member(true, b, a + 1, ops, c, ws)
                        } else {
                            // Partner reads what the lead wrote on a, writes on b.
                            member(false, a, b + 1, ops, c, ws)
                        }
                    }));
                    if self.members.spawned() == 2 * self.pairs {
                        break;
                    }
                    self.pipes.more(2);
                    self.members.more(2);
                },
                1 => e.mark("start"),
                2 => step!(self.reap.step(e)),
                _ => {
                    e.mark("end");
                    return Op::Exit;
                }
            }
            self.phase += 1;
        }
    }
}

impl Workload for Synthetic {
    fn root(&self) -> Box<dyn Program> {
        let pairs = self.pairs;
        Box::new(Root {
            phase: 0,
            pairs,
            ops: self.ops,
            compute: self.compute,
            ws: self.ws,
            pipes: Open::pipes(0, move |i, ret| {
                format!(
                    "synthetic: pipe() refused ({}) after {} of {pairs} pairs",
                    errno_name(ret),
                    i / 2
                )
            }),
            members: Spawn::forks(0, |_, ret| {
                format!("synthetic: fork() refused ({})", errno_name(ret))
            }),
            reap: Reap::n(2 * pairs, |_, ret| {
                format!("synthetic: wait() returned {ret}")
            }),
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        Ok(metric(
            "rounds_per_s",
            rec.count("rounds") as f64 / (ns as f64 / 1e9),
            "rounds/s",
            "higher",
        ))
    }
}
