//! Simulated cost of one 2.4 `schedule()` as the run queue grows: N threads of one process
//! loop on `sched_yield()` on 8 CPUs under `linux-2.4`.
//!
//! Each N is run twice, identical except for how long the threads keep yielding; the
//! difference of the two runs' counters is the steady state (setup, start and exit cancel
//! out). µs per `schedule()` = the policy's time in `schedule()` (lock, spin, walk,
//! recalculation) plus the kernel's fixed `schedule_ns`, per call; the context switch is
//! not included.
//!
//! `cargo run --release -p schedlab --example linux24_yield_scan [-- N ...]`

use std::time::Instant;

use schedlab::engine::{Time, MS};
use schedlab::kernel::abi::{program, Env, Op, Program, Record};
use schedlab::kernel::Kernel;
use schedlab::report::Metric;
use schedlab::workload::{metric, Workload};
use schedlab::{RunConfig, Simulation};

struct YieldLoop {
    threads: u32,
    start: Time,
    until: Time,
}

impl Workload for YieldLoop {
    fn root(&self) -> Box<dyn Program> {
        let (threads, start, until) = (self.threads, self.start, self.until);
        let mut i = 0;
        program(move |_e: &mut Env<'_>| {
            i += 1;
            if i <= threads {
                Op::Clone {
                    child: program(move |e: &mut Env<'_>| {
                        if e.now < start {
                            Op::Sleep { ns: start - e.now }
                        } else if e.now >= until {
                            Op::Exit
                        } else {
                            e.count("yields", 1);
                            Op::Yield
                        }
                    }),
                }
            } else if i <= 2 * threads {
                Op::Wait
            } else {
                Op::Exit
            }
        })
    }

    fn result(&self, rec: &Record, _k: &Kernel) -> Result<Metric, String> {
        Ok(metric("yields", rec.count("yields") as f64, "", "higher"))
    }

    fn limit_ns(&self) -> Time {
        3600 * schedlab::engine::SEC
    }
}

struct Totals {
    calls: f64,
    sched_ns: f64,
    lock_ns: f64,
    examined: f64,
    acquisitions: f64,
    wait_ns: f64,
    contended: f64,
    wall_s: f64,
}

fn run(threads: u32, cpus: usize, start: Time, until: Time) -> Totals {
    let cfg = RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(cpus),
        policy: "linux-2.4".into(),
        workload: "yield_loop".into(),
        seed: 1,
    };
    let w = YieldLoop {
        threads,
        start,
        until,
    };
    let t0 = Instant::now();
    let mut sim = Simulation::with_workload(cfg, Box::new(w)).expect("boots");
    sim.run(&mut |_, _| {}).expect("runs");
    let wall_s = t0.elapsed().as_secs_f64();
    let r = sim.report().expect("report");
    let p = &r.counters.policy;
    let l = &r.counters.locks["runqueue_lock"];
    let fixed = sim.k.machine.costs().schedule_ns as f64;
    let calls = p["schedule_calls"];
    Totals {
        calls,
        sched_ns: (r.counters.schedule_ns_mean + fixed) * calls,
        lock_ns: r.counters.schedule_lock_ns_mean * calls,
        examined: p["tasks_examined"],
        acquisitions: l.acquisitions as f64,
        wait_ns: l.wait_ns_mean * l.acquisitions as f64,
        contended: l.contended_pct / 100.0 * l.acquisitions as f64,
        wall_s,
    }
}

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("thread counts"))
        .collect();
    let counts = if args.is_empty() {
        vec![16, 512, 4096]
    } else {
        args
    };
    let cpus = 8;
    println!(
        "linux-2.4 on piii700-1m, {cpus} CPUs, N threads looping on sched_yield (steady state)"
    );
    println!(
        "{:>6} {:>9} {:>10} {:>12} {:>12} {:>11} {:>10} {:>10}",
        "N", "calls", "examined", "us/schedule", "lock+spin us", "contended%", "wait us", "wall s"
    );
    for n in counts {
        // Setup takes a while for large N: the parent's counter halves at every fork.
        let start = 200 * MS + Time::from(n) * 200_000;
        let (short, long) = (start + 200 * MS, start + 1200 * MS);
        let a = run(n, cpus, start, short);
        let b = run(n, cpus, start, long);
        let calls = b.calls - a.calls;
        let acq = b.acquisitions - a.acquisitions;
        println!(
            "{:>6} {:>9.0} {:>10.1} {:>12.2} {:>12.2} {:>11.1} {:>10.2} {:>10.2}",
            n,
            calls,
            (b.examined - a.examined) / calls,
            (b.sched_ns - a.sched_ns) / calls / 1e3,
            (b.lock_ns - a.lock_ns) / calls / 1e3,
            100.0 * (b.contended - a.contended) / acq,
            (b.wait_ns - a.wait_ns) / acq / 1e3,
            b.wall_s,
        );
    }
}
