use proptest::prelude::*;

use super::*;
use crate::kernel::abi::{program, Op};
use crate::kernel::sched::testbed::Bed;
use crate::kernel::task::SchedPolicy;
use crate::policy::sched24::nice_to_ticks;

/// The shared bed with `linux-2.4` (HZ 100, PCP 15, sync wake-ups on) on `cpus` CPUs.
fn bed(cpus: usize, version: Version) -> Bed<Linux24> {
    Bed::new(
        "piii700-1m",
        cpus,
        Linux24::new(version, 15, 100, true, BTreeMap::new()),
    )
}

/// The 2.4 states these tests build by hand: counters, list positions, current tasks.
trait Hand24 {
    fn task24(&mut self, mm: u32, nice: i32, counter: i32, processor: CpuId) -> TaskId;
    fn queue(&mut self, p: TaskId, tail: bool);
    fn runnable(&mut self, mm: u32, nice: i32, counter: i32, processor: CpuId) -> TaskId;
    fn run_on(&mut self, p: TaskId, cpu: CpuId);
    fn goodness(&mut self, p: TaskId, cpu: CpuId, mm: u32) -> i64;
    fn counter(&self, p: TaskId) -> i32;
    fn ok(&self);
}

impl Hand24 for Bed<Linux24> {
    /// A new task, not yet runnable, with `counter` ticks.
    fn task24(&mut self, mm: u32, nice: i32, counter: i32, processor: CpuId) -> TaskId {
        let id = self.task(processor, mm, nice);
        self.class.core.set_counter(id, counter);
        id
    }

    /// Queue `p` at the head (`tail` false) or the tail, without `reschedule_idle`.
    fn queue(&mut self, p: TaskId, tail: bool) {
        self.with(0, |pol, ctx| {
            ctx.lock(pol.runqueue_lock);
            pol.place(ctx, p, tail);
            ctx.unlock(pol.runqueue_lock);
        });
        self.k.tasks[p as usize].state = TaskState::Running;
    }

    /// A runnable task queued at the head.
    fn runnable(&mut self, mm: u32, nice: i32, counter: i32, processor: CpuId) -> TaskId {
        let p = self.task24(mm, nice, counter, processor);
        self.queue(p, false);
        p
    }

    /// Put queued task `p` on `cpu` as its current task (what a context switch does).
    fn run_on(&mut self, p: TaskId, cpu: CpuId) {
        let old = self.curr(cpu);
        self.switch_to(cpu, p);
        self.k.tasks[p as usize].processor = cpu;
        self.class.active_mm[cpu] = self.k.tasks[p as usize].mm;
        self.class.ts[old as usize].has_cpu = false;
        self.class.ts[p as usize].has_cpu = true;
        self.with(cpu, |pol, ctx| {
            pol.reindex(ctx, old);
            pol.reindex(ctx, p);
        });
    }

    fn goodness(&mut self, p: TaskId, cpu: CpuId, mm: u32) -> i64 {
        self.with(cpu, |pol, ctx| pol.goodness(ctx, p, cpu, mm))
    }

    fn counter(&self, p: TaskId) -> i32 {
        self.class.core.counter(p)
    }

    fn ok(&self) {
        self.check().unwrap();
    }
}

#[test]
fn nice_to_ticks_matches_the_table() {
    let hz100: Vec<i64> = [-20, -10, -5, 0, 5, 10, 15, 19]
        .iter()
        .map(|&n| nice_to_ticks(n, 100) as i64)
        .collect();
    assert_eq!(hz100, [11, 8, 7, 6, 4, 3, 2, 1]);
    assert_eq!(nice_to_ticks(0, 1024), 41);
    assert_eq!(nice_to_ticks(-20, 1024), 81);
    assert_eq!(nice_to_ticks(19, 1024), 3);
}

