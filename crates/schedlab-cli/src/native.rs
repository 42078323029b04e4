//! `schedlab native`: parse, call `schedlab_native`, print.

use std::time::Duration;

use schedlab_native::{compare, runner, trace, NativeConfig, NATIVE_WORKLOADS};

use crate::error::{out, CliError};
use crate::{Format, NativeArgs};

pub(crate) fn native(a: NativeArgs) -> Result<(), CliError> {
    if a.list {
        let mut text = String::new();
        for w in NATIVE_WORKLOADS {
            text += &format!(
                "{:<12} {} -> {}\n{}\n",
                w.name,
                w.about,
                w.metric,
                schedlab::spec::describe(w.params)
            );
        }
        return out(&text);
    }
    let Some(workload) = a.workload else {
        let names: Vec<&str> = NATIVE_WORKLOADS.iter().map(|w| w.name).collect();
        return Err(CliError::Input(format!(
            "native needs a workload, NAME[:key=value,...] (accepted: {})",
            names.join(", ")
        )));
    };
    let timeout = match a.timeout {
        None => None,
        Some(t) if t.is_finite() && t > 0.0 && t < 1e9 => Some(Duration::from_secs_f64(t)),
        Some(t) => {
            return Err(CliError::Input(format!(
                "bad value --timeout {t}: expected a number of seconds > 0"
            )))
        }
    };
    // Validate before installing handlers or forking anything.
    schedlab_native::parse(&workload)?;
    if let Some(list) = &a.pin {
        schedlab_native::host::pin(list).map_err(CliError::Input)?;
    }
    let cfg = NativeConfig {
        workload,
        timeout,
        runs: a.runs as usize,
        interrupt: Some(runner::interrupt_flag()),
    };
    if let Some(p) = &a.trace {
        schedlab::trace::setup::Format::of(p).map_err(CliError::Input)?;
    }
    let session = match &a.trace {
        None => None,
        Some(p) => match trace::probe().and_then(|dir| trace::Session::start(&dir, p)) {
            Ok(s) => Some(s),
            Err(why) => {
                eprintln!("schedlab: no native trace: {why}");
                None
            }
        },
    };
    let report = if a.compare {
        compare::compare(&cfg)
    } else {
        schedlab_native::run(&cfg)
    };
    if let Some(s) = session {
        match s.finish() {
            Ok((w, note)) => {
                eprintln!(
                    "schedlab: wrote {} ({:.1} MB, {} events, {} sched_switch)",
                    w.what,
                    w.bytes as f64 / 1e6,
                    w.events,
                    w.switches
                );
                if let Some(n) = note {
                    eprintln!("schedlab: {n}");
                }
            }
            Err(e) => eprintln!("schedlab: no native trace: {e}"),
        }
    }
    let report = report?;
    match a.format {
        Format::Json => out(&format!("{}\n", report.to_json())),
        Format::Text => out(&report.to_text()),
    }
}

/// The validation rows against the host file just written, run by a fresh `schedlab`:
/// the native rows fork their workloads from it, and a process that has just measured
/// has grown by the micro-benchmarks' buffers and cached thread stacks, which every
/// fork would copy the page tables of and every exit tear down (lat_proc's fork rose
/// from 120 to 320 us that way).
fn validate_in_fresh_process(
    a: &crate::ValidateArgs,
    host: &std::path::Path,
) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("cannot find this schedlab to rerun: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("validate")
        .arg("--runs")
        .arg(a.runs.to_string())
        .arg("--format")
        .arg(match a.format {
            Format::Json => "json",
            Format::Text => "text",
        })
        .env(schedlab::machine::host::ENV, host);
    if let Some(only) = &a.only {
        cmd.arg("--only").arg(only);
    }
    if let Some(model) = &a.model {
        cmd.arg("--model").arg(model);
    }
    let status = cmd
        .status()
        .map_err(|e| CliError::Failed(format!("cannot rerun schedlab validate: {e}")))?;
    // The fresh process has said what went wrong, if anything: leave with its status.
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => std::process::exit(code),
        None => Err(CliError::Failed(
            "the validation run was stopped by a signal".into(),
        )),
    }
}

/// `schedlab validate --targets A.json …`: issue 43's targets over saved reports.
fn validate_targets(files: &[std::path::PathBuf], format: Format) -> Result<(), CliError> {
    let reports = files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .map(|t| (f.display().to_string(), t))
                .map_err(|e| CliError::Input(format!("cannot read {}: {e}", f.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let t = schedlab_native::targets::judge(&reports).map_err(CliError::Input)?;
    match format {
        Format::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&t).expect("the targets serialize")
        ))?,
        Format::Text => out(&t.to_text())?,
    }
    if t.all_hold {
        Ok(())
    } else {
        Err(CliError::Failed("a target is missed".into()))
    }
}

/// `schedlab validate`: measure (if asked), then the validation rows.
pub(crate) fn validate(a: crate::ValidateArgs) -> Result<(), CliError> {
    use schedlab_native::{measure, validate};
    if !a.targets.is_empty() {
        return validate_targets(&a.targets, a.format);
    }
    let rows = validate::select(a.only.as_deref()).map_err(CliError::Input)?;
    if let Some(m) = &a.model {
        // Bad switches are one line before any measuring or native run.
        schedlab::machine::Machine::boot_spec(&format!("piii700-1m:{m}"), None)
            .map_err(|e| CliError::Input(e.to_string()))?;
    }
    if let Some(path) = &a.measure {
        crate::check_writable_file(path)?;
        let command = std::iter::once("schedlab".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" ");
        let opts = measure::MeasureOptions { reps: 15, command };
        let mut tell = |i: usize, n: usize, name: &str| eprintln!("measure [{i}/{n}] {name}");
        let file = measure::measure(&opts, &mut tell).map_err(CliError::Failed)?;
        let text = serde_json::to_string_pretty(&file).expect("a host file serializes") + "\n";
        std::fs::write(path, text)
            .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("schedlab: wrote the host preset {}", path.display());
        if let Some(w) = file.measured.busy_warning() {
            eprintln!("schedlab: warning: {w}; measure again on a quiet machine");
        }
        if a.measure_only {
            return Ok(());
        }
        drop(file);
        return validate_in_fresh_process(&a, path);
    } else {
        let h = schedlab::machine::host::file().map_err(CliError::Input)?;
        let me = schedlab_native::host::host();
        if h.measured.cpu_model != me.cpu_model || h.cpus != me.cpus_online {
            eprintln!(
                "schedlab: the host preset was measured on {} x {} (Linux {}), this is {} x {}: run `schedlab validate --measure FILE` to measure this one",
                h.cpus, h.measured.cpu_model, h.measured.kernel, me.cpus_online, me.cpu_model
            );
        }
    }
    let mut tell = |i: usize, n: usize, w: &str, stage: &str| {
        eprintln!("validate [{i}/{n}] {w}: {stage}");
    };
    let report = validate::validate(
        &rows,
        a.runs as usize,
        a.model.as_deref().unwrap_or(""),
        Some(runner::interrupt_flag()),
        &mut tell,
    )
    .map_err(CliError::Failed)?;
    match a.format {
        Format::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report).expect("the report serializes")
        )),
        Format::Text => out(&report.to_text()),
    }
}
