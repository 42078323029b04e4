//! The kernel's scheduling events, as it reports them to an observer (a trace): the
//! event points are the kernel's own, and with no observer installed each costs one
//! `Option` check. The observers themselves live in [`crate::trace`]; this module is
//! what the kernel needs of them, so the kernel does not depend on the trace writers.

use crate::engine::Time;
use crate::kernel::task::TaskId;
use crate::kernel::Kernel;

/// What the kernel reports, at its event points. Task ids are the kernel's task-table
/// indices; `cpu` is the CPU the event happens on and `ts` its clock.
#[allow(missing_docs)] // fields are named by their variant docs
#[derive(Clone, Copy, Debug)]
pub enum KEvent<'a> {
    /// `cpu` switched from `prev` to `next` (one `context_switches`).
    Switch {
        cpu: usize,
        ts: Time,
        prev: TaskId,
        next: TaskId,
        /// `prev`'s kernel state after the switch decision.
        prev_state: crate::kernel::task::TaskState,
    },
    /// `waker` on `cpu` made `p` runnable on `target`'s run queue: started at `waking`,
    /// done at `ts`. `new`: the first wake-up of a forked task.
    Wakeup {
        cpu: usize,
        waking: Time,
        ts: Time,
        waker: TaskId,
        p: TaskId,
        target: usize,
        new: bool,
    },
    /// `p`'s run-queue CPU changed from `from` to `to`, done by `cpu` (one `migrations`).
    Migrate {
        cpu: usize,
        ts: Time,
        p: TaskId,
        from: usize,
        to: usize,
    },
    /// `parent` on `cpu` created `child` (kernel pid `pid`); `thread`: by `clone`.
    /// `comm`: the child program's own name, if it has one (else it inherits the parent's).
    Fork {
        cpu: usize,
        ts: Time,
        parent: TaskId,
        child: TaskId,
        pid: u32,
        thread: bool,
        comm: Option<&'a str>,
    },
    /// `p` exec'd a program named `comm` (if it has a name).
    Exec {
        cpu: usize,
        ts: Time,
        p: TaskId,
        comm: Option<&'a str>,
    },
    /// `p` called `exit()` on `cpu`.
    Exit { cpu: usize, ts: Time, p: TaskId },
    /// `p` was reaped (or released as an orphan) by `cpu`.
    Free { cpu: usize, ts: Time, p: TaskId },
    /// `p`'s nice value is now `nice`.
    Nice { p: TaskId, nice: i32 },
    /// `p` called `sched_yield()`: its next switch-out while runnable is voluntary.
    Yield { p: TaskId },
    /// `cpu` (running `curr`) spun on the lock `lock` from `from` to `to`.
    LockWait {
        cpu: usize,
        curr: TaskId,
        from: Time,
        to: Time,
        lock: &'static str,
    },
    /// sched_ext: `cpu` (running `curr`) moved `p` into the dispatch queue `dsq` (`op`:
    /// `dsq_insert`) or out of it to its local DSQ (`dsq_move_to_local`).
    Dsq {
        cpu: usize,
        curr: TaskId,
        ts: Time,
        p: TaskId,
        op: &'static str,
        dsq: u64,
    },
    /// `cpu` (running `curr`) sent a reschedule IPI to `target`.
    Ipi {
        cpu: usize,
        curr: TaskId,
        ts: Time,
        target: usize,
    },
}

/// An observer of the kernel's scheduling events. Installed with
/// [`crate::Simulation::set_trace`].
pub trait TraceSink: Send {
    /// One event. `kernel` is read-only context (task table, CPU count).
    fn event(&mut self, ev: &KEvent<'_>);
    /// Global simulated time reached `now`: no later event has an earlier time stamp
    /// than the CPU clocks allow (outputs that merge CPUs flush up to here).
    fn advance(&mut self, _now: Time) {}
    /// The run ended at `end`; write what is left. Returns what was written.
    fn finish(&mut self, end: Time) -> std::io::Result<Vec<OutputSummary>>;
    /// For a sink that needs the tasks alive at attach time.
    fn attach(&mut self, _k: &Kernel, _workload: &str) {}
}

/// What an output wrote.
#[derive(Clone, Debug, Default)]
pub struct OutputSummary {
    /// Where (a path) or what.
    pub what: String,
    /// Bytes written (0 for in-memory outputs).
    pub bytes: u64,
    /// Events written.
    pub events: u64,
    /// Of which `sched_switch` events.
    pub switches: u64,
}
