//! `bw_pipe` (lmbench2 `src/bw_pipe.c`): pipe bandwidth.
//!
//! The original: a child writes and the parent reads through one pipe in 64 KB chunks
//! (`XFERSIZE`), 10 MB per timed iteration; the figure is MB/s with lmbench's
//! MB = 2^20 bytes. With a one-page 2.4 pipe every 64 KB write is sixteen page-sized
//! hand-offs, so on 2.4 this is also a context-switch benchmark. The model moves `mb`
//! MB timed after `warmup_kb` untimed.

use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::report::Metric;
use crate::spec::{Kind, ParamSpec, Params, SpecError};
use crate::workload::program::{program, Env, Op, Program, Record};

use super::{interval, metric, Workload, WorkloadInfo};

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "bw_pipe",
    about: "lmbench bw_pipe: a child writes 64 KB chunks into a pipe the parent reads",
    metric: "MB/s",
    params: &[
        ParamSpec {
            name: "mb",
            default: "10",
            kind: Kind::Int {
                min: 1,
                max: 100_000,
            },
            help: "MB moved in the timed part (lmbench2: 10)",
        },
        ParamSpec {
            name: "chunk_kb",
            default: "64",
            kind: Kind::Int { min: 1, max: 1024 },
            help: "read/write size in KB (lmbench XFERSIZE)",
        },
        ParamSpec {
            name: "warmup_kb",
            default: "256",
            kind: Kind::Int {
                min: 0,
                max: 1_000_000,
            },
            help: "KB moved before timing",
        },
    ],
    build,
};

const MB: u64 = 1 << 20;

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    Ok(Box::new(BwPipe {
        bytes: p.uint("mb") * MB,
        chunk: p.uint("chunk_kb") * 1024,
        warmup: p.uint("warmup_kb") * 1024,
    }))
}

struct BwPipe {
    bytes: u64,
    chunk: u64,
    warmup: u64,
}

fn writer(fd: Fd, total: u64, chunk: u64) -> Box<dyn Program> {
    let mut left = total;
    program(move |_env: &mut Env<'_>| {
        if left == 0 {
            return Op::Exit;
        }
        let n = left.min(chunk);
        left -= n;
        Op::Write { fd, len: n }
    })
}

enum St {
    Pipe,
    Fork,
    Read { after_read: bool },
    Wait,
}

struct Reader {
    st: St,
    fd: Fd,
    got: u64,
    warmup: u64,
    total: u64,
    chunk: u64,
    started: bool,
}

impl Program for Reader {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        match self.st {
            St::Pipe => {
                self.st = St::Fork;
                Op::Pipe
            }
            St::Fork => {
                self.fd = env.ret as Fd;
                self.st = St::Read { after_read: false };
                Op::Fork {
                    child: writer(self.fd + 1, self.total, self.chunk),
                }
            }
            St::Read { after_read } => {
                if after_read {
                    if env.ret <= 0 {
                        env.fail(format!(
                            "bw_pipe: read returned {} after {} bytes",
                            env.ret, self.got
                        ));
                        return Op::Exit;
                    }
                    self.got += env.ret as u64;
                }
                if !self.started && self.got >= self.warmup {
                    self.started = true;
                    env.mark("start");
                }
                if self.got >= self.total {
                    env.mark("end");
                    self.st = St::Wait;
                    return Op::Wait;
                }
                self.st = St::Read { after_read: true };
                Op::Read {
                    fd: self.fd,
                    len: (self.total - self.got).min(self.chunk),
                }
            }
            St::Wait => Op::Exit,
        }
    }
}

impl Workload for BwPipe {
    fn root(&self) -> Box<dyn Program> {
        Box::new(Reader {
            st: St::Pipe,
            fd: 0,
            got: 0,
            warmup: self.warmup,
            total: self.warmup + self.bytes,
            chunk: self.chunk,
            started: false,
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        let mbs = self.bytes as f64 / MB as f64 / (ns as f64 / 1e9);
        Ok(metric("mb_per_s", mbs, "MB/s", "higher"))
    }
}
