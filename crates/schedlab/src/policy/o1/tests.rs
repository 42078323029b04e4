//! Decisions of the O(1) versions on small hand-built states, and property tests of the
//! balancers' invariants.

use proptest::prelude::*;

use super::*;
use crate::engine::{MS, SEC};
use crate::kernel::sched::testbed::Bed;
use crate::spec::{self, Spec};
use crate::RunConfig;

const MACHINE: &str = "piii700-4way-1m";

/// The shared test bed on a booted 4-CPU `piii700-4way-1m` with an O(1) instance of
/// `policy` that owns the tasks the test creates (built directly, not boxed, so that the
/// test sees its run queues and per-task state).
fn bed(policy: &str) -> Bed<O1> {
    let spec = Spec::parse("policy", policy).unwrap();
    let info = crate::policy::find(&spec.name).unwrap();
    let params = spec::resolve("policy", &spec, info.params).unwrap();
    let v = match info.name {
        "o1-d1" => versions::D1,
        "o1-g1" => versions::G1,
        _ => versions::V26,
    };
    let m = Machine::boot(crate::machine::catalog::find(MACHINE).unwrap(), Some(4)).unwrap();
    Bed::new(MACHINE, 4, O1::new(v, &params, &m))
}

/// What the O(1) tests add to the bed: hand-built queues and direct balancer passes.
trait O1Bed {
    /// A new runnable task queued on `cpu`'s array `arr` (0 = active at boot) at `prio`.
    fn queued(&mut self, cpu: CpuId, arr: usize, prio: i32) -> TaskId;
    /// The balancing pass of a timer tick on `cpu` (`idle`: the tick interrupted the idle
    /// task). Asserts that the tick's rebalance period let `load_balance` run.
    fn balance(&mut self, cpu: CpuId, idle: bool);
    /// `cpu`'s `nr_running`.
    fn nr(&self, cpu: CpuId) -> u32;
}

impl O1Bed for Bed<O1> {
    fn queued(&mut self, cpu: CpuId, arr: usize, prio: i32) -> TaskId {
        let t = self.task(cpu, 9, 0);
        self.k.tasks[t as usize].state = TaskState::Running;
        self.class.ts[t as usize].prio = prio;
        self.class.enqueue(t, cpu, arr);
        let now = self.k.cpus[cpu].clock;
        self.class.nr_running.add(cpu, now, 1);
        t
    }

    fn balance(&mut self, cpu: CpuId, idle: bool) {
        let calls = self.class.stats.balance_calls;
        self.with(cpu, |o, ctx| o.balance(ctx, cpu, Balance::Tick { idle }));
        assert!(self.k.locks.iter().all(|l| l.holder.is_none()));
        assert_eq!(
            self.class.stats.balance_calls,
            calls + 1,
            "the rebalance period skipped this tick"
        );
    }

    fn nr(&self, cpu: CpuId) -> u32 {
        self.class.nr_running.latest(cpu)
    }
}

#[test]
fn schedule_switches_arrays_when_active_is_empty() {
    let mut b = bed("o1-d1");
    let x = b.queued(0, 1, 125);
    let y = b.queued(0, 1, 121);
    assert_eq!(b.class.rqs[0].active, 0);
    let next = b.schedule(0);
    assert_eq!(next, y, "the better priority of the former expired array");
    assert_eq!(b.class.rqs[0].active, 1);
    assert_eq!(b.class.stats.array_switches, 1);
    let _ = x;
    b.check().unwrap();
}

#[test]
fn expiry_sends_cpu_hogs_to_expired_and_interactive_tasks_back_to_active() {
    let mut b = bed("o1-g1:estimator=jsleep");
    let hog = b.queued(0, 0, 120);
    b.switch_to(0, hog);
    b.class.ts[hog as usize].time_slice = 1;
    b.tick(0, true);
    let ts = &b.class.ts[hog as usize];
    assert_eq!(ts.array, Some(1), "expired");
    assert_eq!(ts.prio, 121, "one level worse per expired slice");
    assert_eq!(
        ts.time_slice, 9,
        "PRIO_TO_TIMESLICE(120) at HZ=100, MIN 20 ms"
    );
    assert!(b.need_resched(0));

    let mut b = bed("o1-g1:estimator=jsleep");
    let ia = b.queued(0, 0, 105);
    b.switch_to(0, ia);
    b.class.ts[ia as usize].time_slice = 1;
    b.tick(0, true);
    assert_eq!(
        b.class.ts[ia as usize].array,
        Some(0),
        "interactive: back to active"
    );
    assert_eq!(b.class.ts[ia as usize].prio, 106);
    b.check().unwrap();
}

