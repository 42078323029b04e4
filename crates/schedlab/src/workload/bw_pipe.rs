//! `bw_pipe` (lmbench2 `src/bw_pipe.c`): pipe bandwidth.
//!
//! The original: a child writes and the parent reads through one pipe in 64 KB chunks
//! (`XFERSIZE`), 10 MB per timed iteration; the figure is MB/s with lmbench's
//! MB = 2^20 bytes. With a one-page 2.4 pipe every 64 KB write is sixteen page-sized
//! hand-offs, so on 2.4 this is also a context-switch benchmark. The model moves `mb`
//! MB timed after a warm-up.
//!
//! Warm-up: lmbench's `BENCH` harness repeats the body, growing the iteration count until
//! one run lasts about a second (`MEDIUM`), and reports that last run; the same pair of
//! processes has therefore been streaming for about a second before the reported interval
//! — long enough for a scheduler's balancer to have placed the pair. The model reads
//! untimed for `warmup_ms` of simulated time (and at least `warmup_kb`), then times `mb`
//! MB. The writer writes until the reader is done (lmbench kills it), so the run ends when
//! the timed read completes.

use crate::engine::{Time, MS};
use crate::kernel::abi::{errno_name, program, Env, Op, Program, Record};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{fail, step, Open, Spawn};
use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `bw_pipe`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        mb: u64 = int("10", 1, 100_000).help("MB moved in the timed part (lmbench2: 10)")
            .unit("MB")
            .source("benchmarks.md §4");
        chunk_kb: u64 = int("64", 1, 1024).help("read/write size in KB (lmbench XFERSIZE)")
            .unit("KB")
            .source("benchmarks.md §4");
        warmup_kb: u64 = int("256", 0, 1_000_000).help("KB moved before timing (at least)")
            .unit("KB")
            .source("benchmarks.md §4");
        warmup_ms: u64 = int("1000", 0, 3_600_000).help("simulated ms of untimed streaming first (lmbench BENCH MEDIUM: about 1 s)")
            .unit("ms")
            .source("benchmarks.md §4");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "bw_pipe",
    about: "lmbench bw_pipe: a child writes 64 KB chunks into a pipe the parent reads",
    small: &["bw_pipe:mb=1,warmup_kb=64,warmup_ms=2"],
    metric: "MB/s",
    params: PARAMS,
    build,
};

const MB: u64 = 1 << 20;

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(BwPipe {
        bytes: o.mb * MB,
        chunk: o.chunk_kb * 1024,
        warmup: o.warmup_kb * 1024,
        warmup_ns: o.warmup_ms * MS,
    }))
}

struct BwPipe {
    bytes: u64,
    chunk: u64,
    warmup: u64,
    warmup_ns: Time,
}

/// The child: write `chunk`-sized blocks until killed (the run ends with the reader).
fn writer(fd: Fd, chunk: u64) -> Box<dyn Program> {
    program(move |_env: &mut Env<'_>| Op::Write { fd, len: chunk })
}

struct Reader {
    phase: u8,
    pipe: Open,
    writer: Spawn,
    /// A read is out.
    reading: bool,
    got: u64,
    first_read: Option<Time>,
    warmup: u64,
    warmup_ns: Time,
    timed_from: Option<u64>,
    bytes: u64,
    chunk: u64,
}

impl Program for Reader {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                0 => step!(self.pipe.step(env)),
                1 => {
                    let (fd, chunk) = (self.pipe.fds()[0], self.chunk);
                    step!(self.writer.step(env, |_, _| writer(fd + 1, chunk)));
                }
                _ => return self.read(env),
            }
            self.phase += 1;
        }
    }
}

impl Reader {
    /// Untimed reads of `chunk` until the warm-up is over, then `bytes` timed.
    fn read(&mut self, env: &mut Env<'_>) -> Op {
        if std::mem::take(&mut self.reading) {
            if env.ret <= 0 {
                let msg = format!(
                    "bw_pipe: read returned {} after {} bytes",
                    env.ret, self.got
                );
                return fail(env, msg);
            }
            self.got += env.ret as u64;
        }
        let first = *self.first_read.get_or_insert(env.now);
        match self.timed_from {
            None if self.got >= self.warmup && env.now - first >= self.warmup_ns => {
                self.timed_from = Some(self.got);
                env.mark("start");
            }
            Some(from) if self.got - from >= self.bytes => {
                env.mark("end");
                env.count("bytes", self.got - from);
                env.stop();
                return Op::Exit;
            }
            _ => {}
        }
        self.reading = true;
        let left = match self.timed_from {
            Some(from) => self.bytes - (self.got - from),
            None => self.chunk,
        };
        Op::Read {
            fd: self.pipe.fds()[0],
            len: left.min(self.chunk),
        }
    }
}

impl Workload for BwPipe {
    fn root(&self) -> Box<dyn Program> {
        Box::new(Reader {
            phase: 0,
            pipe: Open::pipes(1, |_, ret| {
                format!("bw_pipe: pipe() failed ({})", errno_name(ret))
            }),
            writer: Spawn::forks(1, |_, ret| {
                format!("bw_pipe: fork() failed ({})", errno_name(ret))
            }),
            reading: false,
            got: 0,
            first_read: None,
            warmup: self.warmup,
            warmup_ns: self.warmup_ns,
            timed_from: None,
            bytes: self.bytes,
            chunk: self.chunk,
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        let moved = rec.count("bytes");
        let mbs = moved as f64 / MB as f64 / (ns as f64 / 1e9);
        Ok(metric("mb_per_s", mbs, "MB/s", "higher"))
    }
}