#[test]
fn goodness_values_on_hand_built_tasks() {
    let mut b = bed(2, Version::V2417);
    let p = b.runnable(7, 0, 5, 1);
    // counter + 20 − nice, + 15 on its last CPU, + 1 in the same mm.
    assert_eq!(b.goodness(p, 1, 7), 5 + 20 + 15 + 1);
    assert_eq!(b.goodness(p, 0, 7), 5 + 20 + 1);
    assert_eq!(b.goodness(p, 1, 8), 5 + 20 + 15);
    assert_eq!(b.goodness(p, 0, 8), 5 + 20);
    let nice = b.runnable(7, -5, 5, 0);
    assert_eq!(b.goodness(nice, 1, 8), 5 + 25);
    let kthread = b.runnable(0, 0, 5, 0);
    assert_eq!(b.goodness(kthread, 1, 8), 5 + 20 + 1, "mm == NULL gets +1");
    let spent = b.runnable(7, 0, 0, 1);
    assert_eq!(
        b.goodness(spent, 1, 7),
        0,
        "out of time: 0 whatever the bonuses"
    );
    b.class.core.set_yielding(p, true);
    assert_eq!(b.goodness(p, 1, 7), -1);
    let rt = b.runnable(7, 0, 0, 0);
    b.k.tasks[rt as usize].policy = SchedPolicy::Fifo;
    b.k.tasks[rt as usize].rt_priority = 50;
    assert_eq!(b.goodness(rt, 1, 3), 1050, "real time: 1000 + rt_priority");
}

#[test]
fn the_walk_takes_the_best_and_ties_go_to_the_head() {
    let mut b = bed(2, Version::V2417);
    let a = b.task24(3, 0, 4, 1);
    let c = b.task24(4, 0, 4, 1);
    b.queue(a, true);
    b.queue(c, true);
    // Equal goodness on CPU 0: the first in list order wins.
    assert_eq!(b.schedule(0), a);
    b.ok();
    // On CPU 1 a higher counter elsewhere loses to PROC_CHANGE_PENALTY.
    let mut b = bed(2, Version::V2417);
    let far = b.runnable(3, 0, 10, 0);
    let near = b.runnable(4, 0, 2, 1);
    assert_eq!(b.schedule(1), near, "2 + 15 + 20 beats 10 + 20");
    assert_eq!(b.k.tasks[near as usize].processor, 1);
    let _ = far;
}

/// One recalculation on `cpu`, as `schedule()` makes it.
fn recalculate(b: &mut Bed<Linux24>, cpu: CpuId) {
    b.with(cpu, |pol, ctx| pol.recalculate_counters(ctx));
}

/// Change `p`'s nice as `sys_nice` does: the value, then the class's hook.
fn renice(b: &mut Bed<Linux24>, p: TaskId, nice: i32) {
    b.k.tasks[p as usize].nice = nice;
    b.with(0, |pol, ctx| pol.prio_changed(ctx, p));
}

#[test]
fn a_sleeper_gets_each_missed_recalculation_at_the_nice_it_had_then() {
    for machine in ["piii700-1m", "piii700-1m:coherence=off"] {
        let mut b = Bed::new(
            machine,
            2,
            Linux24::new(Version::V2417, 15, 100, true, BTreeMap::new()),
        );
        let sleeper = b.task24(5, 0, 6, 0);
        let other = b.task24(6, 0, 2, 1);
        recalculate(&mut b, 0);
        recalculate(&mut b, 1);
        // nice 0 adds 6 ticks: 6 → 9 → 10.
        assert_eq!(b.counter(sleeper), 10, "{machine}");
        renice(&mut b, sleeper, 19);
        recalculate(&mut b, 0);
        // nice 19 adds 1 tick: 10 → 6 → 4.
        recalculate(&mut b, 0);
        assert_eq!(b.counter(sleeper), 4, "{machine}");
        assert_eq!(b.counter(other), 11, "2 → 7 → 9 → 10 → 11 at nice 0");
        assert_eq!(b.class.stats.recalculations, 4);
        assert_eq!(b.class.stats.recalc_tasks, 8, "{machine}: two tasks a walk");
    }
}

