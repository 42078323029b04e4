//! Thin wrappers over the system calls the workloads make, with one-line errors.
//!
//! Every wrapper retries on `EINTR` and turns a failure into a [`Fail`] naming the call and
//! the error. Resource failures (`EAGAIN` from fork or thread creation, `EMFILE`, `ENFILE`,
//! `ENOMEM`) additionally name the limit that was hit and its current value, read from
//! `getrlimit` and `/proc/sys`, so the user knows which knob to turn.
//!
//! File descriptors are plain `RawFd`s closed explicitly: ownership across `fork` is
//! per-process, so the workloads close what each process does not use, as the originals did.

use std::ffi::CStr;
use std::fmt;
use std::os::fd::RawFd;

/// A failure, as one line for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail(pub String);

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fail {}

impl From<String> for Fail {
    fn from(s: String) -> Fail {
        Fail(s)
    }
}

/// Result of a workload step.
pub type Res<T> = Result<T, Fail>;

/// The current `errno`.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `strerror(e)`.
pub fn strerror(e: i32) -> String {
    std::io::Error::from_raw_os_error(e)
        .to_string()
        .split(" (os error")
        .next()
        .unwrap_or("")
        .to_string()
}

fn read_proc(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

fn rlimit(res: libc::__rlimit_resource_t) -> (String, String) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(res, &mut r) } != 0 {
        return ("?".into(), "?".into());
    }
    let f = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            v.to_string()
        }
    };
    (f(r.rlim_cur), f(r.rlim_max))
}

/// The error line for a failed call, naming the limit behind a resource failure.
pub fn explain(call: &str, e: i32) -> Fail {
    let base = format!("{call} failed: {}", strerror(e));
    let limit = match e {
        libc::EMFILE => {
            let (s, h) = rlimit(libc::RLIMIT_NOFILE);
            format!(" (per-process open-file limit RLIMIT_NOFILE = {s}, hard {h}; raise it with `ulimit -n`)")
        }
        libc::ENFILE => format!(
            " (system-wide file limit fs.file-max = {})",
            read_proc("/proc/sys/fs/file-max")
        ),
        libc::EAGAIN if call.starts_with("fork") || call.starts_with("thread") => {
            let (s, h) = rlimit(libc::RLIMIT_NPROC);
            format!(
                " (per-user process limit RLIMIT_NPROC = {s}, hard {h}; kernel.threads-max = {}; kernel.pid_max = {}; raise with `ulimit -u`)",
                read_proc("/proc/sys/kernel/threads-max"),
                read_proc("/proc/sys/kernel/pid_max")
            )
        }
        libc::ENOMEM => " (out of memory)".to_string(),
        _ => String::new(),
    };
    Fail(base + &limit)
}

pub(crate) fn check(call: &str, r: libc::c_int) -> Res<libc::c_int> {
    if r < 0 {
        Err(explain(call, errno()))
    } else {
        Ok(r)
    }
}

