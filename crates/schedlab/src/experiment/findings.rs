//! The five seed findings of `system.md`, each shown with the numbers that show it, from
//! the cells of the calibration tables.

use serde::Serialize;

use super::{lookup, CellResult, Table};

/// One finding as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// 1..5, as numbered in `system.md`.
    pub number: u32,
    /// Short title.
    pub title: String,
    /// What was published.
    pub published: String,
    /// What the simulation gives.
    pub simulated: String,
    /// Whether the simulation shows the effect (`None`: cells missing).
    pub reproduced: Option<bool>,
}

struct Lookup<'a> {
    tables: &'a [Table],
    results: &'a [Vec<CellResult>],
}

/// (published, simulated, run report) of the first cell matching.
type Hit<'a> = (Option<f64>, Option<f64>, Option<&'a serde_json::Value>);

impl<'a> Lookup<'a> {
    fn get(&self, table: &str, policy: &str, workload: &str, cpus: usize) -> Hit<'a> {
        for (t, rs) in self.tables.iter().zip(self.results) {
            if !t.id.starts_with(table) {
                continue;
            }
            for (c, r) in t.cells.iter().zip(rs) {
                if c.policy == policy && c.workload == workload && c.cpus == cpus {
                    return (
                        c.value,
                        r.simulated.as_ref().ok().copied(),
                        r.report.as_ref(),
                    );
                }
            }
        }
        (None, None, None)
    }
}

fn f(x: Option<f64>) -> String {
    match x {
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "n/a".into(),
    }
}

