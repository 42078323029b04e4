//! The `host` preset: this machine as its kernel sees it, from a measured host file.
//!
//! Design: `schedlab validate --measure FILE` (crate `schedlab-native`, module `measure`)
//! reads the topology, caches, HZ and preemption model from sysfs and the kernel config,
//! times micro-benchmarks, solves the model's cost equations for the costs they determine,
//! and writes a [`HostFile`]: every cost with its source (`measured: …`, `sysfs: …`, or
//! `not measured: the P6 value` for costs no micro-benchmark reaches), the date and the
//! command. The `host` preset is that file: `$SCHEDLAB_HOST` names one, else the file
//! shipped in `data/host.json` (measured on the machine named in it) is used.
//!
//! Invariants: a host file is checked before use (every cost present, the topology as long
//! as the CPU count); a process loads its host preset once and keeps it (a run's machine
//! never changes under it).

use std::sync::OnceLock;

use super::preset::{Costs, CpuIds, Limits, Preset};

/// The preset name.
pub const NAME: &str = "host";

/// The environment variable naming a host file.
pub const ENV: &str = "SCHEDLAB_HOST";

/// The host file shipped with schedlab.
pub const SHIPPED: &str = include_str!("../../../../data/host.json");

/// Where a host file came from and what it describes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// UTC date and time of the measurement (RFC 3339).
    pub date: String,
    /// The command that wrote the file.
    pub command: String,
    /// CPU model (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// `CONFIG_HZ` of the measured kernel.
    pub hz: u32,
    /// Preemption model (`CONFIG_PREEMPT_*`, and `PREEMPT_DYNAMIC`'s boot choice if known).
    pub preempt: String,
    /// True when the kernel runs under a hypervisor (`/proc/cpuinfo` flag `hypervisor`).
    pub virtualized: bool,
    /// Share of the CPUs' time that went to other work while the micro-benchmarks ran
    /// (`/proc/stat` busy and steal time less the measurer's own), in %: above
    /// [`BUSY_PCT`] the costs are likely inflated. Absent in files written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_load_pct: Option<f64>,
    /// The task group the measuring session's tasks were in, as the fair class accounts
    /// them: `autogroup-N` (`sched_autogroup_enabled=1`, root `cpu` cgroup) or `cgroup
    /// PATH`; empty (or absent, in older files) for the root task group. The host's rows
    /// are simulated with `eevdf:autogroup=on` when it is not empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_group: String,
}

impl Measured {
    /// The `eevdf` spec that simulates this host: its HZ, its release's later changes,
    /// and one task group when its tasks ran in one.
    pub fn host_policy(&self) -> String {
        let mut spec = crate::policy::fair::release::host_policy(self.hz, &self.kernel);
        if !self.task_group.is_empty() {
            spec.push_str(",autogroup=on");
        }
        spec
    }

    /// What to say of a measurement during which other work took more than
    /// [`BUSY_PCT`] of the CPUs (`None`: it was quiet, or not recorded).
    pub fn busy_warning(&self) -> Option<String> {
        self.foreign_load_pct.filter(|&p| p > BUSY_PCT).map(|p| {
            format!("other work took {p:.0} % of the CPUs while measuring: the costs are likely inflated")
        })
    }
}

/// Other work above this share of the CPUs while measuring makes a host file suspect:
/// interference only adds time, and a busy minute moved the AF_UNIX costs 2-3x
/// (docs/calibration.md, "6.x's own paths").
pub const BUSY_PCT: f64 = 10.0;

/// A measured host, as written to and read from a host file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostFile {
    /// Always `schedlab-host/1`.
    pub schema: String,
    /// Provenance.
    pub measured: Measured,
    /// CPUs online when measured.
    pub cpus: usize,
    /// Core, LLC and node per CPU.
    pub topology: CpuIds,
    /// Costs, in the preset's units.
    pub costs: Costs,
    /// Kernel limits (`threads-max`, `ulimit -u`, `file-max`, RAM).
    pub limits: Limits,
    /// Per cost field: where its value comes from (and `measured.hz`: where HZ came
    /// from). Sorted by key.
    pub sources: std::collections::BTreeMap<String, String>,
    /// Each micro-benchmark's median figure, ns (what the costs were solved from).
    pub benchmarks: std::collections::BTreeMap<String, f64>,
    /// Each micro-benchmark's first and third quartile over its interleaved repetitions,
    /// ns: a difference of medians smaller than the spread of its terms is not solved.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub benchmark_spread: std::collections::BTreeMap<String, [f64; 2]>,
}

