//! Process lifecycle: `fork`/`clone`, `execve`, `exit`, `wait`, and the release of a reaped
//! task. The 2.4 limits (`RLIMIT_NPROC`, `max_threads`, `PID_MAX`) refuse a fork as the
//! real kernel did.

use crate::kernel::abi::{Program, EAGAIN, ECHILD};
use crate::kernel::frame::{Frame, Sys};
use crate::kernel::task::{SchedPolicy, Task, TaskId, TaskState, TaskStats};
use crate::kernel::{Acct, Kernel};
use crate::machine::CpuId;

use super::syscall::Outcome;

impl Kernel {
    /// `do_fork`, first half: refuse beyond the 2.4 limits, charge the copy. The task is
    /// created by the `NewTask` frame that follows, synced, so that it appears in the task
    /// table together with its scheduler state.
    pub(super) fn sys_fork(
        &mut self,
        cpu: CpuId,
        child: Box<dyn Program>,
        thread: bool,
    ) -> Outcome {
        if !self.fork_allowed() {
            self.refused_by_limit();
            return Outcome::Done(EAGAIN);
        }
        let costs = self.machine.costs();
        let ns = if thread {
            costs.clone_ns
        } else {
            costs.fork_ns
        };
        self.charge(cpu, ns, Acct::Running);
        let parent = self.cpus[cpu].curr;
        self.tasks[parent as usize]
            .kstack
            .push(Frame::NewTask { child, thread });
        Outcome::Done(0)
    }

    /// `RLIMIT_NPROC`, `max_threads` and `PID_MAX` (benchmarks.md §1.4).
    pub(super) fn fork_allowed(&self) -> bool {
        super::limits::Limit::for_fork(&self.machine, self.live_tasks, self.next_pid as u64)
            .is_none()
    }

    /// Remember the first limit that refused a fork, for the run's error.
    fn refused_by_limit(&mut self) {
        let hit =
            super::limits::Limit::for_fork(&self.machine, self.live_tasks, self.next_pid as u64);
        self.limit_hit = self.limit_hit.or(hit);
    }

    /// `do_fork`, second half (synced): create the child, let the class split the
    /// timeslice and place it; the parent's `fork()` returns the child's pid.
    pub(super) fn new_task(
        &mut self,
        cpu: CpuId,
        parent: TaskId,
        child: Box<dyn Program>,
        thread: bool,
    ) {
        if !self.fork_allowed() {
            self.refused_by_limit();
            self.tasks[parent as usize].ret = EAGAIN;
            return;
        }
        let p = &self.tasks[parent as usize];
        let mm = if thread {
            p.mm
        } else {
            self.next_mm += 1;
            self.next_mm - 1
        };
        let (nice, allowed) = (p.nice, p.cpus_allowed);
        let comm = self.trace.as_ref().and_then(|_| child.comm());
        let id = self.create_task(Some(parent), child, mm, nice, allowed, cpu);
        self.kmem_fork(id, thread);
        if let Some(t) = self.trace.as_mut() {
            t.event(&crate::kernel::events::KEvent::Fork {
                cpu,
                ts: self.cpus[cpu].clock,
                parent,
                child: id,
                pid: self.tasks[id as usize].pid,
                thread,
                comm: comm.as_deref(),
            });
        }
        self.start_program(id, Some(Frame::SysExit));
        // A process's first steps in its copied mm (`fork_child_ns`), before it returns.
        let first = self.machine.costs().fork_child_ns;
        if !thread && first > 0 {
            self.tasks[id as usize].kstack.push(Frame::Compute {
                left: first,
                ws: 0,
                todo: 0,
            });
        }
        self.stats.forks += 1;
        self.wake_up_new_task(cpu, id, Some(parent));
        self.tasks[parent as usize].ret = self.tasks[id as usize].pid as i64;
    }

