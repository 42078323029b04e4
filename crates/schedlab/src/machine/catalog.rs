//! Every preset by name: the P6 presets of [`super::preset`], the many-core preset built
//! from the shipped host file, and `host` ([`super::host`]).
//!
//! Design: the tables of costs live in `preset` and `host`; this module only names and
//! builds them, so neither of those imports the other.

use super::preset::{CpuIds, Limits, Preset, PRESETS};

/// The modern many-core preset's name.
pub const MANYCORE: &str = "modern-2s-64";

/// A modern two-socket machine for scale studies: 2 packages × 16 cores × 2 SMT threads
/// (64 CPUs, the cpumask width), one LLC and one NUMA node per package. Per-core costs are
/// the shipped measured host's (`data/host.json`, a current AMD EPYC core); a line moved
/// between the sockets costs twice a line moved within one (inferred: public Skylake-SP
/// and EPYC figures put a remote-socket cache-to-cache transfer at about twice a local
/// one). CPUs are numbered package by package with SMT siblings adjacent (CPUs 2k and 2k+1
/// share core k), so `--cpus 32` boots one whole package and `bus_of` is the package.
pub fn manycore() -> &'static Preset {
    static P: std::sync::OnceLock<Preset> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let h = super::host::HostFile::parse(super::host::SHIPPED, "data/host.json")
            .expect("the shipped host file loads (a unit test checks it)");
        let n = 64;
        let core: Vec<usize> = (0..n).map(|c| c / 2).collect();
        let package: Vec<usize> = (0..n).map(|c| c / 32).collect();
        let mut costs = h.costs.clone();
        costs.c2c_cross_bus_line_ns = 2 * costs.c2c_line_ns;
        Preset {
            name: MANYCORE,
            description: "2 sockets x 16 cores x 2 SMT (64 CPUs), LLC and NUMA node per socket; \
                          per-core costs of the measured host (data/host.json)",
            cpus: n,
            cpus_per_bus: 32, // a package: c2c_cross_bus_line_ns between them
            shared_bus: false,
            topology: Some(CpuIds {
                core,
                llc: package.clone(),
                node: package,
            }),
            costs,
            limits: Limits {
                ram_mb: 256 * 1024,
                max_threads: 2_000_000,
                nproc: 1_000_000,
                file_max: 1 << 24,
            },
        }
    })
}

/// Every preset: [`PRESETS`], then [`MANYCORE`] and `host` (when its file loads).
pub fn all() -> Vec<&'static Preset> {
    let mut v: Vec<&'static Preset> = PRESETS.iter().collect();
    v.push(manycore());
    v.extend(super::host::preset().ok());
    v
}

/// Look a preset up by name: one of [`PRESETS`], `host` ([`super::host`]) or
/// [`MANYCORE`].
pub fn find(name: &str) -> Option<&'static Preset> {
    lookup(name).ok()
}

/// Look a preset up by name, saying why not in one line (an unknown name, or a `host`
/// file that does not load).
pub fn lookup(name: &str) -> Result<&'static Preset, crate::spec::SpecError> {
    if name == super::host::NAME {
        return super::host::preset().map_err(crate::spec::SpecError::Invalid);
    }
    if name == MANYCORE {
        return Ok(manycore());
    }
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let mut names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        names.push(super::host::NAME);
        names.push(MANYCORE);
        crate::spec::SpecError::unknown("machine", name, &names)
    })
}
