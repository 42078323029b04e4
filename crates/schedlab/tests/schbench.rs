//! schbench (`workload/schbench`): its threads, its counts and what it prints.

use schedlab::report::run;
use schedlab::sim::RunConfig;

fn schbench(spec: &str, cpus: usize, policy: &str) -> schedlab::report::RunReport {
    run(RunConfig {
        machine: "modern-2s-64".into(),
        cpus: Some(cpus),
        policy: policy.into(),
        workload: spec.into(),
        seed: 1,
    })
    .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

#[test]
fn every_request_is_timed_and_every_second_sampled() {
    let r = schbench("schbench:m=2,t=4,r=2,n=1,f=64", 8, "eevdf");
    let d = r.result.details.as_ref().unwrap();
    let requests = d["request_latency_us"]["samples"].as_u64().unwrap();
    let wakeups = d["wakeup_latency_us"]["samples"].as_u64().unwrap();
    // A request follows every wake-up (those at the stop excepted, at most one a worker).
    assert!(requests > 100, "{requests}");
    assert!(
        wakeups <= requests + 8 && wakeups + 8 >= requests,
        "{wakeups} vs {requests}"
    );
    // The first pass's 0, then one sample a second.
    assert_eq!(d["rps"]["samples"], 3);
    let avg = d["average_rps"].as_f64().unwrap();
    assert!(
        (avg - requests as f64 / 2.0).abs() <= 8.0,
        "{avg} vs {requests}"
    );
    assert_eq!(d["workers_per_message_thread"], 4);
    // msize = sqrt(64 * 1024 / 3 / 8) = 52.
    assert_eq!(d["matrix_size"], 52);
}

#[test]
fn it_prints_what_schbench_prints() {
    let r = schbench("schbench:m=1,t=4,r=1,n=1,f=32", 4, "cfs");
    let out = r.result.output.as_deref().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("Wakeup Latencies percentiles (usec) runtime 1 (s) ("));
    assert!(lines[1].starts_with("\t  50.0th: "), "{}", lines[1]);
    assert!(lines[3].starts_with("\t* 99.0th: "), "{}", lines[3]);
    assert!(lines[5].starts_with("\t  min="));
    assert!(lines[6].starts_with("Request Latencies percentiles (usec)"));
    assert!(lines[12].starts_with("RPS percentiles (requests) runtime 1 (s)"));
    assert!(lines[14].starts_with("\t* 50.0th: "));
    assert!(lines[17].starts_with("average rps: "));
    assert!(lines[18].starts_with("sched delay: message "));
    // The starred figure is the result.
    let p99: f64 = lines[3]["\t* 99.0th: ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(p99, r.result.value);
}

#[test]
fn calibration_takes_the_sleep_out_of_the_request() {
    let with = schbench("schbench:m=1,t=2,r=1,n=1,f=16,s=2000", 2, "eevdf");
    let cal = schbench(
        "schbench:m=1,t=2,r=1,n=1,f=16,s=2000,calibrate=on",
        2,
        "eevdf",
    );
    let p50 = |r: &schedlab::report::RunReport| {
        r.result.details.as_ref().unwrap()["request_latency_us"]["p50"]
            .as_u64()
            .unwrap()
    };
    assert!(p50(&with) >= 2000, "{}", p50(&with));
    assert!(p50(&cal) < 1000, "{}", p50(&cal));
}

#[test]
fn more_workers_than_cpus_queue_behind_each_other() {
    // 8 workers on 2 CPUs: each request waits for others; on 8 CPUs it does not.
    let crowded = schbench("schbench:m=1,t=8,r=1,n=1,f=64", 2, "eevdf");
    let roomy = schbench("schbench:m=1,t=8,r=1,n=1,f=64", 9, "eevdf");
    let p99 = |r: &schedlab::report::RunReport| {
        r.result.details.as_ref().unwrap()["request_latency_us"]["p99"]
            .as_u64()
            .unwrap()
    };
    assert!(
        p99(&crowded) > 2 * p99(&roomy),
        "{} vs {}",
        p99(&crowded),
        p99(&roomy)
    );
}

/// netperf TCP_RR (`workload/netperf`): every instance measured, the rates summed, the
/// table printed per instance.
#[test]
fn netperf_sums_its_instances_and_prints_one_table_each() {
    let r = schbench("netperf:instances=3,duration_ms=20,warmup_ms=2", 4, "eevdf");
    let d = r.result.details.as_ref().unwrap();
    let rates: Vec<f64> = d["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(rates.len(), 3);
    assert!(rates.iter().all(|&x| x > 1000.0), "{rates:?}");
    let sum: f64 = rates.iter().sum();
    assert!(
        (sum - r.result.value).abs() < 0.05,
        "{sum} vs {}",
        r.result.value
    );
    let out = r.result.output.as_deref().unwrap();
    assert_eq!(out.matches("MIGRATED TCP REQUEST/RESPONSE TEST").count(), 3);
    assert!(
        out.contains("\n16384  131072 1        1       0.02     "),
        "{out}"
    );
    // A bigger response takes longer per transaction.
    let big = schbench(
        "netperf:instances=1,resp=65536,duration_ms=20,warmup_ms=2",
        4,
        "eevdf",
    );
    let small = schbench("netperf:instances=1,duration_ms=20,warmup_ms=2", 4, "eevdf");
    assert!(big.result.value < small.result.value);
}
