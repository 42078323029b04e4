//! `schedlab`: the command line. A thin layer over the `schedlab` library: parse flags,
//! build a validated configuration, run, print. Every error but a usage error (clap's own
//! message) is one line on stderr, `schedlab: <what is wrong> (<what is accepted>)`; the
//! exit status follows the kind of error ([`error`]).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use schedlab::policy::POLICIES;
use schedlab::workload::WORKLOADS;
use schedlab::{RunConfig, Simulation};

mod bench;
mod detail;
mod error;
mod native;
mod sweep;

use error::{out, CliError};

/// A laboratory for SMP CPU schedulers: the 2001-2003 Linux schedulers on a modelled
/// multiprocessor, driven by the era's benchmarks.
#[derive(Parser)]
#[command(name = "schedlab", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate one workload under one policy on one machine.
    Run(RunArgs),
    /// List machines, policies, workloads, counters or tables, with parameters, units and defaults.
    List {
        /// What to list.
        what: ListWhat,
        /// `list machines` only: one machine's topology, sched domains and every cost
        /// with its source (a spec: `zen3-2s:nps=4,sockets=1`).
        #[arg(long, value_name = "MACHINE")]
        detail: Option<String>,
        /// With `--detail`: CPUs booted (`maxcpus=`; default all).
        #[arg(long)]
        cpus: Option<usize>,
        /// Output format on stdout (JSON with `--detail` only).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Simulate the published tables and print them side by side with the simulation,
    /// with scores; `--out DIR` also writes report.md, results.json and one SVG per table.
    Reproduce {
        /// Table ids (e.g. V1-reflex-2002 or just V1); default: every table.
        ids: Vec<String>,
        /// Directory for report.md, results.json and the plots.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// Parallel simulations (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Machine-model switches applied to every table's preset, for ablation
        /// (e.g. `bus=off,lock=ticket,coherence=off`; see `schedlab list machines`).
        #[arg(long)]
        model: Option<String>,
        /// Policy options added to every cell of that policy, for ablation:
        /// `NAME:key=value,...` (e.g. `o1-d1:estimator=jsleep`); repeatable. An option a
        /// cell already sets is replaced.
        #[arg(long, value_name = "NAME:OPTIONS")]
        policy_set: Vec<String>,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also write a scheduling trace of chosen cells into DIR (one file per cell,
        /// `TABLE-NN-POLICY-NCPU.perfetto-trace`); the cells are chosen with --trace-cell.
        #[arg(long, value_name = "DIR")]
        trace_dir: Option<std::path::PathBuf>,
        /// A cell to trace: TABLE_ID#N (the table's N-th cell, from 0) or text found in
        /// "TABLE_ID POLICY WORKLOAD cpus=N"; repeatable. Default: every cell selected.
        #[arg(long, value_name = "SELECT")]
        trace_cell: Vec<String>,
        /// Trace format of --trace-dir.
        #[arg(long, value_enum, default_value_t = TraceFormat::Perfetto)]
        trace_format: TraceFormat,
    },
    /// Run the product of a TOML spec's lists (machine, cpus, policy, workload, seeds):
    /// one JSON result per cell in DIR/cells, cells already done skipped, `--shard I/N`
    /// for one part; `--merge` writes DIR/results.csv and DIR/results.parquet.
    Sweep(sweep::SweepArgs),
    /// Run a workload for real on this host: processes, threads, pipes, sockets.
    Native(NativeArgs),
    /// Run the validation set natively and simulated on the `host` preset under eevdf as the
    /// host's release runs it and print native | simulated | ratio per row (`--measure FILE`
    /// first measures this host).
    Validate(ValidateArgs),
    /// Write the reproduction's web page (DIR/index.html) from a results.json that
    /// `reproduce --out` wrote, without rerunning anything.
    Report {
        /// The results.json to draw.
        results: std::path::PathBuf,
        /// Directory for index.html (default: the results' own directory).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Measure the simulator: events/s and wall time for standard runs.
    Bench {
        /// Fewer and smaller runs.
        #[arg(long)]
        quick: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Machine preset (see `schedlab list machines`).
    #[arg(long)]
    machine: String,
    /// CPUs to boot, as `maxcpus=` did (default: all of the preset's).
    #[arg(long)]
    cpus: Option<usize>,
    /// Policy, NAME[:key=value,...] (see `schedlab list policies`).
    #[arg(long)]
    policy: String,
    /// Workload, NAME[:key=value,...] (see `schedlab list workloads`).
    #[arg(long)]
    workload: String,
    /// Seed of the run's random source and initial conditions (each CPU's tick phase,
    /// each task's start offset; docs/model.md).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run N times, with seeds S..S+N-1 (S = --seed); `result.value` is the median and
    /// `result.repeats` lists every run's value, `result.min` and `result.max` the extremes
    /// (the rest of the report is the first run's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: Option<u32>,
    /// Print the host's wall time and events/s to stderr (never part of the result).
    #[arg(long)]
    timing: bool,
    /// Also write the run as a web page: result, counters, latency summary (--latency)
    /// and timeline (--timeline), one self-contained FILE.html.
    #[arg(long, value_name = "FILE.html")]
    html: Option<std::path::PathBuf>,
    #[command(flatten)]
    trace: TraceArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// What to record of a simulated run besides its report.
#[derive(clap::Args, Default)]
struct TraceArgs {
    /// Write a scheduling trace: FILE.perfetto-trace or FILE.pftrace (Perfetto's protobuf:
    /// ui.perfetto.dev) or FILE.txt (ftrace text). Streamed to disk.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Limit the trace and the timeline to simulated START_MS..END_MS (e.g. 10..12).
    #[arg(long, value_name = "START_MS..END_MS")]
    trace_window: Option<String>,
    /// Print a `perf sched latency` summary after the report: per task group (the comm up
    /// to its first `:`) or, with `--latency pid`, per task.
    #[arg(long, value_name = "BY", num_args = 0..=1, default_missing_value = "group")]
    latency: Option<LatencyBy>,
    /// Draw a per-CPU timeline of who ran when (SVG), over --trace-window or the whole run.
    #[arg(long, value_name = "FILE.svg")]
    timeline: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum TraceFormat {
    /// Perfetto protobuf (`.perfetto-trace`).
    Perfetto,
    /// ftrace text (`.txt`).
    Txt,
}

#[derive(Clone, Copy, ValueEnum)]
enum LatencyBy {
    Group,
    Pid,
}

impl TraceArgs {
    fn request(&self) -> Result<schedlab::trace::setup::Request, CliError> {
        use schedlab::trace::{latency::By, setup::Format, Window};
        if let Some(p) = &self.trace {
            Format::of(p).map_err(CliError::Input)?;
        }
        let window = match &self.trace_window {
            Some(w) => Some(Window::parse(w).map_err(CliError::Input)?),
            None => None,
        };
        if window.is_some() && self.trace.is_none() && self.timeline.is_none() {
            return Err(CliError::Input(
                "--trace-window limits a trace or a timeline (accepted: with --trace FILE or --timeline FILE.svg)".into(),
            ));
        }
        Ok(schedlab::trace::setup::Request {
            file: self.trace.clone(),
            window,
            latency: self.latency.map(|b| match b {
                LatencyBy::Group => By::Group,
                LatencyBy::Pid => By::Pid,
            }),
            timeline: self.timeline.clone(),
        })
    }
}

#[derive(clap::Args)]
pub(crate) struct ValidateArgs {
    /// First measure this host (topology, caches, HZ; costs from micro-benchmarks) into
    /// FILE, a host preset, and validate against it. Without it the `host` preset is
    /// $SCHEDLAB_HOST's file, else the shipped data/host.json.
    #[arg(long, value_name = "FILE")]
    measure: Option<std::path::PathBuf>,
    /// Only measure (with --measure): write FILE and stop.
    #[arg(long, requires = "measure")]
    measure_only: bool,
    /// Only the rows whose workload contains this text; alternatives separated by `|` (e.g. `lat_pipe|reflex`).
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
    /// Native repetitions per row (the median is compared; at least 5).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(5..=1000))]
    runs: u32,
    /// Machine-model switches for the simulations (e.g. `tcp_delack=on,lo_queue=end`; see
    /// `schedlab list machines`), to judge a mechanism against the host.
    #[arg(long, value_name = "SWITCHES")]
    model: Option<String>,
    /// Judge issue 43's targets over these `validate --format json` reports (rows, predictions
    /// within 25 %, none outside 2x, hackbench within 25 %, every simulated figure within
    /// 10 % across the reports) and run nothing; exit 1 when a target is missed.
    #[arg(long, value_name = "REPORT.json", num_args = 1..,
          conflicts_with_all = ["measure", "only", "model"])]
    targets: Vec<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(clap::Args)]
struct NativeArgs {
    /// Workload, NAME[:key=value,...] (see `schedlab native --list`).
    workload: Option<String>,
    /// List the native workloads with their parameters and defaults.
    #[arg(long)]
    list: bool,
    /// Stop a run after this many seconds, killing every process it started.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    timeout: Option<f64>,
    /// Repeat the run this many times and report the median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Also run the real tools with equal parameters (rt-tests hackbench, perf bench).
    #[arg(long)]
    compare: bool,
    /// Run the workload (and the compared tools) on these host CPUs only, as `taskset -c`
    /// would: e.g. 0 or 0-1.
    #[arg(long, value_name = "CPUS")]
    pin: Option<String>,
    /// Record the host kernel's scheduler events during the run through tracefs and write
    /// them as FILE.perfetto-trace / FILE.pftrace (Perfetto) or FILE.txt (ftrace text);
    /// where the host does not allow it, one line says what is missing and the run goes on.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ListWhat {
    Machines,
    Policies,
    Workloads,
    Counters,
    Tables,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let e = CliError::Usage(e);
            e.print();
            return e.exit_code();
        }
    };
    let res = match cli.cmd {
        Cmd::Run(a) => run(a),
        Cmd::List {
            what,
            detail,
            cpus,
            format,
        } => list_cmd(what, detail, cpus, format),
        Cmd::Bench { quick, format } => bench::bench(quick, format == Format::Json),
        Cmd::Reproduce {
            ids,
            out,
            jobs,
            model,
            policy_set,
            format,
            trace_dir,
            trace_cell,
            trace_format,
        } => match trace_dir {
            None => reproduce(ids, out, jobs, model, &policy_set, format),
            // Cells and directory are checked before any work starts.
            Some(dir) => chosen_cells(&ids, model.as_deref(), &policy_set, &trace_cell, &dir)
                .and_then(|cells| {
                    reproduce(ids, out.clone(), jobs, model, &policy_set, format)?;
                    let traced = trace_cells(&dir, &cells, trace_format)?;
                    match out {
                        Some(out) => link_traces(&out, &traced),
                        None => Ok(()),
                    }
                }),
        },
        Cmd::Sweep(a) => sweep::sweep(a),
        Cmd::Native(a) => native::native(a),
        Cmd::Validate(a) => native::validate(a),
        Cmd::Report { results, out } => report_page(&results, out),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            e.print();
            e.exit_code()
        }
    }
}

