//! System call bodies: pipes and sockets as 2.4 had them, poll, sleep, yield, fork, exec,
//! exit and wait.
//!
//! A body runs synced, charges its work as running time, and ends one of three ways:
//! done (the return value goes to the program), blocked (the task is on a wait queue or
//! timer and `schedule()` follows; the body is re-entered after the wake-up), or exited.
//! Wake-ups a body causes are queued as `Wake` frames and delivered, one
//! `try_to_wake_up` each, before the task returns or sleeps.

use crate::kernel::chan::{Fd, File, FileKind, Stream, StreamKind};
use crate::kernel::frame::{Frame, Sys};
use crate::kernel::task::{Task, TaskId, TaskState, TaskStats};
use crate::kernel::Acct;
use crate::machine::CpuId;
use crate::sim::Simulation;
use crate::workload::program::{Program, EAGAIN, ECHILD, ENFILE, EPIPE};

const EBADF: i64 = -9;

enum Outcome {
    Done(i64),
    Block(Sys),
    Exit,
}

/// Wake-ups a body asks for, in the order it asked.
type Wakes = Vec<(Vec<TaskId>, bool)>;

impl Simulation {
    pub(crate) fn syscall(&mut self, cpu: CpuId, task: TaskId, sys: Sys) {
        if !self.k.tasks[task as usize].wq_regs.is_empty() {
            self.k.unregister_waits(task);
        }
        let mut wakes: Wakes = Vec::new();
        let out = match sys {
            Sys::Read { fd, len, done } => self.sys_read(cpu, task, fd, len, done, &mut wakes),
            Sys::Write {
                fd,
                len,
                done,
                started,
                waiting,
            } => self.sys_write(cpu, task, fd, len, done, started, waiting, &mut wakes),
            Sys::Poll { fds, registered } => self.sys_poll(cpu, task, fds, registered),
            Sys::Yield => {
                let mut ctx = self.k.hook_ctx(cpu);
                self.policy.sys_sched_yield(&mut ctx, cpu, task);
                Outcome::Done(0)
            }
            Sys::Sleep { ns, armed } => {
                if armed {
                    Outcome::Done(0)
                } else {
                    // sys_nanosleep: round up to jiffies, plus one (2.4 `schedule_timeout`).
                    let j = self.k.jiffies_at(self.k.cpus[cpu].clock);
                    let exp = j + ns.div_ceil(self.k.tick_ns) + 1;
                    self.k.cpus[cpu].timers.push((exp, task));
                    self.k.tasks[task as usize].state = TaskState::Interruptible;
                    Outcome::Block(Sys::Sleep { ns, armed: true })
                }
            }
            Sys::Fork { child, thread } => self.sys_fork(cpu, child, thread),
            Sys::Exec { program } => {
                let ns = self.k.machine.costs().exec_ns;
                self.k.charge(cpu, ns, Acct::Running);
                let mm = self.k.next_mm;
                self.k.next_mm += 1;
                self.k.tasks[task as usize].mm = mm;
                self.programs[task as usize] = Some(program);
                Outcome::Done(0)
            }
            Sys::Exit => self.sys_exit(cpu, task),
            Sys::Wait => self.sys_wait(cpu, task),
            Sys::Open { kind } => self.sys_open(cpu, kind),
            Sys::Close { fd } => self.sys_close(cpu, task, fd, &mut wakes),
            Sys::Nice { inc } => {
                let t = &mut self.k.tasks[task as usize];
                t.nice = (t.nice + inc).clamp(-20, 19);
                let mut ctx = self.k.hook_ctx(cpu);
                self.policy.set_user_nice(&mut ctx, task);
                Outcome::Done(0)
            }
        };
        self.assert_unlocked_pub(cpu);
        let st = &mut self.k.tasks[task as usize].kstack;
        match out {
            Outcome::Done(ret) => self.k.tasks[task as usize].ret = ret,
            Outcome::Block(retry) => {
                st.push(Frame::Sys(retry));
                st.push(Frame::Schedule);
            }
            Outcome::Exit => {
                st.clear();
                st.push(Frame::Schedule);
            }
        }
        let st = &mut self.k.tasks[task as usize].kstack;
        for (list, sync) in wakes.into_iter().rev() {
            if !list.is_empty() {
                st.push(Frame::Wake {
                    list,
                    sync,
                    irq: false,
                });
            }
        }
    }

    fn assert_unlocked_pub(&self, cpu: CpuId) {
        debug_assert!(
            self.k.locks.iter().all(|l| l.holder != Some(cpu)),
            "a syscall hook left a lock held"
        );
    }

