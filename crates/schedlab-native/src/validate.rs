//! `schedlab validate`: the same workloads natively and simulated on the `host` preset.
//!
//! Design: each row is one workload spec run twice — natively (the median of `runs`
//! repetitions, each supervised like `schedlab native`) and simulated on `host` under
//! `eevdf` at the host's HZ — and reported as native | simulated | ratio (simulated /
//! native, in the workload's own unit). The rows are issue 15's set: hackbench processes
//! and threads at two sizes, lat_pipe on one CPU and across two, bw_pipe, loop_yield,
//! sched_yield and lat_proc fork. Which rows' costs were solved from a micro-benchmark of
//! the same path is said per row (`calibrated`), so a ratio of 1 there proves only the
//! arithmetic; the other rows are predictions.
//!
//! Invariants: natives run one at a time (they measure the machine); the simulation is
//! deterministic (seed 1); a row that fails either way fails the command, naming it.

use serde::Serialize;

use crate::{NativeConfig, NativeError};

/// One workload of the validation set.
#[derive(Clone, Copy, Debug)]
pub struct RowSpec {
    /// The workload spec, run both ways.
    pub workload: &'static str,
    /// Which host costs were solved from a micro-benchmark of this row's own path
    /// (empty: the row is a prediction).
    pub calibrated: &'static str,
}

/// The validation set.
pub const ROWS: &[RowSpec] = &[
    RowSpec {
        workload: "hackbench:groups=2,loops=200",
        calibrated: "",
    },
    RowSpec {
        workload: "hackbench:groups=8,loops=100",
        calibrated: "",
    },
    RowSpec {
        workload: "hackbench:groups=2,loops=200,threads=on",
        calibrated: "",
    },
    RowSpec {
        workload: "hackbench:groups=8,loops=100,threads=on",
        calibrated: "",
    },
    RowSpec {
        workload: "lat_pipe:pin=same,rounds=20000",
        calibrated: "switch_mm_ns, wakeup_ns (process/thread ping-pong on one CPU)",
    },
    RowSpec {
        workload: "lat_pipe:pin=split,rounds=20000",
        calibrated: "ipi_latency_ns (fitted to this row's path)",
    },
    RowSpec {
        workload: "bw_pipe:mb=64",
        calibrated: "copy_ns_per_kb (64 KB pipe write+read in one thread)",
    },
    RowSpec {
        workload: "loop_yield:instances=4",
        calibrated: "",
    },
    RowSpec {
        workload: "sched_yield:threads=4",
        calibrated: "",
    },
    RowSpec {
        workload: "lat_proc:op=fork,n=1000",
        calibrated: "fork_ns, exit_ns, wait_ns (fork+exit+wait)",
    },
];

/// One validated row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The workload spec.
    pub workload: String,
    /// Metric name.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// Native median.
    pub native: f64,
    /// The native repetitions, in run order.
    pub native_runs: Vec<f64>,
    /// Simulated on `host`.
    pub simulated: f64,
    /// simulated / native.
    pub ratio: f64,
    /// Costs solved from this row's own path, if any.
    pub calibrated: String,
}

/// The validation report: `{"rows": [...], ...}`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Rows, in [`ROWS`] order.
    pub rows: Vec<Row>,
    /// The policy spec simulated.
    pub policy: String,
    /// The host preset's description.
    pub machine: String,
    /// The target: every ratio within this fraction of 1.
    pub target: f64,
}

/// The target of issue 15: within 25 %.
pub const TARGET: f64 = 0.25;

/// The rows whose workload contains `only` (all when `None`); an unknown filter is an
/// error listing the rows.
pub fn select(only: Option<&str>) -> Result<Vec<RowSpec>, String> {
    let rows: Vec<RowSpec> = ROWS
        .iter()
        .copied()
        .filter(|r| only.is_none_or(|o| r.workload.contains(o)))
        .collect();
    if rows.is_empty() {
        let names: Vec<&str> = ROWS.iter().map(|r| r.workload).collect();
        return Err(format!(
            "no validate row matches '{}' (rows: {})",
            only.unwrap_or(""),
            names.join(", ")
        ));
    }
    Ok(rows)
}

/// What happens to a row: `(index, total, workload, stage)`.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str, &str);

/// Run `rows`: natives first (`runs` each, at least 5), then the simulations.
pub fn validate(
    rows: &[RowSpec],
    runs: usize,
    interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    progress: Progress<'_>,
) -> Result<Report, String> {
    let host = schedlab::machine::host::file()?;
    let policy = format!("eevdf:hz={}", host.measured.hz);
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        progress(i + 1, rows.len(), r.workload, "native");
        let cfg = NativeConfig {
            workload: r.workload.to_string(),
            timeout: Some(std::time::Duration::from_secs(300)),
            runs: runs.max(5),
            interrupt: interrupt.clone(),
        };
        let native = crate::run(&cfg).map_err(|e| match e {
            NativeError::Spec(e) => format!("{}: {e}", r.workload),
            NativeError::Run(e) => format!("{} natively: {e}", r.workload),
        })?;
        progress(i + 1, rows.len(), r.workload, "simulated");
        let sim = schedlab::run(schedlab::RunConfig {
            machine: schedlab::machine::host::NAME.into(),
            cpus: None,
            policy: policy.clone(),
            workload: r.workload.to_string(),
            seed: 1,
        })
        .map_err(|e| format!("{} simulated: {e}", r.workload))?;
        let (n, s) = (native.result.value, sim.result.value);
        out.push(Row {
            workload: r.workload.to_string(),
            metric: sim.result.metric.clone(),
            unit: sim.result.unit.clone(),
            native: n,
            native_runs: native.native.runs.clone(),
            simulated: s,
            ratio: if n > 0.0 { s / n } else { f64::NAN },
            calibrated: r.calibrated.to_string(),
        });
    }
    Ok(Report {
        rows: out,
        policy,
        machine: schedlab::machine::host::preset()?.description.to_string(),
        target: TARGET,
    })
}

impl Row {
    /// The ratio is within [`TARGET`] of 1.
    pub fn on_target(&self) -> bool {
        ((1.0 - TARGET)..=(1.0 + TARGET)).contains(&self.ratio)
    }
}

impl Report {
    /// Rows outside the target.
    pub fn misses(&self) -> usize {
        self.rows.iter().filter(|r| !r.on_target()).count()
    }

    /// The human table.
    pub fn to_text(&self) -> String {
        let mut o = format!(
            "validate: native (median) | simulated on host under {} | ratio\nhost: {}\n\n",
            self.policy, self.machine
        );
        o += &format!(
            "{:<42} {:>12} {:>12} {:>7}  {:<12} \n",
            "workload", "native", "simulated", "ratio", "unit"
        );
        for r in &self.rows {
            let mark = if r.on_target() { "" } else { "  MISS" };
            o += &format!(
                "{:<42} {:>12.4} {:>12.4} {:>7.3}  {:<12}{mark}\n",
                r.workload,
                r.native,
                r.simulated,
                r.ratio,
                format!("{} {}", r.unit, r.metric)
            );
        }
        o += &format!(
            "\n{} of {} rows within {:.0} % (calibrated rows, whose costs come from their own path: {})\n",
            self.rows.len() - self.misses(),
            self.rows.len(),
            TARGET * 100.0,
            self.rows
                .iter()
                .filter(|r| !r.calibrated.is_empty())
                .map(|r| r.workload.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        o
    }
}
