//! `netperf -t TCP_RR` and `-t UDP_RR` over loopback (Rick Jones, HP; netperf 2.7):
//! `instances` netperf and netserver pairs, each a TCP connection (or a connected pair of
//! UDP sockets) on 127.0.0.1 carrying one `req`-byte request and one `resp`-byte response
//! at a time; the figure is transactions per second, summed over the instances as one
//! reports parallel netperfs.
//!
//! # The original
//!
//! netserver accepts the data connection and forks a child for it; the child loops:
//! `recv` the request (looping until all `req` bytes are in), `send` the response. The
//! netperf client loops for `-l` seconds: `send` the request, `recv` the response (again
//! until complete), count a transaction. No socket option is set by default (Nagle on;
//! `-D` sets `TCP_NODELAY`). It prints its classic table: the socket sizes, request and
//! response sizes, elapsed time and the transaction rate.
//!
//! # The model
//!
//! init opens one TCP pair per instance (the connection netserver's child accepts; for
//! UDP_RR two UDP sockets connected to each other, `kernel/udp.rs`), a go
//! pipe, forks each server, then each client, and writes go. Each client's transactions
//! are counted in the process group's shared memory; the window opens `warmup_ms` after go
//! at the first transaction completed past it and closes `duration_ms` later, when every
//! instance's count is read: an instance's rate is its transactions in the window over the
//! window's length. Not modelled: the control connection's exchanges before and after the
//! test; UDP_RR's retransmission of a lost request (netperf's `-e` timeout: on loopback
//! with one transaction in flight nothing is lost, and the model counts drops).

use std::sync::Mutex;

use crate::engine::{Time, MS};
use crate::kernel::abi::{errno_name, Env, Op, Program, Record};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{fail, step, Arrive, Chan, Open, Reads, Spawn};
use super::window::Window;
use super::{metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `netperf` (TCP_RR, UDP_RR), under its test-specific options'
    /// meaning.
    pub struct Options in PARAMS {
        test: String = choice("TCP_RR", &["TCP_RR", "UDP_RR"])
            .help("the test (-t): request/response over TCP, or over UDP datagrams")
            .source("netperf 2.7 manual, \"Request/Response Tests\"");
        instances: u64 = int("1", 1, 4096).help("netperf/netserver pairs run at once")
            .source("netperf 2.7 manual, \"Using Netperf to Measure Aggregate Performance\"");
        req: u64 = int("1", 1, 1_048_576).help("request size, bytes (-r REQ,RESP)")
            .unit("bytes")
            .source("netperf 2.7: TCP_RR default -r 1,1");
        resp: u64 = int("1", 1, 1_048_576).help("response size, bytes (-r REQ,RESP)")
            .unit("bytes")
            .source("netperf 2.7: TCP_RR default -r 1,1");
        nodelay: bool = flag("off").help("TCP_NODELAY on both ends (-D)")
            .source("netperf 2.7: -D");
        duration_ms: u64 = int("1000", 1, 3_600_000).help("measuring window, ms (netperf -l is 10 s)")
            .unit("ms")
            .source("netperf 2.7: -l 10");
        warmup_ms: u64 = int("100", 0, 3_600_000).help("time after go before the window opens, ms")
            .unit("ms")
            .source("schedlab");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "netperf",
    about: "netperf TCP_RR or UDP_RR: request/response pairs over loopback -> transactions/s",
    small: &[
        "netperf:instances=2,duration_ms=5,warmup_ms=1",
        "netperf:test=UDP_RR,instances=2,duration_ms=5,warmup_ms=1",
    ],
    metric: "transactions/s",
    params: PARAMS,
    build,
};

fn build(p: &Params, _m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    Ok(Box::new(Netperf {
        window: Mutex::new(new_window(&o)),
        o,
    }))
}

/// Where the window records the transaction count.
const KEYS: [&str; 2] = ["transactions_start", "transactions_end"];

fn new_window(o: &Options) -> Window {
    Window::new(o.warmup_ms * MS, o.duration_ms * MS, KEYS)
}

/// The netperf workload.
pub struct Netperf {
    o: Options,
    /// The run's window (a new one each run).
    window: Mutex<Window>,
}

/// netserver's child: receive a request, send the response, for ever.
struct Server {
    fd: Fd,
    req: Reads,
    req_bytes: u64,
    resp: u64,
}

impl Program for Server {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        step!(self.req.step(env));
        self.req.restart(self.req_bytes, 1);
        Op::Write {
            fd: self.fd,
            len: self.resp,
        }
    }

    fn comm(&self) -> Option<String> {
        Some("netserver".into())
    }
}

/// A netperf client: wait for go, then request, response, count, for ever.
struct Client {
    i: usize,
    fd: Fd,
    start: Arrive,
    req: u64,
    resp: Reads,
    resp_bytes: u64,
    sent: bool,
    reading: bool,
    window: Window,
}

impl Program for Client {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        step!(self.start.step(env));
        if std::mem::take(&mut self.sent) {
            if env.ret < 0 {
                let msg = format!("netperf: send returned {}", errno_name(env.ret));
                return fail(env, msg);
            }
            self.resp.restart(self.resp_bytes, 1);
        }
        if self.reading {
            step!(self.resp.step(env));
            self.reading = false;
            self.window.done_by(env, self.i);
        }
        self.sent = true;
        self.reading = true;
        Op::Write {
            fd: self.fd,
            len: self.req,
        }
    }

    fn comm(&self) -> Option<String> {
        Some("netperf".into())
    }
}