    fn file(&mut self, task: TaskId, fd: Fd) -> Option<File> {
        match self.k.files.get(fd as usize) {
            Some(f) if f.open => Some(*f),
            _ => {
                let pid = self.k.tasks[task as usize].pid;
                if self.rec.error.is_none() {
                    self.rec.error = Some(format!(
                        "workload bug: pid {pid} used fd {fd}, which is not open"
                    ));
                }
                None
            }
        }
    }

    fn copy(&mut self, cpu: CpuId, s: usize, bytes: u64) {
        let ns = self
            .k
            .machine
            .copy_ns(bytes, self.k.streams[s].last_cpu, cpu);
        self.k.charge(cpu, ns, Acct::Running);
        self.k.streams[s].last_cpu = Some(cpu);
    }

    fn sys_read(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        fd: Fd,
        len: u64,
        done: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let Some(f) = self.file(task, fd) else {
            return Outcome::Done(EBADF);
        };
        let Some(s) = f.rx() else {
            return Outcome::Done(EBADF);
        };
        let s = s as usize;
        if len == 0 {
            return Outcome::Done(0);
        }
        match self.k.streams[s].kind {
            StreamKind::Pipe => self.pipe_read(cpu, task, s, fd, len, done, wakes),
            StreamKind::Unix | StreamKind::Tcp => self.sock_read(cpu, task, s, fd, len, wakes),
        }
    }

    /// 2.4 `pipe_read`: wait while empty; copy what is there; if more was asked for and a
    /// writer is waiting, wake writers synchronously and wait for more (`do_more_read`);
    /// else wake writers asynchronously and return.
    #[allow(clippy::too_many_arguments)]
    fn pipe_read(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        mut done: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let ns = self.k.machine.costs().pipe_call_ns;
        self.k.charge(cpu, ns, Acct::Running);
        let st = &self.k.streams[s];
        let wq = st.read_wq;
        if st.len == 0 {
            if st.writers == 0 {
                return Outcome::Done(done as i64);
            }
            self.k.sleep_on(task, wq);
            return Outcome::Block(Sys::Read { fd, len, done });
        }
        let chunk = (len - done).min(st.len);
        self.copy(cpu, s, chunk);
        let st = &mut self.k.streams[s];
        st.len -= chunk;
        st.read += chunk;
        done += chunk;
        if done < len && st.waiting_writers > 0 {
            wakes.push((self.k.take_waiters(cpu, wq, 0), true));
            self.k.sleep_on(task, wq);
            return Outcome::Block(Sys::Read { fd, len, done });
        }
        wakes.push((self.k.take_waiters(cpu, wq, 0), false));
        Outcome::Done(done as i64)
    }

    /// AF_UNIX / TCP receive: wait for data; copy across skbs up to `len`; freeing skbs
    /// returns send-buffer space, and when the writer's buffer is at most a quarter full
    /// its `write_space` wakes it.
    fn sock_read(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let costs = self.k.machine.costs();
        let call = if self.k.streams[s].kind == StreamKind::Tcp {
            costs.tcp_call_ns
        } else {
            costs.unix_call_ns
        };
        self.k.charge(cpu, call, Acct::Running);
        let st = &self.k.streams[s];
        if st.len == 0 {
            if st.writers == 0 {
                return Outcome::Done(0);
            }
            let wq = st.read_wq;
            self.k.sleep_on(task, wq);
            return Outcome::Block(Sys::Read { fd, len, done: 0 });
        }
        let mut copied = 0;
        let mut freed = false;
        let st = &mut self.k.streams[s];
        while copied < len {
            let Some(front) = st.skbs.front_mut() else {
                break;
            };
            let take = front.0.min(len - copied);
            front.0 -= take;
            copied += take;
            if front.0 == 0 {
                let (_, truesize) = st.skbs.pop_front().expect("front exists");
                st.wmem -= truesize;
                freed = true;
            }
        }
        st.len -= copied;
        st.read += copied;
        let writable = freed && st.wmem * 4 <= st.cap;
        let write_wq = st.write_wq;
        self.copy(cpu, s, copied);
        if writable {
            wakes.push((self.k.take_waiters(cpu, write_wq, 0), false));
        }
        Outcome::Done(copied as i64)
    }

