//! `hackbench` (Rusty Russell, LKML 11 Dec 2001; the rt-tests / `perf bench sched
//! messaging` options): groups of senders flooding receivers (benchmarks.md §1).
//!
//! # The original
//!
//! `hackbench [-pipe] <groups>`: a group is `fds` = 20 receivers and 20 senders. The parent
//! builds the groups one after another: for each receiver it creates a channel (an AF_UNIX
//! `socketpair()`, or a `pipe()` with `-pipe`) and forks the receiver at once; then it forks
//! the 20 senders, each holding the write ends of all 20 channels of its group. Every child
//! writes one byte to a shared "ready" pipe and blocks in `poll()` on a shared "wake" pipe.
//! The parent reads one ready byte per child, takes the time, writes a single byte to the
//! wake pipe — every poller returns at once, a thundering herd of 40·N wake-ups — and
//! `wait()`s for every child before taking the time again. Each sender does `loops` rounds
//! of one `datasize`-byte write to each receiver of its group, retrying partial writes;
//! each receiver reads `fds · loops` messages, looping on short reads. The figure is
//! `Time: <seconds>`, from "go" to the last child reaped. Later versions added `-T`
//! (threads instead of processes), `-l` loops, `-s` datasize and `-f` fds.
//!
//! # The model
//!
//! The same programs, system call for system call (the parent's `close()`s of its copies of
//! the channel ends are left out: the model's file table is global, so a `close` would
//! close the receiver's end too — and it changes nothing the benchmark measures). Thread
//! mode uses `clone()` (threads of the parent's mm) instead of `fork()`.
//!
//! Resource limits (benchmarks.md §1.4): a fork beyond the preset's 2.4 `RLIMIT_NPROC`
//! (`max_threads / 2`) gets `EAGAIN`, and a socket or pipe beyond `file-max` gets `ENFILE`;
//! hackbench `barf()`ed and exited, and the model fails the run with one line naming the
//! limit, its value, the machine and what the requested groups needed.
//!
//! What it counts: `messages_sent`, `messages_received`, `bytes_received` (at each child's
//! exit), `children` (forked), and the marks `start` (before "go"), `first_send` (each
//! sender's first write), `end` (last child reaped).

use std::sync::Arc;

use crate::kernel::abi::{Env, Op, Program, Record, EAGAIN, ENFILE};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::{interval, metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `hackbench`, declared once (the native runner reads them too).
    pub struct Options in PARAMS {
        groups: u64 = int("10", 1, 100_000).help("groups of fds senders + fds receivers (rt-tests default 10)")
            .source("benchmarks.md §1");
        loops: u64 = int("100", 1, 10_000_000).help("rounds of one message to every receiver, per sender")
            .source("benchmarks.md §1");
        datasize: u64 = int("100", 1, 1_048_576).help("bytes per message (DATASIZE)")
            .unit("bytes")
            .source("benchmarks.md §1");
        fds: u64 = int("20", 1, 1000).help("senders and receivers per group")
            .source("benchmarks.md §1");
        pipe: bool = flag("off").help("pipes instead of AF_UNIX socketpairs (-pipe)")
            .source("benchmarks.md §1");
        threads: bool = flag("off").help("threads (clone) instead of processes (-T)")
            .source("benchmarks.md §1");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hackbench",
    about: "hackbench: groups of 20 senders x 20 receivers, 100-byte messages, ready/go barrier",
    metric: "s",
    params: PARAMS,
    build,
};

fn build(p: &Params, m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    let limits = &m.preset.limits;
    Ok(Box::new(Hackbench {
        shape: Shape {
            groups: o.groups,
            loops: o.loops,
            datasize: o.datasize,
            fds: o.fds,
            pipe: o.pipe,
            threads: o.threads,
        },
        machine: m.preset.name,
        ram_mb: limits.ram_mb,
        // The smallest of the three task limits of sys_fork (B§1.4): RLIMIT_NPROC,
        // max_threads and PID_MAX.
        task_limit: limits.nproc.min(limits.max_threads).min(32768),
        nproc_binds: limits.nproc <= limits.max_threads.min(32768),
        file_max: limits.file_max,
    }))
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    groups: u64,
    loops: u64,
    datasize: u64,
    fds: u64,
    pipe: bool,
    threads: bool,
}

impl Shape {
    fn children(&self) -> u64 {
        2 * self.fds * self.groups
    }

    /// Messages each sender writes and each receiver reads.
    fn per_child(&self) -> u64 {
        self.fds * self.loops
    }
}

/// The hackbench workload.
pub struct Hackbench {
    shape: Shape,
    machine: &'static str,
    ram_mb: u64,
    task_limit: u64,
    nproc_binds: bool,
    file_max: u64,
}

/// What every child shares: the ready pipe's write end and the wake pipe's read end.
#[derive(Clone, Copy)]
struct Barrier {
    ready_out: Fd,
    wakefd: Fd,
}

/// The two barrier steps every child takes before its work (`ready()` in hackbench).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pre {
    Ready,
    Poll,
    Go,
}

