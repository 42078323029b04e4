//! hackbench (benchmarks.md §1; the rt-tests version of §1.3): groups of `fds` senders
//! spraying `loops` messages of `datasize` bytes to each of `fds` receivers.
//!
//! As the original: the leader creates the ready and wake channels, then for each group
//! creates each channel and at once starts its receiver, then starts the senders, then
//! closes its own copies (process mode). Every worker writes one byte to *ready* and blocks
//! in `poll()` on *wake*. The leader reads one ready byte per worker, takes the time, writes
//! one byte to *wake* (the thundering herd), reaps every worker and takes the time again:
//! worker exit and reaping are inside the figure, forking is not. Result: seconds.
//!
//! Invariants checked by the tests: messages = groups · fds · fds · loops; bytes received =
//! bytes sent = messages · datasize.

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome, Task};
use crate::sys::{self, Res};

const C_MESSAGES: usize = 0;
const C_BYTES_RECEIVED: usize = 1;
const C_BYTES_SENT: usize = 2;
const NAMES: &[&str] = &["messages", "bytes_received", "bytes_sent"];

/// hackbench's `ready()`: announce readiness, then wait for the start byte.
fn ready(ready_out: i32, wakefd: i32) -> Res<()> {
    sys::write_full(ready_out, b"*")?;
    sys::poll_in(wakefd)
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::hackbench::Options::from_params(p);
    let groups = o.groups;
    let loops = o.loops;
    let datasize = o.datasize as usize;
    let fds = o.fds as usize;
    let use_pipe = o.pipe;
    let threads = o.threads;
    schedlab::workload::hackbench::check(&o).map_err(|e| e.to_string())?;
    let c = Counters::new(NAMES)?;
    // The channels: rt-tests' -i/--inet connects a TCP pair over 127.0.0.1 per receiver
    // (Nagle on); the ready and wake channels stay pipes or socketpairs.
    let channel = |_: ()| -> Res<(i32, i32)> {
        if o.inet {
            sys::tcp_socketpair()
        } else {
            sys::fdpair(use_pipe)
        }
    };

    let (ready_in, ready_out) = sys::fdpair(use_pipe)?;
    let (wake_in, wake_out) = sys::fdpair(use_pipe)?;
    let mut tasks: Vec<Task> = Vec::new();
    for g in 0..groups {
        let mut out_fds = Vec::with_capacity(fds);
        for j in 0..fds {
            let (rx, tx) = channel(())?;
            let packets = fds as u64 * loops;
            tasks.push(ctx.spawn(threads, move || {
                if !threads {
                    sys::close(tx);
                }
                // The simulated task's comm, so a host trace tells the roles apart.
                sys::set_comm(&format!("receiver:{}.{}", g + 1, j + 1));
                ready(ready_out, wake_in)?;
                let mut data = vec![0u8; datasize];
                let mut bytes = 0u64;
                for _ in 0..packets {
                    sys::read_full(rx, &mut data, "hackbench receiver")?;
                    bytes += datasize as u64;
                }
                c.add(C_MESSAGES, packets);
                c.add(C_BYTES_RECEIVED, bytes);
                Ok(())
            })?);
            out_fds.push(tx);
            if !threads {
                sys::close(rx);
            }
        }
        for j in 0..fds {
            let outs = out_fds.clone();
            tasks.push(ctx.spawn(threads, move || {
                sys::set_comm(&format!("sender:{}.{}", g + 1, j + 1));
                ready(ready_out, wake_in)?;
                let data = vec![b'-'; datasize];
                for _ in 0..loops {
                    for &fd in &outs {
                        sys::write_full(fd, &data)?;
                    }
                }
                c.add(C_BYTES_SENT, loops * outs.len() as u64 * datasize as u64);
                Ok(())
            })?);
        }
        if !threads {
            for fd in out_fds {
                sys::close(fd);
            }
        }
    }
    let mut dummy = [0u8; 1];
    for _ in 0..tasks.len() {
        sys::read_full(ready_in, &mut dummy, "hackbench ready barrier")?;
    }
    let t0 = sys::now_ns();
    sys::write_full(wake_out, b"*")?;
    ctx.join_all(tasks)?;
    let ns = sys::now_ns() - t0;
    let mut out = Outcome::new("seconds", ns as f64 / 1e9, "s", "lower", ns);
    out.output = Some(schedlab::workload::hackbench::tool_output(
        &o,
        ns as f64 / 1e9,
    ));
    out.counts = c.to_map();
    Ok(out)
}