    #[allow(clippy::too_many_arguments)]
    fn sys_write(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        fd: Fd,
        len: u64,
        done: u64,
        started: bool,
        waiting: bool,
        wakes: &mut Wakes,
    ) -> Outcome {
        let Some(f) = self.file(task, fd) else {
            return Outcome::Done(EBADF);
        };
        let Some(s) = f.tx() else {
            return Outcome::Done(EBADF);
        };
        let s = s as usize;
        if waiting {
            self.k.streams[s].waiting_writers -= 1;
        }
        if len == 0 {
            return Outcome::Done(0);
        }
        match self.k.streams[s].kind {
            StreamKind::Pipe => self.pipe_write(cpu, task, s, fd, len, done, started, wakes),
            StreamKind::Unix | StreamKind::Tcp => {
                self.sock_write(cpu, task, s, fd, len, done, wakes)
            }
        }
    }

    /// 2.4 `pipe_write`: writes of at most `PIPE_BUF` wait for room for all of it; copy
    /// into free space; when full with bytes left, wake readers synchronously and sleep;
    /// at the end wake readers asynchronously.
    #[allow(clippy::too_many_arguments)]
    fn pipe_write(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        mut done: u64,
        started: bool,
        wakes: &mut Wakes,
    ) -> Outcome {
        let ns = self.k.machine.costs().pipe_call_ns;
        self.k.charge(cpu, ns, Acct::Running);
        let st = &mut self.k.streams[s];
        let wq = st.write_wq;
        if st.readers == 0 {
            return Outcome::Done(if done > 0 { done as i64 } else { EPIPE });
        }
        let pipe_buf = st.cap;
        if !started {
            let need = if len <= pipe_buf { len } else { 1 };
            if st.cap - st.len < need {
                st.waiting_writers += 1;
                self.k.sleep_on(task, wq);
                return Outcome::Block(Sys::Write {
                    fd,
                    len,
                    done,
                    started: false,
                    waiting: true,
                });
            }
        }
        loop {
            let st = &self.k.streams[s];
            let free = st.cap - st.len;
            if free > 0 && done < len {
                let chunk = (len - done).min(free);
                self.copy(cpu, s, chunk);
                let st = &mut self.k.streams[s];
                st.len += chunk;
                st.written += chunk;
                done += chunk;
                continue;
            }
            if done == len {
                break;
            }
            wakes.push((self.k.take_waiters(cpu, wq, 0), true));
            self.k.streams[s].waiting_writers += 1;
            self.k.sleep_on(task, wq);
            return Outcome::Block(Sys::Write {
                fd,
                len,
                done,
                started: true,
                waiting: true,
            });
        }
        let rq = self.k.streams[s].read_wq;
        wakes.push((self.k.take_waiters(cpu, rq, 0), false));
        Outcome::Done(len as i64)
    }

    /// AF_UNIX / TCP send (2.4 `unix_stream_sendmsg`): chunks of at most `sndbuf/2 − 64`,
    /// each an skb queued on the peer and charged to the send buffer; sleep while the
    /// buffer is full; each skb wakes the reader (`data_ready`, asynchronous).
    #[allow(clippy::too_many_arguments)]
    fn sock_write(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        mut done: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let costs = self.k.machine.costs();
        let call = if self.k.streams[s].kind == StreamKind::Tcp {
            costs.tcp_call_ns
        } else {
            costs.unix_call_ns
        };
        if self.k.streams[s].readers == 0 {
            return Outcome::Done(if done > 0 { done as i64 } else { EPIPE });
        }
        while done < len {
            let st = &self.k.streams[s];
            if st.wmem >= st.cap {
                let wq = st.write_wq;
                self.k.sleep_on(task, wq);
                return Outcome::Block(Sys::Write {
                    fd,
                    len,
                    done,
                    started: true,
                    waiting: false,
                });
            }
            let size = (len - done).min(st.cap / 2 - 64);
            self.k.charge(cpu, call, Acct::Running);
            // The skb is fresh memory: no remote lines to pull.
            self.k.streams[s].last_cpu = None;
            self.copy(cpu, s, size);
            let st = &mut self.k.streams[s];
            st.skbs.push_back((size, size + costs.skb_overhead_bytes));
            st.wmem += size + costs.skb_overhead_bytes;
            st.len += size;
            st.written += size;
            done += size;
            let rq = st.read_wq;
            wakes.push((self.k.take_waiters(cpu, rq, 0), false));
        }
        Outcome::Done(len as i64)
    }

