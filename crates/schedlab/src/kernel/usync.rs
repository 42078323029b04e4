//! pthread mutexes, condition variables, barriers and semaphores, as a futex-based C
//! library and kernel run them (glibc NPTL on Linux ≥ 2.6; rtapp.md §6).
//!
//! An object lives in the process's memory; its word is changed by an atomic instruction
//! in user mode (charged `lock_ns`), and only a caller that must wait, or that must wake a
//! waiter, enters the kernel (`futex(FUTEX_WAIT|FUTEX_WAKE)`, charged `syscall_ns`). The
//! model keeps each object's word and its futex wait queue together here, so the check of
//! the word and the sleep are one step, as the futex hash-bucket lock makes them.
//!
//! * **Mutex**: unlocking wakes one waiter, which retries and may lose the mutex to a
//!   caller that came meanwhile (no hand-off: glibc's default mutex). Waiters are FIFO.
//! * **Condition variable**: `wait` releases the mutex and sleeps in one step, and on
//!   waking takes the mutex again; `signal` wakes the longest waiter and is lost when none
//!   waits; `broadcast` wakes all (no requeue onto the mutex: they contend for it).
//! * **Barrier**: the last of `parties` arrivals wakes the others; a generation number
//!   tells a waiter its barrier opened.
//! * **Semaphore**: counting, starts at 0; posts are remembered.
//! * **SysV semaphore** (`semop`, `semctl(SETVAL)`; 2.4 ipc/sem.c): every call is a
//!   system call that takes the IPC lock (charged `lock_ns`; 2.4's `sem_ids` lock is one
//!   spinlock for every set, held for a few hundred ns per call — its contention is not
//!   modelled). A decrement that cannot proceed sleeps as an exclusive waiter, a
//!   wait-for-zero as a non-exclusive one. After an operation that changes the value,
//!   `update_queue` wakes the first decrement waiter that can now proceed and stops (the
//!   woken task retries its operation itself, 2.4's `q->status = 1`), and when the value
//!   is 0 every wait-for-zero waiter; a woken decrement that succeeds calls
//!   `update_queue` in turn, so a large post wakes its waiters one after another.
//!
//! Invariant: a mutex's owner, when set, is a live task that called `Lock` and not yet
//! `Unlock`; every sleeper is on its object's wait queue with state `Interruptible`.
//! Not modelled: priority inheritance (`pi_enabled`), robust and recursive mutexes.

use super::abi::{SyncOp, EPERM};
use super::frame::Sys;
use super::syscall::{Outcome, Wakes};
use super::task::{TaskId, TaskState};
use super::types::WqId;
use super::{Acct, Kernel};
use crate::machine::CpuId;

/// The `generation` a sleeping 6.x `semop` is given when its waker completed it.
const SEMOP_DONE: u64 = u64::MAX;

/// A synchronisation object's state.
#[derive(Debug)]
pub(crate) struct Object {
    wq: WqId,
    state: State,
}

#[derive(Debug)]
enum State {
    Unused,
    Mutex {
        owner: Option<TaskId>,
    },
    Cond,
    Barrier {
        arrived: u32,
        generation: u64,
    },
    Sem {
        count: u64,
    },
    /// The object's queue holds the decrement waiters; `zero_wq` the wait-for-zero ones.
    SysvSem {
        value: u64,
        zero_wq: WqId,
    },
}

impl Kernel {
    /// The object `id`, created on first use.
    fn object(&mut self, id: u32) -> &mut Object {
        let i = id as usize;
        while self.usync.len() <= i {
            let wq = self.new_waitq();
            self.usync.push(Object {
                wq,
                state: State::Unused,
            });
        }
        &mut self.usync[i]
    }

    /// Sleep on `wq` as an exclusive waiter (FIFO, woken one at a time).
    fn futex_wait(&mut self, cpu: CpuId, task: TaskId, wq: WqId) {
        let ns = self.machine.costs().syscall_ns;
        self.charge(cpu, ns, Acct::Running);
        self.stats.syscalls += 1;
        self.sleep_on_as(task, wq, true, TaskState::Interruptible);
    }

