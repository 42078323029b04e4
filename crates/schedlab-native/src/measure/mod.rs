//! Measure this host into a `host` preset (`schedlab validate --measure FILE`).
//!
//! Design: what the kernel tells (CPUs, core/LLC/node ids, cache geometry, HZ, preemption
//! model, pipe and socket buffer sizes, limits) is read from sysfs, procfs and the kernel
//! config; the costs are solved from micro-benchmarks of single kernel paths. Each
//! micro-benchmark runs `reps` rounds of one timed sample, interleaved with the others
//! (round `k` of every benchmark before round `k + 1` of any), and keeps the median and
//! the quartiles (`benchmarks`, `benchmark_spread` in the file). The equations are solved
//! in the order in which each has one unknown left, and a difference is solved only when
//! it exceeds the spread of its terms ([`solve`]):
//!
//! | cost                 | micro-benchmark (per operation)                              |
//! |----------------------|--------------------------------------------------------------|
//! | `syscall_ns`         | `getppid()`                                                  |
//! | `pipe_call_ns`       | 1-byte pipe write + read in one thread, less two syscalls, / 2 |
//! | `copy_ns_per_kb`     | the same with 64 KB, less the 1-byte pair, / 128 KB copied   |
//! | `unix_call_ns`       | 100-byte AF_UNIX write + read, less syscalls and copies, / 2 |
//! | `schedule_ns`        | `sched_yield()` alone on a CPU, less a syscall               |
//! | `switch_ns`          | two threads yielding on one CPU, less one alone              |
//! | `wakeup_ns`          | thread ping-pong on one CPU, per hop, less the above         |
//! | `switch_mm_ns`       | process ping-pong on one CPU less the thread one, per hop    |
//! | `ipi_send_ns`        | a `write()` waking a reader on another CPU, less a local one |
//! | `ipi_latency_ns`     | `membarrier()` beside a thread spinning on another CPU, less alone, less the send |
//! | `idle_exit_ns`       | solved with the simulator: the process ping-pong across CPUs |
//! | `skb_cold_ns`        | 80 socketpairs queued 4 × L2 deep, less 1 deep, per skb      |
//! | `skb_depth_ns`       | queues of L2/2, L2, 2 L2 … 64 MB written across sockets, less 1 deep: each band |
//! | `pipe_depth_ns`      | 100-byte messages across pipes, L2/2, L2, 2 L2 … 64 MB of data, less 8 pipes 200 deep: each band |
//! | `skb_remote_ns`      | AF_UNIX messages written on one CPU, read on another, less both on one |
//! | `skb_page_shared_ns` | the deep queue beside another CPU's own, less alone, × 2     |
//! | `task_refill_ns`     | N threads yielding in turn on one CPU (N = 2, 3, 4, 16, 64), less 2: at N − 1 switches |
//! | `mm_refill_ns`       | N processes yielding in turn on one CPU, less N threads, less 2 |
//! | `wake_refill_ns`     | N threads round a ring of pipes on one CPU, less N threads yielding, less 2 |
//! | `skb_shared_ns`      | 80 socketpairs 1 deep, L2/8, L2/2, 5 L2/4 and 4 L2 (written across sockets) beside another CPU's own, less alone, × 2: each band |
//! | `tcp_*_ns`           | 100-byte loopback TCP write + read in one thread, and 32 writes held with `MSG_MORE` then sent as one segment: per call and per segment |
//! | `fork_ns` …          | `fork()` in the parent; `waitpid()` of a zombie; the rest exit |
//! | `fork_child_ns`      | a child's first byte to its parent on one CPU, less two process hops |
//! | `exit_ns`            | that child, released, to its parent's `waitpid()`, less a process hop and the wait |
//! | `exec_ns`            | fork + exec of `lat_proc`'s program + wait on one CPU, less fork+exit+wait |
//! | `c2c_line_ns`        | a line bounced between two CPUs, per transfer                |
//! | `l2_line_ns`, `mem_line_ns` | streaming reads of half the L2 and of 64 MB, per line  |
//! | `mem_latency_ns`     | dependent loads through a random cycle over 4 × L2           |
//!
//! Invariants: every cost the model uses has a value and a source string; a cost no
//! micro-benchmark reaches keeps the P6 preset's value and says so; a solved cost is
//! never negative, and a difference within its spread is not solved (the documented rule
//! of [`solve`] applies, and the source says so). The process's CPU affinity is restored
//! afterwards.
//!
//! Layout: [`bench`] holds the micro-benchmarks, [`probe`] what the kernel tells, [`solve`]
//! the cost equations.