#[test]
fn a_released_task_leaves_the_walk_and_its_ticks_go_to_the_reaper() {
    for machine in ["piii700-1m", "piii700-1m:bus=off,coherence=off"] {
        let mut b = Bed::new(
            machine,
            1,
            Linux24::new(Version::V2417, 15, 100, true, BTreeMap::new()),
        );
        let parent = b.task24(5, 0, 1, 0);
        let child = b.task24(5, 0, 4, 0);
        recalculate(&mut b, 0);
        // Reaped with its counter caught up: 4 → 8; the parent 1 → 6, capped at 20.
        b.with(0, |pol, ctx| pol.task_dead(ctx, parent, child));
        assert_eq!(b.counter(parent), 14, "{machine}");
        b.k.tasks[child as usize].state = TaskState::Zombie;
        b.k.release(0, child);
        recalculate(&mut b, 0);
        assert_eq!(b.counter(parent), 13, "{machine}: 14 → 13");
        assert_eq!(b.class.stats.recalc_tasks, 2 + 1, "{machine}");
    }
}

#[test]
fn a_woken_task_goes_to_the_head_in_2_4_17_and_the_tail_in_2_4_20() {
    for (v, first_wins) in [(Version::V2417, false), (Version::V2420, true)] {
        let mut b = bed(1, v);
        let x = b.task24(3, 0, 4, 0);
        let y = b.task24(4, 0, 4, 0);
        b.wake(0, x, false);
        b.wake(0, y, false);
        let expect = if first_wins { x } else { y };
        assert_eq!(b.schedule(0), expect, "{v:?}");
    }
}

#[test]
fn spent_counters_are_recalculated_for_every_task_sleepers_too() {
    let mut b = bed(1, Version::V2417);
    let r = b.runnable(3, 0, 0, 0);
    let nice = b.runnable(4, 10, 0, 0);
    let sleeper = b.task24(5, 0, 6, 0);
    b.k.tasks[sleeper as usize].state = TaskState::Interruptible;
    let next = b.schedule(0);
    assert_eq!(b.class.stats.recalculations, 1);
    assert_eq!(b.counter(r), 6);
    assert_eq!(b.counter(nice), 3);
    assert_eq!(b.counter(sleeper), 3 + 6, "sleepers accumulate");
    assert_eq!(next, r, "nice 0 beats nice 10 after the recalculation");
    // Both walks are charged: before and after the recalculation, plus the task list.
    assert_eq!(b.class.stats.tasks_examined, 4);
    assert_eq!(b.class.stats.recalc_tasks, 3);
    b.ok();
    // A yielded task (−1) does not prevent the recalculation either.
    let mut b = bed(1, Version::V2417);
    let y = b.runnable(3, 0, 5, 0);
    let z = b.runnable(4, 0, 0, 0);
    b.class.core.set_yielding(y, true);
    b.with(0, |pol, ctx| pol.reindex(ctx, y));
    assert_eq!(b.schedule(0), z);
    assert_eq!(b.class.stats.recalculations, 1);
}

#[test]
fn the_idle_task_is_picked_when_nothing_can_run_here() {
    let mut b = bed(2, Version::V2417);
    let p = b.runnable(3, 0, 5, 1);
    b.run_on(p, 1);
    assert_eq!(b.schedule(0), 0, "the only task runs on CPU 1");
    b.ok();
    let mut b = bed(2, Version::V2417);
    let p = b.task24(3, 0, 5, 1);
    b.k.tasks[p as usize].cpus_allowed = crate::machine::CpuMask::from_bits(0b10);
    b.queue(p, false);
    assert_eq!(b.schedule(0), 0, "not allowed on CPU 0");
    assert_eq!(b.schedule(1), p);
}

#[test]
fn reschedule_idle_fast_path_kicks_the_last_cpu_when_idle() {
    let mut b = bed(4, Version::V2417);
    let busy = b.runnable(9, 0, 5, 0);
    b.run_on(busy, 0);
    let p = b.task24(3, 0, 5, 2);
    b.wake(0, p, false);
    assert_eq!(b.class.stats.ri_fast, 1);
    assert!(b.need_resched(2));
    assert!(!b.need_resched(1) && !b.need_resched(3));
    assert_eq!(b.k.stats.ipis, 1);
}

