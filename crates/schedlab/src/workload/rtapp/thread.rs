//! One rt-app thread: the loop of rtapp.md §5 over its task's phases and events, as a
//! program asked for one operation at a time, keeping rt-app's per-iteration log row.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::parse::{Attrs, Event, TaskDef};
use super::{Row, Shared};
use crate::engine::Time;
use crate::kernel::abi::{errno_name, Env, Op, Program, SyncOp};

/// `runtime` polls the clock after this much CPU work (rt-app polls every busy-loop
/// iteration; a coarser poll only lets the event end up to this much late).
const RUNTIME_POLL_NS: Time = 50_000;

/// What the current event waits for when the program is asked again.
enum Pending {
    /// Nothing: start the next event.
    None,
    /// Queued operations of the event; `then` runs after the last returns.
    Ops(VecDeque<Op>, After),
}

/// Book-keeping after an event's last operation returns.
#[derive(Debug, Clone, Copy)]
enum After {
    Nothing,
    /// A `run` began at this time (its wall time goes to the row's `run`).
    Ran(Time),
    /// A `runtime` until `end`, begun at `start`.
    Runtime {
        start: Time,
        end: Time,
    },
    /// A timer sleep until `at`: the wake-up latency is measured.
    Timer(Time),
}

/// A thread of the rt-app process.
pub struct Thread {
    index: u32,
    name: String,
    task: Arc<TaskDef>,
    shared: Arc<Mutex<Shared>>,
    started: bool,
    initialised: bool,
    nice: i32,
    phase: usize,
    phase_loop: i64,
    thread_loop: i64,
    event: usize,
    in_iteration: bool,
    row: Row,
    pending: Pending,
    /// Forked threads are not part of the start barrier.
    forked: bool,
    t_first: Time,
}

impl std::fmt::Debug for Thread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Thread({})", self.name)
    }
}

impl Thread {
    /// Thread `index` of `task`, named `name`.
    pub fn new(
        index: u32,
        name: String,
        task: Arc<TaskDef>,
        shared: Arc<Mutex<Shared>>,
        forked: bool,
    ) -> Thread {
        Thread {
            index,
            name,
            task,
            shared,
            started: false,
            initialised: false,
            nice: 0,
            phase: 0,
            phase_loop: 0,
            thread_loop: 0,
            event: 0,
            in_iteration: false,
            row: Row::default(),
            pending: Pending::None,
            forked,
            t_first: 0,
        }
    }

    fn attrs_ops(&mut self, a: &Attrs, q: &mut VecDeque<Op>) {
        if let Some(cpus) = &a.cpus {
            let mask = crate::machine::CpuMask::from_cpus(cpus.iter().copied());
            q.push_back(Op::SetAffinity {
                mask: Box::new(mask),
            });
        }
        if let Some(n) = a.nice {
            if n != self.nice {
                q.push_back(Op::Nice { inc: n - self.nice });
                self.nice = n;
            }
        }
    }