impl Pre {
    /// The next barrier op, or `None` once past "go".
    fn step(&mut self, b: Barrier, env: &mut Env<'_>, who: &str) -> Option<Op> {
        match *self {
            Pre::Ready => {
                *self = Pre::Poll;
                Some(Op::Write {
                    fd: b.ready_out,
                    len: 1,
                })
            }
            Pre::Poll => {
                if env.ret != 1 {
                    env.fail(format!(
                        "hackbench: {who}: ready write returned {}",
                        env.ret
                    ));
                    return Some(Op::Exit);
                }
                *self = Pre::Go;
                Some(Op::Poll {
                    fds: vec![b.wakefd],
                })
            }
            Pre::Go => None,
        }
    }
}

/// A receiver: `num_packets` messages of `datasize` bytes from `in_fd`.
struct Receiver {
    pre: Pre,
    bar: Barrier,
    in_fd: Fd,
    datasize: u64,
    left: u64,
    total: u64,
    done: u64,
    reading: bool,
}

impl Program for Receiver {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        if let Some(op) = self.pre.step(self.bar, env, "receiver") {
            return op;
        }
        if self.reading {
            if env.ret <= 0 {
                env.fail(format!(
                    "hackbench: receiver: read returned {} with {} messages to go",
                    env.ret, self.left
                ));
                return Op::Exit;
            }
            self.done += env.ret as u64;
            if self.done == self.datasize {
                self.done = 0;
                self.left -= 1;
            }
        }
        if self.left == 0 {
            env.count("messages_received", self.total);
            env.count("bytes_received", self.total * self.datasize);
            return Op::Exit;
        }
        self.reading = true;
        Op::Read {
            fd: self.in_fd,
            len: self.datasize - self.done,
        }
    }
}

/// A sender: `loops` rounds of one message to each of `out_fds`.
struct Sender {
    pre: Pre,
    bar: Barrier,
    out_fds: Arc<[Fd]>,
    datasize: u64,
    loops: u64,
    round: u64,
    j: usize,
    done: u64,
    writing: bool,
}

impl Program for Sender {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        if let Some(op) = self.pre.step(self.bar, env, "sender") {
            return op;
        }
        if self.writing {
            if env.ret <= 0 {
                env.fail(format!("hackbench: sender: write returned {}", env.ret));
                return Op::Exit;
            }
            self.done += env.ret as u64;
            if self.done == self.datasize {
                self.done = 0;
                self.j += 1;
                if self.j == self.out_fds.len() {
                    self.j = 0;
                    self.round += 1;
                }
            }
        } else {
            env.mark("first_send");
        }
        if self.round == self.loops {
            env.count("messages_sent", self.loops * self.out_fds.len() as u64);
            return Op::Exit;
        }
        self.writing = true;
        Op::Write {
            fd: self.out_fds[self.j],
            len: self.datasize - self.done,
        }
    }
}

/// The parent's steps; `issued` once the step's system call has been asked for.
#[derive(Clone, Copy)]
enum St {
    ReadyPipe,
    WakePipe,
    /// Channel `i` of group `g`.
    Channel {
        g: u64,
        i: u64,
    },
    /// Receiver `i` of group `g`, on the channel whose read end is `fd`.
    Receiver {
        g: u64,
        i: u64,
    },
    /// Sender `i` of group `g`.
    Sender {
        g: u64,
        i: u64,
    },
    /// Reading ready bytes; `n` read so far.
    Ready {
        n: u64,
    },
    Go,
    /// Reaping; `n` reaped so far.
    Reap {
        n: u64,
    },
    Done,
}

struct Parent {
    h: HackbenchInfo,
    st: St,
    issued: bool,
    bar: Barrier,
    ready_in: Fd,
    wake_out: Fd,
    /// Write ends of the current group's channels.
    out_fds: Vec<Fd>,
    forked: u64,
}

/// What the parent needs from [`Hackbench`] (copied: programs own their data).
#[derive(Clone, Copy)]
struct HackbenchInfo {
    s: Shape,
    machine: &'static str,
    ram_mb: u64,
    task_limit: u64,
    nproc_binds: bool,
    file_max: u64,
}

