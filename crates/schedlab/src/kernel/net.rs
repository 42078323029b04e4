//! What every TCP packet over loopback shares with every other, whatever its socket:
//! the device, the route, the clock and the timer wheel of the kernels before 6.x.
//!
//! Design. The per-packet CPU work of the loopback path is in `tcp_segment_ns` and
//! `tcp_ack_ns` ([`super::tcp`]); what those constants cannot hold is what the packets of
//! *different* connections meet on, because it grows with the CPUs that send. Read from
//! the 2.4 sources (and 2.5/2.6.0 where they differ, [`Release`]):
//!
//! * `ip_queue_xmit` clones the route into the skb (`dst_clone`, an atomic increment of
//!   the 127.0.0.1 route's `__refcnt`: one `dst_entry` for every connection), and the
//!   reader's `kfree_skb` releases it (`dst_release`).
//! * `ip_finish_output2` copies the hardware header under `read_lock_bh(&hh->hh_lock)`,
//!   the one `hh_cache` of lo's neighbour: a locked write of its line.
//! * `dev_queue_xmit` takes lo's `queue_lock`, finds no queue (`noqueue`), drops it and
//!   takes lo's `xmit_lock` (writing `xmit_lock_owner` on its line) around
//!   `hard_start_xmit`: `loopback_xmit` writes lo's one `net_device_stats`
//!   (`dev->priv`: rx/tx bytes and packets) and `dev->last_rx`, and calls `netif_rx`,
//!   which stamps the skb with `do_gettimeofday` — under `read_lock_irqsave(&xtime_lock)`
//!   before 2.5.60's seqlock — and holds the device (`dev_hold`, lo's `refcnt`), released
//!   by `net_rx_action`'s `dev_put` when the NET_RX softirq has delivered the packet.
//! * TCP's timers: a segment sent with nothing in flight arms the retransmit timer
//!   (`tcp_reset_xmit_timer` from `update_send_head`), an ACK that leaves data in flight
//!   re-arms it (`tcp_ack_packets_out`), and a data segment received outside quick-ACK
//!   mode arms the delayed-ACK timer (`tcp_send_delayed_ack`). Each is a `mod_timer`,
//!   which before 2.5.40 takes the global `timerlist_lock` with interrupts off and
//!   detaches and re-inserts the timer in the wheel: it writes the slot's list head and
//!   its neighbours, entries of other sockets' timers. Clearing a timer takes no lock
//!   (`TCP_CLEAR_TIMERS` is undefined: the timer runs out and finds nothing pending).
//!   `mod_timer` returns early when the expiry is unchanged only from 2.5.26 (Morton)
//!   and 2.4.23: not in the kernels modelled.
//!
//! Each of those lines is written with a locked operation, so it moves to the writing
//! CPU's cache and its transfers queue behind each other ([`SharedLine`], as the mm lines
//! do). A lock is a line plus the interval it is held: a section of known length
//! requested at `t` is granted at the first free gap of its length at or after `t`
//! ([`HotLine`]), so sections of CPUs whose clocks run a few microseconds apart are
//! served in simulated-time order, not in the order the engine reaches them. The section
//! is the lock's line coming over, `lock_ns`, and the lines written inside it; the
//! instructions of the path stay in the per-packet constants. Lock hand-offs are FIFO
//! (no test-and-test-and-set storm).
//!
//! Without the coherence model no line moves and the locks cost `lock_ns`; with `net=off`
//! (machine option) none of this is charged, for ablation. 6.x's loopback shares none of
//! it (lockless lo, per-CPU statistics and timer bases, seqlocks).
//!
//! Invariants: a lock's hold intervals never overlap; every section's wait and work are
//! charged to the CPU that ran it, the wait as spinning.

use crate::engine::Time;
use crate::machine::hotline::HotLine;
use crate::machine::CpuId;

use super::release::Release;
use super::syscall::Wakes;
use super::waitq::WqId;
use super::{Acct, Kernel, SharedLine};

/// Delayed-ACK mode starts after this many quick ACKs (`TCP_MAX_QUICKACKS`, 2.4
/// include/net/tcp.h): `tcp_incr_quickack` grants min(rcv_wnd / 2·rcv_mss, 16), and the
/// loopback window over 2 × 536 bytes exceeds 16.
pub(crate) const TCP_MAX_QUICKACKS: u32 = 16;

/// A spinlock of the network path: its line and its hold intervals.
#[derive(Clone, Debug, Default)]
struct NetLock {
    line: SharedLine,
    held: HotLine,
    stats: NetLockStats,
}