#[test]
fn sleep_hist_expiry_keeps_the_penalty_and_only_nice_minus_14_returns_to_active() {
    // -D2: the slice's expiry does not move the priority, and the test for the active
    // array is prio ≤ 106.
    let mut b = bed("o1-d1");
    let hog = b.queued(0, 0, 133);
    b.switch_to(0, hog);
    b.class.ts[hog as usize].time_slice = 1;
    b.tick(0, true);
    let ts = &b.class.ts[hog as usize];
    assert_eq!(ts.array, Some(1), "expired");
    assert_eq!(ts.prio, 133, "no level lost at expiry");
    assert!(b.need_resched(0));

    let mut b = bed("o1-d1");
    let rich = b.queued(0, 0, 106);
    b.switch_to(0, rich);
    b.class.ts[rich as usize].time_slice = 1;
    b.tick(0, true);
    assert_eq!(
        b.class.ts[rich as usize].array,
        Some(0),
        "106: back to active"
    );
    b.check().unwrap();
}

#[test]
fn sleep_hist_tick_reprices_the_running_task_and_sends_it_to_its_list_tail() {
    // A nice-0 task that has not slept for a second: the tick's deactivate + activate
    // sets the full penalty and puts it behind an equal task.
    let mut b = bed("o1-d1");
    let cur = b.queued(0, 0, 120);
    let other = b.queued(0, 0, 133);
    b.switch_to(0, cur);
    b.class.ts[cur as usize].time_slice = 5;
    b.at(2 * SEC);
    b.tick(0, true);
    let ts = &b.class.ts[cur as usize];
    assert_eq!(ts.prio, 133, "MAX_PENALTY for a task that never slept");
    assert_eq!(ts.array, Some(0));
    assert!(!b.need_resched(0), "the tick alone does not preempt");
    let list: Vec<TaskId> = b.class.rqs[0].arrays[0].list(133).iter().copied().collect();
    assert_eq!(list, vec![other, cur], "behind the task already at 133");
    b.check().unwrap();
}

#[test]
fn v26_expired_starving_overrides_interactivity() {
    let mut b = bed("o1-2.6");
    let t = b.queued(0, 0, 110);
    b.class.ts[t as usize].sleep_avg = b.class.c.ns_max_sleep_avg; // bonus +5: prio 115
    b.switch_to(0, t);
    b.class.ts[t as usize].time_slice = 1;
    // Time is 0 at boot: make the expired array look old.
    b.at(5 * SEC);
    b.class.rqs[0].expired_timestamp = 1;
    b.tick(0, true);
    assert_eq!(b.class.ts[t as usize].prio, 115);
    assert_eq!(
        b.class.ts[t as usize].array,
        Some(1),
        "starving: expired anyway"
    );

    let mut b = bed("o1-2.6");
    let t = b.queued(0, 0, 110);
    b.class.ts[t as usize].sleep_avg = b.class.c.ns_max_sleep_avg;
    b.switch_to(0, t);
    b.class.ts[t as usize].time_slice = 1;
    b.at(5 * SEC);
    b.tick(0, true);
    assert_eq!(b.class.ts[t as usize].array, Some(0), "interactive: active");
    assert_eq!(
        b.class.rqs[0].expired_timestamp, 5000,
        "set before the test (2.6.0)"
    );
}

#[test]
fn wakeup_stays_on_its_runqueue_and_kicks_that_cpu() {
    let mut b = bed("o1-2.6:sync_wakeups=off");
    let w = b.queued(0, 0, 120);
    b.switch_to(0, w);
    // Asleep, on no queue, last run on CPU 1.
    let s = b.task(1, 9, 0);
    let ipis = b.k.stats.ipis;
    b.wake(0, s, true);
    assert_eq!(b.k.tasks[s as usize].processor, 1, "stays on its CPU");
    assert_eq!(b.k.stats.ipis, ipis + 1, "idle CPU 1 is kicked by IPI");
    b.check().unwrap();
}

