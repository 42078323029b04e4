//! The report of a native run: the JSON shape of `schedlab run` (`schedlab::report::
//! RunReport`) where it is meaningful — `machine` describes the host, `policy` is
//! `{"name": "host"}`, `counters` holds what the host tells cheaply, and `native` replaces
//! `sim` — plus `compare` when the real tools ran beside it.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use schedlab::report::{round, Metric, Named, WorkloadReport};
use schedlab::spec::Params;

use crate::host::{self, Host, Stat};
use crate::runner::Outcome;
use crate::workload::NativeWorkload;

/// One repetition, as measured.
#[derive(Clone, Debug)]
pub struct OneRun {
    /// The leader's report.
    pub outcome: Outcome,
    /// Supervisor wall time.
    pub wall_ns: u64,
    /// `/proc/stat` change over the repetition (whole host).
    pub stat: Stat,
}

/// Where the host's CPU time went during the run, in % (all processes).
#[derive(Clone, Debug, Serialize)]
pub struct HostCpuTime {
    /// User (and nice) time.
    pub user_pct: f64,
    /// System, irq and softirq time.
    pub system_pct: f64,
    /// Idle and iowait time.
    pub idle_pct: f64,
}

/// Counters of a native run.
#[derive(Clone, Debug, Serialize)]
pub struct NativeCounters {
    /// Context switches on the whole host during the run (`/proc/stat` `ctxt`).
    pub context_switches: u64,
    /// Voluntary switches of the workload's processes (`getrusage`; threads included).
    pub voluntary_switches: u64,
    /// Involuntary switches (preemptions) of the workload's processes.
    pub involuntary_switches: u64,
    /// Processes and threads created on the whole host (`/proc/stat` `processes`).
    pub forks: u64,
    /// % of host CPU time idle.
    pub idle_pct: f64,
    /// Host CPU time by state.
    pub cpu_time: HostCpuTime,
    /// The workload's own counts (messages, bytes, ...).
    pub workload: BTreeMap<String, f64>,
}

/// Facts about the native run (in place of `sim`).
#[derive(Clone, Debug, Serialize)]
pub struct NativeInfo {
    /// Wall time of the reported repetition, from the leader's fork to the last reap.
    pub wall_ms: u64,
    /// The benchmark's timed interval.
    pub timed_ns: u64,
    /// Processes and threads the workload created.
    pub tasks: u64,
    /// User CPU time of the workload's processes, ms.
    pub user_ms: f64,
    /// System CPU time of the workload's processes, ms.
    pub system_ms: f64,
    /// Minor page faults of the workload's processes.
    pub minor_faults: u64,
    /// Result of every repetition, in order (the median is reported).
    pub runs: Vec<f64>,
}

/// One tool's line in the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct ToolRow {
    /// Label.
    pub tool: String,
    /// The exact command.
    pub command: String,
    /// The figure of each repetition.
    pub runs: Vec<f64>,
    /// Median, if it ran.
    pub median: Option<f64>,
    /// Median / native median.
    pub ratio_to_native: Option<f64>,
    /// Why it did not run, or stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The report (`schedlab native --format json`).
#[derive(Clone, Debug, Serialize)]
pub struct NativeReport {
    /// The host.
    pub machine: Host,
    /// CPUs online.
    pub cpus: usize,
    /// Always `{"name": "host", "options": {}}`: the host kernel's own scheduler.
    pub policy: Named,
    /// Workload.
    pub workload: WorkloadReport,
    /// Result (median over the repetitions).
    pub result: Metric,
    /// Counters of the median repetition.
    pub counters: NativeCounters,
    /// Run facts.
    pub native: NativeInfo,
    /// The real tools, when `--compare` ran them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<Vec<ToolRow>>,
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        round(100.0 * a as f64 / b as f64)
    }
}

