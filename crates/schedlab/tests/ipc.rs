//! SysV semaphores as 2.4 ran them (`kernel/usync.rs`): a decrement sleeps at zero, a
//! post of N lets exactly N decrements through (each woken waiter retries and wakes the
//! next), a wait-for-zero returns once the value reaches zero, `SETVAL` sets it.

use schedlab::kernel::abi::{program, Op, Program, Record, SyncOp};
use schedlab::kernel::Kernel;
use schedlab::sim::{RunConfig, Simulation};
use schedlab::workload::{metric, Metric, Workload};

const SEM: u32 = 7;
const DONE: u32 = 8;

/// Waiter: `semop(SEM, −1)`, mark "passed", `semop(DONE, −1)`, exit.
fn waiter() -> Box<dyn Program> {
    let mut step = 0;
    program(move |env| {
        step += 1;
        match step {
            1 => Op::Sync(SyncOp::SemOp { id: SEM, op: -1 }),
            2 => {
                assert_eq!(env.ret, 0);
                env.mark("passed");
                Op::Sync(SyncOp::SemOp { id: DONE, op: -1 })
            }
            _ => Op::Exit,
        }
    })
}

/// init: `SETVAL(DONE, waiters)`, clones the waiters, computes 1 ms (they all block),
/// posts `first`, computes 1 ms, marks "second", posts the rest, waits for `DONE` to be
/// zero, marks "all", reaps.
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
                    ns: 1_000_000,
                    ws: 0,
                },
                s if s == 3 + n && setval => Op::Sync(SyncOp::SemSetVal {
                    id: SEM,
                    val: first as u32,
                }),
                s if s == 3 + n => Op::Sync(SyncOp::SemOp { id: SEM, op: first }),
                s if s == 4 + n => Op::Compute {
                    ns: 1_000_000,
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

fn run(waiters: u64, first: i32, cpus: usize) -> Simulation {
    run_posts(
        Posts {
            waiters,
            first,
            setval: false,
        },
        cpus,
    )
}

fn run_posts(posts: Posts, cpus: usize) -> Simulation {
    let cfg = RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: "linux-2.4".into(),
        workload: "posts".into(),
        seed: 1,
    };
    let mut sim = Simulation::with_workload(cfg, Box::new(posts)).unwrap();
    sim.run(&mut |_, _| {}).unwrap();
    sim.check().unwrap();
    sim
}

#[test]
fn a_post_of_n_lets_exactly_n_waiters_through() {
    for cpus in [1, 4] {
        let sim = run(5, 3, cpus);
        let rec = &sim.k.rec;
        let second = rec.first("second").unwrap();
        let passed = &rec.marks["passed"];
        assert_eq!(passed.len(), 5, "every waiter passes in the end");
        let early = passed.iter().filter(|&&t| t < second).count();
        assert_eq!(
            early, 3,
            "{cpus} CPUs: passes before the second post: {passed:?}"
        );
        // Each waiter slept on SEM; the waiters' DONE decrements never sleep (it starts
        // at 5); init's wait-for-zero sleeps unless the woken waiters all ran first.
        let sleeps = sim.k.stats.semop_sleeps;
        assert!((5..=6).contains(&sleeps), "{cpus} CPUs: {sleeps} sleeps");
        // Calls: SETVAL is not a semop; 2 posts, 1 wait-for-zero, 2 per waiter.
        assert_eq!(sim.k.stats.semops, 2 + 1 + 2 * 5);
    }
}

#[test]
fn the_wait_for_zero_returns_after_the_last_decrement() {
    let sim = run(4, 4, 2);
    let rec = &sim.k.rec;
    let last_pass = *rec.marks["passed"].iter().max().unwrap();
    let all = rec.first("all").unwrap();
    assert!(
        all > last_pass,
        "init woke at {all} before the last pass at {last_pass}"
    );
}

#[test]
fn setval_wakes_the_waiters_its_value_lets_through() {
    // 2.4's semctl(SETVAL) runs update_queue: a value of 2 lets two of four sleeping
    // decrements through before the later post of the other two.
    let sim = run_posts(
        Posts {
            waiters: 4,
            first: 2,
            setval: true,
        },
        2,
    );
    let rec = &sim.k.rec;
    let second = rec.first("second").unwrap();
    let passed = &rec.marks["passed"];
    assert_eq!(passed.len(), 4);
    let early = passed.iter().filter(|&&t| t < second).count();
    assert_eq!(early, 2, "passes before the second post: {passed:?}");
}
