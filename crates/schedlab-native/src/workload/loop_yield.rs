//! loop_yield (Molnar, 4 Jan 2002; benchmarks.md §5b), natively, as the model
//! (`schedlab::workload::loop_yield`) and with its parameters: `instances` processes each
//! call `sched_yield()` in a tight loop. The figure is the system-wide context-switch rate,
//! as `vmstat`'s `cs` column prints it: the change of `/proc/stat`'s `ctxt` over
//! `duration_ms`, per second. On a shared host this includes every other process's
//! switches too, as vmstat's does.
//!
//! The instances start together (ready pipe); the leader plays `vmstat`: it sleeps
//! `warmup_ms`, samples `ctxt`, sleeps `duration_ms`, samples again, then raises a shared
//! stop flag; each instance adds its yield count on the way out.

use schedlab::spec::Params;

use crate::host;
use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Res};

const NAMES: &[&str] = &["yields", "stop"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::loop_yield::Options::from_params(p);
    let n = o.instances;
    let ms = o.duration_ms;
    let warmup_ms = o.warmup_ms;
    let c = Counters::new(NAMES)?;
    let (ready_r, ready_w) = sys::pipe()?;
    let mut kids = Vec::new();
    for _ in 0..n {
        kids.push(ctx.fork(|| {
            sys::close(ready_r);
            sys::write_full(ready_w, b"y")?;
            let mut yields = 0u64;
            while c.get(1) == 0 {
                sys::sched_yield();
                yields += 1;
            }
            c.add(0, yields);
            Ok(())
        })?);
    }
    sys::close(ready_w);
    let mut b = [0u8; 1];
    for _ in 0..n {
        sys::read_full(ready_r, &mut b, "loop_yield start")?;
    }
    std::thread::sleep(std::time::Duration::from_millis(warmup_ms));
    let s0 = host::stat();
    let t0 = sys::now_ns();
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let s1 = host::stat();
    let ns = sys::now_ns() - t0;
    c.add(1, 1);
    ctx.join_all(kids)?;
    let d = host::delta(&s0, &s1);
    let rate = d.ctxt as f64 / (ns as f64 / 1e9);
    let mut out = Outcome::new("switches_per_s", rate, "switches/s", "higher", ns);
    out.counts = c.to_map();
    out.counts.remove("stop");
    out.counts
        .insert("host_context_switches".into(), d.ctxt as f64);
    Ok(out)
}