mod bench;
mod probe;
mod solve;

use std::collections::BTreeMap;
use std::os::fd::RawFd;

use schedlab::machine::host::{HostFile, Measured, SCHEMA};

use crate::host::{allowed_cpus, set_affinity};
use crate::sys::{self, Res};

use bench::*;
use probe::*;
use solve::{solve, Geometry};

/// One point of the skb depth curve: `sockets` socketpairs queued `depth` deep, `bytes`
/// of skbs in all (truesize).
struct DepthPoint {
    name: &'static str,
    sockets: usize,
    depth: usize,
    bytes: u64,
}

/// Writes per segment of the corked TCP micro-benchmark (`tcp_corked_32x100`).
pub(super) const TCP_CORKED_WRITES: usize = 32;

/// The deepest queue the depth curve measures: beyond a VM's or a desktop's LLC share,
/// within what a round can take in time and memory.
const DEPTH_MAX_BYTES: u64 = 64 << 20;

/// The depth curve's points (`unix_depth_J`): queues of L2/2, L2, 2 L2 … up to
/// [`DEPTH_MAX_BYTES`], each on as many socketpairs as it needs at three quarters of what
/// one takes before `EAGAIN`, and no more than `fds` descriptors allow.
fn depth_points(l2: u64, truesize: usize, msgs: u64, fds: usize) -> Vec<DepthPoint> {
    let per_socket = (msgs as usize * 3 / 4).max(1);
    let mut points = Vec::new();
    let mut target = (l2 / 2).max(64 << 10);
    while target <= DEPTH_MAX_BYTES {
        let sockets = (target as usize).div_ceil(per_socket * truesize);
        let depth = (target as usize)
            .div_ceil(sockets * truesize)
            .min(per_socket);
        if 2 * sockets > fds {
            break;
        }
        let name = Box::leak(format!("unix_depth_{}", points.len()).into_boxed_str());
        let bytes = (sockets * depth * truesize) as u64;
        points.push(DepthPoint {
            name,
            sockets,
            depth,
            bytes,
        });
        target *= 2;
    }
    points
}

/// A pipe holds at most this many 100-byte messages in the depth curve's queues: below
/// the 640 that 16 pages take, so that no write waits.
const PIPE_DEPTH_MSGS: usize = 600;

/// The pipe depth curve's points (`pipe_depth_J`): 100-byte messages queued across as many
/// pipes as L2/2, L2, 2 L2 … up to [`DEPTH_MAX_BYTES`] of data take at
/// [`PIPE_DEPTH_MSGS`] each, no more than `fds` descriptors allow. `sockets` is the pipes.
fn pipe_depth_points(l2: u64, fds: usize) -> Vec<DepthPoint> {
    let per_pipe = PIPE_DEPTH_MSGS * 100;
    let mut points = Vec::new();
    let mut target = (l2 / 2).max(64 << 10);
    while target <= DEPTH_MAX_BYTES {
        let pipes = (target as usize).div_ceil(per_pipe);
        let depth = (target as usize).div_ceil(pipes * 100).min(PIPE_DEPTH_MSGS);
        if 2 * pipes > fds {
            break;
        }
        let name = Box::leak(format!("pipe_depth_{}", points.len()).into_boxed_str());
        points.push(DepthPoint {
            name,
            sockets: pipes,
            depth,
            bytes: (pipes * depth * 100) as u64,
        });
        target *= 2;
    }
    points
}