impl Parent {
    fn new(h: HackbenchInfo) -> Parent {
        Parent {
            h,
            st: St::ReadyPipe,
            issued: false,
            bar: Barrier {
                ready_out: 0,
                wakefd: 0,
            },
            ready_in: 0,
            wake_out: 0,
            out_fds: Vec::with_capacity(h.s.fds as usize),
            forked: 0,
        }
    }

    fn channel_failed(&self, env: &mut Env<'_>, what: &str) -> Op {
        let s = &self.h.s;
        let msg = if env.ret == ENFILE {
            format!(
                "hackbench: {what} failed with ENFILE: file-max = {} open files reached on {} \
                 (2.4.16 NR_FILE); {} groups need {} files (4 + 2 x {} x {} groups)",
                self.h.file_max,
                self.h.machine,
                s.groups,
                4 + 2 * s.fds * s.groups,
                s.fds,
                s.groups
            )
        } else {
            format!("hackbench: {what} failed ({})", env.ret)
        };
        env.fail(msg);
        Op::Exit
    }

    fn fork_failed(&self, env: &mut Env<'_>) -> Op {
        let s = &self.h.s;
        let call = if s.threads { "clone()" } else { "fork()" };
        let msg = if env.ret == EAGAIN {
            let limit = if self.h.nproc_binds {
                format!(
                    "RLIMIT_NPROC = {} tasks per user reached on {} (2.4 default: max_threads / 2 \
                     for {} MB of RAM)",
                    self.h.task_limit, self.h.machine, self.h.ram_mb
                )
            } else {
                format!(
                    "the task limit of {} ({}) was reached",
                    self.h.machine, self.h.task_limit
                )
            };
            format!(
                "hackbench: {call} of child {} refused with EAGAIN: {limit}; {} groups need {} \
                 tasks ({} per group of fds={}, plus the parent)",
                self.forked + 1,
                s.groups,
                s.children() + 1,
                2 * s.fds,
                s.fds
            )
        } else {
            format!("hackbench: {call} failed ({})", env.ret)
        };
        env.fail(msg);
        Op::Exit
    }

    fn spawn(&mut self, child: Box<dyn Program>) -> Op {
        self.issued = true;
        if self.h.s.threads {
            Op::Clone { child }
        } else {
            Op::Fork { child }
        }
    }

    /// The step after group `g`'s channel/receiver `i` or sender `i`.
    fn after_sender(&self, g: u64, i: u64) -> St {
        let s = &self.h.s;
        if i + 1 < s.fds {
            St::Sender { g, i: i + 1 }
        } else if g + 1 < s.groups {
            St::Channel { g: g + 1, i: 0 }
        } else {
            St::Ready { n: 0 }
        }
    }
}

