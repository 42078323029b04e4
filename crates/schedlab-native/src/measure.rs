//! Measure this host into a `host` preset (`schedlab validate --measure FILE`).
//!
//! Design: what the kernel tells (CPUs, core/LLC/node ids, cache geometry, HZ, preemption
//! model, pipe and socket buffer sizes, limits) is read from sysfs, procfs and the kernel
//! config; the costs are solved from micro-benchmarks, each the median of `reps` timed
//! repetitions, in the order in which each equation has one unknown left:
//!
//! | cost                | micro-benchmark (per operation)                               |
//! |---------------------|---------------------------------------------------------------|
//! | `syscall_ns`        | `getppid()`                                                   |
//! | `pipe_call_ns`      | 1-byte pipe write + read in one thread, less two syscalls, / 2 |
//! | `copy_ns_per_kb`    | the same with 64 KB, less the 1-byte pair, / 128 KB copied    |
//! | `unix_call_ns`      | 100-byte AF_UNIX write + read, less syscalls and copies, / 2  |
//! | `schedule_ns`       | `sched_yield()` alone on a CPU, less a syscall                |
//! | `switch_ns`         | two threads yielding on one CPU, less one alone               |
//! | `wakeup_ns`         | thread ping-pong on one CPU, per hop, less the above          |
//! | `switch_mm_ns`      | process ping-pong on one CPU less the thread one, per hop     |
//! | `ipi_send_ns`       | a `write()` waking a reader on another CPU, less a local one  |
//! | `ipi_latency_ns`    | solved with the simulator: split-CPU lat_pipe's round trip    |
//! | `fork_ns` …         | `fork()` in the parent; `waitpid()` of a zombie; the rest exit |
//! | `c2c_line_ns`       | a line bounced between two CPUs, per transfer                 |
//! | `mem_latency_ns` …  | dependent loads through a random cycle beyond (within) L2     |
//!
//! Invariants: every cost the model uses has a value and a source string; a cost no
//! micro-benchmark reaches keeps the P6 preset's value and says so; a solved cost is
//! never negative (a difference lost in noise is clamped to 0, and the source says so).
//! The process's CPU affinity is restored afterwards.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use schedlab::machine::host::{HostFile, Measured, SCHEMA};
use schedlab::machine::preset::piii700;
use schedlab::machine::{CpuIds, Limits};

use crate::host::{allowed_cpus, set_affinity};
use crate::sys::{self, now_ns, Res};

/// What to measure with.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    /// Timed repetitions per micro-benchmark (the median is kept).
    pub reps: usize,
    /// The command line written into the file.
    pub command: String,
}

/// Progress: `(done, total, name)` after each micro-benchmark.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Time `body(n)` for `n` operations, `reps` times; median ns per operation.
fn per_op(reps: usize, n: u64, mut body: impl FnMut(u64) -> Res<()>) -> Res<f64> {
    body(n / 10 + 1)?; // warm caches and the branch predictor
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = now_ns();
        body(n)?;
        v.push((now_ns() - t0) as f64 / n as f64);
    }
    Ok(median(v))
}

fn pin_self(cpu: usize) -> Res<()> {
    set_affinity(&[cpu]).map_err(Into::into)
}

fn null_syscall(n: u64) -> Res<()> {
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    Ok(())
}

/// Write then read `len` bytes through one descriptor pair, `n` times, in this thread.
fn pair(w: RawFd, r: RawFd, len: usize, n: u64) -> Res<()> {
    let mut buf = vec![7u8; len];
    for _ in 0..n {
        sys::write_full(w, &buf)?;
        sys::read_full(r, &mut buf, "measure pair")?;
    }
    Ok(())
}

fn yield_loop(n: u64) -> Res<()> {
    for _ in 0..n {
        // SAFETY: sched_yield has no arguments.
        unsafe { libc::sched_yield() };
    }
    Ok(())
}

/// `threads` threads pinned to `cpu` yielding `n` times each; ns per yield.
fn yielders(cpu: usize, threads: usize, n: u64) -> Res<f64> {
    let t0 = now_ns();
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || -> Res<()> {
                pin_self(cpu)?;
                yield_loop(n)
            })
        })
        .collect();
    for h in hs {
        h.join()
            .map_err(|_| "a yielding thread panicked".to_string())??;
    }
    Ok((now_ns() - t0) as f64 / (threads as u64 * n) as f64)
}

/// The peer of a ping-pong: on CPU `cpu`, read a byte from `from` and write it to `to`,
/// `n` times.
fn echo(cpu: usize, from: RawFd, to: RawFd, n: u64) -> impl FnOnce() -> Res<()> + Send {
    move || {
        pin_self(cpu)?;
        let mut t = [0u8; 1];
        for _ in 0..n {
            sys::read_full(from, &mut t, "measure echo")?;
            sys::write_full(to, &t)?;
        }
        Ok(())
    }
}

