//! What a native run needs of this host, checked before anything is forked.
//!
//! A run far beyond the host's limits used to find them the hard way: thousands of forks
//! before the first refusal, or a thread whose alternate signal stack could not be
//! mapped (a panic). [`check`] compares what the workload will hold at once ([`needs`])
//! with the limits that would refuse it — `RLIMIT_NOFILE`, `kernel.pid_max`,
//! `kernel.threads-max`, `RLIMIT_NPROC`, `vm.max_map_count`, available memory — and
//! refuses in one line naming the limit, its value and how to raise it.
//!
//! model: the needs are lower bounds read from each workload's structure (one entry per
//! workload, below); a limit hit anyway is still named when the call fails
//! ([`crate::sys::explain`]).

use schedlab::spec::Params;

/// What a run holds at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Processes and threads, the leader included.
    pub tasks: u64,
    /// Threads in the busiest process (memory maps: stack and signal stack, each with a
    /// guard).
    pub threads: u64,
    /// Open files in the busiest process.
    pub fds: u64,
    /// Memory the workload itself touches, KB (e.g. lat_ctx's arrays).
    pub mem_kb: u64,
}

fn get(p: &Params, key: &str) -> u64 {
    p.raw(key).parse().unwrap_or(0)
}

/// The needs of workload `name` with parameters `p` (validated and prepared).
pub fn needs(name: &str, p: &Params) -> Needs {
    let on = |k: &str| p.raw(k) == "on";
    match name {
        "hackbench" => {
            // One channel per receiver; the leader holds them while it spawns.
            let n = 2 * get(p, "fds") * get(p, "groups");
            Needs {
                tasks: n + 1,
                threads: if on("threads") { n } else { 0 },
                fds: get(p, "fds") * get(p, "groups") * 2 + 8,
                mem_kb: 0,
            }
        }
        "reflex" => {
            let t = get(p, "tasks");
            Needs {
                tasks: t + 1,
                threads: t,
                fds: 2 * t + 8,
                mem_kb: 0,
            }
        }
        "chat" => {
            // Server and client processes: every user is a connection with two threads
            // on each side; the server also holds a duplicate of each connection.
            let n = get(p, "rooms") * get(p, "users");
            Needs {
                tasks: 4 * n + 3,
                threads: 2 * n,
                fds: 2 * n + 8,
                mem_kb: 0,
            }
        }
        "sched_yield" => {
            let t = get(p, "threads");
            Needs {
                tasks: t + 1,
                threads: t,
                fds: 8,
                mem_kb: 0,
            }
        }
        "loop_yield" => Needs {
            tasks: get(p, "instances") + 1,
            threads: 0,
            fds: 8,
            mem_kb: 0,
        },
        "lat_ctx" => {
            let n = get(p, "procs");
            Needs {
                tasks: n + 1,
                threads: 0,
                fds: 2 * n + 8,
                mem_kb: n * get(p, "size_kb"),
            }
        }
        _ => Needs {
            tasks: 2,
            threads: 0,
            fds: 8,
            mem_kb: 0,
        },
    }
}

/// The host's limits and what is in use now.
#[derive(Clone, Debug)]
pub struct HostLimits {
    /// `RLIMIT_NOFILE` (soft, hard).
    pub nofile: (u64, u64),
    /// `RLIMIT_NPROC` (soft, hard); not enforced for root.
    pub nproc: (u64, u64),
    /// This process runs as root (RLIMIT_NPROC does not apply).
    pub root: bool,
    /// `kernel.pid_max`.
    pub pid_max: u64,
    /// `kernel.threads-max`.
    pub threads_max: u64,
    /// `vm.max_map_count`.
    pub max_map_count: u64,
    /// `MemAvailable`, KB.
    pub mem_available_kb: u64,
    /// Tasks (threads) alive on the host now.
    pub tasks_now: u64,
    /// Files open in this process now.
    pub fds_now: u64,
}

fn rlimit(res: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(res, &mut r) } != 0 {
        return (u64::MAX, u64::MAX);
    }
    (r.rlim_cur, r.rlim_max)
}

fn proc_u64(path: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

fn count_dir(path: &str) -> u64 {
    std::fs::read_dir(path)
        .map(|d| d.count() as u64)
        .unwrap_or(0)
}

impl HostLimits {
    /// Read them.
    pub fn read() -> HostLimits {
        let mem_available_kb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemAvailable:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(u64::MAX);
        let tasks_now = std::fs::read_dir("/proc")
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                    .map(|e| count_dir(&format!("/proc/{}/task", e.file_name().to_string_lossy())))
                    .sum()
            })
            .unwrap_or(0);
        HostLimits {
            nofile: rlimit(libc::RLIMIT_NOFILE),
            nproc: rlimit(libc::RLIMIT_NPROC),
            // SAFETY: geteuid has no preconditions.
            root: unsafe { libc::geteuid() } == 0,
            pid_max: proc_u64("/proc/sys/kernel/pid_max"),
            threads_max: proc_u64("/proc/sys/kernel/threads-max"),
            max_map_count: proc_u64("/proc/sys/vm/max_map_count"),
            mem_available_kb,
            tasks_now,
            fds_now: count_dir("/proc/self/fd"),
        }
    }
}

