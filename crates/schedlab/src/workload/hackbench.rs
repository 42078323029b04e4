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

use crate::kernel::abi::{errno_name, Env, Op, Program, Record, EAGAIN, ENFILE};
use crate::kernel::chan::Fd;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{fail, step, Arrive, Chan, Gate, How, Open, Reads, Reap, Spawn, Writes};
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
        threads: bool = flag("off").help("threads (clone) instead of processes (-T; perf: -t)")
            .source("benchmarks.md §1");
        inet: bool = flag("off").help("TCP sockets over 127.0.0.1 instead of socketpairs (rt-tests -i/--inet; Nagle on, as it sets no option)")
            .source("rt-tests hackbench.c inet_socketpair()");
        tool: String = choice("rt-tests", &["rt-tests", "perf"]).help("whose output to print: rt-tests hackbench, or perf bench sched messaging (6.12: -p -t -g -l only)")
            .source("rt-tests hackbench.c; tools/perf/bench/sched-messaging.c (6.12)");
    }
}

/// What the tool prints for a run of `seconds`: rt-tests' `hackbench` (its two opening
/// lines and `Time:`) or `perf bench sched messaging` (its default format), each
/// truncating to milliseconds as they do (`tv_usec / 1000`).
pub fn tool_output(o: &Options, seconds: f64) -> String {
    let ms = (seconds * 1000.0).floor() as u64;
    let (whole, frac) = (ms / 1000, ms % 1000);
    let tasks = o.groups * 2 * o.fds;
    if o.tool == "perf" {
        let kind = if o.threads { "threads" } else { "processes" };
        format!(
            "# Running 'sched/messaging' benchmark:\n# {} sender and receiver {kind} per group\n# {} groups == {tasks} {kind} run\n\n {:>14}: {whole}.{frac:03} [sec]",
            o.fds, o.groups, "Total time"
        )
    } else {
        let mode = if o.threads { "threaded" } else { "process" };
        format!(
            "Running in {mode} mode with {} groups using {} file descriptors each (== {tasks} tasks)\nEach sender will pass {} messages of {} bytes\nTime: {whole}.{frac:03}",
            o.groups,
            2 * o.fds,
            o.loops,
            o.datasize
        )
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hackbench",
    about: "hackbench: groups of 20 senders x 20 receivers, 100-byte messages, ready/go barrier",
    small: &[
        "hackbench:groups=2,loops=3,fds=5",
        "hackbench:groups=1,loops=3,fds=4,pipe=on,threads=on",
    ],
    metric: "s",
    params: PARAMS,
    build,
};

fn build(p: &Params, _: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    check(&o)?;
    Ok(Box::new(Hackbench {
        options: o.clone(),
        shape: Shape {
            groups: o.groups,
            loops: o.loops,
            datasize: o.datasize,
            fds: o.fds,
            pipe: o.pipe,
            inet: o.inet,
            threads: o.threads,
        },
    }))
}

/// The combinations the tools refuse: one kind of channel; perf's options only.
pub fn check(o: &Options) -> Result<(), SpecError> {
    if o.pipe && o.inet {
        return Err(SpecError::Invalid(
            "hackbench: pipe=on and inet=on both given (accepted: one kind of channel)".into(),
        ));
    }
    if o.tool == "perf" && (o.fds != 20 || o.datasize != 100 || o.inet) {
        return Err(SpecError::Invalid(
            "hackbench tool=perf: perf bench sched messaging (6.12) has only -p, -t, -g and -l (accepted: fds=20, datasize=100, inet=off; or tool=rt-tests)".into(),
        ));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    groups: u64,
    loops: u64,
    datasize: u64,
    fds: u64,
    pipe: bool,
    inet: bool,
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
    /// As given (the tool whose output it prints among them).
    options: Options,
    shape: Shape,
}

/// A receiver: `fds · loops` messages of `datasize` bytes from its channel.
struct Receiver {
    start: Arrive,
    msgs: Reads,
    datasize: u64,
}

impl Program for Receiver {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        step!(self.start.step(env));
        step!(self.msgs.step(env));
        env.count("messages_received", self.msgs.n());
        env.count("bytes_received", self.msgs.n() * self.datasize);
        Op::Exit
    }
}

/// A sender: `loops` rounds of one message to each receiver of its group.
struct Sender {
    start: Arrive,
    sends: Writes,
}

impl Program for Sender {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        step!(self.start.step(env));
        if !self.sends.started() {
            env.mark("first_send");
        }
        step!(self.sends.step(env));
        env.count("messages_sent", self.sends.messages());
        Op::Exit
    }
}

/// What the parent needs from [`Hackbench`] (copied: programs own their data).
#[derive(Clone, Copy)]
struct HackbenchInfo {
    s: Shape,
}

