//! UDP over loopback: a connected pair of datagram sockets on 127.0.0.1 (each end
//! `connect`ed to the other), as netperf's UDP_RR uses them.
//!
//! Design. A send (`udp_sendmsg`) builds one skb from the caller's data and runs the whole
//! loopback path on the sending CPU — `ip_make_skb`/`udp_send_skb`, `ip_output`,
//! `loopback_xmit` (which orphans the skb: the sender's `wmem_alloc` is returned at once,
//! so a sender on loopback never waits for buffer space), `netif_rx`, the NET_RX softirq,
//! `ip_rcv`, `udp_rcv` and `__udp_queue_rcv_skb` — and wakes the reader. The skb is charged
//! to the receiver's `rmem_alloc`; one that would take it past `sk_rcvbuf` is dropped
//! (`UDP_MIB_RCVBUFERRORS`) and the send still succeeds. A receive (`udp_recvmsg`) takes
//! exactly one datagram: what does not fit in the caller's buffer is discarded
//! (`MSG_TRUNC`). No socket lock is held on either path (UDP takes `lock_sock` only for
//! corked sends), no ACK, no timer.
//!
//! Invariant: `written == read + len` for every stream (a truncated datagram's rest counts
//! as read); `wmem` is the truesize of the datagrams queued for the reader (its
//! `rmem_alloc`), never above `cap` (`sk_rcvbuf`).

use crate::kernel::chan::Fd;
use crate::kernel::task::TaskId;
use crate::kernel::{Acct, Kernel};
use crate::machine::CpuId;

use super::syscall::{Outcome, Wakes};

impl Kernel {
    /// `udp_sendmsg` on a connected socket: one datagram through the loopback path onto
    /// the peer's receive queue, or dropped there when its buffer is full.
    pub(super) fn udp_sendmsg(
        &mut self,
        cpu: CpuId,
        s: usize,
        len: u64,
        wakes: &mut Wakes,
    ) -> Outcome {
        let costs = self.machine.costs();
        self.charge(cpu, costs.udp_sendmsg_ns, Acct::Running);
        self.touch_stream_state(cpu, s);
        // The skb is fresh memory: no remote lines to pull.
        self.streams[s].last_cpu = None;
        self.copy(cpu, s, len);
        self.stats.udp_datagrams += 1;
        self.lo_xmit(cpu);
        let truesize = len + costs.skb_overhead_bytes;
        let clock = self.cpus[cpu].clock;
        let st = &mut self.streams[s];
        if st.readers == 0 || st.wmem + truesize > st.cap {
            // No socket bound there any more (an ICMP port unreachable the sender sees
            // later), or its receive buffer full: the datagram is lost.
            self.stats.udp_drops += 1;
            self.lo_free_skbs(cpu, 1);
            return Outcome::Done(len as i64);
        }
        st.skbs.push_back(crate::kernel::chan::Skb {
            data: len,
            truesize,
            cpu,
            stamp: 0,
            llc_stamp: 0,
            kmem: 0,
            visible_at: if self.machine.lo_queue_at_end {
                clock
            } else {
                0
            },
        });
        st.wmem += truesize;
        st.len += len;
        st.written += len;
        let rq = st.read_wq;
        self.lo_data_ready(cpu, rq, wakes);
        Outcome::Done(len as i64)
    }

    /// `udp_recvmsg`: wait for a datagram, copy what fits of it into the caller's `len`
    /// bytes and discard the rest, free it. The call's work is charged once: the
    /// re-check after a wake-up (`again`) is part of the same call.
    pub(super) fn udp_recvmsg(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        s: usize,
        fd: Fd,
        len: u64,
        again: bool,
    ) -> Outcome {
        if !again {
            let ns = self.machine.costs().udp_recvmsg_ns;
            self.charge(cpu, ns, Acct::Running);
        }
        self.touch_stream_state(cpu, s);
        // A datagram socket has no end of file: with its peer gone it waits for ever. A
        // datagram still on its way is not there yet.
        let now = self.cpus[cpu].clock;
        let st = &mut self.streams[s];
        let visible = st.skbs.front().is_some_and(|b| b.visible_at <= now);
        let front = if visible { st.skbs.pop_front() } else { None };
        let Some(skb) = front else {
            let wq = st.read_wq;
            return self.sleep_for_data(task, wq, fd, len);
        };
        st.len -= skb.data;
        st.read += skb.data;
        st.wmem -= skb.truesize;
        let copied = skb.data.min(len);
        self.lo_free_skbs(cpu, 1);
        self.copy(cpu, s, copied);
        Outcome::Done(copied as i64)
    }
}
