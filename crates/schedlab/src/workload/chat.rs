//! `chat` (IBM LTC, Bill Hartner's `chat_s` / `chat_c`, a Java-free VolanoMark): chat rooms
//! over TCP loopback, four threads per user (benchmarks.md §3).
//!
//! # The original
//!
//! `chat_s` listens on a TCP port; `chat_c <server> [rooms=10] [messages=100]` connects one
//! TCP connection per user, 20 users per room. For every connection there is a sending and
//! a receiving thread in the client **and** in the server: 4 threads per user, all created
//! before timing. Each client send thread sends `messages` messages of 100 bytes; the server
//! broadcasts each message it receives to the **other 19** users of the room (server send
//! threads write to their user's connection, client receive threads read them). The client
//! prints "Average throughput : N messages per second". Molnar asked for runs under
//! `nice -n 19`.
//!
//! # The model
//!
//! It follows the published source (chat_s.c, chat_c.c and chat.h, version 1.0.1 of
//! 10 Dec 2000; benchmarks.md §3). Threads are `__clone(CLONE_VM | CLONE_FS |
//! CLONE_FILES | CLONE_SIGHAND)` threads, not LinuxThreads; they synchronise with SysV
//! semaphores ([`crate::kernel::usync`]); every message is a 100-byte `send()`, and every
//! `recv()` asks for exactly 100 bytes (`MSG_WAITALL`).
//!
//! 1. init plays `chat_c`'s main thread. It applies `nice` (so `chat_s` and every thread
//!    inherit it), creates the "ready" pipe, one TCP loopback connection per user
//!    (`connect` + `accept`: the client end is `c`, the server end `c + 1`), sets
//!    `c_donesem` to the number of client threads, and forks `chat_s`.
//! 2. `chat_s` clones per user a receive thread `srv_rcv` and a send thread `srv_snd`,
//!    writes the ready byte (the original sends `CLIENT_START` on its control socket) and
//!    waits for its threads.
//! 3. init clones per user `cli_snd` and `cli_rcv`, reads the ready byte, marks `start`
//!    and releases the client threads with one `semop(clientsemall, +threads)`, which
//!    2.4 turns into a chain of wake-ups (each released thread wakes the next). It then
//!    waits for `c_donesem` to reach zero and marks `end`.
//! 4. `cli_snd`: `messages` sends to its connection, then `semop(c_donesem, −1)`.
//!    `srv_rcv` of user *u*: per message, a `recv()` from *u*'s connection and
//!    `semop(roomsem[u], +1)`. `srv_snd` of user *u*: per message, `semop(roomsem[u], −1)`
//!    and one `send()` to the connection of each of the room's **other** users — so a
//!    room's 20 send threads all write to the same 19 sockets, and meet on their socket
//!    locks. `cli_rcv`: `(users − 1) · messages` receives, then `semop(c_donesem, −1)`.
//! 5. Result: chat_c's "Average throughput": (messages sent + messages received by the
//!    client threads) / (`end` − `start`). Counted: `messages_sent`, `messages_delivered`;
//!    marks `start`, `first_send` (each client send thread), `end`.
//!
//! Simplifications, named: the control socket is a pipe; `chat_s` waits for its threads
//! with `waitpid` instead of its `s_donesem` (outside the timed interval either way).

use std::sync::Arc;

use crate::kernel::abi::{errno_name, Env, Op, Program, Record, SyncOp};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{fail, step, Open, Reads, Reap, Spawn, Writes};
use super::{interval, metric, Workload, WorkloadInfo};

/// Message size (chat.h `BUFFER_SIZE`).
const MSG: u64 = 100;
/// The semaphore that releases the client threads (chat_c's `clientsemall`).
const CLIENTSEMALL: u32 = 0;
/// The semaphore the client threads count down as they finish (chat_c's `c_donesem`).
const C_DONESEM: u32 = 1;

/// chat_s's `roomsem` of user `u` (one semaphore per user in its room's set).
fn roomsem(u: u64) -> u32 {
    2 + u as u32
}

crate::options! {
    /// The parameters of `chat`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        rooms: u64 = int("10", 1, 1000).help("chat rooms (chat_c default 10)")
            .source("benchmarks.md §3");
        messages: u64 = int("100", 1, 10_000_000).help("messages each user sends (chat_c default 100)")
            .source("benchmarks.md §3");
        users: u64 = int("20", 2, 1000).help("users per room (chat: 20)")
            .source("benchmarks.md §3");
        nice: i64 = int("0", -20, 19).help("nice of server and client (Molnar asked for 19)")
            .source("benchmarks.md §3");
        nodelay: bool = flag("off").help("TCP_NODELAY on every connection (chat sets no option: Nagle holds small messages)")
            .source("benchmarks.md §3");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "chat",
    about: "IBM chat_s/chat_c (VolanoMark simulator): rooms of users over TCP loopback",
    small: &[
        "chat:rooms=2,users=4,messages=4",
        "chat:rooms=1,users=3,messages=5,nice=19",
    ],
    metric: "messages/s",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(Chat {
        s: Shape {
            rooms: o.rooms,
            messages: o.messages,
            users: o.users,
            nice: o.nice as i32,
            nodelay: o.nodelay,
        },
    }))
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    rooms: u64,
    messages: u64,
    users: u64,
    nice: i32,
    nodelay: bool,
}

