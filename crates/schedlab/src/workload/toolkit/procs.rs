//! Children: forking or cloning `n` of them, reaping them, and small fixed programs.

use std::collections::VecDeque;

use super::{fail, Blame};
use crate::kernel::abi::{Env, Op, Program, ECHILD};

/// How a child is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// `fork()`: a process of its own.
    Fork,
    /// `clone(CLONE_VM|CLONE_FS|CLONE_FILES)`: a thread of the caller's mm.
    Clone,
}

/// Fork or clone `n` children, one call after another; a negative return (`EAGAIN`: a
/// process limit) fails the run (`blame(i, ret)` for child `i`).
///
/// `step` takes the maker of child `i`, called when its fork is issued (so a maker drawing
/// from `env.rng` draws at that moment). [`Spawn::pids`] lists the children's pids;
/// [`Spawn::more`] asks for more children, to interleave them with other calls.
pub struct Spawn {
    how: How,
    n: u64,
    pids: Vec<i64>,
    issued: bool,
    blame: Blame,
}

impl Spawn {
    /// `n` children made by `how`.
    pub fn new(how: How, n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Spawn {
        Spawn {
            how,
            n,
            pids: Vec::with_capacity(n as usize),
            issued: false,
            blame: super::blame(blame),
        }
    }

    /// `n` processes.
    pub fn forks(n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Spawn {
        Spawn::new(How::Fork, n, blame)
    }

    /// `n` threads.
    pub fn clones(n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Spawn {
        Spawn::new(How::Clone, n, blame)
    }

    /// Make `k` more children (after those asked for so far).
    pub fn more(&mut self, k: u64) {
        self.n += k;
    }

    /// The next fork or clone, of `child(i, env)`; `None` once every child asked for
    /// exists.
    pub fn step(
        &mut self,
        env: &mut Env<'_>,
        child: impl FnOnce(u64, &mut Env<'_>) -> Box<dyn Program>,
    ) -> Option<Op> {
        if std::mem::take(&mut self.issued) {
            if env.ret < 0 {
                let msg = (self.blame)(self.pids.len() as u64, env.ret);
                return Some(fail(env, msg));
            }
            self.pids.push(env.ret);
        }
        if self.spawned() < self.n {
            self.issued = true;
            let child = child(self.spawned(), env);
            return Some(match self.how {
                How::Fork => Op::Fork { child },
                How::Clone => Op::Clone { child },
            });
        }
        None
    }

    /// Children made so far.
    pub fn spawned(&self) -> u64 {
        self.pids.len() as u64
    }

    /// The children's pids, in the order they were made.
    pub fn pids(&self) -> &[i64] {
        &self.pids
    }
}

/// Reap children with `wait()`: exactly `n` of them ([`Reap::n`]; a failed wait fails
/// the run), or every one until `wait()` returns `ECHILD` ([`Reap::all`]).
pub struct Reap {
    /// Children to reap; `None`: until `ECHILD`.
    n: Option<u64>,
    reaped: u64,
    issued: bool,
    /// `ECHILD` seen ([`Reap::all`]).
    none_left: bool,
    blame: Option<Blame>,
}

impl Reap {
    /// Wait until no child is left (`wait()` returns `ECHILD`).
    pub fn all() -> Reap {
        Reap {
            n: None,
            reaped: 0,
            issued: false,
            none_left: false,
            blame: None,
        }
    }

    /// Wait for `n` children; a negative return fails the run (`blame(i, ret)` for the
    /// `i`-th wait).
    pub fn n(n: u64, blame: impl Fn(u64, i64) -> String + Send + 'static) -> Reap {
        Reap {
            n: Some(n),
            blame: Some(super::blame(blame)),
            ..Reap::all()
        }
    }

    /// Reap `k` more children ([`Reap::n`]).
    pub fn more(&mut self, k: u64) {
        if let Some(n) = &mut self.n {
            *n += k;
        }
    }

    /// The next `wait()`, or `None` once done.
    pub fn step(&mut self, env: &mut Env<'_>) -> Option<Op> {
        self.step_each(env, |_, _| {})
    }

    /// [`Reap::step`], calling `reaped(env, pid)` as each child is reaped.
    pub fn step_each(
        &mut self,
        env: &mut Env<'_>,
        reaped: impl FnOnce(&mut Env<'_>, i64),
    ) -> Option<Op> {
        if std::mem::take(&mut self.issued) {
            match &self.blame {
                None if env.ret == ECHILD => self.none_left = true,
                Some(blame) if env.ret < 0 => {
                    let msg = blame(self.reaped, env.ret);
                    return Some(fail(env, msg));
                }
                _ if env.ret > 0 => {
                    self.reaped += 1;
                    let pid = env.ret;
                    reaped(env, pid);
                }
                _ => {}
            }
        }
        let more = match self.n {
            Some(n) => self.reaped < n,
            None => !self.none_left,
        };
        if more {
            self.issued = true;
            return Some(Op::Wait);
        }
        None
    }

    /// Children reaped so far.
    pub fn reaped(&self) -> u64 {
        self.reaped
    }
}

/// A program issuing a fixed list of ops, then exiting.
pub fn script(ops: Vec<Op>) -> Box<dyn Program> {
    Box::new(Script(ops.into()))
}

/// A child that `execve()`s `program` at once: how a shell or `make` starts a command.
pub fn exec(program: Box<dyn Program>) -> Box<dyn Program> {
    script(vec![Op::Exec { program }])
}

struct Script(VecDeque<Op>);

impl Program for Script {
    fn next(&mut self, _env: &mut Env<'_>) -> Op {
        self.0.pop_front().unwrap_or(Op::Exit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::abi::{program, EAGAIN};
    use crate::workload::toolkit::step;
    use crate::workload::toolkit::testing::{drive, run};

    #[test]
    fn spawns_n_children_made_on_demand() {
        let mut s = Spawn::clones(2, |_, _| unreachable!());
        let mut made = Vec::new();
        let (ops, _) = drive(&[0, 7, 8, 0], |env| {
            s.step(env, |i, _| {
                made.push(i);
                script(vec![])
            })
        });
        assert_eq!(ops, ["clone", "clone", "done"]);
        assert_eq!(made, [0, 1]);
        assert_eq!(s.pids(), [7, 8]);
        s.more(1);
        let (ops, _) = drive(&[0, 9], |env| s.step(env, |_, _| script(vec![])));
        assert_eq!(ops, ["clone", "done"]);
        assert_eq!(s.spawned(), 3);
    }

    #[test]
    fn a_refused_fork_fails_the_run_with_its_index() {
        let mut s = Spawn::forks(5, |i, ret| {
            format!("fork of child {} refused ({ret})", i + 1)
        });
        let (ops, rec) = drive(&[0, 2, 3, EAGAIN], |env| s.step(env, |_, _| script(vec![])));
        assert_eq!(ops, ["fork", "fork", "fork", "exit"]);
        assert_eq!(rec.error.as_deref(), Some("fork of child 3 refused (-11)"));
    }

    #[test]
    fn reaps_n_children_or_all_of_them() {
        let mut r = Reap::n(2, |_, _| unreachable!());
        let (ops, _) = drive(&[1, 5, 6, 0], |env| r.step(env));
        assert_eq!(ops, ["wait", "wait", "done"]);
        let mut r = Reap::n(3, |i, ret| format!("wait {i}: {ret}"));
        let (ops, rec) = drive(&[1, 5, ECHILD], |env| r.step(env));
        assert_eq!(ops, ["wait", "wait", "exit"]);
        assert_eq!(rec.error.as_deref(), Some("wait 1: -10"));
        let mut r = Reap::all();
        let mut pids = Vec::new();
        let (ops, _) = drive(&[1, 5, 6, ECHILD, 0], |env| {
            r.step_each(env, |_, pid| pids.push(pid))
        });
        assert_eq!(ops, ["wait", "wait", "wait", "done"]);
        assert_eq!(pids, [5, 6]);
        assert_eq!(r.reaped(), 2);
    }

    #[test]
    fn children_forked_and_reaped_in_a_run() {
        // Three processes that exit at once, a thread that execs (and so exits), all
        // reaped until ECHILD.
        let (r, sim) = run(2, || {
            let mut procs = Spawn::forks(3, |i, ret| format!("fork {i}: {ret}"));
            let mut threads = Spawn::clones(1, |i, ret| format!("clone {i}: {ret}"));
            let mut reap = Reap::all();
            program(move |env| {
                step!(procs.step(env, |_, _| script(vec![])));
                step!(threads.step(env, |_, _| exec(script(vec![]))));
                step!(reap.step_each(env, |env, _| env.count("reaped", 1)));
                env.count("done", 1);
                Op::Exit
            })
        });
        r.unwrap();
        assert_eq!(sim.k.stats.forks, 4);
        assert_eq!(sim.k.rec.count("reaped"), 4);
        assert_eq!(sim.k.rec.count("done"), 1);
    }

    #[test]
    fn a_script_issues_its_ops_then_exits() {
        let mut p = script(vec![Op::Yield, Op::Sleep { ns: 5 }]);
        let (ops, _) = drive(&[0, 0, 0, 0], |env| Some(p.next(env)));
        assert_eq!(ops, ["yield", "sleep 5", "exit", "exit"]);
    }
}
