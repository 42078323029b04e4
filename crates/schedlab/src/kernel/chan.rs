//! Byte streams behind pipes, AF_UNIX stream sockets and TCP loopback connections.
//!
//! Design: a [`Stream`] is one direction of flow with a buffer, a capacity rule and two
//! wait queues (woken when data arrives; woken when room appears). A pipe is one stream
//! whose two queues are the same `PIPE_WAIT`; a socket pair or a TCP connection is two
//! streams, each endpoint's `sk->sleep` serving as the read queue of its incoming stream
//! and the write queue of its outgoing one. [`File`]s name the ends.
//!
//! Invariant: for every stream, `written == read + len + tcp.held` (no byte lost or
//! invented; TCP bytes held by Nagle are written but not yet readable).

use std::collections::VecDeque;

use crate::kernel::release::Release;
use crate::machine::CpuId;

pub use super::types::Fd;
use super::types::WqId;
/// Index of a stream.
pub type StreamId = u32;

/// What kind of object carries the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A 2.4 pipe: one page, `PIPE_BUF`-atomic writes.
    Pipe,
    /// AF_UNIX `SOCK_STREAM`: skbs on the peer's receive queue, charged to the sender's
    /// `sndbuf`.
    Unix,
    /// TCP over loopback: like AF_UNIX with TCP's costs and send buffer.
    Tcp,
    /// A connected UDP pair over loopback: datagrams on the peer's receive queue, charged
    /// to its `rmem_alloc` ([`super::udp`]).
    Udp,
}

impl StreamKind {
    /// Lines of shared kernel state that every read and every write of such a stream
    /// writes, whoever wrote them last (32-byte P6 lines; *inferred* from the 2.4.17
    /// structures, counting only fields written on each call):
    ///
    /// - **pipe** (fs/pipe.c): the inode's `i_sem` (`down`/`up`), its `i_size`, which is
    ///   `PIPE_LEN`, with the times `UPDATE_ATIME` and the writer's `i_mtime`/`i_ctime`
    ///   set, and `pipe_inode_info` (its `start` and the `PIPE_WAIT` queue head's lock
    ///   and list): 3 lines.
    /// - **AF_UNIX** (net/unix/af_unix.c): the receiving socket's queue (`skb_queue_tail`/
    ///   `skb_dequeue`: lock, list, length), its `sleep` wait queue head, the sender's
    ///   `wmem_alloc` (`skb_set_owner_w`, `sock_wfree`), and the `unix_sock` state lock
    ///   the sender takes on its peer: 4 lines.
    /// - **TCP** (net/ipv4/tcp*.c, `struct sock` of 2.4.16 laid out for i386 SMP, 32-byte
    ///   aligned by its slab): the lines of the two sockets that both the writer's CPU and
    ///   the reader's CPU write on every message. The receiving socket: `refcnt` with
    ///   `sk->lock`, the receive queue with `rmem_alloc`, `forward_alloc`, and the line of
    ///   `rcv_nxt`/`snd_una`/`ack.*` (written by the NET_RX softirq on the writer's CPU and
    ///   by `tcp_recvmsg`/`cleanup_rbuf` on the reader's): 4 lines. The sending socket:
    ///   `sk->lock`, the write queue with `wmem_queued`, `forward_alloc`, the sequence line,
    ///   `packets_out` and `tp->pending` (written by `tcp_sendmsg` and by `tcp_ack`, which
    ///   loopback runs on the reader's CPU): 6 lines. And the receiving `struct socket`'s
    ///   `sleep` wait queue head (the wake-up's lock word): 11 lines, for the kernels
    ///   whose `struct sock` embeds 2.4's `tcp_opt` (2.4 to 2.6.0). 6.x's `tcp_sock` groups
    ///   its fast-path fields by cache line (6.8) and has not been counted: it keeps the
    ///   earlier hand count of 6 (the lock, both queue heads, the memory counters, the
    ///   sequence state, the wait queue head).
    /// - **UDP** (net/ipv4/udp.c, *inferred*): the receiving socket's queue (lock, list,
    ///   length) with its `rmem_alloc`, its wait queue head, and the sender's
    ///   `wmem_alloc` (`skb_set_owner_w`, and `sock_wfree` when `loopback_xmit` orphans
    ///   the skb): 3 lines, in every release.
    pub fn state_lines(self, release: Release) -> u64 {
        match self {
            StreamKind::Pipe => 3,
            StreamKind::Unix => 4,
            StreamKind::Tcp if matches!(release, Release::V6(_)) => 6,
            StreamKind::Tcp => 11,
            StreamKind::Udp => 3,
        }
    }
}