impl Shape {
    fn connections(&self) -> u64 {
        self.rooms * self.users
    }

    /// Messages each client receive thread (and server send thread) handles.
    fn per_receiver(&self) -> u64 {
        (self.users - 1) * self.messages
    }

    fn delivered(&self) -> u64 {
        self.connections() * self.per_receiver()
    }

    fn sent(&self) -> u64 {
        self.connections() * self.messages
    }
}

/// The chat workload.
pub struct Chat {
    s: Shape,
}

/// One `semop` on one semaphore, as a step of a program: issued, then checked.
struct Semop {
    id: u32,
    op: i32,
    issued: bool,
}

impl Semop {
    fn new(id: u32, op: i32) -> Semop {
        Semop {
            id,
            op,
            issued: false,
        }
    }

    /// The call, or `None` once it has returned (each later call issues it again).
    fn step(&mut self, env: &mut Env<'_>) -> Option<Op> {
        if !std::mem::take(&mut self.issued) {
            self.issued = true;
            return Some(Op::Sync(SyncOp::SemOp {
                id: self.id,
                op: self.op,
            }));
        }
        if env.ret != 0 {
            let msg = format!(
                "chat: semop({}, {}) failed ({})",
                self.id,
                self.op,
                errno_name(env.ret)
            );
            return Some(fail(env, msg));
        }
        None
    }
}

/// `cli_snd`: wait for the start, send `messages` messages, count down `c_donesem`.
struct ClientSend {
    go: Semop,
    sends: Writes,
    done: Semop,
}

impl Program for ClientSend {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        if !self.sends.started() {
            step!(self.go.step(env));
            env.mark("first_send");
        }
        step!(self.sends.step(env));
        if !self.done.issued {
            env.count("messages_sent", self.sends.messages());
        }
        step!(self.done.step(env));
        Op::Exit
    }
}

/// `cli_rcv`: wait for the start, receive every message the room's other users send,
/// count down `c_donesem`.
struct ClientRecv {
    go: Option<Semop>,
    msgs: Reads,
    done: Semop,
}

impl Program for ClientRecv {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        if let Some(go) = &mut self.go {
            step!(go.step(env));
            self.go = None;
        }
        step!(self.msgs.step(env));
        if !self.done.issued {
            env.count("messages_delivered", self.msgs.n());
        }
        step!(self.done.step(env));
        Op::Exit
    }
}

/// `srv_rcv` of a user: per message, receive it and post the user's room semaphore.
struct ServerRecv {
    msgs: Reads,
    post: Semop,
    /// A message is in and its post not yet returned.
    posting: bool,
}

impl Program for ServerRecv {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            if self.posting {
                step!(self.post.step(env));
                self.posting = false;
            }
            if self.msgs.done() == self.msgs.n() {
                return Op::Exit;
            }
            step!(self.msgs.step_each(env));
            self.posting = true;
        }
    }
}

/// `srv_snd` of a user: per message, wait on the user's room semaphore, then send the
/// message to each other user of the room.
struct ServerSend {
    wait: Semop,
    /// Messages still to broadcast.
    left: u64,
    /// The broadcast of the current message, one `send()` per other user.
    out: Writes,
    /// Waiting on the semaphore.
    waiting: bool,
}

impl Program for ServerSend {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            if self.waiting {
                step!(self.wait.step(env));
                self.waiting = false;
                self.left -= 1;
                self.out.restart(1);
            }
            step!(self.out.step(env));
            if self.left == 0 {
                return Op::Exit;
            }
            self.waiting = true;
        }
    }
}

/// Server thread `k`: the receive (even `k`) or send thread of user `k / 2`, given the
/// server ends of the connections.
fn server_thread(s: Shape, conns: &[Fd], k: u64) -> Box<dyn Program> {
    let role = if k.is_multiple_of(2) { "sr" } else { "ss" };
    super::toolkit::named(thread_comm(s, role, k), server_thread_of(s, conns, k))
}

/// The comm of thread `k` of a user: `roomR:<role>U` (room and user 1-based), so traces
/// group a room's threads.
fn thread_comm(s: Shape, role: &str, k: u64) -> String {
    let user = k / 2;
    format!("room{}:{role}{}", user / s.users + 1, user % s.users + 1)
}