impl Program for Parent {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        let s = self.h.s;
        loop {
            let issued = std::mem::take(&mut self.issued);
            match self.st {
                St::ReadyPipe => {
                    if !issued {
                        self.issued = true;
                        return Op::Pipe;
                    }
                    if env.ret < 0 {
                        return self.channel_failed(env, "pipe() for the ready channel");
                    }
                    self.ready_in = env.ret as Fd;
                    self.bar.ready_out = self.ready_in + 1;
                    self.st = St::WakePipe;
                }
                St::WakePipe => {
                    if !issued {
                        self.issued = true;
                        return Op::Pipe;
                    }
                    if env.ret < 0 {
                        return self.channel_failed(env, "pipe() for the wake channel");
                    }
                    self.bar.wakefd = env.ret as Fd;
                    self.wake_out = self.bar.wakefd + 1;
                    self.st = St::Channel { g: 0, i: 0 };
                }
                St::Channel { g, i } => {
                    if !issued {
                        self.issued = true;
                        return if s.pipe { Op::Pipe } else { Op::SocketPair };
                    }
                    if env.ret < 0 {
                        let what = format!(
                            "{} for receiver {} of group {}",
                            if s.pipe { "pipe()" } else { "socketpair()" },
                            i + 1,
                            g + 1
                        );
                        return self.channel_failed(env, &what);
                    }
                    let fd = env.ret as Fd;
                    if i == 0 {
                        self.out_fds.clear();
                    }
                    // fds[0] to the receiver, fds[1] to the senders (as hackbench).
                    self.out_fds.push(fd + 1);
                    self.st = St::Receiver { g, i };
                    return self.spawn(Box::new(Receiver {
                        pre: Pre::Ready,
                        bar: self.bar,
                        in_fd: fd,
                        datasize: s.datasize,
                        left: s.per_child(),
                        total: s.per_child(),
                        done: 0,
                        reading: false,
                    }));
                }
                St::Receiver { g, i } => {
                    debug_assert!(issued);
                    if env.ret < 0 {
                        return self.fork_failed(env);
                    }
                    self.forked += 1;
                    if i + 1 < s.fds {
                        self.st = St::Channel { g, i: i + 1 };
                        continue;
                    }
                    self.st = St::Sender { g, i: 0 };
                    let out: Arc<[Fd]> = self.out_fds.as_slice().into();
                    return self.spawn(Box::new(Sender {
                        pre: Pre::Ready,
                        bar: self.bar,
                        out_fds: out,
                        datasize: s.datasize,
                        loops: s.loops,
                        round: 0,
                        j: 0,
                        done: 0,
                        writing: false,
                    }));
                }
                St::Sender { g, i } => {
                    debug_assert!(issued);
                    if env.ret < 0 {
                        return self.fork_failed(env);
                    }
                    self.forked += 1;
                    self.st = self.after_sender(g, i);
                    if let St::Sender { .. } = self.st {
                        let out: Arc<[Fd]> = self.out_fds.as_slice().into();
                        return self.spawn(Box::new(Sender {
                            pre: Pre::Ready,
                            bar: self.bar,
                            out_fds: out,
                            datasize: s.datasize,
                            loops: s.loops,
                            round: 0,
                            j: 0,
                            done: 0,
                            writing: false,
                        }));
                    }
                }
                St::Ready { n } => {
                    if issued {
                        if env.ret != 1 {
                            env.fail(format!(
                                "hackbench: parent: ready read returned {}",
                                env.ret
                            ));
                            return Op::Exit;
                        }
                        self.st = St::Ready { n: n + 1 };
                        continue;
                    }
                    if n < s.children() {
                        self.issued = true;
                        return Op::Read {
                            fd: self.ready_in,
                            len: 1,
                        };
                    }
                    env.count("children", self.forked);
                    self.st = St::Go;
                }
                St::Go => {
                    if !issued {
                        // gettimeofday(&start), then kick them off.
                        env.mark("start");
                        self.issued = true;
                        return Op::Write {
                            fd: self.wake_out,
                            len: 1,
                        };
                    }
                    if env.ret != 1 {
                        env.fail(format!(
                            "hackbench: parent: wake write returned {}",
                            env.ret
                        ));
                        return Op::Exit;
                    }
                    self.st = St::Reap { n: 0 };
                }
                St::Reap { n } => {
                    if issued {
                        if env.ret < 0 {
                            env.fail(format!("hackbench: parent: wait returned {}", env.ret));
                            return Op::Exit;
                        }
                        self.st = St::Reap { n: n + 1 };
                        continue;
                    }
                    if n < s.children() {
                        self.issued = true;
                        return Op::Wait;
                    }
                    env.mark("end");
                    self.st = St::Done;
                }
                St::Done => return Op::Exit,
            }
        }
    }
}

impl Hackbench {
    fn info(&self) -> HackbenchInfo {
        HackbenchInfo {
            s: self.shape,
            machine: self.machine,
            ram_mb: self.ram_mb,
            task_limit: self.task_limit,
            nproc_binds: self.nproc_binds,
            file_max: self.file_max,
        }
    }
}