    /// `poll()`: scan every fd (registering on its wait queue); return the first readable
    /// one's index, or sleep until one of the queues is woken and scan again.
    fn sys_poll(&mut self, cpu: CpuId, task: TaskId, fds: Box<[Fd]>, _registered: bool) -> Outcome {
        let costs = self.k.machine.costs();
        self.k.charge(
            cpu,
            costs.poll_ns + fds.len() as u64 * costs.poll_fd_ns,
            Acct::Running,
        );
        let mut queues = Vec::with_capacity(fds.len());
        for (i, &fd) in fds.iter().enumerate() {
            let Some(f) = self.file(task, fd) else {
                return Outcome::Done(EBADF);
            };
            let Some(s) = f.rx() else {
                return Outcome::Done(EBADF);
            };
            let st = &self.k.streams[s as usize];
            if st.readable() {
                return Outcome::Done(i as i64);
            }
            queues.push(st.read_wq);
        }
        for wq in queues {
            self.k.sleep_on(task, wq);
        }
        Outcome::Block(Sys::Poll {
            fds,
            registered: true,
        })
    }

    /// `do_fork`, first half: refuse beyond the 2.4 limits, charge the copy. The task is
    /// created by the `NewTask` frame that follows, synced, so that it appears in the task
    /// table together with its scheduler state.
    fn sys_fork(&mut self, cpu: CpuId, child: Box<dyn Program>, thread: bool) -> Outcome {
        if !self.fork_allowed() {
            return Outcome::Done(EAGAIN);
        }
        let costs = self.k.machine.costs();
        let ns = if thread {
            costs.clone_ns
        } else {
            costs.fork_ns
        };
        self.k.charge(cpu, ns, Acct::Running);
        let parent = self.k.cpus[cpu].curr;
        self.k.tasks[parent as usize]
            .kstack
            .push(Frame::NewTask { child, thread });
        Outcome::Done(0)
    }

    /// `RLIMIT_NPROC`, `max_threads` and `PID_MAX` (benchmarks.md §1.4).
    fn fork_allowed(&self) -> bool {
        let limits = &self.k.machine.preset.limits;
        let live = self.k.live_tasks;
        live < limits.nproc && live < limits.max_threads && (self.k.next_pid as u64) < 32768
    }

    /// `do_fork`, second half (synced): create the child, let the policy split the
    /// timeslice and place it; the parent's `fork()` returns the child's pid.
    pub(crate) fn new_task(
        &mut self,
        cpu: CpuId,
        parent: TaskId,
        child: Box<dyn Program>,
        thread: bool,
    ) {
        if !self.fork_allowed() {
            self.k.tasks[parent as usize].ret = EAGAIN;
            return;
        }
        let p = &self.k.tasks[parent as usize];
        let mm = if thread {
            p.mm
        } else {
            self.k.next_mm += 1;
            self.k.next_mm - 1
        };
        let (nice, allowed) = (p.nice, p.cpus_allowed);
        let id = self.create_task(Some(parent), child, mm, nice, allowed, cpu);
        self.k.tasks[id as usize]
            .kstack
            .extend([Frame::User, Frame::SysExit]);
        self.k.stats.forks += 1;
        let mut ctx = self.k.hook_ctx(cpu);
        self.policy.task_new(&mut ctx, id, Some(parent));
        self.policy.wake_up_new_task(&mut ctx, id, parent);
        self.assert_unlocked(cpu, "wake_up_new_task");
        self.k.tasks[id as usize].state = TaskState::Running;
        self.k.tasks[parent as usize].ret = self.k.tasks[id as usize].pid as i64;
    }

    /// Create a task in state `Uninterruptible` (not yet runnable) on `cpu`'s queue.
    pub(crate) fn create_task(
        &mut self,
        parent: Option<TaskId>,
        program: Box<dyn Program>,
        mm: u32,
        nice: i32,
        cpus_allowed: u64,
        cpu: CpuId,
    ) -> TaskId {
        let id = self.k.tasks.len() as TaskId;
        let pid = self.k.next_pid;
        self.k.next_pid += 1;
        let wait_chldexit = self.k.new_waitq();
        self.k.tasks.push(Task {
            pid,
            mm,
            nice,
            policy: crate::kernel::task::SchedPolicy::Other,
            rt_priority: 0,
            cpus_allowed,
            processor: cpu,
            last_ran: None,
            state: TaskState::Uninterruptible,
            on_cpu: None,
            need_resched: false,
            is_idle: false,
            parent,
            children: Vec::new(),
            zombies: Default::default(),
            wait_chldexit,
            kstack: Vec::with_capacity(8),
            ret: 0,
            wq_regs: Vec::new(),
            stats: TaskStats::default(),
            born_at: self.k.cpus[cpu].clock,
        });
        self.programs.push(Some(program));
        if let Some(pp) = parent {
            self.k.tasks[pp as usize].children.push(id);
        }
        self.k.live_tasks += 1;
        id
    }

