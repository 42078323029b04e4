//! One declaration of each workload's parameters: every native workload is a simulated
//! workload run for real, so it takes exactly the simulated workload's parameters (system.md
//! "Contracts": names, defaults, kinds), and `schedlab native W:k=v` means what `schedlab
//! run --workload W:k=v` means.

use schedlab::spec::ParamSpec;
use schedlab::workload::WORKLOADS;
use schedlab_native::{parse, NATIVE_WORKLOADS};

/// Parameters a native workload may take that its simulated workload lacks, as
/// (workload, parameter, why). Each entry needs a reason the simulated workload has no
/// equivalent (a rounds, yields, messages or window parameter of its own would be one).
/// Empty: every native knob is the model's.
const NATIVE_ONLY: &[(&str, &str, &str)] = &[];

fn row(p: &ParamSpec) -> (String, String, String) {
    (
        p.name.to_string(),
        p.default.to_string(),
        format!("{:?}", p.kind),
    )
}

#[test]
fn every_native_workload_takes_exactly_the_simulated_parameters() {
    for w in NATIVE_WORKLOADS {
        let sim = WORKLOADS
            .iter()
            .find(|s| s.name == w.name)
            .unwrap_or_else(|| panic!("native workload {} has no simulated workload", w.name));
        let native_only: Vec<&str> = NATIVE_ONLY
            .iter()
            .filter(|(n, _, _)| *n == w.name)
            .map(|(_, p, _)| *p)
            .collect();
        let native: Vec<_> = w
            .params
            .iter()
            .filter(|p| !native_only.contains(&p.name))
            .map(row)
            .collect();
        let simulated: Vec<_> = sim.params.iter().map(row).collect();
        assert_eq!(
            native, simulated,
            "{}: native parameters (name, default, kind) differ from the simulated ones",
            w.name
        );
        for p in &native_only {
            assert!(
                w.params.iter().any(|d| d.name == *p),
                "{}: exception for {p}, which it does not take",
                w.name
            );
        }
        assert_eq!(w.metric, sim.metric, "{}: listed metric", w.name);
    }
}

#[test]
fn every_native_workload_accepts_its_defaults_and_every_single_default_given() {
    // Giving each parameter explicitly at its default is accepted natively, as it is by
    // the model (no simulated knob is refused at its default).
    for w in NATIVE_WORKLOADS {
        parse(w.name).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        for p in w.params.iter().filter(|p| p.default != "auto") {
            let spec = format!("{}:{}={}", w.name, p.name, p.default);
            parse(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        }
    }
}

#[test]
fn exceptions_are_few_and_named() {
    for (w, p, why) in NATIVE_ONLY {
        assert!(
            NATIVE_WORKLOADS.iter().any(|n| n.name == *w),
            "exception for unknown workload {w}"
        );
        assert!(!why.is_empty(), "{w}:{p} needs a reason");
    }
}
