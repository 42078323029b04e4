//! `lat_pipe` (lmbench2 `src/lat_pipe.c`): pipe latency.
//!
//! The original: a parent and a child joined by two pipes pass a 1-byte token; the parent
//! writes, then reads the reply; the child loops reading and writing back. The timed body
//! is one write+read by the parent; the figure is µs per round trip (two hops: on one CPU
//! two context switches and four pipe system calls). The model runs `warmup` untimed round
//! trips, then `rounds` timed ones; the child exits when the parent is done.
//!
//! `pin=same` puts both processes on CPU 0 (`taskset -c 0 lat_pipe`: every hop is a local
//! wake-up and switch); `pin=split` puts the parent on CPU 0 and the child on CPU 1 (every
//! hop is a cross-CPU wake-up: IPI, idle exit). `none` leaves placement to the scheduler.

use crate::kernel::abi::{errno_name, program, Env, Op, Program, Record};
use crate::kernel::chan::Fd;
use crate::spec::{Params, SpecError};

use super::toolkit::{step, Open, Reap, Spawn};
use super::{interval, metric, Workload, WorkloadInfo};
use crate::kernel::Kernel;
use crate::machine::{CpuMask, Machine};
use crate::workload::Metric;

crate::options! {
    /// The parameters of `lat_pipe`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        rounds: u64 = int("20000", 1, 100_000_000).help("timed round trips")
            .source("benchmarks.md §4");
        warmup: u64 = int("200", 0, 1_000_000).help("untimed round trips first")
            .source("benchmarks.md §4");
        pin: String = choice("none", &["none", "same", "split"])
            .help("none: the scheduler places; same: both on CPU 0; split: parent CPU 0, child CPU 1")
            .source("taskset, as lmbench users ran it");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lat_pipe",
    about: "lmbench lat_pipe: 1-byte token ping-pong between two processes over two pipes",
    small: &["lat_pipe:rounds=200,warmup=10"],
    metric: "us per round trip",
    params: PARAMS,
    build,
};

fn build(p: &Params, m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    let masks = match o.pin.as_str() {
        "same" => Some((CpuMask::single(0), CpuMask::single(0))),
        "split" if m.cpus < 2 => {
            return Err(SpecError::Invalid(format!(
                "lat_pipe: pin=split needs 2 CPUs, the machine has {} (accepted: pin=none|same)",
                m.cpus
            )))
        }
        "split" => Some((CpuMask::single(0), CpuMask::single(1))),
        _ => None,
    };
    Ok(Box::new(LatPipe {
        rounds: o.rounds,
        warmup: o.warmup,
        masks,
    }))
}

struct LatPipe {
    rounds: u64,
    warmup: u64,
    /// Affinity masks of parent and child, when pinned.
    masks: Option<(CpuMask, CpuMask)>,
}

/// The echoing child: read one byte, write it back, `n` times (after moving to `mask`).
fn child(from_parent: Fd, to_parent: Fd, n: u64, mask: Option<CpuMask>) -> Box<dyn Program> {
    let mut left = n;
    let mut reading = true;
    let mut mask = mask;
    program(move |_env: &mut Env<'_>| {
        if let Some(mask) = mask.take() {
            return Op::SetAffinity {
                mask: Box::new(mask),
            };
        }
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

struct Parent {
    phase: u8,
    /// Parent and child affinity, set before the pipes are made.
    masks: Option<(CpuMask, CpuMask)>,
    /// Parent to child, child to parent.
    pipes: Open,
    child: Spawn,
    /// Round trips done; `reading` once this one's write is out.
    i: u64,
    reading: bool,
    reap: Reap,
    total: u64,
    warmup: u64,
}

impl Program for Parent {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                0 => {
                    if let Some((parent, _)) = self.masks {
                        self.phase += 1;
                        return Op::SetAffinity {
                            mask: Box::new(parent),
                        };
                    }
                }
                1 => step!(self.pipes.step(env)),
                2 => {
                    let (p, total) = (self.pipes.fds(), self.total);
                    // The child inherits the parent's mask; `split` moves it on.
                    let mask = self.masks.filter(|(a, b)| a != b).map(|(_, b)| b);
                    step!(self
                        .child
                        .step(env, |_, _| child(p[0], p[1] + 1, total, mask)));
                }
                // Round trip `i`: write the token, read the reply.
                3 => {
                    if std::mem::take(&mut self.reading) {
                        self.i += 1;
                        env.count("round_trips", 1);
                        return Op::Read {
                            fd: self.pipes.fds()[1],
                            len: 1,
                        };
                    }
                    if self.i == self.warmup {
                        env.mark("start");
                    }
                    if self.i < self.total {
                        self.reading = true;
                        return Op::Write {
                            fd: self.pipes.fds()[0] + 1,
                            len: 1,
                        };
                    }
                    env.mark("end");
                }
                4 => step!(self.reap.step(env)),
                _ => return Op::Exit,
            }
            self.phase += 1;
        }
    }
}

impl Workload for LatPipe {
    fn root(&self) -> Box<dyn Program> {
        Box::new(Parent {
            phase: 0,
            masks: self.masks,
            pipes: Open::pipes(2, |_, ret| {
                format!("lat_pipe: pipe() failed ({})", errno_name(ret))
            }),
            child: Spawn::forks(1, |_, ret| {
                format!("lat_pipe: fork() failed ({})", errno_name(ret))
            }),
            i: 0,
            reading: false,
            reap: Reap::n(1, |_, ret| format!("lat_pipe: wait() returned {ret}")),
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
