//! How a CPU runs: the frame interpreter, interrupts, `schedule()` and the context switch.

use crate::engine::Time;
use crate::kernel::abi::{Env, Op};
use crate::kernel::frame::Frame;
use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::{Acct, Event, Kernel, UserPass};
use crate::machine::CpuId;

use super::frame::Sys;

/// Bytes of a working set one step of a pass touches (8 192 lines: ≈ 0.7 ms from memory,
/// well inside the bus calendar's 5.2 ms horizon).
pub const PASS_STEP: u64 = 256 << 10;

impl Kernel {
    /// Handle one event at `self.now`.
    #[inline]
    pub(crate) fn handle(&mut self, ev: Event) {
        match ev {
            Event::Resume { cpu, gen } => {
                let c = cpu as usize;
                if self.cpus[c].gen == gen {
                    if let Some(pass) = self.cpus[c].user.take() {
                        // The pass ran to its end: all of `todo` was touched here.
                        let curr = self.cpus[c].curr;
                        self.cache.record(c, curr, pass.ws, pass.rest, pass.todo);
                    }
                    self.run_cpu(c);
                }
            }
            Event::Tick { cpu } => {
                let next = self.now + self.tick_ns;
                self.queue.push_periodic(next, Event::Tick { cpu });
                self.cpus[cpu as usize].pending_ticks += 1;
                self.interrupt(cpu as usize);
            }
            Event::Ipi { cpu } => {
                self.cpus[cpu as usize].pending_ipi = true;
                self.interrupt(cpu as usize);
            }
            Event::HrTimer { cpu, task } => {
                self.cpus[cpu as usize].hrtimers_fired.push(task);
                self.interrupt(cpu as usize);
            }
        }
    }

    /// An interrupt is pending on `cpu`: take it now if the CPU is halted or in user mode,
    /// else leave it for the next frame boundary (the kernel runs with interrupts held).
    fn interrupt(&mut self, cpu: CpuId) {
        let now = self.now;
        let idle_exit = if self.machine.costs().idle_poll {
            0
        } else {
            self.machine.costs().idle_exit_ns
        };
        let c = &mut self.cpus[cpu];
        if c.halted {
            let idle = now - c.clock;
            c.acct[Acct::Idle as usize] += idle + idle_exit;
            c.clock = now + idle_exit;
            c.halted = false;
            self.run_cpu(cpu);
        } else if let Some(pass) = c.user {
            if pass.end > now {
                // Rewind the user-mode pass to the interrupt (or to its start, if the CPU
                // had run ahead through pure frames).
                // model: a pass interleaves its refill stall and its computation evenly,
                // so the share of the pass's time elapsed is the share of both done: that
                // many of its bytes are now touched (and recorded resident here), that
                // much computation is done. Only the rest is pushed back, and it pays the
                // cache again for its own bytes when it resumes — nothing done is re-paid.
                let at = now.max(pass.start);
                let left = pass.end - at;
                let total = u128::from(pass.end - pass.start);
                let ran = u128::from(at - pass.start);
                let part = |x: u64| match total {
                    0 => 0,
                    _ => (u128::from(x) * ran / total) as u64,
                };
                let touched = part(pass.todo);
                let computed = part(pass.compute);
                c.clock = at;
                c.acct[Acct::Running as usize] -= left;
                c.user = None;
                c.gen += 1;
                let curr = c.curr;
                if touched > 0 {
                    self.cache.record(cpu, curr, pass.ws, pass.rest, touched);
                }
                let t = &mut self.tasks[curr as usize];
                t.stats.runtime_ns -= left;
                let (mut more_ns, mut more) = (0, 0);
                if let Some(&Frame::Compute { left, todo, .. }) = t.kstack.last() {
                    // The steps after this one: one pass again.
                    t.kstack.pop();
                    (more_ns, more) = (left, todo);
                }
                t.kstack.push(Frame::Compute {
                    left: pass.compute - computed + more_ns,
                    ws: pass.ws,
                    todo: pass.todo - touched + more,
                });
                self.run_cpu(cpu);
            }
        }
    }

