//! A run queue shaped as a list, priced by the cost rule ([`SchedCtx`]'s module doc):
//! the kit a policy whose queue is a list builds on (`fifo`; sched_ext's dispatch queues).
//!
//! [`RunLists`] holds one or more FIFO lists of tasks — one for every CPU (a global round
//! robin, 2.4's `runqueue_head`), one per CPU (MQ), one per dispatch queue — each with its
//! head on a named line and its lock on that line (a `struct rq` or `runqueue_data`: the
//! lock and the head it protects move together), and one entry per task saying which list
//! holds it (`p->on_rq` with `p->run_list`), grown at fork.
//!
//! What each operation charges is what the kernel's `list_head` operations write:
//! * [`RunLists::push_back`] (`list_add_tail`): the head (`head->prev`), the old tail's
//!   line (its `next`) and the task's own (its links); [`RunLists::push_front`]
//!   (`list_add`) the same with the old first task;
//! * [`RunLists::remove`] (`list_del`): the lines of both neighbours (a task's, or the
//!   head's) and the task's own;
//! * [`RunLists::pop_first_allowed`]: the head read, then each task from the front
//!   weighed (a read of [`Shared::Task`]) until one may run on the picking CPU, then
//!   its `list_del`.
//!
//! Under the list's lock the head is the holder's, so its reads and writes are hits; the
//! task lines are where their last writer left them. A lock-free look at a list
//! ([`RunLists::seen_empty`]) reads the head line from wherever it is.
//!
//! # What a shared list means for the rest of the kernel
//!
//! * **`processor`.** With one list for several CPUs, a task is on no CPU's queue in
//!   particular: its `processor` is where it ran last, and the picking CPU becomes its
//!   `processor` when it is picked ([`SchedCtx::set_task_cpu`], as 2.4's `schedule()` set
//!   `p->processor = this_cpu`). A pick on another CPU than last time is a migration,
//!   counted as every policy counts one.
//! * **The affinity gap.** A task whose affinity no longer allows the CPU it runs on is
//!   not pushed back by `schedule()`: it is on no list between the pick and the end of the
//!   switch, when the core places it on an allowed CPU through `select_task_rq` (the
//!   core's `finish_switch`).
//! * **Idle kicks.** A wake-up onto a shared list kicks an idle CPU; [`kick_idle_cpu`]
//!   passes over an idle CPU already kicked and not yet rescheduled, so that a second
//!   wake-up wakes a second CPU instead of re-kicking the first while another sleeps.
//!
//! Invariants ([`RunLists::check`]): a task is on at most one list, exactly where its
//! entry says; a listed task is runnable and on no CPU.

use crate::kernel::sched::Curr;
use std::collections::VecDeque;

use crate::kernel::task::{TaskId, TaskState};
use crate::kernel::Kernel;
use crate::machine::{CpuId, LineId, LockId};

use super::{SchedCtx, Shared};

/// Not on any list.
const NONE: u32 = u32::MAX;

/// One list: its tasks, front first, its head's line and its lock.
#[derive(Debug)]
struct List {
    tasks: VecDeque<TaskId>,
    head: LineId,
    lock: LockId,
}

/// Lists of runnable tasks, each with its head line and lock, and which list holds each
/// task.
#[derive(Debug, Default)]
pub struct RunLists {
    lists: Vec<List>,
    on_list: Vec<u32>,
}

impl RunLists {
    /// `n` lists, made at the class's `init`: list `q`'s head is a line named `head`
    /// (declared as CPU `q`'s when `per_cpu`), its lock one named `lock` on that line.
    pub fn new(
        ctx: &mut SchedCtx<'_>,
        n: usize,
        per_cpu: bool,
        head: &'static str,
        lock: &'static str,
    ) -> Self {
        let lists = (0..n)
            .map(|q| {
                let line = ctx.new_line(head, per_cpu.then_some(q));
                List {
                    tasks: VecDeque::new(),
                    head: line,
                    lock: ctx.new_lock(lock, Some(line)),
                }
            })
            .collect();
        RunLists {
            lists,
            on_list: Vec::new(),
        }
    }

    /// Make room for task `p` (from `task_fork`): on no list.
    pub fn fork(&mut self, p: TaskId) {
        let n = p as usize + 1;
        if self.on_list.len() < n {
            self.on_list.resize(n, NONE);
        }
        assert_eq!(
            self.on_list[p as usize], NONE,
            "task {p} forked while queued"
        );
    }

