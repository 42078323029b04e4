//! `schedlab bench`: how fast the simulator is. Runs standard workloads and prints, per
//! run, events, wall time, events per second, ns per event, peak memory and simulated
//! seconds per wall second; no pass/fail (wall time depends on the host).
//!
//! Peak memory is the process's resident high-water mark during the run alone: the mark is
//! reset before each run (`/proc/self/clear_refs`, Linux) and read after it (`VmHWM`).

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
    // Issue 18's targets: 8-way hackbench 50.
    ("piii700-1m", 8, "linux-2.4", "hackbench:groups=50"),
    ("piii700-1m", 8, "o1-2.6", "hackbench:groups=50"),
    ("piii700-1m", 8, "mq", "reflex:tasks=16"),
    ("piii700-1m", 8, "linux-2.4", "chat:rooms=10,messages=200"),
    ("piii700-1m", 8, "o1-g1", "loop_yield:instances=16"),
    // Issue 14's hot path: 2.4's walk under the machine mechanisms, contended.
    ("piii700-1m", 8, "linux-2.4", "chat:rooms=20,messages=200"),
    // What the mechanisms cost the simulator: the same two runs with all three off (a
    // different simulated run, so compare ns per event, not wall time).
    (
        "piii700-1m:bus=off,lock=ticket,coherence=off",
        8,
        "linux-2.4",
        "chat:rooms=20,messages=200",
    ),
    (
        "piii700-1m:bus=off,lock=ticket,coherence=off",
        8,
        "o1-2.6",
        "hackbench:groups=50",
    ),
    (
        "piii700-1m:bus=off,lock=ticket,coherence=off",
        8,
        "linux-2.4",
        "hackbench:groups=50",
    ),
    // Issue 18's flat cost from 1 to 1024 CPUs (ns per event within 1.3×; the balancers'
    // own O(CPUs) walks are in their counters: balance_rqs_scanned, lb_cpus_scanned).
    (
        "numa-1024:bus=off,lock=ticket,coherence=off",
        1024,
        "o1-2.6",
        "synthetic:tasks=4096,ops=50",
    ),
    (
        "numa-1024:bus=off,lock=ticket,coherence=off",
        1024,
        "cfs",
        "synthetic:tasks=4096,ops=50",
    ),
    (
        "numa-1024:bus=off,lock=ticket,coherence=off",
        1024,
        "eevdf",
        "synthetic:tasks=4096,ops=50",
    ),
    // Issue 18's flat cost: the same policy, 1 000 and 100 000 tasks.
    ("numa-1024", 8, "o1-2.6", "synthetic:tasks=1000,ops=500"),
    ("numa-1024", 8, "o1-2.6", "synthetic:tasks=100000,ops=5"),
    // 2.4's counter recalculation at both sizes: with the coherence directory its walk
    // prices only the lines held somewhere (`Interconnect::recalc_walk`); without it,
    // by its length. The counters follow lazily in both.
    ("numa-1024", 8, "linux-2.4", "synthetic:tasks=1000,ops=500"),
    ("numa-1024", 8, "linux-2.4", "synthetic:tasks=100000,ops=5"),
    (
        "numa-1024:bus=off,lock=ticket,coherence=off",
        8,
        "linux-2.4",
        "synthetic:tasks=1000,ops=500",
    ),
    (
        "numa-1024:bus=off,lock=ticket,coherence=off",
        8,
        "linux-2.4",
        "synthetic:tasks=100000,ops=5",
    ),
    // Issue 45's target: today's largest preset at all its CPUs (at least 1 M events/s).
    (
        "zen3-2s",
        256,
        "eevdf",
        "hackbench:groups=16,threads=on,pipe=on,loops=1000",
    ),
    ("spr-2s", 224, "cfs", "schbench:t=64,r=2"),
];

const QUICK: &[(&str, usize, &str, &str)] = &[
    ("piii700-1m", 2, "fifo", "lat_pipe:rounds=20000"),
    ("piii700-4way-1m", 4, "fifo", "bw_pipe:mb=20"),
    ("piii700-1m", 8, "fifo", "synthetic:tasks=2000,ops=20"),
];

/// Reset the resident-memory high-water mark (Linux ≥ 4.0); false where it cannot be.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The resident-memory high-water mark since the last reset, MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

const HEADER: &str = "\
columns: events simulated | wall seconds | million events per wall second | wall ns per event
         | peak resident memory of the run | simulated seconds per wall second (> 1: faster
         than the 2002 machine ran it)\n";

pub(crate) fn bench(quick: bool, json: bool) -> Result<(), CliError> {
    let runs = if quick { QUICK } else { FULL };
    let mut rows = Vec::new();
    if !json {
        out(HEADER)?;
    }
    // Columns as wide as their longest entry (the machine names carry model options).
    let mw = runs.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let ww = runs.iter().map(|r| r.3.len()).max().unwrap_or(0);
    for &(machine, cpus, policy, workload) in runs {
        let cfg = RunConfig {
            machine: machine.into(),
            cpus: Some(cpus),
            policy: policy.into(),
            workload: workload.into(),
            seed: 1,
        };
        let mut sim = Simulation::new(cfg)?;
        let resettable = reset_peak_rss();
        let t0 = Instant::now();
        sim.run(&mut |_, _| {})?;
        let wall = t0.elapsed().as_secs_f64();
        let r = sim.report()?;
        let eps = r.sim.events as f64 / wall;
        let ns_per_event = wall * 1e9 / (r.sim.events.max(1) as f64);
        let peak = if resettable { peak_rss_mb() } else { None };
        if !json {
            let peak_text = peak.map_or("   ? MB".to_string(), |m| format!("{m:>5.0} MB"));
            out(&format!(
                "{machine:<mw$} {cpus} cpus {policy:<10} {workload:<ww$} {:>11} events {:>8.3} s {:>6.2} M ev/s {:>6.0} ns/ev {peak_text}  sim/wall {:.2}\n",
                r.sim.events,
                wall,
                eps / 1e6,
                ns_per_event,
                r.sim.simulated_ns as f64 / 1e9 / wall
            ))?;
        }
        rows.push(serde_json::json!({
            "machine": machine, "cpus": cpus, "policy": policy, "workload": workload,
            "events": r.sim.events, "wall_s": wall, "events_per_s": eps,
            "ns_per_event": ns_per_event, "peak_rss_mb": peak,
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
