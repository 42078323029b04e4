//! Sweeps: the product of a spec's lists, run cell by cell into one directory — resumable,
//! shardable across hosts — and merged into one table.
//!
//! Design. A spec (TOML) lists machines, CPU counts, policies, workloads and seeds; its
//! cells are their product in that order, the last key varying fastest. A cell's id is a
//! hash of its canonical JSON, so the same cell has the same file name in every spec and
//! on every host; its result is `DIR/cells/ID.json`, written under a temporary name and
//! renamed, so a killed run leaves only whole files and a repeated or resumed run skips
//! what is there. Shard I of N takes the cells whose position p in the product has
//! p mod N = I − 1, so shards 1..N cover the product once whichever hosts ran them (a
//! Slurm array task id maps to I). [`merge`] reads every cell of the product, in product
//! order, into rows — `results.csv` and `results.parquet` — so shards merged equal the
//! unsharded run row for row.
//!
//! Invariants: a cell file holds the cell it is named for (checked when read, so a hash
//! collision or a hand-edited file is an error, not a wrong row); a finished cell is never
//! rewritten; merge refuses a directory that lacks a cell, naming it.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::sim::{RunConfig, SimError, Simulation};

/// What is wrong with a sweep: one line each.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The spec is not what a sweep accepts.
    #[error("{0}")]
    Spec(String),
    /// A cell names something that does not exist or cannot run.
    #[error("cell {cell}: {err}")]
    Cell {
        /// The cell, as `machine cpus=N policy workload seed=S`.
        cell: String,
        /// Why.
        err: Box<SimError>,
    },
    /// Reading or writing the sweep's directory.
    #[error("{0}")]
    Io(String),
    /// `merge` before every cell has a result.
    #[error("{missing} of {total} cells have no result in {dir} yet (first: {first}); run the missing shards, then merge")]
    Incomplete {
        /// Cells without a result.
        missing: usize,
        /// Cells in the sweep.
        total: usize,
        /// The directory.
        dir: String,
        /// The first missing cell.
        first: String,
    },
}

/// One cell: one run of the simulator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// Machine preset, with model switches if any.
    pub machine: String,
    /// CPUs booted (`None`: all of the preset's).
    pub cpus: Option<usize>,
    /// Policy spec.
    pub policy: String,
    /// Workload spec.
    pub workload: String,
    /// Seed.
    pub seed: u64,
}

impl Cell {
    /// The cell's id: the first 16 hex digits of the SHA-256 of its canonical JSON (the
    /// fields in declaration order, no spaces).
    pub fn id(&self) -> String {
        let json = serde_json::to_string(self).expect("a cell serializes");
        let digest = Sha256::digest(json.as_bytes());
        digest[..8].iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    /// The run this cell is.
    pub fn config(&self) -> RunConfig {
        RunConfig {
            machine: self.machine.clone(),
            cpus: self.cpus,
            policy: self.policy.clone(),
            workload: self.workload.clone(),
            seed: self.seed,
        }
    }

    /// `machine cpus=N policy workload seed=S`, for messages.
    pub fn describe(&self) -> String {
        let cpus = self.cpus.map_or("all".to_string(), |c| c.to_string());
        format!(
            "{} cpus={} {} {} seed={}",
            self.machine, cpus, self.policy, self.workload, self.seed
        )
    }
}

/// A value or a list of values, as a spec key accepts.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(x) => vec![x],
            OneOrMany::Many(v) => v,
        }
    }
}

/// The spec file's keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    machine: OneOrMany<String>,
    #[serde(default)]
    cpus: Option<OneOrMany<usize>>,
    policy: OneOrMany<String>,
    workload: OneOrMany<String>,
    #[serde(default)]
    seeds: Option<Vec<u64>>,
    #[serde(default)]
    seed: Option<u64>,
}

/// The keys a spec accepts, for messages.
pub const SPEC_KEYS: &str =
    "machine, cpus, policy, workload (each a value or a list), seeds (a list) or seed";

