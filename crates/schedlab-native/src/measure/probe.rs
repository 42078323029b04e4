//! What the kernel tells: configuration, topology, caches, the CPU and the limits.

use schedlab::machine::{CpuIds, Limits};

pub(super) fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `CONFIG_<key>` from /proc/config.gz or /boot/config-$(uname -r).
pub(super) fn kernel_config() -> String {
    let release = read("/proc/sys/kernel/osrelease").unwrap_or_default();
    if let Ok(o) = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .output()
    {
        if o.status.success() {
            return String::from_utf8_lossy(&o.stdout).into_owned();
        }
    }
    read(&format!("/boot/config-{release}")).unwrap_or_default()
}

pub(super) fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

/// The task group this process's CPU time goes to (`Measured::task_group`): a `cpu`
/// cgroup other than the root (v1's `cpu` hierarchy, or a v2 cgroup the `cpu`
/// controller governs), else the session's autogroup when `sched_autogroup_enabled` is 1, else
/// empty (the root group). Children inherit it, so the native rows run in it too.
pub(super) fn task_group() -> String {
    let cgroups = read("/proc/self/cgroup").unwrap_or_default();
    // v2: the `cpu` controller governs this cgroup when the cgroup has its files (a
    // parent that does not enable it in `subtree_control` leaves the task in the root
    // group, where the autogroup applies).
    let v2_cpu = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .is_some_and(|path| {
            let dir = format!("/sys/fs/cgroup{}", path.trim_end_matches('/'));
            path != "/" && std::path::Path::new(&format!("{dir}/cpu.weight")).exists()
        });
    task_group_of(
        &cgroups,
        v2_cpu,
        read("/proc/sys/kernel/sched_autogroup_enabled").as_deref() == Some("1"),
        read("/proc/self/autogroup").as_deref(),
    )
}

