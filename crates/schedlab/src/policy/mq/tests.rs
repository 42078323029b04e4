//! Decisions of MQ on small hand-built states: remote steal (with failed trylocks and
//! the rescan), reschedule_idle's target order, pool confinement, the load balancer.

use std::collections::BTreeMap;

use super::*;
use crate::kernel::sched::testbed::Bed;

const T0: u64 = 100_000;

/// The shared bed on `cpus` CPUs of `piii700-2m`, every clock at `T0`, driving an MQ built
/// from the defaults as changed by `cfg`.
fn bed(cpus: usize, cfg: impl FnOnce(&mut Config)) -> Bed<Mq> {
    bed_on("piii700-2m", cpus, cfg)
}

/// [`bed`] on `machine` (a preset with model switches: `piii700-2m:bus=off`).
fn bed_on(machine: &str, cpus: usize, cfg: impl FnOnce(&mut Config)) -> Bed<Mq> {
    let mut c = Config {
        name: "mq",
        hz: 100,
        pcp: 15,
        sync_wakeups: true,
        pool_size: cpus,
        lb_interval_ms: None,
        idle_bitmap: false,
        version: MqVersion::V250,
    };
    cfg(&mut c);
    let mut b = Bed::new(machine, cpus, Mq::new(c, BTreeMap::new()));
    b.at(T0);
    b
}

/// What MQ's tests do on the bed beyond the core's sequences: states built by hand, and
/// global time kept in step. The kernel runs a hook only when its CPU has caught up with
/// global time, so a CPU must not `spin_trylock` a lock at a moment before another CPU
/// released it: `sched` and `wake_up` let every clock catch up with the CPU that worked.
trait MqBed {
    /// A runnable task of mm `mm` with `counter` ticks, queued on `cpu`
    /// (`add_to_runqueue`, no placement).
    fn queued(&mut self, cpu: CpuId, counter: i32, mm: u32) -> TaskId;
    /// A sleeping task of mm `mm` with `counter` ticks whose last CPU is `cpu`.
    fn sleeper(&mut self, cpu: CpuId, counter: i32, mm: u32) -> TaskId;
    /// `schedule()` on `cpu` (the bed's), then global time catches up.
    fn sched(&mut self, cpu: CpuId) -> TaskId;
    /// `try_to_wake_up(p, sync)` from `cpu` (the bed's), then global time catches up.
    fn wake_up(&mut self, cpu: CpuId, p: TaskId, sync: bool);
    /// One load-balancer run on CPU 0.
    fn balance(&mut self);
    /// Make `cpu` look as if another CPU held its queue lock for `ns` more.
    fn hold_lock(&mut self, cpu: CpuId, ns: u64);
    /// Global time: the latest CPU clock.
    fn now(&self) -> u64;
    /// Let every CPU's clock catch up with global time.
    fn sync(&mut self);
}

impl MqBed for Bed<Mq> {
    fn queued(&mut self, cpu: CpuId, counter: i32, mm: u32) -> TaskId {
        let p = self.sleeper(cpu, counter, mm);
        self.k.tasks[p as usize].state = TaskState::Running;
        self.with(cpu, |mq, ctx| {
            Mq::rq_lock(mq, ctx, cpu);
            mq.add_to_runqueue(ctx, p, true);
            ctx.unlock(mq.rq[cpu].lock);
        });
        self.sync();
        p
    }

    fn sleeper(&mut self, cpu: CpuId, counter: i32, mm: u32) -> TaskId {
        let p = self.task(cpu, mm, 0);
        self.class.core.set_counter(p, counter);
        p
    }

    fn sched(&mut self, cpu: CpuId) -> TaskId {
        let next = self.schedule(cpu);
        self.sync();
        next
    }

    fn wake_up(&mut self, cpu: CpuId, p: TaskId, sync: bool) {
        self.wake(cpu, p, sync);
        self.sync();
    }

    fn balance(&mut self) {
        self.with(0, |mq, ctx| mq.load_balance(ctx));
    }

    fn hold_lock(&mut self, cpu: CpuId, ns: u64) {
        let l = self.class.rq[cpu].lock as usize;
        self.k.locks[l].free_at = self.now() + ns;
    }

