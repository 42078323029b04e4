//! The micro-benchmarks: each times one kernel path from user space, per operation.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::host::set_affinity;
use crate::sys::{self, now_ns, Res};

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Time `body(n)` for `n` operations once, after an untimed tenth to warm caches and the
/// branch predictor: ns per operation (one sample of an interleaved round).
pub(super) fn per_op(n: u64, mut body: impl FnMut(u64) -> Res<()>) -> Res<f64> {
    body(n / 10 + 1)?;
    let t0 = now_ns();
    body(n)?;
    Ok((now_ns() - t0) as f64 / n as f64)
}

pub(super) fn pin_self(cpu: usize) -> Res<()> {
    set_affinity(&[cpu]).map_err(Into::into)
}

pub(super) fn null_syscall(n: u64) -> Res<()> {
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    Ok(())
}

/// Write then read `len` bytes through one descriptor pair, `n` times, in this thread.
pub(super) fn pair(w: RawFd, r: RawFd, len: usize, n: u64) -> Res<()> {
    let mut buf = vec![7u8; len];
    for _ in 0..n {
        sys::write_full(w, &buf)?;
        sys::read_full(r, &mut buf, "measure pair")?;
    }
    Ok(())
}

pub(super) fn yield_loop(n: u64) -> Res<()> {
    for _ in 0..n {
        // SAFETY: sched_yield has no arguments.
        unsafe { libc::sched_yield() };
    }
    Ok(())
}