    /// List `q`'s lock.
    pub fn lock(&self, q: usize) -> LockId {
        self.lists[q].lock
    }

    /// List `q`'s head line.
    pub fn head(&self, q: usize) -> LineId {
        self.lists[q].head
    }

    /// The list holding `p`, if any (`p->on_rq`: the task's own line, free to the caller
    /// that has it in hand).
    pub fn queued(&self, p: TaskId) -> Option<usize> {
        match self.on_list.get(p as usize) {
            Some(&q) if q != NONE => Some(q as usize),
            _ => None,
        }
    }

    /// Tasks on list `q`, for its lock's holder (the count lives in the head's line).
    pub fn len(&self, ctx: &SchedCtx<'_>, q: usize) -> usize {
        debug_assert!(ctx.holds(self.lists[q].lock), "len of an unlocked list");
        self.lists[q].tasks.len()
    }

    /// Whether list `q` looks empty to a lock-free reader: the head line read from
    /// wherever it is.
    pub fn seen_empty(&self, ctx: &mut SchedCtx<'_>, q: usize) -> bool {
        ctx.read(Shared::Line(self.lists[q].head));
        self.lists[q].tasks.is_empty()
    }

    /// The tasks of list `q`, front first (no charge: a walk charges what it examines).
    pub fn iter(&self, q: usize) -> impl ExactSizeIterator<Item = TaskId> + '_ {
        self.lists[q].tasks.iter().copied()
    }

    /// `list_add_tail(&p->run_list, head)`, with list `q`'s lock held.
    pub fn push_back(&mut self, ctx: &mut SchedCtx<'_>, q: usize, p: TaskId) {
        self.add(ctx, q, p, false);
    }

    /// `list_add(&p->run_list, head)`: at the front, with list `q`'s lock held.
    pub fn push_front(&mut self, ctx: &mut SchedCtx<'_>, q: usize, p: TaskId) {
        self.add(ctx, q, p, true);
    }

    /// Link `p` next to the head (at the front, or at the tail): the head's line, the
    /// neighbour's and `p`'s own written.
    fn add(&mut self, ctx: &mut SchedCtx<'_>, q: usize, p: TaskId, front: bool) {
        self.link(ctx, q, p);
        let list = &mut self.lists[q];
        ctx.write(Shared::Line(list.head));
        let neighbour = if front {
            list.tasks.front()
        } else {
            list.tasks.back()
        };
        if let Some(&t) = neighbour {
            ctx.write(Shared::Task(t));
        }
        ctx.write(Shared::Task(p));
        if front {
            list.tasks.push_front(p);
        } else {
            list.tasks.push_back(p);
        }
    }

    fn link(&mut self, ctx: &SchedCtx<'_>, q: usize, p: TaskId) {
        debug_assert!(ctx.holds(self.lists[q].lock), "push onto an unlocked list");
        let e = self
            .on_list
            .get_mut(p as usize)
            .unwrap_or_else(|| panic!("task {p} pushed before RunLists::fork saw it"));
        assert_eq!(*e, NONE, "task {p} pushed onto list {q} while on list {e}");
        *e = q as u32;
    }

    /// The first task of list `q` allowed on `cpu`, taken off: the head read, each task
    /// from the front examined until one is allowed, then its `list_del`. With `q`'s lock
    /// held.
    pub fn pop_first_allowed(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        q: usize,
        cpu: CpuId,
    ) -> Option<TaskId> {
        debug_assert!(ctx.holds(self.lists[q].lock), "pop from an unlocked list");
        ctx.read(Shared::Line(self.lists[q].head));
        let i = (0..self.lists[q].tasks.len()).find(|&i| {
            let t = self.lists[q].tasks[i];
            ctx.read(Shared::Task(t));
            ctx.allowed(t, cpu)
        })?;
        Some(self.unlink_at(ctx, q, i))
    }

    /// `list_del(&p->run_list)` of a queued `p`, with its list's lock held. False when
    /// `p` was on no list.
    pub fn remove(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) -> bool {
        let Some(q) = self.queued(p) else {
            return false;
        };
        debug_assert!(
            ctx.holds(self.lists[q].lock),
            "remove from an unlocked list"
        );
        let i = self.lists[q]
            .tasks
            .iter()
            .position(|&t| t == p)
            .expect("a queued task is on its list");
        self.unlink_at(ctx, q, i);
        true
    }

    /// Unlink the `i`th task of list `q`: its neighbours' lines and its own written.
    fn unlink_at(&mut self, ctx: &mut SchedCtx<'_>, q: usize, i: usize) -> TaskId {
        let list = &mut self.lists[q];
        let neighbour = |j: Option<usize>| match j.and_then(|j| list.tasks.get(j)) {
            Some(&t) => Shared::Task(t),
            None => Shared::Line(list.head),
        };
        let (prev, next) = (neighbour(i.checked_sub(1)), neighbour(Some(i + 1)));
        ctx.write(prev);
        if next != prev {
            // (The only task's neighbours are both the head: one line, written once.)
            ctx.write(next);
        }
        let p = list.tasks.remove(i).expect("index within the list");
        ctx.write(Shared::Task(p));
        self.on_list[p as usize] = NONE;
        p
    }

    /// The invariants (module doc); `Err` names the first violation.
    pub fn check(&self, k: &Kernel) -> Result<(), String> {
        let mut seen = 0usize;
        for (q, list) in self.lists.iter().enumerate() {
            for &t in &list.tasks {
                seen += 1;
                if self.on_list.get(t as usize) != Some(&(q as u32)) {
                    return Err(format!("task {t} is on list {q}, not where its entry says"));
                }
                let task = k.task(t);
                if task.state != TaskState::Running || task.on_cpu.is_some() {
                    return Err(format!(
                        "list {q}: pid {} is {:?} on {:?}",
                        task.pid, task.state, task.on_cpu
                    ));
                }
            }
        }
        let entries = self.on_list.iter().filter(|&&q| q != NONE).count();
        if entries != seen {
            return Err(format!(
                "{entries} tasks say they are queued, {seen} are on the lists"
            ));
        }
        Ok(())
    }
}

