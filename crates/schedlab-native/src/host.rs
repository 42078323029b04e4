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
    Host {
        name: "host".into(),
        description: format!("{cpu_model}, {online} CPUs online, Linux {kernel}"),
        kernel,
        cpu_model,
        nproc,
        cpus_online: online,
    }
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