    fn now(&self) -> u64 {
        self.k.cpus.iter().map(|c| c.clock).max().unwrap()
    }

    fn sync(&mut self) {
        let now = self.now();
        self.at(now);
    }
}

/// CPU 1 runs `a` with `b` waiting (published: na 26); CPU 2 runs `c` with `d` waiting
/// (published: na 22); CPU 0 is idle with an empty queue.
fn two_remote_queues(l: &mut Bed<Mq>) -> [TaskId; 4] {
    let a = l.queued(1, 9, 5);
    let b = l.queued(1, 6, 5);
    assert_eq!(l.sched(1), a, "higher counter first");
    assert_eq!(
        l.class.rq[1].max_na.latest().ptr,
        Some(b),
        "the second best is published"
    );
    assert_eq!(l.class.rq[1].max_na.latest().goodness, 26);
    let c = l.queued(2, 9, 6);
    let d = l.queued(2, 2, 6);
    assert_eq!(l.sched(2), c);
    assert_eq!(l.class.rq[2].max_na.latest().goodness, 22);
    l.check().unwrap();
    [a, b, c, d]
}

#[test]
fn idle_cpu_steals_the_best_published_task() {
    let mut l = bed(3, |_| {});
    let [_, b, ..] = two_remote_queues(&mut l);
    assert_eq!(l.sched(0), b, "highest max_na_goodness is tried first");
    assert_eq!(l.k.tasks[b as usize].processor, 0);
    assert!(l.class.rq[0].list.contains(&b) && !l.class.rq[1].list.contains(&b));
    assert_eq!(
        l.class.rq[1].max_na.latest().ptr,
        None,
        "queue 1 has nothing left to steal"
    );
    assert_eq!(l.k.stats.migrations, 1);
    let s = &l.class.st;
    assert_eq!(
        (s.remote_better, s.remote_lock_ok, s.remote_still_better),
        (1, 1, 1)
    );
    l.check().unwrap();
}

/// Only queue 1 advertises a task (`b`); queue 2's advertisement is withdrawn.
fn one_remote_offer() -> (Bed<Mq>, TaskId) {
    let mut l = bed(3, |_| {});
    let [_, b, ..] = two_remote_queues(&mut l);
    let t = l.now();
    l.class.rq[2].max_na.set(t, MaxNa::NONE);
    (l, b)
}

#[test]
fn a_lock_free_read_can_be_overtaken_before_the_trylock() {
    // Issue 14 item 4: MQ reads `max_na_goodness` without the lock and re-checks it after
    // `spin_trylock`. Learn when CPU 0's trylock of queue 1 is granted in an undisturbed
    // run, then replay it with queue 1's advertisement withdrawn (as another CPU that
    // took `b` would) a moment before that grant — after CPU 0's lock-free read.
    let (mut quiet, b) = one_remote_offer();
    assert_eq!(quiet.sched(0), b);
    let granted = quiet.k.locks[quiet.class.rq[1].lock as usize].granted_at;

    let (mut l, b) = one_remote_offer();
    l.class.rq[1].max_na.set(granted - 1, MaxNa::NONE);
    assert_eq!(
        l.sched(0),
        0,
        "the re-check under the lock finds nothing to steal"
    );
    let s = &l.class.st;
    assert_eq!(
        (s.remote_better, s.remote_lock_ok, s.remote_still_better),
        (1, 1, 0),
        "counter 3 below counter 2"
    );
    assert_eq!(l.k.tasks[b as usize].processor, 1);

    // The same withdrawal dated before the read: nothing looks better, no trylock.
    let (mut early, _) = one_remote_offer();
    let t = early.now();
    early.class.rq[1].max_na.set(t, MaxNa::NONE);
    assert_eq!(early.sched(0), 0);
    let s = &early.class.st;
    assert_eq!((s.remote_better, s.remote_lock_ok), (0, 0));
}

#[test]
fn failed_trylock_moves_on_to_the_next_queue() {
    let mut l = bed(3, |_| {});
    let [_, b, _, d] = two_remote_queues(&mut l);
    l.hold_lock(1, 50_000);
    assert_eq!(l.sched(0), d, "queue 1 is busy: steal from queue 2");
    assert_eq!(l.class.st.premature_idle, 1);
    assert_eq!(l.class.st.rescans, 0, "found a task: no rescan");
    assert_eq!(l.k.tasks[b as usize].processor, 1);
    assert!(
        l.k.locks[l.class.rq[1].lock as usize]
            .stats
            .trylock_failures
            >= 1
    );
    l.check().unwrap();
}

