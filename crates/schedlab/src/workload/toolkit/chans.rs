//! Opening channels: `n` pipes, socketpairs or TCP connections, one call each.

use super::{fail, Blame};
use crate::kernel::abi::{Env, Op};
use crate::kernel::chan::Fd;

/// A kind of channel: each call returns one end's fd; the other end is that fd `+ 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chan {
    /// `pipe()`: the read end (the write end is `+ 1`).
    Pipe,
    /// `socketpair(AF_UNIX, SOCK_STREAM)`: end `a` (the other is `+ 1`).
    SocketPair,
    /// A connected TCP loopback pair: the client end (the server's is `+ 1`).
    Tcp,
    /// The same with `TCP_NODELAY` set on both ends.
    TcpNoDelay,
    /// A connected UDP pair on loopback: the client end (the server's is `+ 1`).
    Udp,
}

impl Chan {
    fn op(self) -> Op {
        match self {
            Chan::Pipe => Op::Pipe,
            Chan::SocketPair => Op::SocketPair,
            Chan::Tcp => Op::TcpPair { nodelay: false },
            Chan::TcpNoDelay => Op::TcpPair { nodelay: true },
            Chan::Udp => Op::UdpPair,
        }
    }
}

/// Open `n` channels of one kind, one call after another; a negative return fails the
/// run (`blame(i, ret)` for channel `i`).
///
/// [`Open::fds`] lists the fd each call returned, in order. [`Open::more`] asks for more
/// channels once these are open, to interleave channels with other calls (a channel per
/// child, say).
pub struct Open {
    kind: Chan,
    n: u64,
    fds: Vec<Fd>,
    issued: bool,
    blame: Blame,
}

impl Open {
    /// `n` channels of `kind`.
    pub fn new(kind: Chan, n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Open {
        Open {
            kind,
            n,
            fds: Vec::with_capacity(n as usize),
            issued: false,
            blame: super::blame(blame),
        }
    }

    /// `n` pipes.
    pub fn pipes(n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Open {
        Open::new(Chan::Pipe, n, blame)
    }

    /// Open `k` more channels (after those asked for so far).
    pub fn more(&mut self, k: u64) {
        self.n += k;
    }

    /// The next call, or `None` once every channel asked for is open.
    pub fn step(&mut self, env: &mut Env<'_>) -> Option<Op> {
        if std::mem::take(&mut self.issued) {
            if env.ret < 0 {
                let msg = (self.blame)(self.fds.len() as u64, env.ret);
                return Some(fail(env, msg));
            }
            self.fds.push(env.ret as Fd);
        }
        if (self.fds.len() as u64) < self.n {
            self.issued = true;
            return Some(self.kind.op());
        }
        None
    }

    /// The fd each call returned (a pipe's read end, a socket pair's first end), in order.
    pub fn fds(&self) -> &[Fd] {
        &self.fds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::abi::{program, ENFILE};
    use crate::workload::toolkit::testing::{drive, run};

    #[test]
    fn opens_n_channels_and_lists_their_fds() {
        let mut o = Open::new(Chan::SocketPair, 3, |_, _| unreachable!());
        let (ops, _) = drive(&[0, 4, 6, 8, 0], |env| o.step(env));
        assert_eq!(ops, ["socketpair", "socketpair", "socketpair", "done"]);
        assert_eq!(o.fds(), [4, 6, 8]);
        // Done stays done, whatever env.ret says.
        let (ops, _) = drive(&[-1], |env| o.step(env));
        assert_eq!(ops, ["done"]);
        o.more(1);
        let (ops, _) = drive(&[0, 10, 0], |env| o.step(env));
        assert_eq!(ops, ["socketpair", "done"]);
        assert_eq!(o.fds(), [4, 6, 8, 10]);
    }

    #[test]
    fn a_refused_channel_fails_the_run_with_its_index() {
        let mut o = Open::pipes(3, |i, ret| format!("pipe {i} failed ({ret})"));
        let (ops, rec) = drive(&[0, 4, ENFILE], |env| o.step(env));
        assert_eq!(ops, ["pipe", "pipe", "exit"]);
        assert_eq!(rec.error.as_deref(), Some("pipe 1 failed (-23)"));
    }

    #[test]
    fn pipes_in_a_run_are_usable() {
        // Two pipes, a byte through each.
        let (r, sim) = run(1, || {
            let mut o = Open::pipes(2, |i, ret| format!("pipe {i}: {ret}"));
            let mut n = 0;
            program(move |env| {
                if let Some(op) = o.step(env) {
                    return op;
                }
                n += 1;
                match n {
                    1 => Op::Write {
                        fd: o.fds()[0] + 1,
                        len: 1,
                    },
                    2 => Op::Write {
                        fd: o.fds()[1] + 1,
                        len: 2,
                    },
                    _ => Op::Exit,
                }
            })
        });
        r.unwrap();
        assert_eq!(sim.k.streams.len(), 2);
        assert_eq!(sim.k.streams[0].written, 1);
        assert_eq!(sim.k.streams[1].written, 2);
    }
}