fn run(a: RunArgs) -> Result<(), CliError> {
    let config = RunConfig {
        machine: a.machine.clone(),
        cpus: a.cpus,
        policy: a.policy.clone(),
        workload: a.workload.clone(),
        seed: a.seed,
    };
    if a.repeat.is_some() && a.html.is_some() {
        return Err(CliError::Input(
            "--html draws one run (accepted: --html without --repeat)".into(),
        ));
    }
    // The page's file is checked before the run, not after it.
    if let Some(path) = &a.html {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| {
                CliError::Input(format!(
                    "cannot write --html {}: {e} (accepted: a file this user can create)",
                    path.display()
                ))
            })?;
    }
    if let Some(n) = a.repeat {
        return repeat(config, n, a.format);
    }
    let request = a.trace.request()?;
    let mut sim = Simulation::new(config)?;
    let latency = request.install(&mut sim).map_err(CliError::Input)?;
    let bar = progress_bar();
    let result = sim.run(&mut |t, events| {
        if let Some(b) = &bar {
            b.set_message(format!(
                "simulated {:.3} s, {} M events",
                t as f64 / 1e9,
                events / 1_000_000
            ));
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // The trace is closed even when the run failed: it shows what happened until then.
    let written = sim
        .finish_trace()
        .map_err(|e| CliError::Failed(format!("writing the trace: {e}")))?;
    for w in written.iter().filter(|w| w.bytes > 0) {
        if w.events > 0 {
            eprintln!(
                "schedlab: wrote {} ({:.1} MB, {} events, {} sched_switch)",
                w.what,
                w.bytes as f64 / 1e6,
                w.events,
                w.switches
            );
        } else {
            eprintln!("schedlab: wrote {} ({} KB)", w.what, w.bytes.div_ceil(1000));
        }
    }
    result?;
    let report = sim.report()?;
    if a.timing {
        // Microseconds: a short run takes less than a millisecond.
        let secs = sim.wall().as_secs_f64().max(1e-6);
        eprintln!(
            "schedlab: {:.4} s wall, {:.2} M events/s",
            secs,
            report.sim.events as f64 / secs / 1e6
        );
    }
    let latency = latency.map(|h| h.lock().expect("latency summary").clone());
    if let Some(path) = &a.html {
        let mut v = serde_json::to_value(&report).expect("report serializes");
        if let Some(l) = &latency {
            v["latency"] = serde_json::to_value(l).expect("summary serializes");
        }
        let timeline = a
            .trace
            .timeline
            .as_ref()
            .and_then(|t| std::fs::read_to_string(t).ok());
        let rerun = format!(
            "schedlab run --machine '{}'{} --policy '{}' --workload '{}' --seed {}",
            a.machine,
            a.cpus.map(|c| format!(" --cpus {c}")).unwrap_or_default(),
            a.policy,
            a.workload,
            a.seed
        );
        std::fs::write(
            path,
            schedlab::experiment::html::run_page(&v, &rerun, timeline.as_deref()),
        )
        .map_err(|e| {
            CliError::Input(format!(
                "cannot write --html {}: {e} (accepted: a file this user can create)",
                path.display()
            ))
        })?;
        eprintln!("schedlab: wrote {}", path.display());
    }
    let printed = match (a.format, latency) {
        (Format::Json, None) => out(&format!("{}\n", report.to_json())),
        (Format::Text, None) => out(&report.to_text()),
        (Format::Json, Some(l)) => {
            let mut v = serde_json::to_value(&report).expect("report serializes");
            v["latency"] = serde_json::to_value(&l).expect("summary serializes");
            out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&v).expect("json")
            ))
        }
        (Format::Text, Some(l)) => {
            let stats = schedlab::kernel::schedstat::of_details(report.result.details.as_ref())
                .map(|g| format!("\n{}", schedlab::kernel::schedstat::to_text(&g)))
                .unwrap_or_default();
            out(&format!("{}\n{}{stats}", report.to_text(), l.to_text()))
        }
    };
    printed?;
    // The report is out; a scheduler that ended during the run still fails the command.
    match report.scheduler_exit {
        Some(why) => Err(CliError::Failed(format!(
            "the scheduler ended during the run: {why} (the report shows the run that went on without it)"
        ))),
        None => Ok(()),
    }
}

