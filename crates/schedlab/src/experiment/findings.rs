//! The five seed findings of `system.md`, each shown with the numbers that show it, from
//! the cells of the calibration tables.
//!
//! A finding is *reproduced* only when two criteria hold:
//!
//! 1. **direction** — the simulation moves the way the published numbers move (2.4 falls
//!    from 4 to 8 CPUs while O(1) does not, …);
//! 2. **magnitude** — the size of the effect (a ratio between cells, or the published
//!    values themselves) is within [`MAGNITUDE_FACTOR`] of the published one.
//!
//! Otherwise the verdict names the criterion that failed ([`Finding::verdict`]).

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
    /// Whether the simulation shows the effect: direction and magnitude both hold
    /// (`None`: cells missing).
    pub reproduced: Option<bool>,
    /// The direction criterion holds (`None`: cells missing).
    pub direction: Option<bool>,
    /// The magnitude criterion holds (`None`: cells missing).
    pub magnitude: Option<bool>,
    /// What the magnitude criterion compares.
    pub magnitude_rule: String,
    /// The numbers behind the finding, as small charts: each a quantity at a few points,
    /// published and simulated (the counters that explain it: simulated only).
    pub evidence: Vec<Evidence>,
}

/// One quantity of a finding at a few points (CPU counts, task counts, settings).
#[derive(Clone, Debug, Serialize)]
pub struct Evidence {
    /// What is measured, with its unit.
    pub label: String,
    /// (point, published, simulated).
    pub points: Vec<(String, Option<f64>, Option<f64>)>,
}

impl Evidence {
    fn new(label: &str, points: Vec<(&str, Option<f64>, Option<f64>)>) -> Evidence {
        Evidence {
            label: label.into(),
            points: points
                .into_iter()
                .map(|(x, p, s)| (x.to_string(), p, s))
                .collect(),
        }
    }
}

/// How far a simulated effect may be from the published one, as a factor either way, for
/// the magnitude criterion. model: the calibration target of the tables' magnitudes is
/// 1.25; an effect (a ratio of two cells) compounds two cells' errors, hence 1.5.
pub const MAGNITUDE_FACTOR: f64 = 1.5;

/// `sim` within [`MAGNITUDE_FACTOR`] of `published` (both positive).
fn within(sim: Option<f64>, published: Option<f64>) -> Option<bool> {
    match (sim, published) {
        (Some(s), Some(p)) if s > 0.0 && p > 0.0 => Some((s / p).max(p / s) <= MAGNITUDE_FACTOR),
        _ => None,
    }
}

/// All of `v` hold (`None` if any is unknown).
fn all(v: &[Option<bool>]) -> Option<bool> {
    v.iter().try_fold(true, |acc, x| x.map(|x| acc && x))
}

impl Finding {
    fn new(
        number: u32,
        title: &str,
        published: String,
        simulated: String,
        direction: Option<bool>,
        magnitude: Option<bool>,
        magnitude_rule: String,
    ) -> Finding {
        Finding {
            number,
            title: title.into(),
            published,
            simulated,
            reproduced: match (direction, magnitude) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            direction,
            magnitude,
            magnitude_rule,
            evidence: Vec::new(),
        }
    }

    fn with(mut self, evidence: Vec<Evidence>) -> Finding {
        self.evidence = evidence;
        self
    }

