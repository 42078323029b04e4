//! The host: what it is (kernel, CPU model, CPU count) and cheap system-wide counters
//! (`/proc/stat`: context switches, forks, CPU time by state), sampled around a run.

use serde::Serialize;

/// The machine a native run ran on (in place of a preset in the report).
#[derive(Clone, Debug, Serialize)]
pub struct Host {
    /// Always `host`.
    pub name: String,
    /// CPU model and count, for humans.
    pub description: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// CPUs this process may run on (`nproc`).
    pub nproc: usize,
    /// CPUs online.
    pub cpus_online: usize,
    /// The CPUs this process may run on, as a list (`0-1`); what `--pin` set, if used.
    pub cpus_allowed: String,
}

fn first_line(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
}

/// Describe this host.
pub fn host() -> Host {
    let kernel = first_line("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':').map(|(_, v)| v.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let nproc = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let allowed = format_cpu_list(&allowed_cpus());
    Host {
        name: "host".into(),
        description: format!(
            "{cpu_model}, {online} CPUs online (running on {allowed}), Linux {kernel}"
        ),
        kernel,
        cpu_model,
        nproc,
        cpus_online: online,
        cpus_allowed: allowed,
    }
}

/// The CPUs this process may run on (`sched_getaffinity`).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call only writes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid, writable cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: i < CPU_SETSIZE.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect()
}

/// Parse a CPU list as `taskset -c` takes it: `0`, `0,2`, `0-3`, `0-1,4`.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let bad =
        || format!("bad CPU list '{s}': expected CPU numbers and ranges such as 0 or 0,2 or 0-3");
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        if a > b || b >= libc::CPU_SETSIZE as usize {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Format a sorted CPU list compactly (`0-3,6`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Confine this process, and so every process it starts afterwards (the workload's and the
/// compared tools'), to `list`. On a small virtual machine a ping-pong such as lat_pipe is
/// bimodal — both ends on one CPU, or a cross-CPU wake-up through the hypervisor, an order
/// of magnitude slower — and which mode the host's scheduler picks varies from run to run;
/// pinning both tools alike makes `--compare` measure one mode.
pub fn pin(list: &str) -> Result<(), String> {
    let cpus = parse_cpu_list(list)?;
    let allowed = allowed_cpus();
    if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
        return Err(format!(
            "cannot pin to CPU {c}: this process may run on {} only",
            format_cpu_list(&allowed)
        ));
    }
    set_affinity(&cpus)
}

/// `sched_setaffinity(0, cpus)` without checking `cpus` against the current mask (a
/// pinned process moving its child to a CPU it inherited no right to: the kernel checks
/// the cpuset, not the parent's mask).
pub fn set_affinity(cpus: &[usize]) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET indices are < CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: c < CPU_SETSIZE (filtered above).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the given size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(format!(
            "cannot pin to CPUs {}: sched_setaffinity failed ({})",
            format_cpu_list(cpus),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// A `/proc/stat` sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stat {
    /// `ctxt`: context switches since boot, all CPUs.
    pub ctxt: u64,
    /// `processes`: forks since boot.
    pub processes: u64,
    /// `cpu` line: user+nice jiffies.
    pub user: u64,
    /// system+irq+softirq jiffies.
    pub system: u64,
    /// idle+iowait jiffies.
    pub idle: u64,
    /// everything (incl. steal).
    pub total: u64,
}

/// Read `/proc/stat` (zeros where it cannot be read).
pub fn stat() -> Stat {
    let mut s = Stat::default();
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return s;
    };
    for line in text.lines() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("cpu") => {
                let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
                let g = |i: usize| v.get(i).copied().unwrap_or(0);
                s.user = g(0) + g(1);
                s.system = g(2) + g(5) + g(6);
                s.idle = g(3) + g(4);
                s.total = v.iter().take(8).sum();
            }
            Some("ctxt") => s.ctxt = it.next().and_then(|x| x.parse().ok()).unwrap_or(0),
            Some("processes") => s.processes = it.next().and_then(|x| x.parse().ok()).unwrap_or(0),
            _ => {}
        }
    }
    s
}

/// Change between two samples.
pub fn delta(a: &Stat, b: &Stat) -> Stat {
    Stat {
        ctxt: b.ctxt.saturating_sub(a.ctxt),
        processes: b.processes.saturating_sub(a.processes),
        user: b.user.saturating_sub(a.user),
        system: b.system.saturating_sub(a.system),
        idle: b.idle.saturating_sub(a.idle),
        total: b.total.saturating_sub(a.total),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_taskset() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("3,0-1,1").unwrap(), vec![0, 1, 3]);
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        for bad in ["", "a", "2-1", "0,,1", "-1", "99999"] {
            let e = parse_cpu_list(bad).unwrap_err();
            assert!(e.starts_with("bad CPU list"), "{bad}: {e}");
        }
    }

    #[test]
    fn pinning_outside_the_allowed_set_is_refused() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let outside = (0..1024).find(|c| !allowed.contains(c)).unwrap();
        let e = pin(&outside.to_string()).unwrap_err();
        assert!(
            e.starts_with(&format!("cannot pin to CPU {outside}")),
            "{e}"
        );
    }
}