    /// Wake `n` waiters of `wq` (0: all) from a `futex(FUTEX_WAKE)` call; how many woke.
    fn futex_wake(&mut self, cpu: CpuId, wq: WqId, n: u32, wakes: &mut Wakes) -> i64 {
        if self.waitqs[wq as usize].waiters.is_empty() {
            return 0;
        }
        let ns = self.machine.costs().syscall_ns;
        self.charge(cpu, ns, Acct::Running);
        self.stats.syscalls += 1;
        let list = self.take_waiters(cpu, wq, n);
        let woken = list.len() as i64;
        wakes.push((list, false));
        woken
    }

    /// One pthread call (or its re-entry after a sleep).
    pub(super) fn sys_sync(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        op: SyncOp,
        again: bool,
        generation: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        if !again || op.is_syscall() {
            let ns = self.machine.costs().lock_ns;
            self.charge(cpu, ns, Acct::Running);
        }
        let block = |generation| {
            Outcome::Block(Sys::Sync {
                op,
                again: true,
                generation,
            })
        };
        match op {
            SyncOp::Lock(id) => {
                if self.mutex_trylock(id, task) {
                    Outcome::Done(0)
                } else {
                    let wq = self.object(id).wq;
                    self.futex_wait(cpu, task, wq);
                    block(0)
                }
            }
            SyncOp::Unlock(id) => Outcome::Done(self.mutex_unlock(cpu, id, task, wakes)),
            SyncOp::CondWait { cond, mutex } => {
                if !again {
                    let r = self.mutex_unlock(cpu, mutex, task, wakes);
                    if r != 0 {
                        return Outcome::Done(r);
                    }
                    let o = self.object(cond);
                    if matches!(o.state, State::Unused) {
                        o.state = State::Cond;
                    }
                    let wq = o.wq;
                    self.futex_wait(cpu, task, wq);
                    return block(0);
                }
                // Woken (by the condition, or by the mutex): take the mutex again.
                if self.mutex_trylock(mutex, task) {
                    Outcome::Done(0)
                } else {
                    let wq = self.object(mutex).wq;
                    self.futex_wait(cpu, task, wq);
                    block(0)
                }
            }
            SyncOp::Signal(cond) | SyncOp::Broadcast(cond) => {
                let wq = self.object(cond).wq;
                let n = u32::from(matches!(op, SyncOp::Signal(_)));
                Outcome::Done(self.futex_wake(cpu, wq, n, wakes))
            }
            SyncOp::Barrier { id, parties } => {
                let o = self.object(id);
                let wq = o.wq;
                if matches!(o.state, State::Unused) {
                    o.state = State::Barrier {
                        arrived: 0,
                        generation: 0,
                    };
                }
                let State::Barrier {
                    arrived,
                    generation: now_gen,
                } = &mut o.state
                else {
                    return Outcome::Done(EPERM);
                };
                if again {
                    return if *now_gen != generation {
                        Outcome::Done(0)
                    } else {
                        self.futex_wait(cpu, task, wq);
                        block(generation)
                    };
                }
                *arrived += 1;
                if *arrived >= parties {
                    *arrived = 0;
                    *now_gen += 1;
                    self.futex_wake(cpu, wq, 0, wakes);
                    Outcome::Done(0)
                } else {
                    let g = *now_gen;
                    self.futex_wait(cpu, task, wq);
                    block(g)
                }
            }
            SyncOp::SemPost(id) => {
                let o = self.object(id);
                let wq = o.wq;
                match &mut o.state {
                    State::Sem { count } => *count += 1,
                    s @ State::Unused => *s = State::Sem { count: 1 },
                    _ => return Outcome::Done(EPERM),
                }
                self.futex_wake(cpu, wq, 1, wakes);
                Outcome::Done(0)
            }
            SyncOp::SemOp { id, op: delta } => {
                if again && generation == SEMOP_DONE {
                    // 6.x: the waker performed the operation for us.
                    return Outcome::Done(0);
                }
                if !again {
                    self.stats.semops += 1;
                }
                self.semop(cpu, task, id, delta, wakes)
                    .unwrap_or_else(|| block(0))
            }
            SyncOp::SemSetVal { id, val } => match self.sysv_zero_wq(id) {
                Some(zero_wq) => {
                    let wq = self.object(id).wq;
                    let value = u64::from(val);
                    self.object(id).state = State::SysvSem { value, zero_wq };
                    // 2.4 `semctl(SETVAL)`: "maybe some queued-up processes were waiting
                    // for this".
                    self.update_queue(cpu, id, wq, zero_wq, value, wakes);
                    Outcome::Done(0)
                }
                None => Outcome::Done(EPERM),
            },
            SyncOp::SemWait(id) => {
                let o = self.object(id);
                let wq = o.wq;
                match &mut o.state {
                    State::Sem { count } if *count > 0 => {
                        *count -= 1;
                        Outcome::Done(0)
                    }
                    State::Sem { .. } | State::Unused => {
                        if matches!(o.state, State::Unused) {
                            o.state = State::Sem { count: 0 };
                        }
                        self.futex_wait(cpu, task, wq);
                        block(0)
                    }
                    _ => Outcome::Done(EPERM),
                }
            }
        }
    }

