//! Issue 43's targets judged over several `schedlab validate --format json` reports, as
//! `schedlab validate --targets A.json B.json C.json` prints them: rows (at least
//! [`MIN_ROWS`]), predictions within 25 % (at least [`MIN_WITHIN`] of them), none outside
//! 2×, every hackbench prediction within 25 % — each per report — and, across the reports,
//! every row's simulated figure within [`STABLE`] of the others (the largest over the
//! smallest).
//!
//! Reading only: nothing is measured or simulated. Invariants: the reports must have the
//! same rows in the same order (the same build's `validate`, `--only` alike); a row is a
//! prediction unless its report says it is a micro-benchmark, whose figure the costs
//! came from.

use serde::{Deserialize, Serialize};

use crate::validate::{ratio_on_target, ratio_outside_2x, TARGET};

/// At least this many rows.
pub const MIN_ROWS: usize = 30;
/// At least this fraction of the predictions within [`TARGET`].
pub const MIN_WITHIN: f64 = 0.8;
/// Across the reports, every row's simulated figures within this factor of each other.
pub const STABLE: f64 = 1.10;

/// The fields of a `validate` JSON row the targets read.
#[derive(Deserialize)]
struct Row {
    workload: String,
    pin: Option<String>,
    simulated: f64,
    ratio: f64,
    kind: String,
}

/// The fields of a `validate` JSON report the targets read.
#[derive(Deserialize)]
struct Report {
    rows: Vec<Row>,
    measured: String,
}

impl Row {
    fn name(&self) -> String {
        match &self.pin {
            Some(p) => format!("{} @cpu{p}", self.workload),
            None => self.workload.clone(),
        }
    }
    fn is_prediction(&self) -> bool {
        self.kind == "prediction"
    }
    fn within(&self) -> bool {
        ratio_on_target(self.ratio)
    }
    fn outside_2x(&self) -> bool {
        ratio_outside_2x(self.ratio)
    }
}

/// One report's targets.
#[derive(Serialize, Debug, PartialEq)]
pub struct PerReport {
    /// Its file, as given.
    pub file: String,
    /// When and where its host file was measured.
    pub measured: String,
    /// Rows.
    pub rows: usize,
    /// Prediction rows.
    pub predictions: usize,
    /// Predictions within [`TARGET`].
    pub within: usize,
    /// The predictions off by more than [`TARGET`]: `(row, ratio)`.
    pub misses: Vec<(String, f64)>,
    /// The predictions outside 2×.
    pub outside_2x: Vec<(String, f64)>,
    /// Hackbench predictions within [`TARGET`], of how many.
    pub hackbench_within: (usize, usize),
}

/// A row whose simulated figure moved by more than [`STABLE`] across the reports.
#[derive(Serialize, Debug, PartialEq)]
pub struct Unstable {
    /// The row.
    pub row: String,
    /// Its simulated figure in each report, in order.
    pub simulated: Vec<f64>,
    /// The largest over the smallest.
    pub factor: f64,
}

/// The targets over all the reports.
#[derive(Serialize, Debug, PartialEq)]
pub struct Targets {
    /// Each report's.
    pub reports: Vec<PerReport>,
    /// Rows whose simulated figures moved by more than [`STABLE`] (none with one report).
    pub unstable: Vec<Unstable>,
    /// Rows stable across the reports, of how many.
    pub stable: (usize, usize),
    /// Every target held in every report.
    pub all_hold: bool,
}

fn per_report(file: &str, r: &Report) -> PerReport {
    let preds: Vec<&Row> = r.rows.iter().filter(|x| x.is_prediction()).collect();
    let hb: Vec<&&Row> = preds
        .iter()
        .filter(|x| x.workload.starts_with("hackbench:") || x.workload == "hackbench")
        .collect();
    PerReport {
        file: file.to_string(),
        measured: r.measured.clone(),
        rows: r.rows.len(),
        predictions: preds.len(),
        within: preds.iter().filter(|x| x.within()).count(),
        misses: preds
            .iter()
            .filter(|x| !x.within())
            .map(|x| (x.name(), x.ratio))
            .collect(),
        outside_2x: preds
            .iter()
            .filter(|x| x.outside_2x())
            .map(|x| (x.name(), x.ratio))
            .collect(),
        hackbench_within: (hb.iter().filter(|x| x.within()).count(), hb.len()),
    }
}

