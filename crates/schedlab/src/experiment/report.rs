//! Running a set of tables and presenting them: terminal text, `report.md`,
//! `results.json`, `index.html`, one SVG per table.

use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use super::findings::{findings, Finding};
use super::score::{score, TableScore};
use super::{plot, run_key, run_seeded, CellResult, Table};

/// Target of the calibration tables (issue: order ≥ 0.9, magnitude ≤ 1.25; V4 ≤ 1.5×).
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// Human description.
    pub what: String,
    /// Met?
    pub met: bool,
}

/// A finished reproduction.
pub struct Reproduction {
    /// The tables run.
    pub tables: Vec<Table>,
    /// Per table, per cell.
    pub results: Vec<Vec<CellResult>>,
    /// Per table.
    pub scores: Vec<TableScore>,
    /// The seed findings.
    pub findings: Vec<Finding>,
}

/// Simulate every distinct run of `tables` in parallel, with seed 1, then again with seeds
/// 2 and 3 where the seed matters (see [`super`]: "Repeats where the seed matters").
/// `progress(done, total, table)` is called as each run finishes, with the index of its
/// table, or `None` for a repeat (the total grows when repeats are added).
pub fn run_tables(
    tables: Vec<Table>,
    progress: &(dyn Fn(usize, usize, Option<usize>) + Sync),
) -> Reproduction {
    let groups = distinct_runs(&tables);
    let total = std::sync::atomic::AtomicUsize::new(groups.iter().map(Vec::len).sum());
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tick = |t: Option<usize>| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, total.load(std::sync::atomic::Ordering::Relaxed), t);
    };
    // determinism: each run is an independent seeded simulation, its repeats run after it
    // in the same job (seed 2, then seed 3 if the first two disagree for some cell), and
    // results are placed by index. A cell takes a repeat only if it wants it itself, so a
    // shared run gives every cell what a run of its own would have. One pool for all runs:
    // no core waits at a barrier between seeds.
    let per_group: Vec<Vec<CellResult>> = groups
        .par_iter()
        .map(|cells| {
            let (t0, c0) = cells[0];
            let named = (&tables[t0], &tables[t0].cells[c0]);
            let first = run_seeded(named.0, named.1, 1);
            let mut rs: Vec<CellResult> = cells
                .iter()
                .map(|&(t, c)| {
                    let r = first.cell(&tables[t], c);
                    tick(Some(t));
                    r
                })
                .collect();
            for (seed, wants) in [
                (2, CellResult::wants_second_seed as fn(&CellResult) -> bool),
                (3, CellResult::wants_third_seed),
            ] {
                if rs.iter().any(wants) {
                    total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let again = run_seeded(named.0, named.1, seed);
                    tick(None);
                    for (r, &(t, c)) in rs.iter_mut().zip(cells) {
                        if wants(r) {
                            r.add_repeat(&again.cell(&tables[t], c));
                        }
                    }
                }
            }
            rs
        })
        .collect();
    let mut placed: Vec<Vec<Option<CellResult>>> =
        tables.iter().map(|t| vec![None; t.cells.len()]).collect();
    for (cells, rs) in groups.iter().zip(per_group) {
        for (&(t, c), r) in cells.iter().zip(rs) {
            placed[t][c] = Some(r);
        }
    }
    let results: Vec<Vec<CellResult>> = placed
        .into_iter()
        .map(|rs| rs.into_iter().map(|r| r.expect("every cell ran")).collect())
        .collect();
    let scores = tables
        .iter()
        .zip(&results)
        .map(|(t, rs)| {
            score(
                t,
                &rs.iter()
                    .map(|r| r.simulated.as_ref().ok().copied())
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let findings = findings(&tables, &results);
    Reproduction {
        tables,
        results,
        scores,
        findings,
    }
}

/// The distinct runs `tables` name, in order of first mention, each with the (table, cell)
/// indices that name it. A table that reads several counters of one run (V4, X3) names
/// that run in several cells: it is simulated once per seed, and every cell naming it
/// reads its own metric from it.
fn distinct_runs(tables: &[Table]) -> Vec<Vec<(usize, usize)>> {
    let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut by_key = std::collections::BTreeMap::new();
    for (t, tb) in tables.iter().enumerate() {
        for (c, cell) in tb.cells.iter().enumerate() {
            let g = *by_key.entry(run_key(tb, cell)).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push((t, c));
        }
    }
    groups
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "n/a".into(),
        Some(x) if x.abs() >= 10000.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "n/a".into())
}

impl Reproduction {
    fn policies(t: &Table) -> Vec<&str> {
        let mut p: Vec<&str> = Vec::new();
        for c in &t.cells {
            if !p.contains(&c.policy.as_str()) {
                p.push(&c.policy);
            }
        }
        p
    }

    fn rows(t: &Table) -> Vec<&str> {
        let mut r: Vec<&str> = Vec::new();
        for c in &t.cells {
            if !r.contains(&c.row.as_str()) {
                r.push(&c.row);
            }
        }
        r
    }

    /// Targets of a calibration table, if it has any.
    pub fn targets(s: &TableScore) -> Vec<Target> {
        let id = s.id.as_str();
        if id.starts_with("V4") {
            return vec![Target {
                what: format!(
                    "every counter within 1.5x (worst {}x)",
                    opt(s.max_factor, 2)
                ),
                met: s.max_factor.is_some_and(|m| m <= 1.5),
            }];
        }
        if ["V1", "V2", "V3a", "V3b", "V5"]
            .iter()
            .any(|p| id.starts_with(&format!("{p}-")))
        {
            let mut t = vec![Target {
                what: format!("magnitude <= 1.25 ({})", opt(s.magnitude, 2)),
                met: s.magnitude.is_some_and(|m| m <= 1.25),
            }];
            if s.order.is_some() {
                t.insert(
                    0,
                    Target {
                        what: format!("order >= 0.9 ({})", opt(s.order, 2)),
                        met: s.order.is_some_and(|o| o >= 0.9),
                    },
                );
            }
            return t;
        }
        Vec::new()
    }

    fn table_text(&self, i: usize, md: bool) -> String {
        let t = &self.tables[i];
        let rs = &self.results[i];
        let s = &self.scores[i];
        let pols = Self::policies(t);
        let w = Self::rows(t)
            .iter()
            .map(|r| r.len())
            .max()
            .unwrap_or(0)
            .max(24);
        let mut o = String::new();
        if md {
            let _ = writeln!(o, "## {} — {}\n", t.id, t.title);
            let _ = writeln!(
                o,
                "Machine `{}`; {} ({} is better). Source: {}.\n",
                t.machine, t.unit, t.better, t.source
            );
            if !t.note.is_empty() {
                let _ = writeln!(o, "Note: {}\n", t.note);
            }
            let mut head = "| row |".to_string();
            let mut sep = "|---|".to_string();
            for p in &pols {
                let _ = write!(head, " {p} pub | sim | x |");
                sep += "---:|---:|---:|";
            }
            let _ = writeln!(o, "{head}\n{sep}");
        } else {
            let _ = writeln!(
                o,
                "\n{} — {}  [{} on {}, {} is better]",
                t.id, t.title, t.unit, t.machine, t.better
            );
            let mut head = format!("  {:<w$}", "row");
            for p in &pols {
                let short: String = p.chars().take(24).collect();
                let _ = write!(head, " | {short:^30}");
            }
            let _ = writeln!(o, "{head}");
            let mut sub = format!("  {:<w$}", "");
            for _ in &pols {
                let _ = write!(sub, " | {:>11} {:>11} {:>6}", "published", "simulated", "x");
            }
            let _ = writeln!(o, "{sub}");
        }
        for row in Self::rows(t) {
            let mut line = if md {
                format!("| {row} |")
            } else {
                format!("  {row:<w$}")
            };
            for p in &pols {
                let idx = t.cells.iter().position(|c| c.row == row && c.policy == *p);
                let (pv, sv) = match idx {
                    Some(k) => (t.cells[k].value, rs[k].simulated.as_ref().ok().copied()),
                    None => (None, None),
                };
                let x = match (pv, sv) {
                    (Some(a), Some(b)) if a != 0.0 => format!("{:.2}", b / a),
                    _ => "".into(),
                };
                let blank = idx.is_none();
                if md {
                    if blank {
                        line += "  |  |  |";
                    } else {
                        let _ = write!(line, " {} | {} | {} |", num(pv), num(sv), x);
                    }
                } else if blank {
                    let _ = write!(line, " | {:>11} {:>11} {:>6}", "", "", "");
                } else {
                    let _ = write!(line, " | {:>11} {:>11} {:>6}", num(pv), num(sv), x);
                }
            }
            let _ = writeln!(o, "{line}");
        }
        let rho: Vec<String> = s.rho.iter().map(|(p, r)| format!("{p} {r:.2}")).collect();
        let scores = format!(
            "order {} ({} pairs), ratio {}, magnitude {} (worst {}), rho: {}",
            opt(s.order, 2),
            s.order_pairs,
            opt(s.ratio, 2),
            opt(s.magnitude, 2),
            opt(s.max_factor, 2),
            if rho.is_empty() {
                "n/a".into()
            } else {
                rho.join(", ")
            }
        );
        let targets: Vec<String> = Self::targets(s)
            .iter()
            .map(|t| format!("{} {}", if t.met { "met:" } else { "MISSED:" }, t.what))
            .collect();
        let errors: Vec<String> = rs
            .iter()
            .filter_map(|r| {
                r.simulated
                    .as_ref()
                    .err()
                    .map(|e| format!("cell {}: {e}", r.index))
            })
            .collect();
        let notes: Vec<String> = rs
            .iter()
            .filter_map(|r| {
                let c = &t.cells[r.index];
                r.note
                    .as_ref()
                    .map(|n| format!("{} {} ({} CPUs): {n}", c.row, c.policy, c.cpus))
            })
            .collect();
        if md && !notes.is_empty() {
            let _ = writeln!(o, "\nWhat stopped the next step:\n");
            for n in &notes {
                let _ = writeln!(o, "- {n}");
            }
        } else {
            for n in &notes {
                let _ = writeln!(o, "  next step: {n}");
            }
        }
        if md {
            let _ = writeln!(o, "\n**Scores:** {scores}.");
            if !targets.is_empty() {
                let _ = writeln!(o, "\n**Targets:** {}.", targets.join("; "));
            }
            let _ = writeln!(o, "\n![{}]({}.svg)\n", t.id, t.id);
            if !errors.is_empty() {
                let _ = writeln!(o, "Cells that did not run: {}\n", errors.join("; "));
            }
        } else {
            let _ = writeln!(o, "  scores: {scores}");
            if !targets.is_empty() {
                let _ = writeln!(o, "  targets: {}", targets.join("; "));
            }
            if !errors.is_empty() {
                let _ = writeln!(
                    o,
                    "  {} cells did not run; first: {}",
                    errors.len(),
                    errors[0]
                );
            }
        }
        o
    }

    fn findings_text(&self, md: bool) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{}",
            if md {
                "## The seed findings\n"
            } else {
                "\nThe seed findings"
            }
        );
        for f in &self.findings {
            let verdict = f.verdict();
            if md {
                let _ = writeln!(
                    o,
                    "{}. **{}** — {verdict}.\n   - published: {}\n   - simulated: {}\n",
                    f.number, f.title, f.published, f.simulated
                );
            } else {
                let _ = writeln!(
                    o,
                    "  {}. {} — {verdict}\n     published: {}\n     simulated: {}",
                    f.number, f.title, f.published, f.simulated
                );
            }
        }
        o
    }

    /// Text for the terminal.
    pub fn text(&self) -> String {
        let mut o = String::new();
        for i in 0..self.tables.len() {
            o += &self.table_text(i, false);
        }
        o += &self.findings_text(false);
        o
    }

    /// `report.md`.
    pub fn markdown(&self) -> String {
        let mut o = String::from("# schedlab reproduction report\n\n");
        o += "Every cell simulated with seed 1, and with seeds 2 and 3 where the seed matters (the \
              median is shown; plots draw the min–max); `x` is simulated / published. Scores: *order* = share of \
              policy pairs within a row, published more than 10 % apart, ordered alike; *ratio* = median factor \
              between simulated and published policy ratios within a row; *magnitude* = median factor between \
              simulated and published values; *rho* = Spearman correlation per policy across rows.\n\n";
        o += "| table | order | ratio | magnitude | worst | targets |\n|---|---:|---:|---:|---:|---|\n";
        for s in &self.scores {
            let t: Vec<String> = Self::targets(s)
                .iter()
                .map(|t| format!("{} {}", if t.met { "met" } else { "**missed**" }, t.what))
                .collect();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                s.id,
                opt(s.order, 2),
                opt(s.ratio, 2),
                opt(s.magnitude, 2),
                opt(s.max_factor, 2),
                t.join("; ")
            );
        }
        o += "\n";
        o += &self.findings_text(true);
        for i in 0..self.tables.len() {
            o += &self.table_text(i, true);
        }
        o
    }

    /// `results.json`: every cell with published and simulated values, the scores and the
    /// findings.
    pub fn json(&self) -> serde_json::Value {
        let tables: Vec<serde_json::Value> = self
            .tables
            .iter()
            .zip(&self.results)
            .zip(&self.scores)
            .map(|((t, rs), s)| {
                let cells: Vec<serde_json::Value> = t
                    .cells
                    .iter()
                    .zip(rs)
                    .map(|(c, r)| {
                        let search = c.search.as_ref().map(|s| {
                            serde_json::json!({ "param": s.param, "step": s.step, "max": s.max })
                        });
                        serde_json::json!({
                            "machine": super::machine_of(t, c), "search": search,
                            "cpus": c.cpus, "policy": c.policy, "workload": c.workload, "row": c.row,
                            "metric": c.metric.clone().unwrap_or_else(|| "result.value".into()),
                            "published": c.value,
                            "simulated": r.simulated.as_ref().ok(),
                            "repeats": r.repeats,
                            "min": r.spread().map(|s| s.min), "max": r.spread().map(|s| s.max),
                            "error": r.simulated.as_ref().err(),
                            "simulated_ns": r.simulated_ns, "events": r.events,
                        })
                    })
                    .collect();
                serde_json::json!({
                    "id": t.id, "title": t.title, "machine": t.machine, "unit": t.unit, "better": t.better,
                    "scores": s, "targets": Self::targets(s), "cells": cells,
                })
            })
            .collect();
        serde_json::json!({ "tables": tables, "findings": self.findings })
    }

    /// Write `report.md`, `results.json`, `index.html` (from `results.json` alone,
    /// [`super::html`]) and `<table>.svg` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let w = |name: &str, text: String| {
            std::fs::write(dir.join(name), text)
                .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))
        };
        w("report.md", self.markdown())?;
        let json = self.json();
        w(
            "results.json",
            serde_json::to_string_pretty(&json).expect("json") + "\n",
        )?;
        w("index.html", super::html::reproduction_page(&json))?;
        for (i, t) in self.tables.iter().enumerate() {
            let sim: Vec<Option<plot::Spread>> =
                self.results[i].iter().map(CellResult::spread).collect();
            plot::plot_table(t, &sim, &dir.join(format!("{}.svg", t.id)))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{run_cell, run_cell_seeded};

    /// Two tables; cells 0 and 1 of the first and cell 1 of the second name one run
    /// (different metrics), the others runs of their own.
    fn tables() -> Vec<Table> {
        let table = |id: &str, cells: &str| -> Table {
            serde_json::from_str(&format!(
                r#"{{"id": "{id}", "title": "t", "source": "s", "held_out": false,
                    "unit": "us", "better": "lower", "machine": "piii700-1m", "note": "",
                    "cells": [{cells}]}}"#
            ))
            .expect("table parses")
        };
        let cell = |cpus: usize, workload: &str, metric: &str| {
            format!(
                r#"{{"cpus": {cpus}, "policy": "o1-d1", "workload": "{workload}",
                    "value": null, "row": "r", "metric": "{metric}"}}"#
            )
        };
        vec![
            table(
                "A",
                &[
                    cell(2, "lat_pipe:rounds=2000", "result.value"),
                    cell(2, "lat_pipe:rounds=2000", "counters.context_switches"),
                    cell(2, "reflex:tasks=4", "result.value"),
                ]
                .join(","),
            ),
            table(
                "B",
                &[
                    cell(4, "lat_pipe:rounds=2000", "result.value"),
                    cell(2, "lat_pipe:rounds=2000", "counters.migrations"),
                ]
                .join(","),
            ),
        ]
    }

    #[test]
    fn cells_sharing_a_run_get_what_runs_of_their_own_give() {
        let tables = tables();
        let ticks = std::sync::atomic::AtomicUsize::new(0);
        let rep = run_tables(tables.clone(), &|_, _, _| {
            ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        for (t, table) in tables.iter().enumerate() {
            for c in 0..table.cells.len() {
                // The cell alone, with the repeat rule applied to it alone.
                let mut alone = run_cell(table, c);
                for (seed, wants) in [
                    (2, CellResult::wants_second_seed as fn(&CellResult) -> bool),
                    (3, CellResult::wants_third_seed),
                ] {
                    if wants(&alone) {
                        alone.add_repeat(&run_cell_seeded(table, c, seed));
                    }
                }
                let shared = &rep.results[t][c];
                assert_eq!(
                    (shared.table.as_str(), shared.index),
                    (table.id.as_str(), c)
                );
                assert_eq!(shared.simulated, alone.simulated, "{} cell {c}", table.id);
                assert_eq!(shared.repeats, alone.repeats, "{} cell {c}", table.id);
                assert_eq!(shared.events, alone.events, "{} cell {c}", table.id);
            }
        }
        // Every cell ticks once, and each repeat of a run once; each of the three runs
        // is short enough to be repeated with seed 2.
        let repeats = ticks.load(std::sync::atomic::Ordering::Relaxed) - 5;
        assert!((3..=6).contains(&repeats), "{repeats} repeats for 3 runs");
    }

    #[test]
    fn a_run_named_by_cells_of_two_tables_is_one_run() {
        assert_eq!(
            distinct_runs(&tables()),
            vec![vec![(0, 0), (0, 1), (1, 1)], vec![(0, 2)], vec![(1, 0)]]
        );
    }
}