#[test]
fn reschedule_idle_takes_the_longest_idle_cpu() {
    let mut b = bed(4, Version::V2417);
    for (cpu, mm) in [(0, 9), (2, 8)] {
        let t = b.runnable(mm, 0, 5, cpu);
        b.run_on(t, cpu);
    }
    b.k.idle_cpus.set_last_schedule(1, 500);
    b.k.idle_cpus.set_last_schedule(3, 200);
    // Last ran on CPU 0 (busy): CPU 3 has been idle longest.
    let p = b.task24(3, 0, 5, 0);
    b.wake(0, p, false);
    assert_eq!(b.class.stats.ri_idle, 1);
    assert!(b.need_resched(3) && !b.need_resched(1));
}

#[test]
fn reschedule_idle_preempts_the_weakest_current_task() {
    let mut b = bed(3, Version::V2417);
    let strong = b.runnable(7, 0, 6, 0);
    let weak = b.runnable(8, 19, 1, 1);
    let mid = b.runnable(9, 0, 2, 2);
    for (t, cpu) in [(strong, 0), (weak, 1), (mid, 2)] {
        b.run_on(t, cpu);
    }
    // Currents: 6+15+1+20 = 42, 1+15+1+1 = 18, 2+15+1+20 = 38. p (counter 6, nice 19,
    // last CPU 0): 22 − 42, 7 − 18, 7 − 38: never > 0.
    let p = b.task24(3, 19, 6, 0);
    b.wake(0, p, false);
    assert_eq!(
        b.class.stats.ri_none, 1,
        "no CPU where p is strictly better"
    );
    assert!((0..3).all(|c| !b.need_resched(c)));
    // q (counter 8, nice −10, last CPU 0): 53 − 42 = 11, 38 − 18 = 20, 38 − 38 = 0.
    let q = b.task24(4, -10, 8, 0);
    b.wake(0, q, false);
    assert_eq!(b.class.stats.ri_preempt, 1);
    assert!(b.need_resched(1), "weak curr preempted");
    assert!(!b.need_resched(2) && !b.need_resched(0));
    let ipis = b.k.stats.ipis;
    // 2.4 sends the preemption IPI even when need_resched is already set.
    let r = b.task24(5, -10, 8, 0);
    b.wake(0, r, false);
    assert_eq!(b.class.stats.ri_preempt, 2);
    assert_eq!(b.k.stats.ipis, ipis + 1);
}

#[test]
fn an_idle_cpu_found_later_overrides_a_preemption_target() {
    let mut b = bed(3, Version::V2417);
    let weak = b.runnable(8, 19, 1, 0);
    b.run_on(weak, 0);
    let other = b.runnable(9, 0, 6, 2);
    b.run_on(other, 2);
    let p = b.task24(3, -20, 10, 2);
    b.wake(2, p, false);
    assert_eq!(b.class.stats.ri_idle, 1);
    assert!(b.need_resched(1) && !b.need_resched(0));
}

#[test]
fn a_sync_wake_up_skips_reschedule_idle_unless_disabled() {
    for sync_wakeups in [true, false] {
        let mut b = bed(2, Version::V2417);
        b.class.sync_wakeups = sync_wakeups;
        let waker = b.runnable(9, 0, 5, 0);
        b.run_on(waker, 0);
        let p = b.task24(3, 0, 5, 1);
        b.wake(0, p, true);
        assert_eq!(b.class.stats.ri_calls, u64::from(!sync_wakeups));
        assert_eq!(b.need_resched(1), !sync_wakeups);
        assert!(b.class.on_rq(p));
    }
}

#[test]
fn the_tick_spends_the_counter_and_asks_for_a_reschedule_at_zero() {
    for v in [Version::V2417, Version::V2420] {
        let mut b = bed(1, v);
        let p = b.runnable(3, 0, 2, 0);
        b.run_on(p, 0);
        b.tick(0, true);
        assert_eq!(b.counter(p), 1);
        assert!(!b.need_resched(0));
        b.tick(0, true);
        assert_eq!(b.counter(p), 0);
        assert!(b.need_resched(0));
        // SCHED_FIFO: 2.4.20 no longer asks.
        let f = b.runnable(4, 0, 1, 0);
        b.k.tasks[f as usize].policy = SchedPolicy::Fifo;
        b.run_on(f, 0);
        b.tick(0, true);
        assert_eq!(b.need_resched(0), v == Version::V2417, "{v:?}");
    }
}