/// Which cells a run takes: shard `index` of `count`, from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 1 ..= `count`.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parse `I/N` (1 ≤ I ≤ N).
    pub fn parse(s: &str) -> Result<Shard, SweepError> {
        let bad = || {
            SweepError::Spec(format!(
                "shard `{s}`: expected I/N with 1 <= I <= N, e.g. 1/4 (a Slurm array task id and count)"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Does the cell at `pos` in the product belong to this shard?
    pub fn takes(&self, pos: usize) -> bool {
        pos % self.count == self.index - 1
    }
}

/// A sweep: its cells, in product order.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The cells.
    pub cells: Vec<Cell>,
}

impl Sweep {
    /// A spec given as JSON (the same keys: what Python's `schedlab.sweep(dict)` passes).
    pub fn from_json(text: &str) -> Result<Sweep, SweepError> {
        let spec: SpecFile = serde_json::from_str(text)
            .map_err(|e| SweepError::Spec(format!("spec: {e} (keys: {SPEC_KEYS})")))?;
        Sweep::product(spec)
    }

    /// Parse a TOML spec. Errors are one line, with the line of the spec they are on.
    pub fn parse(text: &str) -> Result<Sweep, SweepError> {
        let spec: SpecFile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            let msg = e.message().replace('\n', " ");
            SweepError::Spec(match line {
                Some(l) => format!("spec line {l}: {msg} (keys: {SPEC_KEYS})"),
                None => format!("spec: {msg} (keys: {SPEC_KEYS})"),
            })
        })?;
        Sweep::product(spec)
    }

    /// The cells of a spec: the product of its lists.
    fn product(spec: SpecFile) -> Result<Sweep, SweepError> {
        let seeds = match (spec.seeds, spec.seed) {
            (Some(_), Some(_)) => {
                return Err(SweepError::Spec(
                    "spec: give `seeds` (a list) or `seed`, not both".into(),
                ))
            }
            (Some(s), None) => s,
            (None, Some(s)) => vec![s],
            (None, None) => vec![1],
        };
        let machines = spec.machine.into_vec();
        let cpus: Vec<Option<usize>> = match spec.cpus {
            Some(c) => c.into_vec().into_iter().map(Some).collect(),
            None => vec![None],
        };
        let policies = spec.policy.into_vec();
        let workloads = spec.workload.into_vec();
        for (key, n) in [
            ("machine", machines.len()),
            ("cpus", cpus.len()),
            ("policy", policies.len()),
            ("workload", workloads.len()),
            ("seeds", seeds.len()),
        ] {
            if n == 0 {
                return Err(SweepError::Spec(format!(
                    "spec: `{key}` is an empty list; give at least one value"
                )));
            }
        }
        let mut cells = Vec::new();
        for m in &machines {
            for &c in &cpus {
                for p in &policies {
                    for w in &workloads {
                        for &seed in &seeds {
                            cells.push(Cell {
                                machine: m.clone(),
                                cpus: c,
                                policy: p.clone(),
                                workload: w.clone(),
                                seed,
                            });
                        }
                    }
                }
            }
        }
        let distinct: BTreeSet<String> = cells.iter().map(Cell::id).collect();
        if distinct.len() != cells.len() {
            return Err(SweepError::Spec(
                "spec: a list repeats a value, so some cells would run twice".into(),
            ));
        }
        Ok(Sweep { cells })
    }

    /// Check every cell before any runs: each names a machine, policy and workload that
    /// exist with valid options, and fits its machine.
    pub fn check(&self) -> Result<(), SweepError> {
        let mut seen = BTreeSet::new();
        for cell in &self.cells {
            let key = (&cell.machine, cell.cpus, &cell.policy, &cell.workload);
            if seen.insert(key) {
                Simulation::new(cell.config()).map_err(|err| SweepError::Cell {
                    cell: cell.describe(),
                    err: Box::new(err),
                })?;
            }
        }
        Ok(())
    }

    /// The cells of `shard`, in product order.
    pub fn shard(&self, shard: Shard) -> Vec<&Cell> {
        self.cells
            .iter()
            .enumerate()
            .filter(|(pos, _)| shard.takes(*pos))
            .map(|(_, c)| c)
            .collect()
    }
}

