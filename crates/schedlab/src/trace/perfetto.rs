//! The Perfetto protobuf trace (traces.md §2, §3.2), streamed: one `FtraceEventBundle`
//! per CPU per chunk of at most [`CHUNK`] events, written as soon as it fills, so memory
//! stays bounded. Layout: `SystemInfo` first (Linux 6.12 so Perfetto reads `prev_state`
//! with 6.x values), the process tree at the window's start, then the CPUs' bundles and
//! the track-event packets of the simulator-only facts: spinning on a lock (a slice on the
//! track `cpuN lock spin`), reschedule IPIs (instants on `cpuN IPIs`, the target's track)
//! and run-queue lengths (counters `rq[N] nr_running`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use prost::Message;

use super::proto::{self, track_type, Event, FtraceEvent, TracePacket};
use super::{Kind, Output, OutputSummary, Rec, RunInfo, TaskInfo};
use crate::engine::Time;

/// Events per bundle before it is written.
pub const CHUNK: usize = 4096;

/// `clone_flags` of a thread (`CLONE_VM|FS|FILES|SIGHAND|THREAD`) and of a fork (`SIGCHLD`).
const CLONE_THREAD_FLAGS: u64 = 0x0001_0f00;
const FORK_FLAGS: u64 = 0x11;

/// A stable 64-bit id for a track name (FNV-1a).
pub fn track_uuid(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The Perfetto writer.
pub struct PerfettoWriter {
    path: PathBuf,
    w: BufWriter<File>,
    info: RunInfo,
    bundles: Vec<Vec<FtraceEvent>>,
    /// Track-event packets, encoded, waiting to be written with the next flush.
    tracks: Vec<u8>,
    /// Track-event packets in `tracks`.
    track_packets: usize,
    /// Per CPU: the names of its tracks (run queue, lock spin, IPIs), and whether each
    /// was described yet.
    tracks_of: Vec<[(String, bool); 3]>,
    /// Slice names of lock waits, by lock.
    waits: std::collections::BTreeMap<&'static str, String>,
    buf: Vec<u8>,
    bytes: u64,
    events: u64,
    switches: u64,
}

fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}

fn i(x: impl TryInto<i32>) -> Option<i32> {
    Some(x.try_into().unwrap_or(i32::MAX))
}

impl PerfettoWriter {
    /// A writer to `path` (created now).
    pub fn create(path: &Path, info: RunInfo) -> std::io::Result<PerfettoWriter> {
        let f = File::create(path)?;
        Ok(PerfettoWriter {
            path: path.to_path_buf(),
            w: BufWriter::with_capacity(1 << 16, f),
            bundles: vec![Vec::new(); info.cpus],
            tracks: Vec::with_capacity(1 << 16),
            track_packets: 0,
            tracks_of: (0..info.cpus)
                .map(|c| {
                    [
                        (format!("rq[{c}] nr_running"), false),
                        (format!("cpu{c} lock spin"), false),
                        (format!("cpu{c} IPIs"), false),
                    ]
                })
                .collect(),
            waits: Default::default(),
            info,
            buf: Vec::with_capacity(1 << 16),
            bytes: 0,
            events: 0,
            switches: 0,
        })
    }

    fn packet(&mut self, p: TracePacket) {
        self.buf.clear();
        // `Trace.packet` (field 1, LEN): the file is a run of these.
        self.buf.push(0x0a);
        p.encode_length_delimited(&mut self.buf)
            .expect("a Vec grows");
        self.bytes += self.buf.len() as u64;
        // An I/O error here is reported by `finish` (BufWriter keeps it).
        let _ = self.w.write_all(&self.buf);
    }

    fn flush_cpu(&mut self, cpu: usize) {
        if self.bundles[cpu].is_empty() {
            return;
        }
        let event = std::mem::take(&mut self.bundles[cpu]);
        self.packet(TracePacket {
            ftrace_events: Some(proto::FtraceEventBundle {
                cpu: Some(cpu as u32),
                event,
            }),
            ..Default::default()
        });
        self.bundles[cpu] = Vec::with_capacity(CHUNK);
    }

    fn flush_tracks(&mut self) {
        self.bytes += self.tracks.len() as u64;
        let _ = self.w.write_all(&self.tracks);
        self.tracks.clear();
        self.track_packets = 0;
    }

