//! The program ABI: what a task program may ask of the kernel, and what it sees.
//!
//! A program is a small state machine: the kernel asks it for its next [`Op`] each time
//! the task returns to user mode, handing it the last system call's return value in
//! [`Env::ret`]. Programs speak only compute and system calls; they record what the
//! benchmark measures (timestamps, counts) in the run's [`Record`], at no simulated cost,
//! as the original programs did with `gettimeofday()` and counters.

use std::collections::BTreeMap;

use super::types::Fd;
use crate::engine::{SimRng, Time};

/// One operation of a program.
#[allow(missing_docs)] // fields are named by their variant docs
pub enum Op {
    /// Run in user mode for `ns` over a working set of `ws` bytes (the task pays to refill
    /// the part of it not resident in this CPU's caches).
    Compute { ns: Time, ws: u64 },
    /// `read(fd, len)`: returns bytes read (≥ 1 unless end of file), blocking while empty.
    Read { fd: Fd, len: u64 },
    /// `write(fd, len)`: returns `len`, blocking while the buffer is full.
    Write { fd: Fd, len: u64 },
    /// `poll(fds, POLLIN)`: returns the index of the first readable fd.
    Poll { fds: Vec<Fd> },
    /// `sched_yield()`.
    Yield,
    /// `nanosleep(ns)`.
    Sleep { ns: Time },
    /// `fork()`: the child runs `child`; returns the child's pid.
    Fork { child: Box<dyn Program> },
    /// `clone(CLONE_VM|CLONE_FS|CLONE_FILES)`: a thread in the same mm.
    Clone { child: Box<dyn Program> },
    /// `execve()`: continue as `program` in a fresh mm.
    Exec { program: Box<dyn Program> },
    /// `exit()`.
    Exit,
    /// `wait()`: reap one child; returns its pid, or −10 (ECHILD) when none is left.
    Wait,
    /// `pipe()`: returns the read fd; the write fd is `ret + 1`.
    Pipe,
    /// `socketpair(AF_UNIX, SOCK_STREAM)`: returns fd `a`; the other end is `a + 1`.
    SocketPair,
    /// A connected TCP loopback pair (`connect` + `accept`): returns the client fd; the
    /// server's is `ret + 1`. `nodelay`: both ends set `TCP_NODELAY` (Nagle off).
    TcpPair { nodelay: bool },
    /// Two UDP sockets on 127.0.0.1, each bound and `connect`ed to the other: returns the
    /// client's fd; the server's is `ret + 1`.
    UdpPair,
    /// `close(fd)`.
    Close { fd: Fd },
    /// `nice(inc)`.
    Nice { inc: i32 },
    /// `sched_setaffinity(0, mask)`: bit `c` set ⇔ this task may run on CPU `c`. Returns
    /// 0, or `EINVAL` when the mask names no online CPU. If the task's CPU is no longer
    /// allowed it moves before returning to user mode.
    /// (Boxed: a mask is 128 bytes, and every `Op` would be as large.)
    SetAffinity { mask: Box<crate::machine::CpuMask> },
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, at)`: sleep until `at` (returns at
    /// once when `at` has passed). Timers fire on the tick, as the modelled kernel has no
    /// high-resolution timers.
    SleepUntil { at: Time },
    /// A pthread call on the process's synchronisation object: the futex fast path stays in
    /// user mode, the slow path (wait, wake) enters the kernel ([`SyncOp`]).
    Sync(SyncOp),
}

/// The pthread operations the programs use, on objects named by small integers that the
/// workload allocates (one namespace per run; an object's kind is fixed by its first use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOp {
    /// `pthread_mutex_lock`: returns 0.
    Lock(u32),
    /// `pthread_mutex_unlock`: returns 0, or `EPERM` when the caller does not own it.
    Unlock(u32),
    /// `pthread_cond_wait(cond, mutex)` with `mutex` held: returns 0 with it held again,
    /// or `EPERM` when the caller does not own it.
    CondWait {
        /// The condition variable.
        cond: u32,
        /// The mutex the caller holds.
        mutex: u32,
    },
    /// `pthread_cond_signal`: wake one waiter (lost when none waits); returns how many woke.
    Signal(u32),
    /// `pthread_cond_broadcast`: wake every waiter; returns how many woke.
    Broadcast(u32),
    /// `pthread_barrier_wait` on a barrier of `parties`: returns when `parties` callers
    /// have arrived.
    Barrier {
        /// The barrier.
        id: u32,
        /// How many callers open it.
        parties: u32,
    },
    /// `sem_post`.
    SemPost(u32),
    /// `sem_wait`.
    SemWait(u32),
    /// SysV `semop(semid, &{sem_num, sem_op, 0}, 1)` on the semaphore `id` (always a
    /// system call, [`super::usync`]): `op` > 0 adds it; `op` < 0 waits until the value is
    /// at least −`op` and subtracts; `op` = 0 waits for zero. Returns 0.
    SemOp {
        /// The semaphore.
        id: u32,
        /// `sem_op`.
        op: i32,
    },
    /// SysV `semctl(semid, sem_num, SETVAL, val)` on the semaphore `id`: returns 0 (a
    /// system call; as in 2.4 it wakes the waiters the new value lets through).
    SemSetVal {
        /// The semaphore.
        id: u32,
        /// The value.
        val: u32,
    },
}

impl SyncOp {
    /// SysV semaphore calls are system calls from their first instruction; the pthread
    /// calls enter the kernel only on their slow path.
    pub fn is_syscall(&self) -> bool {
        matches!(self, SyncOp::SemOp { .. } | SyncOp::SemSetVal { .. })
    }
}

/// `EBADF`, for a file descriptor that is not open.
pub const EBADF: i64 = -9;
/// `ECHILD`, as returned by [`Op::Wait`] when there is nothing to wait for.
pub const ECHILD: i64 = -10;
/// `EAGAIN`, as returned by a refused fork.
pub const EAGAIN: i64 = -11;
/// `ENFILE`, as returned when `file-max` is reached.
pub const ENFILE: i64 = -23;
/// `EINVAL`, for a CPU mask with no online CPU.
pub const EINVAL: i64 = -22;
/// `EPIPE`.
pub const EPIPE: i64 = -32;
/// `EPERM`, for unlocking a mutex the caller does not own.
pub const EPERM: i64 = -1;

/// The name of the error a negative system-call return stands for (`ENFILE` for −23), or
/// the number itself when the ABI defines no name for it: messages name errors, never a
/// raw errno.
pub fn errno_name(ret: i64) -> String {
    match ret {
        EBADF => "EBADF".into(),
        ECHILD => "ECHILD".into(),
        EAGAIN => "EAGAIN".into(),
        ENFILE => "ENFILE".into(),
        EINVAL => "EINVAL".into(),
        EPIPE => "EPIPE".into(),
        EPERM => "EPERM".into(),
        r => format!("return value {r}"),
    }
}

/// What a run records for its workload's result.
#[derive(Default, Debug, Clone)]
pub struct Record {
    /// Named timestamps, in the order recorded.
    pub marks: BTreeMap<&'static str, Vec<Time>>,
    /// Named counters.
    pub counts: BTreeMap<&'static str, u64>,
    /// A fatal workload error (e.g. a refused fork), ending the run.
    pub error: Option<String>,
    /// Set when the workload has measured what it needs: the run ends.
    pub stop: bool,
}

impl Record {
    /// First timestamp recorded under `key`.
    pub fn first(&self, key: &str) -> Option<Time> {
        self.marks.get(key).and_then(|v| v.first().copied())
    }

    /// Last timestamp recorded under `key`.
    pub fn last(&self, key: &str) -> Option<Time> {
        self.marks.get(key).and_then(|v| v.last().copied())
    }

    /// Counter `key` (0 when never counted).
    pub fn count(&self, key: &str) -> u64 {
        self.counts.get(key).copied().unwrap_or(0)
    }
}

/// What a program sees when asked for its next operation.
pub struct Env<'a> {
    /// Return value of the previous system call (0 at start and after a compute).
    pub ret: i64,
    /// Current simulated time on this task's CPU.
    pub now: Time,
    /// This task's pid.
    pub pid: u32,
    /// The CPU the task runs on (`sched_getcpu()`, free: the vDSO reads it).
    pub cpu: usize,
    /// `nr_context_switches()` so far: every context switch of every CPU, idle included —
    /// the `ctxt` line of `/proc/stat` that `vmstat` turns into its `cs` column. Reading it
    /// is free in the model (a `vmstat` sample every few seconds costs nothing measurable).
    pub ctxt: u64,
    /// The run's random source.
    pub rng: &'a mut SimRng,
    /// The run's record.
    pub rec: &'a mut Record,
}

impl Env<'_> {
    /// Record the current time under `key`.
    pub fn mark(&mut self, key: &'static str) {
        let now = self.now;
        self.rec.marks.entry(key).or_default().push(now);
    }

    /// Add `n` to counter `key`.
    pub fn count(&mut self, key: &'static str, n: u64) {
        *self.rec.counts.entry(key).or_default() += n;
    }

    /// End the run with an error (the first one wins).
    pub fn fail(&mut self, msg: impl Into<String>) {
        if self.rec.error.is_none() {
            self.rec.error = Some(msg.into());
        }
    }

    /// End the run: the measurement is complete.
    pub fn stop(&mut self) {
        self.rec.stop = true;
    }
}

/// A task program.
pub trait Program: Send {
    /// The next operation. Called each time the task returns to user mode.
    fn next(&mut self, env: &mut Env<'_>) -> Op;

    /// The task's name (its comm in traces: at most 15 bytes of `[A-Za-z0-9_./:+-]`,
    /// the part before a `:` naming its group), as the original program's processes
    /// would be told apart. Asked only when a trace is written, at fork and exec; `None`
    /// (the default): the child keeps its parent's comm, as `fork()` does.
    fn comm(&self) -> Option<String> {
        None
    }
}

/// A program from a closure, for small programs and tests.
pub struct FnProgram<F>(pub F);

impl<F: FnMut(&mut Env<'_>) -> Op + Send> Program for FnProgram<F> {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        (self.0)(env)
    }
}

/// Box a closure as a program.
pub fn program<F: FnMut(&mut Env<'_>) -> Op + Send + 'static>(f: F) -> Box<dyn Program> {
    Box::new(FnProgram(f))
}
