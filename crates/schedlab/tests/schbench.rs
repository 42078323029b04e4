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