    /// The operations of event `e` and what to do after them.
    fn event_ops(&mut self, e: &Event, env: &mut Env<'_>) -> (VecDeque<Op>, After) {
        let now = env.now;
        let mut sh = self.shared.lock().expect("shared");
        let mut q = VecDeque::new();
        let after = match e {
            Event::Run(us) => {
                self.row.c_duration += us;
                self.row.perf += us;
                q.push_back(Op::Compute {
                    ns: us * 1000,
                    ws: 0,
                });
                After::Ran(now)
            }
            Event::Runtime(us) => {
                self.row.c_duration += us;
                let end = now + us * 1000;
                if *us > 0 {
                    q.push_back(Op::Compute {
                        ns: (us * 1000).min(RUNTIME_POLL_NS),
                        ws: 0,
                    });
                }
                After::Runtime { start: now, end }
            }
            Event::Sleep(us) => {
                q.push_back(Op::Sleep { ns: us * 1000 });
                After::Nothing
            }
            Event::Timer {
                name,
                period_us,
                absolute,
            } => {
                let key = if name.starts_with("unique") {
                    format!("{}\u{0}{}", self.index, name)
                } else {
                    name.clone()
                };
                let t_first = self.t_first;
                let t_next = sh.timers.entry(key.clone()).or_insert(t_first);
                *t_next += period_us * 1000;
                let at = *t_next;
                self.row.c_period += period_us;
                let slack = at as i64 - now as i64;
                if self.row.timers == 0 || !sh.cumulative_slack {
                    self.row.slack = slack / 1000;
                } else {
                    self.row.slack += slack / 1000;
                }
                self.row.timers += 1;
                if now < at {
                    q.push_back(Op::SleepUntil { at });
                    After::Timer(at)
                } else {
                    self.row.missed += 1;
                    if !absolute {
                        sh.timers.insert(key, now);
                    }
                    After::Nothing
                }
            }
            Event::Lock(m) => {
                q.push_back(Op::Sync(SyncOp::Lock(sh.id("mutex", m))));
                After::Nothing
            }
            Event::Unlock(m) => {
                q.push_back(Op::Sync(SyncOp::Unlock(sh.id("mutex", m))));
                After::Nothing
            }
            Event::Wait { cond, mutex } => {
                let (c, m) = (sh.id("cond", cond), sh.id("mutex", mutex));
                q.push_back(Op::Sync(SyncOp::CondWait { cond: c, mutex: m }));
                After::Nothing
            }
            Event::Sync { cond, mutex } => {
                let (c, m) = (sh.id("cond", cond), sh.id("mutex", mutex));
                q.push_back(Op::Sync(SyncOp::Signal(c)));
                q.push_back(Op::Sync(SyncOp::CondWait { cond: c, mutex: m }));
                After::Nothing
            }
            Event::Signal(c) => {
                q.push_back(Op::Sync(SyncOp::Signal(sh.id("cond", c))));
                After::Nothing
            }
            Event::Broad(c) => {
                q.push_back(Op::Sync(SyncOp::Broadcast(sh.id("cond", c))));
                After::Nothing
            }
            Event::Suspend => {
                let t = self.task.name.clone();
                let (c, m) = (sh.id("cond", &t), sh.id("mutex", &t));
                q.push_back(Op::Sync(SyncOp::Lock(m)));
                q.push_back(Op::Sync(SyncOp::CondWait { cond: c, mutex: m }));
                q.push_back(Op::Sync(SyncOp::Unlock(m)));
                After::Nothing
            }
            Event::Resume(t) => {
                let (c, m) = (sh.id("cond", t), sh.id("mutex", t));
                q.push_back(Op::Sync(SyncOp::Lock(m)));
                q.push_back(Op::Sync(SyncOp::Broadcast(c)));
                q.push_back(Op::Sync(SyncOp::Unlock(m)));
                After::Nothing
            }
            Event::Barrier(b) => {
                let parties = sh.barriers.get(b).copied().unwrap_or(1).max(1);
                q.push_back(Op::Sync(SyncOp::Barrier {
                    id: sh.id("barrier", b),
                    parties,
                }));
                After::Nothing
            }
            Event::SemPost(s) => {
                q.push_back(Op::Sync(SyncOp::SemPost(sh.id("sem", s))));
                After::Nothing
            }
            Event::SemWait(s) => {
                q.push_back(Op::Sync(SyncOp::SemWait(sh.id("sem", s))));
                After::Nothing
            }
            Event::Yield => {
                q.push_back(Op::Yield);
                After::Nothing
            }
            Event::Fork(t) => {
                if let Some(child) = sh.fork(t, &self.shared) {
                    q.push_back(Op::Clone { child });
                }
                After::Nothing
            }
            Event::Mem(bytes) => {
                q.push_back(Op::Compute {
                    ns: bytes * sh.mem_byte_ps / 1000,
                    ws: (*bytes).min(sh.mem_buffer),
                });
                After::Nothing
            }
        };
        (q, after)
    }