/// `run --repeat N`: seeds `config.seed ..`, the median as the result, every value listed.
fn repeat(config: RunConfig, n: u32, format: Format) -> Result<(), CliError> {
    let seeds: Vec<u64> = (0..n as u64).map(|i| config.seed.wrapping_add(i)).collect();
    // Every run is checked before any is simulated.
    Simulation::new(config.clone())?;
    let mut first = None;
    let mut values = Vec::new();
    for &seed in &seeds {
        let report = schedlab::run(RunConfig {
            seed,
            ..config.clone()
        })?;
        values.push(report.result.value);
        first.get_or_insert(report);
    }
    let mut report = first.expect("at least one run");
    let median = schedlab::experiment::score::median(values.clone()).unwrap_or(f64::NAN);
    report.result.value = median;
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&report).expect("report serializes");
            v["result"]["repeats"] = serde_json::json!(values);
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            v["result"]["min"] = serde_json::json!(min);
            v["result"]["max"] = serde_json::json!(max);
            out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&v).expect("json")
            ))
        }
        Format::Text => {
            let list: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            out(&format!(
                "{}  repeats     {n} runs, seeds {}..={}: {} (result: the median; min {min}, max {max})\n",
                report.to_text(),
                seeds[0],
                seeds[seeds.len() - 1],
                list.join(" ")
            ))
        }
    }
}

