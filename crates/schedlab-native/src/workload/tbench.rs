//! tbench (benchmarks.md §5) over TCP loopback, as the simulated one runs it: one forked
//! server process per connection (`tbench_srv`'s fork on `accept`), one client process per
//! connection. Each client makes one 8-byte set-up exchange, announces itself ready and
//! waits for the start byte; then it runs `ops` exchanges drawn from the NetBench mix that
//! the simulated tbench draws from (`schedlab::workload::tbench::exchange`, one random
//! stream per client): write a request whose 4-byte header is its length and whose next 4
//! bytes are the reply's length, read the reply's 4-byte header, then its body. The server
//! reads the header, the body, and writes the reply; at end of file it exits. The leader
//! times from the start byte until every client is reaped, and reports file payload moved
//! per second in tbench's MB (10^6 bytes), as the simulated tbench does.
//!
//! Sockets keep the kernel's defaults (Nagle on), as the model's connections do.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use schedlab::engine::SimRng;
use schedlab::spec::Params;
use schedlab::workload::tbench::{exchange, Options, MB};

use crate::runner::{Counters, Ctx, Outcome, Task};
use crate::sys::{self, explain, Fail, Res};

const C_EXCHANGES: usize = 0;
const C_PAYLOAD: usize = 1;
const C_REPLIES: usize = 2;
const NAMES: &[&str] = &["exchanges", "payload_bytes", "replies"];

/// The largest request or reply of the mix (a 64 KB write with its header), with room.
const BUF: usize = 128 * 1024;

fn io_fail(call: &str, e: std::io::Error) -> Fail {
    match e.raw_os_error() {
        Some(n) => explain(call, n),
        None => Fail(format!("{call} failed: {e}")),
    }
}

/// Read exactly `buf.len()` bytes; `Ok(false)` at end of file before the first byte.
fn read_all(s: &mut TcpStream, buf: &mut [u8], who: &str) -> Res<bool> {
    let mut done = 0;
    while done < buf.len() {
        match s.read(&mut buf[done..]) {
            Ok(0) if done == 0 => return Ok(false),
            Ok(0) => {
                return Err(Fail(format!(
                    "tbench: {who}: connection closed mid-message"
                )))
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_fail("recv", e)),
        }
    }
    Ok(true)
}

fn be32(b: &[u8]) -> usize {
    u32::from_be_bytes(b[..4].try_into().expect("4 bytes")) as usize
}

/// `tbench_srv`'s per-connection child: length, body (whose first word is the reply's
/// length), reply; until the client closes.
fn server(mut s: TcpStream, c: &Counters) -> Res<()> {
    let mut buf = vec![0u8; BUF];
    let mut replies = 0;
    loop {
        if !read_all(&mut s, &mut buf[..4], "server")? {
            break;
        }
        let send = be32(&buf);
        if !(8..=BUF).contains(&send) {
            return Err(Fail(format!(
                "tbench: server read a request of {send} bytes"
            )));
        }
        read_all(&mut s, &mut buf[4..send], "server")?;
        let recv = be32(&buf[4..]);
        if !(4..=BUF).contains(&recv) {
            return Err(Fail(format!(
                "tbench: server asked for a reply of {recv} bytes"
            )));
        }
        buf[..4].copy_from_slice(&(recv as u32).to_be_bytes());
        s.write_all(&buf[..recv]).map_err(|e| io_fail("send", e))?;
        replies += 1;
    }
    c.add(C_REPLIES, replies);
    Ok(())
}

/// One exchange from the client's side: request of `send` bytes, reply of `recv`.
fn client_exchange(s: &mut TcpStream, buf: &mut [u8], send: usize, recv: usize) -> Res<()> {
    buf[..4].copy_from_slice(&(send as u32).to_be_bytes());
    buf[4..8].copy_from_slice(&(recv as u32).to_be_bytes());
    s.write_all(&buf[..send]).map_err(|e| io_fail("send", e))?;
    if !read_all(s, &mut buf[..4], "client")? || be32(buf) != recv {
        return Err(Fail("tbench: client read a bad reply header".into()));
    }
    read_all(s, &mut buf[4..recv], "client")?;
    Ok(())
}

/// A client: set-up exchange, ready, wait for go, `ops` exchanges of the mix, close.
fn client(mut s: TcpStream, k: u64, ops: u64, gate: (i32, i32), c: &Counters) -> Res<()> {
    let mut buf = vec![0u8; BUF];
    client_exchange(&mut s, &mut buf, 8, 8)?;
    sys::write_full(gate.0, b"*")?;
    sys::poll_in(gate.1)?;
    let mut rng = SimRng::stream(1, k);
    let mut payload = 0;
    for _ in 0..ops {
        let (send, recv, bytes) = exchange(&mut rng);
        // The header words need 8 bytes; every request of the mix has more.
        client_exchange(&mut s, &mut buf, send.max(8) as usize, recv as usize)?;
        payload += bytes;
    }
    c.add(C_EXCHANGES, ops);
    c.add(C_PAYLOAD, payload);
    Ok(())
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = Options::from_params(p);
    let c = Counters::new(NAMES)?;
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .map_err(|e| io_fail("bind 127.0.0.1", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| io_fail("getsockname", e))?;
    let (ready_in, ready_out) = sys::pipe()?;
    let (go_in, go_out) = sys::pipe()?;
    let (mut servers, mut clients): (Vec<Task>, Vec<Task>) = (Vec::new(), Vec::new());
    for k in 0..o.clients {
        let cl = TcpStream::connect(addr).map_err(|e| io_fail("connect 127.0.0.1", e))?;
        let (sv, _) = listener.accept().map_err(|e| io_fail("accept", e))?;
        // The server's end of file is the client's close, so no other process may hold
        // the client's end: the server child closes its inherited copy, and the leader's
        // copies go with the closures (dropped here after each fork), so later children
        // inherit neither end.
        let cl_fd = cl.as_raw_fd();
        servers.push(ctx.fork(move || {
            sys::close(cl_fd);
            server(sv, &c)
        })?);
        clients.push(ctx.fork(move || client(cl, k, o.ops, (ready_out, go_in), &c))?);
    }
    drop(listener);
    let mut one = [0u8; 1];
    for _ in 0..o.clients {
        sys::read_full(ready_in, &mut one, "tbench ready barrier")?;
    }
    let t0 = sys::now_ns();
    sys::write_full(go_out, b"*")?;
    ctx.join_all(clients)?;
    let ns = sys::now_ns() - t0;
    ctx.join_all(servers)?;
    let mbs = c.get(C_PAYLOAD) as f64 / MB / (ns.max(1) as f64 / 1e9);
    let mut out = Outcome::new("mb_per_s", mbs, "MB/s", "higher", ns);
    out.counts = c.to_map();
    Ok(out)
}
