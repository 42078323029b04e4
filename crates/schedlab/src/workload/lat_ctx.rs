//! `lat_ctx` (lmbench2 `src/lat_ctx.c`): context-switch latency, the lmbench way.
//!
//! The original (benchmarks.md §4): `lat_ctx [-s KB] procs` builds a ring of `procs`
//! processes joined by pipes — the parent is ring member 0 and writes to pipe 0; member
//! `i` reads pipe `i−1`, sums its private `-s` KB array (`sumit`, an unrolled integer sum)
//! and writes the 4-byte token to pipe `i`; the parent reads the last pipe and sums its
//! own array. Before the ring runs, the same process measures the overhead it will
//! subtract: (1) with `-s`, `sumit` over one hot 4 KB chunk, scaled to the array size;
//! (2) the pipe cost — the parent alone writes a token into a pipe and reads it back (no
//! switch), cycling over the ring's pipes. Result: elapsed / (trips × procs) − overhead,
//! "µs per switch".
//!
//! The model does all of it in one simulated run, in lmbench's order: sum overhead (after
//! one untimed warm-up chunk, `ovr_iters` timed chunks), `procs` pipes, pipe cost (one
//! untimed pass, `ovr_iters` timed passes), fork `procs − 1` ring members, one trip round
//! the ring to start ("get the token in the pipeline"), `warmup` untimed trips, then
//! `rounds` timed trips. Every measured quantity is simulated time; nothing is assumed.
//!
//! What it counts: one trip = `procs` token hops = `procs` pipe writes and reads of 4
//! bytes; the timed part is `rounds × procs` hops, each normally a context switch.
//!
//! Model notes:
//! * `sumit` on a hot cache costs `Costs::sum_ns_per_kb` per KB; the working set is the
//!   task's array (`Op::Compute { ws }`), so a member whose array was evicted, or that
//!   runs on another CPU than last time, also pays the refill — which lmbench cannot
//!   subtract (its man page says so; benchmarks.md §4).
//! * A member's `bzero` of its array at start is a hot sum over the array (it makes the
//!   copy-on-write array private and resident).
//! * \[INFERRED\] lmbench's members never exit (they are killed with SIGTERM); here each
//!   member exits after the last trip, and the parent reaps them after the timed part.

use crate::engine::Time;
use crate::kernel::abi::{errno_name, program, Env, Op, Program, Record};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{step, Open, Reap, Spawn};
use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `lat_ctx`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        procs: u64 = int("2", 2, 2048).help("processes in the ring (lmbench MAXPROC 2048)")
            .source("benchmarks.md §4");
        size_kb: u64 = int("0", 0, 65536).help("private array each process sums on receiving the token (-s), KB")
            .unit("KB")
            .source("benchmarks.md §4");
        rounds: u64 = int("2000", 1, 10_000_000).help("timed trips round the ring")
            .source("benchmarks.md §4");
        warmup: u64 = int("20", 0, 1_000_000).help("untimed trips first")
            .source("benchmarks.md §4");
        ovr_iters: u64 = int("1000", 1, 1_000_000).help("timed iterations of each overhead measurement (pipe pass, hot 4 KB sum)")
            .source("benchmarks.md §4");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lat_ctx",
    about: "lmbench lat_ctx: a 4-byte token round a ring of processes, each summing its array",
    small: &["lat_ctx:procs=3,size_kb=8,rounds=50,warmup=2,ovr_iters=20"],
    metric: "us per switch",
    params: PARAMS,
    build,
};

/// lmbench `CHUNK`: the hot sum is measured on 4 KB and scaled.
const CHUNK: u64 = 4 << 10;
/// lmbench's token: one `int`.
const TOKEN: u64 = 4;

fn build(p: &Params, m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(LatCtx {
        procs: o.procs as u32,
        size: o.size_kb * 1024,
        rounds: o.rounds,
        warmup: o.warmup,
        ovr_iters: o.ovr_iters,
        sum_ns_per_kb: m.costs().sum_ns_per_kb,
    }))
}