/// A 1-byte ping-pong between this thread (on `a`) and a peer on `b`: a thread or a
/// forked process. ns per hop (half a round trip).
fn ping_pong(a: usize, b: usize, process: bool, n: u64) -> Res<f64> {
    let (r1, w1) = sys::pipe()?;
    let (r2, w2) = sys::pipe()?;
    let echo = echo(b, r1, w2, n);
    pin_self(a)?;
    let peer = if process {
        // SAFETY: the child runs only `echo` (reads, writes, exit), then _exit.
        match unsafe { libc::fork() } {
            -1 => return Err(format!("fork failed ({})", sys::strerror(sys::errno())).into()),
            0 => {
                let code = i32::from(echo().is_err());
                // SAFETY: leaving the forked child without running the parent's atexit.
                unsafe { libc::_exit(code) }
            }
            pid => Err(pid),
        }
    } else {
        Ok(std::thread::spawn(echo))
    };
    let mut t = [1u8; 1];
    let t0 = now_ns();
    for _ in 0..n {
        sys::write_full(w1, &t)?;
        sys::read_full(r2, &mut t, "measure ping")?;
    }
    let ns = (now_ns() - t0) as f64 / (2 * n) as f64;
    match peer {
        Ok(h) => h
            .join()
            .map_err(|_| "the echo thread panicked".to_string())??,
        Err(pid) => {
            let mut st = 0;
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(pid, &mut st, 0) };
        }
    }
    for fd in [r1, w1, r2, w2] {
        sys::close(fd);
    }
    Ok(ns)
}

/// ns of a 1-byte `write()` that wakes a reader sleeping on CPU `b` (this thread on `a`).
fn waking_write(a: usize, b: usize, n: u64) -> Res<f64> {
    let (r1, w1) = sys::pipe()?;
    let (r2, w2) = sys::pipe()?;
    let h = std::thread::spawn(echo(b, r1, w2, n));
    pin_self(a)?;
    let mut t = [1u8; 1];
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        // Let the reader fall asleep in read() first.
        let spin = now_ns();
        while now_ns() - spin < 20_000 {
            std::hint::spin_loop();
        }
        let t0 = now_ns();
        sys::write_full(w1, &t)?;
        v.push((now_ns() - t0) as f64);
        sys::read_full(r2, &mut t, "measure waking writer")?;
    }
    h.join().map_err(|_| "the reader panicked".to_string())??;
    for fd in [r1, w1, r2, w2] {
        sys::close(fd);
    }
    Ok(median(v))
}

/// fork() as the parent sees it, waitpid() of a zombie, and the whole fork+exit+wait.
fn fork_costs(n: u64) -> Res<(f64, f64, f64)> {
    let (mut fork, mut wait, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t0 = now_ns();
        // SAFETY: the child exits at once.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: leaving the child at once.
            unsafe { libc::_exit(0) }
        }
        if pid < 0 {
            return Err(format!("fork failed ({})", sys::strerror(sys::errno())).into());
        }
        let t1 = now_ns();
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: wait for the child to become a zombie without reaping it.
        unsafe {
            libc::waitid(
                libc::P_PID,
                pid as u32,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        let t2 = now_ns();
        let mut st = 0;
        // SAFETY: reaping our own zombie child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        let t3 = now_ns();
        fork.push((t1 - t0) as f64);
        wait.push((t3 - t2) as f64);
        whole.push((t3 - t0) as f64);
    }
    Ok((median(fork), median(wait), median(whole)))
}

fn clone_cost(n: u64) -> Res<f64> {
    let mut v = Vec::new();
    for _ in 0..n {
        let t0 = now_ns();
        let h = std::thread::Builder::new()
            .stack_size(crate::THREAD_STACK)
            .spawn(|| ())
            .map_err(|e| format!("thread spawn failed: {e}"))?;
        v.push((now_ns() - t0) as f64);
        h.join().ok();
    }
    Ok(median(v))
}

/// A line bounced between CPUs `a` and `b` through an atomic counter: ns per transfer.
fn bounce(a: usize, b: usize, n: u64) -> Res<f64> {
    let line = Arc::new(AtomicU64::new(0));
    let l2 = line.clone();
    let h = std::thread::spawn(move || -> Res<()> {
        pin_self(b)?;
        for i in 0..n {
            while l2.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            l2.store(2 * i + 2, Ordering::Release);
        }
        Ok(())
    });
    pin_self(a)?;
    let t0 = now_ns();
    for i in 0..n {
        line.store(2 * i + 1, Ordering::Release);
        while line.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let ns = (now_ns() - t0) as f64 / (2 * n) as f64;
    h.join()
        .map_err(|_| "the bouncing thread panicked".to_string())??;
    Ok(ns)
}

/// A 64 KB buffer written on CPU `b`, then read on `a`, `n` times: ns per line read.
fn stream_c2c(a: usize, b: usize, line: usize, n: u64) -> Res<f64> {
    const BYTES: usize = 64 * 1024;
    let buf: Arc<Vec<AtomicU64>> = Arc::new((0..BYTES / 8).map(|_| AtomicU64::new(0)).collect());
    let turn = Arc::new(AtomicU64::new(0));
    let (b2, t2) = (buf.clone(), turn.clone());
    let h = std::thread::spawn(move || -> Res<()> {
        pin_self(b)?;
        for i in 0..n {
            while t2.load(Ordering::Acquire) != 2 * i {
                std::hint::spin_loop();
            }
            for w in b2.iter() {
                w.store(i, Ordering::Relaxed);
            }
            t2.store(2 * i + 1, Ordering::Release);
        }
        Ok(())
    });
    pin_self(a)?;
    let mut total = 0u64;
    let mut sum = 0u64;
    for i in 0..n {
        while turn.load(Ordering::Acquire) != 2 * i + 1 {
            std::hint::spin_loop();
        }
        let t0 = now_ns();
        for w in buf.iter() {
            sum = sum.wrapping_add(w.load(Ordering::Relaxed));
        }
        total += now_ns() - t0;
        turn.store(2 * i + 2, Ordering::Release);
    }
    std::hint::black_box(sum);
    h.join()
        .map_err(|_| "the writing thread panicked".to_string())??;
    Ok(total as f64 / (n as usize * BYTES / line) as f64)
}

/// Dependent loads through a random cycle of lines over `bytes`: ns per load.
fn chase(bytes: usize, line: usize, loads: u64) -> f64 {
    let slots = (bytes / line).max(2);
    let stride = line / 8;
    let mut next = vec![0usize; slots * stride];
    // A fixed-seed Sattolo shuffle: one cycle through every line.
    let mut order: Vec<usize> = (0..slots).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..slots).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % i as u64) as usize);
    }
    for i in 0..slots {
        next[order[i] * stride] = order[(i + 1) % slots] * stride;
    }
    let mut p = 0;
    for _ in 0..slots {
        p = next[p];
    }
    let t0 = now_ns();
    for _ in 0..loads {
        p = next[p];
    }
    let ns = (now_ns() - t0) as f64 / loads as f64;
    std::hint::black_box(p);
    ns
}