/// Kick an idle CPU to run `p`, newly queued on a list several CPUs serve: `first` (the
/// task's last CPU) if it idles and may run `p`, else the lowest such CPU. Each CPU's
/// `curr` is read as the kernel reads it (a read of [`Curr`]). An idle CPU already
/// kicked (its idle task's `need_resched` set, not yet rescheduled) is passed over: it
/// will take one task, so this wake-up needs another CPU. Returns the CPU kicked.
pub fn kick_idle_cpu(ctx: &mut SchedCtx<'_>, p: TaskId, first: CpuId) -> Option<CpuId> {
    let free_idle = |ctx: &mut SchedCtx<'_>, c: CpuId| {
        ctx.allowed(p, c) && {
            let curr = ctx.read(Curr(c));
            curr == ctx.idle_task(c) && !ctx.task(curr).need_resched
        }
    };
    let target = if free_idle(ctx, first) {
        Some(first)
    } else {
        (0..ctx.nr_cpus()).find(|&c| c != first && free_idle(ctx, c))
    };
    if let Some(c) = target {
        // The idle task seen, not whatever runs there by now (2.4's reschedule_idle
        // sets `idle_task(cpu)->need_resched`): a CPU that has just picked a task is
        // not preempted by a kick meant for its idle loop.
        ctx.resched_idle(c);
    }
    target
}

#[cfg(test)]
mod tests {
    use super::{kick_idle_cpu, RunLists};
    use crate::kernel::sched::testbed::Bed;
    use crate::kernel::sched::SchedClass;
    use crate::kernel::task::{TaskId, TaskState};
    use crate::machine::CpuMask;

    fn bed(cpus: usize) -> Bed<Box<dyn SchedClass>> {
        let fifo = crate::policy::build_named("fifo", "piii700-1m", cpus).expect("fifo");
        Bed::new("piii700-1m:bus=off", cpus, fifo)
    }

    /// A bed with `n` runnable tasks (last run on CPU 0) and per-CPU lists.
    fn lists(b: &mut Bed<Box<dyn SchedClass>>, n: usize) -> (RunLists, Vec<TaskId>) {
        let cpus = b.k.cpus.len();
        let mut rq = b.with(0, |_, ctx| RunLists::new(ctx, cpus, true, "h", "l"));
        let tasks: Vec<TaskId> = (0..n).map(|i| b.task(0, 1 + i as u32, 0)).collect();
        for &p in &tasks {
            rq.fork(p);
            b.k.tasks[p as usize].state = TaskState::Running;
        }
        (rq, tasks)
    }

