//! Kernel paths that differ between the era's releases and 6.x, chosen by the policy's
//! release: the wake-ups of a stream's reader and writer (`WF_SYNC` in 6.x), `switch_mm`
//! between two threads of one mm (no `cpu_vm_mask` write in 6.x), and `fget` (6.x borrows
//! the file of an unshared table and takes the file's `f_count` for a shared one; 2.4
//! read-locks the table). Each is seen in a counter, under a 6.x policy and a 2.4 one on
//! the same machine.

use schedlab::report::run;
use schedlab::sim::RunConfig;

fn report(policy: &str, workload: &str) -> serde_json::Value {
    on_machine("piii700-1m", policy, workload)
}

fn on_machine(machine: &str, policy: &str, workload: &str) -> serde_json::Value {
    let r = run(RunConfig {
        machine: machine.into(),
        cpus: Some(2),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    })
    .unwrap_or_else(|e| panic!("{machine} {policy} {workload}: {e}"));
    serde_json::to_value(r).unwrap()
}

fn counter(v: &serde_json::Value, name: &str) -> u64 {
    v["counters"][name].as_u64().unwrap_or(0)
}

/// A schedstat field summed over every task group.
fn schedstat(v: &serde_json::Value, field: &str) -> u64 {
    v["result"]["details"]["schedstats"]
        .as_array()
        .map(|groups| groups.iter().map(|g| g[field].as_u64().unwrap_or(0)).sum())
        .unwrap_or(0)
}

fn sync_wakeups(v: &serde_json::Value) -> u64 {
    schedstat(v, "nr_wakeups_sync")
}

fn wakeups(v: &serde_json::Value) -> u64 {
    schedstat(v, "nr_wakeups")
}

#[test]
fn a_6x_readers_wakeup_is_synchronous_and_a_2_4_one_is_not() {
    for w in [
        "lat_pipe:pin=split,rounds=200",
        // Enough messages that their wake-ups outnumber the barrier's and the exits'
        // (at 20 loops the herd, placed wide, ran its pairs side by side: 14 of 21).
        "hackbench:groups=1,loops=100,fds=4",
        "chat:rooms=1,messages=20,nodelay=on",
    ] {
        let six = report("eevdf", w);
        let (sync, all) = (sync_wakeups(&six), wakeups(&six));
        // Nearly every wake-up of a reader or a writer is synchronous; the start barrier's
        // and the parent's (exit) are not.
        assert!(all > 0 && sync * 10 >= all * 8, "{w}: {sync} of {all} sync");
        // The same kernel path under CFS (6.1).
        assert!(sync_wakeups(&report("cfs", w)) > 0, "{w} under cfs");
    }
    // 2.6.0's pipe_write ends with the asynchronous `wake_up_interruptible`: the 6.x path
    // must not reach the era's kernels (their published tables are in golden files).
    let o1 = report("o1-2.6", "lat_pipe:pin=split,rounds=200");
    assert!(wakeups(&o1) > 100);
    assert_eq!(sync_wakeups(&o1), 0);
}

#[test]
fn a_6x_switch_between_threads_of_one_mm_writes_no_cpu_vm_mask() {
    // Threads of one mm yielding on two CPUs: every switch is to the same mm.
    let w = "sched_yield:threads=4,duration_ms=5,warmup_ms=2";
    let era = report("linux-2.4", w);
    let six = report("eevdf", w);
    assert!(
        counter(&era, "vm_mask_transfers") > 100,
        "2.4's test_and_set_bit on the same mm moves the line between the CPUs"
    );
    // 6.x: only the first switch into the threads' mm, from init's, sets a bit.
    assert!(
        counter(&six, "vm_mask_transfers") <= 2,
        "{}",
        six["counters"]
    );
}

#[test]
fn a_6x_fget_takes_no_line_for_a_process_and_the_files_own_for_threads() {
    // Two groups, so that a group's senders end up on both CPUs; 200 loops, so that the
    // messages, not the start and the exits, make the count.
    let procs = "hackbench:groups=2,loops=200,fds=10,pipe=on";
    let threads = "hackbench:groups=2,loops=200,fds=10,pipe=on,threads=on";
    // A process's own table: 6.x borrows the file; nothing moves.
    assert_eq!(counter(&report("eevdf", procs), "files_line_transfers"), 0);
    // Threads share the table: the senders of a group write to the same receiver's
    // file from both CPUs, so its `f_count` line moves, but far less often than 2.4's
    // one table lock, which every read and write of every thread takes.
    let six = counter(&report("eevdf", threads), "files_line_transfers");
    let era = counter(&report("linux-2.4", threads), "files_line_transfers");
    assert!(six > 0, "the shared files' counts move");
    assert!(era > 5 * six, "2.4 {era} vs 6.x {six}");
}

#[test]
fn an_ack_wakes_a_tcp_socket_only_for_a_writer_that_ran_out_of_room_in_6x() {
    let w = "chat:rooms=1,messages=20,nodelay=on";
    let wakes = |machine: &str, policy: &str| {
        counter(&on_machine(machine, policy, w), "tcp_write_space_wakes")
    };
    // 6.x: tcp_check_space gates write_space on SOCK_NOSPACE.
    let gated = wakes("piii700-1m", "eevdf");
    let every_ack = wakes("piii700-1m:tcp_nospace=off", "eevdf");
    assert!(
        every_ack > 2 * gated,
        "gated {gated}, every ACK {every_ack}"
    );
    // The era's releases keep their calibrated model unless asked.
    let era = wakes("piii700-1m", "linux-2.4");
    let era_gated = wakes("piii700-1m:tcp_nospace=on", "linux-2.4");
    assert!(era > era_gated, "2.4 {era}, gated {era_gated}");
}

#[test]
fn a_6x_pipe_wakes_one_writer_per_read_of_a_full_ring_and_2_4_wakes_them_all() {
    // hackbench's receivers each read what twenty senders write: pipes fill.
    let w = "hackbench:groups=1,loops=200,pipe=on";
    let ring = on_machine("piii700-1m", "eevdf", w);
    let flat = on_machine("piii700-1m:pipe_ring=off", "eevdf", w);
    assert!(counter(&ring, "pipe_full_waits") > 0);
    assert!(counter(&ring, "pipe_writer_wakes") > 0);
    // Exclusive sleepers and the ring's slots: far fewer wake-ups than 2.4's pipe.
    let (r, f) = (wakeups(&ring), wakeups(&flat));
    assert!(r * 4 < f * 3, "ring {r} wake-ups, 2.4's pipe {f}");
    assert_eq!(counter(&flat, "pipe_full_waits"), 0);
    // The era's releases keep 2.4's pipe unless asked.
    let era = report("linux-2.4", w);
    assert_eq!(
        counter(&era, "pipe_full_waits") + counter(&era, "pipe_writer_wakes"),
        0
    );
    let asked = on_machine("piii700-1m:pipe_ring=on", "linux-2.4", w);
    assert!(counter(&asked, "pipe_full_waits") > 0);
}