impl HackbenchInfo {
    /// Child `k`: in each group's block of `2 · fds` children, the `fds` receivers (each on
    /// the channel made just before it), then the `fds` senders.
    fn child(&self, gate: Gate, chans: &[Fd], k: u64) -> Box<dyn Program> {
        let s = &self.s;
        let (g, j) = (k / (2 * s.fds), k % (2 * s.fds));
        let group = &chans[(g * s.fds) as usize..];
        if j < s.fds {
            let n = s.per_child();
            // fds[0] to the receiver, fds[1] to the senders (as hackbench).
            let comm = format!("receiver:{}.{}", g + 1, j + 1);
            return super::toolkit::named(
                comm,
                Box::new(Receiver {
                    start: gate.arrive(|_, ret| {
                        format!("hackbench: receiver: ready write returned {ret}")
                    }),
                    msgs: Reads::new(group[j as usize], s.datasize, n, move |done, ret| {
                        format!(
                            "hackbench: receiver: read returned {ret} with {} messages to go",
                            n - done
                        )
                    }),
                    datasize: s.datasize,
                }),
            );
        }
        let out: Arc<[Fd]> = group[..s.fds as usize].iter().map(|&fd| fd + 1).collect();
        let comm = format!("sender:{}.{}", g + 1, j - s.fds + 1);
        super::toolkit::named(
            comm,
            Box::new(Sender {
                start: gate
                    .arrive(|_, ret| format!("hackbench: sender: ready write returned {ret}")),
                sends: Writes::new(out, s.datasize, s.loops, |_, ret| {
                    format!("hackbench: sender: write returned {ret}")
                }),
            }),
        )
    }

    /// The error of a refused channel: the call, the error and what the groups need (the
    /// run's error adds the limit that was hit: [`crate::kernel::limits`]).
    fn channel_failed(&self, what: &str, ret: i64) -> String {
        let s = &self.s;
        let mut m = format!("hackbench: {what} failed ({})", errno_name(ret));
        if ret == ENFILE {
            m += &format!(
                "; {} groups need {} files (4 + 2 x {} x {} groups)",
                s.groups,
                4 + 2 * s.fds * s.groups,
                s.fds,
                s.groups
            );
        }
        m
    }

    /// The error of child `i`'s refused fork.
    fn fork_failed(&self, i: u64, ret: i64) -> String {
        let s = &self.s;
        let call = if s.threads { "clone()" } else { "fork()" };
        let mut m = format!(
            "hackbench: {call} of child {} refused ({})",
            i + 1,
            errno_name(ret)
        );
        if ret == EAGAIN {
            m += &format!(
                "; {} groups need {} tasks ({} per group of fds={}, plus the parent)",
                s.groups,
                s.children() + 1,
                2 * s.fds,
                s.fds
            );
        }
        m
    }
}

/// The parent: barrier pipes, groups, ready bytes, go, reaping.
struct Parent {
    h: HackbenchInfo,
    phase: u8,
    /// The ready and wake pipes.
    pipes: Open,
    /// One channel per receiver.
    chans: Open,
    children: Spawn,
    ready: Option<Reads>,
    reap: Reap,
}

impl Parent {
    fn new(h: HackbenchInfo) -> Parent {
        let s = h.s;
        let (kind, call) = if s.pipe {
            (Chan::Pipe, "pipe()")
        } else if s.inet {
            (Chan::Tcp, "inet_socketpair()")
        } else {
            (Chan::SocketPair, "socketpair()")
        };
        Parent {
            h,
            phase: 0,
            pipes: Open::pipes(2, move |i, ret| {
                let which = ["ready", "wake"][i as usize];
                h.channel_failed(&format!("pipe() for the {which} channel"), ret)
            }),
            chans: Open::new(kind, 0, move |c, ret| {
                let (g, i) = (c / s.fds, c % s.fds);
                let what = format!("{call} for receiver {} of group {}", i + 1, g + 1);
                h.channel_failed(&what, ret)
            }),
            children: Spawn::new(
                if s.threads { How::Clone } else { How::Fork },
                0,
                move |i, ret| h.fork_failed(i, ret),
            ),
            ready: None,
            reap: Reap::n(s.children(), |_, ret| {
                format!("hackbench: parent: wait returned {ret}")
            }),
        }
    }

    /// Every child writes a byte into the ready pipe and polls the wake pipe.
    fn gate(&self) -> Gate {
        Gate {
            ready: self.pipes.fds()[0],
            go: self.pipes.fds()[1],
        }
    }
}

impl Program for Parent {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        let s = self.h.s;
        loop {
            match self.phase {
                0 => step!(self.pipes.step(env)),
                // Group by group: a channel and a receiver per fd, then the senders.
                1 => loop {
                    step!(self.chans.step(env));
                    let (h, gate, chans) = (self.h, self.gate(), self.chans.fds());
                    step!(self.children.step(env, |k, _| h.child(gate, chans, k)));
                    let k = self.children.spawned();
                    if k == s.children() {
                        break;
                    }
                    if k % (2 * s.fds) < s.fds {
                        self.chans.more(1);
                    }
                    self.children.more(1);
                },
                // One ready byte per child.
                2 => {
                    let gate = self.gate();
                    let ready = self.ready.get_or_insert_with(|| {
                        gate.gather(s.children(), |_, ret| {
                            format!("hackbench: parent: ready read returned {ret}")
                        })
                    });
                    step!(ready.step(env));
                    env.count("children", self.children.spawned());
                }
                // gettimeofday(&start), then kick them off.
                3 => {
                    env.mark("start");
                    self.phase += 1;
                    return self.gate().go();
                }
                4 if env.ret != 1 => {
                    let msg = format!("hackbench: parent: wake write returned {}", env.ret);
                    return fail(env, msg);
                }
                4 => {}
                // Every child reaped: the time again.
                5 => step!(self.reap.step(env)),
                6 => env.mark("end"),
                _ => return Op::Exit,
            }
            self.phase += 1;
        }
    }
}

