//! Decisions of the 2.4 scheduler on small hand-built states, and the index-vs-scan
//! property test.

use proptest::prelude::*;

use super::*;
use crate::kernel::abi::{program, Op, Record};
use crate::kernel::{Acct, Kernel};
use crate::workload::Metric;
use crate::workload::{metric, Workload};
use crate::{RunConfig, Simulation};

/// A workload that is never run: the bed drives the policy by hand.
struct Nop;

impl Workload for Nop {
    fn root(&self) -> Box<dyn crate::kernel::abi::Program> {
        program(|_| Op::Exit)
    }
    fn result(&self, _rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(metric("none", 0.0, "", "lower"))
    }
}

/// A booted kernel (idle tasks only; the boot policy's init is marked dead) and a
/// `linux-2.4` instance driven by hand.
struct Bed {
    sim: Simulation,
    pol: Linux24,
}

impl Bed {
    fn new(cpus: usize, version: Version) -> Bed {
        let cfg = RunConfig {
            machine: "piii700-1m".into(),
            cpus: Some(cpus),
            policy: "fifo".into(),
            workload: "nop".into(),
            seed: 1,
        };
        let mut sim = Simulation::with_workload(cfg, Box::new(Nop)).unwrap();
        sim.k.tasks[cpus].state = TaskState::Dead;
        let mut pol = Linux24::new(version, 15, 100, true, BTreeMap::new());
        let mut ctx = SchedCtx::new(&mut sim.k, 0, Acct::Sched);
        pol.init(&mut ctx);
        for c in 0..cpus {
            pol.task_new(&mut ctx, c as TaskId, None);
        }
        Bed { sim, pol }
    }