/// A cell's result file: the cell, and its report or why it failed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellResult {
    /// The cell.
    pub cell: Cell,
    /// `schedlab run --format json` of the cell, if it ran to the end.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub report: Option<Value>,
    /// Why the run failed (a kernel limit, say), if it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

fn cells_dir(dir: &Path) -> PathBuf {
    dir.join("cells")
}

/// Where a cell's result lives.
pub fn cell_path(dir: &Path, cell: &Cell) -> PathBuf {
    cells_dir(dir).join(format!("{}.json", cell.id()))
}

/// The cell's result if `dir` has it.
pub fn load(dir: &Path, cell: &Cell) -> Result<Option<CellResult>, SweepError> {
    let path = cell_path(dir, cell);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SweepError::Io(format!("{}: {e}", path.display()))),
    };
    let r: CellResult = serde_json::from_str(&text)
        .map_err(|e| SweepError::Io(format!("{}: not a cell result: {e}", path.display())))?;
    if r.cell != *cell {
        return Err(SweepError::Io(format!(
            "{} holds {}, not {}",
            path.display(),
            r.cell.describe(),
            cell.describe()
        )));
    }
    Ok(Some(r))
}

/// Create `dir/cells`.
pub fn prepare(dir: &Path) -> Result<(), SweepError> {
    let d = cells_dir(dir);
    std::fs::create_dir_all(&d).map_err(|e| SweepError::Io(format!("{}: {e}", d.display())))
}

/// Run `cell` and write its result into `dir` (atomically: a temporary file renamed).
pub fn run_cell(dir: &Path, cell: &Cell) -> Result<CellResult, SweepError> {
    let result = match crate::report::run(cell.config()) {
        Ok(report) => CellResult {
            cell: cell.clone(),
            report: Some(serde_json::to_value(&report).expect("a report serializes")),
            error: None,
        },
        Err(e) => CellResult {
            cell: cell.clone(),
            report: None,
            error: Some(e.to_string()),
        },
    };
    let path = cell_path(dir, cell);
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    let text = serde_json::to_string_pretty(&result).expect("a result serializes") + "\n";
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| SweepError::Io(format!("{}: {e}", path.display())))?;
    Ok(result)
}

/// One row of the merged table: the cell, its result and the main counters.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// The cell's id.
    pub id: String,
    /// Machine preset.
    pub machine: String,
    /// CPUs booted (from the report; the spec's value when the run failed).
    pub cpus: Option<u64>,
    /// Policy spec.
    pub policy: String,
    /// Workload spec.
    pub workload: String,
    /// Seed.
    pub seed: u64,
    /// What the workload reports (`messages_per_s`, …).
    pub metric: Option<String>,
    /// Its value.
    pub value: Option<f64>,
    /// Its unit.
    pub unit: Option<String>,
    /// Why the run failed, if it did.
    pub error: Option<String>,
    /// Simulated events.
    pub events: Option<u64>,
    /// Simulated time, ns.
    pub simulated_ns: Option<u64>,
    /// `counters.context_switches`.
    pub context_switches: Option<u64>,
    /// `counters.migrations`.
    pub migrations: Option<u64>,
    /// `counters.ipis`.
    pub ipis: Option<u64>,
    /// `counters.wakeups`.
    pub wakeups: Option<u64>,
    /// `counters.cpu_time.running_pct`.
    pub running_pct: Option<f64>,
    /// `counters.cpu_time.scheduler_pct`.
    pub scheduler_pct: Option<f64>,
    /// `counters.cpu_time.spinning_pct`.
    pub spinning_pct: Option<f64>,
    /// `counters.cpu_time.idle_pct`.
    pub idle_pct: Option<f64>,
    /// `counters.wakeup_latency.p50_ns`.
    pub wakeup_p50_ns: Option<f64>,
    /// `counters.wakeup_latency.p99_ns`.
    pub wakeup_p99_ns: Option<f64>,
}

