//! `schedlab sweep SPEC.toml --out DIR [--shard I/N] [--merge]`: the command around
//! [`schedlab::experiment::sweep`] — checks everything before any cell runs, runs the
//! shard's missing cells in parallel with progress, and merges.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use schedlab::experiment::sweep::{self, Shard, Sweep, SweepError};

use crate::error::{out, CliError};
use crate::Format;

/// The `sweep` subcommand's arguments.
#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// The spec: a TOML file with `machine`, `cpus`, `policy`, `workload` (each a value
    /// or a list) and `seeds` (a list) or `seed`.
    spec: PathBuf,
    /// Directory of the results: DIR/cells/ID.json per cell; `--merge` adds
    /// DIR/results.csv and DIR/results.parquet.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Run only shard I of N (cells at positions p with p mod N = I-1), e.g. a Slurm
    /// array task: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Run nothing: merge every cell's result into DIR/results.csv and
    /// DIR/results.parquet (all cells must be done).
    #[arg(long, conflicts_with = "shard")]
    merge: bool,
    /// Parallel simulations (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Output format of the summary on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

impl From<SweepError> for CliError {
    fn from(e: SweepError) -> Self {
        match e {
            SweepError::Spec(_) | SweepError::Cell { .. } => CliError::Input(e.to_string()),
            SweepError::Io(_) | SweepError::Incomplete { .. } => CliError::Failed(e.to_string()),
        }
    }
}

pub(crate) fn sweep(a: SweepArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&a.spec).map_err(|e| {
        CliError::Input(format!(
            "cannot read the sweep spec {}: {e} (accepted: a TOML file)",
            a.spec.display()
        ))
    })?;
    let spec =
        Sweep::parse(&text).map_err(|e| CliError::Input(format!("{}: {e}", a.spec.display())))?;
    let shard = a
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()?
        .unwrap_or(Shard::ALL);
    if a.jobs == Some(0) {
        return Err(CliError::Input(
            "--jobs 0 is not possible (accepted: 1 or more)".into(),
        ));
    }
    if a.merge {
        return merge(&a.out, &spec, a.format);
    }
    // Everything is checked before any cell runs: every cell, and the directory.
    spec.check()?;
    crate::check_writable(&a.out)?;
    sweep::prepare(&a.out)?;
    let mine = spec.shard(shard);
    let mut todo = Vec::new();
    for cell in &mine {
        if sweep::load(&a.out, cell)?.is_none() {
            todo.push(*cell);
        }
    }
    let done_before = mine.len() - todo.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(todo.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} cells, {elapsed} elapsed, ~{eta} left",
            )
            .expect("template"),
        );
        b
    });
    let results: Vec<Result<sweep::CellResult, SweepError>> = pool.install(|| {
        todo.par_iter()
            .map(|cell| {
                let r = sweep::run_cell(&a.out, cell);
                match &bar {
                    Some(b) => b.inc(1),
                    // Without a terminal, one line per finished cell (logs, CI, Slurm).
                    None => eprintln!("schedlab: cell {} {}", cell.id(), cell.describe()),
                }
                r
            })
            .collect()
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut failed = Vec::new();
    for r in results {
        let r = r?;
        if let Some(e) = &r.error {
            failed.push(format!("{}: {e}", r.cell.describe()));
        }
    }
    let summary = serde_json::json!({
        "shard": format!("{}/{}", shard.index, shard.count),
        "cells": mine.len(),
        "run": todo.len(),
        "already_done": done_before,
        "failed": failed,
        "dir": a.out.display().to_string(),
    });
    match a.format {
        Format::Json => out(&format!("{}\n", serde_json::to_string_pretty(&summary).expect("json")))?,
        Format::Text => out(&format!(
            "shard {}/{} of {} cells: {} cells, {} run now, {} already done, {} failed; results in {}\n",
            shard.index,
            shard.count,
            spec.cells.len(),
            mine.len(),
            todo.len(),
            done_before,
            failed.len(),
            sweep::cell_path(&a.out, &spec.cells[0])
                .parent()
                .map_or_else(|| a.out.display().to_string(), |p| p.display().to_string()),
        ))?,
    }
    if failed.is_empty() {
        Ok(())
    } else {
        for f in &failed[1..] {
            eprintln!("schedlab: cell failed: {f}");
        }
        Err(CliError::Failed(format!(
            "{} cells failed (their results record why; merge lists them), e.g. {}",
            failed.len(),
            failed[0]
        )))
    }
}

fn merge(dir: &Path, spec: &Sweep, format: Format) -> Result<(), CliError> {
    let rows = sweep::merge(dir, spec)?;
    let (csv, parquet) = (dir.join("results.csv"), dir.join("results.parquet"));
    sweep::write_csv(&csv, &rows)?;
    sweep::write_parquet(&parquet, &rows)?;
    let page = dir.join("index.html");
    let json: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| serde_json::to_value(r).expect("a row serializes"))
        .collect();
    let title = format!("schedlab sweep: {} cells", rows.len());
    std::fs::write(&page, schedlab::experiment::html::sweep_page(&title, &json))
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", page.display())))?;
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    match format {
        Format::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "rows": rows.len(),
                "failed": failed,
                "csv": csv.display().to_string(),
                "parquet": parquet.display().to_string(),
                "html": page.display().to_string(),
            }))
            .expect("json")
        )),
        Format::Text => out(&format!(
            "merged {} cells ({failed} failed) into {}, {} and {}\n",
            rows.len(),
            csv.display(),
            parquet.display(),
            page.display()
        )),
    }
}
