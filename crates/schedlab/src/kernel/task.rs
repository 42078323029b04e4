//! Tasks: the fields every policy may read, named as in 2.4's `task_struct`.

use std::collections::VecDeque;

use crate::engine::Time;
use crate::machine::{CpuId, CpuMask};

use super::frame::Frame;
use super::types::WqId;

pub use super::types::TaskId;

/// Task states (2.4 `state`): exactly one at any time.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub enum TaskState {
    /// `TASK_RUNNING`: on a CPU or runnable.
    Running,
    /// `TASK_INTERRUPTIBLE`: asleep on a wait queue or a timer.
    Interruptible,
    /// `TASK_UNINTERRUPTIBLE`: asleep, not woken by signals (unused by the workloads).
    Uninterruptible,
    /// `TASK_ZOMBIE`: exited, waiting for its parent to reap it.
    Zombie,
    /// Reaped; the slot is never reused.
    Dead,
}

impl TaskState {
    /// True for the two sleeping states.
    pub fn is_sleeping(self) -> bool {
        matches!(self, TaskState::Interruptible | TaskState::Uninterruptible)
    }
}

/// Scheduling class of a task (2.4 `policy` without the SCHED_YIELD bit, which the
/// policies keep themselves).
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub enum SchedPolicy {
    /// `SCHED_OTHER`.
    Other,
    /// `SCHED_FIFO`.
    Fifo,
    /// `SCHED_RR`.
    Rr,
}

/// Per-task counters.
#[derive(Clone, Debug)]
pub struct TaskStats {
    /// CPU time used, user and system.
    pub runtime_ns: Time,
    /// Times switched in.
    pub switches_in: u64,
    /// `/proc/PID/sched`'s statistics ([`super::schedstat`]).
    pub sched: super::schedstat::SchedStat,
}

impl Default for TaskStats {
    fn default() -> TaskStats {
        TaskStats {
            runtime_ns: 0,
            switches_in: 0,
            sched: super::schedstat::SchedStat::new(),
        }
    }
}

/// A task.
pub struct Task {
    /// Process id (for threads: the thread's own id).
    pub pid: u32,
    /// Its name, as its program gave it at fork or exec (else its parent's): task groups
    /// in the report. `None` for the idle tasks and for init without a name.
    pub comm: Option<String>,
    /// Address space; threads created with `clone` share their parent's.
    pub mm: u32,
    /// Static priority, −20…19.
    pub nice: i32,
    /// Scheduling class.
    pub policy: SchedPolicy,
    /// 1…99 for FIFO/RR, 0 otherwise.
    pub rt_priority: u32,
    /// CPU `c` in the mask ⇔ the task may run on CPU `c`.
    pub cpus_allowed: CpuMask,
    /// The CPU whose run queue the task belongs to (2.4 `processor`, 2.5 `cpu`); policies
    /// change it with `SchedCtx::set_task_cpu`.
    pub processor: CpuId,
    /// The CPU the task last actually ran on (for `unaffine_switch_pct`).
    pub last_ran: Option<CpuId>,
    /// That CPU's switch count (`Cpu::nr_switches`) when it last switched the task in:
    /// how many switches it made since is the task's reuse distance there.
    pub last_in: u64,
    /// State.
    pub state: TaskState,
    /// The CPU it is running on now, if any (2.4 `cpus_runnable`).
    pub on_cpu: Option<CpuId>,
    /// `need_resched`.
    pub need_resched: bool,
    /// When another CPU set `need_resched`: a hook runs atomically while its clock moves
    /// on, so the flag becomes visible to this task's CPU only once that CPU's clock has
    /// reached the moment it was set (`Task::sees_need_resched`).
    pub need_resched_at: crate::engine::Time,
    /// True for the per-CPU idle tasks.
    pub is_idle: bool,
    /// Parent, `None` for init and orphans.
    pub parent: Option<TaskId>,
    /// Children not yet reaped (live and zombie).
    pub children: Vec<TaskId>,
    /// This task's index in its parent's `children`: reaping one of 100 000 children
    /// finds it without a search (the kernel's own walk is in `wait_ns`).
    pub child_slot: u32,
    /// Zombie children, oldest first.
    pub zombies: VecDeque<TaskId>,
    /// `wait_chldexit`.
    pub wait_chldexit: WqId,
    /// Kernel stack of continuation frames; the top is what the task does next.
    pub(crate) kstack: Vec<Frame>,
    /// Return value of the last system call, handed to the program.
    pub ret: i64,
    /// Wait queues this task is registered on (removed when it resumes).
    pub(crate) wq_regs: Vec<WqId>,
    /// Counters.
    pub stats: TaskStats,
    /// When the task was created.
    pub born_at: Time,
    /// The seeded start offset: user-mode time before its program's first operation
    /// ([`crate::kernel::initial`]).
    pub start_offset: Time,
    /// When it was last woken (or first woken after fork), until it is switched in;
    /// [`NOT_WOKEN`] otherwise (for `counters.wakeup_latency_*`).
    pub woken_at: Time,
}

/// [`Task::woken_at`] of a task not waiting to run after a wake-up.
pub const NOT_WOKEN: Time = Time::MAX;

impl Task {
    /// True when `need_resched` is set and this task's CPU, whose clock reads `clock`,
    /// can see it: set by this CPU, or by another one no later than `clock`.
    #[inline]
    pub fn sees_need_resched(&self, clock: crate::engine::Time) -> bool {
        self.need_resched && self.need_resched_at <= clock
    }
}

/// Everything-allowed affinity mask.
pub const ALL_CPUS: CpuMask = CpuMask::FULL;
