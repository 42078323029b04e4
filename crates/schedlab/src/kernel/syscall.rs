//! System call dispatch and the small calls: poll, sleep, yield, nice, pipe/socket
//! creation and close. Pipes are in `pipe.rs`, sockets in `socket.rs`, fork, exec, exit
//! and wait in `process.rs`.
//!
//! A body runs synced, charges its work as running time, and ends one of three ways:
//! done (the return value goes to the program), blocked (the task is on a wait queue or
//! timer and `schedule()` follows; the body is re-entered after the wake-up), or exited.
//! Wake-ups a body causes are queued as `Wake` frames and delivered, one
//! `try_to_wake_up` each, before the task returns or sleeps.

use crate::kernel::abi::{EBADF, ENFILE};
use crate::kernel::chan::{Fd, File, FileKind, Stream, StreamKind};
use crate::kernel::frame::{Frame, Sys};
use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::types::WakeList;
use crate::kernel::{Acct, Kernel, MmLine};
use crate::machine::CpuId;

pub(super) enum Outcome {
    Done(i64),
    Block(Sys),
    Exit,
}

/// A `write(fd, len)` that slept with `done` bytes written: re-entered when woken.
pub(super) fn write_again(fd: Fd, len: u64, done: u64) -> Outcome {
    Outcome::Block(Sys::Write {
        fd,
        len,
        done,
        started: true,
        waiting: false,
    })
}

/// Wake-ups a body asks for, in the order it asked.
pub(super) type Wakes = smallvec::SmallVec<[(WakeList, bool); 2]>;

impl Kernel {
    pub(crate) fn syscall(&mut self, cpu: CpuId, task: TaskId, sys: Sys) {
        if !self.tasks[task as usize].wq_regs.is_empty() {
            self.unregister_waits(task);
        }
        let mut wakes = Wakes::new();
        let out = match sys {
            Sys::Read {
                fd,
                len,
                done,
                again,
            } => self.sys_read(cpu, task, fd, len, done, again, &mut wakes),
            Sys::Write {
                fd,
                len,
                done,
                started,
                waiting,
            } => self.sys_write(cpu, task, fd, len, done, started, waiting, &mut wakes),
            Sys::Poll { fds, registered } => self.sys_poll(cpu, task, fds, registered),
            Sys::Yield => {
                self.sched_yield(cpu, task);
                Outcome::Done(0)
            }
            Sys::Sleep { ns, armed } => {
                if armed {
                    Outcome::Done(0)
                } else if self.hrtimers {
                    let at = self.cpus[cpu].clock + ns;
                    self.arm_hrtimer(cpu, task, at);
                    Outcome::Block(Sys::Sleep { ns, armed: true })
                } else {
                    // sys_nanosleep: round up to jiffies, plus one (2.4 `schedule_timeout`).
                    let j = self.jiffies_at(self.cpus[cpu].clock);
                    let exp = j + ns.div_ceil(self.tick_ns) + 1;
                    self.cpus[cpu].timers.push((exp, task));
                    self.tasks[task as usize].state = TaskState::Interruptible;
                    Outcome::Block(Sys::Sleep { ns, armed: true })
                }
            }
            Sys::Fork { child, thread } => self.sys_fork(cpu, child, thread),
            Sys::Exec { program } => self.sys_exec(cpu, task, program),
            Sys::Exit => self.sys_exit(cpu, task),
            Sys::Wait => self.sys_wait(cpu, task),
            Sys::Open { kind, nodelay } => self.sys_open(cpu, kind, nodelay),
            Sys::Close { fd } => self.sys_close(cpu, task, fd, &mut wakes),
            Sys::SetAffinity { mask } => Outcome::Done(self.sched_setaffinity(cpu, task, &mask)),
            Sys::SleepUntil { at, armed } => {
                let clock = self.cpus[cpu].clock;
                if armed || at <= clock {
                    Outcome::Done(0)
                } else if self.hrtimers {
                    self.arm_hrtimer(cpu, task, at);
                    Outcome::Block(Sys::SleepUntil { at, armed: true })
                } else {
                    // An absolute timer expires at the first jiffy at or after `at`.
                    let exp = at.div_ceil(self.tick_ns);
                    self.cpus[cpu].timers.push((exp, task));
                    self.tasks[task as usize].state = TaskState::Interruptible;
                    Outcome::Block(Sys::SleepUntil { at, armed: true })
                }
            }
            Sys::Sync {
                op,
                again,
                generation,
            } => self.sys_sync(cpu, task, op, again, generation, &mut wakes),
            Sys::Nice { inc } => {
                let t = &mut self.tasks[task as usize];
                t.nice = (t.nice + inc).clamp(-20, 19);
                self.set_user_nice(cpu, task);
                Outcome::Done(0)
            }
        };
        let st = &mut self.tasks[task as usize].kstack;
        match out {
            Outcome::Done(ret) => self.tasks[task as usize].ret = ret,
            Outcome::Block(retry) => {
                st.push(Frame::Sys(retry));
                st.push(Frame::Schedule);
            }
            Outcome::Exit => {
                st.clear();
                st.push(Frame::Schedule);
            }
        }
        let st = &mut self.tasks[task as usize].kstack;
        // The socket lock is held for the body's work, wake-ups included (2.4 runs the
        // loopback softirq inside `tcp_sendmsg`), and released before any sleep.
        if let Some(fd) = self.sock_taken.take() {
            st.push(Frame::ReleaseSock { fd });
        }
        self.push_wakes(task, wakes, false);
    }

