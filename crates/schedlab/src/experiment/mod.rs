//! Experiments as data: the published tables (and our own sweeps) as cells to simulate,
//! their scores, and the report.
//!
//! Design: a table ([`Table`]) is a list of cells — machine, CPUs, policy spec, workload
//! spec, published value (or none), a row label and optionally the JSON path of the
//! counter to compare (`metric`). The file format is `published-tables.json`'s schema,
//! shared with tools outside the project; our own experiments use the same schema in
//! `data/experiments.json`. [`report::run_tables`] simulates every distinct run the cells
//! name ([`run_key`]: in parallel, each a deterministic run with seed 1; cells that read
//! different counters of one run share it), [`score`] compares, [`report`] writes
//! Markdown, JSON and one SVG plot per table.
//!
//! # Repeats where the seed matters
//!
//! The seed varies a run's initial conditions ([`crate::kernel::initial`]), so a cell has a
//! spread. `reproduce` runs every cell with seed 1; cells of at most [`REPEAT_EVENTS`]
//! events (three quarters of the cells, a quarter of the work) run again with seed 2, and
//! where that moves the value by more than [`REPEAT_SPREAD`] (2 %), with seed 3. A cell's value
//! is the median of its runs ([`CellResult::repeats`], min–max drawn on the plots). Larger
//! cells run once: their long runs already average over many ticks. determinism: which
//! cells repeat depends only on simulated quantities (event counts and values), never on
//! the host.

pub mod findings;
pub mod html;
pub mod plot;
pub mod report;
pub mod score;
pub mod sweep;

use serde::{Deserialize, Serialize};

use crate::sim::{RunConfig, Simulation};

/// The published tables shipped with the project (`data/published-tables.json`).
pub const PUBLISHED: &str = include_str!("../../../../data/published-tables.json");
/// Our own experiments, same schema (`data/experiments.json`).
pub const OWN: &str = include_str!("../../../../data/experiments.json");

/// A file of tables.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct TableFile {
    /// Free text.
    pub note: String,
    /// The tables.
    pub tables: Vec<Table>,
}

/// One table.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Table {
    /// Identifier, e.g. `V1-reflex-2002`.
    pub id: String,
    /// Title.
    pub title: String,
    /// Where the numbers come from.
    pub source: String,
    /// Kept aside to judge predictions (not used for calibration).
    pub held_out: bool,
    /// Unit of the values.
    pub unit: String,
    /// `lower`, `higher` or `none`.
    pub better: String,
    /// Machine preset.
    pub machine: String,
    /// Free text.
    pub note: String,
    /// Run only when named (`reproduce V7`): a table whose runs take many minutes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_request: bool,
    /// Cells.
    pub cells: Vec<Cell>,
}

/// One cell of a table.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Cell {
    /// CPUs booted.
    pub cpus: usize,
    /// Policy spec.
    pub policy: String,
    /// Workload spec.
    pub workload: String,
    /// Published value; `None` for our own experiments.
    pub value: Option<f64>,
    /// Row label: cells of one row are compared with each other.
    pub row: String,
    /// JSON path of the compared quantity in the run report (default `result.value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// The cell's own machine preset, where a table's cells ran on different boxes
    /// (default: the table's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The value is not one run's but the largest setting of a workload parameter that
    /// completes ([`Search`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Search>,
}

/// "The most groups that completed": the largest multiple of `step` (up to `max`) for
/// which a run with `param` set to it completes. Runs that fail do so at a limit of the
/// kernel (a refused call, or low memory spent); completing is taken as monotone in the
/// parameter, so the steps are bisected.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Search {
    /// The workload parameter searched, e.g. `groups`.
    pub param: String,
    /// The step, e.g. 25 as OSDL stepped.
    pub step: u64,
    /// The largest value tried.
    pub max: u64,
}

/// Load every table: the published ones, then ours.
pub fn all_tables() -> Vec<Table> {
    let mut t: TableFile =
        serde_json::from_str(PUBLISHED).expect("data/published-tables.json parses");
    let own: TableFile = serde_json::from_str(OWN).expect("data/experiments.json parses");
    t.tables.extend(own.tables);
    t.tables
}