fn reproduce(
    ids: Vec<String>,
    out_dir: Option<std::path::PathBuf>,
    jobs: Option<usize>,
    model: Option<String>,
    policy_set: &[String],
    format: Format,
) -> Result<(), CliError> {
    use schedlab::experiment;
    let tables = chosen_tables(&ids, model.as_deref(), policy_set)?;
    if let Some(j) = jobs {
        if j == 0 {
            return Err(CliError::Input(
                "--jobs 0 is not possible (accepted: 1 or more)".into(),
            ));
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(j)
            .build_global()
            .map_err(|e| CliError::Failed(e.to_string()))?;
    }
    // Every output path is checked before any work starts.
    if let Some(dir) = &out_dir {
        check_writable(dir)?;
    }
    // So is every cell: its machine (with --model), policy and workload, and the limits
    // its workload states, by booting it without running it.
    for t in &tables {
        for (i, c) in t.cells.iter().enumerate() {
            Simulation::new(experiment::config(t, c)).map_err(|e| {
                CliError::Input(format!(
                    "table {} cell {} ({} on {} CPUs, {}): {e}",
                    t.id,
                    i + 1,
                    c.workload,
                    c.cpus,
                    c.policy
                ))
            })?;
        }
    }
    let total: usize = tables.iter().map(|t| t.cells.len()).sum();
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(total as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} cells, {elapsed} elapsed, ~{eta} left",
            )
            .expect("template"),
        );
        b
    });
    // Without a terminal, one line per finished table (logs, CI).
    let left: std::sync::Mutex<Vec<usize>> =
        std::sync::Mutex::new(tables.iter().map(|t| t.cells.len()).collect());
    let names: Vec<(String, usize)> = tables
        .iter()
        .map(|t| (t.id.clone(), t.cells.len()))
        .collect();
    let started = std::time::Instant::now();
    let repeats = std::sync::atomic::AtomicBool::new(false);
    let rep = experiment::report::run_tables(tables, &|done, total, t| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
        } else if let Some(t) = t {
            let mut left = left.lock().expect("progress state");
            left[t] -= 1;
            if left[t] == 0 {
                eprintln!(
                    "schedlab: {} done ({} cells, {:.0} s)",
                    names[t].0,
                    names[t].1,
                    started.elapsed().as_secs_f64()
                );
            }
        } else if !repeats.swap(true, std::sync::atomic::Ordering::Relaxed) {
            eprintln!(
                "schedlab: running seeds 2 and 3 where the seed matters ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // Files first: a reader that stops reading stdout must not cost the report.
    if let Some(dir) = out_dir {
        rep.write(&dir).map_err(CliError::Failed)?;
        eprintln!(
            "schedlab: wrote {}/report.md, results.json and {} plots",
            dir.display(),
            rep.tables.len()
        );
    }
    match format {
        Format::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&rep.json()).expect("json")
        )),
        Format::Text => out(&rep.text()),
    }
}

