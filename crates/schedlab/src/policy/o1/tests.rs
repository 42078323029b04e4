//! Decisions of the O(1) versions on small hand-built states, and property tests of the
//! balancers' invariants.

use proptest::prelude::*;

use super::*;
use crate::kernel::abi::{program, Op};
use crate::kernel::Acct;
use crate::spec::{self, Spec};
use crate::{RunConfig, Simulation};

/// A booted 4-CPU machine (its own policy is `fifo` and stays out of the way) and an
/// O(1) instance of `policy` that owns the tasks the test creates.
struct Bench {
    sim: Simulation,
    o: O1,
}

impl Bench {
    fn new(policy: &str) -> Bench {
        let mut sim = Simulation::new(RunConfig {
            machine: "piii700-4way-1m".into(),
            cpus: Some(4),
            // The same HZ, so that jiffies agree.
            policy: if policy.starts_with("o1-2.6") {
                "fifo:hz=1000".into()
            } else {
                "fifo:hz=100".into()
            },
            workload: "lat_pipe".into(),
            seed: 1,
        })
        .unwrap();
        // init belongs to the booted fifo policy; take it out of the picture.
        sim.k.tasks[4].state = TaskState::Dead;
        let spec = Spec::parse("policy", policy).unwrap();
        let info = crate::policy::find(&spec.name).unwrap();
        let params = spec::resolve("policy", &spec, info.params).unwrap();
        let v = match info.name {
            "o1-d1" => versions::D1,
            "o1-g1" => versions::G1,
            _ => versions::V26,
        };
        let mut o = O1::new(v, &params, &sim.k.machine);
        let mut ctx = SchedCtx::new(&mut sim.k, 0, Acct::Sched);
        o.init(&mut ctx);
        for c in 0..4 {
            o.task_new(&mut ctx, c, None);
        }
        Bench { sim, o }
    }

    /// A new runnable task queued on `cpu`'s array `arr` (0 = active at boot).
    fn task(&mut self, cpu: CpuId, arr: usize, prio: i32) -> TaskId {
        let t = self
            .sim
            .create_task(None, program(|_| Op::Exit), 9, 0, u64::MAX, cpu);
        self.sim.k.tasks[t as usize].state = TaskState::Running;
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        self.o.task_new(&mut ctx, t, None);
        self.o.ts[t as usize].prio = prio;
        self.o.enqueue(t, cpu, arr);
        self.o.rqs[cpu].nr_running += 1;
        t
    }

    /// Make queued `t` the task running on `cpu`.
    fn run(&mut self, cpu: CpuId, t: TaskId) {
        let k = &mut self.sim.k;
        let old = k.cpus[cpu].curr;
        k.tasks[old as usize].on_cpu = None;
        k.cpus[cpu].curr = t;
        k.tasks[t as usize].on_cpu = Some(cpu);
    }

    fn balance(&mut self, cpu: CpuId, idle: bool) {
        let l = self.o.rqs[cpu].lock;
        let mut ctx = SchedCtx::new(&mut self.sim.k, cpu, Acct::Sched);
        ctx.lock(l);
        self.o.load_balance(&mut ctx, cpu, idle);
        ctx.unlock(l);
        assert!(self.sim.k.locks.iter().all(|l| l.holder.is_none()));
    }

    fn nr(&self, cpu: CpuId) -> u32 {
        self.o.rqs[cpu].nr_running
    }

    fn check(&self) {
        self.o.check(&self.sim.k).unwrap();
    }
}

#[test]
fn schedule_switches_arrays_when_active_is_empty() {
    let mut b = Bench::new("o1-d1");
    let x = b.task(0, 1, 125);
    let y = b.task(0, 1, 121);
    assert_eq!(b.o.rqs[0].active, 0);
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    let next = b.o.schedule(&mut ctx, 0, 0);
    assert_eq!(next, y, "the better priority of the former expired array");
    assert_eq!(b.o.rqs[0].active, 1);
    assert_eq!(b.o.stats.array_switches, 1);
    let _ = x;
    b.check();
}