    /// Push the frames that deliver `wakes` on `task`'s stack, the first asked for on top
    /// (the frames run in the order the work asked for them), under those of the
    /// loopback packets the work sent: their readers are woken once the work (their path)
    /// has elapsed, after the wake-ups it delivers itself.
    pub(super) fn push_wakes(&mut self, task: TaskId, mut wakes: Wakes, irq: bool) {
        let st = &mut self.tasks[task as usize].kstack;
        for wq in self.lo_wakes.drain(..).rev() {
            st.push(Frame::WakeQueue { wq });
        }
        while let Some((list, sync)) = wakes.pop() {
            if !list.is_empty() {
                st.push(Frame::Wake { list, sync, irq });
            }
        }
    }

    pub(super) fn file(&mut self, task: TaskId, fd: Fd) -> Option<File> {
        match self.files.get(fd as usize) {
            Some(f) if f.open => Some(*f),
            _ => {
                let pid = self.tasks[task as usize].pid;
                if self.rec.error.is_none() {
                    self.rec.error = Some(format!(
                        "workload bug: pid {pid} used fd {fd}, which is not open"
                    ));
                }
                None
            }
        }
    }

    /// `cpu` writes stream `s`'s shared kernel state (its lock, queue head, counters and
    /// wait-queue head: [`StreamKind::state_lines`]). When another CPU wrote them last,
    /// each line comes from that CPU's cache first, one after the other: the call reads
    /// a field of one before it knows to touch the next, so the transfers do not overlap.
    /// Part of the coherence model (`coherence=off`: free, as before it existed).
    pub(super) fn touch_stream_state(&mut self, cpu: CpuId, s: usize) {
        let st = &mut self.streams[s];
        let last = st.state_cpu.replace(cpu);
        let Some(from) = last.filter(|&o| o != cpu) else {
            return;
        };
        if !self.ic.model().coherence {
            return;
        }
        let lines = st.kind.state_lines(self.class.release());
        let ns = self.ic.transfer_run(self.cpus[cpu].clock, from, cpu, lines);
        self.stats.stream_state_transfers += lines;
        self.charge(cpu, ns, Acct::Running);
    }

    /// `fget` of `fd`. 2.4 to 2.6.0: `read_lock(&files->file_lock)` and its unlock, two
    /// locked operations on the line of the task's `files_struct`, shared by every thread
    /// of its mm. 6.x ([`super::release::Release::fget_light`]): nothing when no other
    /// task holds the table, else a reference on the file's own `f_count`. When another
    /// CPU wrote the line last, it comes from that CPU's cache first.
    pub(super) fn fget(&mut self, cpu: CpuId, task: TaskId, fd: Fd) {
        if !self.class.release().fget_light() {
            return self.files_lock(cpu, task);
        }
        if !self.files_shared(task) {
            return;
        }
        let ns = self.pull_file_line(cpu, fd);
        if ns > 0 {
            self.stats.files_line_transfers += 1;
            self.charge(cpu, ns, Acct::Running);
        }
    }

    /// A locked operation on the line of the task's `files_struct` (`file_lock`): 2.4's
    /// `fget`, and every release's `close` (which clears the slot under it).
    fn files_lock(&mut self, cpu: CpuId, task: TaskId) {
        let mm = self.tasks[task as usize].mm;
        let ns = self.pull_mm_line(cpu, mm, MmLine::Files);
        if ns > 0 {
            self.stats.files_line_transfers += 1;
            self.charge(cpu, ns, Acct::Running);
        }
    }