/// A factor as "x2.18", or "n/a".
fn fx(r: Option<f64>) -> String {
    r.map(|v| format!("x{v:.2}"))
        .unwrap_or_else(|| "n/a".into())
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

fn counter(report: Option<&serde_json::Value>, path: &str) -> Option<f64> {
    report.and_then(|r| lookup(r, path))
}

/// The mean busy share of the buses a run had.
fn bus_busy_pct(report: Option<&serde_json::Value>) -> Option<f64> {
    let buses = report?.pointer("/counters/buses")?.as_array()?;
    let busy: Vec<f64> = buses
        .iter()
        .filter_map(|b| b.get("busy_pct")?.as_f64())
        .collect();
    (!busy.is_empty()).then(|| busy.iter().sum::<f64>() / busy.len() as f64)
}

/// The counters that explain finding 1, from 4 to 8 CPUs: the share of CPU time spent
/// spinning (on `runqueue_lock`: the only lock 2.4's scheduler takes), the lock's mean
/// hold, line transfers per `schedule()` and the buses' busy share.
fn collapse_counters(r4: Option<&serde_json::Value>, r8: Option<&serde_json::Value>) -> String {
    let pair = |path: &str| format!("{} -> {}", f(counter(r4, path)), f(counter(r8, path)));
    let hold_us = |r| counter(r, "counters.locks.runqueue_lock.hold_ns_mean").map(|ns| ns / 1000.0);
    format!(
        "runqueue_lock: CPU time spinning {} %, hold {} -> {} us, contended {} %; \
         line transfers per schedule() {}; bus busy {} -> {} %",
        pair("counters.cpu_time.spinning_pct"),
        f(hold_us(r4)),
        f(hold_us(r8)),
        pair("counters.locks.runqueue_lock.contended_pct"),
        pair("counters.lines.c2c_per_schedule"),
        f(bus_busy_pct(r4)),
        f(bus_busy_pct(r8)),
    )
}

/// Compute the findings from a reproduction's tables and results.
pub fn findings(tables: &[Table], results: &[Vec<CellResult>]) -> Vec<Finding> {
    let l = Lookup { tables, results };
    let mut out = Vec::new();

    // 1. Runqueue-lock collapse: chat on 2.4 falls from 4 to 8 CPUs; O(1) does not.
    let w = "chat:rooms=20,messages=200";
    let (p4, s4, r4) = l.get("V2", "linux-2.4", w, 4);
    let (p8, s8, r8) = l.get("V2", "linux-2.4", w, 8);
    let (q4, o4, _) = l.get("V2", "o1-d1", w, 4);
    let (q8, o8, _) = l.get("V2", "o1-d1", w, 8);
    out.push(Finding {
        number: 1,
        title: "runqueue-lock collapse: 2.4 gets slower from 4 to 8 CPUs, per-CPU queues do not"
            .into(),
        published: format!(
            "chat 20 rooms, msg/s: 2.4 {} (4 CPUs) -> {} (8 CPUs), {}; O(1) {} -> {}",
            f(p4),
            f(p8),
            fx(ratio(p8, p4)),
            f(q4),
            f(q8)
        ),
        simulated: format!(
            "2.4 {} -> {}, {}; O(1) {} -> {}. 2.4, 4 -> 8 CPUs: {}",
            f(s4),
            f(s8),
            fx(ratio(s8, s4)),
            f(o4),
            f(o8),
            collapse_counters(r4, r8)
        ),
        reproduced: match (s4, s8, o4, o8) {
            (Some(a), Some(b), Some(c), Some(d)) => Some(b < a && d > 0.9 * c),
            _ => None,
        },
    });

    // 2. O(n) selection: 2.4's µs/round grows with runnable tasks, O(1)'s does not.
    let (p2, s2, _) = l.get("V1", "linux-2.4", "reflex:tasks=2", 8);
    let (p128, s128, _) = l.get("V1", "linux-2.4", "reflex:tasks=128", 8);
    let (q16, o16, _) = l.get("V1", "o1-d1", "reflex:tasks=16", 8);
    let (q128, o128, _) = l.get("V1", "o1-d1", "reflex:tasks=128", 8);
    out.push(Finding {
        number: 2,
        title: "O(n) selection: 2.4 pays per runnable task, O(1) a constant".into(),
        published: format!(
            "reflex 8 CPUs, us/round: 2.4 {} (2 tasks) -> {} (128 tasks), {}; O(1) {} (16) -> {} (128)",
            f(p2),
            f(p128),
            fx(ratio(p128, p2)),
            f(q16),
            f(q128)
        ),
        simulated: format!(
            "2.4 {} -> {}, {}; O(1) {} -> {}",
            f(s2),
            f(s128),
            fx(ratio(s128, s2)),
            f(o16),
            f(o128)
        ),
        reproduced: match (s2, s128, o16, o128) {
            (Some(a), Some(b), Some(c), Some(d)) => Some(b > 1.5 * a && d < 1.5 * c),
            _ => None,
        },
    });

    // 3. Affinity vs latency: 2-task reflex ~2x slower on O(1) and haMQ than on 2.4.
    let mut pubs = Vec::new();
    let mut sims = Vec::new();
    let mut all = Some(true);
    for cpus in [2, 4, 8] {
        let (pv, sv, _) = l.get("V1", "linux-2.4", "reflex:tasks=2", cpus);
        let (po, so, _) = l.get("V1", "o1-d1", "reflex:tasks=2", cpus);
        let (ph, sh, _) = l.get("V1", "hamq", "reflex:tasks=2", cpus);
        pubs.push(format!(
            "{cpus} CPUs O(1)/2.4 {} haMQ/2.4 {}",
            fx(ratio(po, pv)),
            fx(ratio(ph, pv))
        ));
        sims.push(format!(
            "{cpus} CPUs {} {}",
            fx(ratio(so, sv)),
            fx(ratio(sh, sv))
        ));
        all = match (all, ratio(so, sv), ratio(sh, sv)) {
            (Some(ok), Some(a), Some(b)) => Some(ok && a > 1.4 && b > 1.4),
            _ => None,
        };
    }
    out.push(Finding {
        number: 3,
        title: "affinity vs latency: a 2-task token ping-pong is slower when the pair is split"
            .into(),
        published: pubs.join("; "),
        simulated: sims.join("; "),
        reproduced: all,
    });

    // 4. __wake_up_sync: bw_pipe collapses without sync wake-ups, lat_pipe does not move.
    let (bp_off, bs_off, _) = l.get("V3b", "o1-d1:sync_wakeups=off", "bw_pipe", 4);
    let (bp_on, bs_on, _) = l.get("V3b", "o1-d1:sync_wakeups=on", "bw_pipe", 4);
    let (lp_off, ls_off, _) = l.get("V3a", "o1-d1:sync_wakeups=off", "lat_pipe", 4);
    let (lp_on, ls_on, _) = l.get("V3a", "o1-d1:sync_wakeups=on", "lat_pipe", 4);
    out.push(Finding {
        number: 4,
        title: "__wake_up_sync keeps a pipe pair on one CPU: bandwidth restored, latency unchanged"
            .into(),
        published: format!(
            "bw_pipe MB/s off {} on {} ({}); lat_pipe us off {} on {}",
            f(bp_off),
            f(bp_on),
            fx(ratio(bp_on, bp_off)),
            f(lp_off),
            f(lp_on)
        ),
        simulated: format!(
            "bw_pipe off {} on {} ({}); lat_pipe off {} on {}",
            f(bs_off),
            f(bs_on),
            fx(ratio(bs_on, bs_off)),
            f(ls_off),
            f(ls_on)
        ),
        reproduced: match (ratio(bs_on, bs_off), ratio(ls_on, ls_off)) {
            (Some(b), Some(lr)) => Some(b > 3.0 && (0.85..=1.15).contains(&lr)),
            _ => None,
        },
    });

    // 5. PROC_CHANGE_PENALTY: a higher penalty isolates MQ's queues.
    let w = "reflex:tasks=16,sets=8";
    let (_, _, r6) = l.get("V4", "mq:pcp=6", w, 8);
    let (_, _, r40) = l.get("V4", "mq:pcp=40", w, 8);
    let m6 = r6.and_then(|r| lookup(r, "counters.migrations"));
    let m40 = r40.and_then(|r| lookup(r, "counters.migrations"));
    let c3 = |r: Option<&serde_json::Value>| {
        r.and_then(|r| lookup(r, "counters.policy.remote_still_better_pct"))
    };
    let tables4 = tables
        .iter()
        .zip(results)
        .find(|(t, _)| t.id.starts_with("V4"));
    let pub_c3 = |pcp: &str| {
        tables4.and_then(|(t, _)| {
            t.cells
                .iter()
                .find(|c| {
                    c.policy == format!("mq:pcp={pcp}")
                        && c.workload == w
                        && c.row.ends_with("remote_still_better_pct")
                })
                .and_then(|c| c.value)
        })
    };
    out.push(Finding {
        number: 5,
        title: "PROC_CHANGE_PENALTY: a higher penalty means fewer migrations in MQ".into(),
        published: format!(
            "reflex 8 runnable on 8 CPUs: remote still better after lock {}% (pcp 6) -> {}% (pcp 40)",
            f(pub_c3("6")),
            f(pub_c3("40"))
        ),
        simulated: format!(
            "{}% -> {}%; migrations {} -> {}",
            f(c3(r6)),
            f(c3(r40)),
            f(m6),
            f(m40)
        ),
        reproduced: match (m6, m40, c3(r6), c3(r40)) {
            (Some(a), Some(b), Some(c), Some(d)) => Some(b < a && d <= c),
            _ => None,
        },
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(spin: f64, hold_ns: f64, c2c: f64, buses: &[f64]) -> serde_json::Value {
        serde_json::json!({ "counters": {
            "cpu_time": { "spinning_pct": spin },
            "locks": { "runqueue_lock": { "hold_ns_mean": hold_ns, "contended_pct": 50.0 } },
            "lines": { "c2c_per_schedule": c2c },
            "buses": buses.iter().map(|b| serde_json::json!({ "busy_pct": b })).collect::<Vec<_>>(),
        }})
    }

    #[test]
    fn finding_1_names_the_counters_that_explain_it() {
        let r4 = report(20.0, 4250.0, 6.5, &[11.0]);
        let r8 = report(57.5, 8200.0, 11.25, &[12.0, 14.0]);
        let s = collapse_counters(Some(&r4), Some(&r8));
        assert!(s.contains("spinning 20.00 -> 57.50 %"), "{s}");
        assert!(s.contains("hold 4.25 -> 8.20 us"), "{s}");
        assert!(s.contains("per schedule() 6.50 -> 11.25"), "{s}");
        // The buses' mean: one bus at 4 CPUs, two at 8.
        assert!(s.contains("bus busy 11.00 -> 13.00 %"), "{s}");
        assert!(collapse_counters(None, Some(&r8)).contains("n/a -> 57.50"));
    }
}