/// The schema tag.
pub const SCHEMA: &str = "schedlab-host/1";

impl HostFile {
    /// Parse and check a host file's text; `what` names it in errors.
    pub fn parse(text: &str, what: &str) -> Result<HostFile, String> {
        let h: HostFile = serde_json::from_str(text)
            .map_err(|e| format!("host file {what} is not valid: {e}"))?;
        h.check().map_err(|e| format!("host file {what}: {e}"))?;
        Ok(h)
    }

    /// The checks a file must pass before it becomes a preset.
    pub fn check(&self) -> Result<(), String> {
        if self.schema != SCHEMA {
            return Err(format!("schema is '{}' (accepted: {SCHEMA})", self.schema));
        }
        if self.cpus == 0 || self.cpus > super::MAX_CPUS {
            return Err(format!(
                "cpus = {} (accepted: 1..={}, the cpumask width)",
                self.cpus,
                super::MAX_CPUS
            ));
        }
        let t = &self.topology;
        if [t.core.len(), t.llc.len(), t.node.len()] != [self.cpus; 3] {
            return Err(format!(
                "the topology lists {}/{}/{} core/llc/node ids for {} CPUs",
                t.core.len(),
                t.llc.len(),
                t.node.len(),
                self.cpus
            ));
        }
        if !t.package.is_empty() && t.package.len() != self.cpus {
            return Err(format!(
                "the topology lists {} package ids for {} CPUs (accepted: none, or one per CPU)",
                t.package.len(),
                self.cpus
            ));
        }
        let nodes = t.node.iter().max().map_or(1, |m| m + 1);
        if !t.distance.is_empty()
            && (t.distance.len() != nodes || t.distance.iter().any(|r| r.len() != nodes))
        {
            return Err(format!(
                "the topology's distance table is not {nodes} x {nodes} (one row and column \
                 per node, as /sys/devices/system/node/nodeN/distance lists them)"
            ));
        }
        let c = &self.costs;
        if c.cpu_mhz == 0 || c.line_bytes == 0 || c.page_bytes == 0 || c.line_slots == 0 {
            return Err("cpu_mhz, line_bytes, page_bytes and line_slots must be > 0".into());
        }
        if c.l1_ways == 0 || c.l2_ways == 0 || c.l1_bytes < c.page_bytes || c.l2_bytes < c.l1_bytes
        {
            return Err("the cache geometry must have ways > 0 and L2 >= L1 >= a page".into());
        }
        Ok(())
    }

    /// The preset this file describes (leaked: a process loads one host preset).
    pub fn to_preset(&self) -> Preset {
        let m = &self.measured;
        let description = format!(
            "this host as measured {}: {} x {}, Linux {} (HZ {}, {}{}); `{}`",
            m.date.get(..10).unwrap_or(&m.date),
            self.cpus,
            m.cpu_model,
            m.kernel,
            m.hz,
            m.preempt,
            if m.virtualized {
                ", virtual machine"
            } else {
                ""
            },
            m.command
        );
        Preset {
            name: NAME,
            description: Box::leak(description.into_boxed_str()),
            cpus: self.cpus,
            buses: super::layout::Buses::Every(self.cpus),
            shared_bus: false,
            topology: Some(self.topology.clone()),
            costs: self.costs.clone(),
            limits: self.limits.clone(),
            lowmem_mb: None,
            limits_measured: true,
            pid_max_sysctl: None,
            file_max_sysctl: None,
        }
    }
}

