//! What TCP packets over loopback share (`kernel/net.rs`): every packet takes lo's two
//! locks, the release decides whether TCP's timers meet on one global lock, and the
//! machine option `net=off` removes it all.

use schedlab::sim::RunConfig;

fn run(machine: &str, cpus: usize, policy: &str, workload: &str) -> serde_json::Value {
    let r = schedlab::run(RunConfig {
        machine: machine.into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: workload.into(),
        seed: 1,
    })
    .expect("run succeeds");
    serde_json::to_value(&r).unwrap()
}

fn n(v: &serde_json::Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(|x| x.as_f64())
        .unwrap_or_else(|| panic!("{path} missing"))
        .round() as u64
}

const CHAT: &str = "chat:rooms=1,messages=20";

#[test]
fn every_segment_and_ack_crosses_lo_and_its_two_locks() {
    let r = run("piii700-1m", 4, "linux-2.4", CHAT);
    let packets = n(&r, "/counters/net/packets");
    assert_eq!(
        packets,
        n(&r, "/counters/tcp_segments") + n(&r, "/counters/tcp_acks")
    );
    assert!(packets > 0);
    for lock in ["lo queue_lock", "lo xmit_lock"] {
        assert_eq!(
            n(&r, &format!("/counters/net/locks/{lock}/acquisitions")),
            packets,
            "{lock}"
        );
    }
    // 2.4: TCP's mod_timers take the global timerlist_lock, at most two per segment (the
    // retransmit timer armed with nothing in flight, the receiver's delayed ACK) and one
    // per ACK (data still in flight).
    let timers = n(&r, "/counters/net/mod_timers");
    assert!(timers > 0);
    assert!(timers <= 2 * n(&r, "/counters/tcp_segments") + n(&r, "/counters/tcp_acks"));
    assert_eq!(
        n(&r, "/counters/net/locks/timerlist_lock/acquisitions"),
        timers
    );
    // Lines move between 4 CPUs.
    assert!(
        r.pointer("/counters/net/line_transfers_per_packet")
            .unwrap()
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn the_release_decides_what_is_shared() {
    // 2.6.0: per-CPU timer bases (from 2.5.40), lo still locked and shared.
    let r = run("piii700-1m", 4, "o1-2.6", CHAT);
    assert!(n(&r, "/counters/net/packets") > 0);
    assert_eq!(n(&r, "/counters/net/mod_timers"), 0);
    assert!(r.pointer("/counters/net/locks/timerlist_lock").is_none());
    // 6.x: a lockless lo with per-CPU statistics: nothing shared.
    let r = run("piii700-1m", 4, "eevdf", CHAT);
    assert!(r.pointer("/counters/net").is_none());
}

#[test]
fn net_off_removes_the_path_and_pipes_never_take_it() {
    let r = run("piii700-1m:net=off", 4, "linux-2.4", CHAT);
    assert!(r.pointer("/counters/net").is_none());
    assert!(n(&r, "/counters/tcp_segments") > 0);
    let r = run("piii700-1m", 4, "linux-2.4", "reflex:tasks=4,rounds=200");
    assert!(r.pointer("/counters/net").is_none());
}

#[test]
fn one_cpu_pulls_no_shared_line() {
    // Every line stays in the only cache: the path costs its locked operations only.
    let r = run("piii700-1m", 1, "linux-2.4", CHAT);
    assert!(n(&r, "/counters/net/packets") > 0);
    assert_eq!(
        r.pointer("/counters/net/line_transfers_per_packet")
            .unwrap()
            .as_f64()
            .unwrap(),
        0.0
    );
    assert_eq!(
        n(&r, "/counters/net/locks/lo xmit_lock/wait_ns_mean"),
        0,
        "nobody to wait for"
    );
}
