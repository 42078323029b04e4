//! IBM chat (VolanoMark simulator, benchmarks.md §3) over TCP loopback: `rooms` rooms of
//! `users` users; every user is one TCP connection with a sending and a receiving thread in
//! the client and a receiving and a sending thread in the server (4 threads per user). Each
//! client sending thread sends `messages` messages of 100 bytes; the server's receiving
//! thread hands each message to the sending threads of the other `users − 1` users of the
//! room, which write it to their clients.
//!
//! The server is a forked process (threads inside), the client is the leader (threads
//! inside); both listen and connect on 127.0.0.1 only. Every connection and thread exists
//! before the clock starts; the clock stops when every client receiving thread has its
//! `messages · (users − 1)` messages. \[INFERRED\] (benchmarks.md §3, reading (ii)): the
//! result counts messages delivered to clients per second. `nice` is applied to every
//! thread of both sides. \[INFERRED\]: TCP_NODELAY is set on every connection so that the
//! figure measures scheduling and not delayed-ACK timers.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome, Reporter, Task};
use crate::sys::{self, explain, Fail, Res};

const MSG: usize = 100;
const NAMES: &[&str] = &["sent", "delivered", "server_forwarded"];

fn io_fail(call: &str, e: std::io::Error) -> Fail {
    match e.raw_os_error() {
        Some(n) => explain(call, n),
        None => Fail(format!("{call} failed: {e}")),
    }
}

fn read_msg(s: &mut TcpStream, buf: &mut [u8]) -> Res<bool> {
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

/// A server connection's queue of messages to send to its client.
struct Outbox {
    q: Mutex<(VecDeque<[u8; MSG]>, bool)>,
    cv: Condvar,
}

impl Outbox {
    fn push(&self, m: [u8; MSG]) {
        self.q.lock().expect("outbox lock").0.push_back(m);
        self.cv.notify_one();
    }
    fn close(&self) {
        self.q.lock().expect("outbox lock").1 = true;
        self.cv.notify_one();
    }
    fn pop(&self) -> Option<[u8; MSG]> {
        let mut g = self.q.lock().expect("outbox lock");
        loop {
            if let Some(m) = g.0.pop_front() {
                return Some(m);
            }
            if g.1 {
                return None;
            }
            g = self.cv.wait(g).expect("outbox lock");
        }
    }
}

fn server(
    listener: TcpListener,
    (rooms, users, nice): (usize, usize, i32),
    ready: i32,
    c: Counters,
    rep: Reporter,
) -> Res<()> {
    let n = rooms * users;
    let mut conns: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let (mut s, _) = listener.accept().map_err(|e| io_fail("accept", e))?;
        s.set_nodelay(true).map_err(|e| io_fail("setsockopt", e))?;
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
    let outs: Vec<Arc<Outbox>> = (0..n)
        .map(|_| {
            Arc::new(Outbox {
                q: Mutex::new((VecDeque::new(), false)),
                cv: Condvar::new(),
            })
        })
        .collect();
    let live: Vec<Arc<AtomicUsize>> = (0..rooms)
        .map(|_| Arc::new(AtomicUsize::new(users)))
        .collect();
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
    for (k, conn) in conns.into_iter().enumerate() {
        let mut rx = conn.expect("every connection accepted");
        let mut tx = rx.try_clone().map_err(|e| io_fail("dup", e))?;
        let (room, user) = (k / users, k % users);
        let out = Arc::clone(&outs[k]);
        threads.push(spawn(Box::new(move || {
            sys::set_nice(nice)?;
            while let Some(m) = out.pop() {
                tx.write_all(&m).map_err(|e| io_fail("send", e))?;
            }
            let _ = tx.shutdown(Shutdown::Write);
            Ok(())
        }))?);
        let peers: Vec<Arc<Outbox>> = (0..users)
            .filter(|&u| u != user)
            .map(|u| Arc::clone(&outs[room * users + u]))
            .collect();
        let room_outs: Vec<Arc<Outbox>> = (0..users)
            .map(|u| Arc::clone(&outs[room * users + u]))
            .collect();
        let live = Arc::clone(&live[room]);
        threads.push(spawn(Box::new(move || {
            sys::set_nice(nice)?;
            let mut m = [0u8; MSG];
            let mut fwd = 0u64;
            while read_msg(&mut rx, &mut m)? {
                for p in &peers {
                    p.push(m);
                }
                fwd += peers.len() as u64;
            }
            c.add(2, fwd);
            if live.fetch_sub(1, Ordering::AcqRel) == 1 {
                for o in &room_outs {
                    o.close();
                }
            }
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
    let (ready_r, ready_w) = sys::pipe()?;
    let rep = ctx.reporter();
    // The listener moves into the child; the parent's copy is closed when the closure drops.
    let srv = ctx.fork(move || {
        sys::close(ready_r);
        server(listener, (rooms, users, nice), ready_w, c, rep)
    })?;
    sys::close(ready_w);

    let n = rooms * users;
    let barrier = Arc::new(Barrier::new(2 * n + 1));
    let mut workers: Vec<Task> = Vec::with_capacity(2 * n);
    for k in 0..n {
        let mut s = TcpStream::connect(addr).map_err(|e| io_fail("connect 127.0.0.1", e))?;
        s.set_nodelay(true).map_err(|e| io_fail("setsockopt", e))?;
        let mut hello = [0u8; 8];
        hello[..4].copy_from_slice(&((k / users) as u32).to_le_bytes());
        hello[4..].copy_from_slice(&((k % users) as u32).to_le_bytes());
        s.write_all(&hello).map_err(|e| io_fail("send", e))?;
        let mut tx = s.try_clone().map_err(|e| io_fail("dup", e))?;
        let mut rx = s;
        let b = Arc::clone(&barrier);
        workers.push(ctx.thread(move || {
            sys::set_nice(nice)?;
            let m = [b'm'; MSG];
            b.wait();
            for _ in 0..messages {
                tx.write_all(&m).map_err(|e| io_fail("send", e))?;
            }
            let _ = tx.shutdown(Shutdown::Write);
            c.add(0, messages);
            Ok(())
        })?);
        let b = Arc::clone(&barrier);
        let expect = messages * (users as u64 - 1);
        workers.push(ctx.thread(move || {
            sys::set_nice(nice)?;
            let mut m = [0u8; MSG];
            b.wait();
            for i in 0..expect {
                if !read_msg(&mut rx, &mut m)? {
                    return Err(Fail(format!(
                        "chat client: server closed after {i} of {expect} messages"
                    )));
                }
            }
            c.add(1, expect);
            Ok(())
        })?);
    }
    let mut r = [0u8; 1];
    sys::read_full(ready_r, &mut r, "chat server start")?;
    barrier.wait();
    let t0 = sys::now_ns();
    ctx.join_all(workers)?;
    let ns = sys::now_ns() - t0;
    ctx.join_all(vec![srv])?;
    let delivered = (n as u64) * messages * (users as u64 - 1);
    let rate = delivered as f64 / (ns.max(1) as f64 / 1e9);
    let mut out = Outcome::new("messages_per_s", rate, "messages/s", "higher", ns);
    out.counts = c.to_map();
    out.counts.insert("server_threads".into(), (2 * n) as f64);
    Ok(out)
}