impl PerReport {
    fn holds(&self) -> bool {
        self.rows >= MIN_ROWS
            && self.within as f64 >= MIN_WITHIN * self.predictions as f64
            && self.outside_2x.is_empty()
            && self.hackbench_within.0 == self.hackbench_within.1
    }
}

/// Judge `reports` (`(file name, JSON text)`), in order. One clear line when a text is not
/// a `validate` report or the reports' rows differ.
pub fn judge(reports: &[(String, String)]) -> Result<Targets, String> {
    if reports.is_empty() {
        return Err("--targets needs one or more validate --format json reports".into());
    }
    let parsed: Vec<Report> = reports
        .iter()
        .map(|(f, text)| {
            serde_json::from_str::<Report>(text)
                .map_err(|e| format!("{f}: not a `schedlab validate --format json` report ({e})"))
        })
        .collect::<Result<_, _>>()?;
    let names = |r: &Report| r.rows.iter().map(Row::name).collect::<Vec<_>>();
    let first = names(&parsed[0]);
    for ((f, _), r) in reports.iter().zip(&parsed).skip(1) {
        if names(r) != first {
            return Err(format!(
                "{f}: its rows differ from {}'s (compare reports of one build's validate, with the same --only)",
                reports[0].0
            ));
        }
    }
    let per: Vec<PerReport> = reports
        .iter()
        .zip(&parsed)
        .map(|((f, _), r)| per_report(f, r))
        .collect();
    let mut unstable = Vec::new();
    for (i, name) in first.iter().enumerate() {
        let sims: Vec<f64> = parsed.iter().map(|r| r.rows[i].simulated).collect();
        let lo = sims.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = sims.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let factor = if lo > 0.0 { hi / lo } else { f64::INFINITY };
        if factor > STABLE {
            unstable.push(Unstable {
                row: name.clone(),
                simulated: sims,
                factor,
            });
        }
    }
    let stable = (first.len() - unstable.len(), first.len());
    let all_hold = per.iter().all(PerReport::holds) && unstable.is_empty();
    Ok(Targets {
        reports: per,
        unstable,
        stable,
        all_hold,
    })
}

impl Targets {
    /// The targets as text, one line a target per report, the misses named.
    pub fn to_text(&self) -> String {
        let mark = |ok: bool| if ok { "holds" } else { "MISSED" };
        let mut o = String::new();
        for r in &self.reports {
            o += &format!("{} (measured {})\n", r.file, r.measured);
            o += &format!(
                "  rows                       {:>3} (at least {MIN_ROWS})  {}\n",
                r.rows,
                mark(r.rows >= MIN_ROWS)
            );
            o += &format!(
                "  predictions within {:.0} %    {:>3} of {} ({:.0} %, at least {:.0} %)  {}\n",
                TARGET * 100.0,
                r.within,
                r.predictions,
                100.0 * r.within as f64 / r.predictions.max(1) as f64,
                MIN_WITHIN * 100.0,
                mark(r.within as f64 >= MIN_WITHIN * r.predictions as f64)
            );
            o += &format!(
                "  outside 2x                 {:>3} (none)  {}\n",
                r.outside_2x.len(),
                mark(r.outside_2x.is_empty())
            );
            o += &format!(
                "  hackbench within {:.0} %      {:>3} of {}  {}\n",
                TARGET * 100.0,
                r.hackbench_within.0,
                r.hackbench_within.1,
                mark(r.hackbench_within.0 == r.hackbench_within.1)
            );
            for (row, ratio) in &r.misses {
                o += &format!("    miss {ratio:>5.2}  {row}\n");
            }
        }
        o += &format!(
            "across {} report{}: {} of {} rows' simulated figures within {:.0} % of each other  {}\n",
            self.reports.len(),
            if self.reports.len() == 1 { "" } else { "s" },
            self.stable.0,
            self.stable.1,
            (STABLE - 1.0) * 100.0,
            mark(self.unstable.is_empty())
        );
        for u in &self.unstable {
            let v: Vec<String> = u.simulated.iter().map(|x| format!("{x:.4}")).collect();
            o += &format!("    x{:.2}  {}  ({})\n", u.factor, u.row, v.join(", "));
        }
        o += if self.all_hold {
            "every target holds\n"
        } else {
            "a target is missed\n"
        };
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(measured: &str, rows: &[(&str, &str, f64, f64)]) -> String {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|(w, kind, native, sim)| {
                serde_json::json!({
                    "workload": w, "pin": null, "native": native, "simulated": sim,
                    "ratio": sim / native, "kind": kind, "metric": "m", "unit": "u",
                })
            })
            .collect();
        serde_json::json!({ "rows": rows, "measured": measured, "policy": "eevdf" }).to_string()
    }