/// Name the calling thread `name` (its comm: the first 15 bytes, as the kernel keeps
/// them), so that a trace of the run tells the threads apart. Best effort: a name the
/// kernel refuses leaves the old one.
pub fn set_comm(name: &str) {
    let mut b: Vec<u8> = name.bytes().filter(|&c| c != 0).take(15).collect();
    b.push(0);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from `b`,
    // which lives across the call.
    unsafe { libc::prctl(libc::PR_SET_NAME, b.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// `pipe2(O_CLOEXEC)`: (read end, write end).
pub fn pipe() -> Res<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array.
    check("pipe", unsafe {
        libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC)
    })?;
    Ok((fds[0], fds[1]))
}

/// `socketpair(AF_UNIX, SOCK_STREAM)`.
pub fn socketpair() -> Res<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array.
    check("socketpair", unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    Ok((fds[0], fds[1]))
}

/// A channel as hackbench's `fdpair()`: a pipe or an AF_UNIX stream socketpair.
/// Returns (receiving end, sending end).
pub fn fdpair(use_pipe: bool) -> Res<(RawFd, RawFd)> {
    if use_pipe {
        pipe()
    } else {
        socketpair()
    }
}

/// A connected TCP pair over 127.0.0.1 as raw fds (read end, write end), as rt-tests'
/// `inet_socketpair()` makes it: listen, connect, accept, no socket options.
pub fn tcp_socketpair() -> Res<(RawFd, RawFd)> {
    use std::os::fd::IntoRawFd;
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let addr = l
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let tx = std::net::TcpStream::connect(addr)
        .map_err(|e| format!("cannot connect over loopback: {e}"))?;
    let (rx, _) = l
        .accept()
        .map_err(|e| format!("cannot accept over loopback: {e}"))?;
    Ok((rx.into_raw_fd(), tx.into_raw_fd()))
}

/// Two UDP sockets on 127.0.0.1, each bound and connected to the other (netperf's
/// UDP_RR data sockets): (server end, client end).
pub fn udp_socketpair() -> Res<(RawFd, RawFd)> {
    use std::os::fd::IntoRawFd;
    let bind = || {
        std::net::UdpSocket::bind("127.0.0.1:0")
            .map_err(|e| format!("cannot bind a UDP socket on 127.0.0.1: {e}"))
    };
    let (a, b) = (bind()?, bind()?);
    let addr =
        |s: &std::net::UdpSocket| s.local_addr().map_err(|e| format!("no local address: {e}"));
    let (aa, ba) = (addr(&a)?, addr(&b)?);
    a.connect(ba)
        .map_err(|e| format!("cannot connect UDP over loopback: {e}"))?;
    b.connect(aa)
        .map_err(|e| format!("cannot connect UDP over loopback: {e}"))?;
    Ok((a.into_raw_fd(), b.into_raw_fd()))
}

/// `FUTEX_WAIT_PRIVATE` on `word` while it holds `val`.
pub fn futex_wait(word: &std::sync::atomic::AtomicU32, val: u32) {
    // SAFETY: a futex on a live atomic of this process; EAGAIN/EINTR return at once.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// `FUTEX_WAKE_PRIVATE` of one waiter on `word`.
pub fn futex_wake(word: &std::sync::atomic::AtomicU32) {
    // SAFETY: as above.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// `sched_getcpu()`.
pub fn getcpu() -> usize {
    // SAFETY: plain call.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// This thread's `/proc/thread-self/schedstat`: (run delay ns, timeslices).
pub fn thread_schedstat() -> (u64, u64) {
    let s = read_proc("/proc/thread-self/schedstat");
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (
        v.get(1).copied().unwrap_or(0),
        v.get(2).copied().unwrap_or(0),
    )
}

/// `setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1)`.
pub fn set_nodelay(fd: RawFd) -> Res<()> {
    let one: libc::c_int = 1;
    // SAFETY: a socket fd of ours and an int option.
    check("setsockopt(TCP_NODELAY)", unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// A private SysV semaphore set (`semget(IPC_PRIVATE)`), removed (`IPC_RMID`) when
/// dropped so that a failed run leaves none behind.
pub struct SemSet {
    id: libc::c_int,
}

impl SemSet {
    /// A set of `n` semaphores, each 0.
    pub fn new(n: usize) -> Res<SemSet> {
        // SAFETY: plain system call.
        let id = check("semget", unsafe {
            libc::semget(libc::IPC_PRIVATE, n as libc::c_int, libc::IPC_CREAT | 0o600)
        })?;
        Ok(SemSet { id })
    }

    /// `semop` of `op` on semaphore `num`, retried on EINTR.
    pub fn op(&self, num: usize, op: i16) -> Res<()> {
        let mut b = libc::sembuf {
            sem_num: num as u16,
            sem_op: op,
            sem_flg: 0,
        };
        loop {
            // SAFETY: b is one valid sembuf.
            if unsafe { libc::semop(self.id, &mut b, 1) } == 0 {
                return Ok(());
            }
            if errno() != libc::EINTR {
                return Err(explain("semop", errno()));
            }
        }
    }

    /// `semctl(SETVAL)` of semaphore `num`.
    pub fn set(&self, num: usize, val: i32) -> Res<()> {
        // SAFETY: SETVAL takes an int argument.
        check("semctl(SETVAL)", unsafe {
            libc::semctl(self.id, num as libc::c_int, libc::SETVAL, val)
        })?;
        Ok(())
    }
}

impl Drop for SemSet {
    fn drop(&mut self) {
        // SAFETY: removing our own set; at worst EINVAL.
        unsafe {
            libc::semctl(self.id, 0, libc::IPC_RMID);
        }
    }
}

/// `close(fd)`, ignoring errors (the descriptor is gone either way).
pub fn close(fd: RawFd) {
    // SAFETY: closing a descriptor number; at worst EBADF.
    unsafe {
        libc::close(fd);
    }
}

/// One `read`, retried on EINTR. Returns the byte count (0 at end of file).
pub fn read(fd: RawFd, buf: &mut [u8]) -> Res<usize> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(explain("read", e));
        }
    }
}

/// One `write`, retried on EINTR. Returns the byte count.
pub fn write(fd: RawFd, buf: &[u8]) -> Res<usize> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(explain("write", e));
        }
    }
}