/// One direction of a byte stream.
#[derive(Debug)]
pub struct Stream {
    /// Kind.
    pub kind: StreamKind,
    /// Bytes buffered.
    pub len: u64,
    /// Pipe: buffer size. Sockets: `sndbuf`.
    pub cap: u64,
    /// Sockets: queued skbs, oldest first.
    pub skbs: VecDeque<Skb>,
    /// Sockets: `wmem_alloc`, truesize of unread skbs.
    pub wmem: u64,
    /// Woken when data arrives.
    pub read_wq: WqId,
    /// Woken when room appears.
    pub write_wq: WqId,
    /// CPU whose cache holds the buffered lines dirty.
    pub last_cpu: Option<CpuId>,
    /// CPU that last wrote the stream's shared kernel state, the lines every read and
    /// write of it writes ([`StreamKind::state_lines`]).
    pub state_cpu: Option<CpuId>,
    /// Bytes ever written.
    pub written: u64,
    /// Bytes ever read.
    pub read: u64,
    /// Open read ends.
    pub readers: u32,
    /// Open write ends.
    pub writers: u32,
    /// Pipe: writers asleep in `pipe_write` (`PIPE_WAITING_WRITERS`).
    pub waiting_writers: u32,
    /// TCP: the sender's state for this direction ([`super::tcp`]).
    pub tcp: TcpSend,
    /// Pipe as 6.x keeps it: its ring of page buffers ([`PipeRing`]).
    pub ring: PipeRing,
}

/// Buffers in a 6.x pipe's ring (`include/linux/pipe_fs_i.h`): 16 pages, 64 KB on x86.
pub const PIPE_DEF_BUFFERS: usize = 16;

/// A pipe as 2.6.11 and later keep it (`fs/pipe.c`, `struct pipe_inode_info`): a ring
/// of `max_usage` buffers, each a page. A write whose size is not a multiple of a page
/// first appends to the newest buffer when its page has room past what was ever written
/// there (`PIPE_BUF_FLAG_CAN_MERGE`), then takes a new buffer for each page it has left;
/// a read empties the oldest buffer first and frees its slot once it is empty. The pipe is
/// full when every slot is taken, whatever bytes its pages hold: a reader of 100-byte
/// messages frees one slot every 40 reads.
#[derive(Debug, Default)]
pub struct PipeRing {
    /// Each taken slot, oldest first.
    pub bufs: VecDeque<PipeBuf>,
    /// `poll()` looked at this pipe (`pipe->poll_usage`): every write wakes its readers.
    pub polled: bool,
}

/// One slot of a [`PipeRing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeBuf {
    /// Bytes not yet read (`len`).
    pub len: u64,
    /// Where the next merged write would start in the page (`offset + len`).
    pub end: u64,
    /// The pipe-data clocks when its first bytes were written.
    pub first: PipeStamp,
    /// The pipe-data clocks when its last bytes were written.
    pub last: PipeStamp,
}

/// Where pipe data was written: the CPU and its clocks of pipe bytes written, its own and
/// its LLC's, just after (the reuse distance of [`super::Kernel`]'s `pipe_written`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStamp {
    /// The writer's CPU.
    pub cpu: CpuId,
    /// Pipe bytes written on that CPU so far.
    pub own: u64,
    /// Pipe bytes written on its LLC so far.
    pub llc: u64,
}

impl PipeBuf {
    /// The clocks when the bytes at `offset` in its page were written: between its first
    /// write's and its last's, in proportion (the writes to other pipes in between are
    /// spread evenly over its page, as a sender's turns over its receivers are).
    pub fn stamp_at(&self, offset: u64) -> PipeStamp {
        let lerp = |a: u64, b: u64| a + (b - a) * offset / self.end.max(1);
        PipeStamp {
            cpu: self.first.cpu,
            own: lerp(self.first.own, self.last.own),
            llc: lerp(self.first.llc, self.last.llc),
        }
    }
}