/// Counters of one network-path lock.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct NetLockStats {
    /// Sections run under it.
    pub acquisitions: u64,
    /// Sections that waited for it.
    pub contended: u64,
    /// Time held, summed.
    pub hold_ns: Time,
    /// Time waited for it, summed.
    pub wait_ns: Time,
}

/// The shared state of the loopback path ([module docs](self)).
#[derive(Clone, Debug, Default)]
pub(crate) struct NetShared {
    queue_lock: NetLock,
    xmit_lock: NetLock,
    timerlist_lock: Option<NetLock>,
    /// lo's `net_device_stats` (`dev->priv`).
    lo_stats: SharedLine,
    /// lo's `refcnt` and `last_rx`.
    lo_dev: SharedLine,
    /// The 127.0.0.1 route's `dst_entry.__refcnt`.
    dst: SharedLine,
    /// lo's neighbour's `hh_cache.hh_lock`.
    hh: SharedLine,
    /// `xtime_lock`, a reader-writer lock (None from 2.5.60).
    xtime: Option<SharedLine>,
    /// The timer wheel's slot heads and the list entries next to a re-inserted timer.
    timer_vec: SharedLine,
    /// Packets, timers and lines; the locks' counters are in the locks.
    stats: NetStats,
}

/// Whole-run counters of the loopback path's shared state (`counters.net`).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct NetStats {
    /// Packets through `dev_queue_xmit` (data segments and ACKs).
    pub packets: u64,
    /// `mod_timer` calls under the global `timerlist_lock`.
    pub mod_timers: u64,
    /// Shared lines pulled from another CPU's cache (locks' lines included).
    pub line_transfers: u64,
    /// Time spent pulling them, waits for lines in transit included.
    pub line_ns: Time,
    /// lo's `queue_lock`.
    pub queue_lock: NetLockStats,
    /// lo's `xmit_lock`.
    pub xmit_lock: NetLockStats,
    /// The global `timerlist_lock`.
    pub timerlist_lock: NetLockStats,
}

impl NetStats {
    /// Count a shared line's pull of `ns` (0: it was here).
    fn pulled(&mut self, ns: Time) {
        if ns > 0 {
            self.line_transfers += 1;
            self.line_ns += ns;
        }
    }
}

impl NetShared {
    fn new(release: Release) -> NetShared {
        NetShared {
            timerlist_lock: release.global_timerlist().then(NetLock::default),
            xtime: release.xtime_rwlock().then(SharedLine::default),
            ..NetShared::default()
        }
    }
}

/// Which shared line of [`NetShared`].
#[derive(Clone, Copy)]
enum Line {
    LoStats,
    LoDev,
    Dst,
    Hh,
    Xtime,
    TimerVec,
}

/// Which lock of [`NetShared`].
#[derive(Clone, Copy)]
enum Lock {
    Queue,
    Xmit,
    Timerlist,
}

impl Kernel {
    /// The loopback path's shared state, made at the first packet; `None` when the policy's
    /// release shares none or the machine option `net=off` switched it off.
    fn net_shared(&mut self) -> Option<&mut NetShared> {
        if self.net.is_none() {
            let release = self.class.release();
            if !self.machine.net_shared || !release.shared_loopback() {
                return None;
            }
            self.net = Some(Box::new(NetShared::new(release)));
        }
        self.net.as_deref_mut()
    }

    /// One packet through `ip_queue_xmit` … `dev_queue_xmit` … `net_rx_action` on `cpu`:
    /// the route and header lines, lo's two locks and the lines written under
    /// `xmit_lock`, the device's release after delivery.
    pub(crate) fn lo_xmit(&mut self, cpu: CpuId) {
        let Some(net) = self.net_shared() else {
            return;
        };
        net.stats.packets += 1;
        let has_xtime = net.xtime.is_some();
        self.net_line(cpu, Line::Dst);
        self.net_line(cpu, Line::Hh);
        self.net_section(cpu, Lock::Queue, &[]);
        if has_xtime {
            self.net_section(cpu, Lock::Xmit, &[Line::LoStats, Line::LoDev, Line::Xtime]);
        } else {
            self.net_section(cpu, Lock::Xmit, &[Line::LoStats, Line::LoDev]);
        }
        self.net_line(cpu, Line::LoDev);
    }

    /// `kfree_skb` of `n` skbs on `cpu`: each releases the route (`dst_release`).
    pub(crate) fn lo_free_skbs(&mut self, cpu: CpuId, n: u64) {
        if n == 0 || self.net_shared().is_none() {
            return;
        }
        for _ in 0..n {
            self.net_line(cpu, Line::Dst);
        }
    }

