//! TCP over loopback as 2.4 ran it: per-call socket work, segments that carry whatever
//! the writer queued, ACKs that free the send buffer and release held data.
//!
//! Design. A write (`tcp_sendmsg`) copies into the tail skb of the write queue. The skb is
//! transmitted at once unless Nagle holds it: 2.4 uses Minshall's variant, which holds a
//! segment shorter than the MSS while an earlier short segment is unacknowledged
//! (`tcp_nagle_check`, `tcp_minshall_check`, net/ipv4/tcp_output.c). Held bytes stay in
//! the tail skb and later writes append to it, so back-to-back small writes coalesce into
//! one segment. A transmitted segment runs the whole loopback path on the sending CPU —
//! `tcp_transmit_skb`, `ip_queue_xmit`, `loopback_xmit`, `netif_rx`, the NET_RX softirq,
//! `ip_rcv`, `tcp_v4_rcv` — and wakes the reader (`data_ready`). A read (`tcp_recvmsg`)
//! copies out; when it empties the receive queue after a short segment, `cleanup_rbuf`
//! sends an ACK at once (2.4 net/ipv4/tcp.c: the connection is not in pingpong mode and
//! `TCP_ACK_PUSHED` is set). That ACK runs the loopback path on the reader's CPU and is
//! processed by the sender's socket there: `tcp_ack` frees the acknowledged skbs
//! (`wmem_queued`), `tcp_data_snd_check` transmits what Nagle held, and if a writer had
//! found the buffer full, `tcp_new_space` grows `sndbuf` and `write_space` wakes it.
//!
//! Simplifications, each a named omission: by default ACKs are sent only by the draining
//! read, never piggybacked and never by the delayed-ACK timer. With `tcp_delack=on` (a
//! machine switch, `docs/calibration.md`) they are as 2.4 sends them: in pingpong mode (a
//! reply within `ato` of the data) a drained read of at most one `rcv_mss` defers its ACK,
//! which rides on the reader's next data segment (`tcp_event_data_sent`) or is sent alone
//! by the delayed-ACK timer on the reader's CPU at its next tick past `ato`
//! (`tcp_delack_timers`); ACKs are still not sent on a segment's arrival, only when it is
//! read. With `lo_queue=end` a segment reaches the reader's queue when its path has run on
//! the sending CPU (`Skb::visible_at`), not at the start of the sender's call. Congestion
//! and receive windows never limit loopback here (cwnd grows by one per ACK from 2 and the
//! receive buffer is 87 KB). ACKs acknowledge only fully read skbs.
//!
//! **The socket lock.** `tcp_sendmsg` and `tcp_recvmsg` run under their endpoint's
//! `lock_sock` (2.4 include/net/sock.h, net/core/sock.c `__lock_sock`): a sleeping lock
//! (`sk->lock.users`) held for the whole call — for a write, the loopback path and the
//! reader's wake-up included, since the NET_RX softirq runs when `dev_queue_xmit`
//! re-enables bottom halves — and released before any sleep for data or buffer space. A
//! caller that finds it owned sleeps `TASK_UNINTERRUPTIBLE` as an exclusive waiter and is
//! woken by the owner's `release_sock`; woken, it tries again and may find the lock taken
//! by a caller that came meanwhile. Here the lock is owned from the start of the body to
//! a [`Frame::ReleaseSock`](super::frame::Frame::ReleaseSock) run when the body's work has
//! elapsed, so other CPUs see it owned for the call's duration. Not modelled: segments
//! and ACKs that reach an owned socket go to its backlog, processed at `release_sock`; the
//! model processes them at once.
//!
//! Invariant: `written == read + len + held` for every stream; `wmem` is the truesize of
//! the skbs not yet acknowledged, held or in the receive queue. A socket lock's owner is
//! a task whose system call body took it and whose `ReleaseSock` has not run.

use crate::kernel::abi::EPIPE;
use crate::kernel::chan::Fd;
use crate::kernel::frame::Sys;
use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::waitq::WqId;
use crate::kernel::{Acct, Kernel};
use crate::machine::CpuId;

use super::syscall::{write_again, Outcome, Wakes};

/// The lock of one TCP endpoint (2.4 `sk->lock`: its owner and its wait queue).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SockLock {
    owner: Option<TaskId>,
    wq: Option<WqId>,
}

impl Kernel {
    /// 2.4 `lock_sock` on the endpoint `fd` for `task`: true once taken; false when
    /// another task owns it, with `task` asleep on the lock's queue (the caller blocks and
    /// retries the call when woken).
    fn lock_sock(&mut self, task: TaskId, fd: Fd) -> bool {
        let i = fd as usize;
        if self.sock_locks.len() <= i {
            self.sock_locks.resize(i + 1, SockLock::default());
        }
        match self.sock_locks[i].owner {
            None => {
                self.sock_locks[i].owner = Some(task);
                self.sock_taken = Some(fd);
                true
            }
            Some(_) => {
                let wq = match self.sock_locks[i].wq {
                    Some(wq) => wq,
                    None => {
                        let wq = self.new_waitq();
                        self.sock_locks[i].wq = Some(wq);
                        wq
                    }
                };
                self.stats.sock_lock_waits += 1;
                self.sleep_on_as(task, wq, true, TaskState::Uninterruptible);
                false
            }
        }
    }