/// Memory maps per thread: its stack and guard, its alternate signal stack and guard.
const MAPS_PER_THREAD: u64 = 4;
/// Kernel memory per task (kernel stack, task and page-table structures), KB — a floor.
const KB_PER_TASK: u64 = 64;

/// Refuse `needs` if a limit of `host` would stop it; the line names the limit, its
/// value, and how to raise it.
pub fn check_against(spec: &str, n: Needs, host: &HostLimits) -> Result<(), String> {
    let refuse = |what: String| Err(format!("{spec} cannot run on this host: {what}"));
    if n.fds + host.fds_now > host.nofile.0 {
        let raise = if n.fds + host.fds_now > host.nofile.1 {
            format!("the hard limit, {}, must be raised too", host.nofile.1)
        } else {
            format!("the hard limit is {}", host.nofile.1)
        };
        return refuse(format!(
            "it needs {} open files in one process, over the per-process open-file limit \
             RLIMIT_NOFILE = {}; raise it with `ulimit -n N` ({raise})",
            n.fds, host.nofile.0
        ));
    }
    let total = n.tasks + host.tasks_now;
    if total > host.pid_max {
        return refuse(format!(
            "it needs {} tasks at once and {} exist, over kernel.pid_max = {}; raise it with \
             `sysctl kernel.pid_max=N`",
            n.tasks, host.tasks_now, host.pid_max
        ));
    }
    if total > host.threads_max {
        return refuse(format!(
            "it needs {} tasks at once and {} exist, over kernel.threads-max = {}; raise it \
             with `sysctl kernel.threads-max=N`",
            n.tasks, host.tasks_now, host.threads_max
        ));
    }
    if !host.root && n.tasks > host.nproc.0 {
        return refuse(format!(
            "it needs {} tasks at once, over the per-user process limit RLIMIT_NPROC = {}; \
             raise it with `ulimit -u N`",
            n.tasks, host.nproc.0
        ));
    }
    let maps = n.threads * MAPS_PER_THREAD + 1024;
    if maps > host.max_map_count {
        return refuse(format!(
            "its {} threads in one process need about {maps} memory maps, over \
             vm.max_map_count = {}; raise it with `sysctl vm.max_map_count=N`",
            n.threads, host.max_map_count
        ));
    }
    let kb = n.tasks * KB_PER_TASK + n.mem_kb;
    if kb > host.mem_available_kb {
        return refuse(format!(
            "it needs at least {} MB of memory, over the {} MB available (MemAvailable)",
            kb / 1024,
            host.mem_available_kb / 1024
        ));
    }
    Ok(())
}

/// [`check_against`] this host's limits as they are now.
pub fn check(spec: &str, name: &str, p: &Params) -> Result<(), String> {
    check_against(spec, needs(name, p), &HostLimits::read())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostLimits {
        HostLimits {
            nofile: (1024, 4096),
            nproc: (4000, 4000),
            root: false,
            pid_max: 20000,
            threads_max: 100_000,
            max_map_count: 65530,
            mem_available_kb: 8 << 20,
            tasks_now: 300,
            fds_now: 5,
        }
    }

    fn refused_on(spec: &str, h: &HostLimits) -> String {
        let (w, _, p) = crate::parse(spec).unwrap();
        check_against(spec, needs(w.name, &p), h).unwrap_err()
    }

    fn refused(spec: &str) -> String {
        refused_on(spec, &host())
    }

    #[test]
    fn each_limit_is_named_with_its_value_and_how_to_raise_it() {
        let e = refused("reflex:tasks=1000");
        assert!(
            e.contains("RLIMIT_NOFILE = 1024") && e.contains("ulimit -n"),
            "{e}"
        );
        let e = refused("hackbench:groups=100000");
        assert!(e.contains("RLIMIT_NOFILE"), "{e}");
        let mut h = host();
        h.nofile = (1 << 20, 1 << 20);
        let e = refused_on("hackbench:groups=2500,fds=1", &h);
        assert!(
            e.contains("RLIMIT_NPROC = 4000") && e.contains("ulimit -u"),
            "{e}"
        );
        let e = refused("loop_yield:instances=30000");
        assert!(
            e.contains("kernel.pid_max = 20000") && e.contains("sysctl"),
            "{e}"
        );
        let e = refused("lat_ctx:procs=200,size_kb=65536");
        assert!(e.contains("MemAvailable"), "{e}");
        h.nproc = (1 << 20, 1 << 20);
        h.pid_max = 1 << 22;
        h.threads_max = 1 << 22;
        let e = refused_on("chat:rooms=1000", &h);
        assert!(e.contains("vm.max_map_count = 65530"), "{e}");
        // A small run passes.
        let (w, _, p) = crate::parse("hackbench:groups=2").unwrap();
        assert_eq!(
            check_against("hackbench:groups=2", needs(w.name, &p), &host()),
            Ok(())
        );
    }
}