    pub(super) fn copy(&mut self, cpu: CpuId, s: usize, bytes: u64) {
        let last = self.streams[s].last_cpu;
        let mut ns = self.machine.copy_ns(bytes, last, cpu);
        if let Some(from) = last.filter(|&o| o != cpu) {
            let lines = bytes.div_ceil(self.machine.costs().line_bytes);
            ns += self.ic.stream(self.cpus[cpu].clock, lines, Some(from), cpu);
        }
        self.charge(cpu, ns, Acct::Running);
        self.streams[s].last_cpu = Some(cpu);
    }

    #[allow(clippy::too_many_arguments)]
    fn sys_read(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        fd: Fd,
        len: u64,
        done: u64,
        again: bool,
        wakes: &mut Wakes,
    ) -> Outcome {
        if !again {
            self.fget(cpu, task, fd);
        }
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
        match self.streams[s].kind {
            StreamKind::Pipe => self.pipe_read(cpu, task, s, fd, len, done, again, wakes),
            StreamKind::Unix => self.sock_read(cpu, task, s, fd, len, wakes),
            StreamKind::Tcp => self.tcp_recvmsg(cpu, task, s, fd, len, again, wakes),
            StreamKind::Udp => self.udp_recvmsg(cpu, task, s, fd, len, again),
        }
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
        if !started && !waiting && done == 0 {
            self.fget(cpu, task, fd);
        }
        let Some(f) = self.file(task, fd) else {
            return Outcome::Done(EBADF);
        };
        let Some(s) = f.tx() else {
            return Outcome::Done(EBADF);
        };
        let s = s as usize;
        if waiting {
            self.streams[s].waiting_writers -= 1;
        }
        if len == 0 {
            return Outcome::Done(0);
        }
        match self.streams[s].kind {
            StreamKind::Pipe => self.pipe_write(cpu, task, s, fd, len, done, started, wakes),
            StreamKind::Unix => self.sock_write(cpu, task, s, fd, len, done, wakes),
            StreamKind::Tcp => self.tcp_sendmsg(cpu, task, s, fd, len, done, wakes),
            StreamKind::Udp => self.udp_sendmsg(cpu, s, len, wakes),
        }
    }

    /// `poll()`: scan every fd (registering on its wait queue); return the first readable
    /// one's index, or sleep until one of the queues is woken and scan again.
    fn sys_poll(&mut self, cpu: CpuId, task: TaskId, fds: Box<[Fd]>, _registered: bool) -> Outcome {
        let costs = self.machine.costs();
        self.charge(
            cpu,
            costs.poll_ns + fds.len() as u64 * costs.poll_fd_ns,
            Acct::Running,
        );
        // do_pollfd's fget of each fd (2.4: the first brings the table's line, the others
        // hit).
        for &fd in fds.iter() {
            self.fget(cpu, task, fd);
        }
        let mut queues = Vec::with_capacity(fds.len());
        for (i, &fd) in fds.iter().enumerate() {
            let Some(f) = self.file(task, fd) else {
                return Outcome::Done(EBADF);
            };
            let Some(s) = f.rx() else {
                return Outcome::Done(EBADF);
            };
            let st = &mut self.streams[s as usize];
            // `pipe_poll` sets `poll_usage`: from then on every write wakes the readers.
            st.ring.polled = true;
            if st.readable() {
                return Outcome::Done(i as i64);
            }
            queues.push(st.read_wq);
        }
        for wq in queues {
            self.sleep_on(task, wq);
        }
        Outcome::Block(Sys::Poll {
            fds,
            registered: true,
        })
    }