/// init: the go pipe, a connection per instance, the servers, the clients, go.
struct Main {
    phase: u8,
    pipe: Open,
    conns: Open,
    servers: Spawn,
    clients: Spawn,
    o: Options,
    window: Window,
}

impl Program for Main {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            match self.phase {
                0 => step!(self.pipe.step(env)),
                1 => step!(self.conns.step(env)),
                2 => {
                    let (conns, o) = (self.conns.fds().to_vec(), self.o.clone());
                    step!(self.servers.step(env, |i, _| {
                        // The server's end of connection i: the pair's second fd.
                        let fd = conns[i as usize] + 1;
                        Box::new(Server {
                            fd,
                            req: Reads::new(fd, o.req, 1, |_, ret| {
                                format!("netserver: recv returned {}", errno_name(ret))
                            }),
                            req_bytes: o.req,
                            resp: o.resp,
                        })
                    }));
                }
                3 => {
                    let (conns, o, go) = (
                        self.conns.fds().to_vec(),
                        self.o.clone(),
                        self.pipe.fds()[0],
                    );
                    let window = self.window.clone();
                    step!(self.clients.step(env, |i, _| {
                        let fd = conns[i as usize];
                        Box::new(Client {
                            i: i as usize,
                            fd,
                            start: Arrive::go(go),
                            req: o.req,
                            resp: Reads::new(fd, o.resp, 1, |_, ret| {
                                format!("netperf: recv returned {}", errno_name(ret))
                            }),
                            resp_bytes: o.resp,
                            sent: false,
                            reading: false,
                            window: window.clone(),
                        })
                    }));
                }
                4 => {
                    self.window.go(env);
                    self.phase += 1;
                    return Op::Write {
                        fd: self.pipe.fds()[0] + 1,
                        len: 1,
                    };
                }
                _ => return Op::Wait,
            }
            self.phase += 1;
        }
    }
}

impl Workload for Netperf {
    fn root(&self) -> Box<dyn Program> {
        let n = self.o.instances;
        *self.window.lock().expect("netperf window") = new_window(&self.o);
        let chan = match (self.o.test.as_str(), self.o.nodelay) {
            ("UDP_RR", _) => Chan::Udp,
            (_, true) => Chan::TcpNoDelay,
            (_, false) => Chan::Tcp,
        };
        Box::new(Main {
            phase: 0,
            pipe: Open::pipes(1, |_, ret| {
                format!("netperf: pipe() failed ({})", errno_name(ret))
            }),
            conns: Open::new(chan, n, |i, ret| {
                format!("netperf: connection {} failed ({})", i + 1, errno_name(ret))
            }),
            servers: Spawn::forks(n, |i, ret| {
                format!("netserver: fork {} refused ({})", i + 1, errno_name(ret))
            }),
            clients: Spawn::forks(n, |i, ret| {
                format!("netperf: fork {} refused ({})", i + 1, errno_name(ret))
            }),
            o: self.o.clone(),
            window: self.window.lock().expect("netperf window").clone(),
        })
    }

    fn result(&self, _rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let w = self.window.lock().expect("netperf window");
        let (ns, done) = w
            .by_worker()
            .ok_or("netperf: the measuring window never closed")?;
        let mut done = done;
        done.resize(self.o.instances as usize, 0);
        let rates: Vec<f64> = done.iter().map(|&n| n as f64 * 1e9 / ns as f64).collect();
        let total: f64 = rates.iter().sum();
        let mut m = metric("transactions_per_s", total, "transactions/s", "higher");
        m.details = Some(
            serde_json::json!({ "instances": rates.iter().map(|r| (r * 100.0).round() / 100.0).collect::<Vec<_>>() }),
        );
        m.output = Some(output(&self.o, ns, &rates));
        Ok(m)
    }
}

/// netperf's TCP_RR or UDP_RR table, one per instance, as it prints it (the socket sizes
/// are Linux's defaults: `tcp_wmem[1]` and `tcp_rmem[1]`, or `wmem_default` and
/// `rmem_default`).
pub fn output(o: &Options, window_ns: Time, rates: &[f64]) -> String {
    let secs = window_ns as f64 / 1e9;
    let (proto, send, recv) = if o.test == "UDP_RR" {
        ("UDP", 212992, 212992)
    } else {
        ("TCP", 16384, 131072)
    };
    rates
        .iter()
        .map(|r| {
            format!(
                "MIGRATED {proto} REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost () port 0 AF_INET : {}first burst 0\n\
                 Local /Remote\n\
                 Socket Size   Request  Resp.   Elapsed  Trans.\n\
                 Send   Recv   Size     Size    Time     Rate         \n\
                 bytes  Bytes  bytes    bytes   secs.    per sec   \n\n\
                 {:<6} {:<6} {:<8} {:<7} {:<8.2} {:<11.2}\n\
                 {:<6} {:<6}",
                if o.nodelay && o.test != "UDP_RR" { "nodelay : " } else { "" },
                send,
                recv,
                o.req,
                o.resp,
                secs,
                r,
                send,
                recv
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