/// The tables `reproduce` runs: those `ids` name, with `--policy-set` options and the
/// `--model` switches applied (to a cell's own machine too).
fn chosen_tables(
    ids: &[String],
    model: Option<&str>,
    policy_set: &[String],
) -> Result<Vec<schedlab::experiment::Table>, CliError> {
    use schedlab::experiment;
    let mut tables = experiment::select(experiment::all_tables(), ids).map_err(CliError::Input)?;
    for set in policy_set {
        experiment::set_policy_options(&mut tables, set).map_err(CliError::Input)?;
    }
    if let Some(m) = model {
        for t in &mut tables {
            t.machine = format!("{}:{m}", t.machine);
            schedlab::machine::Machine::boot_spec(&t.machine, None)
                .map_err(|e| CliError::Input(e.to_string()))?;
            for c in &mut t.cells {
                if let Some(own) = &mut c.machine {
                    *own = format!("{own}:{m}");
                }
            }
        }
    }
    Ok(tables)
}

/// The cells `reproduce --trace-dir` traces: those of the selected tables that `select`
/// names (all when empty), as the reproduction runs them; `dir` must be writable.
fn chosen_cells(
    ids: &[String],
    model: Option<&str>,
    policy_set: &[String],
    select: &[String],
    dir: &std::path::Path,
) -> Result<Vec<(schedlab::experiment::Table, usize)>, CliError> {
    let tables = chosen_tables(ids, model, policy_set)?;
    let mut cells = Vec::new();
    for t in &tables {
        for (i, c) in t.cells.iter().enumerate() {
            let text = format!("{} {} {} cpus={}", t.id, c.policy, c.workload, c.cpus);
            let by_index = format!("{}#{i}", t.id);
            if select.is_empty() || select.iter().any(|s| *s == by_index || text.contains(s)) {
                cells.push((t.clone(), i));
            }
        }
    }
    if cells.is_empty() {
        return Err(CliError::Input(format!(
            "--trace-cell {}: no cell of the selected tables matches (accepted: TABLE_ID#N or text of \"TABLE_ID POLICY WORKLOAD cpus=N\")",
            select.join(" ")
        )));
    }
    check_writable(dir)?;
    Ok(cells)
}

/// A traced cell: `TABLE#N`, its trace file and its timeline.
type Traced = (String, std::path::PathBuf, std::path::PathBuf);