    #[inline]
    fn suspend(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu];
        c.gen = c.gen.wrapping_add(1);
        let ev = Event::Resume {
            cpu: cpu as u16,
            gen: c.gen,
        };
        let at = c.clock;
        self.queue.push(at, ev);
    }

    /// Run `cpu`'s frames until it must wait for global time, for user mode to end, or for
    /// an interrupt (halted).
    ///
    /// The loop is the simulator's innermost: almost every event runs a system call body,
    /// its return and the program's next call here, then suspends at the next body. Those
    /// frames are handled in the loop; the others in [`Kernel::run_frame`], kept out of
    /// line so that their code does not weigh on every turn.
    pub(crate) fn run_cpu(&mut self, cpu: CpuId) {
        // Only `user_op` stops the run, and the loop returns when it does.
        if self.stopped {
            return;
        }
        loop {
            let now = self.now;
            let c = &self.cpus[cpu];
            let synced = c.clock <= now;
            let curr = c.curr;
            if c.pending_ticks > 0 || c.pending_ipi || !c.hrtimers_fired.is_empty() {
                if !synced {
                    return self.suspend(cpu);
                }
                self.take_interrupts(cpu);
            }
            let st = &mut self.tasks[curr as usize].kstack;
            let runs = match st.last() {
                Some(top) => synced || top.is_pure(),
                None => synced,
            };
            if !runs {
                return self.suspend(cpu);
            }
            let Some(frame) = st.pop() else {
                panic!(
                    "cpu {cpu} at {now} ns: pid {} has an empty kernel stack",
                    self.tasks[curr as usize].pid
                );
            };
            match frame {
                Frame::User => {
                    if !self.user_op(cpu, curr) {
                        return;
                    }
                }
                Frame::Sys(sys) => self.syscall(cpu, curr, sys),
                Frame::SysExit => {
                    let t = &mut self.tasks[curr as usize];
                    if t.sees_need_resched(self.cpus[cpu].clock) {
                        t.kstack.push(Frame::SysExit);
                        t.kstack.push(Frame::Schedule);
                    }
                }
                frame => {
                    if !self.run_frame(cpu, curr, frame) {
                        return;
                    }
                }
            }
        }
    }

    /// Run one of the frames [`Kernel::run_cpu`] does not handle itself, popped from the
    /// stack of `curr`, the task on `cpu`. Returns false when the CPU stops running frames
    /// (in user mode, or halted).
    #[inline(never)]
    fn run_frame(&mut self, cpu: CpuId, curr: TaskId, frame: Frame) -> bool {
        match frame {
            Frame::User | Frame::Sys(_) | Frame::SysExit => {
                unreachable!("run_cpu handles its own frames")
            }
            Frame::Compute { left, ws, todo } => {
                if left > 0 || todo > 0 {
                    self.compute(cpu, curr, left, ws, todo);
                    return false;
                }
            }
            Frame::IrqExit { user } => {
                if user && self.tasks[curr as usize].sees_need_resched(self.cpus[cpu].clock) {
                    self.tasks[curr as usize].kstack.push(Frame::Schedule);
                }
            }
            Frame::Wake {
                mut list,
                sync,
                irq,
            } => {
                if let Some(p) = list.pop() {
                    if !list.is_empty() {
                        let st = &mut self.tasks[curr as usize].kstack;
                        st.push(Frame::Wake { list, sync, irq });
                    }
                    self.try_to_wake_up(cpu, p, sync, irq);
                }
            }
            Frame::Schedule => self.schedule(cpu, curr),
            Frame::ReleaseSock { fd } => self.release_sock(cpu, fd),
            Frame::WakeQueue { wq } => {
                let (list, sync) = self.data_wake(cpu, wq);
                if !list.is_empty() {
                    let st = &mut self.tasks[curr as usize].kstack;
                    st.push(Frame::Wake {
                        list,
                        sync,
                        irq: false,
                    });
                }
            }
            Frame::NewTask { child, thread } => self.new_task(cpu, curr, child, thread),
            Frame::Tail { prev } => self.finish_task_switch(cpu, prev),
            Frame::Tick { user } => self.tick(cpu, curr, user),
            Frame::Ipi | Frame::TimerIrq => {
                let ns = self.machine.costs().irq_ns;
                self.charge(cpu, ns, Acct::Sched);
            }
            Frame::Idle => {
                // A flag another CPU sets later than this CPU's moment is not seen
                // yet: the IPI that setter sent wakes the halted CPU. A polling idle
                // loop (`idle=poll`, no IPI) sees it when it is set.
                let clock = self.cpus[cpu].clock;
                let st = &mut self.tasks[curr as usize];
                st.kstack.push(Frame::Idle);
                let poll = self.machine.costs().idle_poll && st.need_resched;
                if poll && st.need_resched_at > clock {
                    let wait = st.need_resched_at - clock;
                    self.charge(cpu, wait, Acct::Idle);
                    self.tasks[curr as usize].kstack.push(Frame::Schedule);
                } else if st.sees_need_resched(clock) {
                    st.kstack.push(Frame::Schedule);
                } else {
                    self.cpus[cpu].halted = true;
                    return false;
                }
            }
        }
        true
    }

    fn take_interrupts(&mut self, cpu: CpuId) {
        let c = &mut self.cpus[cpu];
        let ticks = std::mem::take(&mut c.pending_ticks);
        let ipi = std::mem::take(&mut c.pending_ipi);
        let mut fired = std::mem::take(&mut c.hrtimers_fired);
        let curr = c.curr;
        let st = &mut self.tasks[curr as usize].kstack;
        let user = st.last().is_some_and(Frame::is_user);
        st.push(Frame::IrqExit { user });
        if !fired.is_empty() {
            // hrtimer_interrupt: the interrupt's entry, then one wake-up per expired timer.
            fired.reverse();
            st.push(Frame::Wake {
                list: fired,
                sync: false,
                irq: true,
            });
            st.push(Frame::TimerIrq);
        }
        if ipi {
            st.push(Frame::Ipi);
        }
        for _ in 0..ticks {
            st.push(Frame::Tick { user });
        }
    }

    /// Ask the program of `task` for its next operation and start it. Returns false when
    /// the run must stop (the workload recorded an error or asked to stop).
    fn user_op(&mut self, cpu: CpuId, task: TaskId) -> bool {
        let t = &mut self.tasks[task as usize];
        let ret = std::mem::take(&mut t.ret);
        let mut env = Env {
            ret,
            now: self.cpus[cpu].clock,
            pid: t.pid,
            cpu,
            ctxt: self.stats.context_switches,
            rng: &mut self.rng,
            rec: &mut self.rec,
        };
        let prog = self.programs[task as usize]
            .as_mut()
            .expect("user task without a program");
        let op = prog.next(&mut env);
        if self.rec.error.is_some() || self.rec.stop {
            self.tasks[task as usize].kstack.push(Frame::User);
            self.stop_at = Some(self.cpus[cpu].clock.max(self.now));
            self.stopped = true;
            return false;
        }
        let sys = match op {
            Op::Compute { ns, ws } => {
                let st = &mut self.tasks[task as usize].kstack;
                st.push(Frame::User);
                // A zero-length computation touches nothing (as before passes existed).
                let todo = if ns > 0 { ws } else { 0 };
                st.push(Frame::Compute { left: ns, ws, todo });
                return true;
            }
            Op::Read { fd, len } => Sys::Read {
                fd,
                len,
                done: 0,
                again: false,
            },
            Op::Write { fd, len } => Sys::Write {
                fd,
                len,
                done: 0,
                started: false,
                waiting: false,
            },
            Op::Poll { fds } => Sys::Poll {
                fds: fds.into_boxed_slice(),
                registered: false,
            },
            Op::Yield => Sys::Yield,
            Op::Sleep { ns } => Sys::Sleep { ns, armed: false },
            Op::Fork { child } => Sys::Fork {
                child,
                thread: false,
            },
            Op::Clone { child } => Sys::Fork {
                child,
                thread: true,
            },
            Op::Exec { program } => Sys::Exec { program },
            Op::Exit => Sys::Exit,
            Op::Wait => Sys::Wait,
            Op::Pipe => Sys::Open {
                kind: super::chan::StreamKind::Pipe,
                nodelay: false,
            },
            Op::SocketPair => Sys::Open {
                kind: super::chan::StreamKind::Unix,
                nodelay: false,
            },
            Op::TcpPair { nodelay } => Sys::Open {
                kind: super::chan::StreamKind::Tcp,
                nodelay,
            },
            Op::UdpPair => Sys::Open {
                kind: super::chan::StreamKind::Udp,
                nodelay: false,
            },
            Op::Close { fd } => Sys::Close { fd },
            Op::Nice { inc } => Sys::Nice { inc },
            Op::SetAffinity { mask } => Sys::SetAffinity { mask },
            Op::SleepUntil { at } => Sys::SleepUntil { at, armed: false },
            Op::Sync(op) => Sys::Sync {
                op,
                again: false,
                generation: 0,
            },
        };
        // A pthread call starts in user mode: the kernel entry is charged by its slow path.
        let entry = match &sys {
            Sys::Sync { op, .. } => op.is_syscall(),
            _ => true,
        };
        if entry {
            let ns = self.machine.costs().syscall_ns;
            self.charge(cpu, ns, Acct::Running);
            self.stats.syscalls += 1;
        }
        let st = &mut self.tasks[task as usize].kstack;
        st.push(Frame::User);
        st.push(Frame::SysExit);
        st.push(Frame::Sys(sys));
        true
    }

    /// Start (or resume) a pass of `left` ns of user-mode work that touches `todo` bytes
    /// of a `ws`-byte working set: pay the refill of what this CPU's caches lack, then
    /// stay in user mode until the end (or an interrupt rewinds us). The touched bytes
    /// are recorded in the cache when the pass ends, or in part when it is cut.
    ///
    /// A pass over more than [`PASS_STEP`] bytes runs in steps of that many, each with
    /// its share of the computation and of the misses (the cache spreads the rest's misses
    /// evenly), so the bus is asked for one step's lines at a time: a cut then leaves at
    /// most one step's reservation behind, and no request outruns the bus calendar.
    fn compute(&mut self, cpu: CpuId, task: TaskId, left: Time, ws: u64, todo: u64) {
        let costs = self.machine.costs();
        let mut miss = self.cache.lookup(cpu, task, ws, todo);
        let (mut now_ns, step) = (left, todo.min(PASS_STEP));
        if step < todo {
            let share = |x: u64| (u128::from(x) * u128::from(step) / u128::from(todo)) as u64;
            miss.from_l2 = share(miss.from_l2);
            miss.from_llc = share(miss.from_llc);
            miss.from_outside = share(miss.from_outside);
            now_ns = share(left);
            self.tasks[task as usize].kstack.push(Frame::Compute {
                left: left - now_ns,
                ws,
                todo: todo - step,
            });
        }
        let start = self.cpus[cpu].clock;
        let stall = costs.stream_refill_ns(miss.from_l2, miss.from_outside)
            + costs.llc_refill_ns(miss.from_llc)
            + self.ic.stream(start, miss.from_outside, None, cpu);
        self.charge(cpu, stall + now_ns, Acct::Running);
        let c = &mut self.cpus[cpu];
        c.user = Some(UserPass {
            start,
            end: c.clock,
            compute: now_ns,
            ws,
            todo: step,
            rest: todo,
        });
        // The frame below the popped Compute frame (User, or the pass's next step)
        // continues after it.
        self.suspend(cpu);
    }

    fn tick(&mut self, cpu: CpuId, curr: TaskId, user: bool) {
        self.stats.ticks += 1;
        let jiffies = self.jiffies_at(self.cpus[cpu].clock);
        let timers = &mut self.cpus[cpu].timers;
        if timers.iter().any(|&(exp, _)| exp <= jiffies) {
            // determinism: timers fire in the order they were armed.
            let mut fired = crate::kernel::types::WakeList::new();
            timers.retain(|&(exp, t)| {
                if exp <= jiffies {
                    fired.push(t);
                    false
                } else {
                    true
                }
            });
            fired.reverse();
            self.tasks[curr as usize].kstack.push(Frame::Wake {
                list: fired,
                sync: false,
                irq: true,
            });
        }
        self.scheduler_tick(cpu, curr, user);
        // The timer softirq's delayed ACKs, after the tick's scheduler work (their cost
        // moves this CPU's clock on; the wake-ups wait for it). What an ACK lets Nagle
        // send reaches its reader once that work has elapsed.
        let acked = self.tcp_delack_timers(cpu, jiffies);
        self.push_wakes(curr, acked, true);
    }

    /// `switch_mm`'s locked bit operations on `cpu_vm_mask`: `test_and_set_bit` on the
    /// same mm (not in 6.x: [`super::release::Release::same_mm_switch_writes_cpumask`]),
    /// or `clear_bit` on the old one and `set_bit` on the new one.
    fn switch_mm_lines(&mut self, cpu: CpuId, active: u32, mm: u32) -> Time {
        if active == mm && !self.class.release().same_mm_switch_writes_cpumask() {
            return 0;
        }
        let mut ns = self.pull_mm_line(cpu, mm, super::MmLine::VmMask);
        if active != mm && active != 0 {
            ns += self.pull_mm_line(cpu, active, super::MmLine::VmMask);
        }
        if ns > 0 {
            self.stats.vm_mask_transfers += 1;
        }
        ns
    }

    /// What switching `next` in on `cpu` costs by the host's reuse-distance curves
    /// (`task_refill_ns`, after a wake-up `wake_refill_ns`, to another mm `mm_refill_ns`,
    /// each by the switches `cpu` made since it last switched that task or mm in; never:
    /// the last band); `None` where the preset has no curves or `switch_refill=off`.
    /// Records the mm's switch-in.
    fn switch_refill(&mut self, cpu: CpuId, next: TaskId, new_mm: bool) -> Option<Time> {
        let costs = self.machine.costs();
        if !self.machine.switch_refill || costs.task_refill_ns.is_empty() {
            return None;
        }
        let now_n = self.cpus[cpu].nr_switches;
        let n = &self.tasks[next as usize];
        // `last_in` counts the switches of the CPU the task last ran on: here only.
        let d = if n.last_ran == Some(cpu) {
            now_n - n.last_in
        } else {
            u64::MAX
        };
        let mut ns = costs.task_refill_ns.band(d);
        if n.woken_at != super::task::NOT_WOKEN {
            ns += costs.wake_refill_ns.band(d);
        }
        let mm = n.mm;
        let last = &mut self.mm_lines_of(mm).last_in;
        let i = last.iter().position(|&(c, _)| c == cpu);
        if new_mm {
            let dm = i.map_or(u64::MAX, |i| now_n - last[i].1);
            ns += costs.mm_refill_ns.band(dm);
        }
        match i {
            Some(i) => last[i].1 = now_n + 1,
            None => last.push((cpu, now_n + 1)),
        }
        Some(ns)
    }

    pub(crate) fn context_switch(&mut self, cpu: CpuId, prev: TaskId, next: TaskId) {
        let costs = self.machine.costs();
        let n = &self.tasks[next as usize];
        let mut cost = costs.switch_ns;
        if !n.is_idle {
            let (mm, active) = (n.mm, self.cpus[cpu].active_mm);
            if mm != active {
                cost += costs.switch_mm_ns;
            }
            cost += self.switch_mm_lines(cpu, active, mm);
            let n = &self.tasks[next as usize];
            let from = n.last_ran.filter(|&o| o != cpu);
            let miss = self
                .cache
                .touch_kernel(cpu, next, costs.kernel_footprint_bytes);
            let back = self.tasks[next as usize].last_ran == Some(cpu);
            let refill = self.switch_refill(cpu, next, mm != active);
            if let Some(ns) = refill.filter(|_| back) {
                // Back on the CPU it last ran on: what it lost there since, by the host's
                // curves. A task from another CPU, or new, and every task where none were
                // measured: the cache model's refill.
                self.stats.switch_refill_ns += ns;
                cost += ns;
            } else {
                // The footprint's lines in the L2 are reached pointer by pointer: where
                // the preset measured what such a load costs, that is their price. Beyond
                // the L2 the misses overlap as a stream's do (the P6's calibration,
                // B§6.3).
                let from_l2 = match costs.l2_latency_ns_per_kb {
                    Some(per_kb) => miss.from_l2 * costs.line_bytes * per_kb / 1024,
                    None => costs.stream_refill_ns(miss.from_l2, 0),
                };
                let outside = match from {
                    Some(o) => miss.from_outside * self.machine.stream_line_ns(o, cpu),
                    None => costs.stream_refill_ns(0, miss.from_outside),
                };
                let now = self.cpus[cpu].clock;
                cost += from_l2
                    + costs.llc_refill_ns(miss.from_llc)
                    + outside
                    + self.ic.stream(now, miss.from_outside, from, cpu);
            }
        }
        // The exiting task's parent learns of the zombie once it is off the CPU (2.4's
        // release_task waits for that anyway).
        let mut notify = crate::kernel::types::WakeList::new();
        if self.tasks[prev as usize].state == TaskState::Zombie {
            match self.tasks[prev as usize].parent {
                Some(pp) => {
                    self.tasks[pp as usize].zombies.push_back(prev);
                    let wq = self.tasks[pp as usize].wait_chldexit;
                    notify = self.take_waiters(cpu, wq, 0);
                }
                None => self.release(cpu, prev),
            }
        }
        self.charge(cpu, cost, Acct::Sched);
        let now = self.cpus[cpu].clock;
        let p = &mut self.tasks[prev as usize];
        p.on_cpu = None;
        if !p.is_idle {
            let runnable = p.state == TaskState::Running;
            p.stats.sched.switched_out(runnable, now);
        }
        let c = &mut self.cpus[cpu];
        c.curr = next;
        c.nr_switches += 1;
        self.idle_cpus.set_last_schedule(cpu, now);
        self.idle_cpus.note(cpu, &self.cpus[cpu]);
        // The one place a context switch is counted, and traced: the trace's
        // `sched_switch` events are `counters.context_switches` by construction.
        self.stats.context_switches += 1;
        if let Some(t) = self.trace.as_mut() {
            let prev_state = self.tasks[prev as usize].state;
            t.event(&crate::kernel::events::KEvent::Switch {
                cpu,
                ts: now,
                prev,
                next,
                prev_state,
            });
        }
        let n = &mut self.tasks[next as usize];
        n.on_cpu = Some(cpu);
        if n.woken_at != super::task::NOT_WOKEN {
            // The waker's clock can be ahead of this CPU's (CPU clocks advance separately
            // between events; on a machine with IPIs cheaper than the waker's remaining
            // work this shows): a task switched in at or before its wake-up waited 0.
            self.stats
                .wakeup_latency
                .record(now.saturating_sub(n.woken_at));
            n.woken_at = super::task::NOT_WOKEN;
        }
        if !n.is_idle {
            self.cpus[cpu].active_mm = n.mm;
            self.stats.task_switches += 1;
            if n.last_ran.is_some_and(|l| l != cpu) {
                self.stats.unaffine_switches += 1;
            }
            n.last_ran = Some(cpu);
            n.last_in = self.cpus[cpu].nr_switches;
            n.stats.switches_in += 1;
            n.stats.sched.wait_end(now);
        }
        if !notify.is_empty() {
            n.kstack.push(Frame::Wake {
                list: notify,
                sync: false,
                irq: false,
            });
        }
        n.kstack.push(Frame::Tail { prev });
        // The run ends when no task is left alive and the last zombie is off its CPU:
        // stopping at the exit itself would drop the exit's own `schedule()` whenever an
        // interrupt taken on the way pushes it past the stop time.
        if self.live_tasks == 0
            && self.stop_at.is_none()
            && self.tasks[prev as usize].state != TaskState::Running
            && self
                .cpus
                .iter()
                .all(|c| self.tasks[c.curr as usize].state != TaskState::Zombie)
        {
            self.stop_at = Some(now);
        }
    }
}
