//! Decisions of MQ on small hand-built states: remote steal (with failed trylocks and
//! the rescan), reschedule_idle's target order, pool confinement, the load balancer.

use std::collections::BTreeMap;

use super::*;
use crate::kernel::abi::{program, Op};
use crate::kernel::task::ALL_CPUS;
use crate::kernel::Acct;
use crate::sim::{RunConfig, Simulation};

const T0: u64 = 100_000;

/// A booted machine whose scheduler state is ours to build. The boot-time init task is
/// retired so that only the tasks a test creates exist.
struct Lab {
    sim: Simulation,
    mq: Mq,
}

fn lab(cpus: usize, cfg: impl FnOnce(&mut Config)) -> Lab {
    let mut sim = Simulation::new(RunConfig {
        machine: "piii700-2m".into(),
        cpus: Some(cpus),
        policy: "fifo".into(),
        workload: "lat_pipe".into(),
        seed: 1,
    })
    .unwrap();
    let init = cpus;
    sim.k.tasks[init].state = TaskState::Dead;
    for c in &mut sim.k.cpus {
        c.clock = T0;
    }
    let mut c = Config {
        name: "mq",
        hz: 100,
        pcp: 15,
        sync_wakeups: true,
        pool_size: cpus,
        lb_interval_ms: None,
        idle_bitmap: false,
    };
    cfg(&mut c);
    let mut mq = Mq::new(c, BTreeMap::new());
    let mut ctx = SchedCtx::new(&mut sim.k, 0, Acct::Sched);
    mq.init(&mut ctx);
    for c in 0..cpus {
        mq.task_new(&mut ctx, c as TaskId, None);
    }
    mq.task_new(&mut ctx, init as TaskId, None);
    Lab { sim, mq }
}

impl Lab {
    /// A runnable task of mm `mm` with `counter` ticks, queued on `cpu`.
    fn task(&mut self, cpu: CpuId, counter: i32, mm: u32) -> TaskId {
        let p = self
            .sim
            .create_task(None, program(|_| Op::Exit), mm, 0, ALL_CPUS, cpu);
        self.sim.k.tasks[p as usize].state = TaskState::Running;
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        self.mq.task_new(&mut ctx, p, None);
        self.mq.ts[p as usize].counter = counter;
        self.mq.lock_rq(&mut ctx, cpu);
        self.mq.add_to_runqueue(&mut ctx, p, true);
        ctx.unlock(self.mq.rq[cpu].lock);
        self.sync();
        p
    }

    /// A sleeping task whose last CPU is `cpu`.
    fn sleeper(&mut self, cpu: CpuId, counter: i32, mm: u32) -> TaskId {
        let p = self
            .sim
            .create_task(None, program(|_| Op::Exit), mm, 0, ALL_CPUS, cpu);
        self.sim.k.tasks[p as usize].state = TaskState::Interruptible;
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        self.mq.task_new(&mut ctx, p, None);
        self.mq.ts[p as usize].counter = counter;
        p
    }

    /// Run `schedule()` on `cpu` and perform the switch the kernel would.
    fn schedule(&mut self, cpu: CpuId) -> TaskId {
        let prev = self.sim.k.cpus[cpu].curr;
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        let next = self.mq.schedule(&mut ctx, cpu, prev);
        self.sync();
        let k = &mut self.sim.k;
        if next != prev {
            k.tasks[prev as usize].on_cpu = None;
            k.tasks[next as usize].on_cpu = Some(cpu);
            k.cpus[cpu].curr = next;
            if !k.tasks[next as usize].is_idle {
                k.cpus[cpu].active_mm = k.tasks[next as usize].mm;
            }
        }
        next
    }

    /// `try_to_wake_up(p, sync)` from `cpu`, then the kernel's state change.
    fn wake(&mut self, cpu: CpuId, p: TaskId, sync: bool) {
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        self.mq.try_to_wake_up(&mut ctx, p, sync);
        self.sync();
        self.sim.k.tasks[p as usize].state = TaskState::Running;
    }