#[test]
fn expiry_sends_cpu_hogs_to_expired_and_interactive_tasks_back_to_active() {
    let mut b = Bench::new("o1-g1");
    let hog = b.task(0, 0, 120);
    b.run(0, hog);
    b.o.ts[hog as usize].time_slice = 1;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    b.o.scheduler_tick(&mut ctx, 0, hog, true);
    let ts = &b.o.ts[hog as usize];
    assert_eq!(ts.array, Some(1), "expired");
    assert_eq!(ts.prio, 121, "one level worse per expired slice");
    assert_eq!(
        ts.time_slice, 9,
        "PRIO_TO_TIMESLICE(120) at HZ=100, MIN 20 ms"
    );
    assert!(b.sim.k.tasks[hog as usize].need_resched);

    let mut b = Bench::new("o1-g1");
    let ia = b.task(0, 0, 105);
    b.run(0, ia);
    b.o.ts[ia as usize].time_slice = 1;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    b.o.scheduler_tick(&mut ctx, 0, ia, true);
    assert_eq!(
        b.o.ts[ia as usize].array,
        Some(0),
        "interactive: back to active"
    );
    assert_eq!(b.o.ts[ia as usize].prio, 106);
    b.check();
}

#[test]
fn v26_expired_starving_overrides_interactivity() {
    let mut b = Bench::new("o1-2.6");
    let t = b.task(0, 0, 110);
    b.o.ts[t as usize].sleep_avg = b.o.c.ns_max_sleep_avg; // bonus +5: prio 115
    b.run(0, t);
    b.o.ts[t as usize].time_slice = 1;
    // Time is 0 at boot: make the expired array look old.
    b.sim.k.cpus[0].clock = 5 * crate::engine::SEC;
    b.o.rqs[0].expired_timestamp = 1;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    b.o.scheduler_tick(&mut ctx, 0, t, true);
    assert_eq!(b.o.ts[t as usize].prio, 115);
    assert_eq!(
        b.o.ts[t as usize].array,
        Some(1),
        "starving: expired anyway"
    );

    let mut b = Bench::new("o1-2.6");
    let t = b.task(0, 0, 110);
    b.o.ts[t as usize].sleep_avg = b.o.c.ns_max_sleep_avg;
    b.run(0, t);
    b.o.ts[t as usize].time_slice = 1;
    b.sim.k.cpus[0].clock = 5 * crate::engine::SEC;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    b.o.scheduler_tick(&mut ctx, 0, t, true);
    assert_eq!(b.o.ts[t as usize].array, Some(0), "interactive: active");
    assert_eq!(
        b.o.rqs[0].expired_timestamp, 5000,
        "set before the test (2.6.0)"
    );
}

#[test]
fn wakeup_stays_on_its_runqueue_and_kicks_that_cpu() {
    let mut b = Bench::new("o1-2.6:sync_wakeups=off");
    let w = b.task(0, 0, 120);
    b.run(0, w);
    let s = b.task(1, 0, 120);
    b.sim.k.tasks[s as usize].state = TaskState::Interruptible;
    let l = b.o.rqs[1].lock;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 1, Acct::Sched);
    ctx.lock(l);
    b.o.deactivate_task(&ctx, s, 1);
    ctx.unlock(l);
    let ipis = b.sim.k.stats.ipis;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    b.o.try_to_wake_up(&mut ctx, s, true);
    assert_eq!(b.sim.k.tasks[s as usize].processor, 1, "stays on its CPU");
    assert_eq!(b.sim.k.stats.ipis, ipis + 1, "idle CPU 1 is kicked by IPI");
    b.sim.k.tasks[s as usize].state = TaskState::Running;
    b.check();
}

#[test]
fn sync_wakeup_moves_the_wakee_to_the_waker_without_preempting() {
    let mut b = Bench::new("o1-d1:sync_wakeups=on");
    let w = b.task(0, 0, 130);
    b.run(0, w);
    let s = b.task(1, 0, 120);
    b.sim.k.tasks[s as usize].state = TaskState::Interruptible;
    let l = b.o.rqs[1].lock;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 1, Acct::Sched);
    ctx.lock(l);
    b.o.deactivate_task(&ctx, s, 1);
    ctx.unlock(l);
    let ipis = b.sim.k.stats.ipis;
    let mut ctx = SchedCtx::new(&mut b.sim.k, 0, Acct::Sched);
    b.o.try_to_wake_up(&mut ctx, s, true);
    assert_eq!(b.sim.k.tasks[s as usize].processor, 0, "moved to the waker");
    assert_eq!(b.nr(0), 2);
    assert_eq!(b.sim.k.stats.ipis, ipis);
    assert!(!b.sim.k.tasks[w as usize].need_resched, "no preemption");
    assert_eq!(b.sim.k.stats.migrations, 1);
    b.sim.k.tasks[s as usize].state = TaskState::Running;
    b.check();
}

