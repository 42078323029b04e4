//! Pipes as 2.4 had them (`fs/pipe.c`): one page, `PIPE_BUF`-atomic writes, readers and
//! writers sharing one wait queue, synchronous wake-ups when a side must wait for the other.
//! And as 6.x has them ([`super::release::Release::pipe_ring`], `pipe_ring=`): a ring of
//! page buffers ([`PipeRing`]), full when every slot is taken; readers and writers asleep
//! on their own queues, exclusively, so that a wake-up wakes one; a write wakes a reader
//! only if the pipe was empty, a read a writer only if it was full, and a task that slept
//! passes the wake-up on to the next sleeper of its side when it leaves room or data.
//!
//! The difference shows where many writers share a pipe (hackbench's receivers each read
//! from twenty senders): 2.4 wakes every waiting writer at every read, 6.x one writer, and
//! a full 6.x pipe of 100-byte messages has room again only every 40 reads.

use crate::kernel::abi::EPIPE;
use crate::kernel::chan::Fd;
use crate::kernel::chan::{PipeRing, PipeStamp, PIPE_DEF_BUFFERS};
use crate::kernel::frame::Sys;
use crate::kernel::task::{TaskId, TaskState};
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
        if self.pipe_ring() {
            return self.pipe_read_ring(cpu, task, s, fd, len, again, wakes);
        }
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
        if self.pipe_ring() {
            return self.pipe_write_ring(cpu, task, s, fd, len, done, started, wakes);
        }
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

    /// Pipes keep 6.x's ring: the machine's `pipe_ring=` or, on `auto`, the release's.
    pub(super) fn pipe_ring(&self) -> bool {
        self.machine
            .pipe_ring
            .unwrap_or_else(|| self.class.release().pipe_ring())
    }

    /// `wake_up_interruptible_sync_poll` of a pipe's queue: its non-exclusive sleepers
    /// (`poll()`) and one exclusive one, synchronously.
    fn pipe_wake_one(&mut self, cpu: CpuId, wq: super::waitq::WqId, wakes: &mut Wakes) {
        wakes.push((self.take_waiters(cpu, wq, 1), true));
    }

    /// 6.x `pipe_read` on the ring: read what the oldest buffers hold, up to `len`; with
    /// nothing there, sleep exclusively until a writer wakes this reader (`again`: the
    /// same call after that sleep). At the end a read of a pipe that was full wakes one
    /// writer, and a reader that slept wakes the next reader if data is left.
    #[allow(clippy::too_many_arguments)]
    fn pipe_read_ring(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        again: bool,
        wakes: &mut Wakes,
    ) -> Outcome {
        if !again {
            let ns = self.machine.costs().pipe_call_ns;
            self.charge(cpu, ns, Acct::Running);
        }
        self.touch_stream_state(cpu, s);
        // `pipe->max_usage`: the kernel's, whatever the machine (2.4's `pipe_buf_bytes` is
        // the preset's one page).
        let slots = PIPE_DEF_BUFFERS;
        let st = &mut self.streams[s];
        let (read_wq, write_wq) = (st.read_wq, st.write_wq);
        let was_full = st.ring.full(slots);
        let costs = self.machine.costs();
        let curve = &costs.pipe_depth_ns;
        let priced = self.machine.pipe_depth && !curve.is_empty();
        let (written, written_llc, llc_of) =
            (&self.pipe_written, &self.pipe_written_llc, &self.skb_llc);
        let mut depth_ns = 0;
        let got = st.ring.take_each(len, |b, offset, n| {
            if priced {
                let at = b.stamp_at(offset);
                let d = pipe_depth(at, written, written_llc, llc_of, costs.l2_bytes);
                depth_ns += curve.band(d) * n / 100;
            }
        });
        if got == 0 {
            if st.writers == 0 {
                return Outcome::Done(0);
            }
            self.sleep_on_as(task, read_wq, true, TaskState::Interruptible);
            return Outcome::Block(Sys::Read {
                fd,
                len,
                done: 0,
                again: true,
            });
        }
        st.len -= got;
        st.read += got;
        let data_left = !st.ring.bufs.is_empty();
        self.copy(cpu, s, got);
        if depth_ns > 0 {
            self.stats.pipe_depth_ns += depth_ns;
            self.charge(cpu, depth_ns, Acct::Running);
        }
        if was_full {
            self.stats.pipe_writer_wakes += 1;
            self.pipe_wake_one(cpu, write_wq, wakes);
        }
        if again && data_left {
            self.pipe_wake_one(cpu, read_wq, wakes);
        }
        Outcome::Done(got as i64)
    }

    /// 6.x `pipe_write` on the ring: a write not a multiple of a page first merges its
    /// remainder into the newest buffer if that page has room; then each page left takes
    /// a slot. With every slot taken and bytes left, wake a reader if the pipe was empty
    /// and sleep exclusively until a read frees a slot (`started`: the same call after that
    /// sleep, which wakes the next writer at its end if room is left). At the end, a write
    /// to a pipe that was empty (or was ever polled) wakes one reader.
    #[allow(clippy::too_many_arguments)]
    fn pipe_write_ring(
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
        let costs = self.machine.costs();
        if !started {
            self.charge(cpu, costs.pipe_call_ns, Acct::Running);
        }
        self.touch_stream_state(cpu, s);
        let (page, slots) = (costs.page_bytes, PIPE_DEF_BUFFERS);
        let st = &mut self.streams[s];
        if st.readers == 0 {
            return Outcome::Done(if done > 0 { done as i64 } else { EPIPE });
        }
        let (read_wq, write_wq) = (st.read_wq, st.write_wq);
        let was_empty = st.ring.bufs.is_empty();
        let mut copied = 0;
        let chars = len % page;
        if !started && chars > 0 && st.ring.can_merge(chars, page) {
            let at = self.pipe_stamp(cpu, chars);
            self.streams[s].ring.merge(chars, page, at);
            copied = chars;
        }
        while done + copied < len {
            if !self.streams[s].ring.full(slots) {
                let n = (len - done - copied).min(page);
                let at = self.pipe_stamp(cpu, n);
                self.streams[s].ring.push(n, at);
                copied += n;
                continue;
            }
            done += self.pipe_copy_in(cpu, s, copied);
            if was_empty {
                self.pipe_wake_one(cpu, read_wq, wakes);
            }
            self.streams[s].waiting_writers += 1;
            self.stats.pipe_full_waits += 1;
            self.sleep_on_as(task, write_wq, true, TaskState::Interruptible);
            return Outcome::Block(Sys::Write {
                fd,
                len,
                done,
                started: true,
                waiting: true,
            });
        }
        self.pipe_copy_in(cpu, s, copied);
        let ring: &PipeRing = &self.streams[s].ring;
        let (full, polled) = (ring.full(slots), ring.polled);
        if was_empty || polled {
            self.pipe_wake_one(cpu, read_wq, wakes);
        }
        if started && !full {
            self.pipe_wake_one(cpu, write_wq, wakes);
        }
        Outcome::Done(len as i64)
    }

    /// Count `bytes` of pipe data written on `cpu`; the clocks just after.
    fn pipe_stamp(&mut self, cpu: CpuId, bytes: u64) -> PipeStamp {
        let llc = self.skb_llc[cpu];
        self.pipe_written[cpu] += bytes;
        self.pipe_written_llc[llc] += bytes;
        PipeStamp {
            cpu,
            own: self.pipe_written[cpu],
            llc: self.pipe_written_llc[llc],
        }
    }

    /// The bytes a ring write put in its pages: copied in, counted. Returns them.
    fn pipe_copy_in(&mut self, cpu: CpuId, s: usize, bytes: u64) -> u64 {
        if bytes > 0 {
            self.copy(cpu, s, bytes);
            let st = &mut self.streams[s];
            st.len += bytes;
            st.written += bytes;
        }
        bytes
    }
}

/// The reuse distance of pipe data written at `at`: the pipe bytes its CPU wrote since,
/// while that is within the L2 (`l2`); beyond, what every CPU of its LLC wrote since (the
/// LLC is shared), as an skb's ([`super::chan::Ageing::depth`]).
fn pipe_depth(
    at: PipeStamp,
    written: &[u64],
    llc_written: &[u64],
    llc_of: &[usize],
    l2: u64,
) -> u64 {
    let own = written[at.cpu] - at.own;
    if own <= l2 {
        own
    } else {
        llc_written[llc_of[at.cpu]] - at.llc
    }
}