/// [`task_group`] from `/proc/self/cgroup`, whether the `cpu` controller governs the
/// process's v2 cgroup, `sched_autogroup_enabled` and `/proc/self/autogroup`.
pub(super) fn task_group_of(
    cgroups: &str,
    v2_cpu: bool,
    autogroup_enabled: bool,
    autogroup: Option<&str>,
) -> String {
    let path_of = |l: &str| -> Option<(String, String)> {
        let mut f = l.splitn(3, ':');
        let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
        Some((ctl.to_string(), path.to_string()))
    };
    let lines: Vec<(String, String)> = cgroups.lines().filter_map(path_of).collect();
    let cpu_path = lines
        .iter()
        .find(|(ctl, _)| ctl.split(',').any(|c| c == "cpu"))
        .map(|(_, p)| p.clone())
        .or_else(|| {
            lines
                .iter()
                .find(|(ctl, _)| ctl.is_empty() && v2_cpu)
                .map(|(_, p)| p.clone())
        });
    match cpu_path {
        Some(p) if p != "/" => format!("cgroup {p}"),
        _ if autogroup_enabled => autogroup
            .and_then(|a| a.split_whitespace().next())
            .map(|a| a.trim_start_matches('/').to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// HZ and the preemption model.
pub(super) fn kernel_facts(config: &str) -> (u32, String, &'static str) {
    let (hz, hz_src) = match config_value(config, "CONFIG_HZ").and_then(|v| v.parse().ok()) {
        Some(hz) => (hz, "kernel config CONFIG_HZ"),
        None => (
            250,
            "not found (no /proc/config.gz or /boot/config): 250, x86 defconfig",
        ),
    };
    let model = ["NONE", "VOLUNTARY", "LAZY", "RT"]
        .iter()
        .find(|m| config_value(config, &format!("CONFIG_PREEMPT_{m}")) == Some("y"))
        .map(|m| m.to_lowercase())
        .unwrap_or_else(|| {
            if config_value(config, "CONFIG_PREEMPT") == Some("y") {
                "full".into()
            } else {
                "unknown".into()
            }
        });
    let dynamic = config_value(config, "CONFIG_PREEMPT_DYNAMIC") == Some("y");
    let boot = read("/sys/kernel/debug/sched/preempt").and_then(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('('))
            .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
    });
    let preempt = match (dynamic, boot) {
        (true, Some(b)) => format!("preempt={b} (PREEMPT_DYNAMIC)"),
        (true, None) => format!("PREEMPT_DYNAMIC, built default {model}"),
        (false, _) => format!("preempt {model}"),
    };
    (hz, preempt, hz_src)
}

/// Core, LLC, node and package ids of CPUs `0..n`, and the node distances, from sysfs.
pub(super) fn topology(n: usize) -> CpuIds {
    let cpu = |c: usize, f: &str| read(&format!("/sys/devices/system/cpu/cpu{c}/{f}"));
    let mut ids = CpuIds {
        core: Vec::new(),
        llc: Vec::new(),
        node: Vec::new(),
        package: Vec::new(),
        distance: Vec::new(),
        node_reclaim_distance: None,
    };
    for c in 0..n {
        // Core: the first CPU of its thread siblings (core_id repeats across packages).
        let first = |f: &str| {
            cpu(c, f)
                .and_then(|l| crate::host::parse_cpu_list(&l).ok())
                .and_then(|v| v.first().copied())
                .unwrap_or(c)
        };
        ids.core.push(first("topology/thread_siblings_list"));
        let llc = (0..8)
            .rev()
            .find_map(|i| cpu(c, &format!("cache/index{i}/shared_cpu_list")))
            .and_then(|l| crate::host::parse_cpu_list(&l).ok())
            .and_then(|v| v.first().copied())
            .unwrap_or(c);
        ids.llc.push(llc);
        let node = (0..64)
            .find(|i| {
                std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{c}/node{i}")).exists()
            })
            .unwrap_or(0);
        ids.node.push(node);
        let package = cpu(c, "topology/physical_package_id").and_then(|p| p.trim().parse().ok());
        ids.package.push(package.unwrap_or(0));
    }
    // The SLIT as the kernel reports it; a single node needs none.
    let nodes = ids.node.iter().max().map_or(1, |m| m + 1);
    if nodes > 1 {
        let rows: Option<Vec<Vec<u32>>> = (0..nodes)
            .map(|i| {
                read(&format!("/sys/devices/system/node/node{i}/distance")).map(|l| {
                    l.split_whitespace()
                        .filter_map(|d| d.parse().ok())
                        .collect()
                })
            })
            .collect();
        ids.distance = rows
            .filter(|r| r.iter().all(|v| v.len() == nodes))
            .unwrap_or_default();
    }
    if ids.package.iter().all(|&p| p == 0) && nodes == 1 {
        ids.package.clear(); // one package, one node: nothing to add
    }
    ids
}

/// `(size, ways, line)` of the level-`level` data or unified cache of CPU 0.
pub(super) fn cache(level: u32) -> Option<(u64, u64, u64)> {
    (0..8).find_map(|i| {
        let f = |n: &str| read(&format!("/sys/devices/system/cpu/cpu0/cache/index{i}/{n}"));
        if f("level")?.parse::<u32>().ok()? != level || f("type")? == "Instruction" {
            return None;
        }
        let size = f("size")?;
        let kb: u64 = size.trim_end_matches('K').parse().ok()?;
        Some((
            kb * 1024,
            f("ways_of_associativity")?.parse().ok()?,
            f("coherency_line_size")?.parse().ok()?,
        ))
    })
}

pub(super) fn cpu_model_and_mhz() -> (String, u64, bool) {
    let info = read("/proc/cpuinfo").unwrap_or_default();
    let field = |k: &str| {
        info.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let mhz = field("cpu MHz")
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(1000.0);
    let hv = field("flags").is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"));
    (
        field("model name").unwrap_or_else(|| "unknown CPU".into()),
        mhz.round() as u64,
        hv,
    )
}

pub(super) fn limits() -> Limits {
    let num = |p: &str| read(p).and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    let ram_kb = read("/proc/meminfo")
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(1 << 20);
    let max_threads = num("/proc/sys/kernel/threads-max").unwrap_or(32768);
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) };
    Limits {
        ram_mb: ram_kb / 1024,
        max_threads,
        nproc: rl.rlim_cur.min(max_threads),
        file_max: num("/proc/sys/fs/file-max").unwrap_or(1 << 20).min(1 << 24),
        pid_max: schedlab::kernel::limits::PID_MAX,
        nproc_binds_root: true,
        kmem_kb: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hz_and_the_preemption_model_come_from_the_kernel_config() {
        let cfg = "CONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_PREEMPT_VOLUNTARY=y\n";
        let (hz, preempt, _) = kernel_facts(cfg);
        assert_eq!((hz, preempt.as_str()), (1000, "preempt voluntary"));
        let cfg = "CONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        let (hz, preempt, _) = kernel_facts(cfg);
        assert_eq!(hz, 250);
        assert!(preempt.contains("PREEMPT_DYNAMIC"), "{preempt}");
        let (hz, _, src) = kernel_facts("");
        assert_eq!(hz, 250);
        assert!(src.starts_with("not found"));
    }

    #[test]
    fn the_task_group_is_a_cpu_cgroup_else_the_autogroup_else_the_root() {
        // This host: v1 hierarchies, `cpu` at the root, autogroup on.
        let v1_root = "9:name=systemd:/\n4:memory:/process_api/6f4c\n1:cpu:/\n0::/\n";
        assert_eq!(
            task_group_of(v1_root, false, true, Some("/autogroup-399 nice 0")),
            "autogroup-399"
        );
        assert_eq!(
            task_group_of(v1_root, false, false, Some("/autogroup-399 nice 0")),
            ""
        );
        // A v1 `cpu` cgroup (here with cpuacct) takes precedence over the autogroup.
        let v1 = "3:cpu,cpuacct:/user.slice\n0::/\n";
        assert_eq!(
            task_group_of(v1, false, true, Some("/autogroup-1 nice 0")),
            "cgroup /user.slice"
        );
        // v2: the unified line counts only when its hierarchy has the cpu controller.
        let v2 = "0::/user.slice/user-1000.slice/session-2.scope\n";
        assert_eq!(
            task_group_of(v2, true, true, None),
            "cgroup /user.slice/user-1000.slice/session-2.scope"
        );
        assert_eq!(task_group_of(v2, false, false, None), "");
        assert_eq!(task_group_of("0::/\n", true, false, None), "");
    }
}