#[test]
fn fork_splits_the_counter_and_exit_returns_it_capped() {
    let mut b = bed(1, Version::V2417);
    let parent = b.runnable(3, 0, 5, 0);
    b.run_on(parent, 0);
    let child = b.k.create_task(
        Some(parent),
        program(|_| Op::Exit),
        3,
        0,
        crate::machine::CpuMask::FULL,
        0,
    );
    b.with(0, |pol, ctx| pol.task_fork(ctx, child, Some(parent)));
    assert_eq!(b.counter(child), 3, "(5 + 1) >> 1");
    assert_eq!(b.counter(parent), 2, "5 >> 1");
    assert!(!b.need_resched(0));
    b.class.core.set_counter(parent, 1);
    let c2 = b.k.create_task(
        Some(parent),
        program(|_| Op::Exit),
        3,
        0,
        crate::machine::CpuMask::FULL,
        0,
    );
    b.with(0, |pol, ctx| pol.task_fork(ctx, c2, Some(parent)));
    assert_eq!(b.counter(c2), 1);
    assert_eq!(b.counter(parent), 0);
    assert!(b.need_resched(0), "a parent left with 0 reschedules");
    b.class.core.set_counter(child, 12);
    b.class.core.set_counter(parent, 15);
    b.with(0, |pol, ctx| pol.task_dead(ctx, parent, child));
    assert_eq!(b.counter(parent), 20, "capped at MAX_COUNTER");
    b.with(0, |pol, ctx| pol.task_dead(ctx, parent, c2));
    assert_eq!(b.counter(parent), 20);
}

#[test]
fn yield_moves_to_the_tail_and_loses_to_every_other_task() {
    let mut b = bed(1, Version::V2417);
    let other = b.runnable(4, 0, 1, 0);
    let me = b.runnable(3, 0, 9, 0);
    b.run_on(me, 0);
    b.sched_yield(0);
    assert!(b.class.core.yielding(me) && b.need_resched(0));
    assert_eq!(b.class.rq.last(), Some(me), "moved to the tail");
    assert_eq!(b.schedule(0), other, "−1 loses to counter 1");
    b.ok();
    // The switch happens; __schedule_tail clears the bit and does not re-place a yielder.
    b.run_on(other, 0);
    b.finish_switch(0, me);
    assert!(!b.class.core.yielding(me));
    assert_eq!(b.class.stats.tail_replacements, 0);
    b.ok();
    // Alone on the machine: nr_pending = 0, nothing happens.
    let mut b = bed(2, Version::V2417);
    let solo = b.runnable(3, 0, 9, 0);
    b.run_on(solo, 0);
    b.sched_yield(0);
    assert_eq!(b.class.stats.yields_noop, 1);
    assert!(!b.class.core.yielding(solo) && !b.need_resched(0));
}

#[test]
fn before_2_4_16_prev_wins_ties_and_a_yielder_stays_in_place() {
    for (version, prev_wins, moved) in [
        (Version::V2417, false, true),
        (Version::V2416, false, true),
        (Version::V2414, true, false),
        (Version::V247, true, false),
    ] {
        // `other` sits nearer the head with prev's goodness on CPU 0 (both last ran there,
        // both in mm 3): 2.4.16 on take it, 2.4.14 keeps prev.
        let mut b = bed(1, version);
        let me = b.task24(3, 0, 5, 0);
        b.queue(me, true);
        let other = b.runnable(3, 0, 5, 0);
        b.run_on(me, 0);
        assert_eq!(b.class.rq.iter().next(), Some(other));
        let next = b.schedule(0);
        assert_eq!(next == me, prev_wins, "{version:?}: tie");
        b.ok();
        // A yield: the tail (2.4.16 on) or where it was; other runs either way.
        let mut b = bed(1, version);
        let other = b.runnable(4, 0, 1, 0);
        let me = b.runnable(3, 0, 9, 0);
        b.run_on(me, 0);
        b.sched_yield(0);
        assert!(b.class.core.yielding(me));
        assert_eq!(b.class.rq.last() == Some(me), moved, "{version:?}: yield");
        assert_eq!(b.schedule(0), other, "{version:?}: −1 loses");
        b.ok();
    }
}