    /// Encode a track-event packet into the waiting ones.
    fn track_packet(&mut self, p: &TracePacket) {
        self.tracks.push(0x0a);
        p.encode_length_delimited(&mut self.tracks)
            .expect("a Vec grows");
        self.track_packets += 1;
    }

    fn ftrace(&mut self, cpu: usize, ts: Time, pid: u32, ev: Event) {
        self.events += 1;
        let b = &mut self.bundles[cpu];
        b.push(FtraceEvent {
            timestamp: Some(ts),
            pid: Some(pid),
            event: Some(ev),
        });
        if b.len() >= CHUNK {
            self.flush_cpu(cpu);
        }
    }

    /// A track-event packet on track `which` (0 run queue, 1 lock spin, 2 IPIs) of `cpu`,
    /// described on first use.
    fn track(&mut self, ts: Time, cpu: usize, which: usize, ev: proto::TrackEvent) {
        let (name, described) = &mut self.tracks_of[cpu][which];
        let uuid = track_uuid(name);
        if !*described {
            *described = true;
            let name = Some(name.clone());
            self.track_packet(&TracePacket {
                trusted_packet_sequence_id: Some(1),
                track_descriptor: Some(proto::TrackDescriptor {
                    uuid: Some(uuid),
                    name,
                    counter: (which == 0).then_some(proto::CounterDescriptor { unit: Some(2) }),
                }),
                ..Default::default()
            });
        }
        self.events += 1;
        self.track_packet(&TracePacket {
            timestamp: Some(ts),
            trusted_packet_sequence_id: Some(1),
            track_event: Some(proto::TrackEvent {
                track_uuid: Some(uuid),
                ..ev
            }),
            ..Default::default()
        });
        if self.track_packets >= CHUNK {
            self.flush_tracks();
        }
    }
}

fn wakeup(p: &TaskInfo, target: usize) -> proto::SchedWakeup {
    proto::SchedWakeup {
        comm: s(&p.comm),
        pid: i(p.pid),
        prio: Some(p.prio),
        target_cpu: i(target),
    }
}

impl Output for PerfettoWriter {
    fn begin(&mut self, ts: Time, tasks: &[&TaskInfo], _running: &[&TaskInfo]) {
        self.packet(TracePacket {
            trusted_packet_sequence_id: Some(1),
            sequence_flags: Some(1),
            system_info: Some(proto::SystemInfo {
                utsname: Some(proto::Utsname {
                    sysname: s("Linux"),
                    version: s("#1 SMP schedlab"),
                    release: s("6.12.0-schedlab"),
                    machine: s(&self.info.machine),
                }),
                num_cpus: Some(self.info.cpus as u32),
            }),
            ..Default::default()
        });
        let processes = tasks
            .iter()
            .filter(|t| t.pid == t.tgid)
            .map(|t| proto::Process {
                pid: i(t.pid),
                ppid: i(t.ppid),
                cmdline: vec![t.comm.clone()],
            })
            .collect();
        let threads = tasks
            .iter()
            .map(|t| proto::Thread {
                tid: i(t.pid),
                name: s(&t.comm),
                tgid: i(t.tgid),
            })
            .collect();
        self.packet(TracePacket {
            timestamp: Some(ts),
            trusted_packet_sequence_id: Some(1),
            process_tree: Some(proto::ProcessTree { processes, threads }),
            ..Default::default()
        });
    }