/// The depths (skbs per socket over 80 socketpairs, written interleaved) at which
/// `skb_shared_ns` is measured, each alone and beside another CPU's queue: 1 deep, then
/// L2/8, L2/2, 5 L2/4 and 4 L2 of truesize (where the per-CPU caches of the allocator,
/// then the L2, give out), within what a socket takes.
fn shared_depths(l2: u64, truesize: usize, deep: usize) -> Vec<usize> {
    let per = |bytes: u64| (bytes as usize / (80 * truesize)).clamp(1, deep);
    let mut ks = vec![1, per(l2 / 8), per(l2 / 2), per(l2 * 5 / 4), deep];
    ks.dedup();
    ks
}

/// Descriptors this process may still open, after raising its soft `RLIMIT_NOFILE` to
/// the hard limit (the deepest queue needs several hundred socketpairs).
fn open_files_allowed() -> usize {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer; setrlimit only raises the soft limit up to the hard one.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 {
            let want = rl.rlim_max.min(1 << 16);
            if want > rl.rlim_cur {
                let raised = libc::rlimit {
                    rlim_cur: want,
                    rlim_max: rl.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    rl.rlim_cur = want;
                }
            }
        }
    }
    let open = std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count());
    (rl.rlim_cur as usize).saturating_sub(open + 64)
}

/// What to measure with.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    /// Timed repetitions per micro-benchmark (the median is kept).
    pub reps: usize,
    /// The command line written into the file.
    pub command: String,
}

/// Progress: `(done, total, what)` after each round of the micro-benchmarks.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// The cost the fit adjusts with the simulator such that the simulated split lat_pipe
/// round trip equals the measured one: `idle_exit_ns` when the IPI's delivery to a running
/// CPU was measured (membarrier), else `ipi_latency_ns` with the idle exit inside it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fitted {
    IdleExit,
    IpiLatency,
}

impl Fitted {
    /// The cost's name in the host file.
    fn field(self) -> &'static str {
        match self {
            Fitted::IdleExit => "idle_exit_ns",
            Fitted::IpiLatency => "ipi_latency_ns",
        }
    }

    fn set(self, f: &mut HostFile, ns: u64) {
        match self {
            Fitted::IdleExit => f.costs.idle_exit_ns = ns,
            Fitted::IpiLatency => f.costs.ipi_latency_ns = ns,
        }
    }
}

