//! Per-task scheduler statistics, the fields of `/proc/PID/sched` that scheduler reports
//! quote (`kernel/sched/debug.c` `proc_sched_show_task`, `struct sched_statistics`), kept
//! for every task of every run under every policy, and summed per task group (the comm
//! up to its first `:`, as `perf sched latency` merges) for the report.
//!
//! Where each is counted, as the kernel counts it:
//! - `nr_switches` = `nr_voluntary_switches` + `nr_involuntary_switches`, at each switch
//!   away from the task (`__schedule`: voluntary when the task is no longer runnable —
//!   it blocked or exited — involuntary when it was preempted or yielded);
//! - `nr_migrations`: each change of the task's CPU (`set_task_cpu`);
//! - `nr_wakeups` and its `_sync`, `_migrate` (placed on another CPU than its last),
//!   `_local` / `_remote` (on the waker's CPU or not) parts: each `try_to_wake_up` that
//!   woke the task (`ttwu_stat`); forks are not wake-ups;
//! - `nr_wakeups_affine_attempts` / `nr_wakeups_affine`: the fair class's `wake_affine`
//!   asked, and chose the waker's CPU;
//! - `wait_sum`, `wait_max`, `wait_count`: time runnable but not running, from a wake-up,
//!   a fork or a preemption to the switch-in (`update_stats_wait_end_fair`);
//! - `nr_wakeup_preempt_attempts` / `nr_wakeup_preempts`: the wake-up asked the class
//!   whether to preempt a running task (`wakeup_preempt` on a CPU not idle), and the class
//!   rescheduled it.
//!
//! Invariant: a task's `nr_wakeups` = local + remote; its `wait_count` ≤ the times it was
//! switched in.

use std::collections::BTreeMap;

use crate::engine::Time;

/// One task's counters (`struct sched_statistics` and the `task_struct` switch counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchedStat {
    /// Switches away from the task.
    pub nr_switches: u64,
    /// Of those, the task had blocked or exited (`nvcsw`).
    pub nr_voluntary_switches: u64,
    /// Of those, the task was still runnable: preempted or yielding (`nivcsw`).
    pub nr_involuntary_switches: u64,
    /// CPU changes (`se.nr_migrations`).
    pub nr_migrations: u64,
    /// Wake-ups.
    pub nr_wakeups: u64,
    /// Wake-ups by a waker about to sleep (`WF_SYNC`).
    pub nr_wakeups_sync: u64,
    /// Wake-ups placed on another CPU than the task's last.
    pub nr_wakeups_migrate: u64,
    /// Wake-ups placed on the waker's CPU.
    pub nr_wakeups_local: u64,
    /// Wake-ups placed on another CPU than the waker's.
    pub nr_wakeups_remote: u64,
    /// `wake_affine` asked (fair class only).
    pub nr_wakeups_affine_attempts: u64,
    /// `wake_affine` chose the waker's CPU.
    pub nr_wakeups_affine: u64,
    /// Wake-ups that asked the class to preempt a running task.
    pub nr_wakeup_preempt_attempts: u64,
    /// Of those, the class rescheduled the running task.
    pub nr_wakeup_preempts: u64,
    /// Time runnable and waiting, ns.
    pub wait_sum: Time,
    /// The longest wait, ns.
    pub wait_max: Time,
    /// Waits ended by a switch-in.
    pub wait_count: u64,
    /// When the current wait began ([`NOT_WAITING`] when none).
    #[serde(skip)]
    pub waiting_since: Time,
}

/// [`SchedStat::waiting_since`] of a task not waiting.
pub const NOT_WAITING: Time = Time::MAX;

impl SchedStat {
    /// A new task's: not waiting.
    pub fn new() -> SchedStat {
        SchedStat {
            waiting_since: NOT_WAITING,
            ..SchedStat::default()
        }
    }

    /// The task became runnable without running (woken, forked, preempted) at `now`.
    #[inline]
    pub fn wait_start(&mut self, now: Time) {
        if self.waiting_since == NOT_WAITING {
            self.waiting_since = now;
        }
    }

    /// The task was switched in at `now`.
    #[inline]
    pub fn wait_end(&mut self, now: Time) {
        if self.waiting_since != NOT_WAITING {
            let w = now.saturating_sub(self.waiting_since);
            self.wait_sum += w;
            self.wait_max = self.wait_max.max(w);
            self.wait_count += 1;
            self.waiting_since = NOT_WAITING;
        }
    }

    /// Switched away from: `runnable` when preempted or yielding.
    #[inline]
    pub fn switched_out(&mut self, runnable: bool, now: Time) {
        self.nr_switches += 1;
        if runnable {
            self.nr_involuntary_switches += 1;
            self.wait_start(now);
        } else {
            self.nr_voluntary_switches += 1;
        }
    }

    fn add(&mut self, o: &SchedStat) {
        self.nr_switches += o.nr_switches;
        self.nr_voluntary_switches += o.nr_voluntary_switches;
        self.nr_involuntary_switches += o.nr_involuntary_switches;
        self.nr_migrations += o.nr_migrations;
        self.nr_wakeups += o.nr_wakeups;
        self.nr_wakeups_sync += o.nr_wakeups_sync;
        self.nr_wakeups_migrate += o.nr_wakeups_migrate;
        self.nr_wakeups_local += o.nr_wakeups_local;
        self.nr_wakeups_remote += o.nr_wakeups_remote;
        self.nr_wakeups_affine_attempts += o.nr_wakeups_affine_attempts;
        self.nr_wakeups_affine += o.nr_wakeups_affine;
        self.nr_wakeup_preempt_attempts += o.nr_wakeup_preempt_attempts;
        self.nr_wakeup_preempts += o.nr_wakeup_preempts;
        self.wait_sum += o.wait_sum;
        self.wait_max = self.wait_max.max(o.wait_max);
        self.wait_count += o.wait_count;
    }
}