impl Row {
    fn of(r: &CellResult) -> Row {
        let rep = r.report.as_ref();
        let at = |path: &str| rep.and_then(|v| v.pointer(path));
        let u = |path: &str| at(path).and_then(Value::as_u64);
        let f = |path: &str| at(path).and_then(Value::as_f64);
        let s = |path: &str| at(path).and_then(Value::as_str).map(str::to_string);
        Row {
            id: r.cell.id(),
            machine: r.cell.machine.clone(),
            cpus: u("/cpus").or(r.cell.cpus.map(|c| c as u64)),
            policy: r.cell.policy.clone(),
            workload: r.cell.workload.clone(),
            seed: r.cell.seed,
            metric: s("/result/metric"),
            value: f("/result/value"),
            unit: s("/result/unit"),
            error: r.error.clone(),
            events: u("/sim/events"),
            simulated_ns: u("/sim/simulated_ns"),
            context_switches: u("/counters/context_switches"),
            migrations: u("/counters/migrations"),
            ipis: u("/counters/ipis"),
            wakeups: u("/counters/wakeups"),
            running_pct: f("/counters/cpu_time/running_pct"),
            scheduler_pct: f("/counters/cpu_time/scheduler_pct"),
            spinning_pct: f("/counters/cpu_time/spinning_pct"),
            idle_pct: f("/counters/cpu_time/idle_pct"),
            wakeup_p50_ns: f("/counters/wakeup_latency/p50_ns"),
            wakeup_p99_ns: f("/counters/wakeup_latency/p99_ns"),
        }
    }
}

/// Every cell's row, in product order; refuses a directory that lacks a cell.
pub fn merge(dir: &Path, sweep: &Sweep) -> Result<Vec<Row>, SweepError> {
    let mut rows = Vec::with_capacity(sweep.cells.len());
    let mut missing = Vec::new();
    for cell in &sweep.cells {
        match load(dir, cell)? {
            Some(r) => rows.push(Row::of(&r)),
            None => missing.push(cell),
        }
    }
    if let Some(first) = missing.first() {
        return Err(SweepError::Incomplete {
            missing: missing.len(),
            total: sweep.cells.len(),
            dir: dir.display().to_string(),
            first: first.describe(),
        });
    }
    Ok(rows)
}

/// Write `rows` as CSV: a header row, then one row per cell; empty fields where a failed
/// run has no value.
pub fn write_csv(path: &Path, rows: &[Row]) -> Result<(), SweepError> {
    let io = |e: csv::Error| SweepError::Io(format!("{}: {e}", path.display()));
    let mut w = csv::Writer::from_path(path).map_err(io)?;
    for r in rows {
        w.serialize(r).map_err(io)?;
    }
    w.flush()
        .map_err(|e| SweepError::Io(format!("{}: {e}", path.display())))
}

/// Write `rows` as Parquet (one row group, the columns of [`Row`], nullable where a
/// failed run has no value), for dataframes.
pub fn write_parquet(path: &Path, rows: &[Row]) -> Result<(), SweepError> {
    parquet_out::write(path, rows).map_err(|e| SweepError::Io(format!("{}: {e}", path.display())))
}

mod parquet_out {
    use super::*;
    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
    use parquet::errors::Result;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
    use parquet::schema::parser::parse_message_type;