    /// One load-balancer run on CPU 0.
    fn balance(&mut self) {
        let mut ctx = SchedCtx::new(&mut self.sim.k, 0, Acct::Sched);
        self.mq.load_balance(&mut ctx);
    }

    /// Make `cpu` look as if another CPU held its queue lock for `ns` more.
    fn hold_lock(&mut self, cpu: CpuId, ns: u64) {
        let l = self.mq.rq[cpu].lock as usize;
        self.sim.k.locks[l].free_at = self.now() + ns;
    }

    /// Global time: the latest CPU clock.
    fn now(&self) -> u64 {
        self.sim.k.cpus.iter().map(|c| c.clock).max().unwrap()
    }

    /// Let global time catch up with the CPU that worked last (the kernel runs the next
    /// hook only when its CPU is in sync).
    fn sync(&mut self) {
        let now = self.now();
        for c in &mut self.sim.k.cpus {
            c.clock = now;
        }
    }

    fn check(&self) {
        self.mq.check(&self.sim.k).unwrap();
    }
}

/// CPU 1 runs `a` with `b` waiting (published: na 26); CPU 2 runs `c` with `d` waiting
/// (published: na 22); CPU 0 is idle with an empty queue.
fn two_remote_queues(l: &mut Lab) -> [TaskId; 4] {
    let a = l.task(1, 9, 5);
    let b = l.task(1, 6, 5);
    assert_eq!(l.schedule(1), a, "higher counter first");
    assert_eq!(
        l.mq.rq[1].max_na_ptr,
        Some(b),
        "the second best is published"
    );
    assert_eq!(l.mq.rq[1].max_na_goodness, 26);
    let c = l.task(2, 9, 6);
    let d = l.task(2, 2, 6);
    assert_eq!(l.schedule(2), c);
    assert_eq!(l.mq.rq[2].max_na_goodness, 22);
    l.check();
    [a, b, c, d]
}

#[test]
fn idle_cpu_steals_the_best_published_task() {
    let mut l = lab(3, |_| {});
    let [_, b, ..] = two_remote_queues(&mut l);
    assert_eq!(l.schedule(0), b, "highest max_na_goodness is tried first");
    assert_eq!(l.sim.k.tasks[b as usize].processor, 0);
    assert!(l.mq.rq[0].list.contains(&b) && !l.mq.rq[1].list.contains(&b));
    assert_eq!(
        l.mq.rq[1].max_na_ptr, None,
        "queue 1 has nothing left to steal"
    );
    assert_eq!(l.sim.k.stats.migrations, 1);
    let s = &l.mq.st;
    assert_eq!(
        (s.remote_better, s.remote_lock_ok, s.remote_still_better),
        (1, 1, 1)
    );
    l.check();
}

#[test]
fn failed_trylock_moves_on_to_the_next_queue() {
    let mut l = lab(3, |_| {});
    let [_, b, _, d] = two_remote_queues(&mut l);
    l.hold_lock(1, 50_000);
    assert_eq!(l.schedule(0), d, "queue 1 is busy: steal from queue 2");
    assert_eq!(l.mq.st.premature_idle, 1);
    assert_eq!(l.mq.st.rescans, 0, "found a task: no rescan");
    assert_eq!(l.sim.k.tasks[b as usize].processor, 1);
    assert!(
        l.sim.k.locks[l.mq.rq[1].lock as usize]
            .stats
            .trylock_failures
            >= 1
    );
    l.check();
}

