//! The AF_UNIX costs a measured host brings (issue 43): an skb read on another CPU than
//! its writer's (`skb_remote_ns`), and a cold skb's slab page turned over through state
//! every CPU shares (`skb_page_shared_ns`). Each is counted, priced only where the preset
//! has it, and absent from the era presets.

use schedlab::machine::host::HostFile;
use schedlab::machine::{Machine, Preset};
use schedlab::sim::{RunConfig, Simulation};

/// The shipped host file with two costs set.
fn host(remote: Option<u64>, shared: Option<u64>) -> &'static Preset {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/host.json"))
            .expect("data/host.json");
    let mut h = HostFile::parse(&text, "data/host.json").expect("the shipped host file parses");
    h.costs.skb_remote_ns = remote;
    h.costs.skb_page_shared_ns = shared;
    Box::leak(Box::new(h.to_preset()))
}

fn run(preset: &'static Preset, cpus: usize, workload: &str) -> serde_json::Value {
    let m = Machine::boot(preset, Some(cpus)).expect("boots");
    let cfg = RunConfig {
        machine: "host".into(),
        cpus: None,
        policy: "eevdf:hz=250".into(),
        workload: workload.into(),
        seed: 1,
    };
    let mut sim = Simulation::on_machine(cfg, m).expect("builds");
    sim.run(&mut |_, _| {}).expect("runs");
    serde_json::to_value(sim.report().expect("reports")).unwrap()
}

fn counter(v: &serde_json::Value, name: &str) -> u64 {
    v["counters"][name].as_u64().unwrap_or(0)
}

fn seconds(v: &serde_json::Value) -> f64 {
    v["result"]["value"].as_f64().unwrap()
}

const HACKBENCH: &str = "hackbench:groups=2,loops=20,fds=5,threads=on";

#[test]
fn an_skb_read_on_another_cpu_pays_skb_remote_ns_once_per_skb() {
    let without = run(host(None, None), 2, HACKBENCH);
    assert_eq!(
        counter(&without, "skb_remote"),
        0,
        "not counted without the cost"
    );
    let with = run(host(Some(20_000), None), 2, HACKBENCH);
    let remote = counter(&with, "skb_remote");
    // 2 groups x 5 senders x 5 receivers x 20 loops = 1 000 skbs of 100 bytes.
    assert!(remote > 0 && remote <= 1_000, "{remote}");
    assert!(seconds(&with) > seconds(&without), "the price is paid");
    let one_cpu = run(host(Some(20_000), None), 1, HACKBENCH);
    assert_eq!(
        counter(&one_cpu, "skb_remote"),
        0,
        "one CPU: nothing is remote"
    );
}

#[test]
fn a_cold_skb_pulls_the_allocator_state_only_after_another_cpu_freed_one() {
    // Deep queues: 2 groups x 20 x 20 x 100 skbs, most of them read cold.
    let deep = "hackbench:groups=2,loops=100";
    let one_cpu = run(host(None, Some(1_000)), 1, deep);
    assert!(counter(&one_cpu, "skb_cold") > 0);
    assert_eq!(
        counter(&one_cpu, "skb_page_pulls"),
        0,
        "one CPU owns it all along"
    );
    let two = run(host(None, Some(1_000)), 2, deep);
    let pulls = counter(&two, "skb_page_pulls");
    assert!(pulls > 0, "two CPUs take turns");
    assert!(
        pulls <= counter(&two, "skb_cold"),
        "only cold skbs turn pages over"
    );
    let free = run(host(None, None), 2, deep);
    assert_eq!(counter(&free, "skb_page_pulls"), 0);
    assert!(seconds(&two) > seconds(&free));
}

#[test]
fn the_era_presets_have_neither_cost() {
    for m in ["piii700-1m", "piii700-4way-1m", "modern-2s-64"] {
        let r = schedlab::run(RunConfig {
            machine: m.into(),
            cpus: Some(2),
            policy: "eevdf".into(),
            workload: HACKBENCH.into(),
            seed: 1,
        })
        .expect("runs");
        let v = serde_json::to_value(&r).unwrap();
        for c in ["skb_remote", "skb_cold", "skb_page_pulls"] {
            assert_eq!(counter(&v, c), 0, "{m}: {c}");
        }
    }
}
