//! Scheduling policies: one module per scheduler behind the kernel's [`SchedClass`] seam,
//! and one ordered registry.
//!
//! A policy owns its run queues and its per-task scheduling state. It reads the common task
//! fields (nice, mm, affinity, `processor`, state) through the [`SchedCtx`], changes only
//! `processor` (`set_task_cpu`) and `need_resched` (`resched_cpu`), takes the locks its
//! kernel took, and charges what it touches by the cost rule ([`SchedCtx`]'s module doc:
//! `read(Shared::Task(p))` per task weighed, `read(Walk(..))` for a run-queue walk,
//! `read`/`write` of shared lines, `read(Curr(c))` of another CPU's `curr`, `charge` for
//! the rest). A policy whose queue is a list builds on
//! [`crate::kernel::sched::runlist`], which prices it. How each policy maps onto the
//! hooks is in [`crate::kernel::sched`] and docs/architecture.md §3; the 2.4 arithmetic
//! that `linux-2.4`, `mq`, `mq-pool` and `hamq` share is in [`sched24`]. `fifo` is a
//! global round robin.
//!
//! Adding a policy: one module implementing [`SchedClass`], plus one line in [`POLICIES`].
//! A policy knows no workload; the kernel knows no policy.

pub mod fair;
pub mod fifo;
pub mod hamq;
pub mod linux24;
pub mod mq;
pub mod o1;
pub mod sched24;
pub mod scx;

use crate::kernel::task::TaskId;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{self, ParamSpec, Params, Spec, SpecError};

pub use crate::kernel::sched::{
    Balance, Curr, Published, SchedClass, SchedCtx, Shared, Wake, WakeOrder, Walk,
};

/// The invariant of every per-CPU-queue policy: each task is on at most one queue, on the
/// queue of its `processor`, runnable (or still on its CPU); a policy's `on_rq` flag
/// agrees with the queues; and every runnable task that is not an idle task is queued.
/// `queues` yields each CPU's queue in CPU order.
pub fn check_per_cpu_queues<'q>(
    name: &str,
    k: &Kernel,
    queues: impl Iterator<Item = &'q std::collections::VecDeque<TaskId>>,
    on_rq: &[bool],
) -> Result<(), String> {
    use crate::kernel::task::TaskState;
    let mut queued = vec![false; on_rq.len()];
    for (c, q) in queues.enumerate() {
        for &p in q {
            let t = k.task(p);
            if std::mem::replace(&mut queued[p as usize], true) {
                return Err(format!("{name}: pid {} queued twice", t.pid));
            }
            if t.processor != c {
                return Err(format!(
                    "{name}: pid {} on queue {c} but processor {}",
                    t.pid, t.processor
                ));
            }
            if t.state != TaskState::Running && t.on_cpu.is_none() {
                return Err(format!("{name}: queued pid {} is {:?}", t.pid, t.state));
            }
        }
    }
    for (p, &flag) in on_rq.iter().enumerate() {
        if flag != queued[p] {
            return Err(format!(
                "{name}: on_rq flag of task {p} disagrees with the queues"
            ));
        }
        let t = k.task(p as TaskId);
        if t.state == TaskState::Running && !t.is_idle && !flag {
            return Err(format!("{name}: runnable pid {} on no queue", t.pid));
        }
    }
    Ok(())
}

/// A registered policy.
pub struct PolicyInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// One line for `schedlab list policies`.
    pub about: &'static str,
    /// Options.
    pub params: &'static [ParamSpec],
    /// Constructor from validated options.
    pub build: Builder,
}

/// Constructor of a class from validated options; fails where building the class can
/// (a sched_ext scheduler that does not compile).
pub type Builder = fn(&Params, &Machine) -> Result<Box<dyn SchedClass>, SpecError>;

/// The registry, in `schedlab list policies` order: the reference policy, then the
/// schedulers in historical order (the modern fair class last).
pub static POLICIES: &[PolicyInfo] = &[
    fifo::INFO,
    linux24::INFO,
    mq::INFO,
    mq::POOL_INFO,
    hamq::INFO,
    o1::INFO_D1,
    o1::INFO_G1,
    o1::INFO_26,
    fair::INFO_CFS,
    fair::INFO_EEVDF,
    scx::INFO,
];

/// Build the policy named by `spec` for `machine`.
pub fn build(spec: &Spec, machine: &Machine) -> Result<Box<dyn SchedClass>, SpecError> {
    let info = find(&spec.name)?;
    let params = spec::resolve("policy", spec, info.params)?;
    (info.build)(&params, machine)
}

/// Build the policy `spec` (`NAME[:key=value,...]`) for `cpus` CPUs of the preset
/// `machine`: a shorthand for tests and test beds.
pub fn build_named(
    spec: &str,
    machine: &str,
    cpus: usize,
) -> Result<Box<dyn SchedClass>, SpecError> {
    let preset = crate::machine::catalog::lookup(machine)?;
    let m = Machine::boot(preset, Some(cpus)).map_err(SpecError::Invalid)?;
    build(&Spec::parse("policy", spec)?, &m)
}

/// Look a policy up by name.
pub fn find(name: &str) -> Result<&'static PolicyInfo, SpecError> {
    POLICIES.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
        SpecError::unknown("policy", name, &names)
    })
}