impl PipeRing {
    /// Every slot taken (`pipe_full`).
    pub fn full(&self, slots: usize) -> bool {
        self.bufs.len() >= slots
    }

    /// The newest buffer's page has room for `bytes` past what was written there (an
    /// empty ring has no buffer to merge into).
    pub fn can_merge(&self, bytes: u64, page: u64) -> bool {
        self.bufs.back().is_some_and(|b| b.end + bytes <= page)
    }

    /// Append `bytes` to the newest buffer if its page has room for them; returns
    /// whether it did (the merge of `pipe_write`). `stamp`: the clocks just after.
    pub fn merge(&mut self, bytes: u64, page: u64, stamp: PipeStamp) -> bool {
        match self.bufs.back_mut() {
            Some(b) if b.end + bytes <= page => {
                b.len += bytes;
                b.end += bytes;
                // Written from another CPU: the page's clocks start again on that CPU's
                // (its lines are now that CPU's newest).
                if stamp.cpu != b.first.cpu {
                    b.first = stamp;
                }
                b.last = stamp;
                true
            }
            _ => false,
        }
    }

    /// A new buffer holding `bytes` (at most a page), written at `stamp`.
    pub fn push(&mut self, bytes: u64, stamp: PipeStamp) {
        self.bufs.push_back(PipeBuf {
            len: bytes,
            end: bytes,
            first: stamp,
            last: stamp,
        });
    }

    /// Read up to `want` bytes from the oldest buffers on; returns the bytes read. A
    /// buffer read to its end frees its slot. (The kernel reads through
    /// [`PipeRing::take_each`], which prices what it reads.)
    #[cfg(test)]
    pub fn take(&mut self, want: u64) -> u64 {
        self.take_each(want, |_, _, _| {})
    }

    /// Read up to `want` bytes from the oldest buffers on, freeing each buffer read to its
    /// end, and show `seen` each piece read: its buffer, where in the page it starts, and
    /// its bytes. Returns the bytes read.
    pub fn take_each(&mut self, want: u64, mut seen: impl FnMut(&PipeBuf, u64, u64)) -> u64 {
        let mut got = 0;
        while got < want {
            let Some(b) = self.bufs.front_mut() else {
                break;
            };
            let n = b.len.min(want - got);
            seen(b, b.end - b.len, n);
            b.len -= n;
            got += n;
            if b.len == 0 {
                self.bufs.pop_front();
            }
        }
        got
    }
}

/// One queued skb.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skb {
    /// Data bytes not yet read.
    pub data: u64,
    /// Its `truesize`: data plus the skb's own overhead.
    pub truesize: u64,
    /// The CPU that wrote it (whose cache holds it).
    pub cpu: CpuId,
    /// That CPU's count of skb bytes written ([`Ageing`]) once this one was.
    pub stamp: u64,
    /// Its LLC's count of skb bytes written once this one was.
    pub llc_stamp: u64,
    /// Low memory it holds (head and `kmalloc`ed data: [`crate::kernel::release::Kmem::skb`]).
    pub kmem: u64,
    /// When it reaches the receive queue: a packet over loopback is queued by the NET_RX
    /// softirq at the end of its path on the sending CPU, which the sender's clock has
    /// reached when it is built; a reader on another CPU does not see it before (0: at
    /// once, as an AF_UNIX skb queued by the writer itself).
    pub visible_at: crate::engine::Time,
}

/// Where an skb's lines are when it is read: per CPU, the skb bytes written there so far.
/// An skb's depth is what its CPU wrote after it (a FIFO stand-in for LRU reuse distance:
/// skbs are written once and read once, oldest first); beyond the L2 it has been evicted
/// from it (cold), and it costs what the host measured at that depth.
pub struct Ageing<'a> {
    /// Skb bytes written per CPU.
    pub written: &'a [u64],
    /// Skb bytes written per LLC.
    pub llc_written: &'a [u64],
    /// Each CPU's LLC.
    pub llc_of: &'a [usize],
    /// Bytes after which an skb counts as evicted from the L2 (cold).
    pub capacity: u64,
    /// Measured `[depth, ns]` points (`Costs::skb_depth_ns`); empty: one step at `capacity`.
    pub curve: &'a [[u64; 2]],
    /// The step's price (`Costs::skb_cold_ns`).
    pub step_ns: crate::engine::Time,
}