#[test]
fn premature_idle_rescans_until_a_lock_is_had() {
    let mut l = bed(3, |_| {});
    let [_, b, ..] = two_remote_queues(&mut l);
    let t = l.now();
    // Queue 2 has nothing better than idle to offer once we withdraw it: make 1 the only
    // candidate and keep its lock busy for a short while.
    l.class.rq[2].max_na.set(t, MaxNa::NONE);
    l.hold_lock(1, 1_000);
    assert_eq!(l.sched(0), b, "the rescan steals once the lock frees");
    assert!(l.class.st.rescans >= 1, "{:?}", l.class.st);
    assert_eq!(l.class.st.premature_idle, l.class.st.rescans);
    assert!(l.k.cpus[0].clock >= t + 1_000, "time passed while retrying");
    l.check().unwrap();
}

#[test]
fn proc_change_penalty_protects_the_local_best() {
    for (pcp, steals) in [(15, false), (0, true)] {
        let mut l = bed(3, |c| c.pcp = pcp);
        let [_, b, ..] = two_remote_queues(&mut l);
        // Local task: local_goodness 4 + 20 + 1 = 25 (same mm as CPU 0's active mm).
        let e = l.queued(0, 4, 7);
        l.k.cpus[0].active_mm = 7;
        let next = l.sched(0);
        assert_eq!(next == b, steals, "pcp {pcp}: remote 26 vs local 25 + pcp");
        assert_eq!(next == e, !steals);
        l.check().unwrap();
    }
}

#[test]
fn the_2_4_ports_keep_a_still_running_prev_by_the_penalty() {
    // CPU 0 runs x (counter 5, its mm active) and is asked to reschedule with e queued
    // (counter 10, the same mm). 2.5.0 weighs both with local_goodness (26 against 31);
    // the 2.4 ports start from x's full goodness, PROC_CHANGE_PENALTY included
    // (5 + 20 + 1 + pcp), and weigh e without it (31).
    for (version, pcp, winner_is_e) in [
        (MqVersion::V250, 15, true),
        (MqVersion::V2414, 15, false),
        (MqVersion::V247, 15, false),
        (MqVersion::V2414, 4, true),
        (MqVersion::V2414, 5, false),
    ] {
        let mut l = bed(2, |c| {
            c.version = version;
            c.pcp = pcp;
        });
        let x = l.queued(0, 5, 1);
        assert_eq!(l.sched(0), x);
        l.k.cpus[0].active_mm = 1;
        let e = l.queued(0, 10, 1);
        let next = l.sched(0);
        assert_eq!(
            next == e,
            winner_is_e,
            "{version:?}, pcp {pcp}: x 26 (+pcp in 2.4) against e 31"
        );
        l.check().unwrap();
    }
}

#[test]
fn only_2_5_0_moves_a_yielder_to_its_queue_tail() {
    for (version, moved) in [
        (MqVersion::V250, true),
        (MqVersion::V2414, false),
        (MqVersion::V247, false),
    ] {
        let mut l = bed(2, |c| c.version = version);
        let b = l.queued(0, 5, 2);
        let a = l.queued(0, 9, 1);
        assert_eq!(l.sched(0), a);
        assert_eq!(l.class.rq[0].list, [a, b]);
        l.sched_yield(0);
        assert!(
            l.class.core.yielding(a),
            "{version:?}: b waits, so a yields"
        );
        let order = if moved { [b, a] } else { [a, b] };
        assert_eq!(l.class.rq[0].list, order, "{version:?}");
        assert_eq!(l.sched(0), b);
        l.check().unwrap();
    }
}