struct LatCtx {
    procs: u32,
    size: u64,
    rounds: u64,
    warmup: u64,
    ovr_iters: u64,
    sum_ns_per_kb: Time,
}

impl LatCtx {
    /// Overheads measured by the run, in ns per hop: (pipe pass, array sum).
    fn overheads(&self, rec: &Record) -> Result<(f64, f64), String> {
        let pipe = interval(rec, "pipe_start", "pipe_end")? as f64 / self.ovr_iters as f64;
        let sum = if self.size > 0 {
            let chunk = interval(rec, "sum_start", "sum_end")? as f64 / self.ovr_iters as f64;
            chunk * self.size as f64 / CHUNK as f64
        } else {
            0.0
        };
        Ok((pipe, sum))
    }
}

/// `sumit(bytes)` on the task's array: the hot cost; the cache model adds any refill.
fn sumit(bytes: u64, sum_ns_per_kb: Time) -> Op {
    Op::Compute {
        ns: bytes * sum_ns_per_kb / 1024,
        ws: bytes,
    }
}

/// Ring member `doit(rd, wr)`: zero the array, then per trip read the token, sum, pass
/// it on; exit after `trips`.
fn member(rd: Fd, wr: Fd, size: u64, sum_ns_per_kb: Time, trips: u64) -> Box<dyn Program> {
    let mut started = false;
    let mut left = trips;
    let mut step = 0u8;
    program(move |env: &mut Env<'_>| {
        if !started {
            started = true;
            if size > 0 {
                return sumit(size, sum_ns_per_kb);
            }
        }
        loop {
            match step {
                0 => {
                    if left == 0 {
                        return Op::Exit;
                    }
                    step = 1;
                    return Op::Read { fd: rd, len: TOKEN };
                }
                1 => {
                    if env.ret != TOKEN as i64 {
                        env.fail(format!("lat_ctx: member read returned {}", env.ret));
                        return Op::Exit;
                    }
                    step = 2;
                    if size > 0 {
                        return sumit(size, sum_ns_per_kb);
                    }
                }
                _ => {
                    step = 0;
                    left -= 1;
                    env.count("hops", 1);
                    return Op::Write { fd: wr, len: TOKEN };
                }
            }
        }
    })
}

#[derive(Clone, Copy)]
enum Ph {
    /// Hot-sum overhead: chunk `i` (0 is the untimed warm-up).
    Sum(u64),
    /// Creating the pipes.
    Pipes,
    /// Pipe-cost pass `i` (0 untimed); `read` once the write is done.
    PipeCost { i: u64, read: bool },
    /// Forking the ring members (1..procs).
    Fork,
    /// Ring trip `i` (0 is the start-up trip); step 0 write, 1 read, 2 sum.
    Trip { i: u64, step: u8 },
    /// Reaping the members.
    Reap,
}

struct Parent {
    w: LatCtxParams,
    ph: Ph,
    /// Pipe `i` feeds ring member `i + 1` (pipe `procs − 1` the parent).
    pipes: Open,
    members: Spawn,
    reap: Reap,
}

/// Parameters the parent needs.
#[derive(Clone, Copy)]
struct LatCtxParams {
    procs: u32,
    size: u64,
    rounds: u64,
    warmup: u64,
    ovr_iters: u64,
    sum_ns_per_kb: Time,
}