    /// 2.4 `release_sock` on `cpu`: free the lock of endpoint `fd` and wake one waiter.
    pub(crate) fn release_sock(&mut self, cpu: CpuId, fd: Fd) {
        let l = &mut self.sock_locks[fd as usize];
        l.owner = None;
        if let Some(wq) = l.wq {
            let list = self.take_waiters(cpu, wq, 1);
            if !list.is_empty() {
                let curr = self.cpus[cpu].curr;
                self.tasks[curr as usize]
                    .kstack
                    .push(crate::kernel::frame::Frame::Wake {
                        list,
                        sync: false,
                        irq: false,
                    });
            }
        }
    }

    /// 2.4 `tcp_sendmsg`: copy into the tail skb (a new one when it is full), then push
    /// what Nagle lets go; sleep while `wmem_queued` ≥ `sndbuf`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tcp_sendmsg(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        mut done: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let costs = self.machine.costs();
        if self.streams[s].readers == 0 {
            return Outcome::Done(if done > 0 { done as i64 } else { EPIPE });
        }
        if !self.lock_sock(task, fd) {
            return write_again(fd, len, done);
        }
        self.charge(cpu, costs.tcp_sendmsg_ns, Acct::Running);
        self.touch_stream_state(cpu, s);
        while done < len {
            let st = &mut self.streams[s];
            if st.wmem >= st.cap {
                st.tcp.nospace = true;
                let wq = st.write_wq;
                self.sleep_on(task, wq);
                return write_again(fd, len, done);
            }
            let room = costs.tcp_mss_bytes - st.tcp.held;
            let size = (len - done).min(room);
            // A fresh skb's truesize is charged when it is allocated; appending to the
            // held tail skb adds only the data.
            let truesize = if st.tcp.held == 0 {
                size + costs.skb_overhead_bytes
            } else {
                size
            };
            st.wmem += truesize;
            st.tcp.held += size;
            st.written += size;
            // The skb is fresh memory: no remote lines to pull.
            st.last_cpu = None;
            self.copy(cpu, s, size);
            done += size;
            self.tcp_push(cpu, s, wakes);
        }
        Outcome::Done(len as i64)
    }

    /// `tcp_push`/`tcp_write_xmit`: transmit the held tail skb unless Nagle holds it (it
    /// is short of the MSS and a short segment is unacknowledged).
    fn tcp_push(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        let mss = self.machine.costs().tcp_mss_bytes;
        let tcp = self.streams[s].tcp;
        if tcp.held == 0 || (!tcp.nodelay && tcp.held < mss && tcp.small_unacked) {
            return;
        }
        self.tcp_transmit(cpu, s, wakes);
    }

    /// One data segment through the loopback path on `cpu`: the held bytes become
    /// readable and the reader is woken.
    fn tcp_transmit(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        let costs = self.machine.costs();
        let at_end = self.machine.lo_queue_at_end;
        self.charge(cpu, costs.tcp_segment_ns, Acct::Running);
        self.stats.tcp_segments += 1;
        self.lo_xmit(cpu);
        let st = &mut self.streams[s];
        let size = st.tcp.held;
        // `update_send_head`: the first segment in flight arms the retransmit timer; the
        // receiving softirq (on this CPU) arms the delayed-ACK timer once its quick ACKs
        // are spent (`__tcp_ack_snd_check`).
        let arm_rto = st.tcp.packets_out == 0;
        let arm_delack = st.tcp.acks_sent >= super::net::TCP_MAX_QUICKACKS;
        st.tcp.packets_out += 1;
        // The truesize was charged to wmem as the skb filled; the receive queue keeps the
        // data and the truesize of its first fill.
        st.skbs.push_back(crate::kernel::chan::Skb {
            data: size,
            truesize: size + costs.skb_overhead_bytes,
            cpu,
            stamp: 0,
            llc_stamp: 0,
            kmem: 0,
            visible_at: if at_end { self.cpus[cpu].clock } else { 0 },
        });
        st.len += size;
        st.tcp.last_rcv = self.cpus[cpu].clock;
        st.tcp.rcv_since_ack += size;
        st.tcp.rcv_mss = st.tcp.rcv_mss.max(size).max(TCP_MIN_RCVMSS);
        st.tcp.held = 0;
        st.tcp.small_unacked = size < costs.tcp_mss_bytes;
        let rq = st.read_wq;
        if arm_rto {
            self.tcp_mod_timer(cpu);
        }
        if arm_delack {
            self.tcp_mod_timer(cpu);
        }
        self.lo_data_ready(cpu, rq, wakes);
        // After the segment is queued: the ACK it carries may let the other side send
        // (and so re-enter here for the other direction).
        if self.machine.tcp_delack {
            self.tcp_event_data_sent(cpu, s, wakes);
        }
    }

    /// 2.4 `tcp_recvmsg`: wait for data; copy across skbs up to `len`; a read that empties
    /// the queue acknowledges what it read (`cleanup_rbuf`). The call's work is charged
    /// once: the re-check after a wake-up (`again`) is part of the same call.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tcp_recvmsg(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        again: bool,
        wakes: &mut Wakes,
    ) -> Outcome {
        if !self.lock_sock(task, fd) {
            return Outcome::Block(Sys::Read {
                fd,
                len,
                done: 0,
                again,
            });
        }
        if !again {
            let ns = self.machine.costs().tcp_recvmsg_ns;
            self.charge(cpu, ns, Acct::Running);
        }
        self.touch_stream_state(cpu, s);
        // A closing writer flushed what Nagle held (`tcp_close_tx`), so an empty queue
        // with no writer is end of file.
        if let Some(out) = self.wait_for_data(cpu, task, s, fd, len) {
            return out;
        }
        let now = self.cpus[cpu].clock;
        let st = &mut self.streams[s];
        let queued = st.skbs.len();
        let avail = st.visible_len(now);
        let taken = st.take_skbs(len.min(avail), None, &mut 0);
        let (copied, emptied) = (taken.copied, taken.emptied);
        let freed = (queued - st.skbs.len()) as u64;
        st.tcp.read_unacked += emptied;
        st.tcp.read_unacked_segs += freed as u32;
        let drained = st.len == 0;
        let quick = st.tcp.acks_sent < super::net::TCP_MAX_QUICKACKS;
        // More than one full frame unacknowledged is acknowledged at once, pingpong or
        // not (`cleanup_rbuf`, `__tcp_ack_snd_check`).
        let small = st.tcp.rcv_since_ack <= st.tcp.rcv_mss;
        let defer = self.machine.tcp_delack && st.tcp.pingpong && !quick && small;
        self.lo_free_skbs(cpu, freed);
        self.copy(cpu, s, copied);
        if drained && defer {
            // cleanup_rbuf: in pingpong mode a drained short segment is not acknowledged
            // at once; the ACK waits for the reader's reply or the delayed-ACK timer.
            self.tcp_send_delayed_ack(cpu, s);
        } else if drained {
            self.tcp_ack(cpu, s, wakes);
        }
        Outcome::Done(copied as i64)
    }

    /// An ACK from the reader, run on the reader's CPU: free the acknowledged skbs, grow
    /// `sndbuf` if a writer ran out of it (`tcp_new_space`), transmit what Nagle held and
    /// wake a writer waiting for room (`tcp_write_space`: free space ≥ half of what is
    /// queued).
    fn tcp_ack(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        let costs = self.machine.costs();
        self.charge(cpu, costs.tcp_ack_ns, Acct::Running);
        self.stats.tcp_acks += 1;
        // The ACK's own trip through lo, and its skb freed by the sender's `tcp_v4_rcv`
        // in the same softirq.
        self.lo_xmit(cpu);
        self.lo_free_skbs(cpu, 1);
        self.tcp_ack_received(cpu, s, wakes);
    }

    /// What an ACK of stream `s`'s data does at its sender (`tcp_ack`), whether it came
    /// alone or rode on a data segment: free the acknowledged skbs, grow `sndbuf` if a
    /// writer ran out of it, transmit what Nagle held, wake a writer waiting for room.
    fn tcp_ack_received(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        let costs = self.machine.costs();
        let st = &mut self.streams[s];
        st.tcp.ack_pending = false;
        st.tcp.rcv_since_ack = 0;
        st.wmem -= st.tcp.read_unacked;
        st.tcp.read_unacked = 0;
        st.tcp.acks_sent += 1;
        st.tcp.packets_out -= st.tcp.read_unacked_segs;
        st.tcp.read_unacked_segs = 0;
        // `tcp_ack_packets_out`: data still in flight re-arms the retransmit timer.
        let rearm = st.tcp.packets_out > 0;
        st.tcp.small_unacked = false;
        // tcp_check_space: write_space only for a writer that found the buffer full
        // (SOCK_NOSPACE); the socket's wait queue also holds its reader, whom a wake-up
        // on every ACK would rouse for nothing.
        let nospace = std::mem::take(&mut st.tcp.nospace);
        if nospace {
            st.cap = st.cap.max(tcp_expanded_sndbuf(costs));
        }
        let gate = self
            .machine
            .tcp_nospace
            .unwrap_or_else(|| self.class.release().tcp_nospace_gate());
        let st = &self.streams[s];
        let writable = (nospace || !gate) && st.cap.saturating_sub(st.wmem) >= st.wmem / 2;
        let write_wq = st.write_wq;
        if rearm {
            self.tcp_mod_timer(cpu);
        }
        self.tcp_push(cpu, s, wakes);
        if writable {
            // sk_stream_write_space: wake_up_interruptible_poll, asynchronous in every
            // release (6.x's net/core/stream.c too).
            let list = self.take_waiters(cpu, write_wq, 0);
            if !list.is_empty() {
                self.stats.tcp_write_space_wakes += 1;
            }
            wakes.push((list, false));
        }
    }

    /// `tcp_event_data_sent` and the ACK that rides on a data segment: stream `s`'s writer
    /// is the reader of the connection's other direction `r`. Sending within `ato` of
    /// receiving enters pingpong mode; an ACK it owes for `r` goes with this segment
    /// (`tcp_event_ack_sent`), processed by `r`'s sender in the same softirq.
    fn tcp_event_data_sent(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        let r = self.streams[s].tcp.reverse as usize;
        let now = self.cpus[cpu].clock;
        let ato = self.tcp_ato_ns();
        let rt = &mut self.streams[r].tcp;
        if rt.last_rcv > 0 && now.saturating_sub(rt.last_rcv) < ato {
            rt.pingpong = true;
        }
        if rt.ack_pending {
            rt.acks_sent += 1;
            self.stats.tcp_piggybacked_acks += 1;
            self.tcp_ack_received(cpu, r, wakes);
        }
    }

    /// `TCP_ATO_MIN`, `HZ / 25`: the delayed-ACK timeout (2.4 and 6.x alike; the
    /// estimator that stretches it is not modelled).
    fn tcp_ato_ns(&self) -> crate::engine::Time {
        let hz = crate::engine::SEC / self.tick_ns.max(1);
        (hz / 25).max(1) * self.tick_ns
    }

    /// `tcp_send_delayed_ack`: the reader of `s` owes an ACK; the timer on this CPU sends
    /// it alone after `ato` unless a data segment of the reader carried it first.
    fn tcp_send_delayed_ack(&mut self, cpu: CpuId, s: usize) {
        let st = &mut self.streams[s];
        if st.tcp.ack_pending {
            return;
        }
        st.tcp.ack_pending = true;
        let exp = self.jiffies_at(self.cpus[cpu].clock + self.tcp_ato_ns());
        self.cpus[cpu].delacks.push((exp, s as u32));
        self.tcp_mod_timer(cpu);
    }

    /// `tcp_delack_timer` on `cpu` at jiffy `jiffies`: each expired stream whose ACK is
    /// still owed sends it alone and leaves pingpong mode ("delayed ACK missed"). Returns
    /// the wake-ups the ACKs caused.
    pub(super) fn tcp_delack_timers(&mut self, cpu: CpuId, jiffies: u64) -> Wakes {
        let mut wakes = Wakes::new();
        if self.cpus[cpu].delacks.iter().all(|&(exp, _)| exp > jiffies) {
            return wakes;
        }
        let mut fired = Vec::new();
        self.cpus[cpu].delacks.retain(|&(exp, s)| {
            if exp <= jiffies {
                fired.push(s as usize);
                false
            } else {
                true
            }
        });
        for s in fired {
            let st = &mut self.streams[s];
            if st.tcp.ack_pending {
                st.tcp.pingpong = false;
                self.stats.tcp_delayed_acks += 1;
                self.tcp_ack(cpu, s, &mut wakes);
            }
        }
        wakes
    }

    /// Flush what Nagle holds when the last writer closes (`tcp_close` sends the queue
    /// before the FIN).
    pub(super) fn tcp_close_tx(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        if self.streams[s].tcp.held > 0 {
            self.tcp_transmit(cpu, s, wakes);
        }
    }
}

/// `TCP_MIN_RCVMSS` (include/net/tcp.h): the smallest segment size a receiver assumes.
const TCP_MIN_RCVMSS: u64 = 536;

/// `tcp_new_space`: `sndbuf` grows to 2 × max(cwnd, reordering + 1) × (MSS clamp +
/// headers + skb) bytes, at most `tcp_wmem[2]`. On loopback with 2.4's reordering of 3 the
/// product already exceeds `tcp_wmem[2]`, so the first expansion reaches the maximum.
fn tcp_expanded_sndbuf(costs: &crate::machine::Costs) -> u64 {
    const REORDERING: u64 = 3;
    let per_segment = costs.tcp_mss_bytes + costs.skb_overhead_bytes;
    (2 * (REORDERING + 1) * per_segment).min(costs.tcp_wmem_max_bytes)
}