    /// "reproduced", or "NOT reproduced" with the criterion that failed, or "cells
    /// missing".
    pub fn verdict(&self) -> String {
        match (self.direction, self.magnitude) {
            (Some(true), Some(true)) => "reproduced".into(),
            (Some(true), Some(false)) => format!(
                "NOT reproduced: the direction holds, the magnitude does not ({})",
                self.magnitude_rule
            ),
            (Some(false), Some(true)) => {
                "NOT reproduced: the direction fails (the magnitude holds)".into()
            }
            (Some(false), Some(false)) => format!(
                "NOT reproduced: the direction fails, and the magnitude ({})",
                self.magnitude_rule
            ),
            (Some(false), None) => "NOT reproduced: the direction fails".into(),
            _ => "cells missing".into(),
        }
    }
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
                if policy_matches(&c.policy, policy) && c.workload == workload && c.cpus == cpus {
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

/// The cell's policy is `wanted`, perhaps with more options (`reproduce --policy-set`
/// adds some): same name, and every option `wanted` sets set alike.
fn policy_matches(cell: &str, wanted: &str) -> bool {
    if cell == wanted {
        return true;
    }
    let parse = |s: &str| crate::spec::Spec::parse("policy", s).ok();
    match (parse(cell), parse(wanted)) {
        (Some(c), Some(w)) => c.name == w.name && w.args.iter().all(|a| c.args.contains(a)),
        _ => false,
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
         line transfers per schedule() {}; bus busy {} -> {} %; the loopback path's shared \
         lines per packet {} ({} ns), CPU time waiting for its locks {} %",
        pair("counters.cpu_time.spinning_pct"),
        f(hold_us(r4)),
        f(hold_us(r8)),
        pair("counters.locks.runqueue_lock.contended_pct"),
        pair("counters.lines.c2c_per_schedule"),
        f(bus_busy_pct(r4)),
        f(bus_busy_pct(r8)),
        pair("counters.net.line_transfers_per_packet"),
        pair("counters.net.line_ns_per_packet"),
        pair("counters.net.lock_wait_pct"),
    )
}

/// Finding 2's direction: 2.4's time per round grows by more than half from 2 to 128
/// tasks, and O(1)'s grows by less than 2.4's does. (Until 28 Nov it asked O(1) to grow
/// by less than ×1.5, which the published values themselves, ×1.52, fail.)
fn o_n_direction(a: Option<f64>, b: Option<f64>, c: Option<f64>, d: Option<f64>) -> Option<bool> {
    match (a, b, c, d) {
        (Some(a), Some(b), Some(c), Some(d)) if a > 0.0 && c > 0.0 => {
            Some(b > 1.5 * a && d / c < b / a)
        }
        _ => None,
    }
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
    out.push(
        Finding::new(
            1,
            "runqueue-lock collapse: 2.4 gets slower from 4 to 8 CPUs, per-CPU queues do not",
            format!(
                "chat 20 rooms, msg/s: 2.4 {} (4 CPUs) -> {} (8 CPUs), {}; O(1) {} -> {}",
                f(p4),
                f(p8),
                fx(ratio(p8, p4)),
                f(q4),
                f(q8)
            ),
            format!(
                "2.4 {} -> {}, {}; O(1) {} -> {}. 2.4, 4 -> 8 CPUs: {}",
                f(s4),
                f(s8),
                fx(ratio(s8, s4)),
                f(o4),
                f(o8),
                collapse_counters(r4, r8)
            ),
            match (s4, s8, o4, o8) {
                (Some(a), Some(b), Some(c), Some(d)) => Some(b < a && d > 0.9 * c),
                _ => None,
            },
            within(ratio(s8, s4), ratio(p8, p4)),
            format!(
                "2.4's 8/4-CPU ratio {} within {MAGNITUDE_FACTOR}x of the published {}",
                fx(ratio(s8, s4)),
                fx(ratio(p8, p4))
            ),
        )
        .with(vec![
            Evidence::new(
                "chat 20 rooms, msg/s",
                vec![
                    ("2.4, 4 CPUs", p4, s4),
                    ("2.4, 8 CPUs", p8, s8),
                    ("O(1), 4 CPUs", q4, o4),
                    ("O(1), 8 CPUs", q8, o8),
                ],
            ),
            Evidence::new(
                "2.4: CPU time spinning on runqueue_lock, %",
                vec![
                    (
                        "4 CPUs",
                        None,
                        counter(r4, "counters.cpu_time.spinning_pct"),
                    ),
                    (
                        "8 CPUs",
                        None,
                        counter(r8, "counters.cpu_time.spinning_pct"),
                    ),
                ],
            ),
            Evidence::new(
                "2.4: line transfers per schedule()",
                vec![
                    (
                        "4 CPUs",
                        None,
                        counter(r4, "counters.lines.c2c_per_schedule"),
                    ),
                    (
                        "8 CPUs",
                        None,
                        counter(r8, "counters.lines.c2c_per_schedule"),
                    ),
                ],
            ),
        ]),
    );

    // 2. O(n) selection: 2.4's µs/round grows with runnable tasks, O(1)'s does not.
    let (p2, s2, r2) = l.get("V1", "linux-2.4", "reflex:tasks=2", 8);
    let (p128, s128, r128) = l.get("V1", "linux-2.4", "reflex:tasks=128", 8);
    let (q16, o16, _) = l.get("V1", "o1-d1", "reflex:tasks=16", 8);
    let (q128, o128, _) = l.get("V1", "o1-d1", "reflex:tasks=128", 8);
    out.push(Finding::new(
        2,
        "O(n) selection: 2.4 pays per runnable task, O(1) a constant",
        format!(
            "reflex 8 CPUs, us/round: 2.4 {} (2 tasks) -> {} (128 tasks), {}; O(1) {} (16) -> {} (128)",
            f(p2),
            f(p128),
            fx(ratio(p128, p2)),
            f(q16),
            f(q128)
        ),
        format!(
            "2.4 {} -> {}, {}; O(1) {} -> {}",
            f(s2),
            f(s128),
            fx(ratio(s128, s2)),
            f(o16),
            f(o128)
        ),
        o_n_direction(s2, s128, o16, o128),
        within(ratio(s128, s2), ratio(p128, p2)),
        format!(
            "2.4's 128/2-task ratio {} within {MAGNITUDE_FACTOR}x of the published {}",
            fx(ratio(s128, s2)),
            fx(ratio(p128, p2))
        ),
    )
    .with(vec![
        Evidence::new(
            "reflex on 8 CPUs, us/round",
            vec![
                ("2.4, 2 tasks", p2, s2),
                ("2.4, 128 tasks", p128, s128),
                ("O(1), 16 tasks", q16, o16),
                ("O(1), 128 tasks", q128, o128),
            ],
        ),
        Evidence::new(
            "2.4: tasks goodness() weighed per schedule()",
            vec![
                ("2 tasks", None, counter(r2, "counters.policy.tasks_examined_mean")),
                ("128 tasks", None, counter(r128, "counters.policy.tasks_examined_mean")),
            ],
        ),
    ]));

    // 3. Affinity vs latency: 2-task reflex ~2x slower on O(1) and haMQ than on 2.4.
    let mut pubs = Vec::new();
    let mut sims = Vec::new();
    let mut dir = Vec::new();
    let mut mag = Vec::new();
    let mut points = Vec::new();
    let mut idle = Vec::new();
    for cpus in [2, 4, 8] {
        let (pv, sv, rv) = l.get("V1", "linux-2.4", "reflex:tasks=2", cpus);
        let (po, so, ro) = l.get("V1", "o1-d1", "reflex:tasks=2", cpus);
        let (ph, sh, rh) = l.get("V1", "hamq", "reflex:tasks=2", cpus);
        for (name, r) in [("2.4", rv), ("O(1)", ro), ("haMQ", rh)] {
            idle.push((
                format!("{name}, {cpus} CPUs"),
                None,
                counter(r, "counters.cpu_time.idle_pct"),
            ));
        }
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
        dir.push(match (ratio(so, sv), ratio(sh, sv)) {
            (Some(a), Some(b)) => Some(a > 1.4 && b > 1.4),
            _ => None,
        });
        mag.push(within(ratio(so, sv), ratio(po, pv)));
        mag.push(within(ratio(sh, sv), ratio(ph, pv)));
        points.push((
            format!("O(1)/2.4, {cpus} CPUs"),
            ratio(po, pv),
            ratio(so, sv),
        ));
        points.push((
            format!("haMQ/2.4, {cpus} CPUs"),
            ratio(ph, pv),
            ratio(sh, sv),
        ));
    }
    out.push(
        Finding::new(
            3,
            "affinity vs latency: a 2-task token ping-pong is slower when the pair is split",
            pubs.join("; "),
            sims.join("; "),
            all(&dir),
            all(&mag),
            format!(
                "every O(1)/2.4 and haMQ/2.4 ratio within {MAGNITUDE_FACTOR}x of the published"
            ),
        )
        .with(vec![
            Evidence {
                label: "2-task reflex, time per round against 2.4's (x)".into(),
                points,
            },
            Evidence {
                label:
                    "2-task reflex: CPU time idle, % (a split pair: each CPU waits for the other)"
                        .into(),
                points: idle,
            },
        ]),
    );

    // 4. __wake_up_sync: bw_pipe collapses without sync wake-ups, lat_pipe does not move.
    let (bp_off, bs_off, rb_off) = l.get("V3b", "o1-d1:sync_wakeups=off", "bw_pipe", 4);
    let (bp_on, bs_on, rb_on) = l.get("V3b", "o1-d1:sync_wakeups=on", "bw_pipe", 4);
    let (lp_off, ls_off, _) = l.get("V3a", "o1-d1:sync_wakeups=off", "lat_pipe", 4);
    let (lp_on, ls_on, _) = l.get("V3a", "o1-d1:sync_wakeups=on", "lat_pipe", 4);
    out.push(
        Finding::new(
            4,
            "__wake_up_sync keeps a pipe pair on one CPU: bandwidth restored, latency unchanged",
            format!(
                "bw_pipe MB/s off {} on {} ({}); lat_pipe us off {} on {}",
                f(bp_off),
                f(bp_on),
                fx(ratio(bp_on, bp_off)),
                f(lp_off),
                f(lp_on)
            ),
            format!(
                "bw_pipe off {} on {} ({}); lat_pipe off {} on {}",
                f(bs_off),
                f(bs_on),
                fx(ratio(bs_on, bs_off)),
                f(ls_off),
                f(ls_on)
            ),
            match (ratio(bs_on, bs_off), ratio(ls_on, ls_off)) {
                (Some(b), Some(lr)) => Some(b > 3.0 && (0.85..=1.15).contains(&lr)),
                _ => None,
            },
            within(ratio(bs_on, bs_off), ratio(bp_on, bp_off)),
            format!(
                "the bw_pipe on/off ratio {} within {MAGNITUDE_FACTOR}x of the published {}",
                fx(ratio(bs_on, bs_off)),
                fx(ratio(bp_on, bp_off))
            ),
        )
        .with(vec![
            Evidence::new(
                "bw_pipe on 4 CPUs, MB/s",
                vec![("sync wake-ups off", bp_off, bs_off), ("on", bp_on, bs_on)],
            ),
            Evidence::new(
                "lat_pipe on 4 CPUs, us",
                vec![("sync wake-ups off", lp_off, ls_off), ("on", lp_on, ls_on)],
            ),
            Evidence::new(
                "bw_pipe: pipe state moved between CPUs (line transfers)",
                vec![
                    (
                        "sync wake-ups off",
                        None,
                        counter(rb_off, "counters.stream_state_transfers"),
                    ),
                    (
                        "on",
                        None,
                        counter(rb_on, "counters.stream_state_transfers"),
                    ),
                ],
            ),
        ]),
    );

    // 5. PROC_CHANGE_PENALTY: a higher penalty isolates MQ's queues. The 2001 run's
    // reflex mix is not published: reading A (V4) passes the token only, reading B (X3)
    // lets each thread yield (Path I) or pass it with equal weight. Both are shown; the
    // verdict is reading B's, the one that gives `schedule()` remote threads to weigh.
    let reading = |table: &str, w: &str| {
        let (_, _, r6) = l.get(table, "mq:pcp=6", w, 8);
        let (_, _, r40) = l.get(table, "mq:pcp=40", w, 8);
        let m = |r: Option<&serde_json::Value>| counter(r, "counters.migrations");
        let c3 =
            |r: Option<&serde_json::Value>| counter(r, "counters.policy.remote_still_better_pct");
        (c3(r6), c3(r40), m(r6), m(r40))
    };
    let wa = "reflex:tasks=16,sets=8";
    let wb = "reflex:tasks=16,sets=8,yield_pct=50";
    let (a6, a40, am6, am40) = reading("V4", wa);
    let (b6, b40, bm6, bm40) = reading("X3", wb);
    let tables4 = tables
        .iter()
        .zip(results)
        .find(|(t, _)| t.id.starts_with("V4"));
    let pub_c3 = |pcp: &str| {
        tables4.and_then(|(t, _)| {
            t.cells
                .iter()
                .find(|c| {
                    policy_matches(&c.policy, &format!("mq:pcp={pcp}"))
                        && c.workload == wa
                        && c.row.ends_with("remote_still_better_pct")
                })
                .and_then(|c| c.value)
        })
    };
    let direction = |c6: Option<f64>, c40: Option<f64>, m6: Option<f64>, m40: Option<f64>| match (
        m6, m40, c6, c40,
    ) {
        (Some(a), Some(b), Some(c), Some(d)) => Some(b < a && d <= c),
        _ => None,
    };
    let magnitude = |c6, c40| all(&[within(c6, pub_c3("6")), within(c40, pub_c3("40"))]);
    let a_verdict = match (direction(a6, a40, am6, am40), magnitude(a6, a40)) {
        (Some(true), Some(true)) => "holds",
        (None, _) | (_, None) => "cells missing",
        _ => "does not hold",
    };
    out.push(Finding::new(
        5,
        "PROC_CHANGE_PENALTY: a higher penalty means fewer migrations in MQ",
        format!(
            "reflex 8 runnable on 8 CPUs: remote still better after lock {}% (pcp 6) -> {}% (pcp 40)",
            f(pub_c3("6")),
            f(pub_c3("40"))
        ),
        format!(
            "reading B, threads yield (Path I) or pass the token with equal weight (X3): \
             {}% -> {}%, migrations {} -> {}; reading A, token passing only (V4): {}% -> {}%, \
             migrations {} -> {} (the finding {} there: a thread passing its token wakes the \
             next one and sleeps, so schedule() rarely finds a better thread on another queue)",
            f(b6),
            f(b40),
            f(bm6),
            f(bm40),
            f(a6),
            f(a40),
            f(am6),
            f(am40),
            a_verdict
        ),
        direction(b6, b40, bm6, bm40),
        magnitude(b6, b40),
        format!(
            "reading B's \"remote still better\" {}% and {}% within {MAGNITUDE_FACTOR}x of the published {}% and {}%",
            f(b6),
            f(b40),
            f(pub_c3("6")),
            f(pub_c3("40"))
        ),
    )
    .with(vec![
        Evidence::new(
            "MQ, reflex 8 runnable on 8 CPUs: remote still better after the lock, % (reading B)",
            vec![("pcp 6", pub_c3("6"), b6), ("pcp 40", pub_c3("40"), b40)],
        ),
        Evidence::new(
            "MQ: migrations (reading B)",
            vec![("pcp 6", None, bm6), ("pcp 40", None, bm40)],
        ),
    ]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Cell;

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

    /// Table V2's four finding-1 cells, published and simulated msg/s (2.4 at 4 and 8
    /// CPUs, O(1) at 4 and 8).
    fn v2(published: [f64; 4], simulated: [f64; 4]) -> (Vec<Table>, Vec<Vec<CellResult>>) {
        let w = "chat:rooms=20,messages=200";
        let cells: Vec<Cell> = [
            ("linux-2.4", 4),
            ("linux-2.4", 8),
            ("o1-d1", 4),
            ("o1-d1", 8),
        ]
        .iter()
        .zip(published)
        .map(|(&(p, cpus), v)| Cell {
            cpus,
            policy: p.into(),
            workload: w.into(),
            value: Some(v),
            row: format!("{cpus}"),
            metric: None,
            machine: None,
            search: None,
        })
        .collect();
        let results = simulated
            .iter()
            .enumerate()
            .map(|(index, &v)| CellResult {
                note: None,
                table: "V2-chat-2002".into(),
                index,
                simulated: Ok(v),
                repeats: vec![v],
                simulated_ns: 0,
                events: 0,
                wall_ms: 0,
                report: None,
            })
            .collect();
        let t = Table {
            id: "V2-chat-2002".into(),
            title: String::new(),
            source: String::new(),
            held_out: false,
            unit: "msg/s".into(),
            better: "higher".into(),
            machine: "piii700-1m".into(),
            note: String::new(),
            on_request: false,
            cells,
        };
        (vec![t], vec![results])
    }

    /// A direction criterion the published numbers fail would judge the era wrong: fed
    /// the published values as the simulation's, every finding whose cells are all
    /// present shows its direction.
    #[test]
    fn the_published_values_pass_their_own_direction_tests() {
        let tables = crate::experiment::all_tables();
        let results: Vec<Vec<CellResult>> = tables
            .iter()
            .map(|t| {
                t.cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| CellResult {
                        table: t.id.clone(),
                        index: i,
                        simulated: c.value.ok_or_else(|| "no published value".to_string()),
                        repeats: vec![],
                        simulated_ns: 0,
                        events: 0,
                        wall_ms: 0,
                        report: None,
                        note: None,
                    })
                    .collect()
            })
            .collect();
        let fs = findings(&tables, &results);
        // Findings 1-4 read only the tables' values; finding 5 needs run counters.
        for f in &fs[..4] {
            assert_eq!(f.direction, Some(true), "finding {}: {}", f.number, f.title);
            assert_eq!(f.magnitude, Some(true), "finding {}", f.number);
        }
        assert_eq!(
            o_n_direction(Some(6.34), Some(25.0), Some(1.50), Some(2.28)),
            Some(true)
        );
        assert_eq!(
            o_n_direction(Some(6.34), Some(25.0), Some(1.50), Some(6.0)),
            Some(false)
        );
    }

    #[test]
    fn a_cell_with_more_options_still_answers_for_its_policy() {
        assert!(policy_matches("o1-d1:estimator=jsleep", "o1-d1"));
        assert!(policy_matches("mq:pcp=6,hz=100", "mq:pcp=6"));
        assert!(!policy_matches("mq:pcp=40", "mq:pcp=6"));
        assert!(!policy_matches("o1-g1", "o1-d1"));
    }

    /// See: issue 17 item 9. Direction alone is not enough: the verdict names the
    /// magnitude criterion that failed.
    #[test]
    fn a_finding_needs_direction_and_magnitude() {
        let published = [177854.0, 68697.0, 200000.0, 400000.0]; // 2.4 falls to x0.39
                                                                 // The direction holds (2.4 falls, O(1) does not) but only to x0.95.
        let (t, r) = v2(published, [100000.0, 95000.0, 200000.0, 390000.0]);
        let f1 = &findings(&t, &r)[0];
        assert_eq!(f1.number, 1);
        assert_eq!((f1.direction, f1.magnitude), (Some(true), Some(false)));
        assert_eq!(f1.reproduced, Some(false));
        let v = f1.verdict();
        assert!(
            v.starts_with("NOT reproduced: the direction holds, the magnitude does not")
                && v.contains("x0.95 within 1.5x of the published x0.39"),
            "{v}"
        );
        // Both hold: reproduced.
        let (t, r) = v2(published, [100000.0, 45000.0, 200000.0, 390000.0]);
        let f1 = &findings(&t, &r)[0];
        assert_eq!(f1.reproduced, Some(true));
        assert_eq!(f1.verdict(), "reproduced");
        // The wrong way: the direction fails, whatever the size.
        let (t, r) = v2(published, [100000.0, 250000.0, 200000.0, 390000.0]);
        let f1 = &findings(&t, &r)[0];
        assert_eq!(f1.direction, Some(false));
        assert!(
            f1.verdict().contains("the direction fails"),
            "{}",
            f1.verdict()
        );
        // Other findings' cells are missing.
        assert_eq!(findings(&t, &r)[1].verdict(), "cells missing");
    }
}
