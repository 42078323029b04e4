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
    /// Sockets: queued skbs as (data bytes left, truesize).
    pub skbs: VecDeque<(u64, u64)>,
    /// Sockets: `wmem_alloc`, truesize of unread skbs.
    pub wmem: u64,
    /// Woken when data arrives.
    pub read_wq: WqId,
    /// Woken when room appears.
    pub write_wq: WqId,
    /// CPU whose cache holds the buffered lines dirty.
    pub last_cpu: Option<CpuId>,
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
            written: 0,
            read: 0,
            readers: 1,
            writers: 1,
            waiting_writers: 0,
            tcp: TcpSend::default(),
        }
    }

    /// Sockets: copy out up to `len` bytes across the queued skbs, oldest first. Returns
    /// the bytes taken and the truesize of the skbs emptied (their owner decides when
    /// that space returns to the sender: AF_UNIX at once, TCP at the ACK).
    pub fn take_skbs(&mut self, len: u64) -> (u64, u64) {
        let (mut copied, mut emptied) = (0, 0);
        while copied < len {
            let Some(front) = self.skbs.front_mut() else {
                break;
            };
            let take = front.0.min(len - copied);
            front.0 -= take;
            copied += take;
            if front.0 == 0 {
                let (_, truesize) = self.skbs.pop_front().expect("front exists");
                emptied += truesize;
            }
        }
        self.len -= copied;
        self.read += copied;
        (copied, emptied)
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