/// Read exactly `buf.len()` bytes, looping on short reads (as hackbench's receiver does).
/// `what` names the reader in the error on a premature end of file.
pub fn read_full(fd: RawFd, buf: &mut [u8], what: &str) -> Res<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = read(fd, &mut buf[done..])?;
        if n == 0 {
            return Err(Fail(format!(
                "{what}: unexpected end of file after {done} of {} bytes",
                buf.len()
            )));
        }
        done += n;
    }
    Ok(())
}

/// Write all of `buf`, looping on short writes (as hackbench's sender does).
pub fn write_full(fd: RawFd, buf: &[u8]) -> Res<()> {
    let mut done = 0;
    while done < buf.len() {
        done += write(fd, &buf[done..])?;
    }
    Ok(())
}

/// `poll` one descriptor for input, without timeout (hackbench's start barrier).
pub fn poll_in(fd: RawFd) -> Res<()> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, -1) };
        if r == 1 {
            return Ok(());
        }
        let e = errno();
        if r < 0 && e != libc::EINTR {
            return Err(explain("poll", e));
        }
    }
}

/// `waitpid(pid, 0)` retried on EINTR: the raw status.
pub fn waitpid(pid: libc::pid_t) -> Res<(libc::pid_t, i32)> {
    let mut st = 0;
    loop {
        // SAFETY: st is a valid int.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r >= 0 {
            return Ok((r, st));
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(explain("waitpid", e));
        }
    }
}

/// Describe a wait status that is not a clean exit, or `None` for exit status 0.
pub fn bad_status(st: i32) -> Option<String> {
    if libc::WIFEXITED(st) {
        match libc::WEXITSTATUS(st) {
            0 => None,
            c => Some(format!("exited with status {c}")),
        }
    } else if libc::WIFSIGNALED(st) {
        let s = libc::WTERMSIG(st);
        // SAFETY: strsignal returns a static or thread-local string.
        let name = unsafe {
            let p = libc::strsignal(s);
            if p.is_null() {
                format!("signal {s}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Some(format!("killed by {name} (signal {s})"))
    } else {
        Some(format!("stopped (status {st:#x})"))
    }
}

/// `sched_yield()`.
pub fn sched_yield() {
    // SAFETY: no arguments.
    unsafe {
        libc::sched_yield();
    }
}

/// The calling thread's kernel id.
pub fn gettid() -> libc::pid_t {
    // SAFETY: no arguments.
    unsafe { libc::gettid() }
}

/// Nanoseconds on CLOCK_MONOTONIC.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Busy-loop for `ns` nanoseconds (reflex's calibrated compute delay).
pub fn spin_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let end = now_ns() + ns;
    while now_ns() < end {
        std::hint::spin_loop();
    }
}

/// `setpriority(PRIO_PROCESS, tid, nice)` for the calling thread.
pub fn set_nice(nice: i32) -> Res<()> {
    if nice == 0 {
        return Ok(());
    }
    // SAFETY: plain syscall on our own thread id.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, nice) };
    if r < 0 {
        let e = errno();
        return Err(Fail(format!(
            "setpriority(nice={nice}) failed: {}{}",
            strerror(e),
            if e == libc::EPERM || e == libc::EACCES {
                " (a negative nice needs CAP_SYS_NICE or RLIMIT_NICE)"
            } else {
                ""
            }
        )));
    }
    Ok(())
}