    fn sys_open(&mut self, cpu: CpuId, kind: StreamKind, nodelay: bool) -> Outcome {
        let costs = self.machine.costs();
        if self.open_files + 2 > self.machine.limits.file_max {
            self.limit_hit = self.limit_hit.or(Some(super::limits::Limit::FileMax));
            return Outcome::Done(ENFILE);
        }
        let fd = self.files.len() as Fd;
        match kind {
            StreamKind::Pipe => {
                self.charge(cpu, 2 * costs.file_create_ns, Acct::Running);
                // 2.4's one wait queue for both sides, or 6.x's `rd_wait` and `wr_wait`.
                let rq = self.new_waitq();
                let (wq, cap) = if self.pipe_ring() {
                    let ring = super::chan::PIPE_DEF_BUFFERS as u64 * costs.page_bytes;
                    (self.new_waitq(), ring)
                } else {
                    (rq, costs.pipe_buf_bytes)
                };
                let s = self.streams.len() as u32;
                self.streams.push(Stream::new(kind, cap, rq, wq));
                self.files.push(File {
                    kind: FileKind::PipeRead(s),
                    open: true,
                });
                self.files.push(File {
                    kind: FileKind::PipeWrite(s),
                    open: true,
                });
            }
            StreamKind::Unix | StreamKind::Tcp | StreamKind::Udp => {
                // A UDP pair: two sockets created, bound and connected without a
                // handshake (as a socketpair's two files); its `cap` is the receiver's
                // `sk_rcvbuf`, `net.core.rmem_default`, which Linux sets equal to
                // `wmem_default` (2.4: 65535; 6.x: 212992).
                let (cost, cap) = match kind {
                    StreamKind::Tcp => (costs.tcp_connect_ns, costs.tcp_sndbuf_bytes),
                    _ => (2 * costs.file_create_ns, costs.unix_sndbuf_bytes),
                };
                self.charge(cpu, cost, Acct::Running);
                let (wa, wb) = (self.new_waitq(), self.new_waitq());
                let ab = self.streams.len() as u32;
                self.streams.push(Stream::new(kind, cap, wb, wa));
                self.streams.push(Stream::new(kind, cap, wa, wb));
                for (k, st) in self.streams[ab as usize..].iter_mut().enumerate() {
                    st.tcp.nodelay = nodelay;
                    st.tcp.reverse = if k == 0 { ab + 1 } else { ab };
                }
                self.files.push(File {
                    kind: FileKind::Sock { rx: ab + 1, tx: ab },
                    open: true,
                });
                self.files.push(File {
                    kind: FileKind::Sock { rx: ab, tx: ab + 1 },
                    open: true,
                });
            }
        }
        self.open_files += 2;
        let (bytes, what) = match kind {
            StreamKind::Pipe => (self.kmem_sizes.pipe, "a pipe"),
            _ => (2 * self.kmem_sizes.socket, "a socket pair"),
        };
        self.kmem_alloc(super::kmem::KmemKind::Files, bytes, what);
        Outcome::Done(fd as i64)
    }

    /// `close()`. model: one file table for the whole system, so this closes the file for
    /// every task sharing it; workloads close only files nobody else uses.
    fn sys_close(&mut self, cpu: CpuId, task: TaskId, fd: Fd, wakes: &mut Wakes) -> Outcome {
        // write_lock(&files->file_lock) (6.x: spin_lock) to clear the slot.
        self.files_lock(cpu, task);
        let Some(f) = self.file(task, fd) else {
            return Outcome::Done(EBADF);
        };
        self.files[fd as usize].open = false;
        self.open_files -= 1;
        // Each end gives back half a pipe or one socket.
        let end = match f.kind {
            FileKind::Sock { .. } => self.kmem_sizes.socket,
            _ => self.kmem_sizes.pipe / 2,
        };
        self.kmem_free(super::kmem::KmemKind::Files, end);
        if let Some(rx) = f.rx() {
            let st = &mut self.streams[rx as usize];
            st.readers -= 1;
            let wq = st.write_wq;
            wakes.push((self.take_waiters(cpu, wq, 0), false));
        }
        if let Some(tx) = f.tx() {
            if self.streams[tx as usize].writers == 1
                && self.streams[tx as usize].kind == StreamKind::Tcp
            {
                self.tcp_close_tx(cpu, tx as usize, wakes);
            }
            let st = &mut self.streams[tx as usize];
            st.writers -= 1;
            let wq = st.read_wq;
            wakes.push((self.take_waiters(cpu, wq, 0), false));
        }
        Outcome::Done(0)
    }
}

impl Kernel {
    /// Sleep `task` on a high-resolution timer of `cpu` that expires at `at` plus the
    /// timer slack (`hrtimer_nanosleep`; the clock event is programmed to the hard expiry).
    fn arm_hrtimer(&mut self, cpu: CpuId, task: TaskId, at: crate::engine::Time) {
        let fire = at + super::TIMER_SLACK_NS;
        self.queue.push(
            fire,
            super::Event::HrTimer {
                cpu: cpu as u16,
                task,
            },
        );
        self.tasks[task as usize].state = TaskState::Interruptible;
    }
}
