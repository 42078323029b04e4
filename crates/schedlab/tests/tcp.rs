//! TCP over loopback as 2.4 ran it (`kernel/tcp.rs`): Nagle coalesces back-to-back small
//! writes while a short segment is unacknowledged, the draining read acknowledges, and a
//! writer that ran out of send buffer gets `tcp_new_space`'s larger one.

use schedlab::kernel::abi::{program, Op, Program, Record};
use schedlab::kernel::Kernel;
use schedlab::sim::{RunConfig, Simulation};
use schedlab::workload::{metric, Metric, Workload};

/// init opens a TCP pair, clones a reader of `msgs` 100-byte messages (which first
/// computes for `reader_delay_ns`), writes `msgs` messages back to back, waits for the
/// reader and closes.
struct Burst {
    msgs: u64,
    reader_delay_ns: u64,
    nodelay: bool,
}

/// The readers' total, the result of both workloads here.
fn bytes_read(rec: &Record) -> Metric {
    let n = rec.count("bytes_read") as f64;
    metric("bytes_read", n, "B", "higher")
}

fn reader(fd: u32, msgs: u64, delay: u64) -> Box<dyn Program> {
    let mut step = 0u64;
    let mut got = 0u64;
    program(move |env| {
        step += 1;
        if step == 1 {
            return Op::Compute { ns: delay, ws: 0 };
        }
        if step > 2 {
            got += env.ret.max(0) as u64;
        }
        if got >= msgs * 100 {
            env.count("bytes_read", got);
            return Op::Exit;
        }
        Op::Read { fd, len: 100 }
    })
}

impl Workload for Burst {
    fn root(&self) -> Box<dyn Program> {
        let (msgs, delay, nodelay) = (self.msgs, self.reader_delay_ns, self.nodelay);
        let mut step = 0u64;
        let mut fd = 0u32;
        program(move |env| {
            step += 1;
            match step {
                1 => Op::TcpPair { nodelay },
                2 => {
                    fd = env.ret as u32;
                    Op::Clone {
                        child: reader(fd + 1, msgs, delay),
                    }
                }
                n if n < 3 + msgs => Op::Write { fd, len: 100 },
                n if n == 3 + msgs => Op::Wait,
                n if n == 4 + msgs => Op::Close { fd },
                _ => Op::Exit,
            }
        })
    }
    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(bytes_read(rec))
    }
}

/// Run `workload` under linux-2.4 on `cpus` CPUs of the 8-way and check its invariants.
fn simulate(name: &str, workload: Box<dyn Workload>, cpus: usize) -> Simulation {
    let cfg = RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: "linux-2.4".into(),
        workload: name.into(),
        seed: 1,
    };
    let mut sim = Simulation::with_workload(cfg, workload).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim.check().unwrap();
    sim
}

fn run(msgs: u64, reader_delay_ns: u64, cpus: usize) -> Simulation {
    let w = Burst {
        msgs,
        reader_delay_ns,
        nodelay: false,
    };
    simulate("burst", Box::new(w), cpus)
}

#[test]
fn with_tcp_nodelay_every_write_leaves_as_its_own_segment() {
    // The busy reader of the Nagle test below: nothing is held for its ACK now.
    let w = Burst {
        msgs: 50,
        reader_delay_ns: 1_000_000,
        nodelay: true,
    };
    let sim = simulate("burst", Box::new(w), 2);
    assert_eq!(sim.k.stats.tcp_segments, 50);
    assert_eq!(sim.report().unwrap().result.value, 5000.0);
}

#[test]
fn nagle_coalesces_back_to_back_writes_while_a_short_segment_is_unacked() {
    // The reader is busy for 1 ms: the first message leaves alone, the other 49 wait in
    // the tail skb for its ACK and leave as one segment.
    let sim = run(50, 1_000_000, 2);
    let s = &sim.k.stats;
    assert_eq!(s.tcp_segments, 2, "segments: {}", s.tcp_segments);
    let r = sim.report().unwrap();
    assert_eq!(r.result.value, 5000.0);
    // Each draining read acknowledges: the first message, then the coalesced 49.
    assert_eq!(s.tcp_acks, 2, "acks: {}", s.tcp_acks);
}

