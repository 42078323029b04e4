//! Continuation frames: the simulated kernel stack.
//!
//! Each task owns a stack of frames; a CPU always executes the top frame of its current
//! task (the idle task included). `schedule()` is itself a frame, so a task that blocks
//! keeps its unfinished system call below the `Schedule` frame and resumes it when it is
//! switched back in — the way a real kernel stack does. Interrupts push their frames on
//! the stack of whatever task they interrupt.

use super::abi::Program;
use crate::engine::Time;

use super::chan::{Fd, StreamKind};
use super::types::{TaskId, WakeList, WqId};

/// A system call in progress; re-entered after every sleep.
pub enum Sys {
    /// `read(fd, len)`; `done` bytes already copied (pipe `do_more_read`); `again`: re-entered
    /// after a sleep, inside the same call.
    Read {
        fd: Fd,
        len: u64,
        done: u64,
        again: bool,
    },
    /// `write(fd, len)`; `started` once the `PIPE_BUF` atomicity wait is over;
    /// `waiting` while counted in `PIPE_WAITING_WRITERS`.
    Write {
        fd: Fd,
        len: u64,
        done: u64,
        started: bool,
        waiting: bool,
    },
    /// `poll(fds)`; `registered` once on the fds' wait queues.
    Poll { fds: Box<[Fd]>, registered: bool },
    /// `sched_yield()`.
    Yield,
    /// `nanosleep(ns)`; `armed` once the timer is set.
    Sleep { ns: Time, armed: bool },
    /// `fork()` (`thread` = `clone(CLONE_VM)`).
    Fork {
        child: Box<dyn Program>,
        thread: bool,
    },
    /// `execve()`.
    Exec { program: Box<dyn Program> },
    /// `exit()`.
    Exit,
    /// `wait()` for any child.
    Wait,
    /// `pipe()`, `socketpair()` or a loopback TCP connection.
    Open {
        /// What kind of pair.
        kind: StreamKind,
        /// TCP: `TCP_NODELAY` on both ends.
        nodelay: bool,
    },
    /// `close(fd)`.
    Close { fd: Fd },
    /// `nice(inc)`.
    Nice { inc: i32 },
    /// `sched_setaffinity(0, mask)`.
    SetAffinity { mask: Box<crate::machine::CpuMask> },
    /// `clock_nanosleep(TIMER_ABSTIME, at)`; `armed` once the timer is set.
    SleepUntil { at: Time, armed: bool },
    /// A pthread call ([`super::usync`]); `again` when re-entered after a sleep;
    /// `generation`: the barrier generation the caller arrived in.
    Sync {
        op: super::abi::SyncOp,
        again: bool,
        generation: u64,
    },
}

/// One continuation.
pub enum Frame {
    /// User mode: ask the program for its next operation.
    User,
    /// A user-mode pass over a working set of `ws` bytes with `left` ns of computation
    /// and `todo` bytes of the set still to touch (less than `ws` once an interrupt has
    /// cut the pass: what was done before it is not paid again).
    Compute { left: Time, ws: u64, todo: u64 },
    /// A system call body.
    Sys(Sys),
    /// Return from a system call: reschedule if `need_resched`.
    SysExit,
    /// Deliver wake-ups, one `try_to_wake_up` each (stored in reverse: popped from the end).
    /// `irq`: woken from interrupt context (timer expiry) rather than by a task.
    Wake {
        list: WakeList,
        sync: bool,
        irq: bool,
    },
    /// `schedule()`.
    Schedule,
    /// The NET_RX softirq's `data_ready` on wait queue `wq`, once the work of the system
    /// call that sent a packet over loopback has elapsed: the packet is on the receive
    /// queue now, and whoever waits for it then is woken ([`super::tcp`], [`super::udp`]).
    WakeQueue { wq: WqId },
    /// `release_sock` of the TCP socket `fd`, once the work of the system call that took
    /// its lock has elapsed: the lock is free, and one task asleep in `lock_sock` is woken
    /// ([`super::tcp`]).
    ReleaseSock { fd: Fd },
    /// The policy's part of `do_fork` for a new task: `task_fork` and the first placement (`wake_up_new_task`),
    /// run synced after the fork's own work.
    NewTask {
        child: Box<dyn Program>,
        thread: bool,
    },
    /// First thing a task does after being switched in: `schedule_tail(prev)`.
    Tail { prev: TaskId },
    /// Timer interrupt.
    Tick { user: bool },
    /// Reschedule IPI.
    Ipi,
    /// A high-resolution timer interrupt (its wake-ups are the frame below).
    TimerIrq,
    /// Return from interrupt: reschedule if returning to user mode with `need_resched`.
    IrqExit { user: bool },
    /// The idle loop.
    Idle,
}

impl Frame {
    /// Frames that touch no state shared with other CPUs may run ahead of global time.
    pub fn is_pure(&self) -> bool {
        matches!(
            self,
            Frame::User | Frame::Compute { .. } | Frame::SysExit | Frame::IrqExit { .. }
        )
    }

    /// True for frames that mean "this task is in user mode".
    pub fn is_user(&self) -> bool {
        matches!(self, Frame::User | Frame::Compute { .. })
    }
}
