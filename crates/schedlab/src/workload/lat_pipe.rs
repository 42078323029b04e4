//! `lat_pipe` (lmbench2 `src/lat_pipe.c`): pipe latency.
//!
//! The original: a parent and a child joined by two pipes pass a 1-byte token; the parent
//! writes, then reads the reply; the child loops reading and writing back. The timed body
//! is one write+read by the parent; the figure is µs per round trip (two hops: on one CPU
//! two context switches and four pipe system calls). The model runs `warmup` untimed round
//! trips, then `rounds` timed ones; the child exits when the parent is done.

use crate::kernel::abi::{program, Env, Op, Program, Record};
use crate::kernel::chan::Fd;
use crate::spec::{Params, SpecError};

use super::{interval, metric, Workload, WorkloadInfo};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::workload::Metric;

crate::options! {
    /// The parameters of `lat_pipe`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        rounds: u64 = int("20000", 1, 100_000_000).help("timed round trips")
            .source("benchmarks.md §4");
        warmup: u64 = int("200", 0, 1_000_000).help("untimed round trips first")
            .source("benchmarks.md §4");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lat_pipe",
    about: "lmbench lat_pipe: 1-byte token ping-pong between two processes over two pipes",
    metric: "us per round trip",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(LatPipe {
        rounds: o.rounds,
        warmup: o.warmup,
    }))
}

struct LatPipe {
    rounds: u64,
    warmup: u64,
}

/// The echoing child: read one byte, write it back, `n` times.
fn child(from_parent: Fd, to_parent: Fd, n: u64) -> Box<dyn Program> {
    let mut left = n;
    let mut reading = true;
    program(move |_env: &mut Env<'_>| {
        if left == 0 {
            return Op::Exit;
        }
        if reading {
            reading = false;
            Op::Read {
                fd: from_parent,
                len: 1,
            }
        } else {
            reading = true;
            left -= 1;
            Op::Write {
                fd: to_parent,
                len: 1,
            }
        }
    })
}

enum St {
    Pipe1,
    Pipe2,
    Fork,
    Round { i: u64, writing: bool },
    Wait,
}

struct Parent {
    st: St,
    p1: Fd,
    p2: Fd,
    total: u64,
    warmup: u64,
}

impl Program for Parent {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        match self.st {
            St::Pipe1 => {
                self.st = St::Pipe2;
                Op::Pipe
            }
            St::Pipe2 => {
                self.p1 = env.ret as Fd;
                self.st = St::Fork;
                Op::Pipe
            }
            St::Fork => {
                self.p2 = env.ret as Fd;
                self.st = St::Round {
                    i: 0,
                    writing: true,
                };
                Op::Fork {
                    child: child(self.p1, self.p2 + 1, self.total),
                }
            }
            St::Round { i, writing } => {
                if writing {
                    if i == self.warmup {
                        env.mark("start");
                    }
                    if i == self.total {
                        env.mark("end");
                        self.st = St::Wait;
                        return Op::Wait;
                    }
                    self.st = St::Round { i, writing: false };
                    Op::Write {
                        fd: self.p1 + 1,
                        len: 1,
                    }
                } else {
                    self.st = St::Round {
                        i: i + 1,
                        writing: true,
                    };
                    env.count("round_trips", 1);
                    Op::Read {
                        fd: self.p2,
                        len: 1,
                    }
                }
            }
            St::Wait => Op::Exit,
        }
    }
}

impl Workload for LatPipe {
    fn root(&self) -> Box<dyn Program> {
        Box::new(Parent {
            st: St::Pipe1,
            p1: 0,
            p2: 0,
            total: self.warmup + self.rounds,
            warmup: self.warmup,
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        Ok(metric(
            "us_per_round_trip",
            ns as f64 / self.rounds as f64 / 1000.0,
            "us",
            "lower",
        ))
    }
}