impl Ageing<'_> {
    /// The depth that prices an skb `own` bytes deep on its CPU: in its private L2 that;
    /// evicted from it, what every CPU of its LLC wrote after it (the LLC is shared; one
    /// CPU writing alone, as the measurement did, sees the same). The step ignores it.
    pub fn depth(&self, own: u64, skb: &Skb) -> u64 {
        if self.curve.is_empty() || own <= self.capacity {
            return own;
        }
        let llc = self.llc_of[skb.cpu];
        self.llc_written[llc] - skb.llc_stamp
    }

    /// What reading an skb queued `depth` bytes deep costs beyond a shallow one: the
    /// curve's band that holds `depth` (a point `[d, ns]` prices depths above the previous
    /// point's up to `d`; the last band goes on), or the step.
    pub fn price(&self, depth: u64) -> crate::engine::Time {
        match self
            .curve
            .iter()
            .find(|p| depth <= p[0])
            .or(self.curve.last())
        {
            Some(p) => p[1],
            None if depth > self.capacity => self.step_ns,
            None => 0,
        }
    }
}

/// What one read took from a socket stream ([`Stream::take_skbs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Bytes copied out.
    pub copied: u64,
    /// Truesize of the skbs emptied.
    pub emptied: u64,
    /// Of those, skbs evicted from their writer's L2 (with ageing).
    pub cold: u64,
    /// What their depths cost ([`Ageing::price`]).
    pub cold_ns: crate::engine::Time,
    /// The deepest emptied skb's depth on its writer's CPU (the skb bytes that CPU wrote
    /// after it); `None` when none was emptied or without ageing.
    pub deepest: Option<u64>,
}

/// TCP sender state of one direction (2.4 `struct tcp_opt`, the parts that decide when a
/// segment leaves and when the writer may queue more).
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpSend {
    /// Bytes written into the tail skb of the write queue but not yet transmitted: Nagle
    /// holds a small segment while an earlier small one is unacknowledged.
    pub held: u64,
    /// A segment shorter than the MSS is in flight, not yet acknowledged (Minshall's
    /// variant of Nagle: `tp->snd_sml` after `tp->snd_una`).
    pub small_unacked: bool,
    /// Truesize of skbs the reader has consumed but not yet acknowledged.
    pub read_unacked: u64,
    /// A writer found the send buffer full (`SOCK_NOSPACE`): the next ACK that frees
    /// space expands `sndbuf` (`tcp_new_space`).
    pub nospace: bool,
    /// Segments transmitted and not yet acknowledged (`packets_out`).
    pub packets_out: u32,
    /// Of those, segments the reader has consumed: the next ACK acknowledges them.
    pub read_unacked_segs: u32,
    /// ACKs the reader's side has sent: the first `TCP_MAX_QUICKACKS` (16, kernel/net.rs)
    /// are quick, then a received segment arms the delayed-ACK timer.
    pub acks_sent: u32,
    /// `TCP_NODELAY`: Nagle never holds a segment (`tp->nonagle`).
    pub nodelay: bool,
    /// The other direction of the connection (the reader's own sending stream): an ACK
    /// for this direction rides on its next data segment.
    pub reverse: u32,
    /// The reader's socket is in pingpong mode (`tp->ack.pingpong`): it sent data within
    /// `ato` of receiving some, so its ACKs wait to ride on its replies.
    pub pingpong: bool,
    /// The reader consumed data it has not acknowledged and deferred the ACK
    /// (`tcp_send_delayed_ack`): it goes with the reader's next data segment, or when the
    /// delayed-ACK timer fires.
    pub ack_pending: bool,
    /// When a data segment last reached the reader (`tp->ack.lrcvtime`).
    pub last_rcv: crate::engine::Time,
    /// Data bytes the reader received since its last ACK (`rcv_nxt - rcv_wup`).
    pub rcv_since_ack: u64,
    /// The reader's estimate of the sender's segment size (`tp->ack.rcv_mss`): the
    /// largest segment seen, at least `TCP_MIN_RCVMSS` (536).
    pub rcv_mss: u64,
}