#[test]
fn sync_wakeup_moves_the_wakee_to_the_waker_without_preempting() {
    let mut b = bed("o1-d1:sync_wakeups=on");
    let w = b.queued(0, 0, 130);
    b.switch_to(0, w);
    // Asleep, on no queue, last run on CPU 1.
    let s = b.task(1, 9, 0);
    let ipis = b.k.stats.ipis;
    b.wake(0, s, true);
    assert_eq!(b.k.tasks[s as usize].processor, 0, "moved to the waker");
    assert_eq!(b.nr(0), 2);
    assert_eq!(b.k.stats.ipis, ipis);
    assert!(!b.k.tasks[w as usize].need_resched, "no preemption");
    assert_eq!(b.k.stats.migrations, 1);
    b.check().unwrap();
}

#[test]
fn g1_idle_balance_pulls_one_task_from_the_longest_queue() {
    let mut b = bed("o1-g1");
    for _ in 0..3 {
        b.queued(1, 0, 120);
    }
    let r = b.queued(2, 0, 120);
    b.switch_to(2, r);
    for _ in 0..4 {
        b.queued(2, 0, 120);
    }
    b.balance(0, true);
    assert_eq!((b.nr(0), b.nr(1), b.nr(2)), (1, 3, 4));
    assert_eq!(b.class.stats.pulled_idle, 1);
    b.check().unwrap();
}

#[test]
fn g1_busy_balance_filters_fluctuations_then_halves_the_imbalance() {
    let mut b = bed("o1-g1");
    let r = b.queued(0, 0, 120);
    b.switch_to(0, r);
    let q = b.queued(1, 0, 120);
    b.switch_to(1, q);
    for _ in 0..6 {
        b.queued(1, 1, 125);
    }
    b.balance(0, false);
    assert_eq!(b.nr(0), 1, "first look: previous length 0 wins (min)");
    b.balance(0, false);
    // imbalance = (7 − 1)/2 = 3 ≥ (7 + 3)/4: three tasks move, from the expired array.
    assert_eq!((b.nr(0), b.nr(1)), (4, 4));
    assert_eq!(b.class.stats.pulled_busy, 3);
    b.check().unwrap();
}

#[test]
fn early_balancer_moves_the_whole_difference_and_overshoots() {
    let mut b = bed("o1-d1");
    let r = b.queued(1, 0, 120);
    b.switch_to(1, r);
    b.queued(1, 0, 122);
    b.queued(1, 1, 121);
    b.balance(0, true);
    // nr_tasks = 3: one from expired, then on into active.
    assert_eq!((b.nr(0), b.nr(1)), (2, 1));
    b.check().unwrap();
}

#[test]
fn v26_busy_balance_leaves_cache_hot_tasks() {
    let mut b = bed("o1-2.6");
    assert_eq!(b.class.cache_decay_ticks, Some(3), "1 MB L2 at 700 MHz");
    b.at(SEC);
    let r = b.queued(0, 0, 120);
    b.switch_to(0, r);
    let c = b.queued(1, 0, 120);
    b.switch_to(1, c);
    let hot: Vec<TaskId> = (0..4).map(|_| b.queued(1, 0, 120)).collect();
    for &t in &hot {
        b.class.ts[t as usize].timestamp = SEC - MS;
    }
    b.balance(0, false);
    b.balance(0, false);
    assert_eq!(b.nr(0), 1, "all hot");
    for &t in &hot[..2] {
        b.class.ts[t as usize].timestamp = 0;
    }
    b.balance(0, false);
    assert_eq!(b.nr(0), 3, "the two cold ones");
    b.check().unwrap();
}