static HOST: OnceLock<Result<(HostFile, &'static Preset), String>> = OnceLock::new();

fn load() -> Result<(HostFile, &'static Preset), String> {
    let (text, what) = match std::env::var_os(ENV) {
        Some(path) => {
            let shown = format!("{} (${ENV})", path.to_string_lossy());
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read host file {shown}: {e}"))?;
            (text, shown)
        }
        None => (SHIPPED.to_string(), "data/host.json (shipped)".to_string()),
    };
    let h = HostFile::parse(&text, &what)?;
    let p: &'static Preset = Box::leak(Box::new(h.to_preset()));
    Ok((h, p))
}

/// The `host` preset of this process (loaded on first use).
pub fn preset() -> Result<&'static Preset, String> {
    HOST.get_or_init(load).clone().map(|(_, p)| p)
}

/// The host file behind [`preset`].
pub fn file() -> Result<HostFile, String> {
    HOST.get_or_init(load).clone().map(|(h, _)| h)
}

/// Make `h` this process's `host` preset (`validate --measure` validates what it just
/// measured). Fails once a host preset is in use.
pub fn install(h: HostFile) -> Result<&'static Preset, String> {
    h.check()?;
    let p: &'static Preset = Box::leak(Box::new(h.to_preset()));
    HOST.set(Ok((h, p)))
        .map_err(|_| "the host preset is already loaded in this process".to_string())?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_host_file_loads_and_matches_its_topology() {
        let h = HostFile::parse(SHIPPED, "shipped").unwrap();
        let p = h.to_preset();
        assert_eq!(p.cpus, h.cpus);
        assert!(!p.shared_bus);
        assert!(
            h.sources.contains_key("syscall_ns"),
            "{:?}",
            h.sources.keys()
        );
        // Round trip: what we write is what we read.
        let text = serde_json::to_string_pretty(&h).unwrap();
        assert_eq!(HostFile::parse(&text, "again").unwrap(), h);
        // A file that recorded the other work during its measurement keeps it.
        let mut busy = h.clone();
        busy.measured.foreign_load_pct = Some(34.6);
        let text = serde_json::to_string_pretty(&busy).unwrap();
        assert!(text.contains("\"foreign_load_pct\": 34.6"), "{text}");
        assert_eq!(HostFile::parse(&text, "busy").unwrap(), busy);
        assert!(busy.measured.busy_warning().unwrap().contains("35 %"));
        busy.measured.foreign_load_pct = Some(BUSY_PCT);
        assert_eq!(
            busy.measured.busy_warning(),
            None,
            "at the threshold: quiet"
        );
    }

    #[test]
    fn a_host_whose_tasks_ran_in_a_task_group_is_simulated_with_one() {
        let mut h = HostFile::parse(SHIPPED, "shipped").unwrap();
        h.measured.kernel = "6.18.44-fc".into();
        h.measured.hz = 250;
        h.measured.task_group = String::new();
        assert!(!h.measured.host_policy().contains("autogroup"));
        assert!(!serde_json::to_string(&h).unwrap().contains("task_group"));
        h.measured.task_group = "autogroup-399".into();
        let spec = h.measured.host_policy();
        assert!(spec.starts_with("eevdf:hz=250,"), "{spec}");
        assert!(spec.ends_with(",autogroup=on"), "{spec}");
        let text = serde_json::to_string_pretty(&h).unwrap();
        assert_eq!(HostFile::parse(&text, "again").unwrap(), h);
    }

    #[test]
    fn bad_host_files_are_refused_in_one_line() {
        let mut h = HostFile::parse(SHIPPED, "shipped").unwrap();
        h.topology.core.pop();
        let e = h.check().unwrap_err();
        assert!(e.contains("topology lists"), "{e}");
        let e = HostFile::parse("{\"schema\": 1}", "x.json").unwrap_err();
        assert!(e.starts_with("host file x.json is not valid"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let mut h = HostFile::parse(SHIPPED, "shipped").unwrap();
        h.schema = "other".into();
        assert!(h.check().unwrap_err().contains("accepted: schedlab-host/1"));
    }
}