/// Build the report from the repetitions (at least one).
pub fn build(w: &NativeWorkload, p: &Params, runs: Vec<OneRun>) -> NativeReport {
    assert!(!runs.is_empty(), "at least one repetition");
    let values: Vec<f64> = runs.iter().map(|r| r.outcome.value).collect();
    let med = crate::median(&values);
    // The repetition nearest the median supplies the counters.
    let pick = runs
        .iter()
        .min_by(|a, b| {
            (a.outcome.value - med)
                .abs()
                .total_cmp(&(b.outcome.value - med).abs())
        })
        .expect("non-empty");
    let o = &pick.outcome;
    let h = host::host();
    let s = &pick.stat;
    NativeReport {
        cpus: h.cpus_online,
        machine: h,
        policy: Named {
            name: "host".into(),
            options: BTreeMap::new(),
        },
        workload: WorkloadReport {
            name: w.name.into(),
            params: p.to_map(),
        },
        result: Metric {
            metric: o.metric.clone(),
            value: round(med),
            unit: o.unit.clone(),
            better: o.better.clone(),
            details: o.details.clone(),
            output: o.output.clone(),
        },
        counters: NativeCounters {
            context_switches: s.ctxt,
            voluntary_switches: o.rusage.voluntary_switches,
            involuntary_switches: o.rusage.involuntary_switches,
            forks: s.processes,
            idle_pct: pct(s.idle, s.total),
            cpu_time: HostCpuTime {
                user_pct: pct(s.user, s.total),
                system_pct: pct(s.system, s.total),
                idle_pct: pct(s.idle, s.total),
            },
            workload: o
                .counts
                .iter()
                .map(|(k, v)| (k.clone(), round(*v)))
                .collect(),
        },
        native: NativeInfo {
            wall_ms: pick.wall_ns / 1_000_000,
            timed_ns: o.timed_ns,
            tasks: o.tasks,
            user_ms: round(o.rusage.user_ms),
            system_ms: round(o.rusage.system_ms),
            minor_faults: o.rusage.minor_faults,
            runs: values.iter().map(|v| round(*v)).collect(),
        },
        compare: None,
    }
}

impl NativeReport {
    /// JSON, pretty-printed, keys in a fixed order.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

    /// Text for humans.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let join = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let _ = writeln!(
            o,
            "{} natively on this host ({})",
            self.workload.name, self.machine.description
        );
        let _ = writeln!(o, "  params      {}", join(&self.workload.params));
        let n = &self.native;
        let _ = writeln!(
            o,
            "  result      {} = {} {} ({} is better){}",
            self.result.metric,
            self.result.value,
            self.result.unit,
            self.result.better,
            if n.runs.len() > 1 {
                format!(
                    "; median of {} runs: {}",
                    n.runs.len(),
                    n.runs
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            } else {
                String::new()
            }
        );
        if let Some(out) = &self.result.output {
            for line in out.lines() {
                let _ = writeln!(o, "  output      {line}");
            }
        }
        let c = &self.counters;
        let _ = writeln!(
            o,
            "  switches    workload {} voluntary, {} involuntary; host {} in all",
            c.voluntary_switches, c.involuntary_switches, c.context_switches
        );
        let _ = writeln!(
            o,
            "  host cpu    user {:.1}%  system {:.1}%  idle {:.1}%  ({} forks on the host)",
            c.cpu_time.user_pct, c.cpu_time.system_pct, c.cpu_time.idle_pct, c.forks
        );
        if !c.workload.is_empty() {
            let w: Vec<String> = c.workload.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(o, "  counts      {}", w.join("  "));
        }
        let _ = writeln!(
            o,
            "  run         {} tasks, timed {:.6} s, wall {:.3} s, cpu user {:.0} ms system {:.0} ms",
            n.tasks,
            n.timed_ns as f64 / 1e9,
            n.wall_ms as f64 / 1e3,
            n.user_ms,
            n.system_ms
        );
        if let Some(rows) = &self.compare {
            o += &compare_text(self, rows);
        }
        o
    }
}

/// The `--compare` rows as text, under the native result.
fn compare_text(rep: &NativeReport, rows: &[ToolRow]) -> String {
    let mut o = String::new();
    let n = rep.native.runs.len();
    o += &format!(
        "  compare     median of {n} run{} each, {} ({} is better)\n",
        if n == 1 { "" } else { "s" },
        rep.result.unit,
        rep.result.better
    );
    o += &format!(
        "    {:<28} {:>12}   {}\n",
        "schedlab native", rep.result.value, rep.workload.name
    );
    for r in rows {
        match (r.median, &r.note) {
            (Some(m), note) => {
                o += &format!(
                    "    {:<28} {:>12}   {} (x{:.3} of native){}\n",
                    r.tool,
                    m,
                    r.command,
                    r.ratio_to_native.unwrap_or(0.0),
                    note.as_ref()
                        .map(|s| format!("; stopped: {s}"))
                        .unwrap_or_default()
                )
            }
            (None, Some(note)) => o += &format!("    {:<28} {:>12}   {note}\n", r.tool, "-"),
            (None, None) => o += &format!("    {:<28} {:>12}\n", r.tool, "-"),
        }
    }
    o
}
