//! SysV semaphores as 2.4 and 6.x run them (`kernel/usync.rs`): a decrement sleeps at zero,
//! a post of N lets exactly N decrements through (2.4: each woken waiter retries and wakes
//! the next; 6.x: the poster completes them all), a wait-for-zero returns once the value
//! reaches zero, `SETVAL` sets it.

use schedlab::kernel::abi::{program, Op, Program, Record, SyncOp};
use schedlab::kernel::Kernel;
use schedlab::sim::{RunConfig, Simulation};
use schedlab::workload::{metric, Metric, Workload};

const SEM: u32 = 7;
const DONE: u32 = 8;

/// Waiter: `semop(SEM, −1)`, mark "passed", `semop(DONE, −1)`, exit.
fn waiter() -> Box<dyn Program> {
    waiter_of(1, "passed")
}

/// Waiter: `semop(SEM, −need)`, mark `mark`, `semop(DONE, −1)`, exit.
fn waiter_of(need: i32, mark: &'static str) -> Box<dyn Program> {
    let mut step = 0;
    program(move |env| {
        step += 1;
        match step {
            1 => Op::Sync(SyncOp::SemOp { id: SEM, op: -need }),
            2 => {
                assert_eq!(env.ret, 0);
                env.mark(mark);
                Op::Sync(SyncOp::SemOp { id: DONE, op: -1 })
            }
            _ => Op::Exit,
        }
    })
}

/// init: `SETVAL(DONE, waiters)`, clones the waiters, computes 10 ms (they all block, on
/// one CPU too: a slice is shorter), posts `first`, computes 10 ms, marks "second", posts
/// the rest, waits for `DONE` to be zero, marks "all", reaps.
struct Posts {
    waiters: u64,
    first: i32,
    /// The first "post" is `semctl(SETVAL, first)` on the still-zero semaphore.
    setval: bool,
}

impl Workload for Posts {
    fn root(&self) -> Box<dyn Program> {
        let (n, first, setval) = (self.waiters, self.first, self.setval);
        let mut step = 0u64;
        program(move |env| {
            step += 1;
            match step {
                1 => Op::Sync(SyncOp::SemSetVal {
                    id: DONE,
                    val: n as u32,
                }),
                s if s < 2 + n => Op::Clone { child: waiter() },
                s if s == 2 + n => Op::Compute {
                    ns: 10_000_000,
                    ws: 0,
                },
                s if s == 3 + n && setval => Op::Sync(SyncOp::SemSetVal {
                    id: SEM,
                    val: first as u32,
                }),
                s if s == 3 + n => Op::Sync(SyncOp::SemOp { id: SEM, op: first }),
                s if s == 4 + n => Op::Compute {
                    ns: 10_000_000,
                    ws: 0,
                },
                s if s == 5 + n => {
                    env.mark("second");
                    Op::Sync(SyncOp::SemOp {
                        id: SEM,
                        op: n as i32 - first,
                    })
                }
                s if s == 6 + n => Op::Sync(SyncOp::SemOp { id: DONE, op: 0 }),
                s if s == 7 + n => {
                    env.mark("all");
                    Op::Wait
                }
                s if s < 7 + 2 * n => Op::Wait,
                _ => Op::Exit,
            }
        })
    }
    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(metric(
            "passed",
            rec.marks.get("passed").map_or(0, Vec::len) as f64,
            "tasks",
            "higher",
        ))
    }
}

/// The policies whose releases run 2.4's and 6.x's `update_queue`.
const POLICIES: [&str; 2] = ["linux-2.4", "eevdf"];

fn run(policy: &str, waiters: u64, first: i32, cpus: usize) -> Simulation {
    run_posts(
        policy,
        Box::new(Posts {
            waiters,
            first,
            setval: false,
        }),
        cpus,
    )
}

fn run_posts(policy: &str, posts: Box<dyn Workload>, cpus: usize) -> Simulation {
    let cfg = RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: "posts".into(),
        seed: 1,
    };
    let mut sim = Simulation::with_workload(cfg, posts).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim.check().unwrap();
    sim
}