#[test]
fn the_2_4_7_placement_wants_a_margin_over_one() {
    // CPU 0 runs `curr` (counter 2, mm 7: 2 + 20 + 15 + 1 = 38 on CPU 0); CPU 1 runs a
    // strong task. p (counter 4, mm 8, last CPU 0) weighs 4 + 20 + 15 = 39 there:
    // preemption_goodness 1. 2.4.14 preempts CPU 0; 2.4.7 needs more than 1.
    for (version, preempts) in [(Version::V2414, true), (Version::V247, false)] {
        let mut b = bed(2, version);
        let curr = b.runnable(7, 0, 2, 0);
        let strong = b.runnable(9, -20, 20, 1);
        b.run_on(curr, 0);
        b.run_on(strong, 1);
        let p = b.task24(8, 0, 4, 0);
        b.wake(1, p, false);
        assert_eq!(b.need_resched(0), preempts, "{version:?}");
        assert_eq!(b.class.stats.ri_preempt, u64::from(preempts));
        b.ok();
    }
}

#[test]
fn schedule_tail_re_places_a_preempted_task_on_an_idle_cpu() {
    let mut b = bed(2, Version::V2417);
    let prev = b.runnable(3, 0, 5, 0);
    let next = b.runnable(4, 0, 5, 0);
    b.run_on(prev, 0);
    b.run_on(next, 0); // prev preempted, still runnable
    b.finish_switch(0, prev);
    assert_eq!(b.class.stats.tail_replacements, 1);
    assert!(b.need_resched(1), "CPU 1 is idle: it is told to take prev");
    b.ok();
}

#[test]
fn a_blocked_prev_leaves_the_queue() {
    let mut b = bed(1, Version::V2417);
    let p = b.runnable(3, 0, 5, 0);
    b.run_on(p, 0);
    b.k.tasks[p as usize].state = TaskState::Interruptible;
    assert_eq!(b.schedule(0), 0);
    assert!(!b.class.on_rq(p) && b.class.rq.is_empty());
}

/// A random queue: (mm, nice, counter, processor, yielded, rt, allowed, tail).
type TaskSpec = (u32, i32, i32, usize, bool, u8, u8, bool);