#[test]
fn cache_decay_ticks_follow_the_i386_formula() {
    assert_eq!(cache_decay_ticks(700, 512 << 10, 1000), 2);
    assert_eq!(cache_decay_ticks(700, 1 << 20, 1000), 3);
    assert_eq!(cache_decay_ticks(700, 2 << 20, 1000), 6);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A -G1 idle balance moves exactly one task when some queue has two, none otherwise;
    /// no task ends up on two runqueues.
    #[test]
    fn g1_idle_balance_moves_exactly_one(lens in prop::collection::vec(0usize..6, 3)) {
        let mut b = bed("o1-g1");
        for (i, &n) in lens.iter().enumerate() {
            let cpu = i + 1;
            for k in 0..n {
                let t = b.queued(cpu, k % 2, 110 + (k as i32 % 5));
                if k == 0 {
                    b.switch_to(cpu, t);
                }
            }
        }
        let before: u32 = (0..4).map(|c| b.nr(c)).sum();
        b.balance(0, true);
        let want = u32::from(lens.iter().any(|&n| n >= 2));
        prop_assert_eq!(b.nr(0), want);
        prop_assert_eq!((0..4).map(|c| b.nr(c)).sum::<u32>(), before);
        b.check().map_err(TestCaseError::fail)?;
    }

    /// 2.6 busy balancing never moves a cache-hot task; moved tasks keep every invariant.
    #[test]
    fn v26_busy_balance_never_moves_a_hot_task(
        lens in prop::collection::vec(0usize..8, 4),
        ages in prop::collection::vec(0u64..6, 32),
        rounds in 1usize..4,
    ) {
        let mut b = bed("o1-2.6");
        let now = SEC;
        b.at(now);
        let mut age_of = Vec::new();
        for (cpu, &n) in lens.iter().enumerate() {
            for k in 0..n {
                let t = b.queued(cpu, k % 2, 115 + (k as i32 % 7));
                let age = ages[(cpu * 8 + k) % ages.len()];
                b.class.ts[t as usize].timestamp = now - age * MS;
                age_of.push((t, cpu, age));
                if k == 0 {
                    b.switch_to(cpu, t);
                }
            }
        }
        for r in 0..rounds {
            for cpu in 0..4 {
                let _ = r;
                b.balance(cpu, false);
            }
        }
        for (t, cpu, age) in age_of {
            let now_cpu = b.k.tasks[t as usize].processor;
            if now_cpu != cpu {
                prop_assert!(age >= 3, "task {} aged {} ms moved while cache-hot", t, age);
            }
        }
        b.check().map_err(TestCaseError::fail)?;
    }
}

fn result(policy: &str, workload: &str) -> (f64, crate::report::RunReport) {
    let r = crate::run(RunConfig {
        machine: "piii700-4way-1m".into(),
        cpus: Some(4),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    })
    .unwrap();
    (r.result.value, r)
}

/// See: table V3 (seed finding 4). Without sync wake-ups a split bw_pipe pair pays
/// cross-CPU copies and IPIs for every page; with them the wakee joins the waker and the
/// pair stays on one CPU. lat_pipe's wake-ups are asynchronous, so sync does not matter.
#[test]
fn sync_wakeups_keep_the_bw_pipe_pair_together() {
    let (off, r_off) = result("o1-2.6:sync_wakeups=off", "bw_pipe:mb=4");
    let (on, r_on) = result("o1-2.6:sync_wakeups=on", "bw_pipe:mb=4");
    assert!(on > 3.0 * off, "bw_pipe off {off} on {on}");
    // Split, every page hand-off is a cross-CPU wake-up; together, almost none are.
    assert!(
        r_off.counters.ipis > 1000 && r_on.counters.ipis * 20 < r_off.counters.ipis,
        "IPIs off {} on {}",
        r_off.counters.ipis,
        r_on.counters.ipis
    );
    let (loff, _) = result("o1-2.6:sync_wakeups=off", "lat_pipe:rounds=3000");
    let (lon, _) = result("o1-2.6:sync_wakeups=on", "lat_pipe:rounds=3000");
    assert!(
        (loff - lon).abs() < 0.05 * loff,
        "lat_pipe off {loff} on {lon}"
    );
}

/// See: table V3. -D1 splits the pair only at an idle rebalance tick (every 250 ms) that
/// finds both tasks queued; after that, sync wake-ups are what brings it back together.
#[test]
fn d1_without_sync_wakeups_stays_split_once_balanced_apart() {
    let w = "bw_pipe:mb=2,warmup_kb=1000000";
    let (off, r_off) = result("o1-d1:sync_wakeups=off", w);
    let (on, _) = result("o1-d1:sync_wakeups=on", w);
    assert!(r_off.counters.migrations >= 1);
    assert!(on > 3.0 * off, "bw_pipe off {off} on {on}");
}
