//! The 2.4 resource limits the simulated kernel enforces, and how a refusal is named.
//!
//! A call the real kernel would have refused is refused here with the same error
//! (`EAGAIN` for a fork, `ENFILE` for a file), and the kernel remembers which limit it was
//! ([`Kernel::limit_hit`](super::Kernel)), so that the run's error names the limit, its
//! value and the option that raises it — never a bare errno. A workload that states what
//! it needs (`Workload::needs`) is refused before it starts
//! ([`Limit::check`]).

use crate::machine::Machine;

pub use crate::machine::PID_MAX;

/// A limit the kernel enforced when it refused a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `fs.file-max`: open files system-wide (`ENFILE`).
    FileMax,
    /// `RLIMIT_NPROC`: tasks per user (`EAGAIN` from fork/clone).
    Nproc,
    /// `max_threads`: tasks system-wide, set from RAM (`EAGAIN`).
    MaxThreads,
    /// `PID_MAX`: the model never reuses a pid, so it bounds every task ever created.
    PidMax,
    /// Low memory (`ZONE_NORMAL`): the kernel loops in the page allocator ([`super::kmem`]).
    Lowmem,
}

impl Limit {
    /// (the limit and its value, where the value comes from, how to raise it) on `m`.
    fn parts(self, m: &Machine) -> (String, String, String) {
        let (l, name) = (&m.limits, m.preset.name);
        let raise = |key: &str| format!("raise it with --machine {name}:{key}=N");
        match self {
            Limit::FileMax => (
                format!(
                    "the system-wide open-file limit fs.file-max = {}",
                    l.file_max
                ),
                if l.file_max == crate::kernel::release::NR_FILE {
                    "NR_FILE of 2.4 before 2.4.20".into()
                } else {
                    "files_init: 10 % of RAM at 1 KB a file, or set".into()
                },
                raise("file_max"),
            ),
            Limit::Nproc => (
                format!("the per-user task limit RLIMIT_NPROC = {}", l.nproc),
                "fork_init: max_threads / 2, binding root before 2.4.18".into(),
                raise("nproc"),
            ),
            Limit::MaxThreads => (
                format!("the system-wide task limit max_threads = {}", l.max_threads),
                format!("set by {} MB of RAM", l.ram_mb),
                raise("ram_mb"),
            ),
            Limit::PidMax if l.pid_max == PID_MAX => (
                format!("PID_MAX = {PID_MAX}"),
                "fixed in 2.4, and the model never reuses a pid".into(),
                "no option raises it: create fewer tasks in one run".into(),
            ),
            Limit::Lowmem => (
                format!(
                    "low memory: {} MB left for tasks, sockets and skbs",
                    l.kmem_kb.unwrap_or(0) / 1024
                ),
                format!(
                    "{} MB of RAM, mem_map and the kernel taken from the directly mapped \
                     memory; 2.4 and 2.6.0 retry such an allocation for ever while swap is \
                     free, so the box hangs",
                    l.ram_mb
                ),
                "no option raises it: fewer tasks or less data in flight (or less RAM, for \
                 a smaller mem_map)"
                    .into(),
            ),
            Limit::PidMax => (
                format!("PID_MAX = kernel.pid_max = {}", l.pid_max),
                "the preset's kernel, and the model never reuses a pid".into(),
                "no option raises it: create fewer tasks in one run".into(),
            ),
        }
    }

    /// The limit, its value on `m`, and how to raise it, for a call it refused.
    pub fn describe(self, m: &Machine) -> String {
        let (what, why, raise) = self.parts(m);
        format!("{what} was reached on {} ({why}); {raise}", m.preset.name)
    }

    /// The first limit `needs` exceeds on `m`, described with what the workload needs.
    pub fn check(m: &Machine, needs: Needs) -> Result<(), String> {
        let l = &m.limits;
        let (limit, need) = if needs.files > l.file_max {
            (Limit::FileMax, format!("{} open files", needs.files))
        } else if needs.tasks > l.nproc && l.nproc_binds_root {
            (Limit::Nproc, format!("{} tasks", needs.tasks))
        } else if needs.tasks > l.max_threads {
            (Limit::MaxThreads, format!("{} tasks", needs.tasks))
        } else if needs.tasks >= l.pid_max {
            (Limit::PidMax, format!("{} tasks", needs.tasks))
        } else {
            return Ok(());
        };
        let (what, why, raise) = limit.parts(m);
        Err(format!(
            "it needs at least {need} at once, over {what} on {} ({why}); {raise}",
            m.preset.name
        ))
    }

    /// The limit a fork would hit with `live` tasks alive and `next_pid` the next pid.
    pub fn for_fork(m: &Machine, live: u64, next_pid: u64) -> Option<Limit> {
        let l = &m.limits;
        if live >= l.nproc && l.nproc_binds_root {
            Some(Limit::Nproc)
        } else if live >= l.max_threads {
            Some(Limit::MaxThreads)
        } else if next_pid >= l.pid_max {
            Some(Limit::PidMax)
        } else {
            None
        }
    }
}

/// A lower bound on the kernel resources a workload holds at once (see
/// `Workload::needs`); zero means "not stated". Limits hit beyond it are still named
/// when the kernel refuses the call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Tasks alive together, init included.
    pub tasks: u64,
    /// Files open together.
    pub files: u64,
}