    /// The wait-for-zero queue of SysV semaphore `id` (made one on first use), or `None`
    /// when `id` is another kind of object.
    fn sysv_zero_wq(&mut self, id: u32) -> Option<WqId> {
        if matches!(self.object(id).state, State::Unused) {
            let zero_wq = self.new_waitq();
            self.object(id).state = State::SysvSem { value: 0, zero_wq };
        }
        match self.object(id).state {
            State::SysvSem { zero_wq, .. } => Some(zero_wq),
            _ => None,
        }
    }

    /// `try_atomic_semop` and, when it succeeds, `update_queue`; `None` when `task` must
    /// sleep (it is on the semaphore's queue).
    fn semop(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        id: u32,
        delta: i32,
        wakes: &mut Wakes,
    ) -> Option<Outcome> {
        let Some(zero_wq) = self.sysv_zero_wq(id) else {
            return Some(Outcome::Done(EPERM));
        };
        let o = self.object(id);
        let wq = o.wq;
        let State::SysvSem { value, .. } = &mut o.state else {
            unreachable!("sysv_zero_wq made it a SysV semaphore")
        };
        let need = u64::from(delta.unsigned_abs());
        let sleep_on = match delta {
            0 if *value == 0 => None,
            0 => Some((zero_wq, false)),
            d if d < 0 && *value < need => Some((wq, true)),
            d if d < 0 => {
                *value -= need;
                None
            }
            _ => {
                *value += need;
                None
            }
        };
        if let Some((q, exclusive)) = sleep_on {
            self.stats.semop_sleeps += 1;
            self.sleep_on_as(task, q, exclusive, TaskState::Interruptible);
            return None;
        }
        let value = *value;
        if delta != 0 {
            self.update_queue(cpu, id, wq, zero_wq, value, wakes);
        }
        Some(Outcome::Done(0))
    }

    /// `update_queue` of SysV semaphore `id` (queues `wq`, `zero_wq`) after its value
    /// changed to `value`. 2.4: the first decrement waiter (it retries its operation
    /// itself), or every wait-for-zero waiter once it is 0. 6.x: [`Self::complete_semops`].
    fn update_queue(
        &mut self,
        cpu: CpuId,
        id: u32,
        wq: WqId,
        zero_wq: WqId,
        value: u64,
        wakes: &mut Wakes,
    ) {
        if value > 0 && self.class.release().sem_completes_waiters() {
            self.complete_semops(cpu, id, wq, zero_wq, wakes);
            return;
        }
        let list = if value > 0 {
            self.take_waiters(cpu, wq, 1)
        } else {
            self.take_waiters(cpu, zero_wq, 0)
        };
        wakes.push((list, false));
    }

