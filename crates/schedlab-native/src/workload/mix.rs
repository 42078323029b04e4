//! `mix` run for real: the simulated mix's components (`schedlab::workload::mix`), the
//! first measured in the leader while each other one plays its benchmark once in a
//! worker process of its own, started first. When the measured one is done, the loads
//! still running are killed (their own workers die with them); the result is the measured
//! component's, with `load_workloads` counted beside its counters.

use schedlab::spec::{Params, SpecError};
use schedlab::workload::mix::{components, Options};

use crate::runner::{Ctx, Outcome, Task};
use crate::sys::{self, Fail, Res};
use crate::workload::NativeWorkload;

/// The components, each resolved as `schedlab native` would resolve it alone.
fn parts(p: &Params) -> Result<Vec<(&'static NativeWorkload, Params)>, SpecError> {
    let o = Options::from_params(p);
    components(&o.of)?
        .iter()
        .map(|s| crate::parse(&s.to_string()).map(|(w, _, p)| (w, p)))
        .collect()
}

/// Refuse a mix whose components would be refused alone.
pub fn prepare(p: &mut Params) -> Result<(), SpecError> {
    parts(p).map(|_| ())
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let parts = parts(p).map_err(|e| Fail(e.to_string()))?;
    let mut loads = Vec::new();
    for (w, params) in parts[1..].iter().cloned() {
        let mut sub = ctx.sub();
        loads.push(ctx.fork(move || (w.run)(&params, &mut sub).map(|_| ()))?);
    }
    let (w, params) = &parts[0];
    let measured = (w.run)(params, ctx);
    for t in loads {
        if let Task::Proc(pid) = t {
            // SAFETY: signalling a child of ours; it may have exited already (a zombie).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            sys::waitpid(pid)?;
        }
    }
    let mut out = measured?;
    out.counts
        .insert("load_workloads".into(), (parts.len() - 1) as f64);
    Ok(out)
}
