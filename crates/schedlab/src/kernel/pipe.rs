//! Pipes as 2.4 had them (`fs/pipe.c`): one page, `PIPE_BUF`-atomic writes, readers and
//! writers sharing one wait queue, synchronous wake-ups when a side must wait for the other.

use crate::kernel::abi::EPIPE;
use crate::kernel::chan::Fd;
use crate::kernel::frame::Sys;
use crate::kernel::task::TaskId;
use crate::kernel::{Acct, Kernel};
use crate::machine::CpuId;

use super::syscall::{Outcome, Wakes};

impl Kernel {
    /// 2.4 `pipe_read`: wait while empty; copy what is there; if more was asked for and a
    /// writer is waiting, wake writers synchronously and wait for more (`do_more_read`);
    /// else wake writers asynchronously (6.x: synchronously) and return. The call's work
    /// (`pipe_call_ns`) is charged once: the re-check after a wake-up (`again`) is part of
    /// the same call (B§6.3: lat_ctx's pipe overhead is two syscalls and two pipe calls
    /// per hop).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pipe_read(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        mut done: u64,
        again: bool,
        wakes: &mut Wakes,
    ) -> Outcome {
        if !again {
            let ns = self.machine.costs().pipe_call_ns;
            self.charge(cpu, ns, Acct::Running);
        }
        self.touch_stream_state(cpu, s);
        let st = &self.streams[s];
        let wq = st.read_wq;
        if st.len == 0 {
            if st.writers == 0 {
                return Outcome::Done(done as i64);
            }
            self.sleep_on(task, wq);
            return Outcome::Block(Sys::Read {
                fd,
                len,
                done,
                again: true,
            });
        }
        let chunk = (len - done).min(st.len);
        self.copy(cpu, s, chunk);
        let st = &mut self.streams[s];
        st.len -= chunk;
        st.read += chunk;
        done += chunk;
        if done < len && st.waiting_writers > 0 {
            wakes.push((self.take_waiters(cpu, wq, 0), true));
            self.sleep_on(task, wq);
            return Outcome::Block(Sys::Read {
                fd,
                len,
                done,
                again: true,
            });
        }
        wakes.push(self.data_wake(cpu, wq));
        Outcome::Done(done as i64)
    }

    /// 2.4 `pipe_write`: writes of at most `PIPE_BUF` wait for room for all of it; copy
    /// into free space; when full with bytes left, wake readers synchronously and sleep;
    /// at the end wake readers asynchronously (6.x: synchronously,
    /// [`super::release::Release::sync_data_wakeups`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pipe_write(
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
        let ns = self.machine.costs().pipe_call_ns;
        self.charge(cpu, ns, Acct::Running);
        self.touch_stream_state(cpu, s);
        let st = &mut self.streams[s];
        let wq = st.write_wq;
        if st.readers == 0 {
            return Outcome::Done(if done > 0 { done as i64 } else { EPIPE });
        }
        let pipe_buf = st.cap;
        if !started {
            let need = if len <= pipe_buf { len } else { 1 };
            if st.cap - st.len < need {
                st.waiting_writers += 1;
                self.sleep_on(task, wq);
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
            let st = &self.streams[s];
            let free = st.cap - st.len;
            if free > 0 && done < len {
                let chunk = (len - done).min(free);
                self.copy(cpu, s, chunk);
                let st = &mut self.streams[s];
                st.len += chunk;
                st.written += chunk;
                done += chunk;
                continue;
            }
            if done == len {
                break;
            }
            wakes.push((self.take_waiters(cpu, wq, 0), true));
            self.streams[s].waiting_writers += 1;
            self.sleep_on(task, wq);
            return Outcome::Block(Sys::Write {
                fd,
                len,
                done,
                started: true,
                waiting: true,
            });
        }
        let rq = self.streams[s].read_wq;
        wakes.push(self.data_wake(cpu, rq));
        Outcome::Done(len as i64)
    }
}