/// Streaming read of `bytes`: ns per line.
fn stream(bytes: usize, line: usize) -> f64 {
    let v = vec![1u64; bytes / 8];
    let mut s = 0u64;
    for x in &v {
        s = s.wrapping_add(*x);
    }
    let t0 = now_ns();
    for _ in 0..4 {
        for x in &v {
            s = s.wrapping_add(*x);
        }
    }
    std::hint::black_box(s);
    (now_ns() - t0) as f64 / (4 * bytes / line) as f64
}

/// Summing an L1-resident int array (lmbench `sumit`): ns per KB.
fn sum_l1(n: u64) -> f64 {
    let v = vec![3i32; 1024];
    let t0 = now_ns();
    let mut s = 0i32;
    for _ in 0..n {
        for x in std::hint::black_box(&v) {
            s = s.wrapping_add(*x);
        }
    }
    std::hint::black_box(s);
    (now_ns() - t0) as f64 / (n * 4) as f64
}

fn poll_fds(fds: &[RawFd], n: u64) -> Res<()> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    for _ in 0..n {
        // SAFETY: p is a valid array of p.len() pollfds.
        unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, 0) };
    }
    Ok(())
}

/// 100-byte AF_UNIX writes queued `depth` deep on each of `sockets` socketpairs, then read
/// back, in one thread: ns per write+read.
fn unix_queue(sockets: usize, depth: usize, messages: usize) -> Res<f64> {
    let pairs: Vec<(RawFd, RawFd)> = (0..sockets)
        .map(|_| sys::socketpair())
        .collect::<Res<_>>()?;
    let mut buf = [5u8; 100];
    let rounds = (messages / (sockets * depth)).max(1);
    let t0 = now_ns();
    for _ in 0..rounds {
        for &(a, _) in &pairs {
            for _ in 0..depth {
                sys::write_full(a, &buf)?;
            }
        }
        for &(_, b) in &pairs {
            for _ in 0..depth {
                sys::read_full(b, &mut buf, "measure queue")?;
            }
        }
    }
    let ns = (now_ns() - t0) as f64 / (rounds * sockets * depth) as f64;
    for (a, b) in pairs {
        sys::close(a);
        sys::close(b);
    }
    Ok(ns)
}

/// How many `len`-byte writes a fresh AF_UNIX stream socket takes before EAGAIN, and its
/// SO_SNDBUF.
fn unix_fill(len: usize) -> Res<(u64, u64)> {
    let (a, b) = sys::socketpair()?;
    let mut sndbuf: libc::c_int = 0;
    let mut sz = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: valid out-pointers of the sizes given.
    unsafe {
        libc::getsockopt(
            a,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&mut sndbuf as *mut libc::c_int).cast(),
            &mut sz,
        );
        libc::fcntl(a, libc::F_SETFL, libc::O_NONBLOCK);
    }
    let buf = vec![0u8; len];
    let mut n = 0u64;
    // SAFETY: writing from a valid buffer of len bytes.
    while unsafe { libc::write(a, buf.as_ptr().cast(), len) } == len as isize {
        n += 1;
    }
    sys::close(a);
    sys::close(b);
    Ok((n, sndbuf.max(0) as u64))
}