#[test]
fn the_2_4_7_port_preempts_only_by_more_than_one() {
    // CPU 0 runs x (counter 1, na 21, mm 1 active); CPU 1 runs z (na 30). p (counter 3,
    // na 23, another mm) wakes, last on CPU 0: preemption_goodness(x, p, 0) =
    // (3 + 20 + 15) − (1 + 20 + 15 + 1) = 1. 2.4.14 and 2.5.0 preempt on > 0; 2.4.7 (as
    // 2.4.0–2.4.9's `max_prio = 1`) wants > 1 and leaves p queued on CPU 0.
    for (version, preempts) in [
        (MqVersion::V250, true),
        (MqVersion::V2414, true),
        (MqVersion::V247, false),
    ] {
        let mut l = bed(2, |c| c.version = version);
        let x = l.queued(0, 1, 1);
        assert_eq!(l.sched(0), x);
        l.k.cpus[0].active_mm = 1;
        let z = l.queued(1, 10, 2);
        assert_eq!(l.sched(1), z);
        let p = l.sleeper(0, 3, 9);
        l.wake_up(1, p, false);
        assert_eq!(l.k.tasks[p as usize].processor, 0);
        assert_eq!(l.k.tasks[x as usize].need_resched, preempts, "{version:?}");
        let s = &l.class.st;
        assert_eq!(
            (s.resched_target_exists, s.resched_target_is_task_cpu),
            (1, 1)
        );
        l.check().unwrap();
    }
}

/// CPU 0 runs a task of na 21, CPU 1 one of na 30; CPUs 2 and 3 are idle, 3 the longest.
fn placement_state(l: &mut Bed<Mq>) {
    let x = l.queued(0, 1, 1);
    assert_eq!(l.sched(0), x);
    let y = l.queued(1, 10, 2);
    assert_eq!(l.sched(1), y);
    l.k.idle_cpus.set_last_schedule(2, 60_000);
    l.k.idle_cpus.set_last_schedule(3, 20_000);
}

#[test]
fn reschedule_idle_tries_the_longest_idle_cpu_first() {
    let mut l = bed(4, |_| {});
    placement_state(&mut l);
    let p = l.sleeper(1, 6, 9);
    l.wake_up(0, p, false);
    assert_eq!(l.k.tasks[p as usize].processor, 3);
    assert!(l.k.tasks[3].need_resched, "idle task of cpu 3 kicked");
    let s = &l.class.st;
    assert_eq!(
        (
            s.resched_calls,
            s.resched_target_exists,
            s.resched_remote_lock_ok,
            s.resched_target_is_task_cpu
        ),
        (1, 1, 1, 0)
    );
    l.check().unwrap();
}

#[test]
fn reschedule_idle_falls_back_to_the_next_target_when_a_trylock_fails() {
    let mut l = bed(4, |_| {});
    placement_state(&mut l);
    l.hold_lock(3, 50_000);
    let p = l.sleeper(1, 6, 9);
    l.wake_up(0, p, false);
    assert_eq!(l.k.tasks[p as usize].processor, 2);
    assert!(l.k.tasks[2].need_resched && !l.k.tasks[3].need_resched);
    l.check().unwrap();
}

#[test]
fn reschedule_idle_preempts_on_the_task_cpu_or_pays_the_penalty_elsewhere() {
    // No idle CPU: CPU 0 runs na 21, CPU 1 runs na 12. A task of na 26 last on CPU 0.
    for (pcp, target) in [(15, 0), (6, 1)] {
        let mut l = bed(2, |c| c.pcp = pcp);
        let x = l.queued(0, 1, 1);
        assert_eq!(l.sched(0), x);
        let z = l.queued(1, 1, 2);
        l.class.core.set_counter(z, 1);
        assert_eq!(l.sched(1), z);
        let t = l.now();
        l.class.publish_curr_na(1, t, 12); // as if z had been reniced to +9
        l.k.tasks[z as usize].nice = 9;
        let p = l.sleeper(0, 6, 9);
        l.wake_up(1, p, false);
        // Keys: cpu 0 (the task's): 21; cpu 1: 12 + pcp. Lowest first.
        assert_eq!(l.k.tasks[p as usize].processor, target, "pcp {pcp}");
        let s = &l.class.st;
        assert_eq!(s.resched_target_is_task_cpu, u64::from(target == 0));
        assert_eq!(s.resched_remote_lock_ok, u64::from(target == 1));
        assert!(l.k.tasks[[x, z][target] as usize].need_resched);
        l.check().unwrap();
    }
}

