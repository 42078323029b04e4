//! Golden reports of runs past 64 CPUs without the coherence model, where the host
//! answers the policies' walks over every CPU from indexes and dense copies (the idle
//! index, MQ's steal index and indexed placement, o1's queue-length tree, the tick lane
//! of the event queue). The index-versus-walk test compares two paths of the same build;
//! this compares every build with fixed reports. The file was checked equal, run by run,
//! to the reports of the build before any of those shortcuts (the starting binary of
//! 27 Nov's fifth session). `SCHEDLAB_BLESS=1` rewrites it after a deliberate change of
//! results.

use std::path::PathBuf;

use schedlab::RunConfig;

fn report(policy: &str, workload: &str) -> String {
    let r = schedlab::run(RunConfig {
        machine: "numa-1024:coherence=off".into(),
        cpus: Some(72),
        policy: policy.into(),
        workload: workload.into(),
        seed: 3,
    })
    .expect("run succeeds");
    format!(
        "{policy} {workload} {}\n",
        serde_json::to_string(&r).unwrap()
    )
}

#[test]
fn runs_past_64_cpus_without_coherence_are_golden() {
    let mut got = String::new();
    for (policy, workload) in [
        ("linux-2.4", "hackbench:groups=3,loops=10"),
        ("linux-2.4", "reflex:tasks=16,yield_pct=50,rounds=500"),
        ("hamq", "hackbench:groups=3,loops=10"),
        ("mq", "hackbench:groups=3,loops=10"),
        ("mq", "reflex:tasks=64,rounds=300"),
        ("o1-2.6", "hackbench:groups=3,loops=10"),
        ("o1-g1", "synthetic:tasks=300,ops=10"),
        ("eevdf", "synthetic:tasks=300,ops=10"),
    ] {
        got.push_str(&report(policy, workload));
    }
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/large_machines.txt");
    if std::env::var_os("SCHEDLAB_BLESS").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("golden file (SCHEDLAB_BLESS=1 writes it)");
    for (g, w) in got.lines().zip(want.lines()) {
        let name: Vec<&str> = w.splitn(3, ' ').take(2).collect();
        assert_eq!(
            g, w,
            "{name:?}: report changed (SCHEDLAB_BLESS=1 rewrites the golden file)"
        );
    }
    assert_eq!(
        got.lines().count(),
        want.lines().count(),
        "golden runs added or removed"
    );
}
