//! `schedlab._native`: the Rust side of the Python package. Each function takes and returns
//! plain values (JSON text for reports and rows) so that the numbers are exactly the CLI's;
//! the Python side (`schedlab/__init__.py`) turns them into dicts and DataFrames.
//!
//! Errors keep the CLI's message: bad input (nothing ran) raises `InputError`, a `ValueError`;
//! a run that started and failed raises `RunError`, a `RuntimeError`. Simulations release
//! the GIL.

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use schedlab::experiment::sweep as lab_sweep;
use schedlab::experiment::sweep::{Sweep, SweepError};
use schedlab::spec::ParamSpec;
use schedlab::{RunConfig, SimError};
use serde_json::{json, Value};

create_exception!(_native, InputError, PyValueError, "Bad input: nothing ran.");
create_exception!(
    _native,
    RunError,
    PyRuntimeError,
    "The run started and failed."
);

fn sim_err(e: SimError) -> PyErr {
    if e.is_input() {
        InputError::new_err(e.to_string())
    } else {
        RunError::new_err(e.to_string())
    }
}

fn sweep_err(e: SweepError) -> PyErr {
    match e {
        SweepError::Spec(_) | SweepError::Cell { .. } => InputError::new_err(e.to_string()),
        SweepError::Io(_) | SweepError::Incomplete { .. } => RunError::new_err(e.to_string()),
    }
}

/// One run: `schedlab run --format json` as text.
#[pyfunction]
#[pyo3(signature = (machine, policy, workload, cpus=None, seed=1))]
fn run(
    py: Python<'_>,
    machine: String,
    policy: String,
    workload: String,
    cpus: Option<usize>,
    seed: u64,
) -> PyResult<String> {
    let config = RunConfig {
        machine,
        cpus,
        policy,
        workload,
        seed,
    };
    let report = py
        .allow_threads(|| schedlab::run(config))
        .map_err(sim_err)?;
    Ok(report.to_json())
}

/// A sweep into `out` (cells already there are kept), then its rows as JSON text.
/// `spec` is TOML text, or JSON text when `is_json`.
#[pyfunction]
#[pyo3(signature = (spec, is_json, out, jobs=None))]
fn sweep(
    py: Python<'_>,
    spec: String,
    is_json: bool,
    out: PathBuf,
    jobs: Option<usize>,
) -> PyResult<String> {
    let sw = if is_json {
        Sweep::from_json(&spec)
    } else {
        Sweep::parse(&spec)
    }
    .map_err(sweep_err)?;
    if jobs == Some(0) {
        return Err(InputError::new_err(
            "jobs=0 is not possible (accepted: 1 or more)",
        ));
    }
    sw.check().map_err(sweep_err)?;
    lab_sweep::prepare(&out).map_err(sweep_err)?;
    let rows = py.allow_threads(|| -> Result<Vec<lab_sweep::Row>, SweepError> {
        let mut todo = Vec::new();
        for cell in &sw.cells {
            if lab_sweep::load(&out, cell)?.is_none() {
                todo.push(cell);
            }
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.unwrap_or(0))
            .build()
            .map_err(|e| SweepError::Io(e.to_string()))?;
        pool.install(|| {
            todo.par_iter()
                .map(|cell| lab_sweep::run_cell(&out, cell).map(|_| ()))
                .collect::<Result<Vec<()>, SweepError>>()
        })?;
        lab_sweep::merge(&out, &sw)
    });
    let rows = rows.map_err(sweep_err)?;
    Ok(serde_json::to_string(&rows).expect("rows serialize"))
}

fn params(decl: &[ParamSpec]) -> Value {
    decl.iter()
        .map(|d| {
            json!({
                "name": d.name,
                "default": d.default,
                "accepted": d.kind.describe(),
                "unit": d.unit,
                "help": d.help,
                "source": d.source,
            })
        })
        .collect()
}

/// The registries as JSON text: `policies`, `workloads`, `machines` or `tables`.
#[pyfunction]
fn list(what: &str) -> PyResult<String> {
    let v: Value = match what {
        "policies" => schedlab::policy::POLICIES
            .iter()
            .map(|p| json!({"name": p.name, "about": p.about, "options": params(p.params)}))
            .collect(),
        "workloads" => schedlab::workload::WORKLOADS
            .iter()
            .map(|w| {
                json!({"name": w.name, "about": w.about, "metric": w.metric,
                       "options": params(w.params)})
            })
            .collect(),
        "machines" => schedlab::machine::preset::PRESETS
            .iter()
            .map(|m| json!({"name": m.name, "description": m.description, "cpus": m.cpus}))
            .collect(),
        "tables" => schedlab::experiment::all_tables()
            .iter()
            .map(|t| {
                json!({"id": t.id, "title": t.title, "source": t.source,
                            "cells": t.cells.len()})
            })
            .collect(),
        other => {
            return Err(InputError::new_err(format!(
                "cannot list `{other}` (accepted: policies, workloads, machines, tables)"
            )))
        }
    };
    Ok(v.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(list, m)?)?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    Ok(())
}