/// Add `set` (`NAME:key=value,...`) to the policy of every cell whose policy is `NAME`,
/// replacing an option the cell already sets (ablation of a policy's mechanism). An
/// option the policy does not take is refused when the cells are booted.
pub fn set_policy_options(tables: &mut [Table], set: &str) -> Result<(), String> {
    let spec = crate::spec::Spec::parse("policy", set).map_err(|e| e.to_string())?;
    if spec.args.is_empty() {
        return Err(format!(
            "--policy-set {set}: no options given (accepted: NAME:key=value,...)"
        ));
    }
    let mut found = false;
    for c in tables.iter_mut().flat_map(|t| t.cells.iter_mut()) {
        let mut cell = crate::spec::Spec::parse("policy", &c.policy).map_err(|e| e.to_string())?;
        if cell.name != spec.name {
            continue;
        }
        found = true;
        for (k, v) in &spec.args {
            cell.args.retain(|(ck, _)| ck != k);
            cell.args.push((k.clone(), v.clone()));
        }
        c.policy = cell.to_string();
    }
    if found {
        Ok(())
    } else {
        Err(format!(
            "--policy-set {set}: no cell of the selected tables runs policy {}",
            spec.name
        ))
    }
}

/// True when `id` names `table_id`: the full id, its first segment (`V1`), or the first
/// segment without its letter suffix (`V3` for `V3a` and `V3b`).
fn names(id: &str, table_id: &str) -> bool {
    let head = table_id.split('-').next().unwrap_or(table_id);
    id == table_id
        || id == head
        || (head.starts_with(id) && head[id.len()..].chars().all(|c| c.is_ascii_lowercase()))
}

/// Select tables by id (when `ids` is empty: all but those run only on request); unknown
/// ids are an error naming the ids.
pub fn select(tables: Vec<Table>, ids: &[String]) -> Result<Vec<Table>, String> {
    if ids.is_empty() {
        return Ok(tables.into_iter().filter(|t| !t.on_request).collect());
    }
    for id in ids {
        if !tables.iter().any(|t| names(id, &t.id)) {
            let known: Vec<&str> = tables.iter().map(|t| t.id.as_str()).collect();
            return Err(format!(
                "unknown table '{id}' (accepted: {})",
                known.join(", ")
            ));
        }
    }
    Ok(tables
        .into_iter()
        .filter(|t| ids.iter().any(|id| names(id, &t.id)))
        .collect())
}

/// What one simulated cell gave.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    /// Table id.
    pub table: String,
    /// Index of the cell in its table.
    pub index: usize,
    /// Simulated value of the compared quantity (the median of `repeats`), or the error
    /// that prevented it.
    pub simulated: Result<f64, String>,
    /// The value of each run, seeds 1, 2, … (one run unless the seed mattered).
    pub repeats: Vec<f64>,
    /// Simulated time of the run.
    pub simulated_ns: u64,
    /// Events of the run.
    pub events: u64,
    /// Host wall time of the run.
    pub wall_ms: u64,
    /// The run's full report (JSON), when it ran.
    #[serde(skip)]
    pub report: Option<serde_json::Value>,
    /// What the report says under the table for this cell (a search's failing step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Cells of at most this many events (with seed 1) run with a second seed.
pub const REPEAT_EVENTS: u64 = 3_000_000;
/// Seeds 1 and 2 further apart than this share of the value call for seed 3.
pub const REPEAT_SPREAD: f64 = 0.02;

/// The run configuration of a cell (seed 1).
pub fn config(table: &Table, cell: &Cell) -> RunConfig {
    RunConfig {
        machine: machine_of(table, cell).to_string(),
        cpus: Some(cell.cpus),
        policy: cell.policy.clone(),
        workload: cell.workload.clone(),
        seed: 1,
    }
}

/// Simulate one cell with seed 1.
pub fn run_cell(table: &Table, index: usize) -> CellResult {
    run_cell_seeded(table, index, 1)
}

/// Simulate one cell with seed `seed`.
pub fn run_cell_seeded(table: &Table, index: usize, seed: u64) -> CellResult {
    run_seeded(table, &table.cells[index], seed).cell(table, index)
}

