//! Per-task schedstats (`kernel/schedstat.rs`), summed per task group in
//! `result.details.schedstats`: under every policy they agree with the run's own counters,
//! and their parts add up.

use schedlab::kernel::schedstat::{of_details, GroupStat};
use schedlab::report::{run, RunReport};
use schedlab::sim::RunConfig;

const POLICIES: &[&str] = &[
    "fifo",
    "linux-2.4",
    "mq",
    "mq-pool",
    "hamq",
    "o1-d1",
    "o1-g1",
    "o1-2.6",
    "cfs",
    "eevdf",
];

fn report(policy: &str, workload: &str) -> RunReport {
    run(RunConfig {
        machine: "piii700-1m".into(),
        cpus: Some(4),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    })
    .unwrap_or_else(|e| panic!("{policy}: {e}"))
}

fn groups(r: &RunReport) -> Vec<GroupStat> {
    of_details(r.result.details.as_ref()).expect("every run reports schedstats")
}

fn sum(g: &[GroupStat], f: impl Fn(&GroupStat) -> u64) -> u64 {
    g.iter().map(f).sum()
}

#[test]
fn schedstats_add_up_and_agree_with_the_run_counters_under_every_policy() {
    for p in POLICIES {
        let r = report(p, "hackbench:groups=2,loops=10,fds=5");
        let g = groups(&r);
        let names: Vec<&str> = g.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(names, ["hackbench", "receiver", "sender"], "{p}");
        assert_eq!(g[1].tasks, 10, "{p}: receivers");
        assert_eq!(
            sum(&g, |g| g.stat.nr_migrations),
            r.counters.migrations,
            "{p}: every set_task_cpu that moved a task"
        );
        for x in &g {
            let s = &x.stat;
            assert_eq!(
                s.nr_switches,
                s.nr_voluntary_switches + s.nr_involuntary_switches,
                "{p}"
            );
            assert_eq!(
                s.nr_wakeups,
                s.nr_wakeups_local + s.nr_wakeups_remote,
                "{p}"
            );
            assert!(s.nr_wakeups_migrate <= s.nr_wakeups, "{p}");
            assert!(s.nr_wakeup_preempts <= s.nr_wakeup_preempt_attempts, "{p}");
            assert!(s.nr_wakeups_affine <= s.nr_wakeups_affine_attempts, "{p}");
            assert!(s.wait_max <= s.wait_sum, "{p}");
            // Every task of hackbench blocks at least once: in the barrier.
            assert!(s.nr_voluntary_switches >= x.tasks, "{p}: {}", x.group);
        }
        // Every switch is away from a task or from an idle task.
        assert!(
            sum(&g, |g| g.stat.nr_switches) <= r.counters.context_switches,
            "{p}"
        );
    }
}

#[test]
fn the_fair_class_s_own_counters_are_the_tasks_sums() {
    for p in ["cfs", "eevdf"] {
        // A shared LLC, where wake_affine is tried: on a machine whose LLC is each CPU's
        // own, wake_wide is true for any pair of tasks with a flip each (the launcher
        // gives every task some).
        let r = run(RunConfig {
            machine: "haswell-4c".into(),
            cpus: Some(4),
            policy: p.into(),
            workload: "hackbench:groups=2,loops=10,fds=5".into(),
            seed: 1,
        })
        .unwrap();
        let g = groups(&r);
        let policy = &r.counters.policy;
        assert_eq!(
            sum(&g, |g| g.stat.nr_wakeups_affine) as f64,
            policy["wake_affine"],
            "{p}"
        );
        assert!(sum(&g, |g| g.stat.nr_wakeups_affine_attempts) > 0, "{p}");
        if p == "eevdf" {
            assert_eq!(
                sum(&g, |g| g.stat.nr_wakeup_preempts) as f64,
                policy["wakeup_preemptions"],
                "{p}"
            );
        }
    }
    // Classes without wake_affine never count it.
    let g = groups(&report("o1-2.6", "hackbench:groups=2,loops=10,fds=5"));
    assert_eq!(sum(&g, |g| g.stat.nr_wakeups_affine_attempts), 0);
}

#[test]
fn a_workload_s_own_details_keep_their_place_beside_the_schedstats() {
    let r = report("eevdf", "rtapp:@periodic");
    let d = r.result.details.as_ref().unwrap();
    assert!(d["threads"].is_array(), "{d}");
    assert!(d["schedstats"].is_array(), "{d}");
}