fn server_thread_of(s: Shape, conns: &[Fd], k: u64) -> Box<dyn Program> {
    let u = k / 2;
    let n = s.messages;
    if k.is_multiple_of(2) {
        Box::new(ServerRecv {
            msgs: Reads::new(conns[u as usize], MSG, n, move |done, ret| {
                format!(
                    "chat: server receive: recv returned {ret} with {} messages to go",
                    n - done
                )
            }),
            post: Semop::new(roomsem(u), 1),
            posting: false,
        })
    } else {
        let first = u / s.users * s.users;
        let others: Arc<[Fd]> = (first..first + s.users)
            .filter(|&v| v != u)
            .map(|v| conns[v as usize])
            .collect();
        Box::new(ServerSend {
            wait: Semop::new(roomsem(u), -1),
            left: n,
            out: Writes::new(others, MSG, 0, |_, ret| {
                format!("chat: server send: send returned {ret}")
            }),
            waiting: true,
        })
    }
}

/// `chat_s`: threads, ready byte, wait.
struct Server {
    phase: u8,
    s: Shape,
    /// Server ends of the connections, room by room.
    conns: Arc<[Fd]>,
    ready_out: Fd,
    /// Receive then send thread, per user.
    threads: Spawn,
    reap: Reap,
}

impl Program for Server {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                0 => {
                    let (s, conns) = (self.s, &self.conns);
                    step!(self.threads.step(env, |k, _| server_thread(s, conns, k)));
                }
                1 => {
                    self.phase += 1;
                    return Op::Write {
                        fd: self.ready_out,
                        len: 1,
                    };
                }
                2 => step!(self.reap.step(env)),
                _ => return Op::Exit,
            }
            self.phase += 1;
        }
    }
}

/// Client thread `k`: the send (even `k`) or receive thread of user `k / 2`.
fn client_thread(s: Shape, conns: &[Fd], k: u64) -> Box<dyn Program> {
    let role = if k.is_multiple_of(2) { "cs" } else { "cr" };
    super::toolkit::named(thread_comm(s, role, k), client_thread_of(s, conns, k))
}

fn client_thread_of(s: Shape, conns: &[Fd], k: u64) -> Box<dyn Program> {
    let conn = conns[(k / 2) as usize];
    if k.is_multiple_of(2) {
        Box::new(ClientSend {
            go: Semop::new(CLIENTSEMALL, -1),
            sends: Writes::new(vec![conn], MSG, s.messages, |_, ret| {
                format!("chat: client send: send returned {ret}")
            }),
            done: Semop::new(C_DONESEM, -1),
        })
    } else {
        let n = s.per_receiver();
        Box::new(ClientRecv {
            go: Some(Semop::new(CLIENTSEMALL, -1)),
            msgs: Reads::new(conn, MSG, n, move |done, ret| {
                format!(
                    "chat: client receive: recv returned {ret} with {} messages to go",
                    n - done
                )
            }),
            done: Semop::new(C_DONESEM, -1),
        })
    }
}

/// `chat_c`'s main thread (init).
struct Client {
    phase: u8,
    s: Shape,
    /// The "ready" pipe (chat_s's `CLIENT_START`).
    ready: Open,
    /// One TCP connection per user, room by room.
    conns: Open,
    server: Spawn,
    /// Send then receive thread, per user.
    threads: Spawn,
    /// `semop(clientsemall, +threads)`, then `semop(c_donesem, 0)`.
    release: Semop,
    wait_done: Semop,
    reap: Reap,
}

impl Client {
    fn client_threads(&self) -> u64 {
        2 * self.s.connections()
    }
}

impl Program for Client {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                // nice -n NICE: inherited by chat_s and every thread.
                0 if self.s.nice != 0 => {
                    self.phase += 1;
                    return Op::Nice { inc: self.s.nice };
                }
                0 => {}
                1 => step!(self.ready.step(env)),
                2 => step!(self.conns.step(env)),
                3 => {
                    self.phase += 1;
                    return Op::Sync(SyncOp::SemSetVal {
                        id: C_DONESEM,
                        val: self.client_threads() as u32,
                    });
                }
                4 => {
                    let (s, conns) = (self.s, self.conns.fds());
                    let ready_out = self.ready.fds()[0] + 1;
                    step!(self.server.step(env, |_, _| {
                        super::toolkit::named(
                            "chat_s",
                            Box::new(Server {
                                phase: 0,
                                s,
                                conns: conns.iter().map(|&c| c + 1).collect(),
                                ready_out,
                                threads: Spawn::clones(2 * s.connections(), |i, ret| {
                                    format!(
                                        "chat: server: clone() of thread {} refused ({})",
                                        i + 1,
                                        errno_name(ret)
                                    )
                                }),
                                reap: Reap::all(),
                            }),
                        )
                    }));
                }
                5 => {
                    let (s, conns) = (self.s, self.conns.fds());
                    step!(self.threads.step(env, |k, _| client_thread(s, conns, k)));
                }
                // Wait for chat_s to have created its threads.
                6 => {
                    self.phase += 1;
                    return Op::Read {
                        fd: self.ready.fds()[0],
                        len: 1,
                    };
                }
                7 => {
                    if env.ret < 0 {
                        let msg = format!(
                            "chat: read of the server's ready byte failed ({})",
                            errno_name(env.ret)
                        );
                        return fail(env, msg);
                    }
                    env.mark("start");
                }
                8 => step!(self.release.step(env)),
                9 => {
                    step!(self.wait_done.step(env));
                    env.mark("end");
                }
                // Reap the threads and chat_s.
                10 => step!(self.reap.step(env)),
                _ => return Op::Exit,
            }
            self.phase += 1;
        }
    }
}