/// The run a cell names: its machine, CPUs, policy and workload. Cells with the same key
/// (a table that reads several counters of one run) share one simulation per seed.
pub fn run_key(table: &Table, cell: &Cell) -> (String, usize, String, String) {
    let search = cell.search.as_ref().map(|s| format!(" search {}", s.param));
    (
        format!("{}{}", machine_of(table, cell), search.unwrap_or_default()),
        cell.cpus,
        cell.policy.clone(),
        cell.workload.clone(),
    )
}

/// The machine preset a cell runs on.
pub fn machine_of<'a>(table: &'a Table, cell: &'a Cell) -> &'a str {
    cell.machine.as_deref().unwrap_or(&table.machine)
}

/// One simulation with one seed, before any cell has read its metric from it.
pub struct Run {
    /// The report as JSON with the simulated time and events, or the error.
    outcome: Result<(serde_json::Value, u64, u64), String>,
    wall_ms: u64,
    note: Option<String>,
}

/// Simulate `cell`'s configuration with seed `seed` (a search: every step it tries).
pub fn run_seeded(table: &Table, cell: &Cell, seed: u64) -> Run {
    if let Some(s) = &cell.search {
        return run_search(table, cell, s, seed);
    }
    one_run(RunConfig {
        seed,
        ..config(table, cell)
    })
}

/// The largest step that completes: bisect the multiples of `s.step` in `0..=s.max`
/// (0 completes by definition), then report it with the first failing step's error.
fn run_search(table: &Table, cell: &Cell, s: &Search, seed: u64) -> Run {
    let t0 = std::time::Instant::now();
    let base = config(table, cell);
    let (mut ns, mut events) = (0, 0);
    let mut try_step = |k: u64| {
        let sep = if base.workload.contains(':') {
            ','
        } else {
            ':'
        };
        let run = one_run(RunConfig {
            seed,
            workload: format!("{}{sep}{}={}", base.workload, s.param, k * s.step),
            ..base.clone()
        });
        match run.outcome {
            Ok((_, n, e)) => {
                ns += n;
                events += e;
                Ok(())
            }
            Err(e) => Err(e),
        }
    };
    // Gallop up from the first step (1, 2, 4, 8 … steps) to a failing one, then bisect:
    // the runs below the limit are the cheap ones, and the published value is not looked
    // at. With completion monotone in the parameter, the answer is the largest step that
    // completes.
    let top = s.max / s.step + 1;
    let (mut pass, mut fail) = (0, top);
    let mut fail_error = None;
    let mut probe = |k: u64, pass: &mut u64, fail: &mut u64| match try_step(k) {
        Ok(()) => *pass = k,
        Err(e) => {
            *fail = k;
            fail_error = Some(e);
        }
    };
    let mut k = 1;
    while fail == top && k < top {
        probe(k, &mut pass, &mut fail);
        k *= 2;
    }
    while fail - pass > 1 {
        probe((pass + fail) / 2, &mut pass, &mut fail);
    }
    let largest = pass * s.step;
    let note = fail_error.map(|e| format!("{} = {}: {e}", s.param, fail * s.step));
    let value = serde_json::json!({
        "result": {"metric": format!("largest {} that completes", s.param), "value": largest},
        "search": {"param": s.param, "step": s.step, "largest_completing": largest,
                   "first_failing": (fail * s.step <= s.max).then_some(fail * s.step)},
    });
    Run {
        outcome: Ok((value, ns, events)),
        wall_ms: t0.elapsed().as_millis() as u64,
        note,
    }
}

fn one_run(config: RunConfig) -> Run {
    let t0 = std::time::Instant::now();
    let res = Simulation::new(config).and_then(|mut sim| {
        sim.run(&mut |_, _| {})?;
        sim.report()
    });
    let outcome = match res {
        Ok(r) => Ok((
            serde_json::to_value(&r).expect("report serializes"),
            r.sim.simulated_ns,
            r.sim.events,
        )),
        Err(e) => Err(e.to_string()),
    };
    Run {
        outcome,
        wall_ms: t0.elapsed().as_millis() as u64,
        note: None,
    }
}

