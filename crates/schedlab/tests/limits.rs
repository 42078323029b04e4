//! The kernel's limits are the policy's release's (`kernel/release.rs`), and low memory is a
//! resource (`kernel/kmem.rs`): runs on the OSDL boxes, refused where the kernel refused.

use schedlab::sim::{RunConfig, Simulation};

fn config(machine: &str, cpus: usize, policy: &str, workload: &str) -> RunConfig {
    RunConfig {
        machine: machine.into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    }
}

/// The error before the run, if the kernel's limits refuse the workload outright.
fn refused(machine: &str, cpus: usize, policy: &str, workload: &str) -> Option<String> {
    Simulation::new(config(machine, cpus, policy, workload))
        .err()
        .map(|e| e.to_string())
}

#[test]
fn two_four_eighteen_stops_at_nr_file_where_two_six_zero_goes_on() {
    // 205 groups need 8 204 files: over 2.4.18's NR_FILE, under 2.6.0's files_init on 8 GB.
    let w = "hackbench:groups=205,loops=1";
    let e = refused("osdl-stp8", 8, "linux-2.4:version=2.4.18", w).expect("refused");
    assert!(
        e.contains("8204 open files") && e.contains("fs.file-max = 8192"),
        "{e}"
    );
    assert_eq!(refused("osdl-stp8", 8, "o1-2.6", w), None);
}

#[test]
fn root_is_held_to_rlimit_nproc_only_before_2_4_18() {
    // 1 GB: NPROC 8 192 (file-max raised so that files do not bind first). 2.4.17 refuses
    // root's 8 193rd task; 2.4.18 exempts root, leaving max_threads = 16 384.
    let (m, w) = (
        "osdl-stp1:file_max=20000",
        "hackbench:groups=4100,fds=1,loops=1",
    );
    let e = refused(m, 1, "linux-2.4:version=2.4.17", w).expect("refused");
    assert!(e.contains("RLIMIT_NPROC = 8192"), "{e}");
    assert_eq!(refused(m, 1, "linux-2.4:version=2.4.18", w), None);
}

#[test]
fn low_memory_runs_out_before_two_six_zero_s_task_limits() {
    // 8 GB: 2.6.0 allows 131 072 threads, but 600 groups' stacks, mms and page tables
    // (PAE) do not fit the 896 MB of low memory less an 8 GB mem_map: the box hangs at fork.
    let mut sim = Simulation::new(config(
        "osdl-stp8",
        8,
        "o1-2.6",
        "hackbench:groups=600,loops=1",
    ))
    .expect("no limit refuses it before the run");
    let e = sim.run(&mut |_, _| {}).unwrap_err().to_string();
    assert!(
        e.contains("the kernel hung allocating a forked task's stack and mm")
            && e.contains("low memory: 784 MB left"),
        "{e}"
    );
}

#[test]
fn a_search_cell_finds_the_largest_completing_step_and_names_the_next() {
    use schedlab::experiment::{run_cell, Cell, Search, Table};
    // fifo with file-max 400: 4 files a group (fds=2) and 4 for the barriers fit 99
    // groups; steps of 25 → 75 completes, 100 is refused naming the limit.
    {
        let t = Table {
            id: "T-search".into(),
            title: "search".into(),
            source: "test".into(),
            held_out: false,
            unit: "groups".into(),
            better: "higher".into(),
            machine: "piii700-4way-1m".into(),
            note: String::new(),
            on_request: false,
            cells: vec![Cell {
                cpus: 2,
                policy: "fifo".into(),
                workload: "hackbench:loops=1,fds=2".into(),
                value: Some(900.0),
                row: "r".into(),
                metric: None,
                machine: Some("piii700-1m:file_max=400".into()),
                search: Some(Search {
                    param: "groups".into(),
                    step: 25,
                    max: 3000,
                }),
            }],
        };
        let r = run_cell(&t, 0);
        assert_eq!(r.simulated, Ok(75.0));
        let note = r.note.expect("the failing step is named");
        assert!(
            note.starts_with("groups = 100:") && note.contains("fs.file-max = 400"),
            "{note}"
        );
    }
}