    /// `data_ready` on the receive queue `wq` of a packet over loopback: with
    /// `lo_queue=end` its reader is woken once the running body's work (the packet's path)
    /// has elapsed, whoever waits then ([`crate::kernel::frame::Frame::WakeQueue`]); else
    /// those waiting at the body's start, as the calibrated model does.
    pub(crate) fn lo_data_ready(&mut self, cpu: CpuId, wq: WqId, wakes: &mut Wakes) {
        if !self.machine.lo_queue_at_end {
            wakes.push(self.data_wake(cpu, wq));
        } else if !self.lo_wakes.contains(&wq) {
            self.lo_wakes.push(wq);
        }
    }

    /// `mod_timer` of one of a socket's timers on `cpu`: the global `timerlist_lock`
    /// around the wheel's lines, where the release has one.
    pub(crate) fn tcp_mod_timer(&mut self, cpu: CpuId) {
        let Some(net) = self.net_shared() else {
            return;
        };
        if net.timerlist_lock.is_none() {
            return;
        }
        net.stats.mod_timers += 1;
        self.net_section(cpu, Lock::Timerlist, &[Line::TimerVec]);
    }

    /// `cpu` writes the shared line `which` with a locked operation: from the cache of
    /// the CPU that wrote it last, after its transfers under way. Returns the time.
    fn pull_net_line(&mut self, cpu: CpuId, at: Time, which: Line) -> Time {
        if !self.ic.model().coherence {
            return 0;
        }
        let net = self
            .net
            .as_deref_mut()
            .expect("net state made by the caller");
        let line = match which {
            Line::LoStats => &mut net.lo_stats,
            Line::LoDev => &mut net.lo_dev,
            Line::Dst => &mut net.dst,
            Line::Hh => &mut net.hh,
            Line::Xtime => net.xtime.as_mut().expect("xtime_lock is a rwlock here"),
            Line::TimerVec => &mut net.timer_vec,
        };
        let ns = line.pull(cpu, at, &self.machine, &mut self.ic);
        net.stats.pulled(ns);
        ns
    }

    /// A line written outside any lock of the path, charged as running.
    fn net_line(&mut self, cpu: CpuId, which: Line) {
        let t = self.cpus[cpu].clock;
        let ns = self.pull_net_line(cpu, t, which);
        self.charge(cpu, ns, Acct::Running);
    }

    /// A section under `lock` that writes `lines`: its length is the lock's line coming
    /// over, the locked operation and the lines; it starts at the first gap of that length
    /// in the lock's holds at or after now. The wait is charged as spinning.
    fn net_section(&mut self, cpu: CpuId, lock: Lock, lines: &[Line]) {
        let t = self.cpus[cpu].clock;
        let coherence = self.ic.model().coherence;
        let lock_ns = self.machine.costs().lock_ns;
        // The lock's line and the data lines are priced where the section would start
        // uncontended; a wait only delays them.
        let mut work = lock_ns;
        if coherence {
            let net = self
                .net
                .as_deref_mut()
                .expect("net state made by the caller");
            let l = net.lock(lock);
            let ns = l.line.pull(cpu, t, &self.machine, &mut self.ic);
            net.stats.pulled(ns);
            work += ns;
        }
        for &which in lines {
            work += self.pull_net_line(cpu, t + work, which);
        }
        let net = self
            .net
            .as_deref_mut()
            .expect("net state made by the caller");
        let l = net.lock(lock);
        let wait = l.held.transfer(t, work);
        l.stats.acquisitions += 1;
        l.stats.hold_ns += work;
        if wait > 0 {
            l.stats.contended += 1;
            l.stats.wait_ns += wait;
        }
        self.charge(cpu, wait, Acct::Spin);
        self.charge(cpu, work, Acct::Running);
    }

    /// The path's counters, when a packet went through it.
    pub fn net_stats(&self) -> Option<NetStats> {
        self.net.as_deref().map(|n| NetStats {
            queue_lock: n.queue_lock.stats,
            xmit_lock: n.xmit_lock.stats,
            timerlist_lock: n
                .timerlist_lock
                .as_ref()
                .map_or_else(Default::default, |l| l.stats),
            ..n.stats
        })
    }
}

impl NetShared {
    fn lock(&mut self, which: Lock) -> &mut NetLock {
        match which {
            Lock::Queue => &mut self.queue_lock,
            Lock::Xmit => &mut self.xmit_lock,
            Lock::Timerlist => self
                .timerlist_lock
                .as_mut()
                .expect("timerlist_lock exists before 2.5.40"),
        }
    }
}