    fn sys_exit(&mut self, cpu: CpuId, task: TaskId) -> Outcome {
        let ns = self.k.machine.costs().exit_ns;
        self.k.charge(cpu, ns, Acct::Running);
        self.k.tasks[task as usize].state = TaskState::Zombie;
        self.k.live_tasks -= 1;
        // Orphans: reparented to nobody; a zombie orphan is released at once.
        let children = std::mem::take(&mut self.k.tasks[task as usize].children);
        self.k.tasks[task as usize].zombies.clear();
        for c in children {
            self.k.tasks[c as usize].parent = None;
            if self.k.tasks[c as usize].state == TaskState::Zombie
                && self.k.tasks[c as usize].on_cpu.is_none()
            {
                self.release(c);
            }
        }
        // The run stops once the last task has also left its CPU (see `context_switch`).
        Outcome::Exit
    }

    fn sys_wait(&mut self, cpu: CpuId, task: TaskId) -> Outcome {
        if let Some(z) = self.k.tasks[task as usize].zombies.pop_front() {
            let mut ctx = self.k.hook_ctx(cpu);
            self.policy.sched_exit(&mut ctx, task, z);
            let ns = self.k.machine.costs().wait_ns;
            self.k.charge(cpu, ns, Acct::Running);
            let children = &mut self.k.tasks[task as usize].children;
            if let Some(i) = children.iter().position(|&c| c == z) {
                children.swap_remove(i);
            }
            let pid = self.k.tasks[z as usize].pid;
            self.release(z);
            return Outcome::Done(pid as i64);
        }
        if self.k.tasks[task as usize].children.is_empty() {
            return Outcome::Done(ECHILD);
        }
        let wq = self.k.tasks[task as usize].wait_chldexit;
        self.k.sleep_on(task, wq);
        Outcome::Block(Sys::Wait)
    }

    fn sys_open(&mut self, cpu: CpuId, kind: StreamKind) -> Outcome {
        let costs = self.k.machine.costs();
        if self.k.open_files + 2 > self.k.machine.preset.limits.file_max {
            return Outcome::Done(ENFILE);
        }
        let fd = self.k.files.len() as Fd;
        match kind {
            StreamKind::Pipe => {
                self.k.charge(cpu, 2 * costs.file_create_ns, Acct::Running);
                let wq = self.k.new_waitq();
                let s = self.k.streams.len() as u32;
                self.k
                    .streams
                    .push(Stream::new(kind, costs.pipe_buf_bytes, wq, wq));
                self.k.files.push(File {
                    kind: FileKind::PipeRead(s),
                    open: true,
                });
                self.k.files.push(File {
                    kind: FileKind::PipeWrite(s),
                    open: true,
                });
            }
            StreamKind::Unix | StreamKind::Tcp => {
                let (cost, cap) = if kind == StreamKind::Tcp {
                    (costs.tcp_connect_ns, costs.tcp_sndbuf_bytes)
                } else {
                    (2 * costs.file_create_ns, costs.unix_sndbuf_bytes)
                };
                self.k.charge(cpu, cost, Acct::Running);
                let (wa, wb) = (self.k.new_waitq(), self.k.new_waitq());
                let ab = self.k.streams.len() as u32;
                self.k.streams.push(Stream::new(kind, cap, wb, wa));
                self.k.streams.push(Stream::new(kind, cap, wa, wb));
                self.k.files.push(File {
                    kind: FileKind::Sock { rx: ab + 1, tx: ab },
                    open: true,
                });
                self.k.files.push(File {
                    kind: FileKind::Sock { rx: ab, tx: ab + 1 },
                    open: true,
                });
            }
        }
        self.k.open_files += 2;
        Outcome::Done(fd as i64)
    }

    /// `close()`. model: one file table for the whole system, so this closes the file for
    /// every task sharing it; workloads close only files nobody else uses.
    fn sys_close(&mut self, cpu: CpuId, task: TaskId, fd: Fd, wakes: &mut Wakes) -> Outcome {
        let Some(f) = self.file(task, fd) else {
            return Outcome::Done(EBADF);
        };
        self.k.files[fd as usize].open = false;
        self.k.open_files -= 1;
        if let Some(rx) = f.rx() {
            let st = &mut self.k.streams[rx as usize];
            st.readers -= 1;
            let wq = st.write_wq;
            wakes.push((self.k.take_waiters(cpu, wq, 0), false));
        }
        if let Some(tx) = f.tx() {
            let st = &mut self.k.streams[tx as usize];
            st.writers -= 1;
            let wq = st.read_wq;
            wakes.push((self.k.take_waiters(cpu, wq, 0), false));
        }
        Outcome::Done(0)
    }
}