#[test]
fn a_reader_keeping_up_gets_one_segment_per_ack_round() {
    // With a CPU of its own the reader drains as data comes, and each ACK releases what
    // accumulated meanwhile: more segments than two, far fewer than messages.
    let sim = run(200, 0, 2);
    let s = &sim.k.stats;
    assert!(
        s.tcp_segments >= 2 && s.tcp_segments < 200,
        "{}",
        s.tcp_segments
    );
    assert_eq!(
        s.tcp_acks, s.tcp_segments,
        "every segment was drained and acked"
    );
    assert_eq!(sim.report().unwrap().result.value, 20_000.0);
}

#[test]
fn a_writer_that_ran_out_of_send_buffer_gets_tcp_new_space_s_larger_one() {
    // 400 messages = 40 KB held behind an unacknowledged first message: the writer
    // blocks at the 16 KB `tcp_wmem[1]`; the reader's ACK grows sndbuf to `tcp_wmem[2]`.
    let sim = run(400, 2_000_000, 2);
    let caps: Vec<u64> = sim.k.streams.iter().map(|s| s.cap).collect();
    assert!(caps.contains(&(128 * 1024)), "send buffers: {caps:?}");
    assert!(
        caps.contains(&16384),
        "the reverse direction never grew: {caps:?}"
    );
    assert_eq!(sim.report().unwrap().result.value, 40_000.0);
}

/// init opens `pairs` TCP pairs, clones one reader per pair (it reads everything its
/// pair's writers send) and `writers` writer threads, writer `w` sending `msgs` 100-byte
/// messages to pair `w % pairs`; then it reaps them all.
struct Writers {
    writers: u64,
    pairs: u64,
    msgs: u64,
}

fn writer(fd: u32, msgs: u64) -> Box<dyn Program> {
    let mut sent = 0u64;
    program(move |_| {
        sent += 1;
        if sent > msgs {
            return Op::Exit;
        }
        Op::Write { fd, len: 100 }
    })
}

impl Workload for Writers {
    fn root(&self) -> Box<dyn Program> {
        let (writers, pairs, msgs) = (self.writers, self.pairs, self.msgs);
        let per_reader = writers.div_ceil(pairs) * msgs;
        let mut fds: Vec<u32> = Vec::new();
        let mut step = 0u64;
        program(move |env| {
            step += 1;
            if step > 1 && (fds.len() as u64) < pairs && step <= pairs + 1 {
                fds.push(env.ret as u32);
            }
            let opened = pairs + 1;
            match step {
                n if n <= pairs => Op::TcpPair { nodelay: false },
                n if n < opened + pairs => {
                    let p = (n - opened) as usize;
                    Op::Clone {
                        child: reader(fds[p] + 1, per_reader, 0),
                    }
                }
                n if n < opened + pairs + writers => {
                    let w = n - opened - pairs;
                    Op::Clone {
                        child: writer(fds[(w % pairs) as usize], msgs),
                    }
                }
                n if n < opened + 2 * pairs + 2 * writers => Op::Wait,
                _ => Op::Exit,
            }
        })
    }
    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(bytes_read(rec))
    }
}

fn run_writers(writers: u64, pairs: u64, msgs: u64, cpus: usize) -> Simulation {
    let w = Writers {
        writers,
        pairs,
        msgs,
    };
    simulate("writers", Box::new(w), cpus)
}

#[test]
fn writers_on_one_socket_meet_on_its_lock_and_writers_on_their_own_do_not() {
    // Four writers on one socket, on 8 CPUs: their `tcp_sendmsg` calls overlap, so some
    // find the socket owned and sleep in `lock_sock`; everything still arrives.
    let shared = run_writers(4, 1, 200, 8);
    assert!(
        shared.k.stats.sock_lock_waits > 0,
        "no lock_sock waits with 4 writers on one socket"
    );
    assert_eq!(shared.report().unwrap().result.value, 4.0 * 200.0 * 100.0);
    // The same writers each on a connection of their own never wait: a reader takes the
    // lock of the other endpoint.
    let own = run_writers(4, 4, 200, 8);
    assert_eq!(own.k.stats.sock_lock_waits, 0);
    assert_eq!(own.report().unwrap().result.value, 4.0 * 200.0 * 100.0);
}