impl Stream {
    /// An empty stream.
    pub fn new(kind: StreamKind, cap: u64, read_wq: WqId, write_wq: WqId) -> Stream {
        Stream {
            kind,
            len: 0,
            cap,
            skbs: VecDeque::new(),
            wmem: 0,
            read_wq,
            write_wq,
            last_cpu: None,
            state_cpu: None,
            written: 0,
            read: 0,
            readers: 1,
            writers: 1,
            waiting_writers: 0,
            tcp: TcpSend::default(),
            ring: PipeRing::default(),
        }
    }

    /// Of the skbs a read of `len` bytes empties, how many another CPU than `cpu` wrote.
    pub fn foreign_skbs(&self, len: u64, cpu: usize) -> u64 {
        let mut left = len;
        let mut n = 0;
        for skb in &self.skbs {
            if left < skb.data {
                break;
            }
            left -= skb.data;
            n += u64::from(skb.cpu != cpu);
        }
        n
    }

    /// Bytes a reader at `now` can take: those of the skbs queued by then, oldest first
    /// (a packet over loopback reaches the queue at its `visible_at`); pipes: all.
    pub fn visible_len(&self, now: crate::engine::Time) -> u64 {
        if self.skbs.back().is_none_or(|b| b.visible_at <= now) {
            return self.len;
        }
        self.skbs
            .iter()
            .take_while(|b| b.visible_at <= now)
            .map(|b| b.data)
            .sum()
    }

    /// Sockets: copy out up to `len` bytes across the queued skbs, oldest first: the
    /// bytes taken and the truesize of the skbs emptied (their owner decides when that
    /// space returns to the sender: AF_UNIX at once, TCP at the ACK); with `ageing`, also
    /// the emptied skbs' ageing ([`Taken`]). The low memory of the emptied skbs is added
    /// to `kmem_freed`.
    pub fn take_skbs(
        &mut self,
        len: u64,
        ageing: Option<&Ageing<'_>>,
        kmem_freed: &mut u64,
    ) -> Taken {
        let mut t = Taken::default();
        while t.copied < len {
            let Some(front) = self.skbs.front_mut() else {
                break;
            };
            let take = front.data.min(len - t.copied);
            front.data -= take;
            t.copied += take;
            if front.data == 0 {
                let skb = self.skbs.pop_front().expect("front exists");
                t.emptied += skb.truesize;
                *kmem_freed += skb.kmem;
                if let Some(a) = ageing {
                    let depth = a.written[skb.cpu] - skb.stamp;
                    t.cold += u64::from(depth > a.capacity);
                    t.cold_ns += a.price(a.depth(depth, &skb));
                    t.deepest = t.deepest.max(Some(depth));
                }
            }
        }
        self.len -= t.copied;
        self.read += t.copied;
        t
    }

    /// Data to read, or end of file.
    pub fn readable(&self) -> bool {
        self.len > 0 || self.writers == 0
    }
}

/// What an open file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Read end of a pipe.
    PipeRead(StreamId),
    /// Write end of a pipe.
    PipeWrite(StreamId),
    /// A connected stream socket endpoint.
    Sock {
        /// Incoming stream.
        rx: StreamId,
        /// Outgoing stream.
        tx: StreamId,
    },
}

/// An entry of the file table.
#[derive(Clone, Copy, Debug)]
pub struct File {
    /// What it is.
    pub kind: FileKind,
    /// False once closed.
    pub open: bool,
}

impl File {
    /// The stream this file reads from.
    pub fn rx(&self) -> Option<StreamId> {
        match self.kind {
            FileKind::PipeRead(s) => Some(s),
            FileKind::Sock { rx, .. } => Some(rx),
            FileKind::PipeWrite(_) => None,
        }
    }