fn pipe_size() -> Res<u64> {
    let (r, w) = sys::pipe()?;
    // SAFETY: F_GETPIPE_SZ takes no argument.
    let n = unsafe { libc::fcntl(w, libc::F_GETPIPE_SZ) };
    sys::close(r);
    sys::close(w);
    Ok(n.max(4096) as u64)
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `CONFIG_<key>` from /proc/config.gz or /boot/config-$(uname -r).
fn kernel_config() -> String {
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

fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

/// HZ and the preemption model.
fn kernel_facts(config: &str) -> (u32, String, &'static str) {
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

/// Core, LLC and node ids of CPUs `0..n`, from sysfs.
fn topology(n: usize) -> CpuIds {
    let cpu = |c: usize, f: &str| read(&format!("/sys/devices/system/cpu/cpu{c}/{f}"));
    let mut ids = CpuIds {
        core: Vec::new(),
        llc: Vec::new(),
        node: Vec::new(),
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
    }
    ids
}

/// `(size, ways, line)` of the level-`level` data or unified cache of CPU 0.
fn cache(level: u32) -> Option<(u64, u64, u64)> {
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

fn cpu_model_and_mhz() -> (String, u64, bool) {
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

fn limits() -> Limits {
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

/// The costs the fit adjusts with the simulator: `ipi_latency_ns` such that the simulated
/// split lat_pipe round trip equals the measured one (`target_us`).
fn fit_ipi_latency(file: &HostFile, target_us: f64) -> Result<(u64, f64), String> {
    let sim = |lat: u64| -> Result<f64, String> {
        let mut f = file.clone();
        f.costs.ipi_latency_ns = lat;
        let preset: &'static schedlab::machine::Preset = Box::leak(Box::new(f.to_preset()));
        let m = schedlab::machine::Machine::boot(preset, Some(2.min(f.cpus)))?;
        let cfg = schedlab::RunConfig {
            machine: "host".into(),
            cpus: None,
            policy: format!("eevdf:hz={}", f.measured.hz),
            workload: "lat_pipe:pin=split,rounds=2000,warmup=50".into(),
            seed: 1,
        };
        let mut sim = schedlab::Simulation::on_machine(cfg, m).map_err(|e| e.to_string())?;
        sim.run(&mut |_, _| {}).map_err(|e| e.to_string())?;
        Ok(sim.report().map_err(|e| e.to_string())?.result.value)
    };
    // The smallest latency that matches: the round trip is not monotonic in it beyond a
    // round trip's worth (IPIs still in flight then serve later wake-ups), so bracket the
    // first crossing by doubling from 250 ns, then bisect inside it.
    if sim(0)? >= target_us {
        return Ok((0, sim(0)?));
    }
    let (mut lo, mut hi) = (0u64, 250u64);
    while sim(hi)? < target_us {
        if hi >= 1_000_000 {
            return Err(format!(
                "cannot fit ipi_latency_ns: the simulated split lat_pipe stays below the measured {target_us:.2} us"
            ));
        }
        (lo, hi) = (hi, hi * 2);
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
    let r = run_benchmarks(o, a, b, progress).map_err(|e| e.to_string());
    let _ = set_affinity(&allowed);
    let (bench, costs, mut src) = r?;
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
        },
        cpus,
        topology: topology(cpus),
        costs,
        limits: limits(),
        sources: src,
        benchmarks: bench,
    };
    let target = 2.0 * file.benchmarks["hop_split_process"] / 1e3;
    let (lat, got) = fit_ipi_latency(&file, target)?;
    file.costs.ipi_latency_ns = lat;
    file.sources.insert(
        "ipi_latency_ns".into(),
        format!(
            "fitted with the simulator: split-CPU lat_pipe {got:.2} us per round trip against {target:.2} measured (idle exit included: not separable from user space)"
        ),
    );
    file.check()?;
    Ok(file)
}

type Measured3 = (
    BTreeMap<String, f64>,
    schedlab::machine::Costs,
    BTreeMap<String, String>,
);

fn run_benchmarks(
    o: &MeasureOptions,
    a: usize,
    b: usize,
    progress: Progress<'_>,
) -> Res<Measured3> {
    let reps = o.reps.max(3);
    let mut bench = BTreeMap::new();
    let steps = 17;
    let mut step = 0;
    let mut tick = |name: &str, v: f64, bench: &mut BTreeMap<String, f64>| {
        step += 1;
        bench.insert(name.to_string(), (v * 10.0).round() / 10.0);
        progress(step, steps, name);
    };
    pin_self(a)?;
    tick("getppid", per_op(reps, 200_000, null_syscall)?, &mut bench);
    let (pr, pw) = sys::pipe()?;
    tick(
        "pipe_pair_1",
        per_op(reps, 100_000, |n| pair(pw, pr, 1, n))?,
        &mut bench,
    );
    tick(
        "pipe_pair_65536",
        per_op(reps, 5_000, |n| pair(pw, pr, 65536, n))?,
        &mut bench,
    );
    sys::close(pr);
    sys::close(pw);
    let (ua, ub) = sys::socketpair()?;
    tick(
        "unix_pair_100",
        per_op(reps, 50_000, |n| pair(ua, ub, 100, n))?,
        &mut bench,
    );
    sys::close(ua);
    sys::close(ub);
    tick(
        "yield_alone",
        per_op(reps, 200_000, yield_loop)?,
        &mut bench,
    );
    let two = median(
        (0..reps)
            .map(|_| yielders(a, 2, 50_000))
            .collect::<Res<Vec<_>>>()?,
    );
    tick("yield_two_threads", two, &mut bench);
    let hop = |a2, b2, p| -> Res<f64> {
        Ok(median(
            (0..reps)
                .map(|_| ping_pong(a2, b2, p, 20_000))
                .collect::<Res<Vec<_>>>()?,
        ))
    };
    tick("hop_same_thread", hop(a, a, false)?, &mut bench);
    tick("hop_same_process", hop(a, a, true)?, &mut bench);
    tick("hop_split_process", hop(a, b, true)?, &mut bench);
    let ww = |c| -> Res<f64> {
        Ok(median(
            (0..reps)
                .map(|_| waking_write(a, c, 2_000))
                .collect::<Res<Vec<_>>>()?,
        ))
    };
    tick("write_waking_remote", ww(b)?, &mut bench);
    pin_self(a)?;
    let (f, w, whole) = fork_costs(300)?;
    bench.insert("fork_parent".into(), f.round());
    bench.insert("waitpid_zombie".into(), w.round());
    tick("fork_exit_wait", whole, &mut bench);
    tick("thread_create", clone_cost(300)?, &mut bench);
    tick(
        "line_bounce",
        median(
            (0..reps)
                .map(|_| bounce(a, b, 200_000))
                .collect::<Res<Vec<_>>>()?,
        ),
        &mut bench,
    );
    let line_guess = cache(1).map_or(64, |c| c.2) as usize;
    let st = median(
        (0..reps)
            .map(|_| stream_c2c(a, b, line_guess, 200))
            .collect::<Res<Vec<_>>>()?,
    );
    bench.insert(
        "stream_c2c_64kb_per_line".into(),
        (st * 10.0).round() / 10.0,
    );
    pin_self(a)?;
    let (line, l1, l1_ways, l2, l2_ways) = match (cache(1), cache(2)) {
        (Some((l1, w1, line)), Some((l2, w2, _))) => (line, l1, w1, l2, w2),
        _ => (64, 32 * 1024, 8, 512 * 1024, 8),
    };
    let l2_hit = median(
        (0..reps)
            .map(|_| chase(l2 as usize / 2, line as usize, 2_000_000))
            .collect(),
    );
    let l1_hit = median(
        (0..reps)
            .map(|_| chase(l1 as usize / 2, line as usize, 2_000_000))
            .collect(),
    );
    bench.insert("chase_l1".into(), (l1_hit * 10.0).round() / 10.0);
    bench.insert("chase_half_l2".into(), (l2_hit * 10.0).round() / 10.0);
    let miss = median(
        (0..reps)
            .map(|_| chase(64 << 20, line as usize, 2_000_000))
            .collect(),
    );
    tick("chase_64mb", miss, &mut bench);
    let beyond = median(
        (0..reps)
            .map(|_| chase(4 * l2 as usize, line as usize, 2_000_000))
            .collect(),
    );
    bench.insert("chase_4x_l2".into(), (beyond * 10.0).round() / 10.0);
    bench.insert(
        "stream_64mb_per_line".into(),
        (stream(64 << 20, line as usize) * 10.0).round() / 10.0,
    );
    bench.insert(
        "sum_l1_per_kb".into(),
        (sum_l1(20_000) * 10.0).round() / 10.0,
    );
    let fds: Vec<(RawFd, RawFd)> = (0..100).map(|_| sys::pipe()).collect::<Res<_>>()?;
    let rd: Vec<RawFd> = fds.iter().map(|p| p.0).collect();
    let p10 = per_op(reps, 50_000, |n| poll_fds(&rd[..10], n))?;
    let p100 = per_op(reps, 20_000, |n| poll_fds(&rd, n))?;
    for (r, w) in fds {
        sys::close(r);
        sys::close(w);
    }
    bench.insert("poll_10".into(), (p10 * 10.0).round() / 10.0);
    tick("poll_100", p100, &mut bench);
    let pipe_pairs = per_op(reps, 20_000, |n| {
        for _ in 0..n {
            let (r, w) = sys::pipe()?;
            sys::close(r);
            sys::close(w);
        }
        Ok(())
    })?;
    tick("pipe_create_close", pipe_pairs, &mut bench);
    let (msgs, sndbuf) = unix_fill(100)?;
    bench.insert("unix_fill_100_msgs".into(), msgs as f64);
    // Deep enough that the queued truesize is 4 x L2 (and within SO_SNDBUF).
    let truesize = (sndbuf / msgs.max(1)).max(128) as usize;
    let deep = (4 * l2 as usize / (80 * truesize)).clamp(2, msgs.max(2) as usize - 1);
    let q = |d| -> Res<f64> {
        Ok(median(
            (0..reps)
                .map(|_| unix_queue(80, d, 200_000))
                .collect::<Res<Vec<_>>>()?,
        ))
    };
    bench.insert("unix_queue_80x1".into(), (q(1)? * 10.0).round() / 10.0);
    bench.insert(
        format!("unix_queue_80x{deep}"),
        (q(deep)? * 10.0).round() / 10.0,
    );
    bench.insert("unix_queue_deep".into(), deep as f64);
    let pipe_bytes = pipe_size()?;
    let (costs, src) = solve(
        &bench,
        Geometry {
            line,
            l1,
            l1_ways,
            l2,
            l2_ways,
            sndbuf,
            msgs,
            pipe_bytes,
            mhz: cpu_model_and_mhz().1.max(1),
        },
    );
    tick("solve", 0.0, &mut bench);
    bench.remove("solve");
    Ok((bench, costs, src))
}

/// What sysfs and the buffer probes told.
struct Geometry {
    line: u64,
    l1: u64,
    l1_ways: u64,
    l2: u64,
    l2_ways: u64,
    sndbuf: u64,
    msgs: u64,
    pipe_bytes: u64,
    /// Core clock (`/proc/cpuinfo`).
    mhz: u64,
}

/// Solve the cost equations (module doc) from the medians.
fn solve(
    b: &BTreeMap<String, f64>,
    g: Geometry,
) -> (schedlab::machine::Costs, BTreeMap<String, String>) {
    let mut c = piii700(g.l2);
    let mut src = BTreeMap::new();
    let set = |src: &mut BTreeMap<String, String>, field: &str, v: f64, how: &str| -> u64 {
        let clamped = v.max(0.0).round() as u64;
        let note = if v < 0.0 {
            format!("{how} (the difference was {v:.0} ns: lost in noise, clamped to 0)")
        } else {
            how.to_string()
        };
        src.insert(field.to_string(), format!("measured: {note}"));
        clamped
    };
    let syscall = b["getppid"];
    c.syscall_ns = set(&mut src, "syscall_ns", syscall, "getppid()");
    let pipe_call = (b["pipe_pair_1"] - 2.0 * syscall) / 2.0;
    c.pipe_call_ns = set(
        &mut src,
        "pipe_call_ns",
        pipe_call,
        "1-byte pipe write+read in one thread, less two syscalls, per call",
    );
    let copy_per_kb = (b["pipe_pair_65536"] - b["pipe_pair_1"]) / 128.0;
    c.copy_ns_per_kb = set(&mut src, "copy_ns_per_kb", copy_per_kb, "64 KB pipe write+read in one thread less the 1-byte pair, per KB copied (buffers beyond L1, pipe pages allocated and freed)");
    let unix = (b["unix_pair_100"] - 2.0 * syscall - 200.0 / 1024.0 * copy_per_kb) / 2.0;
    c.unix_call_ns = set(
        &mut src,
        "unix_call_ns",
        unix,
        "100-byte AF_UNIX write+read, less syscalls and copies, per call",
    );
    let schedule = b["yield_alone"] - syscall;
    c.schedule_ns = set(
        &mut src,
        "schedule_ns",
        schedule,
        "sched_yield() alone on a CPU, less a syscall",
    );
    let switch = b["yield_two_threads"] - b["yield_alone"];
    c.switch_ns = set(
        &mut src,
        "switch_ns",
        switch,
        "two threads yielding on one CPU, less one alone",
    );
    let wakeup = b["hop_same_thread"] - 2.0 * syscall - 2.0 * pipe_call - schedule - switch;
    c.wakeup_ns = set(
        &mut src,
        "wakeup_ns",
        wakeup,
        "thread ping-pong on one CPU per hop, less 2 syscalls, 2 pipe calls, schedule and switch",
    );
    c.switch_mm_ns = set(
        &mut src,
        "switch_mm_ns",
        b["hop_same_process"] - b["hop_same_thread"],
        "process ping-pong on one CPU less the thread one, per hop",
    );
    let local_write = syscall + pipe_call + wakeup;
    c.ipi_send_ns = set(&mut src, "ipi_send_ns", b["write_waking_remote"] - local_write, "a 1-byte write() waking a reader asleep on another CPU, less syscall, pipe call and wake-up");
    let deep = format!(
        "unix_queue_80x{}",
        b.get("unix_queue_deep").copied().unwrap_or(0.0)
    );
    if let (Some(shallow), Some(d)) = (b.get("unix_queue_80x1"), b.get(&deep)) {
        c.skb_cold_ns = Some(set(&mut src, "skb_cold_ns", d - shallow, "100-byte AF_UNIX write+read over 80 socketpairs queued 4 x L2 deep, less queued 1 deep, per skb"));
    }
    c.idle_exit_ns = 0;
    src.insert(
        "idle_exit_ns".into(),
        "0: included in ipi_latency_ns (user space sees only their sum)".into(),
    );
    c.fork_ns = set(
        &mut src,
        "fork_ns",
        b["fork_parent"],
        "fork() as the parent sees it",
    );
    c.wait_ns = set(
        &mut src,
        "wait_ns",
        b["waitpid_zombie"],
        "waitpid() of a zombie",
    );
    c.exit_ns = set(
        &mut src,
        "exit_ns",
        b["fork_exit_wait"] - b["fork_parent"] - b["waitpid_zombie"],
        "fork+exit+wait less fork and wait (the child's exit and the parent's wake-up)",
    );
    c.clone_ns = set(
        &mut src,
        "clone_ns",
        b["thread_create"],
        "pthread_create() as the creator sees it",
    );
    c.c2c_line_ns = set(
        &mut src,
        "c2c_line_ns",
        b["line_bounce"],
        "an atomic counter bounced between two CPUs, per transfer",
    );
    c.c2c_stream_line_ns = Some(set(
        &mut src,
        "c2c_stream_line_ns",
        b["stream_c2c_64kb_per_line"],
        "64 KB written on one CPU, read on another, per line",
    ));
    c.c2c_cross_bus_line_ns = c.c2c_line_ns;
    src.insert(
        "c2c_cross_bus_line_ns".into(),
        "= c2c_line_ns (one LLC; no second bus)".into(),
    );
    c.upgrade_ns = c.c2c_line_ns / 2;
    src.insert(
        "upgrade_ns".into(),
        "inferred: half a line transfer (an invalidation without data)".into(),
    );
    c.mem_latency_ns = set(
        &mut src,
        "mem_latency_ns",
        b["chase_4x_l2"],
        "dependent loads over 4 x L2: an L2 miss as this machine serves it (from the LLC)",
    );
    c.l2_line_ns = set(
        &mut src,
        "l2_line_ns",
        b["chase_half_l2"] - b["chase_l1"],
        "dependent loads over half the L2, less L1 hits",
    );
    c.mem_line_ns = set(
        &mut src,
        "mem_line_ns",
        b["stream_64mb_per_line"],
        "streaming read of 64 MB, per line",
    );
    c.sum_ns_per_kb = set(
        &mut src,
        "sum_ns_per_kb",
        b["sum_l1_per_kb"],
        "summing a 4 KB int array (lmbench sumit), per KB",
    );
    c.poll_fd_ns = set(
        &mut src,
        "poll_fd_ns",
        (b["poll_100"] - b["poll_10"]) / 90.0,
        "poll() of 100 pipes less 10, per fd",
    );
    c.poll_ns = set(
        &mut src,
        "poll_ns",
        b["poll_10"] - 10.0 * (b["poll_100"] - b["poll_10"]) / 90.0 - syscall,
        "poll() of 10 pipes less the per-fd work and a syscall",
    );
    c.file_create_ns = set(
        &mut src,
        "file_create_ns",
        (b["pipe_create_close"] - 3.0 * syscall) / 2.0,
        "pipe()+2 close() less syscalls, per file",
    );
    let mhz = g.mhz;
    c.cpu_mhz = mhz;
    src.insert("cpu_mhz".into(), "procfs: /proc/cpuinfo cpu MHz".into());
    src.insert(
        "ipi_latency_ns".into(),
        "fitted with the simulator after the rest (measure)".into(),
    );
    c.task_examine_ns = (30 * 1000 / mhz).max(1);
    src.insert(
        "task_examine_ns".into(),
        "inferred: 30 cycles of goodness()-class work at this clock (benchmarks.md §6.3 for P6)"
            .into(),
    );
    c.waitq_entry_ns = (21 * 1000 / mhz).max(1);
    src.insert(
        "waitq_entry_ns".into(),
        "inferred: the P6 value's 21 cycles at this clock".into(),
    );
    c.lock_ns = (20 * 1000 / mhz).max(1);
    src.insert(
        "lock_ns".into(),
        "inferred: ~20 cycles for an uncontended lock-prefixed RMW on a current core".into(),
    );
    c.line_bytes = g.line;
    c.l1_bytes = g.l1;
    c.l1_ways = g.l1_ways;
    c.l2_bytes = g.l2;
    c.l2_ways = g.l2_ways;
    for f in ["line_bytes", "l1_bytes", "l1_ways", "l2_bytes", "l2_ways"] {
        src.insert(
            f.into(),
            "sysfs: /sys/devices/system/cpu/cpu0/cache (L2 = the private level 2)".into(),
        );
    }
    c.task_align_bytes = g.line;
    src.insert(
        "task_align_bytes".into(),
        "inferred: task_structs come from a slab, not THREAD_SIZE-aligned stacks (no set aliasing)"
            .into(),
    );
    c.kernel_footprint_bytes = 8 * 1024;
    src.insert(
        "kernel_footprint_bytes".into(),
        "inferred: the hot part of a 6.x task_struct and its 16 KB stack, ~8 KB".into(),
    );
    c.pipe_buf_bytes = g.pipe_bytes;
    src.insert(
        "pipe_buf_bytes".into(),
        "measured: fcntl(F_GETPIPE_SZ)".into(),
    );
    c.unix_sndbuf_bytes = g.sndbuf;
    src.insert(
        "unix_sndbuf_bytes".into(),
        "measured: getsockopt(SO_SNDBUF) of a socketpair".into(),
    );
    if let Some(per_write) = g.sndbuf.checked_div(g.msgs) {
        c.skb_overhead_bytes = per_write.saturating_sub(100);
        src.insert(
            "skb_overhead_bytes".into(),
            format!(
                "measured: {} 100-byte writes fill SO_SNDBUF {}; truesize - 100 per write",
                g.msgs, g.sndbuf
            ),
        );
    }
    let wmem = read("/proc/sys/net/ipv4/tcp_wmem").unwrap_or_default();
    let wmem: Vec<u64> = wmem
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    if let [_, def, max] = wmem[..] {
        c.tcp_sndbuf_bytes = def;
        c.tcp_wmem_max_bytes = max;
        src.insert(
            "tcp_sndbuf_bytes".into(),
            "procfs: net.ipv4.tcp_wmem[1]".into(),
        );
        src.insert(
            "tcp_wmem_max_bytes".into(),
            "procfs: net.ipv4.tcp_wmem[2]".into(),
        );
    }
    if let Some(mtu) = read("/sys/class/net/lo/mtu").and_then(|m| m.parse::<u64>().ok()) {
        c.tcp_mss_bytes = mtu - 52;
        src.insert(
            "tcp_mss_bytes".into(),
            "sysfs: lo MTU less 40 bytes of headers and 12 of timestamps".into(),
        );
    }
    c.idle_poll = false;
    src.insert(
        "idle_poll".into(),
        "cpuidle halts idle CPUs (idle=poll not assumed)".into(),
    );
    for f in [
        "tcp_sendmsg_ns",
        "tcp_recvmsg_ns",
        "tcp_segment_ns",
        "tcp_ack_ns",
        "tcp_connect_ns",
        "exec_ns",
    ] {
        src.entry(f.to_string()).or_insert_with(|| {
            "not measured: the P6 preset's value (no validate row depends on it)".into()
        });
    }
    for f in ["tick_ns", "irq_ns"] {
        src.entry(f.to_string()).or_insert_with(|| {
            "not measured: the P6 preset's value (charged on every tick or IPI: at HZ 250 a 1.5 us tick is 0.04 % of a CPU)".into()
        });
    }
    src.insert("page_bytes".into(), "x86-64 base page: 4 KB".into());
    src.insert(
        "bus_slot_ns".into(),
        "unused: no shared front-side bus on this preset".into(),
    );
    src.insert(
        "line_slots".into(),
        "unused: no shared front-side bus on this preset".into(),
    );
    (c, src)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench() -> BTreeMap<String, f64> {
        [
            ("getppid", 100.0),
            ("pipe_pair_1", 700.0),
            ("pipe_pair_65536", 700.0 + 128.0 * 50.0),
            ("unix_pair_100", 1200.0),
            ("yield_alone", 400.0),
            ("yield_two_threads", 1400.0),
            ("hop_same_thread", 3000.0),
            ("hop_same_process", 3100.0),
            ("write_waking_remote", 1900.0),
            ("fork_parent", 50_000.0),
            ("waitpid_zombie", 5_000.0),
            ("fork_exit_wait", 100_000.0),
            ("thread_create", 10_000.0),
            ("line_bounce", 80.0),
            ("stream_c2c_64kb_per_line", 4.0),
            ("chase_4x_l2", 20.0),
            ("chase_half_l2", 6.0),
            ("chase_l1", 1.5),
            ("stream_64mb_per_line", 8.0),
            ("sum_l1_per_kb", 30.0),
            ("poll_10", 1000.0),
            ("poll_100", 1900.0),
            ("pipe_create_close", 2300.0),
            ("unix_queue_80x1", 3000.0),
            ("unix_queue_80x27", 3800.0),
            ("unix_queue_deep", 27.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn geometry() -> Geometry {
        Geometry {
            line: 64,
            l1: 32 * 1024,
            l1_ways: 8,
            l2: 512 * 1024,
            l2_ways: 8,
            sndbuf: 212_992,
            msgs: 278,
            pipe_bytes: 65_536,
            mhz: 3000,
        }
    }

    /// Each cost is the module doc's equation over the medians.
    #[test]
    fn the_cost_equations_solve_in_order() {
        let (c, src) = solve(&bench(), geometry());
        assert_eq!(c.syscall_ns, 100);
        assert_eq!(c.pipe_call_ns, 250); // (700 - 200) / 2
        assert_eq!(c.copy_ns_per_kb, 50);
        assert_eq!(c.schedule_ns, 300); // 400 - 100
        assert_eq!(c.switch_ns, 1000); // 1400 - 400
                                       // 3000 - 2 x 100 - 2 x 250 - 300 - 1000
        assert_eq!(c.wakeup_ns, 1000);
        assert_eq!(c.switch_mm_ns, 100);
        // 1900 - (100 + 250 + 1000)
        assert_eq!(c.ipi_send_ns, 550);
        assert_eq!(c.exit_ns, 45_000);
        assert_eq!(c.c2c_stream_line_ns, Some(4));
        assert_eq!(c.skb_cold_ns, Some(800));
        assert_eq!((c.cpu_mhz, c.task_examine_ns), (3000, 10)); // 30 cycles at 3 GHz
        assert_eq!(c.poll_fd_ns, 10); // (1900 - 1000) / 90
        assert_eq!(c.skb_overhead_bytes, 212_992 / 278 - 100);
        assert_eq!(
            (c.line_bytes, c.l2_bytes, c.pipe_buf_bytes),
            (64, 512 * 1024, 65_536)
        );
        // Every field of the cost table has a source.
        let fields = serde_json::to_value(&c).unwrap();
        for k in fields.as_object().unwrap().keys() {
            assert!(src.contains_key(k), "no source for {k}");
        }
    }

    /// A difference lost in noise is clamped to 0, and the source says so.
    #[test]
    fn a_negative_difference_is_clamped_and_said() {
        let mut b = bench();
        b.insert("hop_same_process".into(), 2900.0);
        let (c, src) = solve(&b, geometry());
        assert_eq!(c.switch_mm_ns, 0);
        assert!(
            src["switch_mm_ns"].contains("clamped to 0"),
            "{}",
            src["switch_mm_ns"]
        );
    }

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
}