#[test]
fn premature_idle_rescans_until_a_lock_is_had() {
    let mut l = lab(3, |_| {});
    let [_, b, ..] = two_remote_queues(&mut l);
    let t = l.now();
    // Queue 2 has nothing better than idle to offer once we withdraw it: make 1 the only
    // candidate and keep its lock busy for a short while.
    l.mq.rq[2].max_na_goodness = MIN_GOODNESS;
    l.mq.rq[2].max_na_ptr = None;
    l.hold_lock(1, 1_000);
    assert_eq!(l.schedule(0), b, "the rescan steals once the lock frees");
    assert!(l.mq.st.rescans >= 1, "{:?}", l.mq.st);
    assert_eq!(l.mq.st.premature_idle, l.mq.st.rescans);
    assert!(
        l.sim.k.cpus[0].clock >= t + 1_000,
        "time passed while retrying"
    );
    l.check();
}

#[test]
fn proc_change_penalty_protects_the_local_best() {
    for (pcp, steals) in [(15, false), (0, true)] {
        let mut l = lab(3, |c| c.pcp = pcp);
        let [_, b, ..] = two_remote_queues(&mut l);
        // Local task: local_goodness 4 + 20 + 1 = 25 (same mm as CPU 0's active mm).
        let e = l.task(0, 4, 7);
        l.sim.k.cpus[0].active_mm = 7;
        let next = l.schedule(0);
        assert_eq!(next == b, steals, "pcp {pcp}: remote 26 vs local 25 + pcp");
        assert_eq!(next == e, !steals);
        l.check();
    }
}

/// CPU 0 runs a task of na 21, CPU 1 one of na 30; CPUs 2 and 3 are idle, 3 the longest.
fn placement_state(l: &mut Lab) {
    let x = l.task(0, 1, 1);
    assert_eq!(l.schedule(0), x);
    let y = l.task(1, 10, 2);
    assert_eq!(l.schedule(1), y);
    l.sim.k.cpus[2].last_schedule = 60_000;
    l.sim.k.cpus[3].last_schedule = 20_000;
}

#[test]
fn reschedule_idle_tries_the_longest_idle_cpu_first() {
    let mut l = lab(4, |_| {});
    placement_state(&mut l);
    let p = l.sleeper(1, 6, 9);
    l.wake(0, p, false);
    assert_eq!(l.sim.k.tasks[p as usize].processor, 3);
    assert!(l.sim.k.tasks[3].need_resched, "idle task of cpu 3 kicked");
    let s = &l.mq.st;
    assert_eq!(
        (
            s.resched_calls,
            s.resched_target_exists,
            s.resched_remote_lock_ok,
            s.resched_target_is_task_cpu
        ),
        (1, 1, 1, 0)
    );
    l.check();
}

#[test]
fn reschedule_idle_falls_back_to_the_next_target_when_a_trylock_fails() {
    let mut l = lab(4, |_| {});
    placement_state(&mut l);
    l.hold_lock(3, 50_000);
    let p = l.sleeper(1, 6, 9);
    l.wake(0, p, false);
    assert_eq!(l.sim.k.tasks[p as usize].processor, 2);
    assert!(l.sim.k.tasks[2].need_resched && !l.sim.k.tasks[3].need_resched);
    l.check();
}

#[test]
fn reschedule_idle_preempts_on_the_task_cpu_or_pays_the_penalty_elsewhere() {
    // No idle CPU: CPU 0 runs na 21, CPU 1 runs na 12. A task of na 26 last on CPU 0.
    for (pcp, target) in [(15, 0), (6, 1)] {
        let mut l = lab(2, |c| c.pcp = pcp);
        let x = l.task(0, 1, 1);
        assert_eq!(l.schedule(0), x);
        let z = l.task(1, 1, 2);
        l.mq.ts[z as usize].counter = 1;
        assert_eq!(l.schedule(1), z);
        l.mq.curr_na_goodness[1] = 12; // as if z had been reniced to +9
        l.sim.k.tasks[z as usize].nice = 9;
        let p = l.sleeper(0, 6, 9);
        l.wake(1, p, false);
        // Keys: cpu 0 (the task's): 21; cpu 1: 12 + pcp. Lowest first.
        assert_eq!(l.sim.k.tasks[p as usize].processor, target, "pcp {pcp}");
        let s = &l.mq.st;
        assert_eq!(s.resched_target_is_task_cpu, u64::from(target == 0));
        assert_eq!(s.resched_remote_lock_ok, u64::from(target == 1));
        assert!(l.sim.k.tasks[[x, z][target] as usize].need_resched);
        l.check();
    }
}