#[test]
fn g1_idle_balance_pulls_one_task_from_the_longest_queue() {
    let mut b = Bench::new("o1-g1");
    for _ in 0..3 {
        b.task(1, 0, 120);
    }
    let r = b.task(2, 0, 120);
    b.run(2, r);
    for _ in 0..4 {
        b.task(2, 0, 120);
    }
    b.balance(0, true);
    assert_eq!((b.nr(0), b.nr(1), b.nr(2)), (1, 3, 4));
    assert_eq!(b.o.stats.pulled_idle, 1);
    b.check();
}

#[test]
fn g1_busy_balance_filters_fluctuations_then_halves_the_imbalance() {
    let mut b = Bench::new("o1-g1");
    let r = b.task(0, 0, 120);
    b.run(0, r);
    let q = b.task(1, 0, 120);
    b.run(1, q);
    for _ in 0..6 {
        b.task(1, 1, 125);
    }
    b.balance(0, false);
    assert_eq!(b.nr(0), 1, "first look: previous length 0 wins (min)");
    b.balance(0, false);
    // imbalance = (7 − 1)/2 = 3 ≥ (7 + 3)/4: three tasks move, from the expired array.
    assert_eq!((b.nr(0), b.nr(1)), (4, 4));
    assert_eq!(b.o.stats.pulled_busy, 3);
    b.check();
}

#[test]
fn early_balancer_moves_the_whole_difference_and_overshoots() {
    let mut b = Bench::new("o1-d1");
    let r = b.task(1, 0, 120);
    b.run(1, r);
    b.task(1, 0, 122);
    b.task(1, 1, 121);
    b.balance(0, true);
    // nr_tasks = 3: one from expired, then on into active.
    assert_eq!((b.nr(0), b.nr(1)), (2, 1));
    b.check();
}

#[test]
fn v26_busy_balance_leaves_cache_hot_tasks() {
    let mut b = Bench::new("o1-2.6");
    assert_eq!(b.o.cache_decay_ticks, Some(3), "1 MB L2 at 700 MHz");
    b.sim.k.cpus[0].clock = crate::engine::SEC;
    let r = b.task(0, 0, 120);
    b.run(0, r);
    let c = b.task(1, 0, 120);
    b.run(1, c);
    let hot: Vec<TaskId> = (0..4).map(|_| b.task(1, 0, 120)).collect();
    for &t in &hot {
        b.o.ts[t as usize].timestamp = crate::engine::SEC - crate::engine::MS;
    }
    b.balance(0, false);
    b.balance(0, false);
    assert_eq!(b.nr(0), 1, "all hot");
    for &t in &hot[..2] {
        b.o.ts[t as usize].timestamp = 0;
    }
    b.balance(0, false);
    assert_eq!(b.nr(0), 3, "the two cold ones");
    b.check();
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
        let mut b = Bench::new("o1-g1");
        for (i, &n) in lens.iter().enumerate() {
            let cpu = i + 1;
            for k in 0..n {
                let t = b.task(cpu, k % 2, 110 + (k as i32 % 5));
                if k == 0 {
                    b.run(cpu, t);
                }
            }
        }
        let before: u32 = (0..4).map(|c| b.nr(c)).sum();
        b.balance(0, true);
        let want = u32::from(lens.iter().any(|&n| n >= 2));
        prop_assert_eq!(b.nr(0), want);
        prop_assert_eq!((0..4).map(|c| b.nr(c)).sum::<u32>(), before);
        b.o.check(&b.sim.k).map_err(TestCaseError::fail)?;
    }

    /// 2.6 busy balancing never moves a cache-hot task; moved tasks keep every invariant.
    #[test]
    fn v26_busy_balance_never_moves_a_hot_task(
        lens in prop::collection::vec(0usize..8, 4),
        ages in prop::collection::vec(0u64..6, 32),
        rounds in 1usize..4,
    ) {
        let mut b = Bench::new("o1-2.6");
        let now = crate::engine::SEC;
        for c in 0..4 {
            b.sim.k.cpus[c].clock = now;
        }
        let mut age_of = Vec::new();
        for (cpu, &n) in lens.iter().enumerate() {
            for k in 0..n {
                let t = b.task(cpu, k % 2, 115 + (k as i32 % 7));
                let age = ages[(cpu * 8 + k) % ages.len()];
                b.o.ts[t as usize].timestamp = now - age * crate::engine::MS;
                age_of.push((t, cpu, age));
                if k == 0 {
                    b.run(cpu, t);
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
            let now_cpu = b.sim.k.tasks[t as usize].processor;
            if now_cpu != cpu {
                prop_assert!(age >= 3, "task {} aged {} ms moved while cache-hot", t, age);
            }
        }
        b.o.check(&b.sim.k).map_err(TestCaseError::fail)?;
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