    const SCHEMA: &str = "message sweep {
        REQUIRED BYTE_ARRAY id (UTF8);
        REQUIRED BYTE_ARRAY machine (UTF8);
        OPTIONAL INT64 cpus;
        REQUIRED BYTE_ARRAY policy (UTF8);
        REQUIRED BYTE_ARRAY workload (UTF8);
        REQUIRED INT64 seed;
        OPTIONAL BYTE_ARRAY metric (UTF8);
        OPTIONAL DOUBLE value;
        OPTIONAL BYTE_ARRAY unit (UTF8);
        OPTIONAL BYTE_ARRAY error (UTF8);
        OPTIONAL INT64 events;
        OPTIONAL INT64 simulated_ns;
        OPTIONAL INT64 context_switches;
        OPTIONAL INT64 migrations;
        OPTIONAL INT64 ipis;
        OPTIONAL INT64 wakeups;
        OPTIONAL DOUBLE running_pct;
        OPTIONAL DOUBLE scheduler_pct;
        OPTIONAL DOUBLE spinning_pct;
        OPTIONAL DOUBLE idle_pct;
        OPTIONAL DOUBLE wakeup_p50_ns;
        OPTIONAL DOUBLE wakeup_p99_ns;
    }";

    type Rg<'a> = SerializedRowGroupWriter<'a, std::fs::File>;

    /// One column of strings; `None` values are nulls (definition level 0).
    fn strings(rg: &mut Rg<'_>, vals: Vec<Option<&str>>, optional: bool) -> Result<()> {
        let mut col = rg.next_column()?.expect("a column of the schema");
        let data: Vec<ByteArray> = vals.iter().flatten().map(|s| ByteArray::from(*s)).collect();
        let defs: Vec<i16> = vals.iter().map(|v| i16::from(v.is_some())).collect();
        col.typed::<ByteArrayType>()
            .write_batch(&data, optional.then_some(&defs[..]), None)?;
        col.close()
    }

    fn ints(rg: &mut Rg<'_>, vals: Vec<Option<u64>>, optional: bool) -> Result<()> {
        let mut col = rg.next_column()?.expect("a column of the schema");
        let data: Vec<i64> = vals.iter().flatten().map(|&v| v as i64).collect();
        let defs: Vec<i16> = vals.iter().map(|v| i16::from(v.is_some())).collect();
        col.typed::<Int64Type>()
            .write_batch(&data, optional.then_some(&defs[..]), None)?;
        col.close()
    }

    fn doubles(rg: &mut Rg<'_>, vals: Vec<Option<f64>>) -> Result<()> {
        let mut col = rg.next_column()?.expect("a column of the schema");
        let data: Vec<f64> = vals.iter().flatten().copied().collect();
        let defs: Vec<i16> = vals.iter().map(|v| i16::from(v.is_some())).collect();
        col.typed::<DoubleType>()
            .write_batch(&data, Some(&defs), None)?;
        col.close()
    }

    pub(super) fn write(path: &Path, rows: &[Row]) -> Result<()> {
        let schema = Arc::new(parse_message_type(SCHEMA)?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::UNCOMPRESSED)
                .set_created_by("schedlab sweep".into())
                .build(),
        );
        let file = std::fs::File::create(path)?;
        let mut w = SerializedFileWriter::new(file, schema, props)?;
        let mut rg = w.next_row_group()?;
        let col = |f: fn(&Row) -> Option<&str>| rows.iter().map(f).collect::<Vec<_>>();
        strings(&mut rg, col(|r| Some(&r.id)), false)?;
        strings(&mut rg, col(|r| Some(&r.machine)), false)?;
        ints(&mut rg, rows.iter().map(|r| r.cpus).collect(), true)?;
        strings(&mut rg, col(|r| Some(&r.policy)), false)?;
        strings(&mut rg, col(|r| Some(&r.workload)), false)?;
        ints(&mut rg, rows.iter().map(|r| Some(r.seed)).collect(), false)?;
        strings(&mut rg, col(|r| r.metric.as_deref()), true)?;
        doubles(&mut rg, rows.iter().map(|r| r.value).collect())?;
        strings(&mut rg, col(|r| r.unit.as_deref()), true)?;
        strings(&mut rg, col(|r| r.error.as_deref()), true)?;
        for f in [
            |r: &Row| r.events,
            |r: &Row| r.simulated_ns,
            |r: &Row| r.context_switches,
            |r: &Row| r.migrations,
            |r: &Row| r.ipis,
            |r: &Row| r.wakeups,
        ] {
            ints(&mut rg, rows.iter().map(f).collect(), true)?;
        }
        for f in [
            |r: &Row| r.running_pct,
            |r: &Row| r.scheduler_pct,
            |r: &Row| r.spinning_pct,
            |r: &Row| r.idle_pct,
            |r: &Row| r.wakeup_p50_ns,
            |r: &Row| r.wakeup_p99_ns,
        ] {
            doubles(&mut rg, rows.iter().map(f).collect())?;
        }
        rg.close()?;
        w.close()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
        machine = "piii700-1m"
        cpus = [2, 4]
        policy = ["linux-2.4", "o1-2.6"]
        workload = ["reflex:tasks=2", "reflex:tasks=8"]
        seeds = [1, 2]
    "#;

    #[test]
    fn the_product_is_in_key_order_with_the_last_key_fastest() {
        let s = Sweep::parse(SPEC).unwrap();
        assert_eq!(s.cells.len(), 16);
        assert_eq!(
            s.cells[0].describe(),
            "piii700-1m cpus=2 linux-2.4 reflex:tasks=2 seed=1"
        );
        assert_eq!(
            s.cells[1].describe(),
            "piii700-1m cpus=2 linux-2.4 reflex:tasks=2 seed=2"
        );
        assert_eq!(
            s.cells[2].describe(),
            "piii700-1m cpus=2 linux-2.4 reflex:tasks=8 seed=1"
        );
        assert_eq!(
            s.cells[15].describe(),
            "piii700-1m cpus=4 o1-2.6 reflex:tasks=8 seed=2"
        );
    }

    #[test]
    fn shards_partition_the_product() {
        let s = Sweep::parse(SPEC).unwrap();
        for n in 1..=5 {
            let mut all: Vec<String> = (1..=n)
                .flat_map(|i| s.shard(Shard { index: i, count: n }))
                .map(Cell::id)
                .collect();
            all.sort();
            let mut want: Vec<String> = s.cells.iter().map(Cell::id).collect();
            want.sort();
            assert_eq!(all, want, "{n} shards");
        }
    }

    #[test]
    fn a_cells_id_depends_on_every_field_and_on_nothing_else() {
        let s = Sweep::parse(SPEC).unwrap();
        let ids: BTreeSet<String> = s.cells.iter().map(Cell::id).collect();
        assert_eq!(ids.len(), s.cells.len());
        // The same cell in another spec has the same id.
        let one = Sweep::parse(
            "machine = \"piii700-1m\"\ncpus = 2\npolicy = \"linux-2.4\"\nworkload = \"reflex:tasks=2\"\nseed = 1\n",
        )
        .unwrap();
        assert_eq!(one.cells[0].id(), s.cells[0].id());
        assert_eq!(one.cells[0].id().len(), 16);
    }

    #[test]
    fn a_json_spec_is_the_same_sweep_as_its_toml() {
        let j = Sweep::from_json(
            r#"{"machine": "piii700-1m", "cpus": [2, 4], "policy": ["linux-2.4", "o1-2.6"],
                "workload": ["reflex:tasks=2", "reflex:tasks=8"], "seeds": [1, 2]}"#,
        )
        .unwrap();
        assert_eq!(j.cells, Sweep::parse(SPEC).unwrap().cells);
        let e = Sweep::from_json(r#"{"machine": "m", "policy": "p", "workload": "w", "x": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `x`"), "{e}");
    }

    #[test]
    fn shards_are_parsed_as_i_of_n() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected I/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_specs_are_refused_in_one_line_naming_the_problem() {
        for (text, says) in [
            (
                "machine = \"m\"\npolicy = \"p\"\n",
                "missing field `workload`",
            ),
            (
                "machine = \"m\"\npolicy = \"p\"\nworkload = \"w\"\nrooms = 3\n",
                "unknown field `rooms`",
            ),
            (
                "machine = \"m\"\npolicy = []\nworkload = \"w\"\n",
                "`policy` is an empty list",
            ),
            (
                "machine = \"m\"\npolicy = \"p\"\nworkload = \"w\"\nseed = 1\nseeds = [2]\n",
                "not both",
            ),
            (
                "machine = \"m\"\npolicy = [\"p\", \"p\"]\nworkload = \"w\"\n",
                "repeats a value",
            ),
            ("machine = \n", "spec line 1"),
        ] {
            let e = Sweep::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn check_names_the_cell_that_cannot_run() {
        let s = Sweep::parse(
            "machine = \"piii700-1m\"\npolicy = [\"o1-2.6\", \"nosuch\"]\nworkload = \"reflex\"\n",
        )
        .unwrap();
        let e = s.check().unwrap_err().to_string();
        assert!(
            e.starts_with("cell piii700-1m cpus=all nosuch reflex seed=1:"),
            "{e}"
        );
    }
}