/// `threads` threads pinned to `cpu` yielding `n` times each; ns per yield.
pub(super) fn yielders(cpu: usize, threads: usize, n: u64) -> Res<f64> {
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

/// `procs` processes pinned to `cpu`, forked first and released together through a
/// pipe, yielding `n` times each; ns per yield (from the release to the last exit).
pub(super) fn yielders_procs(cpu: usize, procs: usize, n: u64) -> Res<f64> {
    let (r, w) = sys::pipe()?;
    let mut pids = Vec::with_capacity(procs);
    for _ in 0..procs {
        // SAFETY: the child pins itself, waits for the go byte, yields, and _exits.
        match unsafe { libc::fork() } {
            -1 => return Err(format!("fork failed ({})", sys::strerror(sys::errno())).into()),
            0 => {
                let mut b = [0u8; 1];
                let ok = pin_self(cpu).is_ok()
                    && sys::read_full(r, &mut b, "measure go").is_ok()
                    && yield_loop(n).is_ok();
                // SAFETY: leaving the forked child without running the parent's atexit.
                unsafe { libc::_exit(i32::from(!ok)) }
            }
            pid => pids.push(pid),
        }
    }
    let t0 = now_ns();
    sys::write_full(w, &vec![1u8; procs])?;
    let mut failed = false;
    for pid in pids {
        let mut st = 0;
        // SAFETY: reaping our own children.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        failed |= st != 0;
    }
    let ns = (now_ns() - t0) as f64 / (procs as u64 * n) as f64;
    sys::close(r);
    sys::close(w);
    if failed {
        return Err("a yielding process failed".to_string().into());
    }
    Ok(ns)
}

/// `members` threads pinned to `cpu` passing a byte round a ring of pipes (each reads its
/// own, writes the next's), `rounds` times round; ns per hop. Every hop wakes the next
/// member, asleep since the token last passed it.
pub(super) fn thread_ring(cpu: usize, members: usize, rounds: u64) -> Res<f64> {
    let pipes: Vec<(RawFd, RawFd)> = (0..members).map(|_| sys::pipe()).collect::<Res<_>>()?;
    pin_self(cpu)?;
    let hs: Vec<_> = (1..members)
        .map(|i| {
            let (from, to) = (pipes[i].0, pipes[(i + 1) % members].1);
            std::thread::spawn(echo(cpu, from, to, rounds))
        })
        .collect();
    let mut t = [1u8; 1];
    let t0 = now_ns();
    for _ in 0..rounds {
        sys::write_full(pipes[1 % members].1, &t)?;
        sys::read_full(pipes[0].0, &mut t, "measure ring")?;
    }
    let ns = (now_ns() - t0) as f64 / (rounds * members as u64) as f64;
    for h in hs {
        h.join()
            .map_err(|_| "a ring thread panicked".to_string())??;
    }
    for (a, b) in pipes {
        sys::close(a);
        sys::close(b);
    }
    Ok(ns)
}

/// The peer of a ping-pong: on CPU `cpu`, read a byte from `from` and write it to `to`,
/// `n` times.
pub(super) fn echo(cpu: usize, from: RawFd, to: RawFd, n: u64) -> impl FnOnce() -> Res<()> + Send {
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
pub(super) fn ping_pong(a: usize, b: usize, process: bool, n: u64) -> Res<f64> {
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
pub(super) fn waking_write(a: usize, b: usize, n: u64) -> Res<f64> {
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

/// How many of a fork sample's children exec `lat_proc`'s program (each takes about as
/// long as ten plain forks).
const EXECS_PER_SAMPLE: u64 = 12;

/// fork() as the parent sees it, waitpid() of a zombie, the whole fork+exit+wait, a
/// child's first byte: from fork()'s return in the parent (which then blocks reading a
/// pipe) to the byte the child writes first thing (then blocking itself, so that its
/// exit stays out of the figure), fork+exec+wait of `lat_proc`'s program (NaN where it
/// cannot run), and the exit of a child that has run: from the byte that releases that
/// child to its parent's `waitpid()` returning; on one CPU.
pub(super) fn fork_costs(n: u64) -> Res<[f64; 6]> {
    let (mut fork, mut wait, mut whole, mut first) = (vec![], vec![], vec![], vec![]);
    let mut ran_exit = vec![];
    let prog = std::ffi::CString::new(crate::workload::lat_proc::EXEC_PROGRAM).expect("no NUL");
    let mut exec = Vec::new();
    for _ in 0..EXECS_PER_SAMPLE {
        match fork_exec_wait(&prog)? {
            Some(ns) => exec.push(ns),
            None => break,
        }
    }
    let (byte_r, byte_w) = sys::pipe()?;
    let (go_r, go_w) = sys::pipe()?;
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
        let (byte, exit) = first_byte(byte_r, byte_w, go_r, go_w)?;
        first.push(byte);
        ran_exit.push(exit);
    }
    for fd in [byte_r, byte_w, go_r, go_w] {
        sys::close(fd);
    }
    let exec = if exec.is_empty() {
        f64::NAN
    } else {
        median(exec)
    };
    Ok([
        median(fork),
        median(wait),
        median(whole),
        median(first),
        exec,
        median(ran_exit),
    ])
}

/// fork(), the child execs `prog` (which exits at once), waitpid(): ns, or `None` when the
/// program could not be run or did not exit with 0.
fn fork_exec_wait(prog: &std::ffi::CStr) -> Res<Option<f64>> {
    let argv = [prog.as_ptr(), std::ptr::null()];
    let t0 = now_ns();
    // SAFETY: the child only calls execv and _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: argv is a NULL-terminated array of valid C strings; leaving the child if
        // the exec failed.
        unsafe {
            libc::execv(prog.as_ptr(), argv.as_ptr());
            libc::_exit(127)
        }
    }
    if pid < 0 {
        return Err(format!("fork failed ({})", sys::strerror(sys::errno())).into());
    }
    let mut st = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    let ns = (now_ns() - t0) as f64;
    Ok((libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0).then_some(ns))
}

/// One child's first byte, and its release to reaped (see [`fork_costs`]), ns.
fn first_byte(byte_r: RawFd, byte_w: RawFd, go_r: RawFd, go_w: RawFd) -> Res<(f64, f64)> {
    // SAFETY: the child writes one byte, reads one, and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut b = [0u8; 1];
        // SAFETY: plain syscalls on inherited pipes, then leaving the child.
        unsafe {
            libc::write(byte_w, b"c".as_ptr().cast(), 1);
            libc::read(go_r, b.as_mut_ptr().cast(), 1);
            libc::_exit(0)
        }
    }
    if pid < 0 {
        return Err(format!("fork failed ({})", sys::strerror(sys::errno())).into());
    }
    let t0 = now_ns();
    let mut b = [0u8; 1];
    sys::read_full(byte_r, &mut b, "the child's first byte")?;
    let ns = (now_ns() - t0) as f64;
    let t1 = now_ns();
    sys::write_full(go_w, b"g")?;
    let mut st = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    Ok((ns, (now_ns() - t1) as f64))
}

pub(super) fn clone_cost(n: u64) -> Res<f64> {
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
pub(super) fn bounce(a: usize, b: usize, n: u64) -> Res<f64> {
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

/// `membarrier(2)` commands (`include/uapi/linux/membarrier.h`).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

fn membarrier(cmd: libc::c_long) -> Res<()> {
    // SAFETY: membarrier takes two integer arguments and touches no user memory.
    sys::check(
        "membarrier",
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) } as i32,
    )
    .map(|_| ())
}

/// An IPI to a CPU that is running, round trip: `membarrier(PRIVATE_EXPEDITED)` from CPU
/// `a`, `n` times alone (no other thread of this process runs anywhere: no IPI is sent),
/// then `n` times while a thread of this process spins on CPU `b` (the kernel sends that
/// CPU an IPI and waits for its handler to finish). Returns both, ns per call; `None`
/// where the kernel has no expedited membarrier (before 4.14, or filtered).
pub(super) fn membarrier_ipi(a: usize, b: usize, n: u64) -> Res<Option<[f64; 2]>> {
    if membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED).is_err() {
        return Ok(None);
    }
    pin_self(a)?;
    let alone = per_op(n, |n| {
        (0..n).try_for_each(|_| membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
    })?;
    // 0: starting, 1: spinning on `b`, 2: asked to stop.
    let state = Arc::new(AtomicU64::new(0));
    let s2 = state.clone();
    let h = std::thread::spawn(move || -> Res<()> {
        pin_self(b)?;
        s2.store(1, Ordering::Release);
        while s2.load(Ordering::Acquire) != 2 {
            std::hint::spin_loop();
        }
        Ok(())
    });
    while state.load(Ordering::Acquire) == 0 {
        std::hint::spin_loop();
    }
    let beside = per_op(n, |n| {
        (0..n).try_for_each(|_| membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
    });
    state.store(2, Ordering::Release);
    h.join()
        .map_err(|_| "the spinning thread panicked".to_string())??;
    Ok(Some([alone, beside?]))
}

/// A 64 KB buffer written on CPU `b`, then read on `a`, `n` times: ns per line read.
pub(super) fn stream_c2c(a: usize, b: usize, line: usize, n: u64) -> Res<f64> {
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
pub(super) fn chase(bytes: usize, line: usize, loads: u64) -> f64 {
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
pub(super) fn stream(bytes: usize, line: usize) -> f64 {
    stream_passes(bytes, line, 4)
}

/// `passes` passes of lat_ctx's sum over `bytes` (one untimed first): ns per line. Every
/// streamed figure runs that one loop, so that their differences are a refill beyond the
/// work of the loop the workloads run, whatever code the compiler makes of a call site (a
/// loop of its own here ran at 0.6 ns a line in one build and 1.1 in the next).
fn stream_passes(bytes: usize, line: usize, passes: u64) -> f64 {
    let v = vec![1u32; bytes / 4];
    let mut s = crate::workload::lat_ctx::sum(&v);
    let t0 = now_ns();
    for _ in 0..passes {
        s = s.wrapping_add(crate::workload::lat_ctx::sum(std::hint::black_box(&v)));
    }
    std::hint::black_box(s);
    (now_ns() - t0) as f64 / (passes as usize * bytes / line) as f64
}

/// Summing an L1-resident int array (lmbench `sumit`): ns per KB.
pub(super) fn sum_l1(n: u64) -> f64 {
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

pub(super) fn poll_fds(fds: &[RawFd], n: u64) -> Res<()> {
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

/// One round of [`unix_queue`]: `depth` writes on each pair, then every read.
pub(super) fn unix_queue_round(pairs: &[(RawFd, RawFd)], depth: usize) -> Res<()> {
    let mut buf = [5u8; 100];
    for &(a, _) in pairs {
        for _ in 0..depth {
            sys::write_full(a, &buf)?;
        }
    }
    read_queues(pairs, depth, &mut buf)
}

/// One round of [`unix_depth`]: one write on each pair in turn, `depth` times over (as a
/// sender writes to many receivers: one socket's skbs lie apart in the slab), then
/// every read, socket by socket.
pub(super) fn unix_depth_round(pairs: &[(RawFd, RawFd)], depth: usize) -> Res<()> {
    let mut buf = [5u8; 100];
    for _ in 0..depth {
        for &(a, _) in pairs {
            sys::write_full(a, &buf)?;
        }
    }
    read_queues(pairs, depth, &mut buf)
}

/// Read back `depth` 100-byte messages from each pair, socket by socket.
fn read_queues(pairs: &[(RawFd, RawFd)], depth: usize, buf: &mut [u8; 100]) -> Res<()> {
    for &(_, b) in pairs {
        for _ in 0..depth {
            sys::read_full(b, buf, "measure queue")?;
        }
    }
    Ok(())
}

/// 100-byte AF_UNIX writes queued `depth` deep on each of `sockets` socketpairs, then read
/// back, in one thread: ns per write+read, over at least four rounds after an untimed
/// one (the first round faults the slab pages in).
pub(super) fn unix_queue(sockets: usize, depth: usize, messages: usize) -> Res<f64> {
    timed_queue(sockets, depth, messages, 4, unix_queue_round)
}

/// The depth curve's queue: `sockets` socketpairs, each `depth` deep, written in turn
/// ([`unix_depth_round`]) and read back: ns per write+read over at least two timed
/// rounds after an untimed one (the deepest take tens of MB a round; the interleaved
/// repetitions give the spread).
pub(super) fn unix_depth(sockets: usize, depth: usize, messages: usize) -> Res<f64> {
    timed_queue(sockets, depth, messages, 2, unix_depth_round)
}

/// The pipe depth curve's queue: `pipes` pipes, each `depth` 100-byte messages deep,
/// written in turn as hackbench's senders write to their receivers, then read back pipe
/// by pipe ([`unix_depth_round`] on `(write, read)` ends): ns per write+read over at least
/// two timed rounds after an untimed one. `depth` stays below the 640 messages a 6.x
/// pipe's 16 pages take, so that no write waits.
pub(super) fn pipe_depth(pipes: usize, depth: usize, messages: usize) -> Res<f64> {
    let open = || sys::pipe().map(|(r, w)| (w, r));
    timed_over(pipes, depth, messages, 2, unix_depth_round, open)
}

/// One round over a set of socketpairs, queued `depth` deep.
type QueueRound = fn(&[(RawFd, RawFd)], usize) -> Res<()>;

/// `min_rounds` or more timed rounds of `round` over fresh socketpairs, after an untimed one.
fn timed_queue(
    sockets: usize,
    depth: usize,
    messages: usize,
    min_rounds: usize,
    round: QueueRound,
) -> Res<f64> {
    timed_over(sockets, depth, messages, min_rounds, round, sys::socketpair)
}

/// [`timed_queue`] over `sockets` channels that `open` makes, each a `(write, read)` pair.
fn timed_over(
    sockets: usize,
    depth: usize,
    messages: usize,
    min_rounds: usize,
    round: QueueRound,
    open: impl Fn() -> Res<(RawFd, RawFd)>,
) -> Res<f64> {
    let pairs: Vec<(RawFd, RawFd)> = (0..sockets).map(|_| open()).collect::<Res<_>>()?;
    let rounds = (messages / (sockets * depth)).max(min_rounds);
    round(&pairs, depth)?;
    let t0 = now_ns();
    for _ in 0..rounds {
        round(&pairs, depth)?;
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
pub(super) fn unix_fill(len: usize) -> Res<(u64, u64)> {
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

pub(super) fn pipe_size() -> Res<u64> {
    let (r, w) = sys::pipe()?;
    // SAFETY: F_GETPIPE_SZ takes no argument.
    let n = unsafe { libc::fcntl(w, libc::F_GETPIPE_SZ) };
    sys::close(r);
    sys::close(w);
    Ok(n.max(4096) as u64)
}

/// Streaming reads over `bytes` resident in the L2 but not the L1 (`bytes` > L1): ns per
/// line, as a sequential pass (lat_ctx's `sumit`, a task's footprint) refills from the L2
/// with the prefetchers running.
pub(super) fn stream_l2(bytes: usize, line: usize, passes: u64) -> f64 {
    stream_passes(bytes, line, passes)
}

/// `Tcp: OutSegs` of /proc/net/snmp (segments this host sent, pure ACKs included).
fn tcp_out_segs() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (head, vals) = (tcp.next()?, tcp.next()?);
    let i = head.split_whitespace().position(|f| f == "OutSegs")?;
    vals.split_whitespace().nth(i)?.parse().ok()
}

/// A connected TCP pair over 127.0.0.1 with Nagle off (one thread writes and reads).
pub(super) fn tcp_loopback() -> Res<(std::net::TcpStream, std::net::TcpStream)> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let addr = l
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let a = std::net::TcpStream::connect(addr)
        .map_err(|e| format!("cannot connect over loopback: {e}"))?;
    let (b, _) = l
        .accept()
        .map_err(|e| format!("cannot accept over loopback: {e}"))?;
    for s in [&a, &b] {
        s.set_nodelay(true)
            .map_err(|e| format!("TCP_NODELAY refused: {e}"))?;
    }
    Ok((a, b))
}

/// `len`-byte writes and reads through a loopback TCP pair in one thread, `n` times:
/// ns per write+read, and the segments sent per write+read (data and pure ACKs; `None`
/// where /proc/net/snmp is not readable).
pub(super) fn tcp_pair(
    pair: &(std::net::TcpStream, std::net::TcpStream),
    len: usize,
    n: u64,
) -> Res<(f64, Option<f64>)> {
    use std::os::fd::AsRawFd;
    let (w, r) = (pair.0.as_raw_fd(), pair.1.as_raw_fd());
    let mut buf = vec![3u8; len];
    tcp_rounds(n, || {
        sys::write_full(w, &buf)?;
        sys::read_full(r, &mut buf, "measure tcp pair")
    })
}

/// `round` run `n` times: ns per round, and the TCP segments this host sent per round
/// (data and pure ACKs; `None` where /proc/net/snmp is not readable).
fn tcp_rounds(n: u64, mut round: impl FnMut() -> Res<()>) -> Res<(f64, Option<f64>)> {
    let segs0 = tcp_out_segs();
    let t0 = now_ns();
    for _ in 0..n {
        round()?;
    }
    let ns = (now_ns() - t0) as f64 / n as f64;
    let segs = match (segs0, tcp_out_segs()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / n as f64),
        _ => None,
    };
    Ok((ns, segs))
}

/// `k` writes of `len` bytes through a loopback TCP pair in one thread, all but the last
/// with `MSG_MORE` (held in the tail skb, then sent as one segment), then read back, `n`
/// times: ns per round, and the segments sent per round (as [`tcp_pair`]).
pub(super) fn tcp_corked(
    pair: &(std::net::TcpStream, std::net::TcpStream),
    len: usize,
    k: usize,
    n: u64,
) -> Res<(f64, Option<f64>)> {
    use std::os::fd::AsRawFd;
    let (w, r) = (pair.0.as_raw_fd(), pair.1.as_raw_fd());
    let out = vec![3u8; len];
    let mut buf = vec![0u8; len * k];
    tcp_rounds(n, || {
        for i in 0..k {
            let more = if i + 1 < k { libc::MSG_MORE } else { 0 };
            // SAFETY: `out` is a valid buffer of `len` bytes.
            let sent = unsafe { libc::send(w, out.as_ptr().cast(), len, more) };
            if sent != len as isize {
                return Err(format!("send over loopback TCP wrote {sent} of {len} bytes").into());
            }
        }
        sys::read_full(r, &mut buf, "measure corked tcp")
    })
}

/// `len`-byte datagrams sent on `w` and received on `r`, a connected UDP pair on
/// loopback, in one thread: ns per send+receive.
pub(super) fn udp_pair(w: RawFd, r: RawFd, len: usize, n: u64) -> Res<f64> {
    let mut buf = vec![3u8; len];
    let t0 = now_ns();
    for _ in 0..n {
        sys::write_full(w, &buf)?;
        sys::read(r, &mut buf)?;
    }
    Ok((now_ns() - t0) as f64 / n as f64)
}

/// 100-byte AF_UNIX messages written `depth` at a time on CPU `a` and read on CPU `b`
/// (or `a`), the two sides taking turns: ns per message, writer and reader summed. The
/// difference between the two placements is what an skb written on one CPU costs when
/// read and freed on another (its lines pulled, its slab object freed remotely, the
/// writer's `sk_wmem_alloc` line).
pub(super) fn unix_handoff(a: usize, b: usize, depth: usize, rounds: u64) -> Res<f64> {
    let (w, r) = sys::socketpair()?;
    let turn = Arc::new(AtomicU64::new(0));
    let t2 = turn.clone();
    let reader = std::thread::spawn(move || -> Res<u64> {
        pin_self(b)?;
        let mut buf = [0u8; 100];
        let mut spent = 0;
        for i in 0..rounds {
            while t2.load(Ordering::Acquire) != 2 * i + 1 {
                std::thread::yield_now();
            }
            let t0 = now_ns();
            for _ in 0..depth {
                sys::read_full(r, &mut buf, "measure handoff")?;
            }
            spent += now_ns() - t0;
            t2.store(2 * i + 2, Ordering::Release);
        }
        Ok(spent)
    });
    pin_self(a)?;
    let buf = [9u8; 100];
    let mut spent = 0;
    for i in 0..rounds {
        while turn.load(Ordering::Acquire) != 2 * i {
            std::thread::yield_now();
        }
        let t0 = now_ns();
        for _ in 0..depth {
            sys::write_full(w, &buf)?;
        }
        spent += now_ns() - t0;
        turn.store(2 * i + 1, Ordering::Release);
    }
    let read = reader
        .join()
        .map_err(|_| "the reading thread panicked".to_string())??;
    sys::close(w);
    sys::close(r);
    Ok((spent + read) as f64 / (rounds as usize * depth) as f64)
}

/// `timed` (a queue's timing on this CPU) while a thread pinned to CPU `b` runs `round`
/// over `sockets` socketpairs of its own, `depth` deep, until it is done. Nothing is
/// shared between the two loops but the kernel's own state — the slab pages, the page
/// allocator and the memory cgroup's counters that a deep queue turns over.
pub(super) fn paired(
    b: usize,
    sockets: usize,
    depth: usize,
    round: QueueRound,
    timed: impl FnOnce() -> Res<f64>,
) -> Res<f64> {
    let stop = Arc::new(AtomicU64::new(0));
    let s2 = stop.clone();
    let other = std::thread::spawn(move || -> Res<()> {
        pin_self(b)?;
        let pairs: Vec<(RawFd, RawFd)> = (0..sockets)
            .map(|_| sys::socketpair())
            .collect::<Res<_>>()?;
        s2.store(1, Ordering::Release);
        while s2.load(Ordering::Acquire) == 1 {
            round(&pairs, depth)?;
        }
        for (a, b) in pairs {
            sys::close(a);
            sys::close(b);
        }
        Ok(())
    });
    while stop.load(Ordering::Acquire) == 0 {
        std::thread::yield_now();
    }
    let ns = timed();
    stop.store(2, Ordering::Release);
    other
        .join()
        .map_err(|_| "the paired loop panicked".to_string())??;
    ns
}

/// A child forked before the micro-benchmarks allocate anything, that times `fork()`
/// (with exit and wait) as its own parent on request: the process that forks is then
/// the size a workload's leader is, not the measurer grown by 64 MB buffers, cached
/// thread stacks and heap it kept (fork copies the page tables of whatever is mapped).
pub(super) struct ForkServer {
    pid: libc::pid_t,
    request: RawFd,
    reply: RawFd,
}

impl ForkServer {
    pub(super) fn start() -> Res<ForkServer> {
        let (req_r, req_w) = sys::pipe()?;
        let (rep_r, rep_w) = sys::pipe()?;
        // SAFETY: the measurer has no other thread yet; the child only reads, forks,
        // waits and writes, then _exits.
        match unsafe { libc::fork() } {
            -1 => Err(format!("fork failed ({})", sys::strerror(sys::errno())).into()),
            0 => {
                sys::close(req_w);
                sys::close(rep_r);
                let mut b = [0u8; 1];
                while sys::read_full(req_r, &mut b, "fork server").is_ok() {
                    let Ok(figures) = fork_costs(60) else {
                        break;
                    };
                    let mut out = [0u8; 48];
                    for (i, v) in figures.into_iter().enumerate() {
                        out[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
                    }
                    if sys::write_full(rep_w, &out).is_err() {
                        break;
                    }
                }
                // SAFETY: leaving the forked child without the parent's atexit.
                unsafe { libc::_exit(0) }
            }
            pid => {
                sys::close(req_r);
                sys::close(rep_w);
                Ok(ForkServer {
                    pid,
                    request: req_w,
                    reply: rep_r,
                })
            }
        }
    }

    /// One sample: fork, waitpid of a zombie, fork+exit+wait and a child's first byte
    /// (medians of 60), fork+exec+wait (median of [`EXECS_PER_SAMPLE`]; NaN where the
    /// program cannot run), and a run child's release to reaped (median of 60), ns.
    pub(super) fn sample(&self) -> Res<[f64; 6]> {
        sys::write_full(self.request, b"f")?;
        let mut b = [0u8; 48];
        sys::read_full(self.reply, &mut b, "fork server reply")?;
        let v = |i: usize| f64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Ok([v(0), v(1), v(2), v(3), v(4), v(5)])
    }
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        sys::close(self.request);
        sys::close(self.reply);
        let mut st = 0;
        // SAFETY: reaping our own child, which exits on end of file.
        unsafe { libc::waitpid(self.pid, &mut st, 0) };
    }
}
