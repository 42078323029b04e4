//! Checks of a decoded Perfetto trace, the rules of traces.md §2.4: per CPU, timestamps
//! never go backwards and every `sched_switch` switches away from the task the CPU's last
//! switch put there (the first one from `swapper/N` when the trace starts at boot).

use std::collections::BTreeMap;

use super::proto::{Event, Trace};

/// What a trace holds, per the checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// `sched_switch` events.
    pub switches: u64,
    /// ftrace events of every kind.
    pub events: u64,
    /// CPUs with at least one bundle.
    pub cpus: usize,
    /// Threads named in process trees, and by `task_newtask`.
    pub named: u64,
    /// Track-event packets (counters, slices, instants).
    pub track_events: u64,
    /// Events by ftrace event name.
    pub by_kind: BTreeMap<&'static str, u64>,
}

fn kind(e: &Event) -> &'static str {
    match e {
        Event::Print(_) => "print",
        Event::SchedSwitch(_) => "sched_switch",
        Event::SchedWakeup(_) => "sched_wakeup",
        Event::SchedWaking(_) => "sched_waking",
        Event::SchedWakeupNew(_) => "sched_wakeup_new",
        Event::TaskNewtask(_) => "task_newtask",
        Event::TaskRename(_) => "task_rename",
        Event::SchedProcessExit(_) => "sched_process_exit",
        Event::SchedProcessFork(_) => "sched_process_fork",
        Event::SchedProcessFree(_) => "sched_process_free",
        Event::SchedMigrateTask(_) => "sched_migrate_task",
    }
}

/// Check `t`. `from_boot`: the trace starts at the run's start, so each CPU's first switch
/// must leave its idle task. `Err` names the first broken rule.
pub fn check(t: &Trace, from_boot: bool) -> Result<Facts, String> {
    let mut f = Facts::default();
    let mut last_ts: BTreeMap<u32, u64> = BTreeMap::new();
    let mut on_cpu: BTreeMap<u32, i32> = BTreeMap::new();
    let first_is_system_info = t
        .packet
        .first()
        .and_then(|p| p.system_info.as_ref())
        .is_some_and(|s| s.utsname.is_some());
    if !first_is_system_info {
        return Err("the first packet is not SystemInfo with utsname".into());
    }
    for p in &t.packet {
        if let Some(pt) = &p.process_tree {
            f.named += pt.threads.len() as u64;
        }
        if p.track_event.is_some() {
            f.track_events += 1;
        }
        let Some(b) = &p.ftrace_events else { continue };
        let cpu = b.cpu.ok_or("a bundle without cpu")?;
        for e in &b.event {
            let ts = e.timestamp.ok_or("an event without timestamp")?;
            let pid = e.pid.ok_or("an event without pid")?;
            let last = last_ts.entry(cpu).or_insert(0);
            if ts < *last {
                return Err(format!(
                    "cpu {cpu}: time goes backwards from {} ns to {ts} ns",
                    *last
                ));
            }
            *last = ts;
            let Some(ev) = &e.event else {
                return Err(format!("cpu {cpu} at {ts} ns: an event without payload"));
            };
            f.events += 1;
            *f.by_kind.entry(kind(ev)).or_default() += 1;
            match ev {
                Event::SchedSwitch(s) => {
                    f.switches += 1;
                    let prev = s.prev_pid.ok_or("sched_switch without prev_pid")?;
                    let next = s.next_pid.ok_or("sched_switch without next_pid")?;
                    let state = s.prev_state.ok_or("sched_switch without prev_state")?;
                    if !(0..0x200).contains(&state) {
                        return Err(format!("cpu {cpu} at {ts} ns: prev_state {state:#x}"));
                    }
                    if pid as i32 != prev {
                        return Err(format!(
                            "cpu {cpu} at {ts} ns: sched_switch by pid {pid} has prev_pid {prev}"
                        ));
                    }
                    match on_cpu.get(&cpu) {
                        Some(&was) if was != prev => {
                            return Err(format!(
                                "cpu {cpu} at {ts} ns: switch from pid {prev}, but the last switch put pid {was} there"
                            ))
                        }
                        None if from_boot && prev != 0 => {
                            return Err(format!(
                                "cpu {cpu} at {ts} ns: the first switch leaves pid {prev}, not swapper/{cpu}"
                            ))
                        }
                        _ => {}
                    }
                    on_cpu.insert(cpu, next);
                }
                Event::TaskNewtask(_) => f.named += 1,
                _ => {}
            }
        }
    }
    f.cpus = last_ts.len();
    Ok(f)
}