    /// Create a task in state `Uninterruptible` (not yet runnable) on `cpu`'s queue.
    pub(crate) fn create_task(
        &mut self,
        parent: Option<TaskId>,
        program: Box<dyn Program>,
        mm: u32,
        nice: i32,
        cpus_allowed: crate::machine::CpuMask,
        cpu: CpuId,
    ) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let pid = self.next_pid;
        self.next_pid += 1;
        let wait_chldexit = self.new_waitq();
        // A program without a name keeps its parent's, as fork() keeps the comm.
        let comm = program
            .comm()
            .or_else(|| parent.and_then(|q| self.tasks[q as usize].comm.clone()));
        self.tasks.push(Task {
            pid,
            comm,
            mm,
            nice,
            policy: SchedPolicy::Other,
            rt_priority: 0,
            cpus_allowed,
            processor: cpu,
            last_ran: None,
            last_in: 0,
            state: TaskState::Uninterruptible,
            on_cpu: None,
            need_resched: false,
            need_resched_at: 0,
            is_idle: false,
            parent,
            children: Vec::new(),
            child_slot: 0,
            zombies: Default::default(),
            wait_chldexit,
            kstack: Vec::with_capacity(8),
            ret: 0,
            wq_regs: Vec::new(),
            stats: TaskStats::default(),
            born_at: self.cpus[cpu].clock,
            start_offset: 0,
            woken_at: super::task::NOT_WOKEN,
        });
        self.programs.push(Some(program));
        if let Some(pp) = parent {
            let siblings = &mut self.tasks[pp as usize].children;
            let slot = siblings.len() as u32;
            siblings.push(id);
            self.tasks[id as usize].child_slot = slot;
        }
        self.live_tasks += 1;
        self.nr_threads += 1;
        self.mm_lines_of(mm).users += 1;
        self.ic.list_task(id);
        id
    }

    /// `execve()`: a fresh mm and a new program.
    pub(super) fn sys_exec(
        &mut self,
        cpu: CpuId,
        task: TaskId,
        program: Box<dyn Program>,
    ) -> Outcome {
        let ns = self.machine.costs().exec_ns;
        self.charge(cpu, ns, Acct::Running);
        let mm = self.next_mm;
        self.next_mm += 1;
        let old = std::mem::replace(&mut self.tasks[task as usize].mm, mm);
        self.mm_lines_of(old).users -= 1;
        self.mm_lines_of(mm).users += 1;
        let comm = program.comm();
        if comm.is_some() {
            self.tasks[task as usize].comm = comm.clone();
        }
        if let Some(t) = self.trace.as_mut() {
            t.event(&crate::kernel::events::KEvent::Exec {
                cpu,
                ts: self.cpus[cpu].clock,
                p: task,
                comm: comm.as_deref(),
            });
        }
        self.programs[task as usize] = Some(program);
        Outcome::Done(0)
    }

    pub(super) fn sys_exit(&mut self, cpu: CpuId, task: TaskId) -> Outcome {
        let ns = self.machine.costs().exit_ns;
        self.charge(cpu, ns, Acct::Running);
        self.tasks[task as usize].state = TaskState::Zombie;
        self.live_tasks -= 1;
        // exit_mm and exit_files: the zombie holds neither.
        let mm = self.tasks[task as usize].mm;
        self.mm_lines_of(mm).users -= 1;
        if let Some(t) = self.trace.as_mut() {
            let ts = self.cpus[cpu].clock;
            t.event(&crate::kernel::events::KEvent::Exit { cpu, ts, p: task });
        }
        // Orphans: reparented to nobody; a zombie orphan is released at once.
        let children = std::mem::take(&mut self.tasks[task as usize].children);
        self.tasks[task as usize].zombies.clear();
        for c in children {
            self.tasks[c as usize].parent = None;
            if self.tasks[c as usize].state == TaskState::Zombie
                && self.tasks[c as usize].on_cpu.is_none()
            {
                self.release(cpu, c);
            }
        }
        // The run stops once the last task has also left its CPU (see `context_switch`).
        Outcome::Exit
    }

    pub(super) fn sys_wait(&mut self, cpu: CpuId, task: TaskId) -> Outcome {
        if let Some(z) = self.tasks[task as usize].zombies.pop_front() {
            self.sched_reap(cpu, task, z);
            let ns = self.machine.costs().wait_ns;
            self.charge(cpu, ns, Acct::Running);
            let i = self.tasks[z as usize].child_slot as usize;
            let children = &mut self.tasks[task as usize].children;
            if children.get(i) == Some(&z) {
                children.swap_remove(i);
                if let Some(&moved) = children.get(i) {
                    self.tasks[moved as usize].child_slot = i as u32;
                }
            }
            let pid = self.tasks[z as usize].pid;
            self.release(cpu, z);
            return Outcome::Done(pid as i64);
        }
        if self.tasks[task as usize].children.is_empty() {
            return Outcome::Done(ECHILD);
        }
        let wq = self.tasks[task as usize].wait_chldexit;
        self.sleep_on(task, wq);
        Outcome::Block(Sys::Wait)
    }

    /// A reaped (or parentless) zombie becomes dead, on `cpu`; its cache lines are
    /// forgotten.
    pub(crate) fn release(&mut self, cpu: CpuId, p: TaskId) {
        if let Some(t) = self.trace.as_mut() {
            let ts = self.cpus[cpu].clock;
            t.event(&crate::kernel::events::KEvent::Free { cpu, ts, p });
        }
        let t = &mut self.tasks[p as usize];
        debug_assert_eq!(t.state, TaskState::Zombie);
        t.state = TaskState::Dead;
        t.kstack.clear();
        self.nr_threads -= 1;
        self.kmem_release(p);
        self.programs[p as usize] = None;
        self.cache.forget(p);
        self.ic.forget_task(p);
    }
}