    fn thirty(hb_ratio: f64, sim_scale: f64) -> Vec<(String, &'static str, f64, f64)> {
        let mut v: Vec<(String, &'static str, f64, f64)> = (0..29)
            .map(|i| (format!("lat_ctx:procs={i}"), "prediction", 1.0, sim_scale))
            .collect();
        v.push(("lat_pipe:pin=same".into(), "micro-benchmark", 1.0, 3.0));
        v.push((
            "hackbench:groups=2".into(),
            "prediction",
            1.0,
            hb_ratio * sim_scale,
        ));
        v
    }

    fn text(rows: &[(String, &'static str, f64, f64)]) -> String {
        let r: Vec<(&str, &str, f64, f64)> = rows
            .iter()
            .map(|(w, k, n, s)| (w.as_str(), *k, *n, *s))
            .collect();
        report("today", &r)
    }

    #[test]
    fn three_good_reports_hold_every_target() {
        let t = judge(&[
            ("a".into(), text(&thirty(1.1, 1.0))),
            ("b".into(), text(&thirty(1.1, 1.05))),
            ("c".into(), text(&thirty(1.1, 0.98))),
        ])
        .unwrap();
        assert!(t.all_hold, "{}", t.to_text());
        assert_eq!(t.stable, (31, 31));
        assert_eq!(
            t.reports[0].predictions, 30,
            "the micro-benchmark is no prediction"
        );
        assert_eq!(t.reports[0].hackbench_within, (1, 1));
        assert!(t.to_text().ends_with("every target holds\n"));
    }

    #[test]
    fn a_hackbench_miss_a_2x_miss_and_a_moved_figure_are_each_named() {
        // Hackbench at 0.7: a miss within 2x; every figure in b 15 % above a's.
        let t = judge(&[
            ("a".into(), text(&thirty(0.7, 1.0))),
            ("b".into(), text(&thirty(0.7, 1.15))),
        ])
        .unwrap();
        assert!(!t.all_hold);
        assert_eq!(t.reports[0].hackbench_within, (0, 1));
        assert_eq!(t.reports[0].misses.len(), 1);
        assert!(t.reports[0].outside_2x.is_empty());
        // The micro-benchmark row did not move; the 30 predictions did.
        assert_eq!(t.stable, (1, 31));
        let mut rows = thirty(1.0, 1.0);
        rows[0].3 = 2.5;
        let t = judge(&[("a".into(), text(&rows))]).unwrap();
        assert_eq!(t.reports[0].outside_2x.len(), 1, "{}", t.to_text());
        assert!(t.to_text().contains("MISSED"));
        assert!(t.unstable.is_empty(), "one report has nothing to move");
    }

    #[test]
    fn too_few_rows_or_predictions_within_miss() {
        let few: Vec<_> = thirty(1.0, 1.0).into_iter().take(10).collect();
        let t = judge(&[("a".into(), text(&few))]).unwrap();
        assert!(!t.all_hold);
        let mut rows = thirty(1.0, 1.0);
        for r in rows.iter_mut().take(7) {
            r.3 = 1.3;
        }
        // 23 of 30 within: 77 %.
        let t = judge(&[("a".into(), text(&rows))]).unwrap();
        assert_eq!(t.reports[0].within, 23);
        assert!(!t.all_hold);
    }

    #[test]
    fn reports_that_do_not_match_are_refused_in_one_line() {
        let e = judge(&[("a".into(), "{\"rows\": 3}".into())]).unwrap_err();
        assert!(
            e.starts_with("a: not a `schedlab validate --format json` report"),
            "{e}"
        );
        let short: Vec<_> = thirty(1.0, 1.0).into_iter().take(30).collect();
        let e = judge(&[
            ("a".into(), text(&thirty(1.0, 1.0))),
            ("b".into(), text(&short)),
        ])
        .unwrap_err();
        assert!(e.starts_with("b: its rows differ from a's"), "{e}");
        assert!(!e.contains('\n'));
        assert!(judge(&[]).is_err());
    }
}