/// One task group's sums (`wait_max`: the largest of its tasks').
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupStat {
    /// The group: the comm up to its first `:`.
    pub group: String,
    /// Tasks in it.
    pub tasks: u64,
    /// CPU time of its tasks, ns.
    pub runtime_ns: Time,
    /// The sums.
    #[serde(flatten)]
    pub stat: SchedStat,
}

/// The task group of a comm, as `perf sched latency` merges them.
pub fn group_of(comm: &str) -> &str {
    comm.split(':').next().unwrap_or(comm)
}

/// Per task group, in name order, from each task's (comm, CPU time, statistics); tasks
/// whose programs never named them (nor their ancestors') are `unnamed`'s, the
/// workload's name. The caller leaves the idle tasks out.
pub fn by_group<'a>(
    tasks: impl IntoIterator<Item = (Option<&'a str>, Time, &'a SchedStat)>,
    unnamed: &'a str,
) -> Vec<GroupStat> {
    let mut groups: BTreeMap<&str, GroupStat> = BTreeMap::new();
    for (comm, runtime_ns, stat) in tasks {
        let name = group_of(comm.unwrap_or(unnamed));
        let g = groups.entry(name).or_insert_with(|| GroupStat {
            group: name.to_string(),
            tasks: 0,
            runtime_ns: 0,
            stat: SchedStat::new(),
        });
        g.tasks += 1;
        g.runtime_ns += runtime_ns;
        g.stat.add(stat);
    }
    groups.into_values().collect()
}

/// The groups of a report's `result.details.schedstats`, if it has them.
pub fn of_details(details: Option<&serde_json::Value>) -> Option<Vec<GroupStat>> {
    serde_json::from_value(details?.get("schedstats")?.clone()).ok()
}

/// The groups as a table, one row per group, `/proc/PID/sched`'s names shortened.
pub fn to_text(groups: &[GroupStat]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let rule = format!(" {}\n", "-".repeat(132));
    o += &rule;
    o += "  Task group        | tasks | switches  vol/invol | migr   | wakeups  local remote  sync | affine/tried | preempt/tried | wait avg ms  max ms\n";
    o += &rule;
    for g in groups {
        let s = &g.stat;
        let avg = s.wait_sum as f64 / s.wait_count.max(1) as f64 / 1e6;
        let _ = writeln!(
            o,
            "  {:<18}|{:6} |{:9} {:5}/{:<5} |{:7} |{:8} {:6} {:6} {:5} | {:5}/{:<6} | {:6}/{:<6} |{:10.3} {:8.3}",
            g.group,
            g.tasks,
            s.nr_switches,
            s.nr_voluntary_switches,
            s.nr_involuntary_switches,
            s.nr_migrations,
            s.nr_wakeups,
            s.nr_wakeups_local,
            s.nr_wakeups_remote,
            s.nr_wakeups_sync,
            s.nr_wakeups_affine,
            s.nr_wakeups_affine_attempts,
            s.nr_wakeup_preempts,
            s.nr_wakeup_preempt_attempts,
            avg,
            s.wait_max as f64 / 1e6,
        );
    }
    o += &rule;
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_runs_from_runnable_to_switch_in_and_counts_once() {
        let mut s = SchedStat::new();
        s.wait_start(100);
        s.wait_start(150); // already waiting: the first instant stands
        s.wait_end(400);
        s.wait_end(500); // not waiting: nothing
        assert_eq!((s.wait_sum, s.wait_max, s.wait_count), (300, 300, 1));
        s.switched_out(true, 1_000);
        s.wait_end(1_050);
        s.switched_out(false, 2_000);
        s.wait_end(9_000); // a blocked task's switch-in after a wake-up it never had
        assert_eq!((s.wait_sum, s.wait_max, s.wait_count), (350, 300, 2));
        assert_eq!(
            (
                s.nr_switches,
                s.nr_involuntary_switches,
                s.nr_voluntary_switches
            ),
            (2, 1, 1)
        );
    }

    #[test]
    fn groups_merge_by_comm_up_to_the_colon() {
        assert_eq!(group_of("sender:3"), "sender");
        assert_eq!(group_of("hackbench"), "hackbench");
        let mut a = SchedStat::new();
        a.switched_out(false, 0);
        a.wait_start(10);
        a.wait_end(40);
        let mut b = SchedStat::new();
        b.switched_out(true, 0);
        b.wait_end(90);
        let g = by_group(
            [
                (Some("sender:1"), 5, &a),
                (Some("sender:2"), 7, &b),
                (None, 1, &SchedStat::new()),
            ],
            "hackbench",
        );
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].group.as_str(), g[0].tasks), ("hackbench", 1));
        let s = &g[1];
        assert_eq!((s.group.as_str(), s.tasks, s.runtime_ns), ("sender", 2, 12));
        assert_eq!(
            (s.stat.nr_switches, s.stat.wait_sum, s.stat.wait_max),
            (2, 120, 90)
        );
    }
}
