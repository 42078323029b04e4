//! The start barrier: every worker is ready, then one byte releases them all.

use super::{fail, Blame, Reads};
use crate::kernel::abi::{Env, Op};
use crate::kernel::chan::Fd;

/// A start barrier over two pipes, as hackbench (`ready()` and its wake pipe), tbench
/// (ready, then `kill(0, SIGCONT)`) and chat start their workers: each worker writes one
/// byte into the *ready* pipe and blocks in `poll()` on the *go* pipe ([`Gate::arrive`]);
/// the main task reads one ready byte per worker ([`Gate::gather`]), takes the time, and
/// writes a single byte into the go pipe ([`Gate::go`]) — every poller wakes at once, a
/// thundering herd. Nobody reads the go byte, so the go pipe stays readable.
#[derive(Clone, Copy, Debug)]
pub struct Gate {
    /// Read end of the ready pipe (the write end is `+ 1`).
    pub ready: Fd,
    /// Read end of the go pipe (the write end is `+ 1`).
    pub go: Fd,
}

impl Gate {
    /// Worker side: the ready byte, then wait for go (`blame(0, ret)` when the ready write
    /// does not return 1).
    pub fn arrive(self, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Arrive {
        Arrive {
            ready: Some(self.ready + 1),
            go: self.go,
            st: St::Ready,
            blame: super::blame(blame),
        }
    }

    /// Main side: `n` ready bytes, one read per byte (one per worker, as hackbench reads
    /// them).
    pub fn gather(self, n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Reads {
        Reads::new(self.ready, 1, n, blame)
    }

    /// Main side: `n` ready bytes, each read asking for all that are still missing.
    pub fn gather_at_once(
        self,
        n: u64,
        blame: impl Fn(u64, i64) -> String + Send + 'static,
    ) -> Reads {
        Reads::new(self.ready, n, 1, blame)
    }

    /// Main side: the go byte that releases every worker.
    pub fn go(self) -> Op {
        Op::Write {
            fd: self.go + 1,
            len: 1,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    Ready,
    Poll,
    Polled,
    Done,
}

/// A worker's side of the start barrier: write the ready byte (if any), then `poll()` the
/// go pipe until it is readable.
pub struct Arrive {
    /// Write end of the ready pipe; `None`: the worker only waits for go.
    ready: Option<Fd>,
    go: Fd,
    st: St,
    blame: Blame,
}

impl Arrive {
    /// Wait for go only — `poll()` on `go` (a read end) — with no ready byte.
    pub fn go(go: Fd) -> Arrive {
        Arrive {
            ready: None,
            go,
            st: St::Poll,
            blame: super::blame(|_, _| String::new()),
        }
    }

    /// The next op, or `None` once go has been seen.
    pub fn step(&mut self, env: &mut Env<'_>) -> Option<Op> {
        match self.st {
            St::Ready => {
                self.st = St::Poll;
                Some(Op::Write {
                    fd: self.ready.expect("a worker with a ready byte"),
                    len: 1,
                })
            }
            St::Poll => {
                if self.ready.is_some() && env.ret != 1 {
                    let msg = (self.blame)(0, env.ret);
                    return Some(fail(env, msg));
                }
                self.st = St::Polled;
                Some(Op::Poll { fds: vec![self.go] })
            }
            St::Polled | St::Done => {
                self.st = St::Done;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::abi::program;
    use crate::workload::toolkit::testing::{drive, run};
    use crate::workload::toolkit::{step, Open, Reap, Spawn};

    #[test]
    fn a_worker_writes_ready_then_polls_go() {
        let gate = Gate { ready: 3, go: 5 };
        let mut a = gate.arrive(|_, _| unreachable!());
        let (ops, _) = drive(&[0, 1, 0, 9], |env| a.step(env));
        assert_eq!(ops, ["write 4 1", "poll [5]", "done"]);
        let mut a = gate.arrive(|_, ret| format!("ready write returned {ret}"));
        let (ops, rec) = drive(&[0, -32], |env| a.step(env));
        assert_eq!(ops, ["write 4 1", "exit"]);
        assert_eq!(rec.error.as_deref(), Some("ready write returned -32"));
        let mut a = Arrive::go(5);
        let (ops, _) = drive(&[0, 0, 1], |env| a.step(env));
        assert_eq!(ops, ["poll [5]", "done"]);
    }

    #[test]
    fn the_main_task_reads_one_ready_byte_per_worker_or_all_at_once() {
        let gate = Gate { ready: 3, go: 5 };
        let mut g = gate.gather(3, |_, _| unreachable!());
        let (ops, _) = drive(&[0, 1, 1, 1], |env| g.step(env));
        assert_eq!(ops, ["read 3 1", "read 3 1", "read 3 1", "done"]);
        let mut g = gate.gather_at_once(3, |_, _| unreachable!());
        let (ops, _) = drive(&[0, 2, 1], |env| g.step(env));
        assert_eq!(ops, ["read 3 3", "read 3 1", "done"]);
        assert_eq!(
            crate::workload::toolkit::testing::show(&gate.go()),
            "write 6 1"
        );
    }

    #[test]
    fn nobody_passes_the_gate_before_go() {
        // Four workers on four CPUs; init takes the time once all are ready, then opens
        // the gate. Every worker's first step after the gate comes after that time.
        let (r, sim) = run(4, || {
            let mut pipes = Open::pipes(2, |i, ret| format!("pipe {i}: {ret}"));
            let mut kids = Spawn::forks(4, |i, ret| format!("fork {i}: {ret}"));
            let mut ready: Option<Reads> = None;
            let mut went = false;
            let mut reap = Reap::n(4, |i, ret| format!("wait {i}: {ret}"));
            program(move |env| {
                step!(pipes.step(env));
                let gate = Gate {
                    ready: pipes.fds()[0],
                    go: pipes.fds()[1],
                };
                step!(kids.step(env, |_, _| {
                    let mut a = gate.arrive(|_, ret| format!("ready: {ret}"));
                    program(move |env| {
                        step!(a.step(env));
                        env.mark("passed");
                        Op::Exit
                    })
                }));
                let ready = ready.get_or_insert_with(|| gate.gather(4, |i, r| format!("{i}: {r}")));
                step!(ready.step(env));
                if !std::mem::replace(&mut went, true) {
                    env.mark("go");
                    return gate.go();
                }
                step!(reap.step(env));
                env.count("done", 1);
                Op::Exit
            })
        });
        r.unwrap();
        let go = sim.k.rec.first("go").unwrap();
        let passed = &sim.k.rec.marks["passed"];
        assert_eq!(passed.len(), 4);
        assert!(passed.iter().all(|&t| t > go), "{passed:?} {go}");
        assert_eq!(sim.k.streams[0].written, 4);
        assert_eq!(sim.k.streams[1].written, 1);
    }
}