#[test]
fn sync_wakeup_queues_on_the_task_cpu_without_a_kick() {
    let mut l = bed(2, |_| {});
    let p = l.sleeper(1, 6, 9);
    l.wake_up(0, p, true);
    assert_eq!(l.k.tasks[p as usize].processor, 1);
    assert!(l.class.rq[1].list.contains(&p));
    assert!(!l.k.tasks[1].need_resched);
    assert_eq!(l.class.st.resched_calls, 0);
    assert_eq!(
        l.class.rq[1].max_na.latest().ptr,
        Some(p),
        "published for stealing"
    );
}

#[test]
fn pools_confine_stealing_and_placement() {
    for bitmap in [false, true] {
        let mut l = bed(4, |c| {
            c.name = "mq-pool";
            c.pool_size = 2;
            c.idle_bitmap = bitmap;
        });
        // CPU 2 (other pool) runs a task with a waiting one; CPU 0 is idle.
        let a = l.queued(2, 9, 1);
        let b = l.queued(2, 8, 1);
        assert_eq!(l.sched(2), a);
        assert_eq!(l.class.rq[2].max_na.latest().ptr, Some(b));
        assert_eq!(l.sched(0), 0, "no stealing across pools");
        assert_eq!(l.class.st.remote_better, 0);
        // CPU 1 (same pool) gets a stealable task: CPU 0 takes it.
        let c = l.queued(3, 9, 1);
        assert_eq!(l.sched(3), c);
        let d = l.queued(1, 9, 1);
        let e = l.queued(1, 8, 1);
        assert_eq!(l.sched(1), d);
        assert_eq!(l.sched(0), e, "stealing inside the pool");
        // CPU 1 goes idle; then a task last on CPU 3 wakes while its pool (2-3) is all
        // busy: only the non-idle bitmap can send it to CPU 1.
        let q = l.sleeper(3, 6, 4);
        l.k.tasks[d as usize].state = TaskState::Interruptible;
        assert_eq!(l.sched(1), 1);
        l.wake_up(3, q, false);
        let cpu = l.k.tasks[q as usize].processor;
        if bitmap {
            assert_eq!(cpu, 1, "idle CPU of the other pool found in the bitmap");
            assert_eq!(l.class.st.resched_bitmap_moves, 1);
        } else {
            assert!(cpu == 2 || cpu == 3, "stays in its pool, got {cpu}");
        }
        l.check().unwrap();
    }
}

#[test]
fn load_balancer_equalises_queue_lengths() {
    let mut l = bed(4, |c| {
        c.name = "mq-pool";
        c.pool_size = 1;
        c.lb_interval_ms = Some(500);
    });
    let tasks: Vec<TaskId> = (0..5).map(|i| l.queued(0, 3 + i, 1)).collect();
    let run = l.sched(0);
    let x = l.queued(1, 5, 1);
    assert_eq!(l.sched(1), x);
    l.balance();
    let lens: Vec<usize> = l.class.rq.iter().map(|q| q.list.len()).collect();
    assert_eq!(lens, [2, 2, 1, 1], "6 tasks over 4 queues");
    assert_eq!(l.class.st.lb_moves, 3);
    assert_eq!(l.k.tasks[run as usize].processor, 0, "running task stays");
    assert!(l.k.tasks[2].need_resched && l.k.tasks[3].need_resched);
    // The tail (longest queued) went first: the first task queued is the tail.
    assert_ne!(l.k.tasks[tasks[0] as usize].processor, 0);
    l.check().unwrap();
}

/// CPU 1 runs `a`, with `b` waiting if `waiting`: its `schedule()` wrote its
/// `runqueue_data` line under its lock, so CPU 1's cache holds the line modified.
fn queue_1_written(machine: &str, waiting: bool) -> (Bed<Mq>, Option<TaskId>) {
    let mut l = bed_on(machine, 2, |_| {});
    let a = l.queued(1, 9, 5);
    let b = waiting.then(|| l.queued(1, 6, 5));
    assert_eq!(l.sched(1), a);
    (l, b)
}