    /// The stream this file writes to.
    pub fn tx(&self) -> Option<StreamId> {
        match self.kind {
            FileKind::PipeWrite(s) => Some(s),
            FileKind::Sock { tx, .. } => Some(tx),
            FileKind::PipeRead(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(skbs: &[(CpuId, u64)]) -> Stream {
        let mut s = Stream::new(StreamKind::Unix, 1 << 20, 0, 1);
        for &(cpu, stamp) in skbs {
            s.skbs.push_back(Skb {
                data: 100,
                truesize: 800,
                cpu,
                stamp,
                llc_stamp: stamp,
                kmem: 0,
                visible_at: 0,
            });
            s.len += 100;
        }
        s
    }

    /// Only the skbs a read empties count, and only those another CPU wrote.
    #[test]
    fn foreign_skbs_are_the_emptied_ones_another_cpu_wrote() {
        let s = queued(&[(0, 0), (1, 0), (1, 0), (0, 0)]);
        assert_eq!(s.foreign_skbs(300, 0), 2, "skbs 2 and 3 came from CPU 1");
        assert_eq!(s.foreign_skbs(250, 0), 1, "the third skb is only part-read");
        assert_eq!(s.foreign_skbs(400, 1), 2);
        assert_eq!(s.foreign_skbs(50, 1), 0);
    }

    /// An skb is cold when more than the cache's worth of skb bytes were written on its
    /// CPU after it; the reader's CPU and the other CPUs' writes do not count.
    #[test]
    fn an_skb_followed_by_more_than_a_cache_of_writes_is_cold() {
        let written = [10_000, 1_000];
        let a = Ageing {
            written: &written,
            llc_written: &written,
            llc_of: &[0, 1],
            capacity: 4_000,
            curve: &[],
            step_ns: 10,
        };
        // CPU 0 wrote 10 000 bytes in all: the skb stamped 5 000 has 5 000 after it (cold),
        // the one stamped 7 000 has 3 000 (warm); CPU 1's skb at 0 has 1 000 (warm).
        let mut s = queued(&[(0, 5_000), (0, 7_000), (1, 0)]);
        let t = s.take_skbs(300, Some(&a), &mut 0);
        assert_eq!(
            (t.copied, t.emptied, t.cold, t.cold_ns, t.deepest),
            (300, 2_400, 1, 10, Some(5_000))
        );
        let mut s = queued(&[(0, 5_000)]);
        assert_eq!(
            s.take_skbs(50, Some(&a), &mut 0),
            Taken {
                copied: 50,
                ..Taken::default()
            },
            "a part-read skb is not freed"
        );
        assert_eq!(
            s.take_skbs(50, None, &mut 0),
            Taken {
                copied: 50,
                emptied: 800,
                ..Taken::default()
            },
            "no ageing: nothing is cold, no depth"
        );
    }

    /// With a measured curve an skb pays its depth's band (the first point at or above
    /// its depth; the last band beyond), and counts as cold only beyond the L2.
    #[test]
    fn an_skb_pays_the_band_its_depth_falls_in() {
        let a = Ageing {
            written: &[100_000],
            llc_written: &[100_000],
            llc_of: &[0],
            capacity: 4_000,
            curve: &[[2_000, 5], [8_000, 50], [32_000, 400]],
            step_ns: 999,
        };
        assert_eq!(a.price(0), 5, "shallower than the first point: its band");
        assert_eq!(a.price(2_000), 5);
        assert_eq!(a.price(2_001), 50);
        assert_eq!(a.price(8_000), 50);
        assert_eq!(a.price(20_000), 400);
        assert_eq!(
            a.price(1 << 30),
            400,
            "beyond the last point: its band goes on"
        );
        // Depths 99 000, 94 000, 97 000 and 1 500: bands 400, 400, 400 and 5; the last is warm.
        let mut s = queued(&[(0, 1_000), (0, 6_000), (0, 3_000), (0, 98_500)]);
        let t = s.take_skbs(400, Some(&a), &mut 0);
        assert_eq!((t.cold, t.cold_ns, t.deepest), (3, 1_205, Some(99_000)));
    }

    /// Within its L2 an skb's depth is its own CPU's writes after it; evicted from the L2,
    /// every CPU of its LLC's writes after it count, since they share that cache. The
    /// step (no curve) looks at the CPU's own writes only.
    #[test]
    fn beyond_the_l2_an_skbs_depth_counts_its_llcs_writes() {
        // CPUs 0 and 1 share LLC 0: CPU 0 wrote 10 000 bytes, both together 25 000.
        let (written, llc_written) = ([10_000, 15_000], [25_000]);
        let a = Ageing {
            written: &written,
            llc_written: &llc_written,
            llc_of: &[0, 0],
            capacity: 4_000,
            curve: &[[4_000, 1], [16_000, 2], [64_000, 3]],
            step_ns: 9,
        };
        let skb = |stamp, llc_stamp| Skb {
            data: 100,
            truesize: 800,
            cpu: 0,
            stamp,
            llc_stamp,
            kmem: 0,
            visible_at: 0,
        };
        // 3 000 deep on CPU 0: still in its L2, whatever CPU 1 wrote since.
        assert_eq!(a.depth(3_000, &skb(7_000, 9_000)), 3_000);
        // 6 000 deep on CPU 0, and 20 000 bytes written by the LLC's CPUs since.
        assert_eq!(a.depth(6_000, &skb(4_000, 5_000)), 20_000);
        assert_eq!(a.price(a.depth(6_000, &skb(4_000, 5_000))), 3);
        let step = Ageing { curve: &[], ..a };
        assert_eq!(step.depth(6_000, &skb(4_000, 5_000)), 6_000);
    }

    #[test]
    fn tcp_shares_the_2_4_layouts_lines_until_6_x() {
        use crate::kernel::release::Release;
        // 4 lines of the receiving sock, 6 of the sending sock, 1 wait-queue head.
        assert_eq!(StreamKind::Tcp.state_lines(Release::V2_4(17)), 11);
        assert_eq!(StreamKind::Tcp.state_lines(Release::V2_6_0), 11);
        assert_eq!(StreamKind::Tcp.state_lines(Release::V6(12)), 6);
        assert_eq!(StreamKind::Pipe.state_lines(Release::V6(12)), 3);
        assert_eq!(StreamKind::Unix.state_lines(Release::V2_4(17)), 4);
    }

    const S: PipeStamp = PipeStamp {
        cpu: 0,
        own: 0,
        llc: 0,
    };

    #[test]
    fn small_writes_merge_into_a_page_and_a_slot_frees_when_its_page_is_read() {
        // See: 6.12 fs/pipe.c, pipe_write's PIPE_BUF_FLAG_CAN_MERGE and pipe_read.
        let mut r = PipeRing::default();
        r.push(100, S);
        for _ in 1..40 {
            assert!(r.merge(100, 4096, S));
        }
        assert!(
            !r.merge(100, 4096, S),
            "4 000 bytes written: 100 more do not fit"
        );
        r.push(100, S);
        assert_eq!(r.bufs.len(), 2);
        // Reading frees nothing until the first page is read to its end...
        for _ in 0..39 {
            assert_eq!(r.take(100), 100);
        }
        assert_eq!(r.bufs.len(), 2);
        // ...and the page's room is not reused: a merge looks at the newest page only.
        assert_eq!(r.take(100), 100);
        assert_eq!(r.bufs.len(), 1);
        // One read may span two buffers.
        r.push(50, S);
        assert_eq!(r.take(120), 120);
        assert_eq!(r.bufs.front().map(|b| b.len), Some(30));
    }

    #[test]
    fn a_ring_is_full_when_every_slot_is_taken_whatever_its_pages_hold() {
        let mut r = PipeRing::default();
        for _ in 0..16 {
            r.push(1, S);
        }
        assert!(r.full(16), "16 one-byte buffers fill 16 slots");
        assert_eq!(r.take(1), 1);
        assert!(!r.full(16));
    }

    #[test]
    fn a_read_sees_the_clocks_of_the_bytes_it_reads() {
        let at = |own| PipeStamp {
            cpu: 1,
            own,
            llc: own,
        };
        let mut r = PipeRing::default();
        r.push(100, at(1_000));
        assert!(r.merge(100, 4096, at(2_000)));
        assert!(r.merge(100, 4096, at(3_000)));
        let mut seen = Vec::new();
        r.take_each(100, |b, off, n| seen.push((b.stamp_at(off), n)));
        r.take_each(100, |b, off, n| seen.push((b.stamp_at(off), n)));
        assert_eq!(
            seen[0],
            (at(1_000), 100),
            "the first bytes: the first write's clocks"
        );
        // 100 bytes into a page of 300 written between clocks 1 000 and 3 000.
        assert_eq!(seen[1].0.own, 1_000 + 2_000 / 3);
    }
}
