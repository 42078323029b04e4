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
//! Simplifications, each a named omission: ACKs are sent only by the draining read, never
//! piggybacked and never by the delayed-ACK timer — 2.4 delays ACKs in pingpong mode
//! (data flowing both ways within `ato`) and sends them on data going the other way or
//! when the timer fires; modelling that needs softirq timers the kernel model does not
//! have. Congestion and receive windows never limit loopback here (cwnd grows by one per
//! ACK from 2 and the receive buffer is 87 KB). ACKs acknowledge only fully read skbs.
//!
//! Invariant: `written == read + len + held` for every stream; `wmem` is the truesize of
//! the skbs not yet acknowledged, held or in the receive queue.

use crate::kernel::abi::EPIPE;
use crate::kernel::chan::Fd;
use crate::kernel::frame::Sys;
use crate::kernel::task::TaskId;
use crate::kernel::{Acct, Kernel};
use crate::machine::CpuId;

use super::syscall::{Outcome, Wakes};

impl Kernel {
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
        self.charge(cpu, costs.tcp_sendmsg_ns, Acct::Running);
        while done < len {
            let st = &mut self.streams[s];
            if st.wmem >= st.cap {
                st.tcp.nospace = true;
                let wq = st.write_wq;
                self.sleep_on(task, wq);
                return Outcome::Block(Sys::Write {
                    fd,
                    len,
                    done,
                    started: true,
                    waiting: false,
                });
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
        if tcp.held == 0 || (tcp.held < mss && tcp.small_unacked) {
            return;
        }
        self.tcp_transmit(cpu, s, wakes);
    }

    /// One data segment through the loopback path on `cpu`: the held bytes become
    /// readable and the reader is woken.
    fn tcp_transmit(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        let costs = self.machine.costs();
        self.charge(cpu, costs.tcp_segment_ns, Acct::Running);
        self.stats.tcp_segments += 1;
        let st = &mut self.streams[s];
        let size = st.tcp.held;
        // The truesize was charged to wmem as the skb filled; the receive queue keeps the
        // data and the truesize of its first fill.
        st.skbs.push_back(crate::kernel::chan::Skb {
            data: size,
            truesize: size + costs.skb_overhead_bytes,
            cpu,
            stamp: 0,
        });
        st.len += size;
        st.tcp.held = 0;
        st.tcp.small_unacked = size < costs.tcp_mss_bytes;
        let rq = st.read_wq;
        wakes.push((self.take_waiters(cpu, rq, 0), false));
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
        if !again {
            let ns = self.machine.costs().tcp_recvmsg_ns;
            self.charge(cpu, ns, Acct::Running);
        }
        // A closing writer flushed what Nagle held (`tcp_close_tx`), so an empty queue
        // with no writer is end of file.
        if let Some(out) = self.wait_for_data(task, s, fd, len) {
            return out;
        }
        let st = &mut self.streams[s];
        let (copied, emptied, _) = st.take_skbs(len, None);
        st.tcp.read_unacked += emptied;
        let drained = st.len == 0;
        self.copy(cpu, s, copied);
        if drained {
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
        let st = &mut self.streams[s];
        st.wmem -= st.tcp.read_unacked;
        st.tcp.read_unacked = 0;
        st.tcp.small_unacked = false;
        if st.tcp.nospace {
            st.tcp.nospace = false;
            st.cap = st.cap.max(tcp_expanded_sndbuf(costs));
        }
        let writable = st.cap.saturating_sub(st.wmem) >= st.wmem / 2;
        let write_wq = st.write_wq;
        self.tcp_push(cpu, s, wakes);
        if writable {
            wakes.push((self.take_waiters(cpu, write_wq, 0), false));
        }
    }

    /// Flush what Nagle holds when the last writer closes (`tcp_close` sends the queue
    /// before the FIN).
    pub(super) fn tcp_close_tx(&mut self, cpu: CpuId, s: usize, wakes: &mut Wakes) {
        if self.streams[s].tcp.held > 0 {
            self.tcp_transmit(cpu, s, wakes);
        }
    }
}

/// `tcp_new_space`: `sndbuf` grows to 2 × max(cwnd, reordering + 1) × (MSS clamp +
/// headers + skb) bytes, at most `tcp_wmem[2]`. On loopback with 2.4's reordering of 3 the
/// product already exceeds `tcp_wmem[2]`, so the first expansion reaches the maximum.
fn tcp_expanded_sndbuf(costs: &crate::machine::Costs) -> u64 {
    const REORDERING: u64 = 3;
    let per_segment = costs.tcp_mss_bytes + costs.skb_overhead_bytes;
    (2 * (REORDERING + 1) * per_segment).min(costs.tcp_wmem_max_bytes)
}