/// `reproduce --trace-dir`: rerun the chosen cells with a trace and a timeline each (the
/// same seeded runs as the reproduction, so the same results).
fn trace_cells(
    dir: &std::path::Path,
    cells: &[(schedlab::experiment::Table, usize)],
    format: TraceFormat,
) -> Result<Vec<Traced>, CliError> {
    use rayon::prelude::*;
    use schedlab::experiment;
    let ext = match format {
        TraceFormat::Perfetto => "perfetto-trace",
        TraceFormat::Txt => "txt",
    };
    let written: Vec<Result<Traced, String>> = cells
        .par_iter()
        .map(|(t, i)| {
            let (t, i) = (t, *i);
            let c = &t.cells[i];
            let clean = |s: &str| -> String {
                s.chars()
                    .map(|ch| {
                        if ch.is_ascii_alphanumeric() || ch == '-' || ch == '.' {
                            ch
                        } else {
                            '_'
                        }
                    })
                    .collect()
            };
            let name = format!(
                "{}-{i:02}-{}-{}cpu.{ext}",
                clean(&t.id),
                clean(&c.policy),
                c.cpus
            );
            let path = dir.join(&name);
            let timeline = dir.join(name.replace(&format!(".{ext}"), ".timeline.svg"));
            let mut sim = Simulation::new(experiment::config(t, c)).map_err(|e| e.to_string())?;
            let req = schedlab::trace::setup::Request {
                file: Some(path.clone()),
                timeline: Some(timeline.clone()),
                ..Default::default()
            };
            req.install(&mut sim)?;
            let res = sim.run(&mut |_, _| {});
            sim.finish_trace().map_err(|e| e.to_string())?;
            res.map_err(|e| e.to_string())?;
            Ok((format!("{}#{i}", t.id), path, timeline))
        })
        .collect();
    let mut failed = 0;
    let mut traced = Vec::new();
    for w in written {
        match w {
            Ok(t) => {
                eprintln!("schedlab: wrote {} and {}", t.1.display(), t.2.display());
                traced.push(t);
            }
            Err(e) => {
                failed += 1;
                eprintln!("schedlab: trace failed: {e}");
            }
        }
    }
    if failed > 0 {
        return Err(CliError::Failed(format!("{failed} traced cells failed")));
    }
    Ok(traced)
}

/// Record the traced cells' files in `out/results.json` (as paths relative to `out`
/// where they lie under it) and redraw `out/index.html` with links to them.
fn link_traces(out: &std::path::Path, traced: &[Traced]) -> Result<(), CliError> {
    let results = out.join("results.json");
    let text = std::fs::read_to_string(&results)
        .map_err(|e| CliError::Failed(format!("cannot read {}: {e}", results.display())))?;
    let mut json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Failed(format!("{}: {e}", results.display())))?;
    let base = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let rel = |p: &std::path::Path| {
        let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        abs.strip_prefix(&base)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| abs.display().to_string())
    };
    // determinism: the cells in the order they were chosen.
    let mut traces = serde_json::Map::new();
    for (key, trace, timeline) in traced {
        traces.insert(
            key.clone(),
            serde_json::json!({ "perfetto": rel(trace), "timeline": rel(timeline) }),
        );
    }
    json["traces"] = serde_json::Value::Object(traces);
    std::fs::write(
        &results,
        serde_json::to_string_pretty(&json).expect("json") + "\n",
    )
    .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", results.display())))?;
    schedlab::experiment::html::write_reproduction(&results, out).map_err(CliError::Failed)?;
    Ok(())
}

/// `schedlab report RESULTS [--out DIR]`: the reproduction's page from its results.json.
fn report_page(results: &std::path::Path, out: Option<std::path::PathBuf>) -> Result<(), CliError> {
    let dir = out.unwrap_or_else(|| {
        results
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| std::path::PathBuf::from("."), |p| p.to_path_buf())
    });
    let page =
        schedlab::experiment::html::write_reproduction(results, &dir).map_err(CliError::Input)?;
    eprintln!("schedlab: wrote {}", page.display());
    Ok(())
}