    /// 6.x `update_queue` (ipc/sem.c): walk the decrement waiters of semaphore `id` in
    /// queue order and complete, on each one's behalf, every operation the value now
    /// allows (one that still cannot proceed is skipped; the walk stops at 0), then wake
    /// them all from this call (`wake_q`): a post of N releases N waiters at once, where
    /// 2.4 woke one that woke the next. A completed waiter returns without retrying (its
    /// frame's `generation` says so); the value reaching 0 wakes the wait-for-zero
    /// waiters too.
    fn complete_semops(&mut self, cpu: CpuId, id: u32, wq: WqId, zero_wq: WqId, wakes: &mut Wakes) {
        let State::SysvSem { mut value, .. } = self.usync[id as usize].state else {
            unreachable!("update_queue runs on a SysV semaphore")
        };
        let sleepers: Vec<TaskId> = self.waitqs[wq as usize]
            .waiters
            .iter()
            .map(|w| w.task)
            .filter(|&t| self.tasks[t as usize].state.is_sleeping())
            .collect();
        let (mut walked, mut done) = (0u64, Vec::new());
        for t in sleepers {
            if value == 0 {
                break;
            }
            walked += 1;
            let need = self.pending_semop_need(t);
            if need <= value {
                value -= need;
                self.mark_semop_done(t);
                done.push(t);
            }
        }
        if let State::SysvSem { value: v, .. } = &mut self.usync[id as usize].state {
            *v = value;
        }
        // The walk, charged per entry as `take_waiters` charges its own.
        let ns = self.machine.costs().waitq_entry_ns * walked;
        self.charge(cpu, ns, Acct::Running);
        if done.is_empty() {
            return;
        }
        self.waitqs[wq as usize]
            .waiters
            .retain(|w| !done.contains(&w.task));
        // A wake list is popped from its end: reversed, the waiters wake in queue order.
        wakes.push((done.iter().rev().copied().collect(), false));
        if value == 0 {
            let zero = self.take_waiters(cpu, zero_wq, 0);
            wakes.push((zero, false));
        }
    }

    /// What a task sleeping in a decrementing `semop` waits to take.
    fn pending_semop_need(&self, t: TaskId) -> u64 {
        self.tasks[t as usize]
            .kstack
            .iter()
            .rev()
            .find_map(|f| match f {
                super::frame::Frame::Sys(Sys::Sync {
                    op: SyncOp::SemOp { op, .. },
                    ..
                }) if *op < 0 => Some(u64::from(op.unsigned_abs())),
                _ => None,
            })
            .expect("a decrement waiter sleeps in semop")
    }

    /// Mark the sleeping `semop` of `t` as completed by its waker.
    fn mark_semop_done(&mut self, t: TaskId) {
        for f in self.tasks[t as usize].kstack.iter_mut().rev() {
            if let super::frame::Frame::Sys(Sys::Sync {
                op: SyncOp::SemOp { .. },
                generation,
                ..
            }) = f
            {
                *generation = SEMOP_DONE;
                return;
            }
        }
    }

    /// Take mutex `id` for `task` if it is free.
    fn mutex_trylock(&mut self, id: u32, task: TaskId) -> bool {
        let o = self.object(id);
        match &mut o.state {
            State::Mutex { owner: Some(_) } => false,
            State::Mutex { owner } => {
                *owner = Some(task);
                true
            }
            s => {
                *s = State::Mutex { owner: Some(task) };
                true
            }
        }
    }

    /// Release mutex `id` held by `task`, waking one waiter: 0, or `EPERM`.
    fn mutex_unlock(&mut self, cpu: CpuId, id: u32, task: TaskId, wakes: &mut Wakes) -> i64 {
        let o = self.object(id);
        match &mut o.state {
            State::Mutex { owner } if *owner == Some(task) => {
                *owner = None;
                let wq = o.wq;
                self.futex_wake(cpu, wq, 1, wakes);
                0
            }
            _ => EPERM,
        }
    }
}
