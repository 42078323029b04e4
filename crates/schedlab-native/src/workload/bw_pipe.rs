//! bw_pipe (lmbench2 `src/bw_pipe.c`, benchmarks.md §4), natively, as the model
//! (`schedlab::workload::bw_pipe`) and with its parameters: a child writes `chunk_kb`
//! chunks into a pipe that the parent reads. The parent reads untimed for `warmup_ms` (and
//! at least `warmup_kb`) — lmbench's `BENCH` harness has the pair streaming for about a
//! second before the reported run — then times `mb` MB. The writer writes until the reader
//! is done (lmbench kills it; here a shared stop flag, and the reader drains the pipe
//! untimed). Result: MB/s with lmbench's MB = 2^20 bytes.

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Fail, Res};

const MB: u64 = 1 << 20;
const NAMES: &[&str] = &[
    "bytes_written",
    "bytes_read",
    "bytes_timed",
    "reads",
    "stop",
];
const STOP: usize = 4;

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::bw_pipe::Options::from_params(p);
    let bytes = o.mb * MB;
    let chunk = o.chunk_kb as usize * 1024;
    let warmup_bytes = o.warmup_kb * 1024;
    let warmup_ns = o.warmup_ms * 1_000_000;
    let c = Counters::new(NAMES)?;
    let (rd, wr) = sys::pipe()?;
    let child = ctx.fork(|| {
        sys::close(rd);
        let buf = vec![b'w'; chunk];
        let mut written = 0u64;
        while c.get(STOP) == 0 {
            sys::write_full(wr, &buf)?;
            written += chunk as u64;
        }
        c.add(0, written);
        Ok(())
    })?;
    sys::close(wr);
    let mut buf = vec![0u8; chunk];
    let (mut got, mut reads) = (0u64, 0u64);
    let mut read = |want: usize, got: &mut u64| -> Res<usize> {
        let n = sys::read(rd, &mut buf[..want])?;
        if n == 0 {
            return Err(Fail(format!("bw_pipe: end of file after {got} bytes")));
        }
        *got += n as u64;
        reads += 1;
        Ok(n)
    };
    // Untimed streaming.
    let w0 = sys::now_ns();
    while got < warmup_bytes || sys::now_ns() - w0 < warmup_ns {
        read(chunk, &mut got)?;
    }
    // Timed: exactly `mb` MB.
    let mut timed = 0u64;
    let t0 = sys::now_ns();
    while timed < bytes {
        timed += read(((bytes - timed) as usize).min(chunk), &mut got)? as u64;
    }
    let ns = sys::now_ns() - t0;
    // Stop the writer and drain what it still writes, untimed.
    c.add(STOP, 1);
    loop {
        let n = sys::read(rd, &mut buf)?;
        if n == 0 {
            break;
        }
        got += n as u64;
    }
    ctx.join_all(vec![child])?;
    c.add(1, got);
    c.add(2, timed);
    c.add(3, reads);
    let mbs = bytes as f64 / MB as f64 / (ns.max(1) as f64 / 1e9);
    let mut out = Outcome::new("mb_per_s", mbs, "MB/s", "higher", ns);
    out.counts = c.to_map();
    out.counts.remove("stop");
    Ok(out)
}