/// Fit `what` such that the simulated split lat_pipe round trip equals `target_us`.
fn fit_wakeup_latency(file: &HostFile, what: Fitted, target_us: f64) -> Result<(u64, f64), String> {
    let sim = |ns: u64| -> Result<f64, String> {
        let mut f = file.clone();
        what.set(&mut f, ns);
        let preset: &'static schedlab::machine::Preset = Box::leak(Box::new(f.to_preset()));
        let m = schedlab::machine::Machine::boot(preset, Some(2.min(f.cpus)))?;
        let cfg = schedlab::RunConfig {
            machine: "host".into(),
            cpus: None,
            policy: f.measured.host_policy(),
            workload: "lat_pipe:pin=split,rounds=2000,warmup=50".into(),
            seed: 1,
        };
        let mut sim = schedlab::Simulation::on_machine(cfg, m).map_err(|e| e.to_string())?;
        sim.run(&mut |_, _| {}).map_err(|e| e.to_string())?;
        Ok(sim.report().map_err(|e| e.to_string())?.result.value)
    };
    // The smallest value that matches: bracket the first crossing by growing from 250 ns
    // in steps of a half (doubling could step over a region where the round trip dips,
    // an IPI in flight serving a later wake-up), then bisect inside it.
    if sim(0)? >= target_us {
        return Ok((0, sim(0)?));
    }
    let (mut lo, mut hi) = (0u64, 250u64);
    while sim(hi)? < target_us {
        if hi >= 1_000_000 {
            return Err(format!(
                "cannot fit {}: the simulated split lat_pipe stays below the measured {target_us:.2} us",
                what.field()
            ));
        }
        (lo, hi) = (hi, hi * 3 / 2);
    }
    while hi - lo > 10 {
        let mid = (lo + hi) / 2;
        if sim(mid)? < target_us {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // The round trip can jump at the crossing (past some latency the waker has gone idle
    // before the reply comes, and the reply needs an IPI too): keep the nearer side.
    let (below, above) = (sim(lo)?, sim(hi)?);
    if target_us - below < above - target_us {
        return Ok((lo, below));
    }
    Ok((hi, above))
}

/// Measure this host. Needs two allowed CPUs for the cross-CPU figures.
pub fn measure(o: &MeasureOptions, progress: Progress<'_>) -> Result<HostFile, String> {
    let allowed = allowed_cpus();
    let (a, b) = match allowed[..] {
        [a, b, ..] => (a, b),
        _ => {
            return Err(format!(
                "measuring needs 2 CPUs to run on, this process may use {} only",
                crate::host::format_cpu_list(&allowed)
            ))
        }
    };
    let before = CpuTimes::now();
    let r = run_benchmarks(o, a, b, progress).map_err(|e| e.to_string());
    let foreign_load_pct = before.and_then(|b| CpuTimes::now().map(|a| a.foreign_pct_since(&b)));
    let _ = set_affinity(&allowed);
    let (bench, spread, costs, mut src) = r?;
    let (cpu_model, _, virtualized) = cpu_model_and_mhz();
    // SAFETY: sysconf has no preconditions.
    let cpus = (unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize).min(64);
    let config = kernel_config();
    let (hz, preempt, hz_src) = kernel_facts(&config);
    src.insert("measured.hz".into(), hz_src.into());
    let mut file = HostFile {
        schema: SCHEMA.into(),
        measured: Measured {
            date: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            command: o.command.clone(),
            cpu_model,
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            hz,
            preempt,
            virtualized,
            foreign_load_pct: foreign_load_pct.map(|p| (p * 10.0).round() / 10.0),
            task_group: task_group(),
        },
        cpus,
        topology: topology(cpus),
        costs,
        limits: limits(),
        sources: src,
        benchmarks: bench,
        benchmark_spread: spread,
    };
    let target = 2.0 * file.benchmarks["hop_split_process"] / 1e3;
    let what = if file.benchmarks.contains_key("membarrier_beside_spinner") {
        Fitted::IdleExit
    } else {
        Fitted::IpiLatency
    };
    let (ns, got) = fit_wakeup_latency(&file, what, target)?;
    what.set(&mut file, ns);
    let how = match what {
        Fitted::IdleExit => "what waking a halted CPU adds to an IPI's delivery: a C-state's exit on bare metal, the host waking the vCPU under a hypervisor",
        Fitted::IpiLatency => "idle exit included: without membarrier it is not separable from user space",
    };
    file.sources.insert(
        what.field().into(),
        format!("fitted with the simulator: split-CPU lat_pipe {got:.2} us per round trip against {target:.2} measured ({how})"),
    );
    file.check()?;
    Ok(file)
}

/// The machine's CPU time and this process's own, at one instant: what other work took
/// while measuring is the difference of their growths.
struct CpuTimes {
    wall_ns: u64,
    /// All CPUs' busy and steal time (`/proc/stat`'s first line less idle and iowait).
    busy_ns: u64,
    /// This process and its reaped children (`getrusage`).
    own_ns: u64,
    cpus: u64,
}

impl CpuTimes {
    fn now() -> Option<CpuTimes> {
        let stat = read("/proc/stat")?;
        let f: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let busy: u64 = f.iter().take(8).sum::<u64>() - f.get(3)? - f.get(4)?;
        // SAFETY: sysconf has no preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let cpus = (stat.lines().filter(|l| l.starts_with("cpu")).count() as u64).max(2) - 1;
        Some(CpuTimes {
            wall_ns: crate::sys::now_ns(),
            busy_ns: busy * (1_000_000_000 / tick),
            own_ns: rusage_ns(libc::RUSAGE_SELF) + rusage_ns(libc::RUSAGE_CHILDREN),
            cpus,
        })
    }

    /// Other work's share of all CPUs since `before`, in %.
    fn foreign_pct_since(&self, before: &CpuTimes) -> f64 {
        let wall = self.wall_ns.saturating_sub(before.wall_ns).max(1) as f64;
        let busy = self.busy_ns.saturating_sub(before.busy_ns) as f64;
        let own = self.own_ns.saturating_sub(before.own_ns) as f64;
        (100.0 * (busy - own).max(0.0) / (wall * self.cpus as f64)).min(100.0)
    }
}

/// User and system time of `who` (`RUSAGE_SELF` or `RUSAGE_CHILDREN`), ns.
fn rusage_ns(who: libc::c_int) -> u64 {
    // SAFETY: a zeroed rusage is a valid value; getrusage fills it.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(who, &mut r) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// Medians, spreads (first and third quartile), costs and their sources.
type Measured4 = (
    BTreeMap<String, f64>,
    BTreeMap<String, [f64; 2]>,
    schedlab::machine::Costs,
    BTreeMap<String, String>,
);

/// One micro-benchmark: each call times one sample and returns its figures by name.
type Sample<'a> = Box<dyn FnMut() -> Res<Vec<(&'static str, f64)>> + 'a>;

/// Quartiles of `v`: (first, median, third).
fn quartiles(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

/// A figure as the host file keeps it: to the picosecond. The streamed refills are
/// differences of tens of ps between per-line figures of about half a ns; kept to a tenth
/// of a ns (as they were), a 0.57 and a 0.63 both read 0.6 and `llc_line_ps` swung
/// between 50 and 300 from one measurement to the next.
fn to_ps(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Every micro-benchmark, `reps` rounds of one sample each, interleaved: round `k` of
/// every benchmark runs before round `k + 1` of any, so a slow spell of the host (another
/// guest on the same core, a frequency step) lands in one sample of many benchmarks
/// rather than in every sample of one, and the median drops it.
fn run_benchmarks(
    o: &MeasureOptions,
    a: usize,
    b: usize,
    progress: Progress<'_>,
) -> Res<Measured4> {
    let reps = o.reps.max(5);
    pin_self(a)?;
    let forks = ForkServer::start()?;
    let (line, l1, l1_ways, l2, l2_ways) = match (cache(1), cache(2)) {
        (Some((l1, w1, line)), Some((l2, w2, _))) => (line, l1, w1, l2, w2),
        _ => (64, 32 * 1024, 8, 512 * 1024, 8),
    };
    // A shared level 3 at least four L2s deep: its streaming price is timed over four L2s
    // (a quarter of it at most, so that the pass stays inside).
    let llc = cache(3)
        .map(|(bytes, ways, _)| (bytes, ways))
        .filter(|&(bytes, _)| bytes >= 4 * l2);
    let llc_stream = llc.map(|(bytes, _)| (4 * l2).min(bytes / 4) as usize);
    let (msgs, sndbuf) = unix_fill(100)?;
    // Deep enough that the queued truesize is 4 x L2 (and within SO_SNDBUF).
    let truesize = solve::skb_truesize(sndbuf, msgs) as usize;
    let deep = (4 * l2 as usize / (80 * truesize)).clamp(2, msgs.max(2) as usize - 1);
    let deep_name: &'static str = Box::leak(format!("unix_queue_80x{deep}").into_boxed_str());
    // Benchmark names live as long as the samples keyed by them.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let refill: Vec<(usize, [&'static str; 3])> = solve::REFILL_TASKS
        .iter()
        .map(|&n| (n, solve::refill_names(n).map(leak)))
        .collect();
    let shared: Vec<(usize, &'static str, &'static str)> = shared_depths(l2, truesize, deep)
        .into_iter()
        .map(|k| {
            let (alone, paired) = solve::shared_names(k);
            (k, leak(alone), leak(paired))
        })
        .collect();
    let depths = depth_points(l2, truesize, msgs, open_files_allowed());
    let pipe_depths = pipe_depth_points(l2, open_files_allowed());
    let (pr, pw) = sys::pipe()?;
    let (ua, ub) = sys::socketpair()?;
    let tcp = tcp_loopback()?;
    let (udp_a, udp_b) = sys::udp_socketpair()?;
    let polled: Vec<(RawFd, RawFd)> = (0..100).map(|_| sys::pipe()).collect::<Res<_>>()?;
    let rd: Vec<RawFd> = polled.iter().map(|p| p.0).collect();
    let (lu, l1u, l2u) = (line as usize, l1 as usize, l2 as usize);
    let one = |name: &'static str, v: f64| Ok(vec![(name, v)]);
    let mut set: Vec<(&'static str, Sample<'_>)> = vec![
        (
            "getppid",
            Box::new(|| one("getppid", per_op(50_000, null_syscall)?)),
        ),
        (
            "pipe_pair_1",
            Box::new(|| one("pipe_pair_1", per_op(20_000, |n| pair(pw, pr, 1, n))?)),
        ),
        (
            "pipe_pair_65536",
            Box::new(|| {
                one(
                    "pipe_pair_65536",
                    per_op(1_000, |n| pair(pw, pr, 65536, n))?,
                )
            }),
        ),
        (
            "unix_pair_100",
            Box::new(|| one("unix_pair_100", per_op(10_000, |n| pair(ua, ub, 100, n))?)),
        ),
        (
            "yield_alone",
            Box::new(|| one("yield_alone", per_op(40_000, yield_loop)?)),
        ),
        (
            "yield_two_threads",
            Box::new(move || one("yield_two_threads", yielders(a, 2, 10_000)?)),
        ),
        (
            "refill",
            Box::new(move || {
                pin_self(a)?;
                let mut v = Vec::new();
                for &(n, ref names) in &refill {
                    let [t, p, r] = names;
                    v.push((*t, yielders(a, n, 120_000 / n as u64)?));
                    v.push((*p, yielders_procs(a, n, 80_000 / n as u64)?));
                    v.push((*r, thread_ring(a, n, 60_000 / n as u64)?));
                }
                Ok(v)
            }),
        ),
        (
            "hop_same_thread",
            Box::new(move || one("hop_same_thread", ping_pong(a, a, false, 5_000)?)),
        ),
        (
            "hop_same_process",
            Box::new(move || one("hop_same_process", ping_pong(a, a, true, 5_000)?)),
        ),
        (
            "hop_split_process",
            Box::new(move || one("hop_split_process", ping_pong(a, b, true, 5_000)?)),
        ),
        (
            "write_waking_remote",
            Box::new(move || one("write_waking_remote", waking_write(a, b, 400)?)),
        ),
        (
            "fork",
            Box::new(|| {
                let [f, w, whole, first, exec, ran_exit] = forks.sample()?;
                let mut v = vec![
                    ("fork_parent", f),
                    ("waitpid_zombie", w),
                    ("fork_exit_wait", whole),
                    ("fork_child_first_byte", first),
                    ("fork_child_exit", ran_exit),
                ];
                if exec.is_finite() {
                    v.push(("fork_exec_wait", exec));
                }
                Ok(v)
            }),
        ),
        (
            "thread_create",
            Box::new(|| one("thread_create", clone_cost(60)?)),
        ),
        (
            "line_bounce",
            Box::new(move || one("line_bounce", bounce(a, b, 50_000)?)),
        ),
        (
            "membarrier",
            Box::new(move || {
                Ok(match membarrier_ipi(a, b, 4_000)? {
                    Some([alone, beside]) => vec![
                        ("membarrier_alone", alone),
                        ("membarrier_beside_spinner", beside),
                    ],
                    None => vec![],
                })
            }),
        ),
        (
            "stream_c2c",
            Box::new(move || one("stream_c2c_64kb_per_line", stream_c2c(a, b, lu, 50)?)),
        ),
        (
            "chase",
            Box::new(move || {
                pin_self(a)?;
                Ok(vec![
                    ("chase_l1", chase(l1u / 2, lu, 500_000)),
                    ("chase_half_l2", chase(l2u / 2, lu, 500_000)),
                    ("chase_4x_l2", chase(4 * l2u, lu, 500_000)),
                    ("chase_64mb", chase(64 << 20, lu, 500_000)),
                ])
            }),
        ),
        (
            "stream",
            Box::new(move || {
                Ok(vec![
                    ("stream_64mb_per_line", stream(64 << 20, lu)),
                    (
                        "stream_half_l2_per_line",
                        stream_l2((l2u / 2).max(2 * l1u), lu, 8),
                    ),
                    ("stream_half_l1_per_line", stream_l2(l1u / 2, lu, 400)),
                    ("sum_l1_per_kb", sum_l1(5_000)),
                ]
                .into_iter()
                .chain(llc_stream.map(|bytes| ("stream_llc_per_line", stream_l2(bytes, lu, 32))))
                .collect())
            }),
        ),
        (
            "poll",
            Box::new(|| {
                Ok(vec![
                    ("poll_10", per_op(10_000, |n| poll_fds(&rd[..10], n))?),
                    ("poll_100", per_op(4_000, |n| poll_fds(&rd, n))?),
                ])
            }),
        ),
        (
            "pipe_create_close",
            Box::new(|| {
                one(
                    "pipe_create_close",
                    per_op(4_000, |n| {
                        for _ in 0..n {
                            let (r, w) = sys::pipe()?;
                            sys::close(r);
                            sys::close(w);
                        }
                        Ok(())
                    })?,
                )
            }),
        ),
        (
            "unix_queue",
            Box::new(move || {
                pin_self(a)?;
                Ok(vec![
                    ("unix_queue_80x1", unix_queue(80, 1, 50_000)?),
                    (deep_name, unix_queue(80, deep, 150_000)?),
                    (
                        "unix_queue_deep_paired",
                        paired(b, 80, deep, unix_queue_round, || {
                            unix_queue(80, deep, 150_000)
                        })?,
                    ),
                ])
            }),
        ),
        (
            "unix_shared",
            Box::new(move || {
                pin_self(a)?;
                let mut v = Vec::new();
                for &(k, alone, beside) in &shared {
                    v.push((alone, unix_depth(80, k, 50_000)?));
                    let timed = || unix_depth(80, k, 50_000);
                    v.push((beside, paired(b, 80, k, unix_depth_round, timed)?));
                }
                Ok(v)
            }),
        ),
        (
            "unix_depth",
            Box::new(|| {
                pin_self(a)?;
                depths
                    .iter()
                    .map(|p| Ok((p.name, unix_depth(p.sockets, p.depth, 100_000)?)))
                    .collect()
            }),
        ),
        (
            "pipe_depth",
            Box::new(|| {
                pin_self(a)?;
                // The origin: 8 pipes 200 deep, 160 KB. Shallower, each message would
                // take a page of its own (an empty pipe's write takes a new buffer).
                let mut v = vec![("pipe_depth_base", pipe_depth(8, 200, 50_000)?)];
                for p in &pipe_depths {
                    v.push((p.name, pipe_depth(p.sockets, p.depth, 100_000)?));
                }
                Ok(v)
            }),
        ),
        (
            "unix_handoff",
            Box::new(move || {
                Ok(vec![
                    ("unix_handoff_same", unix_handoff(a, a, 64, 100)?),
                    ("unix_handoff_split", unix_handoff(a, b, 64, 100)?),
                ])
            }),
        ),
        (
            "tcp_pair_100",
            Box::new(|| {
                pin_self(a)?;
                let (ns, segs) = tcp_pair(&tcp, 100, 5_000)?;
                let mut v = vec![("tcp_pair_100", ns)];
                v.extend(segs.map(|s| ("tcp_pair_100_segments", s)));
                let (ns, segs) = tcp_corked(&tcp, 100, TCP_CORKED_WRITES, 600)?;
                v.push(("tcp_corked_32x100", ns));
                v.extend(segs.map(|s| ("tcp_corked_32x100_segments", s)));
                Ok(v)
            }),
        ),
        (
            "udp_pair_100",
            Box::new(move || {
                pin_self(a)?;
                one("udp_pair_100", udp_pair(udp_a, udp_b, 100, 5_000)?)
            }),
        ),
    ];
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for k in 0..reps {
        for (name, sample) in set.iter_mut() {
            pin_self(a)?;
            let figures = sample().map_err(|e| format!("micro-benchmark {name}: {e}"))?;
            for (figure, v) in figures {
                samples.entry(figure.to_string()).or_default().push(v);
            }
        }
        progress(k + 1, reps, "round of every micro-benchmark");
    }
    drop(set);
    for fd in [pr, pw, ua, ub, udp_a, udp_b]
        .into_iter()
        .chain(polled.iter().flat_map(|p| [p.0, p.1]))
    {
        sys::close(fd);
    }
    let mut bench = BTreeMap::new();
    let mut spread = BTreeMap::new();
    for (name, v) in &samples {
        let (q1, m, q3) = quartiles(v);
        bench.insert(name.clone(), to_ps(m));
        spread.insert(name.clone(), [to_ps(q1), to_ps(q3)]);
    }
    bench.insert("unix_fill_100_msgs".into(), msgs as f64);
    bench.insert("unix_queue_deep".into(), deep as f64);
    for p in depths.iter().chain(&pipe_depths) {
        bench.insert(format!("{}_bytes", p.name), p.bytes as f64);
    }
    bench.insert("rounds".into(), reps as f64);
    let pipe_bytes = pipe_size()?;
    let (costs, src) = solve(
        &bench,
        &spread,
        Geometry {
            line,
            l1,
            l1_ways,
            l2,
            l2_ways,
            llc,
            sndbuf,
            msgs,
            pipe_bytes,
            mhz: cpu_model_and_mhz().1.max(1),
        },
    );
    Ok((bench, spread, costs, src))
}

#[cfg(test)]
mod tests {
    use super::CpuTimes;

    fn at(wall_ms: u64, busy_ms: u64, own_ms: u64) -> CpuTimes {
        CpuTimes {
            wall_ns: wall_ms * 1_000_000,
            busy_ns: busy_ms * 1_000_000,
            own_ns: own_ms * 1_000_000,
            cpus: 2,
        }
    }

    #[test]
    fn other_work_is_the_busy_time_the_measurer_did_not_use() {
        let before = at(1_000, 5_000, 100);
        // 10 s on 2 CPUs: 12 s busy, 9 s of it ours -> 3 s of 20 s, 15 %.
        let after = at(11_000, 17_000, 9_100);
        assert!((after.foreign_pct_since(&before) - 15.0).abs() < 1e-9);
        // Alone: the machine was busy exactly as long as we were.
        let alone = at(11_000, 14_000, 9_100);
        assert_eq!(alone.foreign_pct_since(&before), 0.0);
        // Counters read a tick apart can make ours exceed the machine's: never negative.
        let skew = at(11_000, 13_990, 9_100);
        assert_eq!(skew.foreign_pct_since(&before), 0.0);
    }
}