impl Program for Parent {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        let w = self.w;
        loop {
            match self.ph {
                Ph::Sum(i) => {
                    if w.size == 0 {
                        self.ph = Ph::Pipes;
                        continue;
                    }
                    if i == 1 {
                        env.mark("sum_start");
                    }
                    if i == w.ovr_iters + 1 {
                        env.mark("sum_end");
                        self.ph = Ph::Pipes;
                        continue;
                    }
                    self.ph = Ph::Sum(i + 1);
                    return sumit(CHUNK, w.sum_ns_per_kb);
                }
                Ph::Pipes => {
                    step!(self.pipes.step(env));
                    self.ph = Ph::PipeCost { i: 0, read: false };
                }
                Ph::PipeCost { i, read } => {
                    let k = self.pipes.fds()[(i % w.procs as u64) as usize];
                    if !read {
                        if i == 1 {
                            env.mark("pipe_start");
                        }
                        if i == w.ovr_iters + 1 {
                            env.mark("pipe_end");
                            self.ph = Ph::Fork;
                            continue;
                        }
                        self.ph = Ph::PipeCost { i, read: true };
                        return Op::Write {
                            fd: k + 1,
                            len: TOKEN,
                        };
                    }
                    self.ph = Ph::PipeCost {
                        i: i + 1,
                        read: false,
                    };
                    return Op::Read { fd: k, len: TOKEN };
                }
                Ph::Fork => {
                    let (pipes, trips) = (self.pipes.fds(), 1 + w.warmup + w.rounds);
                    step!(self.members.step(env, |i, _| {
                        let i = i as usize + 1;
                        let (rd, wr) = (pipes[i - 1], pipes[i] + 1);
                        member(rd, wr, w.size, w.sum_ns_per_kb, trips)
                    }));
                    self.ph = Ph::Trip { i: 0, step: 0 };
                }
                Ph::Trip { i, step } => match step {
                    0 => {
                        if i == 1 + w.warmup {
                            env.mark("start");
                        }
                        if i == 1 + w.warmup + w.rounds {
                            env.mark("end");
                            self.ph = Ph::Reap;
                            continue;
                        }
                        self.ph = Ph::Trip { i, step: 1 };
                        env.count("hops", 1);
                        return Op::Write {
                            fd: self.pipes.fds()[0] + 1,
                            len: TOKEN,
                        };
                    }
                    1 => {
                        self.ph = Ph::Trip { i, step: 2 };
                        return Op::Read {
                            fd: self.pipes.fds()[w.procs as usize - 1],
                            len: TOKEN,
                        };
                    }
                    _ => {
                        if env.ret != TOKEN as i64 {
                            env.fail(format!("lat_ctx: parent read returned {}", env.ret));
                            return Op::Exit;
                        }
                        if i > 0 {
                            env.count("trips", 1);
                        }
                        self.ph = Ph::Trip { i: i + 1, step: 0 };
                        // Start-up trip: lmbench zeroes the parent's array after it.
                        if w.size > 0 {
                            return sumit(w.size, w.sum_ns_per_kb);
                        }
                    }
                },
                Ph::Reap => {
                    step!(self.reap.step(env));
                    return Op::Exit;
                }
            }
        }
    }
}

impl Workload for LatCtx {
    fn root(&self) -> Box<dyn Program> {
        let w = LatCtxParams {
            procs: self.procs,
            size: self.size,
            rounds: self.rounds,
            warmup: self.warmup,
            ovr_iters: self.ovr_iters,
            sum_ns_per_kb: self.sum_ns_per_kb,
        };
        let members = self.procs as u64 - 1;
        Box::new(Parent {
            w,
            ph: Ph::Sum(0),
            pipes: Open::pipes(self.procs as u64, |_, ret| {
                format!("lat_ctx: pipe() failed ({})", errno_name(ret))
            }),
            members: Spawn::forks(members, |_, ret| {
                format!("lat_ctx: fork failed ({})", errno_name(ret))
            }),
            reap: Reap::n(members, |_, ret| format!("lat_ctx: wait returned {ret}")),
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")? as f64;
        let (pipe, sum) = self.overheads(rec)?;
        let per_hop = ns / (self.rounds as f64 * self.procs as f64);
        Ok(metric(
            "us_per_switch",
            (per_hop - pipe - sum) / 1000.0,
            "us",
            "lower",
        ))
    }
}
