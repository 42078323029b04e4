"""Check a schedlab Perfetto trace against Perfetto's own message definitions.

The Rust tests decode traces with the writer's own messages; this script decodes them with
the `perfetto` package's compiled `perfetto_trace.proto` (the schema the UI and
trace_processor import), so a field number or wire type that differs from Perfetto's shows
up as an unknown or mistyped field. It checks what the UI needs to draw CPU tracks and
thread states: per-CPU ftrace bundles whose timestamps never go back, `sched_switch` with
`prev_state`, every pid that runs named by the process tree or by the `task_newtask` /
`sched_process_fork` that created it, track descriptors for every track event.

usage: python check_schema.py TRACE.perfetto-trace   (exit 0: conforms; 1: what is wrong)
"""
import collections
import sys

from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def unknown_fields(msg, path, out):
    u = UnknownFieldSet(msg)
    if len(u):
        out.append(f"{path}: unknown fields {[f.field_number for f in u]}")
    for fd, val in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        items = val if fd.is_repeated else [val]
        for i, v in enumerate(items):
            unknown_fields(v, f"{path}.{fd.name}[{i}]", out)


def check(path):
    trace = pb.Trace()
    trace.ParseFromString(open(path, "rb").read())
    errors = []
    kinds = collections.Counter()
    named = set()
    running = set()
    tracks = set()
    last_ts = {}
    for i, p in enumerate(trace.packet):
        unknown_fields(p, f"packet[{i}]", errors)
        kinds[p.WhichOneof("data")] += 1
        if p.HasField("process_tree"):
            named.update(q.pid for q in p.process_tree.processes)
            named.update(t.tid for t in p.process_tree.threads)
        if p.HasField("track_descriptor"):
            tracks.add(p.track_descriptor.uuid)
        if p.HasField("track_event") and p.track_event.track_uuid not in tracks:
            errors.append(f"packet[{i}]: track event on undeclared track {p.track_event.track_uuid}")
        if p.HasField("ftrace_events"):
            cpu = p.ftrace_events.cpu
            for e in p.ftrace_events.event:
                kinds["ftrace." + str(e.WhichOneof("event"))] += 1
                if e.timestamp < last_ts.get(cpu, 0):
                    errors.append(f"cpu {cpu}: timestamp {e.timestamp} goes back")
                last_ts[cpu] = e.timestamp
                # New tasks enter the process tree as the kernel reports them.
                if e.HasField("task_newtask"):
                    named.add(e.task_newtask.pid)
                if e.HasField("sched_process_fork"):
                    named.add(e.sched_process_fork.child_pid)
                if e.HasField("sched_switch"):
                    s = e.sched_switch
                    if not s.HasField("prev_state"):
                        errors.append(f"cpu {cpu}: sched_switch at {e.timestamp} without prev_state")
                    running.update(x for x in (s.prev_pid, s.next_pid) if x != 0)
    if kinds["ftrace.sched_switch"] == 0:
        errors.append("no sched_switch events")
    missing = sorted(running - named)
    if missing:
        errors.append(f"pids that run but are not in the process tree: {missing[:10]}")
    for k, v in sorted(kinds.items(), key=lambda kv: str(kv[0])):
        print(f"  {k}: {v}")
    return errors


if __name__ == "__main__":
    errs = check(sys.argv[1])
    for e in errs[:20]:
        print("error:", e, file=sys.stderr)
    sys.exit(1 if errs else 0)
