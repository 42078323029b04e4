//! `schedlab bench`: how fast the simulator is. Runs standard workloads and prints events
//! per second and wall time; no pass/fail (wall time depends on the host).

use std::time::Instant;

use schedlab::{RunConfig, Simulation};

use crate::error::{out, CliError};

/// (machine, cpus, policy, workload) of each benchmark run.
const FULL: &[(&str, usize, &str, &str)] = &[
    ("piii700-1m", 2, "fifo", "lat_pipe:rounds=200000"),
    ("piii700-4way-1m", 4, "fifo", "bw_pipe:mb=200"),
    ("piii700-1m", 8, "fifo", "synthetic:tasks=2000,ops=200"),
    ("piii700-2m", 8, "fifo", "synthetic:tasks=4000,ops=100"),
    // The era's workloads under the era's policies, 8-way: is a simulated hackbench
    // faster than the real one ran (sim/wall > 1)?
    ("piii700-1m", 8, "linux-2.4", "hackbench:groups=10"),
    ("piii700-1m", 8, "o1-2.6", "hackbench:groups=10"),
    ("piii700-1m", 8, "mq", "reflex:tasks=16"),
    ("piii700-1m", 8, "linux-2.4", "chat:rooms=10,messages=200"),
    ("piii700-1m", 8, "o1-g1", "loop_yield:instances=16"),
];

const QUICK: &[(&str, usize, &str, &str)] = &[
    ("piii700-1m", 2, "fifo", "lat_pipe:rounds=20000"),
    ("piii700-4way-1m", 4, "fifo", "bw_pipe:mb=20"),
    ("piii700-1m", 8, "fifo", "synthetic:tasks=2000,ops=20"),
];

pub(crate) fn bench(quick: bool, json: bool) -> Result<(), CliError> {
    let runs = if quick { QUICK } else { FULL };
    let mut rows = Vec::new();
    for &(machine, cpus, policy, workload) in runs {
        let cfg = RunConfig {
            machine: machine.into(),
            cpus: Some(cpus),
            policy: policy.into(),
            workload: workload.into(),
            seed: 1,
        };
        let mut sim = Simulation::new(cfg)?;
        let t0 = Instant::now();
        sim.run(&mut |_, _| {})?;
        let wall = t0.elapsed().as_secs_f64();
        let r = sim.report()?;
        let eps = r.sim.events as f64 / wall;
        if !json {
            out(&format!(
                "{machine:<16} {cpus} cpus {policy:<10} {workload:<28} {:>11} events {:>8.3} s wall {:>7.2} M events/s  sim/wall {:.2}\n",
                r.sim.events,
                wall,
                eps / 1e6,
                r.sim.simulated_ns as f64 / 1e9 / wall
            ))?;
        }
        rows.push(serde_json::json!({
            "machine": machine, "cpus": cpus, "policy": policy, "workload": workload,
            "events": r.sim.events, "wall_s": wall, "events_per_s": eps,
            "simulated_s": r.sim.simulated_ns as f64 / 1e9,
        }));
    }
    if json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rows).expect("json")
        ))?;
    }
    Ok(())
}