#[test]
fn sync_wakeup_queues_on_the_task_cpu_without_a_kick() {
    let mut l = lab(2, |_| {});
    let p = l.sleeper(1, 6, 9);
    l.wake(0, p, true);
    assert_eq!(l.sim.k.tasks[p as usize].processor, 1);
    assert!(l.mq.rq[1].list.contains(&p));
    assert!(!l.sim.k.tasks[1].need_resched);
    assert_eq!(l.mq.st.resched_calls, 0);
    assert_eq!(l.mq.rq[1].max_na_ptr, Some(p), "published for stealing");
}

#[test]
fn pools_confine_stealing_and_placement() {
    for bitmap in [false, true] {
        let mut l = lab(4, |c| {
            c.name = "mq-pool";
            c.pool_size = 2;
            c.idle_bitmap = bitmap;
        });
        // CPU 2 (other pool) runs a task with a waiting one; CPU 0 is idle.
        let a = l.task(2, 9, 1);
        let b = l.task(2, 8, 1);
        assert_eq!(l.schedule(2), a);
        assert_eq!(l.mq.rq[2].max_na_ptr, Some(b));
        assert_eq!(l.schedule(0), 0, "no stealing across pools");
        assert_eq!(l.mq.st.remote_better, 0);
        // CPU 1 (same pool) gets a stealable task: CPU 0 takes it.
        let c = l.task(3, 9, 1);
        assert_eq!(l.schedule(3), c);
        let d = l.task(1, 9, 1);
        let e = l.task(1, 8, 1);
        assert_eq!(l.schedule(1), d);
        assert_eq!(l.schedule(0), e, "stealing inside the pool");
        // CPU 1 goes idle; then a task last on CPU 3 wakes while its pool (2-3) is all
        // busy: only the non-idle bitmap can send it to CPU 1.
        let q = l.sleeper(3, 6, 4);
        l.sim.k.tasks[d as usize].state = TaskState::Interruptible;
        assert_eq!(l.schedule(1), 1);
        l.wake(3, q, false);
        let cpu = l.sim.k.tasks[q as usize].processor;
        if bitmap {
            assert_eq!(cpu, 1, "idle CPU of the other pool found in the bitmap");
            assert_eq!(l.mq.st.resched_bitmap_moves, 1);
        } else {
            assert!(cpu == 2 || cpu == 3, "stays in its pool, got {cpu}");
        }
        l.check();
    }
}

#[test]
fn load_balancer_equalises_queue_lengths() {
    let mut l = lab(4, |c| {
        c.name = "mq-pool";
        c.pool_size = 1;
        c.lb_interval_ms = Some(500);
    });
    let tasks: Vec<TaskId> = (0..5).map(|i| l.task(0, 3 + i, 1)).collect();
    let run = l.schedule(0);
    let x = l.task(1, 5, 1);
    assert_eq!(l.schedule(1), x);
    l.balance();
    let lens: Vec<usize> = l.mq.rq.iter().map(|q| q.list.len()).collect();
    assert_eq!(lens, [2, 2, 1, 1], "6 tasks over 4 queues");
    assert_eq!(l.mq.st.lb_moves, 3);
    assert_eq!(
        l.sim.k.tasks[run as usize].processor, 0,
        "running task stays"
    );
    assert!(l.sim.k.tasks[2].need_resched && l.sim.k.tasks[3].need_resched);
    // The tail (longest queued) went first: the first task queued is the tail.
    assert_ne!(l.sim.k.tasks[tasks[0] as usize].processor, 0);
    l.check();
}
