//! IBM chat (VolanoMark simulator, benchmarks.md §3) over TCP loopback, as chat_s.c and
//! chat_c.c (version 1.0.1) run it: `rooms` rooms of `users` users; every user is one TCP
//! connection with a sending and a receiving thread in the client and a receiving and a
//! sending thread in the server (4 threads per user). Each client sending thread sends
//! `messages` messages of 100 bytes. The server's receiving thread of a user reads each
//! message (100 bytes, as `MSG_WAITALL`) and posts the user's semaphore in the room's
//! SysV semaphore set; the user's server sending thread waits on it and sends the message
//! to the connection of each **other** user of the room, so a room's sending threads
//! share its 19 sockets. The client releases its threads with one `semop` on a SysV
//! semaphore, times until another one counted down by every client thread reaches zero,
//! and reports (messages sent + messages received) per second, as chat_c's "Average
//! throughput" does.
//!
//! The server is a forked process (threads inside), the client is the leader (threads
//! inside); both listen and connect on 127.0.0.1 only. `nice` is applied to every thread
//! of both sides. TCP_NODELAY is set on every connection with `nodelay=on`; the original
//! sets no option (the default), so Nagle holds a small message while an earlier one is
//! unacknowledged, on the host as in the model.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome, Reporter, Task};
use crate::sys::{self, explain, Fail, Res, SemSet};

const MSG: usize = 100;
const NAMES: &[&str] = &["sent", "delivered", "server_forwarded"];

fn io_fail(call: &str, e: std::io::Error) -> Fail {
    match e.raw_os_error() {
        Some(n) => explain(call, n),
        None => Fail(format!("{call} failed: {e}")),
    }
}

