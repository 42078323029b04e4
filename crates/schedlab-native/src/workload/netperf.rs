//! netperf TCP_RR and UDP_RR natively, as the model (`schedlab::workload::netperf`) and
//! with its options: per instance a TCP connection on 127.0.0.1 (Nagle on unless
//! `nodelay=on`) or two connected UDP sockets, a netserver process that receives each
//! `req`-byte request and sends a `resp`-byte response, and a netperf process that sends,
//! receives and counts. Over UDP a request is one datagram and one read; the client ends
//! its server with an empty datagram (a datagram socket has no end of file). All start on one go
//! byte; each client measures its own window (`warmup_ms` after go, `duration_ms` long,
//! from the first transaction completed past each mark) and adds its transactions and its
//! rate to the shared counters. Result: the instances' rates summed, transactions/s; the
//! printed table is the model's ([`schedlab::workload::netperf::output`]).

use schedlab::spec::Params;

use crate::runner::{Counters, Ctx, Outcome};
use crate::sys::{self, Fail, Res};

const NAMES: &[&str] = &["transactions", "rate_milli", "window_ns"];

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::netperf::Options::from_params(p);
    let c = Counters::new(NAMES)?;
    let (go_r, go_w) = sys::pipe()?;
    // Each client writes its rate here, one short line (atomic below PIPE_BUF).
    let (rates_r, rates_w) = sys::pipe()?;
    let mut tasks = Vec::new();
    let udp = o.test == "UDP_RR";
    for _ in 0..o.instances {
        let (srv, cli) = if udp {
            sys::udp_socketpair()?
        } else {
            sys::tcp_socketpair()?
        };
        if o.nodelay && !udp {
            sys::set_nodelay(srv)?;
            sys::set_nodelay(cli)?;
        }
        let (req, resp) = (o.req as usize, o.resp as usize);
        tasks.push(ctx.fork(move || {
            sys::close(cli);
            let mut rbuf = vec![0u8; req];
            let wbuf = vec![7u8; resp];
            loop {
                if udp {
                    // One datagram a request; an empty one ends the test.
                    if sys::read(srv, &mut rbuf)? == 0 {
                        return Ok(());
                    }
                    sys::write_full(srv, &wbuf)?;
                    continue;
                }
                // End of file: the client is gone.
                match sys::read(srv, &mut rbuf[..1])? {
                    0 => return Ok(()),
                    _ => {
                        if req > 1 {
                            sys::read_full(srv, &mut rbuf[1..], "netserver recv")?;
                        }
                    }
                }
                sys::write_full(srv, &wbuf)?;
            }
        })?);
        let (warmup, duration) = (o.warmup_ms * 1_000_000, o.duration_ms * 1_000_000);
        tasks.push(ctx.fork(move || {
            sys::close(srv);
            sys::poll_in(go_r)?;
            let go = sys::now_ns();
            let wbuf = vec![5u8; req];
            let mut rbuf = vec![0u8; resp];
            let (mut n, mut start) = (0u64, None);
            loop {
                sys::write_full(cli, &wbuf)?;
                if udp {
                    sys::read(cli, &mut rbuf)?;
                } else {
                    sys::read_full(cli, &mut rbuf, "netperf recv")?;
                }
                n += 1;
                let now = sys::now_ns();
                match start {
                    None if now >= go + warmup => start = Some((now, n)),
                    Some((t0, n0)) if now >= t0 + duration => {
                        let (k, ns) = (n - n0, now - t0);
                        c.add(0, k);
                        c.add(1, k * 1_000_000_000_000 / ns);
                        c.add(2, ns);
                        let line = format!("{:.2}\n", k as f64 * 1e9 / ns as f64);
                        sys::write_full(rates_w, line.as_bytes())?;
                        if udp {
                            sys::write(cli, &[])?;
                        }
                        sys::close(cli);
                        return Ok(());
                    }
                    _ => {}
                }
            }
        })?);
        sys::close(srv);
        sys::close(cli);
    }
    sys::write_full(go_w, b"*")?;
    ctx.join_all(tasks)?;
    sys::close(rates_w);
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let k = sys::read(rates_r, &mut buf)?;
        if k == 0 {
            break;
        }
        text.extend_from_slice(&buf[..k]);
    }
    sys::close(rates_r);
    let rates: Vec<f64> = String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    let total = c.get(1) as f64 / 1000.0;
    if c.get(0) == 0 {
        return Err(Fail("netperf: no transaction in the window".into()));
    }
    let window_ns = c.get(2) / o.instances.max(1);
    let mut out = Outcome::new(
        "transactions_per_s",
        total,
        "transactions/s",
        "higher",
        window_ns,
    );
    out.output = Some(schedlab::workload::netperf::output(&o, window_ns, &rates));
    out.counts = c.to_map();
    Ok(out)
}