impl Workload for Hackbench {
    fn root(&self) -> Box<dyn Program> {
        Box::new(Parent::new(self.info()))
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        let ns = interval(rec, "start", "end")?;
        let want = self.shape.children() / 2 * self.shape.per_child();
        for key in ["messages_sent", "messages_received"] {
            if rec.count(key) != want {
                return Err(format!(
                    "hackbench: {} {key}, expected {want}",
                    rec.count(key)
                ));
            }
        }
        Ok(metric("seconds", ns as f64 / 1e9, "s", "lower"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimRng;
    use crate::{RunConfig, SimError, Simulation};

    fn sim(cpus: usize, spec: &str) -> Simulation {
        Simulation::new(RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(cpus),
            policy: "fifo".into(),
            workload: spec.into(),
            seed: 1,
        })
        .unwrap()
    }

    fn run(cpus: usize, spec: &str) -> Simulation {
        let mut s = sim(cpus, spec);
        s.run(&mut |_, _| {}).unwrap();
        s
    }

    #[test]
    fn every_sender_writes_to_every_receiver_of_its_group() {
        let s = run(4, "hackbench:groups=2,loops=10");
        // 2 groups x 20 senders x 10 loops x 20 receivers.
        assert_eq!(s.k.rec.count("messages_sent"), 8000);
        assert_eq!(s.k.rec.count("messages_received"), 8000);
        assert_eq!(s.k.rec.count("bytes_received"), 800_000);
        assert_eq!(s.k.rec.count("children"), 80);
        assert_eq!(s.k.stats.forks, 80);
        let written: u64 = s.k.streams.iter().map(|st| st.written).sum();
        // Messages, one ready byte per child, one "go" byte.
        assert_eq!(written, 800_000 + 80 + 1);
        // 2 barrier pipes + 40 socketpairs.
        assert_eq!(s.k.open_files, 4 + 2 * 40);
        assert!(s.k.tasks.iter().filter(|t| !t.is_idle).all(|t| t.mm >= 1));
        let r = s.report().unwrap();
        assert_eq!(
            (r.result.metric.as_str(), r.result.unit.as_str()),
            ("seconds", "s")
        );
        assert!(r.result.value > 0.0 && r.result.value < 1.0);
    }

    #[test]
    fn nothing_is_sent_before_go() {
        let s = run(8, "hackbench:groups=2,loops=5,pipe=on");
        let start = s.k.rec.first("start").unwrap();
        let sends = &s.k.rec.marks["first_send"];
        assert_eq!(sends.len(), 40, "one first send per sender");
        assert!(sends.iter().all(|&t| t > start), "a sender wrote before go");
        // Every child had written its ready byte before "go": the wake pipe got 1 byte
        // after the ready pipe got 80.
        assert_eq!(s.k.streams[0].written, 80);
        assert_eq!(s.k.streams[1].written, 1);
    }

    #[test]
    fn pipe_and_thread_modes_move_the_same_messages() {
        for mode in ["pipe=on", "threads=on", "pipe=on,threads=on"] {
            let s = run(2, &format!("hackbench:groups=1,loops=5,fds=4,{mode}"));
            assert_eq!(s.k.rec.count("messages_received"), 4 * 4 * 5, "{mode}");
            assert_eq!(s.k.stats.forks, 8, "{mode}");
            let threads = mode.contains("threads");
            let shared = s.k.tasks.iter().filter(|t| !t.is_idle).all(|t| t.mm == 1);
            assert_eq!(shared, threads, "{mode}");
        }
    }

    #[test]
    fn more_groups_do_proportionally_more_work() {
        let a = run(4, "hackbench:groups=1,loops=20");
        let b = run(4, "hackbench:groups=4,loops=20");
        let ratio = b.k.stats.syscalls as f64 / a.k.stats.syscalls as f64;
        assert!(ratio > 3.9 && ratio < 4.1, "syscall ratio {ratio}");
    }

    #[test]
    fn too_many_groups_fail_at_setup_with_enfile() {
        // piii700-1m: file-max 8192 (B§1.4): 204 groups fit, the 205th runs out of files.
        let mut s = sim(8, "hackbench:groups=205,loops=1");
        let e = s.run(&mut |_, _| {}).unwrap_err();
        assert!(matches!(e, SimError::Workload(_)));
        let e = e.to_string();
        assert!(
            e.starts_with(
                "workload failed: hackbench: socketpair() for receiver 15 of group 205 failed with ENFILE"
            ) && e.contains("file-max = 8192")
                && e.contains("piii700-1m"),
            "{e}"
        );
        assert!(s.k.rec.first("start").is_none(), "the run failed before go");
    }

    #[test]
    fn a_refused_fork_names_the_process_limit() {
        let hb = Hackbench {
            shape: Shape {
                groups: 300,
                loops: 100,
                datasize: 100,
                fds: 20,
                pipe: false,
                threads: false,
            },
            machine: "piii700-1m",
            ram_mb: 1024,
            task_limit: 8192,
            nproc_binds: true,
            file_max: 1 << 20,
        };
        let mut p = Parent::new(hb.info());
        p.forked = 8191;
        let mut rng = SimRng::new(1);
        let mut rec = Record::default();
        let mut env = Env {
            ret: EAGAIN,
            now: 0,
            pid: 1,
            ctxt: 0,
            rng: &mut rng,
            rec: &mut rec,
        };
        assert!(matches!(p.fork_failed(&mut env), Op::Exit));
        let e = rec.error.unwrap();
        assert_eq!(
            e,
            "hackbench: fork() of child 8192 refused with EAGAIN: RLIMIT_NPROC = 8192 tasks \
             per user reached on piii700-1m (2.4 default: max_threads / 2 for 1024 MB of RAM); \
             300 groups need 12001 tasks (40 per group of fds=20, plus the parent)"
        );
    }
}
