//! Perfetto's trace messages, the fields schedlab writes, hand-derived from Perfetto's
//! public protos (`protos/perfetto/trace/…`, field numbers in `shared/spec/traces.md` §2.2
//! and §3.2). The writer encodes with these and the tests decode with the same ones.
//!
//! All fields are proto2 `optional` (`Option<_>`): an optional field is encoded even when
//! it is 0, as Perfetto's importer needs (`cpu`, `timestamp`, `pid`, `prev_pid = 0`).
//! `TracePacket.data` is a oneof in Perfetto; separate optional fields are the same bytes
//! as long as one is set per packet, which the writer keeps to.

#![allow(missing_docs)] // the field names are Perfetto's; traces.md documents them

/// `Trace`: the whole file is this message — `0a <len> <TracePacket>` repeated.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket` (`trace_packet.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(message, optional, tag = "1")]
    pub ftrace_events: Option<FtraceEventBundle>,
    #[prost(message, optional, tag = "2")]
    pub process_tree: Option<ProcessTree>,
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "45")]
    pub system_info: Option<SystemInfo>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `SystemInfo` (`common/system_info.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemInfo {
    #[prost(message, optional, tag = "1")]
    pub utsname: Option<Utsname>,
    #[prost(uint32, optional, tag = "8")]
    pub num_cpus: Option<u32>,
}

/// `Utsname`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Utsname {
    #[prost(string, optional, tag = "1")]
    pub sysname: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub version: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub release: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub machine: Option<String>,
}

/// `ProcessTree` (`ps/process_tree.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessTree {
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<Process>,
    #[prost(message, repeated, tag = "2")]
    pub threads: Vec<Thread>,
}

/// `ProcessTree.Process`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Process {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub ppid: Option<i32>,
    #[prost(string, repeated, tag = "3")]
    pub cmdline: Vec<String>,
}

/// `ProcessTree.Thread`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Thread {
    #[prost(int32, optional, tag = "1")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
}

/// `FtraceEventBundle` (`ftrace/ftrace_event_bundle.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEventBundle {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
}

/// `FtraceEvent` (`ftrace/ftrace_event.proto`): timestamp, pid, then the payload.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(
        oneof = "Event",
        tags = "3, 4, 17, 20, 114, 235, 236, 238, 239, 240, 491"
    )]
    pub event: Option<Event>,
}

/// The `FtraceEvent.event` oneof, the members schedlab writes.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Event {
    #[prost(message, tag = "3")]
    Print(Print),
    #[prost(message, tag = "4")]
    SchedSwitch(SchedSwitch),
    #[prost(message, tag = "17")]
    SchedWakeup(SchedWakeup),
    #[prost(message, tag = "20")]
    SchedWaking(SchedWakeup),
    #[prost(message, tag = "114")]
    SchedWakeupNew(SchedWakeup),
    #[prost(message, tag = "235")]
    TaskNewtask(TaskNewtask),
    #[prost(message, tag = "236")]
    TaskRename(TaskRename),
    #[prost(message, tag = "238")]
    SchedProcessExit(SchedProcessExit),
    #[prost(message, tag = "239")]
    SchedProcessFork(SchedProcessFork),
    #[prost(message, tag = "240")]
    SchedProcessFree(SchedProcessFree),
    #[prost(message, tag = "491")]
    SchedMigrateTask(SchedMigrateTask),
}

/// `PrintFtraceEvent` (`ftrace/ftrace.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Print {
    #[prost(string, optional, tag = "2")]
    pub buf: Option<String>,
}

/// `SchedSwitchFtraceEvent` (`ftrace/sched.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedSwitch {
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// `SchedWakingFtraceEvent`, `SchedWakeupFtraceEvent` and `SchedWakeupNewFtraceEvent`:
/// the same fields (`success = 4` is obsolete and left out).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedWakeup {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

/// `SchedMigrateTaskFtraceEvent` (Android-only `running`, `load` left out).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedMigrateTask {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

/// `SchedProcessForkFtraceEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedProcessFork {
    #[prost(string, optional, tag = "1")]
    pub parent_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub parent_pid: Option<i32>,
    #[prost(string, optional, tag = "3")]
    pub child_comm: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub child_pid: Option<i32>,
}

/// `SchedProcessExitFtraceEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedProcessExit {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub prio: Option<i32>,
}

/// `SchedProcessFreeFtraceEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedProcessFree {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
}

/// `TaskNewtaskFtraceEvent` (`ftrace/task.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskNewtask {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub comm: Option<String>,
    #[prost(uint64, optional, tag = "3")]
    pub clone_flags: Option<u64>,
    #[prost(int32, optional, tag = "4")]
    pub oom_score_adj: Option<i32>,
}

/// `TaskRenameFtraceEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskRename {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub oldcomm: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub newcomm: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub oom_score_adj: Option<i32>,
}

/// `TrackDescriptor` (`track_event/track_descriptor.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `CounterDescriptor` (`track_event/counter_descriptor.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
}

/// `TrackEvent` (`track_event/track_event.proto`): 1 SLICE_BEGIN, 2 SLICE_END, 3 INSTANT,
/// 4 COUNTER.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
}

/// `TrackEvent.type` values.
pub mod track_type {
    pub const SLICE_BEGIN: i32 = 1;
    pub const SLICE_END: i32 = 2;
    pub const INSTANT: i32 = 3;
    pub const COUNTER: i32 = 4;
}