fn task_spec() -> impl Strategy<Value = TaskSpec> {
    (
        0u32..4,
        prop::sample::select(vec![-5, 0, 0, 0, 5]),
        prop::sample::select(vec![0i32, 1, 2, 2, 3, 5, 8, 20]),
        0usize..8,
        prop::bool::weighted(0.1),
        prop::sample::select(vec![0u8, 0, 0, 0, 0, 0, 0, 0, 1, 2]),
        any::<u8>(),
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_index_picks_what_the_literal_scan_picks(
        cpus in 1usize..=8,
        pcp in prop::sample::select(vec![0i32, 1, 15, 20]),
        tasks in prop::collection::vec(task_spec(), 0..40),
        running in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        still_running in any::<bool>(),
    ) {
        // 2.4.14 starts the walk from prev (prev wins ties); 2.4.17 weighs it in place.
        let mut b = bed(cpus, if still_running { Version::V2414 } else { Version::V2417 });
        b.class.core.rules.pcp = pcp;
        let mut ids = Vec::new();
        for &(mm, nice, counter, processor, yielded, rt, allowed, tail) in &tasks {
            let p = b.task24(mm, nice, counter, processor % cpus);
            let t = &mut b.k.tasks[p as usize];
            t.cpus_allowed = if allowed < 200 {
                crate::machine::CpuMask::FULL
            } else {
                crate::machine::CpuMask::from_bits(u64::from(allowed))
            };
            if rt > 0 {
                t.policy = SchedPolicy::Rr;
                t.rt_priority = u32::from(rt);
            }
            b.class.core.set_yielding(p, yielded);
            b.queue(p, tail);
            ids.push(p);
        }
        if !ids.is_empty() {
            for (cpu, ix) in running.iter().enumerate().take(cpus) {
                let p = ids[ix.index(ids.len())];
                if b.k.tasks[p as usize].on_cpu.is_none() && b.k.tasks[p as usize].cpus_allowed.test(cpu) {
                    b.run_on(p, cpu);
                }
            }
        }
        b.ok();
        for cpu in 0..cpus {
            for mm in 0..4 {
                let prev = b.k.cpus[cpu].curr;
                let lit = b.with(cpu, |pol, ctx| pol.scan_literal(ctx, cpu, prev, mm));
                let idx = b.with(cpu, |pol, ctx| pol.scan_indexed(ctx, cpu, prev, mm));
                prop_assert_eq!(lit, idx, "cpu {} mm {}", cpu, mm);
            }
        }
    }
}

/// What a reference walk does to every counter, against the core's.
#[derive(Clone, Debug)]
enum CounterOp {
    Recalculate(CpuId),
    Tick(prop::sample::Index),
    Renice(prop::sample::Index, i32),
    Fork(prop::sample::Index),
}

fn counter_op() -> impl Strategy<Value = CounterOp> {
    prop_oneof![
        (0usize..2).prop_map(CounterOp::Recalculate),
        any::<prop::sample::Index>().prop_map(CounterOp::Tick),
        (any::<prop::sample::Index>(), -20i32..=19).prop_map(|(i, n)| CounterOp::Renice(i, n)),
        any::<prop::sample::Index>().prop_map(CounterOp::Fork),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The lazy recalculation leaves every counter where 2.4's walk over the task list
    /// would have: sleepers, ticking tasks, reniced tasks and fork's halving alike, with
    /// and without task-line tracking.
    #[test]
    fn lazy_counters_match_an_eager_walk(
        coherence in any::<bool>(),
        start in prop::collection::vec((0i32..=20, -20i32..=19), 1..12),
        ops in prop::collection::vec(counter_op(), 0..60),
    ) {
        let machine = if coherence { "piii700-1m" } else { "piii700-1m:coherence=off" };
        let mut b = Bed::new(
            machine,
            2,
            Linux24::new(Version::V2417, 15, 100, true, BTreeMap::new()),
        );
        let mut ids = Vec::new();
        let mut eager = Vec::new();
        let mut walked = 0;
        for &(counter, nice) in &start {
            ids.push(b.task24(1, nice, counter, 0));
            eager.push(counter);
        }
        for op in ops {
            match op {
                CounterOp::Recalculate(cpu) => {
                    recalculate(&mut b, cpu);
                    walked += ids.len() as u64;
                    for (i, &p) in ids.iter().enumerate() {
                        eager[i] = (eager[i] >> 1) + nice_to_ticks(b.k.tasks[p as usize].nice, 100);
                    }
                }
                CounterOp::Tick(ix) => {
                    let i = ix.index(ids.len());
                    b.with(0, |pol, ctx| pol.core.update_process_times(ctx, 0, ids[i], false));
                    eager[i] = (eager[i] - 1).max(0);
                }
                CounterOp::Renice(ix, nice) => {
                    let i = ix.index(ids.len());
                    renice(&mut b, ids[i], nice);
                }
                CounterOp::Fork(ix) => {
                    let i = ix.index(ids.len());
                    let parent = ids[i];
                    let nice = b.k.tasks[parent as usize].nice;
                    let child = b.k.create_task(Some(parent), program(|_| Op::Exit), 1, nice, crate::machine::CpuMask::single(0), 0);
                    b.with(0, |pol, ctx| pol.task_fork(ctx, child, Some(parent)));
                    ids.push(child);
                    eager.push((eager[i] + 1) >> 1);
                    eager[i] >>= 1;
                }
            }
            for (i, &p) in ids.iter().enumerate() {
                prop_assert_eq!(b.counter(p), eager[i], "task {}", p);
            }
        }
        // Each walk covered the task list as it stood, with or without line tracking.
        prop_assert_eq!(b.class.stats.recalc_tasks, walked);
    }
}