impl Run {
    /// Cell `index` of `table` as this run gives it: the cell's metric read from the report.
    pub fn cell(&self, table: &Table, index: usize) -> CellResult {
        let mut out = CellResult {
            table: table.id.clone(),
            index,
            simulated: Err(String::new()),
            repeats: Vec::new(),
            simulated_ns: 0,
            events: 0,
            wall_ms: self.wall_ms,
            report: None,
            note: self.note.clone(),
        };
        out.simulated = match &self.outcome {
            Ok((v, ns, events)) => {
                out.simulated_ns = *ns;
                out.events = *events;
                let path = table.cells[index]
                    .metric
                    .as_deref()
                    .unwrap_or("result.value");
                let got = lookup(v, path).ok_or_else(|| format!("the run has no numeric {path}"));
                out.report = Some(v.clone());
                got
            }
            Err(e) => Err(e.clone()),
        };
        out.repeats.extend(out.simulated.as_ref().ok());
        out
    }
}

impl CellResult {
    /// True when this cell (run once, with seed 1) is small enough to run with seed 2.
    pub fn wants_second_seed(&self) -> bool {
        // A search's steps are already many runs: it is not repeated.
        self.simulated.is_ok()
            && self.repeats.len() == 1
            && self.events <= REPEAT_EVENTS
            && self.note.is_none()
    }

    /// True when seeds 1 and 2 disagree by more than [`REPEAT_SPREAD`]: run seed 3.
    pub fn wants_third_seed(&self) -> bool {
        match self.repeats[..] {
            [a, b] => (a - b).abs() > REPEAT_SPREAD * a.abs().max(b.abs()),
            _ => false,
        }
    }

    /// Add the value of another seed's run; the value becomes the median. A failed
    /// repeat fails the cell.
    pub fn add_repeat(&mut self, other: &CellResult) {
        match (&self.simulated, &other.simulated) {
            (Ok(_), Ok(v)) => {
                self.repeats.push(*v);
                self.simulated = Ok(score::median(self.repeats.clone()).unwrap_or(f64::NAN));
            }
            (Ok(_), Err(e)) => {
                self.simulated = Err(format!("seed {}: {e}", self.repeats.len() + 1));
            }
            _ => {}
        }
        self.wall_ms += other.wall_ms;
    }

    /// The value with its spread over the seeds, for the plots.
    pub fn spread(&self) -> Option<plot::Spread> {
        let v = *self.simulated.as_ref().ok()?;
        let min = self.repeats.iter().copied().fold(v, f64::min);
        let max = self.repeats.iter().copied().fold(v, f64::max);
        Some(plot::Spread { value: v, min, max })
    }
}

/// The number at dotted `path` (e.g. `counters.policy.remote_better_pct`) in a report.
pub fn lookup(report: &serde_json::Value, path: &str) -> Option<f64> {
    let ptr = format!("/{}", path.replace('.', "/"));
    report.pointer(&ptr).and_then(|x| x.as_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    #[test]
    fn shipped_tables_parse_and_name_valid_specs() {
        let tables = all_tables();
        assert!(tables.iter().any(|t| t.id == "V1-reflex-2002"));
        for t in &tables {
            assert!(
                crate::machine::catalog::find(&t.machine).is_some(),
                "{}: machine {}",
                t.id,
                t.machine
            );
            for c in &t.cells {
                Spec::parse("policy", &c.policy).unwrap();
                Spec::parse("workload", &c.workload).unwrap();
            }
        }
    }

    #[test]
    fn tables_are_selected_by_id_or_prefix() {
        let pick = |ids: &[&str]| {
            let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
            select(all_tables(), &ids).map(|v| v.into_iter().map(|t| t.id).collect::<Vec<_>>())
        };
        assert_eq!(
            pick(&["V3"]).unwrap(),
            vec!["V3a-lat-pipe-sync", "V3b-bw-pipe-sync"]
        );
        assert_eq!(pick(&["V1-reflex-2002"]).unwrap(), vec!["V1-reflex-2002"]);
        assert_eq!(pick(&["V1"]).unwrap(), vec!["V1-reflex-2002"]);
        let e = pick(&["V9"]).unwrap_err();
        assert!(
            e.starts_with("unknown table 'V9' (accepted: V1-reflex-2002"),
            "{e}"
        );
    }
}