#[test]
fn a_post_of_n_lets_exactly_n_waiters_through() {
    for (policy, cpus) in POLICIES.iter().flat_map(|p| [(*p, 1), (*p, 4)]) {
        let sim = run(policy, 5, 3, cpus);
        let rec = &sim.k.rec;
        let second = rec.first("second").unwrap();
        let passed = &rec.marks["passed"];
        assert_eq!(passed.len(), 5, "every waiter passes in the end");
        let early = passed.iter().filter(|&&t| t < second).count();
        assert_eq!(
            early, 3,
            "{policy}, {cpus} CPUs: passes before the second post: {passed:?}"
        );
        // Each waiter slept on SEM; the waiters' DONE decrements never sleep (it starts
        // at 5); init's wait-for-zero sleeps unless the woken waiters all ran first.
        let sleeps = sim.k.stats.semop_sleeps;
        assert!(
            (5..=6).contains(&sleeps),
            "{policy}, {cpus} CPUs: {sleeps} sleeps"
        );
        // Calls: SETVAL is not a semop; 2 posts, 1 wait-for-zero, 2 per waiter.
        assert_eq!(sim.k.stats.semops, 2 + 1 + 2 * 5);
    }
}

#[test]
fn the_wait_for_zero_returns_after_the_last_decrement() {
    for policy in POLICIES {
        let sim = run(policy, 4, 4, 2);
        let rec = &sim.k.rec;
        let last_pass = *rec.marks["passed"].iter().max().unwrap();
        let all = rec.first("all").unwrap();
        assert!(
            all > last_pass,
            "{policy}: init woke at {all} before the last pass at {last_pass}"
        );
    }
}

#[test]
fn setval_wakes_the_waiters_its_value_lets_through() {
    // 2.4's semctl(SETVAL) runs update_queue: a value of 2 lets two of four sleeping
    // decrements through before the later post of the other two.
    for policy in POLICIES {
        let sim = run_posts(
            policy,
            Box::new(Posts {
                waiters: 4,
                first: 2,
                setval: true,
            }),
            2,
        );
        let rec = &sim.k.rec;
        let second = rec.first("second").unwrap();
        let passed = &rec.marks["passed"];
        assert_eq!(passed.len(), 4);
        let early = passed.iter().filter(|&&t| t < second).count();
        assert_eq!(
            early, 2,
            "{policy}: passes before the second post: {passed:?}"
        );
    }
}

/// init: `SETVAL(DONE, 2)`, clones a waiter for 2 ("big"), computes 1 ms, clones one for 1
/// ("small"), computes 1 ms, posts 1, computes 1 ms, marks "check", posts 2, waits for
/// `DONE` to be zero, reaps.
struct Skip;

impl Workload for Skip {
    fn root(&self) -> Box<dyn Program> {
        let mut step = 0u64;
        program(move |env| {
            step += 1;
            match step {
                1 => Op::Sync(SyncOp::SemSetVal { id: DONE, val: 2 }),
                2 => Op::Clone {
                    child: waiter_of(2, "big"),
                },
                3 | 5 | 7 => Op::Compute {
                    ns: 1_000_000,
                    ws: 0,
                },
                4 => Op::Clone {
                    child: waiter_of(1, "small"),
                },
                6 => Op::Sync(SyncOp::SemOp { id: SEM, op: 1 }),
                8 => {
                    env.mark("check");
                    Op::Sync(SyncOp::SemOp { id: SEM, op: 2 })
                }
                9 => Op::Sync(SyncOp::SemOp { id: DONE, op: 0 }),
                10 | 11 => Op::Wait,
                _ => Op::Exit,
            }
        })
    }
    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(metric("passed", rec.marks.len() as f64, "marks", "higher"))
    }
}

#[test]
fn a_post_6x_completes_a_later_waiter_the_first_cannot_let_pass() {
    // A post of 1 with a waiter for 2 queued before a waiter for 1: 6.x's update_queue
    // skips the first and completes the second; 2.4's wakes only the first, which
    // retries, fails and sleeps again, so the second waits for the next post.
    for (policy, small_early) in [("eevdf", true), ("linux-2.4", false)] {
        let sim = run_posts(policy, Box::new(Skip), 2);
        let rec = &sim.k.rec;
        let check = rec.first("check").unwrap();
        let small = rec.first("small").unwrap();
        let big = rec.first("big").unwrap();
        assert_eq!(
            small < check,
            small_early,
            "{policy}: small at {small}, check at {check}"
        );
        assert!(
            big > check,
            "{policy}: the waiter for 2 passes only after the post of 2"
        );
    }
}