    fn record(&mut self, r: &Rec<'_>) {
        let (cpu, ts, pid) = (r.cpu, r.ts, r.by.pid);
        let ev = match r.kind {
            Kind::Switch {
                prev,
                prev_state,
                next,
            } => {
                self.switches += 1;
                Event::SchedSwitch(proto::SchedSwitch {
                    prev_comm: s(&prev.comm),
                    prev_pid: i(prev.pid),
                    prev_prio: Some(prev.prio),
                    prev_state: Some(prev_state),
                    next_comm: s(&next.comm),
                    next_pid: i(next.pid),
                    next_prio: Some(next.prio),
                })
            }
            Kind::Waking { p, target } => Event::SchedWaking(wakeup(p, target)),
            Kind::Wakeup { p, target, new } => {
                if new {
                    Event::SchedWakeupNew(wakeup(p, target))
                } else {
                    Event::SchedWakeup(wakeup(p, target))
                }
            }
            Kind::Migrate { p, from, to } => Event::SchedMigrateTask(proto::SchedMigrateTask {
                comm: s(&p.comm),
                pid: i(p.pid),
                prio: Some(p.prio),
                orig_cpu: i(from),
                dest_cpu: i(to),
            }),
            Kind::Fork { child, thread } => {
                let flags = if thread {
                    CLONE_THREAD_FLAGS
                } else {
                    FORK_FLAGS
                };
                self.ftrace(
                    cpu,
                    ts,
                    pid,
                    Event::TaskNewtask(proto::TaskNewtask {
                        pid: i(child.pid),
                        comm: s(&child.comm),
                        clone_flags: Some(flags),
                        oom_score_adj: Some(0),
                    }),
                );
                Event::SchedProcessFork(proto::SchedProcessFork {
                    parent_comm: s(&r.by.comm),
                    parent_pid: i(r.by.pid),
                    child_comm: s(&child.comm),
                    child_pid: i(child.pid),
                })
            }
            Kind::Rename { p, old } => Event::TaskRename(proto::TaskRename {
                pid: i(p.pid),
                oldcomm: s(old),
                newcomm: s(&p.comm),
                oom_score_adj: Some(0),
            }),
            Kind::Exit { p } => Event::SchedProcessExit(proto::SchedProcessExit {
                comm: s(&p.comm),
                pid: i(p.pid),
                tgid: i(p.tgid),
                prio: Some(p.prio),
            }),
            Kind::Free { p } => Event::SchedProcessFree(proto::SchedProcessFree {
                comm: s(&p.comm),
                pid: i(p.pid),
                prio: Some(p.prio),
            }),
            Kind::SpinBegin { lock } => {
                let name = self
                    .waits
                    .entry(lock)
                    .or_insert_with(|| format!("wait:{lock}"))
                    .clone();
                let ev = proto::TrackEvent {
                    r#type: Some(track_type::SLICE_BEGIN),
                    name: Some(name),
                    ..Default::default()
                };
                return self.track(ts, cpu, 1, ev);
            }
            Kind::SpinEnd { .. } => {
                let ev = proto::TrackEvent {
                    r#type: Some(track_type::SLICE_END),
                    ..Default::default()
                };
                return self.track(ts, cpu, 1, ev);
            }
            Kind::Ipi { target } => {
                let ev = proto::TrackEvent {
                    r#type: Some(track_type::INSTANT),
                    name: Some(format!("resched IPI from cpu{cpu}")),
                    ..Default::default()
                };
                return self.track(ts, target, 2, ev);
            }
            Kind::Dsq { p, op, dsq } => {
                let ev = proto::TrackEvent {
                    r#type: Some(track_type::INSTANT),
                    name: Some(format!("scx {op} {}:{} dsq 0x{dsq:x}", p.comm, p.pid)),
                    ..Default::default()
                };
                return self.track(ts, cpu, 2, ev);
            }
            Kind::RqLen { rq, n } => {
                let ev = proto::TrackEvent {
                    r#type: Some(track_type::COUNTER),
                    counter_value: Some(i64::from(n)),
                    ..Default::default()
                };
                return self.track(ts, rq, 0, ev);
            }
        };
        self.ftrace(cpu, ts, pid, ev);
    }

    fn finish(&mut self, _end: Time) -> std::io::Result<OutputSummary> {
        for c in 0..self.bundles.len() {
            self.flush_cpu(c);
        }
        self.flush_tracks();
        self.w.flush()?;
        Ok(OutputSummary {
            what: self.path.display().to_string(),
            bytes: self.bytes,
            events: self.events,
            switches: self.switches,
        })
    }
}

/// Decode a Perfetto trace file written by [`PerfettoWriter`] (or any trace using the
/// same messages; unknown fields are skipped).
pub fn decode(bytes: &[u8]) -> Result<proto::Trace, String> {
    proto::Trace::decode(bytes).map_err(|e| format!("not a Perfetto trace: {e}"))
}
