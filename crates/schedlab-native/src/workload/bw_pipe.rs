//! bw_pipe (lmbench2 `src/bw_pipe.c`, benchmarks.md §4): a child writes `chunk_kb` chunks
//! into a pipe that the parent reads; `warmup_kb` untimed, then `mb` MB timed. Result: MB/s
//! with lmbench's MB = 2^20 bytes.

use schedlab::spec::{Kind, ParamSpec, Params};

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Fail, Res};

/// Parameters (as the simulated `bw_pipe`).
pub const PARAMS: &[ParamSpec] = &[
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
];

const MB: u64 = 1 << 20;
const NAMES: &[&str] = &["bytes_written", "bytes_read", "reads"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let bytes = p.uint("mb") * MB;
    let chunk = p.uint("chunk_kb") as usize * 1024;
    let warmup = p.uint("warmup_kb") * 1024;
    let total = bytes + warmup;
    let c = Counters::new(NAMES)?;
    let (rd, wr) = sys::pipe()?;
    let child = ctx.fork(|| {
        sys::close(rd);
        let buf = vec![b'w'; chunk];
        let mut left = total;
        while left > 0 {
            let n = left.min(chunk as u64) as usize;
            sys::write_full(wr, &buf[..n])?;
            left -= n as u64;
        }
        c.add(0, total);
        Ok(())
    })?;
    sys::close(wr);
    let mut buf = vec![0u8; chunk];
    let (mut got, mut reads) = (0u64, 0u64);
    let mut t0 = sys::now_ns();
    let mut started = false;
    loop {
        if !started && got >= warmup {
            started = true;
            t0 = sys::now_ns();
        }
        if got >= total {
            break;
        }
        let want = ((total - got) as usize).min(chunk);
        let n = sys::read(rd, &mut buf[..want])?;
        if n == 0 {
            return Err(Fail(format!(
                "bw_pipe: end of file after {got} of {total} bytes"
            )));
        }
        got += n as u64;
        reads += 1;
    }
    let ns = sys::now_ns() - t0;
    c.add(1, got);
    c.add(2, reads);
    ctx.join_all(vec![child])?;
    let mbs = bytes as f64 / MB as f64 / (ns.max(1) as f64 / 1e9);
    let mut out = Outcome::new("mb_per_s", mbs, "MB/s", "higher", ns);
    out.counts = c.to_map();
    Ok(out)
}