impl Workload for Chat {
    fn root(&self) -> Box<dyn Program> {
        let n = self.s.connections();
        super::toolkit::named(
            "chat_c",
            Box::new(Client {
                phase: 0,
                s: self.s,
                ready: Open::pipes(1, |_, ret| {
                    format!("chat: pipe() failed ({})", errno_name(ret))
                }),
                conns: Open::new(
                    if self.s.nodelay {
                        super::toolkit::Chan::TcpNoDelay
                    } else {
                        super::toolkit::Chan::Tcp
                    },
                    n,
                    |i, ret| {
                        format!(
                            "chat: TCP connection of user {} failed ({})",
                            i + 1,
                            errno_name(ret)
                        )
                    },
                ),
                server: Spawn::forks(1, |_, ret| {
                    format!("chat: fork() of chat_s failed ({})", errno_name(ret))
                }),
                threads: Spawn::clones(2 * n, |i, ret| {
                    format!(
                        "chat: clone() of client thread {} failed ({})",
                        i + 1,
                        errno_name(ret)
                    )
                }),
                release: Semop::new(CLIENTSEMALL, (2 * n) as i32),
                wait_done: Semop::new(C_DONESEM, 0),
                reap: Reap::all(),
            }),
        )
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        let sent = rec.count("messages_sent");
        let delivered = rec.count("messages_delivered");
        if delivered != self.s.delivered() || sent != self.s.sent() {
            return Err(format!(
                "chat: {sent} messages sent and {delivered} received, expected {} and {}",
                self.s.sent(),
                self.s.delivered()
            ));
        }
        Ok(metric(
            "messages_per_s",
            (sent + delivered) as f64 / (ns as f64 / 1e9),
            "messages/s",
            "higher",
        ))
    }
}

#[cfg(test)]
mod tests {

    use crate::workload::tests::run;

    #[test]
    fn each_message_reaches_the_other_users_of_its_room() {
        let s = run(4, "chat:rooms=2,users=4,messages=5");
        assert_eq!(s.k.rec.count("messages_sent"), 2 * 4 * 5);
        // Each of 8 client receive threads gets 5 messages from each of 3 others.
        assert_eq!(s.k.rec.count("messages_delivered"), 8 * 3 * 5);
        // chat_s plus 4 threads per user.
        assert_eq!(s.k.stats.forks, 1 + 4 * 8);
        let in_mm = |mm| {
            s.k.tasks
                .iter()
                .filter(|t| !t.is_idle && t.mm == mm)
                .count()
        };
        assert_eq!(in_mm(1), 1 + 2 * 8, "chat_c: main + send/receive per user");
        assert_eq!(in_mm(2), 1 + 2 * 8, "chat_s: main + send/receive per user");
        let r = s.report().unwrap();
        assert_eq!(r.result.metric, "messages_per_s");
        assert!(
            r.result.value > 1e3 && r.result.value < 1e8,
            "{}",
            r.result.value
        );
    }

    #[test]
    fn nothing_is_sent_before_go_and_nice_is_inherited() {
        let s = run(8, "chat:rooms=1,users=5,messages=3,nice=19");
        let start = s.k.rec.first("start").unwrap();
        let sends = &s.k.rec.marks["first_send"];
        assert_eq!(sends.len(), 5);
        assert!(sends.iter().all(|&t| t > start));
        assert!(s
            .k
            .tasks
            .iter()
            .filter(|t| !t.is_idle)
            .all(|t| t.nice == 19));
    }

    #[test]
    fn more_messages_do_proportionally_more_work() {
        let a = run(4, "chat:rooms=1,users=6,messages=20");
        let b = run(4, "chat:rooms=1,users=6,messages=80");
        let ratio = b.k.stats.syscalls as f64 / a.k.stats.syscalls as f64;
        assert!(ratio > 3.5 && ratio < 4.1, "syscall ratio {ratio}");
    }
}
