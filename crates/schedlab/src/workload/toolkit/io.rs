//! Message loops: reading `n` messages of a size from one fd, writing messages to fds.

use std::sync::Arc;

use super::{fail, Blame};
use crate::kernel::abi::{Env, Op};
use crate::kernel::chan::Fd;

/// Read `n` messages of `size` bytes from `fd`. Each read asks for the rest of the current
/// message (at most [`Reads::at_most`] bytes), so a short read is followed by a read of the
/// rest, as `read_sock()` loops and `MSG_WAITALL` waits. A read returning an error — or end
/// of file, unless [`Reads::until_eof`] — fails the run (`blame(i, ret)` for message `i`).
pub struct Reads {
    fd: Fd,
    size: u64,
    n: u64,
    max: u64,
    /// Messages complete.
    done: u64,
    /// Bytes of the current message in.
    got: u64,
    reading: bool,
    eof_ends: bool,
    eof: bool,
    blame: Blame,
}

impl Reads {
    /// `n` messages of `size` bytes from `fd`.
    pub fn new(
        fd: Fd,
        size: u64,
        n: u64,
        blame: impl Fn(u64, i64) -> String + Send + 'static,
    ) -> Reads {
        Reads {
            fd,
            size,
            n,
            max: u64::MAX,
            done: 0,
            got: 0,
            reading: false,
            eof_ends: false,
            eof: false,
            blame: super::blame(blame),
        }
    }

    /// Ask for at most `max` bytes per read (a reader's buffer size).
    pub fn at_most(mut self, max: u64) -> Reads {
        self.max = max;
        self
    }

    /// End of file ends the reads ([`Reads::eof`] tells) instead of failing the run: the
    /// peer closing the connection is the end of the conversation.
    pub fn until_eof(mut self) -> Reads {
        self.eof_ends = true;
        self
    }

    /// Read `n` messages of `size` bytes more, from scratch (the count of messages done
    /// starts again at 0).
    pub fn restart(&mut self, size: u64, n: u64) {
        self.size = size;
        self.n = n;
        self.done = 0;
        self.got = 0;
        self.reading = false;
    }

    /// The next read, or `None` once `n` messages are in (or at end of file).
    pub fn step(&mut self, env: &mut Env<'_>) -> Option<Op> {
        loop {
            if let Some(op) = self.step_each(env) {
                return Some(op);
            }
            if self.done == self.n || self.eof {
                return None;
            }
        }
    }

    /// Like [`Reads::step`], but also `None` after each complete message ([`Reads::done`]
    /// counts them), to act on it before the next one is read.
    pub fn step_each(&mut self, env: &mut Env<'_>) -> Option<Op> {
        if std::mem::take(&mut self.reading) {
            if env.ret == 0 && self.eof_ends {
                self.eof = true;
                return None;
            }
            if env.ret <= 0 {
                let msg = (self.blame)(self.done, env.ret);
                return Some(fail(env, msg));
            }
            self.got += env.ret as u64;
            if self.got >= self.size {
                self.got = 0;
                self.done += 1;
                return None;
            }
        }
        if self.done == self.n || self.eof {
            return None;
        }
        self.reading = true;
        Some(Op::Read {
            fd: self.fd,
            len: (self.size - self.got).min(self.max),
        })
    }

    /// Messages read so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// The messages asked for.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// End of file was read ([`Reads::until_eof`]).
    pub fn eof(&self) -> bool {
        self.eof
    }
}

/// Write a message of `size` bytes to each of `fds` in turn, `rounds` times over
/// (hackbench's sender loop; one fd and `rounds` messages for a plain stream). A short
/// write is followed by a write of the rest; a write returning an error fails the run
/// (`blame(i, ret)` for message `i`).
pub struct Writes {
    fds: Arc<[Fd]>,
    size: u64,
    rounds: u64,
    round: u64,
    /// Index in `fds` of the current message.
    j: usize,
    /// Bytes of the current message out.
    sent: u64,
    writing: bool,
    started: bool,
    blame: Blame,
}

impl Writes {
    /// `rounds` rounds of one `size`-byte message to each of `fds`.
    pub fn new(
        fds: impl Into<Arc<[Fd]>>,
        size: u64,
        rounds: u64,
        blame: impl Fn(u64, i64) -> String + Send + 'static,
    ) -> Writes {
        Writes {
            fds: fds.into(),
            size,
            rounds,
            round: 0,
            j: 0,
            sent: 0,
            writing: false,
            started: false,
            blame: super::blame(blame),
        }
    }

    /// Write `rounds` rounds more, from scratch.
    pub fn restart(&mut self, rounds: u64) {
        self.rounds = rounds;
        self.round = 0;
        self.j = 0;
        self.sent = 0;
        self.writing = false;
    }

    /// The next write, or `None` once every message is out.
    pub fn step(&mut self, env: &mut Env<'_>) -> Option<Op> {
        if std::mem::take(&mut self.writing) {
            if env.ret <= 0 {
                let msg = (self.blame)(self.messages_done(), env.ret);
                return Some(fail(env, msg));
            }
            self.sent += env.ret as u64;
            if self.sent >= self.size {
                self.sent = 0;
                self.j += 1;
                if self.j == self.fds.len() {
                    self.j = 0;
                    self.round += 1;
                }
            }
        }
        if self.round == self.rounds || self.fds.is_empty() {
            return None;
        }
        self.writing = true;
        self.started = true;
        Some(Op::Write {
            fd: self.fds[self.j],
            len: self.size - self.sent,
        })
    }

