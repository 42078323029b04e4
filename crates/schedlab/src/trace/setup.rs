//! What a command asks for — a trace file, a window, a latency summary, a timeline — turned
//! into a [`Tracer`] installed on a simulation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::ftrace::FtraceWriter;
use super::latency::{By, Latency, Summary};
use super::perfetto::PerfettoWriter;
use super::timeline::Timeline;
use super::{Output, RunInfo, Tracer, Window};
use crate::Simulation;

/// Trace file formats, by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.perfetto-trace`, `.pftrace`: Perfetto's protobuf.
    Perfetto,
    /// `.txt`: ftrace text.
    Text,
}

impl Format {
    /// The format a path's extension names; `Err` says what is accepted.
    pub fn of(path: &Path) -> Result<Format, String> {
        let name = path.to_string_lossy();
        if name.ends_with(".perfetto-trace") || name.ends_with(".pftrace") {
            Ok(Format::Perfetto)
        } else if name.ends_with(".txt") {
            Ok(Format::Text)
        } else {
            Err(format!(
                "--trace {name}: unknown trace format (accepted: a file ending in .perfetto-trace or .pftrace for Perfetto's protobuf, .txt for ftrace text)"
            ))
        }
    }
}

/// A trace writer for `path`, by its extension.
pub fn file_output(path: &Path, info: RunInfo) -> Result<Box<dyn Output>, String> {
    let fmt = Format::of(path)?;
    let bad = |e: std::io::Error| format!("cannot write the trace {}: {e}", path.display());
    Ok(match fmt {
        Format::Perfetto => Box::new(PerfettoWriter::create(path, info).map_err(bad)?),
        Format::Text => Box::new(FtraceWriter::create(path, info).map_err(bad)?),
    })
}

/// What to record of a run.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// A trace file (format by extension).
    pub file: Option<PathBuf>,
    /// The window of the trace file and the timeline (`None`: the whole run).
    pub window: Option<Window>,
    /// A latency summary, merged so (always over the whole run).
    pub latency: Option<By>,
    /// A timeline SVG.
    pub timeline: Option<PathBuf>,
}

impl Request {
    /// True when nothing is asked (no tracer is installed).
    pub fn is_empty(&self) -> bool {
        self.file.is_none() && self.latency.is_none() && self.timeline.is_none()
    }

    /// Install a tracer with the outputs asked for on `sim` (before its run). Returns the
    /// handle of the latency summary, filled when the trace is finished. Files are
    /// created now: an unwritable path fails here, before any work.
    pub fn install(&self, sim: &mut Simulation) -> Result<Option<Arc<Mutex<Summary>>>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        let k = &sim.k;
        let info = RunInfo {
            cpus: k.nr_cpus(),
            machine: k.machine.preset.name.to_string(),
        };
        let window = self.window.unwrap_or(Window::ALL);
        let mut t = Tracer::new(info.cpus);
        if let Some(p) = &self.file {
            t.add(file_output(p, info.clone())?, window);
        }
        if let Some(p) = &self.timeline {
            let c = sim.config();
            let title = format!(
                "{} under {} on {}, {} CPUs",
                c.workload, c.policy, info.machine, info.cpus
            );
            let tl = Timeline::new(p, info.clone(), window, title);
            // Fail now on an unwritable path.
            std::fs::write(p, b"")
                .map_err(|e| format!("cannot write the timeline {}: {e}", p.display()))?;
            t.add(Box::new(tl), window);
        }
        let mut handle = None;
        if let Some(by) = self.latency {
            let (l, h) = Latency::new(by);
            t.add(Box::new(l), Window::ALL);
            handle = Some(h);
        }
        sim.set_trace(Box::new(t));
        Ok(handle)
    }
}