/// The time CPU 0's `sys_sched_yield` takes with nothing pending anywhere: its
/// lock-free reads of the other queues' `runqueue_data` lines, nothing else.
fn yield_reads(l: &mut Bed<Mq>) -> u64 {
    let idle = l.k.cpus[0].idle;
    l.sync();
    l.with(0, |mq, ctx| {
        let t = ctx.now();
        mq.yield_task(ctx, 0, idle);
        ctx.now() - t
    })
}

#[test]
fn a_published_line_written_elsewhere_costs_a_transfer_then_a_hit() {
    // See: tables X3, V4, V5 (MQ's published values are interconnect lines).
    let (mut l, _) = queue_1_written("piii700-2m", false);
    let c = l.k.machine.costs();
    let transfers = |l: &Bed<Mq>| l.k.ic.bus_stats().map(|b| b.transfers).sum::<u64>();
    let before = transfers(&l);
    assert_eq!(
        yield_reads(&mut l),
        c.c2c_line_ns,
        "CPU 1's dirty line, from its cache"
    );
    assert!(transfers(&l) > before, "the transfer took the bus");
    let before = transfers(&l);
    assert_eq!(yield_reads(&mut l), c.l2_line_ns, "then a hit");
    assert_eq!(transfers(&l), before, "a hit leaves the bus alone");
    // CPU 1's next `schedule()` writes the line again: the next read is a transfer.
    l.sched(1);
    assert_eq!(yield_reads(&mut l), c.c2c_line_ns);

    // Without the coherence model a named line costs nothing, MQ's as every other.
    let (mut off, _) = queue_1_written("piii700-2m:coherence=off", false);
    assert_eq!(yield_reads(&mut off), 0);
    assert_eq!(yield_reads(&mut off), 0);
}

#[test]
fn a_trylock_pulls_the_queue_line_and_the_holders_writes_are_hits() {
    // See: table X3 (counter 5); schedulers.md §3.1 (`runqueue_data` holds the lock).
    let (mut l, b) = queue_1_written("piii700-2m:bus=off", true);
    let b = b.expect("b waits on queue 1");
    let c = l.k.machine.costs();
    let line = l.class.rq[1].line;
    assert_eq!(l.k.ic.line_owner(line), Some(1));
    let (take, write) = l.with(0, |mq, ctx| {
        let t = ctx.now();
        assert!(mq.trylock_rq(ctx, 1));
        let taken = ctx.now();
        // A write of queue 1's list (and of its line) under its lock.
        mq.move_last_runqueue(ctx, b);
        let written = ctx.now();
        ctx.unlock(mq.rq[1].lock);
        (taken - t, written - taken)
    });
    assert_eq!(
        take,
        c.lock_ns + c.c2c_line_ns,
        "the line came with the lock"
    );
    assert_eq!(write, c.l2_line_ns, "a hit: no transfer");
    assert_eq!(l.k.ic.line_owner(line), Some(0));
    l.sync();

    // CPU 1 takes its queue back (the line with it); then, while the lock looks held, a
    // failed trylock by CPU 0 still pulls the line, which CPU 1 must fetch again.
    let back = l.with(1, |mq, ctx| {
        let t = ctx.now();
        Mq::rq_lock(mq, ctx, 1);
        ctx.unlock(mq.rq[1].lock);
        ctx.now() - t
    });
    assert_eq!(back, c.lock_ns + c.c2c_line_ns);
    l.sync();
    l.hold_lock(1, 50_000);
    let failed = l.with(0, |mq, ctx| {
        let t = ctx.now();
        assert!(!mq.trylock_rq(ctx, 1));
        ctx.now() - t
    });
    assert_eq!(failed, c.lock_ns + c.c2c_line_ns);
    assert_eq!(
        l.k.ic.line_owner(line),
        Some(0),
        "the failed atomic took it"
    );
}

/// The candidates go in the order of the kernel's repeated strict-`>` scan: the highest
/// published goodness first, and among equals the lowest CPU.
#[test]
fn remote_queues_are_tried_best_first_then_lowest_cpu() {
    let mut c = vec![(5, 3), (9, 6), (5, 1), (9, 2), (7, 0)];
    Mq::order_remotes(&mut c);
    assert_eq!(c, [(9, 2), (9, 6), (7, 0), (5, 1), (5, 3)]);
}