impl Hackbench {
    fn info(&self) -> HackbenchInfo {
        HackbenchInfo { s: self.shape }
    }
}

impl Workload for Hackbench {
    fn needs(&self) -> super::Needs {
        // The two barrier pipes and one channel per receiver; every child and the parent.
        let s = &self.shape;
        super::Needs {
            tasks: s.children() + 1,
            files: 4 + 2 * s.fds * s.groups,
        }
    }

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
        let mut m = metric("seconds", ns as f64 / 1e9, "s", "lower");
        m.output = Some(tool_output(&self.options, m.value));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// Past 4 096 children the ready pipe (one 4 KB page, 2.4 `fs/pipe.c`) is full: the
    /// other children sleep in `pipe_write` on the queue the parent's reader shares, and
    /// each 1-byte read wakes all of them (`wake_up_interruptible`, no exclusive waiters)
    /// for one to get in: the modelled kernel's own quadratic herd, which makes hackbench
    /// past 102 groups of 20 superlinear in events (200 groups: 7.6 M wake-ups by the
    /// parent alone, against 110 k in all at 100 groups).
    #[test]
    fn past_one_pipe_page_of_children_every_ready_read_wakes_every_blocked_writer() {
        let wakeups = |groups: u64| {
            let mut s = Simulation::new(RunConfig {
                machine: "piii700-1m".into(),
                cpus: Some(8),
                policy: "o1-2.6".into(),
                workload: format!("hackbench:groups={groups},fds=1,loops=1"),
                seed: 1,
            })
            .unwrap();
            s.run(&mut |_, _| {}).unwrap();
            assert_eq!(s.k.rec.count("children"), 2 * groups);
            s.k.stats.wakeups
        };
        let (below, above) = (wakeups(2000), wakeups(2300));
        // 4 000 children: each is woken by "go" and its receiver or sender, no more.
        assert!(below < 3 * 4000, "{below} wake-ups for 4 000 children");
        // 4 600: 504 blocked writers, each woken again at every read until its turn:
        // about 504 + 503 + … + 1 more wake-ups (on 8 CPUs a woken writer is back asleep
        // before the parent's next read).
        let herd = 504 * 505 / 2;
        assert!(
            above > below + herd * 3 / 4 && above < below + herd * 3 / 2,
            "{above} wake-ups for 4 600 children (4 000: {below}; herd {herd})"
        );
    }

    #[test]
    fn more_groups_do_proportionally_more_work() {
        let a = run(4, "hackbench:groups=1,loops=20");
        let b = run(4, "hackbench:groups=4,loops=20");
        let ratio = b.k.stats.syscalls as f64 / a.k.stats.syscalls as f64;
        assert!(ratio > 3.9 && ratio < 4.1, "syscall ratio {ratio}");
    }

    #[test]
    fn too_many_groups_are_refused_naming_file_max() {
        // piii700-1m: file-max 8192 (B§1.4): 204 groups fit, 205 need 8204 files.
        let e = Simulation::new(RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(8),
            policy: "fifo".into(),
            workload: "hackbench:groups=205,loops=1".into(),
            seed: 1,
        })
        .err()
        .expect("refused before the run");
        assert!(matches!(e, SimError::Workload(_)));
        assert_eq!(
            e.to_string(),
            "workload failed: hackbench:groups=205,loops=1: it needs at least 8204 open files at \
             once, over the system-wide open-file limit fs.file-max = 8192 on piii700-1m (NR_FILE of \
             2.4 before 2.4.20); raise it with --machine piii700-1m:file_max=N"
        );
    }

    #[test]
    fn a_refused_fork_names_the_process_limit() {
        let spec = crate::spec::Spec::parse("workload", "hackbench:groups=300").unwrap();
        let hb = Hackbench {
            options: Options::from_params(
                &crate::spec::resolve("workload", &spec, PARAMS).unwrap(),
            ),
            shape: Shape {
                groups: 300,
                loops: 100,
                datasize: 100,
                fds: 20,
                pipe: false,
                inet: false,
                threads: false,
            },
        };
        let e = hb.info().fork_failed(8191, EAGAIN);
        assert_eq!(
            e,
            "hackbench: fork() of child 8192 refused (EAGAIN); 300 groups need 12001 tasks \
             (40 per group of fds=20, plus the parent)"
        );
    }
}