    fn messages_done(&self) -> u64 {
        self.round * self.fds.len() as u64 + self.j as u64
    }

    /// A write has been issued (since the piece was made).
    pub fn started(&self) -> bool {
        self.started
    }

    /// Messages in all the rounds asked for.
    pub fn messages(&self) -> u64 {
        self.rounds * self.fds.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::abi::{program, EPIPE};
    use crate::workload::toolkit::testing::{drive, run};
    use crate::workload::toolkit::{step, Chan, Open, Reap, Spawn};

    #[test]
    fn short_reads_are_followed_by_reads_of_the_rest() {
        let mut r = Reads::new(3, 100, 2, |_, _| unreachable!());
        let (ops, _) = drive(&[0, 100, 30, 50, 20, 0], |env| r.step(env));
        assert_eq!(
            ops,
            ["read 3 100", "read 3 100", "read 3 70", "read 3 20", "done"]
        );
        assert_eq!(r.done(), 2);
        // A cap on each read; restart for another message.
        r.restart(10, 1);
        let mut r = r.at_most(4);
        let (ops, _) = drive(&[0, 4, 4, 2, 0], |env| r.step(env));
        assert_eq!(ops, ["read 3 4", "read 3 4", "read 3 2", "done"]);
    }

    #[test]
    fn step_each_pauses_after_every_message() {
        let mut r = Reads::new(3, 2, 2, |_, _| unreachable!());
        let (ops, _) = drive(&[0, 2], |env| r.step_each(env));
        assert_eq!(ops, ["read 3 2", "done"]);
        assert_eq!(r.done(), 1);
        // The next call starts the next message, whatever env.ret says.
        let (ops, _) = drive(&[55, 1, 1, 0], |env| r.step_each(env));
        assert_eq!(ops, ["read 3 2", "read 3 1", "done"]);
        assert_eq!(r.done(), 2);
        let (ops, _) = drive(&[55], |env| r.step_each(env));
        assert_eq!(ops, ["done"]);
    }

    #[test]
    fn end_of_file_fails_or_ends_the_reads() {
        let mut r = Reads::new(3, 10, 5, |i, ret| {
            format!("read {ret} with {} to go", 5 - i)
        });
        let (ops, rec) = drive(&[0, 10, 4, 0], |env| r.step(env));
        assert_eq!(ops, ["read 3 10", "read 3 10", "read 3 6", "exit"]);
        assert_eq!(rec.error.as_deref(), Some("read 0 with 4 to go"));
        let mut r = Reads::new(3, 10, 5, |_, _| unreachable!()).until_eof();
        let (ops, _) = drive(&[0, 10, 0, 7], |env| r.step(env));
        assert_eq!(ops, ["read 3 10", "read 3 10", "done"]);
        assert!(r.eof());
        assert_eq!(r.done(), 1);
    }

    #[test]
    fn writes_go_round_the_fds() {
        let mut w = Writes::new(vec![4, 6], 10, 2, |i, ret| format!("message {i}: {ret}"));
        assert!(!w.started());
        assert_eq!(w.messages(), 4);
        // A short write (the reader left) is followed by a write of the rest.
        let (ops, _) = drive(&[0, 10, 3, 7, 10, 10, 0], |env| w.step(env));
        assert_eq!(
            ops,
            [
                "write 4 10",
                "write 6 10",
                "write 6 7",
                "write 4 10",
                "write 6 10",
                "done"
            ]
        );
        assert!(w.started());
        w.restart(1);
        let (ops, rec) = drive(&[0, 10, EPIPE], |env| w.step(env));
        assert_eq!(ops, ["write 4 10", "write 6 10", "exit"]);
        assert_eq!(rec.error.as_deref(), Some("message 1: -32"));
        let mut w = Writes::new(vec![4, 6], 10, 2, |i, ret| format!("message {i}: {ret}"));
        let (_, rec) = drive(&[0, 10, 10, 10, EPIPE], |env| w.step(env));
        assert_eq!(rec.error.as_deref(), Some("message 3: -32"));
    }

    #[test]
    fn messages_cross_a_socket_pair_in_a_run() {
        // A child writes 50 messages of 3000 bytes (more than fits in the socket buffer);
        // init reads them, its reads returning short when the writer is behind.
        let (r, sim) = run(2, || {
            let mut chan = Open::new(Chan::SocketPair, 1, |_, r| format!("{r}"));
            let mut kid = Spawn::forks(1, |_, r| format!("{r}"));
            let mut reads: Option<Reads> = None;
            let mut reap = Reap::n(1, |_, r| format!("{r}"));
            program(move |env| {
                step!(chan.step(env));
                let fd = chan.fds()[0];
                step!(kid.step(env, |_, _| {
                    let mut w = Writes::new(vec![fd + 1], 3000, 50, |_, r| format!("{r}"));
                    program(move |env| w.step(env).unwrap_or(Op::Exit))
                }));
                let reads =
                    reads.get_or_insert_with(|| Reads::new(fd, 3000, 50, |_, r| format!("{r}")));
                step!(reads.step(env));
                step!(reap.step(env));
                env.count("done", reads.done());
                Op::Exit
            })
        });
        r.unwrap();
        assert_eq!(sim.k.rec.count("done"), 50);
        let written: u64 = sim.k.streams.iter().map(|s| s.written).sum();
        let read: u64 = sim.k.streams.iter().map(|s| s.read).sum();
        assert_eq!((written, read), (150_000, 150_000));
    }
}