    /// The event's operations are done: account for them.
    fn finish(&mut self, after: After, env: &mut Env<'_>) -> Option<Op> {
        let now = env.now;
        match after {
            After::Nothing => {}
            After::Ran(start) => self.row.run += now - start,
            After::Runtime { start, end } => {
                if now < end {
                    self.pending = Pending::Ops(VecDeque::new(), After::Runtime { start, end });
                    return Some(Op::Compute {
                        ns: (end - now).min(RUNTIME_POLL_NS),
                        ws: 0,
                    });
                }
                self.row.run += now - start;
                self.row.perf += (now - start) / 1000;
            }
            After::Timer(at) => self.row.wu_lat += now.saturating_sub(at) / 1000,
        }
        None
    }

    fn end_iteration(&mut self, now: Time) {
        let mut row = std::mem::take(&mut self.row);
        row.end = now;
        self.shared
            .lock()
            .expect("shared")
            .record(self.index, &self.name, &self.task.name, row);
        self.in_iteration = false;
    }
}

impl Program for Thread {
    /// rt-app names each thread after its task (`video-1`); here under the workload's
    /// group, as every simulated comm is (`rtapp:video-1`), so a trace tells them apart.
    fn comm(&self) -> Option<String> {
        Some(format!("{}:{}", super::INFO.name, self.name))
    }

    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            if !self.started {
                self.started = true;
                if !self.forked {
                    // Every non-forked thread starts at the use-case start (§5).
                    let sh = self.shared.lock().expect("shared");
                    return Op::Sync(SyncOp::Barrier {
                        id: sh.start_barrier,
                        parties: sh.start_parties,
                    });
                }
            }
            if !self.initialised {
                self.initialised = true;
                // Forked threads too reference their timers to the use-case start (§6).
                let t_zero = self.shared.lock().expect("shared").t_zero;
                self.t_first = t_zero + self.task.delay_us * 1000;
                let attrs = self.task.attrs.clone();
                let mut q = VecDeque::new();
                self.attrs_ops(&attrs, &mut q);
                if self.task.delay_us > 0 {
                    q.push_back(Op::SleepUntil { at: self.t_first });
                }
                self.pending = Pending::Ops(q, After::Nothing);
            }
            match std::mem::replace(&mut self.pending, Pending::None) {
                Pending::Ops(mut q, after) => {
                    if env.ret < 0 {
                        env.fail(format!(
                            "rt-app thread {}: a call returned {}",
                            self.name,
                            errno_name(env.ret)
                        ));
                        return Op::Exit;
                    }
                    if let Some(op) = q.pop_front() {
                        self.pending = Pending::Ops(q, after);
                        return op;
                    }
                    if let Some(op) = self.finish(after, env) {
                        return op;
                    }
                }
                Pending::None => {}
            }
            let task = self.task.clone();
            if self.task.loops >= 0 && self.thread_loop >= self.task.loops {
                return self.exit(env);
            }
            let phase = &task.phases[self.phase];
            if !self.in_iteration {
                self.in_iteration = true;
                self.row = Row {
                    phase: self.phase as u32,
                    start: env.now,
                    ..Row::default()
                };
                if self.event == 0 && self.phase_loop == 0 {
                    let mut q = VecDeque::new();
                    self.attrs_ops(&phase.attrs, &mut q);
                    if !q.is_empty() {
                        self.pending = Pending::Ops(q, After::Nothing);
                        continue;
                    }
                }
            }
            if let Some((_, e)) = phase.events.get(self.event) {
                self.event += 1;
                let (q, after) = self.event_ops(e, env);
                self.pending = Pending::Ops(q, after);
                continue;
            }
            // The iteration is over (§5).
            self.event = 0;
            self.end_iteration(env.now);
            self.phase_loop += 1;
            if phase.loops >= 0 && self.phase_loop >= phase.loops {
                self.phase_loop = 0;
                self.phase += 1;
                if self.phase == task.phases.len() {
                    self.phase = 0;
                    self.thread_loop += 1;
                }
            }
        }
    }
}

impl Thread {
    fn exit(&mut self, env: &mut Env<'_>) -> Op {
        let mut sh = self.shared.lock().expect("shared");
        sh.live -= 1;
        if sh.live == 0 {
            // The use case ends when every thread has ended (§5).
            env.stop();
        }
        Op::Exit
    }
}