/// Refuse an output directory that cannot be created or written, before any work.
pub(crate) fn check_writable(dir: &std::path::Path) -> Result<(), CliError> {
    let bad = |e: std::io::Error| {
        CliError::Input(format!(
            "cannot write to --out {}: {e} (accepted: a directory this user can create or write)",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(bad)?;
    // A probe of this process and call alone: shards of one sweep check the same
    // directory at once (a shared name let one shard delete another's probe).
    static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".schedlab-write-test-{}-{n}", std::process::id()));
    std::fs::write(&probe, b"").map_err(bad)?;
    std::fs::remove_file(&probe).map_err(bad)
}

/// Refuse an output file whose directory cannot be written, before any work (and without
/// leaving an empty file behind).
pub(crate) fn check_writable_file(path: &std::path::Path) -> Result<(), CliError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if path.is_dir() {
        return Err(CliError::Input(format!(
            "cannot write {}: it is a directory (accepted: a file path)",
            path.display()
        )));
    }
    check_writable(dir).map_err(|_| {
        CliError::Input(format!(
            "cannot write {}: its directory is not writable (accepted: a file in a directory this user can create or write)",
            path.display()
        ))
    })
}

/// A spinner on stderr for long runs, only when stderr is a terminal.
pub(crate) fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new_spinner();
    b.enable_steady_tick(Duration::from_millis(200));
    Some(b)
}

/// What a preset's kernels allow: the measured limits, or 2.4.17's and 2.6.0's on its RAM.
fn limits_line(p: &'static schedlab::machine::Preset) -> String {
    use schedlab::kernel::release::Release;
    if p.limits_measured {
        let l = &p.limits;
        return format!(
            "limits as measured: nproc {}, file-max {}",
            l.nproc, l.file_max
        );
    }
    let mut m = schedlab::machine::Machine::boot(p, None).expect("a preset boots whole");
    let mut one = |r: Release| {
        schedlab::kernel::release::boot_limits(&mut m, r);
        let l = &m.limits;
        let low = l
            .kmem_kb
            .map(|kb| format!(", low memory {} MB", kb / 1024))
            .unwrap_or_default();
        format!(
            "{}: nproc {}, file-max {}{low}",
            r.name(),
            l.nproc,
            l.file_max
        )
    };
    format!("{}; {}", one(Release::V2_4(17)), one(Release::V2_6_0))
}

/// `schedlab list`: a listing, or with `--detail` one machine in full.
fn list_cmd(
    what: ListWhat,
    detail: Option<String>,
    cpus: Option<usize>,
    format: Format,
) -> Result<(), CliError> {
    match detail {
        Some(_) if !matches!(what, ListWhat::Machines) => Err(CliError::Input(
            "--detail applies to `list machines` (accepted: schedlab list machines --detail NAME)"
                .into(),
        )),
        Some(spec) => {
            out(&detail::detail(&spec, cpus, format == Format::Json).map_err(CliError::Input)?)
        }
        None if format == Format::Json || cpus.is_some() => Err(CliError::Input(
            "--format json and --cpus apply to `list machines --detail NAME` only".into(),
        )),
        None => out(&list(what)),
    }
}

fn list(what: ListWhat) -> String {
    let mut o = String::new();
    match what {
        ListWhat::Machines => {
            let host = schedlab::machine::host::preset();
            for p in schedlab::machine::catalog::all() {
                o += &format!(
                    "{:<16} {}\n                 {} CPUs, L2 {} KB, {} MB RAM; {}\n",
                    p.name,
                    p.description,
                    p.cpus,
                    p.costs.l2_bytes / 1024,
                    p.limits.ram_mb,
                    limits_line(p)
                );
            }
            if let Err(e) = host {
                o += &format!("{:<16} not available: {e}\n", schedlab::machine::host::NAME);
            }
            o += &format!(
                "\nmodel switches, after the preset name (PRESET:key=value,...):\n{}",
                schedlab::spec::describe(schedlab::machine::MODEL_PARAMS)
            );
        }
        ListWhat::Policies => {
            for p in POLICIES {
                o += &format!(
                    "{:<10} {}\n{}\n",
                    p.name,
                    p.about,
                    schedlab::spec::describe(p.params)
                );
            }
        }
        ListWhat::Workloads => {
            for w in WORKLOADS {
                o += &format!(
                    "{:<10} {} -> {}\n{}\n",
                    w.name,
                    w.about,
                    w.metric,
                    schedlab::spec::describe(w.params)
                );
            }
        }
        ListWhat::Counters => o += COUNTERS,
        ListWhat::Tables => {
            for t in schedlab::experiment::all_tables() {
                o += &format!(
                    "{:<24} {}\n{:<24} {} cells on {}, in {} ({} is better)\n{:<24} source: {}\n",
                    t.id,
                    t.title,
                    "",
                    t.cells.len(),
                    t.machine,
                    t.unit,
                    t.better,
                    "",
                    t.source
                );
            }
        }
    }
    o
}