fn read_msg(s: &mut &TcpStream, buf: &mut [u8]) -> Res<bool> {
    let mut done = 0;
    while done < buf.len() {
        match s.read(&mut buf[done..]) {
            Ok(0) if done == 0 => return Ok(false),
            Ok(0) => return Err(Fail("chat: connection closed mid-message".into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_fail("recv", e)),
        }
    }
    Ok(true)
}

/// Semaphore values are shorts: a larger post is made in steps.
const SEM_STEP: usize = i16::MAX as usize;

fn server(
    listener: TcpListener,
    (rooms, users, nice, messages, nodelay): (usize, usize, i32, u64, bool),
    ready: i32,
    c: Counters,
    rep: Reporter,
) -> Res<()> {
    let n = rooms * users;
    let mut conns: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let (mut s, _) = listener.accept().map_err(|e| io_fail("accept", e))?;
        s.set_nodelay(nodelay)
            .map_err(|e| io_fail("setsockopt", e))?;
        let mut hello = [0u8; 8];
        s.read_exact(&mut hello).map_err(|e| io_fail("recv", e))?;
        let room = u32::from_le_bytes(hello[..4].try_into().expect("4 bytes")) as usize;
        let user = u32::from_le_bytes(hello[4..].try_into().expect("4 bytes")) as usize;
        let k = room * users + user;
        if room >= rooms || user >= users || conns[k].is_some() {
            return Err(Fail(format!(
                "chat server: bad hello room {room} user {user}"
            )));
        }
        conns[k] = Some(s);
    }
    drop(listener);
    let conns: Vec<Arc<TcpStream>> = conns
        .into_iter()
        .map(|s| Arc::new(s.expect("every connection accepted")))
        .collect();
    // One semaphore per user in its room's set (chat_s's `roomsem`).
    let sems: Vec<Arc<SemSet>> = (0..rooms)
        .map(|_| SemSet::new(users).map(Arc::new))
        .collect::<Res<_>>()?;
    let mut threads = Vec::with_capacity(2 * n);
    let spawn = |f: Box<dyn FnOnce() -> Res<()> + Send>| {
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                if let Err(e) = f() {
                    rep.fail(&e.0);
                }
            })
            .map_err(|e| io_fail("thread creation", e))
    };
    for k in 0..n {
        let (room, user) = (k / users, k % users);
        // srv_rcv: each message in, then the user's semaphore up.
        let (rx, sem) = (Arc::clone(&conns[k]), Arc::clone(&sems[room]));
        threads.push(spawn(Box::new(move || {
            // The simulated thread's comm (`roomR:<role>U`), so a host trace groups a room.
            sys::set_comm(&format!("room{}:sr{}", room + 1, user + 1));
            sys::set_nice(nice)?;
            let mut m = [0u8; MSG];
            for i in 0..messages {
                if !read_msg(&mut &*rx, &mut m)? {
                    return Err(Fail(format!(
                        "chat server: client closed after {i} of {messages} messages"
                    )));
                }
                sem.op(user, 1)?;
            }
            Ok(())
        }))?);
        // srv_snd: wait on the user's semaphore, send to every other user of the room.
        let peers: Vec<Arc<TcpStream>> = (0..users)
            .filter(|&u| u != user)
            .map(|u| Arc::clone(&conns[room * users + u]))
            .collect();
        let sem = Arc::clone(&sems[room]);
        threads.push(spawn(Box::new(move || {
            sys::set_comm(&format!("room{}:ss{}", room + 1, user + 1));
            sys::set_nice(nice)?;
            let m = [b'm'; MSG];
            for _ in 0..messages {
                sem.op(user, -1)?;
                for p in &peers {
                    (&**p).write_all(&m).map_err(|e| io_fail("send", e))?;
                }
            }
            c.add(2, messages * peers.len() as u64);
            Ok(())
        }))?);
    }
    sys::write_full(ready, b"R")?;
    for t in threads {
        if t.join().is_err() {
            return Err(Fail("chat server thread panicked".into()));
        }
    }
    Ok(())
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::chat::Options::from_params(p);
    let rooms = o.rooms as usize;
    let messages = o.messages;
    let users = o.users as usize;
    let nice = o.nice as i32;
    let c = Counters::new(NAMES)?;
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .map_err(|e| io_fail("bind 127.0.0.1", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| io_fail("getsockname", e))?;
    let n = rooms * users;
    if 2 * n > SEM_STEP {
        return Err(Fail(format!(
            "chat: {} client threads, more than a SysV semaphore counts (32767)",
            2 * n
        )));
    }
    let (ready_r, ready_w) = sys::pipe()?;
    let rep = ctx.reporter();
    // The listener moves into the child; the parent's copy is closed when the closure drops.
    let srv = ctx.fork(move || {
        sys::close(ready_r);
        server(
            listener,
            (rooms, users, nice, messages, o.nodelay),
            ready_w,
            c,
            rep,
        )
    })?;
    sys::close(ready_w);

    // chat_c's `clientsemall` (releases the threads) and `c_donesem` (counted down).
    let go = Arc::new(SemSet::new(1)?);
    let done = Arc::new(SemSet::new(1)?);
    done.set(0, (2 * n) as i32)?;
    let mut workers: Vec<Task> = Vec::with_capacity(2 * n);
    for k in 0..n {
        let mut s = TcpStream::connect(addr).map_err(|e| io_fail("connect 127.0.0.1", e))?;
        s.set_nodelay(o.nodelay)
            .map_err(|e| io_fail("setsockopt", e))?;
        let mut hello = [0u8; 8];
        hello[..4].copy_from_slice(&((k / users) as u32).to_le_bytes());
        hello[4..].copy_from_slice(&((k % users) as u32).to_le_bytes());
        s.write_all(&hello).map_err(|e| io_fail("send", e))?;
        let s = Arc::new(s);
        let (tx, g, d) = (Arc::clone(&s), Arc::clone(&go), Arc::clone(&done));
        let (room, user) = (k / users + 1, k % users + 1);
        workers.push(ctx.thread(move || {
            sys::set_comm(&format!("room{room}:cs{user}"));
            sys::set_nice(nice)?;
            let m = [b'm'; MSG];
            g.op(0, -1)?;
            for _ in 0..messages {
                (&*tx).write_all(&m).map_err(|e| io_fail("send", e))?;
            }
            c.add(0, messages);
            d.op(0, -1)
        })?);
        let (rx, g, d) = (s, Arc::clone(&go), Arc::clone(&done));
        let expect = messages * (users as u64 - 1);
        workers.push(ctx.thread(move || {
            sys::set_comm(&format!("room{room}:cr{user}"));
            sys::set_nice(nice)?;
            let mut m = [0u8; MSG];
            g.op(0, -1)?;
            for i in 0..expect {
                if !read_msg(&mut &*rx, &mut m)? {
                    return Err(Fail(format!(
                        "chat client: server closed after {i} of {expect} messages"
                    )));
                }
            }
            c.add(1, expect);
            d.op(0, -1)
        })?);
    }
    let mut r = [0u8; 1];
    sys::read_full(ready_r, &mut r, "chat server start")?;
    let t0 = sys::now_ns();
    go.op(0, (2 * n) as i16)?;
    done.op(0, 0)?;
    let ns = sys::now_ns() - t0;
    ctx.join_all(workers)?;
    ctx.join_all(vec![srv])?;
    let sent = (n as u64) * messages;
    let delivered = sent * (users as u64 - 1);
    let rate = (sent + delivered) as f64 / (ns.max(1) as f64 / 1e9);
    let mut out = Outcome::new("messages_per_s", rate, "messages/s", "higher", ns);
    out.counts = c.to_map();
    out.counts.insert("server_threads".into(), (2 * n) as f64);
    Ok(out)
}