    fn with<R>(&mut self, cpu: CpuId, f: impl FnOnce(&mut Linux24, &mut SchedCtx<'_>) -> R) -> R {
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        f(&mut self.pol, &mut ctx)
    }

    /// A new task, not yet runnable.
    fn task(&mut self, mm: u32, nice: i32, counter: i64, processor: CpuId) -> TaskId {
        let id = self
            .sim
            .create_task(None, program(|_| Op::Exit), mm, nice, u64::MAX, processor);
        self.with(0, |pol, ctx| pol.task_new(ctx, id, None));
        self.pol.ts[id as usize].counter = counter;
        id
    }

    /// Queue `p` at the head (`tail` false) or the tail, without `reschedule_idle`.
    fn queue(&mut self, p: TaskId, tail: bool) {
        self.with(0, |pol, ctx| {
            ctx.lock(pol.runqueue_lock);
            if tail {
                pol.tail_pos += 1;
                let pos = pol.tail_pos;
                pol.set_pos(ctx, p, pos);
            } else {
                pol.head_pos -= 1;
                let pos = pol.head_pos;
                pol.set_pos(ctx, p, pos);
            }
            ctx.unlock(pol.runqueue_lock);
        });
        self.sim.k.tasks[p as usize].state = TaskState::Running;
    }

    /// A runnable task queued at the head.
    fn runnable(&mut self, mm: u32, nice: i32, counter: i64, processor: CpuId) -> TaskId {
        let p = self.task(mm, nice, counter, processor);
        self.queue(p, false);
        p
    }

    /// Put queued task `p` on `cpu` as its current task (what a context switch does).
    fn run_on(&mut self, p: TaskId, cpu: CpuId) {
        let k = &mut self.sim.k;
        let old = k.cpus[cpu].curr;
        k.tasks[old as usize].on_cpu = None;
        k.cpus[cpu].curr = p;
        let t = &mut k.tasks[p as usize];
        t.on_cpu = Some(cpu);
        t.processor = cpu;
        self.pol.active_mm[cpu] = t.mm;
        self.pol.ts[old as usize].has_cpu = false;
        self.pol.ts[p as usize].has_cpu = true;
        self.with(cpu, |pol, ctx| {
            pol.reindex(ctx, old);
            pol.reindex(ctx, p);
        });
    }

    fn goodness(&mut self, p: TaskId, cpu: CpuId, mm: u32) -> i64 {
        self.with(cpu, |pol, ctx| pol.goodness(ctx, p, cpu, mm))
    }

    /// `schedule()` on `cpu` and the kernel's side of the context switch.
    fn schedule(&mut self, cpu: CpuId) -> TaskId {
        let prev = self.sim.k.cpus[cpu].curr;
        let next = self.with(cpu, |pol, ctx| pol.schedule(ctx, cpu, prev));
        let k = &mut self.sim.k;
        k.tasks[prev as usize].on_cpu = None;
        k.cpus[cpu].curr = next;
        k.tasks[next as usize].on_cpu = Some(cpu);
        next
    }

    fn need_resched(&self, cpu: CpuId) -> bool {
        let k = &self.sim.k;
        k.tasks[k.cpus[cpu].curr as usize].need_resched
    }

    fn check(&self) {
        self.pol.check(&self.sim.k).unwrap();
    }
}

#[test]
fn nice_to_ticks_matches_the_table() {
    let hz100: Vec<i64> = [-20, -10, -5, 0, 5, 10, 15, 19]
        .iter()
        .map(|&n| nice_to_ticks(100, n))
        .collect();
    assert_eq!(hz100, [11, 8, 7, 6, 4, 3, 2, 1]);
    assert_eq!(nice_to_ticks(1024, 0), 41);
    assert_eq!(nice_to_ticks(1024, -20), 81);
    assert_eq!(nice_to_ticks(1024, 19), 3);
}

#[test]
fn goodness_values_on_hand_built_tasks() {
    let mut b = Bed::new(2, Version::V2417);
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
    b.pol.ts[p as usize].yielded = true;
    assert_eq!(b.goodness(p, 1, 7), -1);
    let rt = b.runnable(7, 0, 0, 0);
    b.sim.k.tasks[rt as usize].policy = SchedPolicy::Fifo;
    b.sim.k.tasks[rt as usize].rt_priority = 50;
    assert_eq!(b.goodness(rt, 1, 3), 1050, "real time: 1000 + rt_priority");
}

#[test]
fn the_walk_takes_the_best_and_ties_go_to_the_head() {
    let mut b = Bed::new(2, Version::V2417);
    let a = b.task(3, 0, 4, 1);
    let c = b.task(4, 0, 4, 1);
    b.queue(a, true);
    b.queue(c, true);
    // Equal goodness on CPU 0: the first in list order wins.
    assert_eq!(b.schedule(0), a);
    b.check();
    // On CPU 1 a higher counter elsewhere loses to PROC_CHANGE_PENALTY.
    let mut b = Bed::new(2, Version::V2417);
    let far = b.runnable(3, 0, 10, 0);
    let near = b.runnable(4, 0, 2, 1);
    assert_eq!(b.schedule(1), near, "2 + 15 + 20 beats 10 + 20");
    assert_eq!(b.sim.k.tasks[near as usize].processor, 1);
    let _ = far;
}

#[test]
fn a_woken_task_goes_to_the_head_in_2_4_17_and_the_tail_in_2_4_20() {
    for (v, first_wins) in [(Version::V2417, false), (Version::V2420, true)] {
        let mut b = Bed::new(1, v);
        let x = b.task(3, 0, 4, 0);
        let y = b.task(4, 0, 4, 0);
        b.with(0, |pol, ctx| {
            pol.try_to_wake_up(ctx, x, false);
            pol.try_to_wake_up(ctx, y, false);
        });
        for p in [x, y] {
            b.sim.k.tasks[p as usize].state = TaskState::Running;
        }
        let expect = if first_wins { x } else { y };
        assert_eq!(b.schedule(0), expect, "{v:?}");
    }
}

#[test]
fn spent_counters_are_recalculated_for_every_task_sleepers_too() {
    let mut b = Bed::new(1, Version::V2417);
    let r = b.runnable(3, 0, 0, 0);
    let nice = b.runnable(4, 10, 0, 0);
    let sleeper = b.task(5, 0, 6, 0);
    b.sim.k.tasks[sleeper as usize].state = TaskState::Interruptible;
    let next = b.schedule(0);
    assert_eq!(b.pol.stats.recalculations, 1);
    assert_eq!(b.pol.ts[r as usize].counter, 6);
    assert_eq!(b.pol.ts[nice as usize].counter, 3);
    assert_eq!(
        b.pol.ts[sleeper as usize].counter,
        3 + 6,
        "sleepers accumulate"
    );
    assert_eq!(next, r, "nice 0 beats nice 10 after the recalculation");
    // Both walks are charged: before and after the recalculation, plus the task list.
    assert_eq!(b.pol.stats.tasks_examined, 4);
    assert_eq!(b.pol.stats.recalc_tasks, 3);
    b.check();
    // A yielded task (−1) does not prevent the recalculation either.
    let mut b = Bed::new(1, Version::V2417);
    let y = b.runnable(3, 0, 5, 0);
    let z = b.runnable(4, 0, 0, 0);
    b.pol.ts[y as usize].yielded = true;
    b.with(0, |pol, ctx| pol.reindex(ctx, y));
    assert_eq!(b.schedule(0), z);
    assert_eq!(b.pol.stats.recalculations, 1);
}

#[test]
fn the_idle_task_is_picked_when_nothing_can_run_here() {
    let mut b = Bed::new(2, Version::V2417);
    let p = b.runnable(3, 0, 5, 1);
    b.run_on(p, 1);
    assert_eq!(b.schedule(0), 0, "the only task runs on CPU 1");
    b.check();
    let mut b = Bed::new(2, Version::V2417);
    let p = b.task(3, 0, 5, 1);
    b.sim.k.tasks[p as usize].cpus_allowed = 0b10;
    b.queue(p, false);
    assert_eq!(b.schedule(0), 0, "not allowed on CPU 0");
    assert_eq!(b.schedule(1), p);
}

#[test]
fn reschedule_idle_fast_path_kicks_the_last_cpu_when_idle() {
    let mut b = Bed::new(4, Version::V2417);
    let busy = b.runnable(9, 0, 5, 0);
    b.run_on(busy, 0);
    let p = b.task(3, 0, 5, 2);
    b.with(0, |pol, ctx| pol.try_to_wake_up(ctx, p, false));
    assert_eq!(b.pol.stats.ri_fast, 1);
    assert!(b.need_resched(2));
    assert!(!b.need_resched(1) && !b.need_resched(3));
    assert_eq!(b.sim.k.stats.ipis, 1);
}

#[test]
fn reschedule_idle_takes_the_longest_idle_cpu() {
    let mut b = Bed::new(4, Version::V2417);
    for (cpu, mm) in [(0, 9), (2, 8)] {
        let t = b.runnable(mm, 0, 5, cpu);
        b.run_on(t, cpu);
    }
    b.sim.k.cpus[1].last_schedule = 500;
    b.sim.k.cpus[3].last_schedule = 200;
    // Last ran on CPU 0 (busy): CPU 3 has been idle longest.
    let p = b.task(3, 0, 5, 0);
    b.with(0, |pol, ctx| pol.try_to_wake_up(ctx, p, false));
    assert_eq!(b.pol.stats.ri_idle, 1);
    assert!(b.need_resched(3) && !b.need_resched(1));
}

#[test]
fn reschedule_idle_preempts_the_weakest_current_task() {
    let mut b = Bed::new(3, Version::V2417);
    let strong = b.runnable(7, 0, 6, 0);
    let weak = b.runnable(8, 19, 1, 1);
    let mid = b.runnable(9, 0, 2, 2);
    for (t, cpu) in [(strong, 0), (weak, 1), (mid, 2)] {
        b.run_on(t, cpu);
    }
    // Currents: 6+15+1+20 = 42, 1+15+1+1 = 18, 2+15+1+20 = 38. p (counter 6, nice 19,
    // last CPU 0): 22 − 42, 7 − 18, 7 − 38: never > 0.
    let p = b.task(3, 19, 6, 0);
    b.with(0, |pol, ctx| pol.try_to_wake_up(ctx, p, false));
    assert_eq!(b.pol.stats.ri_none, 1, "no CPU where p is strictly better");
    assert!((0..3).all(|c| !b.need_resched(c)));
    // q (counter 8, nice −10, last CPU 0): 53 − 42 = 11, 38 − 18 = 20, 38 − 38 = 0.
    let q = b.task(4, -10, 8, 0);
    b.with(0, |pol, ctx| pol.try_to_wake_up(ctx, q, false));
    assert_eq!(b.pol.stats.ri_preempt, 1);
    assert!(b.need_resched(1), "weak curr preempted");
    assert!(!b.need_resched(2) && !b.need_resched(0));
    let ipis = b.sim.k.stats.ipis;
    // 2.4 sends the preemption IPI even when need_resched is already set.
    let r = b.task(5, -10, 8, 0);
    b.with(0, |pol, ctx| pol.try_to_wake_up(ctx, r, false));
    assert_eq!(b.pol.stats.ri_preempt, 2);
    assert_eq!(b.sim.k.stats.ipis, ipis + 1);
}

#[test]
fn an_idle_cpu_found_later_overrides_a_preemption_target() {
    let mut b = Bed::new(3, Version::V2417);
    let weak = b.runnable(8, 19, 1, 0);
    b.run_on(weak, 0);
    let other = b.runnable(9, 0, 6, 2);
    b.run_on(other, 2);
    let p = b.task(3, -20, 10, 2);
    b.with(2, |pol, ctx| pol.try_to_wake_up(ctx, p, false));
    assert_eq!(b.pol.stats.ri_idle, 1);
    assert!(b.need_resched(1) && !b.need_resched(0));
}

#[test]
fn a_sync_wake_up_skips_reschedule_idle_unless_disabled() {
    for sync_wakeups in [true, false] {
        let mut b = Bed::new(2, Version::V2417);
        b.pol.sync_wakeups = sync_wakeups;
        let waker = b.runnable(9, 0, 5, 0);
        b.run_on(waker, 0);
        let p = b.task(3, 0, 5, 1);
        b.with(0, |pol, ctx| pol.try_to_wake_up(ctx, p, true));
        assert_eq!(b.pol.stats.ri_calls, u64::from(!sync_wakeups));
        assert_eq!(b.need_resched(1), !sync_wakeups);
        assert!(b.pol.on_rq(p));
    }
}

#[test]
fn the_tick_spends_the_counter_and_asks_for_a_reschedule_at_zero() {
    for v in [Version::V2417, Version::V2420] {
        let mut b = Bed::new(1, v);
        let p = b.runnable(3, 0, 2, 0);
        b.run_on(p, 0);
        b.with(0, |pol, ctx| pol.scheduler_tick(ctx, 0, p, true));
        assert_eq!(b.pol.ts[p as usize].counter, 1);
        assert!(!b.need_resched(0));
        b.with(0, |pol, ctx| pol.scheduler_tick(ctx, 0, p, true));
        assert_eq!(b.pol.ts[p as usize].counter, 0);
        assert!(b.need_resched(0));
        // SCHED_FIFO: 2.4.20 no longer asks.
        let f = b.runnable(4, 0, 1, 0);
        b.sim.k.tasks[f as usize].policy = SchedPolicy::Fifo;
        b.run_on(f, 0);
        b.with(0, |pol, ctx| pol.scheduler_tick(ctx, 0, f, true));
        assert_eq!(b.need_resched(0), v == Version::V2417, "{v:?}");
    }
}

#[test]
fn fork_splits_the_counter_and_exit_returns_it_capped() {
    let mut b = Bed::new(1, Version::V2417);
    let parent = b.runnable(3, 0, 5, 0);
    b.run_on(parent, 0);
    let child = b
        .sim
        .create_task(Some(parent), program(|_| Op::Exit), 3, 0, u64::MAX, 0);
    b.with(0, |pol, ctx| pol.task_new(ctx, child, Some(parent)));
    assert_eq!(b.pol.ts[child as usize].counter, 3, "(5 + 1) >> 1");
    assert_eq!(b.pol.ts[parent as usize].counter, 2, "5 >> 1");
    assert!(!b.need_resched(0));
    b.pol.ts[parent as usize].counter = 1;
    let c2 = b
        .sim
        .create_task(Some(parent), program(|_| Op::Exit), 3, 0, u64::MAX, 0);
    b.with(0, |pol, ctx| pol.task_new(ctx, c2, Some(parent)));
    assert_eq!(b.pol.ts[c2 as usize].counter, 1);
    assert_eq!(b.pol.ts[parent as usize].counter, 0);
    assert!(b.need_resched(0), "a parent left with 0 reschedules");
    b.pol.ts[child as usize].counter = 12;
    b.pol.ts[parent as usize].counter = 15;
    b.with(0, |pol, ctx| pol.sched_exit(ctx, parent, child));
    assert_eq!(
        b.pol.ts[parent as usize].counter, 20,
        "capped at MAX_COUNTER"
    );
    b.with(0, |pol, ctx| pol.sched_exit(ctx, parent, c2));
    assert_eq!(b.pol.ts[parent as usize].counter, 20);
}

#[test]
fn yield_moves_to_the_tail_and_loses_to_every_other_task() {
    let mut b = Bed::new(1, Version::V2417);
    let other = b.runnable(4, 0, 1, 0);
    let me = b.runnable(3, 0, 9, 0);
    b.run_on(me, 0);
    b.with(0, |pol, ctx| pol.sys_sched_yield(ctx, 0, me));
    assert!(b.pol.ts[me as usize].yielded && b.need_resched(0));
    assert_eq!(b.pol.rq.values().last(), Some(&me), "moved to the tail");
    assert_eq!(b.schedule(0), other, "−1 loses to counter 1");
    b.check();
    // The switch happens; __schedule_tail clears the bit and does not re-place a yielder.
    b.run_on(other, 0);
    b.with(0, |pol, ctx| pol.schedule_tail(ctx, 0, me));
    assert!(!b.pol.ts[me as usize].yielded);
    assert_eq!(b.pol.stats.tail_replacements, 0);
    b.check();
    // Alone on the machine: nr_pending = 0, nothing happens.
    let mut b = Bed::new(2, Version::V2417);
    let solo = b.runnable(3, 0, 9, 0);
    b.run_on(solo, 0);
    b.with(0, |pol, ctx| pol.sys_sched_yield(ctx, 0, solo));
    assert_eq!(b.pol.stats.yields_noop, 1);
    assert!(!b.pol.ts[solo as usize].yielded && !b.need_resched(0));
}

#[test]
fn schedule_tail_re_places_a_preempted_task_on_an_idle_cpu() {
    let mut b = Bed::new(2, Version::V2417);
    let prev = b.runnable(3, 0, 5, 0);
    let next = b.runnable(4, 0, 5, 0);
    b.run_on(prev, 0);
    b.run_on(next, 0); // prev preempted, still runnable
    b.with(0, |pol, ctx| pol.schedule_tail(ctx, 0, prev));
    assert_eq!(b.pol.stats.tail_replacements, 1);
    assert!(b.need_resched(1), "CPU 1 is idle: it is told to take prev");
    b.check();
}

#[test]
fn a_blocked_prev_leaves_the_queue() {
    let mut b = Bed::new(1, Version::V2417);
    let p = b.runnable(3, 0, 5, 0);
    b.run_on(p, 0);
    b.sim.k.tasks[p as usize].state = TaskState::Interruptible;
    assert_eq!(b.schedule(0), 0);
    assert!(!b.pol.on_rq(p) && b.pol.rq.is_empty());
}

/// A random queue: (mm, nice, counter, processor, yielded, rt, allowed, tail).
type TaskSpec = (u32, i32, i64, usize, bool, u8, u8, bool);

fn task_spec() -> impl Strategy<Value = TaskSpec> {
    (
        0u32..4,
        prop::sample::select(vec![-5, 0, 0, 0, 5]),
        prop::sample::select(vec![0i64, 1, 2, 2, 3, 5, 8, 20]),
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
        pcp in prop::sample::select(vec![0i64, 1, 15, 20]),
        tasks in prop::collection::vec(task_spec(), 0..40),
        running in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut b = Bed::new(cpus, Version::V2417);
        b.pol.pcp = pcp;
        let mut ids = Vec::new();
        for &(mm, nice, counter, processor, yielded, rt, allowed, tail) in &tasks {
            let p = b.task(mm, nice, counter, processor % cpus);
            let t = &mut b.sim.k.tasks[p as usize];
            t.cpus_allowed = if allowed < 200 { u64::MAX } else { u64::from(allowed) };
            if rt > 0 {
                t.policy = SchedPolicy::Rr;
                t.rt_priority = u32::from(rt);
            }
            b.pol.ts[p as usize].yielded = yielded;
            b.queue(p, tail);
            ids.push(p);
        }
        if !ids.is_empty() {
            for (cpu, ix) in running.iter().enumerate().take(cpus) {
                let p = ids[ix.index(ids.len())];
                if b.sim.k.tasks[p as usize].on_cpu.is_none() && b.sim.k.tasks[p as usize].cpus_allowed & (1 << cpu) != 0 {
                    b.run_on(p, cpu);
                }
            }
        }
        b.check();
        for cpu in 0..cpus {
            for mm in 0..4 {
                let lit = b.with(cpu, |pol, ctx| pol.scan_literal(ctx, cpu, mm));
                let prev = b.sim.k.cpus[cpu].curr;
                let idx = b.with(cpu, |pol, ctx| pol.scan_indexed(ctx, cpu, prev, mm));
                prop_assert_eq!(lit, idx, "cpu {} mm {}", cpu, mm);
            }
        }
    }
}