const COUNTERS: &str = "\
result                      the workload's figure, as the original benchmark reported it
counters.context_switches   context switches, switches to and from idle included (nr_switches): every change
                            of the task a CPU runs; a --trace holds exactly one sched_switch for each
counters.task_switches      switches whose incoming task is not an idle task
counters.migrations         times a policy moved a task to another CPU's run queue
counters.unaffine_switch_pct  % of task switches whose incoming task last ran on another CPU
counters.ipis               reschedule IPIs sent
counters.idle_pct           % of all CPU time spent idle
counters.wakeups            successful try_to_wake_up calls
counters.schedule_calls     schedule() calls
counters.schedule_ns_mean   mean ns in the scheduler's part of schedule(): from requesting the run-queue lock to releasing it
counters.schedule_lock_ns_mean  of which acquiring locks (spinning, the atomic, line transfers)
counters.ticks              timer interrupts handled
counters.syscalls           system calls made
counters.forks              tasks created by fork or clone
counters.affinity_moves     tasks moved off a CPU their new sched_setaffinity mask excludes (only when any were)
counters.tcp_segments       TCP data segments sent over loopback; several writes share one when Nagle holds them (only when any were)
counters.tcp_acks           TCP pure ACKs, sent by reads that empty the receive queue (only when any were)
counters.sock_lock_waits    TCP calls that slept in lock_sock, the socket owned by another task (only when any did)
counters.stream_state_transfers  lines of pipe and socket state (locks, queue heads, counters) pulled from the CPU that wrote them last (only when any were)
counters.skb_remote         AF_UNIX skbs read on another CPU than their writer's, each priced skb_remote_ns
                            (host presets that measured it; only when any were)
counters.skb_cold           AF_UNIX skbs read after their writer's CPU wrote more skb bytes than its L2 holds
                            (host presets that measured skb_cold_ns; only when any were)
counters.skb_depth_ns        ns the depths of the AF_UNIX skbs read cost in all: the host's measured curve
                            skb_depth_ns at each skb's depth (skb_depth=on), else skb_cold_ns per cold skb
counters.skb_page_pulls     reads that freed skbs after another CPU had touched the skb allocator's shared state:
                            each priced by its deepest skb's depth on the host's curve skb_shared_ns (skb_shared=on),
                            else, cold skbs only, skb_page_shared_ns (host presets that measured it; only when any were)
counters.skb_shared_ns      ns those pulls cost in all (only when not zero)
counters.switch_refill_ns   ns switched-in tasks' refills cost by the host's reuse-distance curves task_refill_ns,
                            wake_refill_ns and mm_refill_ns (switch_refill=on; only when not zero)
counters.files_line_transfers  files_struct lines fget (read, write, poll, close) pulled from the CPU that took
                            file_lock last: threads of one mm share it (only when any were)
counters.vm_mask_transfers  switches whose switch_mm pulled a cpu_vm_mask line (the new mm's or the old one's)
                            from another CPU (only when any were)
counters.mm_line_wait_ns_mean  mean ns those transfers waited for the line to finish moving to another CPU
                            (only when any were)
counters.semops             SysV semop calls (only when any were)
counters.semop_sleeps       of which slept (only when any did)
counters.cpu_time.*         % of all CPU time running tasks, in the scheduler, spinning, idle
counters.wakeup_latency.*   from a wake-up (try_to_wake_up, or a new task's first) to the task's switch-in:
                            count, p50_ns and p99_ns (within 0.8 %), max_ns (exact)
counters.locks.NAME         per lock name: acquisitions, contended_pct (acquisitions that spun),
                            hold_ns_mean, wait_ns_mean (spin per acquisition), trylock_failures
counters.policy.*           the policy's own counters (see its module documentation)
sim.simulated_ns            simulated time at the end of the run
sim.events                  events the engine handled
(host wall time is not part of the result: equal runs print equal bytes; see run --timing)
";

#[cfg(test)]
mod tests {
    /// Shards of one sweep check their common `--out` at once (the Ray example runs three
    /// together): every check passes. A shared probe name failed here with ENOENT.
    #[test]
    fn concurrent_checks_of_one_out_directory_all_pass() {
        let dir = std::env::temp_dir().join(format!("schedlab-probe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let d = dir.clone();
                std::thread::spawn(move || {
                    (0..300)
                        .map(|_| super::check_writable(&d).map_err(|e| e.to_string()))
                        .find(Result::is_err)
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), None);
        }
        let left = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(left, 0, "probes left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