    /// What `op` on `cpu` costs, 2 µs after the latest clock.
    fn cost<R>(
        b: &mut Bed<Box<dyn SchedClass>>,
        cpu: usize,
        op: impl FnOnce(&mut crate::kernel::sched::SchedCtx<'_>) -> R,
    ) -> (R, u64) {
        let t = b.k.cpus.iter().map(|c| c.clock).max().unwrap() + 2_000;
        b.at(t);
        b.with(cpu, |_, ctx| {
            let r = op(ctx);
            (r, ctx.now() - t)
        })
    }

    #[test]
    fn a_pop_examines_the_tasks_it_passes_over_and_takes_the_first_allowed() {
        let mut b = bed(2);
        let (mut rq, t) = lists(&mut b, 3);
        let c = b.with(0, |_, ctx| ctx.costs());
        let l = rq.lock(0);
        b.with(0, |_, ctx| {
            ctx.lock(l);
            for &p in &t {
                rq.push_back(ctx, 0, p);
            }
            ctx.unlock(l);
        });
        // The first two may not run on CPU 1.
        for &p in &t[..2] {
            b.k.tasks[p as usize].cpus_allowed = CpuMask::single(0);
        }
        let (got, walk) = cost(&mut b, 1, |ctx| {
            ctx.lock(l);
            let got = rq.pop_first_allowed(ctx, 0, 1);
            ctx.unlock(l);
            got
        });
        assert_eq!(got, Some(t[2]));
        assert_eq!(rq.queued(t[2]), None);
        assert_eq!(rq.iter(0).collect::<Vec<_>>(), t[..2].to_vec());
        // Three tasks examined: more than three goodness computations and three lines.
        assert!(walk > c.lock_ns + 3 * c.task_examine_ns, "{walk} ns");
        let (none, _) = cost(&mut b, 1, |ctx| {
            ctx.lock(l);
            let got = rq.pop_first_allowed(ctx, 0, 1);
            ctx.unlock(l);
            got
        });
        assert_eq!(none, None, "nothing left that CPU 1 may run");
        rq.check(&b.k).unwrap();
    }

    #[test]
    fn a_lock_free_look_reads_the_head_from_its_last_writer() {
        let mut b = bed(2);
        let (mut rq, t) = lists(&mut b, 1);
        let c = b.with(0, |_, ctx| ctx.costs());
        let l = rq.lock(0);
        b.with(0, |_, ctx| {
            ctx.lock(l);
            rq.push_back(ctx, 0, t[0]);
            ctx.unlock(l);
        });
        let (empty, far) = cost(&mut b, 1, |ctx| rq.seen_empty(ctx, 0));
        assert!(!empty);
        assert_eq!(far, c.c2c_line_ns, "the head, modified in CPU 0's cache");
        let (_, again) = cost(&mut b, 1, |ctx| rq.seen_empty(ctx, 0));
        assert_eq!(again, c.l2_line_ns, "now shared in CPU 1's cache: a hit");
    }

    #[test]
    fn remove_unlinks_from_the_middle_and_check_finds_a_sleeper() {
        let mut b = bed(1);
        let (mut rq, t) = lists(&mut b, 3);
        let l = rq.lock(0);
        b.with(0, |_, ctx| {
            ctx.lock(l);
            for &p in &t {
                rq.push_back(ctx, 0, p);
            }
            assert!(rq.remove(ctx, t[1]));
            assert!(!rq.remove(ctx, t[1]), "already off");
            ctx.unlock(l);
        });
        assert_eq!(rq.iter(0).collect::<Vec<_>>(), vec![t[0], t[2]]);
        rq.check(&b.k).unwrap();
        b.k.tasks[t[2] as usize].state = TaskState::Interruptible;
        assert!(rq.check(&b.k).unwrap_err().contains("Interruptible"));
    }

    #[test]
    fn a_second_wake_up_kicks_a_second_idle_cpu() {
        let mut b = bed(4);
        let p = b.task(1, 1, 0);
        let q = b.task(1, 2, 0);
        let r = b.task(1, 3, 0);
        let before = b.k.stats.ipis;
        let kicked: Vec<_> = [p, q, r]
            .iter()
            .map(|&x| b.with(3, |_, ctx| kick_idle_cpu(ctx, x, 1)))
            .collect();
        // The last CPU first, then the lowest idle CPU not yet kicked.
        assert_eq!(kicked, vec![Some(1), Some(0), Some(2)]);
        assert_eq!(b.k.stats.ipis - before, 3, "one IPI per CPU kicked");
        // Once CPU 1 has rescheduled, it may be kicked again.
        b.schedule(1);
        assert_eq!(b.with(3, |_, ctx| kick_idle_cpu(ctx, p, 1)), Some(1));
    }
}
