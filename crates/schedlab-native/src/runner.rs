//! Running a workload as a supervised process tree, and cleaning it up.
//!
//! Design, in numbered steps:
//!
//! 1. The caller (the *supervisor*, e.g. the `schedlab` process) marks itself a child
//!    subreaper (`PR_SET_CHILD_SUBREAPER`), so that any process orphaned below it is
//!    re-parented to it rather than to init, and opens two pipes: *result* and *error*.
//! 2. It forks the *leader*, which puts itself in a new process group (`setpgid(0, 0)`;
//!    the supervisor makes the same call for it, closing the race), asks for `SIGKILL` when
//!    its parent dies (`PR_SET_PDEATHSIG`), restores default signal dispositions and runs
//!    the workload. The leader plays the part of the benchmark's main program: it forks or
//!    spawns the workers ([`Ctx::fork`], [`Ctx::thread`]), which inherit the process group,
//!    times the run and writes an [`Outcome`] as JSON to the result pipe.
//! 3. Any task that fails writes one line to the error pipe. The supervisor polls both
//!    pipes, its interrupt flag (set from `SIGINT`/`SIGTERM`/`SIGHUP`) and the deadline.
//! 4. On an error line, an interrupt or the deadline, the supervisor sends `SIGKILL` to the
//!    whole process group and reaps: `waitpid(-pgid)` until `ECHILD`, re-sending the kill
//!    after each reap. Because the supervisor is a subreaper and a dying parent re-parents
//!    its children before it can be reaped, `ECHILD` means that no process of the group is
//!    left, running or zombie. The same sweep runs after a clean finish, for strays.
//!
//! Invariants: every process a workload creates is in the leader's process group and is a
//! descendant of the supervisor; when [`supervise`] returns, none is left. Workers never
//! return into the caller's code: a forked child ends in `_exit`, panics included.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sys::{self, explain, Fail, Res};

/// What the leader reports at the end of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Outcome {
    /// Result metric name, e.g. `us_per_round_trip`.
    pub metric: String,
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// `lower` or `higher`.
    pub better: String,
    /// Length of the timed interval.
    pub timed_ns: u64,
    /// Processes and threads the workload created.
    pub tasks: u64,
    /// Workload counters (messages, bytes, ...).
    pub counts: BTreeMap<String, f64>,
    /// `getrusage` of the leader plus its reaped descendants.
    pub rusage: Rusage,
    /// What the tool prints, where the workload composes it itself (schbench).
    #[serde(default)]
    pub output: Option<String>,
    /// The workload's own details (schbench's percentiles).
    #[serde(default)]
    pub details: Option<serde_json::Value>,
}

impl Outcome {
    /// An outcome with a result; counters are added by the caller.
    pub fn new(metric: &str, value: f64, unit: &str, better: &str, timed_ns: u64) -> Outcome {
        Outcome {
            metric: metric.into(),
            value,
            unit: unit.into(),
            better: better.into(),
            timed_ns,
            ..Outcome::default()
        }
    }
}

/// Resource usage of the workload's processes (leader and reaped descendants).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Rusage {
    /// Voluntary context switches (the task blocked).
    pub voluntary_switches: u64,
    /// Involuntary context switches (the task was preempted).
    pub involuntary_switches: u64,
    /// User CPU time, ms.
    pub user_ms: f64,
    /// System CPU time, ms.
    pub system_ms: f64,
    /// Minor page faults.
    pub minor_faults: u64,
}

fn rusage_of(who: libc::c_int) -> libc::rusage {
    // SAFETY: zeroed rusage is a valid value; getrusage fills it.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut r);
        r
    }
}

fn own_rusage() -> Rusage {
    let mut out = Rusage::default();
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        let r = rusage_of(who);
        out.voluntary_switches += r.ru_nvcsw as u64;
        out.involuntary_switches += r.ru_nivcsw as u64;
        out.user_ms += r.ru_utime.tv_sec as f64 * 1e3 + r.ru_utime.tv_usec as f64 / 1e3;
        out.system_ms += r.ru_stime.tv_sec as f64 * 1e3 + r.ru_stime.tv_usec as f64 / 1e3;
        out.minor_faults += r.ru_minflt as u64;
    }
    out
}

/// Counters shared by every process and thread of a run (a `MAP_SHARED` anonymous page
/// created before the forks). Workers add their totals once, at the end, so counting does
/// not disturb the timed loop.
#[derive(Clone, Copy)]
pub struct Counters {
    base: *const AtomicU64,
    names: &'static [&'static str],
}

// SAFETY: the mapping holds atomics only and lives until the process exits.
unsafe impl Send for Counters {}
// SAFETY: as above.
unsafe impl Sync for Counters {}

impl Counters {
    /// Map one shared slot per name.
    pub fn new(names: &'static [&'static str]) -> Res<Counters> {
        let len = (names.len().max(1) * 8).next_multiple_of(4096);
        // SAFETY: anonymous shared mapping; checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(explain("mmap", sys::errno()));
        }
        // model: the page is never unmapped; it lives as long as the leader, which exits
        // right after the run.
        Ok(Counters {
            base: p as *const AtomicU64,
            names,
        })
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.names.len(), "counter index {i} out of range");
        // SAFETY: i is within the mapping, which is never unmapped.
        unsafe { &*self.base.add(i) }
    }

    /// Add `n` to counter `i`.
    pub fn add(&self, i: usize, n: u64) {
        self.slot(i).fetch_add(n, Ordering::Relaxed);
    }

    /// Read counter `i`.
    pub fn get(&self, i: usize) -> u64 {
        self.slot(i).load(Ordering::Relaxed)
    }

    /// All counters by name.
    pub fn to_map(&self) -> BTreeMap<String, f64> {
        self.names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), self.get(i) as f64))
            .collect()
    }
}

/// A worker: a forked process or a thread of the leader.
pub enum Task {
    /// A child process.
    Proc(libc::pid_t),
    /// A thread of the leader.
    Thread(JoinHandle<()>),
}

/// The leader's view of the run: creates workers and knows where to report failures.
pub struct Ctx {
    err_fd: RawFd,
    res_fd: RawFd,
    tasks: u64,
    thread_stack: usize,
}

/// Write one failure line to the error pipe (atomic: shorter than `PIPE_BUF`).
fn report(err_fd: RawFd, msg: &str) {
    let mut line: String = msg.replace('\n', " ").chars().take(3000).collect();
    line.push('\n');
    let _ = sys::write(err_fd, line.as_bytes());
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Run `f` in a freshly forked child and end the child; never returns there.
fn child_body<F: FnOnce() -> Res<()>>(err_fd: RawFd, f: F) -> ! {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            report(err_fd, &e.0);
            1
        }
        Err(p) => {
            report(err_fd, &format!("worker panicked: {}", panic_text(&*p)));
            101
        }
    };
    // SAFETY: _exit ends the child without running the parent's destructors or atexit.
    unsafe { libc::_exit(code) }
}

/// In a new child: die with the parent, and bail out if the parent is already gone.
fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: prctl/getppid/_exit on ourselves.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// Where any task of the run reports a failure (usable from any process or thread).
#[derive(Clone, Copy)]
pub struct Reporter(RawFd);

impl Reporter {
    /// Report a failure: the supervisor stops the whole run.
    pub fn fail(&self, msg: &str) {
        report(self.0, msg);
    }
}

impl Ctx {
    /// A context for a workload played inside a worker process of this run (a `mix`'s
    /// load): failures go where this run's go; its tasks are counted apart, and it has no
    /// result pipe to close in its children.
    pub fn sub(&self) -> Ctx {
        Ctx {
            err_fd: self.err_fd,
            res_fd: -1,
            tasks: 0,
            thread_stack: self.thread_stack,
        }
    }

    /// The failure reporter, for threads that the workload spawns itself.
    pub fn reporter(&self) -> Reporter {
        Reporter(self.err_fd)
    }

    /// Fork a worker process running `f`. Call from the leader's main thread only (the
    /// parent-death signal follows the forking thread).
    pub fn fork<F: FnOnce() -> Res<()>>(&mut self, f: F) -> Res<Task> {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        // SAFETY: the child only runs `f` and then `_exit`s.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(Fail(format!(
                "{} (after {} tasks were created)",
                explain("fork", sys::errno()),
                self.tasks
            )));
        }
        if pid == 0 {
            die_with_parent(me);
            sys::close(self.res_fd);
            child_body(self.err_fd, f);
        }
        self.tasks += 1;
        Ok(Task::Proc(pid))
    }

    /// Spawn a worker thread running `f` (small stack, like hackbench's `PTHREAD_STACK_MIN`
    /// threads). A failure is reported at once, so that the supervisor stops the run rather
    /// than leaving the thread's peers blocked.
    pub fn thread<F: FnOnce() -> Res<()> + Send + 'static>(&mut self, f: F) -> Res<Task> {
        let err_fd = self.err_fd;
        let h = std::thread::Builder::new()
            .stack_size(self.thread_stack)
            .spawn(move || match catch_unwind(AssertUnwindSafe(f)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => report(err_fd, &e.0),
                Err(p) => report(err_fd, &format!("worker panicked: {}", panic_text(&*p))),
            })
            .map_err(|e| {
                Fail(format!(
                    "{} (after {} tasks were created)",
                    explain("thread creation", e.raw_os_error().unwrap_or(libc::EAGAIN)),
                    self.tasks
                ))
            })?;
        self.tasks += 1;
        Ok(Task::Thread(h))
    }

    /// A worker in the given mode: a thread if `threads`, else a process.
    pub fn spawn<F: FnOnce() -> Res<()> + Send + 'static>(
        &mut self,
        threads: bool,
        f: F,
    ) -> Res<Task> {
        if threads {
            self.thread(f)
        } else {
            self.fork(f)
        }
    }

    /// Wait for every task; the first failure is returned (the others are still reaped
    /// by the supervisor's sweep).
    pub fn join_all(&mut self, tasks: Vec<Task>) -> Res<()> {
        for t in tasks {
            match t {
                Task::Proc(pid) => {
                    let (_, st) = sys::waitpid(pid)?;
                    if let Some(why) = sys::bad_status(st) {
                        return Err(Fail(format!("worker process {pid} {why}")));
                    }
                }
                Task::Thread(h) => {
                    let _ = h.join();
                }
            }
        }
        Ok(())
    }

    /// Processes and threads created so far.
    pub fn tasks(&self) -> u64 {
        self.tasks
    }
}

/// Why a supervised run did not produce a result.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// The deadline passed; the process group was killed.
    Timeout {
        /// The timeout, in seconds.
        secs: f64,
        /// Processes stopped.
        stopped: u64,
    },
    /// SIGINT/SIGTERM/SIGHUP arrived; the process group was killed.
    Interrupted {
        /// Processes stopped.
        stopped: u64,
        /// The signal that arrived (the caller's exit status is 128 + it).
        signal: i32,
    },
    /// The workload failed (one line).
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Timeout { secs, stopped } => write!(
                f,
                "timed out after {secs} s (--timeout); stopped {stopped} processes"
            ),
            RunError::Interrupted { stopped, signal } => {
                write!(
                    f,
                    "interrupted; stopped {stopped} processes ({})",
                    signal_name(*signal)
                )
            }
            RunError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// How to supervise a run.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Kill the run after this long.
    pub timeout: Option<Duration>,
    /// Set by the caller's signal handlers; the run is stopped when it becomes true.
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// The last of `SIGINT`, `SIGTERM`, `SIGHUP` that arrived since [`interrupt_flag`]
/// installed its handlers (0: none).
static LAST_SIGNAL: std::sync::OnceLock<Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::OnceLock::new();

/// Install `SIGINT`, `SIGTERM` and `SIGHUP` handlers that set the returned flag (pass it
/// in [`RunOptions::interrupt`]) and record which signal it was ([`interrupt_signal`]).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let last = LAST_SIGNAL.get_or_init(Default::default);
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // The signal number first, then the flag: whoever sees the flag sees the number.
        let _ = signal_hook::flag::register_usize(sig, Arc::clone(last), sig as usize);
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// The signal that set the interrupt flag: `SIGINT` unless the handlers recorded another.
pub fn interrupt_signal() -> i32 {
    match LAST_SIGNAL.get().map(|l| l.load(Ordering::SeqCst)) {
        Some(s) if s > 0 => s as i32,
        _ => libc::SIGINT,
    }
}

/// `SIGINT`, `SIGTERM`, `SIGHUP` or `signal N`.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        s => format!("signal {s}"),
    }
}

/// The guard's write end, once started (see [`guard_group`]).
static GUARD: std::sync::Mutex<Option<RawFd>> = std::sync::Mutex::new(None);

/// Have process group `pgid` killed if this process dies before [`release_group`] —
/// by any signal, `SIGKILL` included, when no code of ours runs.
///
/// model: `PR_SET_PDEATHSIG` reaches only a direct child; a real tool's own children
/// (`perf bench` forks its workers) would outlive it. So a *guard* process, forked once,
/// holds the read end of a pipe whose only write end is ours: when we die, the kernel
/// closes it, the guard reads end-of-file and sends `SIGKILL` to every group still
/// registered. Records are 5 bytes (`+` or `-`, then the pgid), atomic on a pipe.
pub fn guard_group(pgid: libc::pid_t) {
    guard_send(b'+', pgid);
}

/// The group is gone (killed and reaped): the guard forgets it.
pub fn release_group(pgid: libc::pid_t) {
    guard_send(b'-', pgid);
}

fn guard_send(op: u8, pgid: libc::pid_t) {
    let mut g = GUARD.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = start_guard();
    }
    if let Some(fd) = *g {
        let mut rec = [op, 0, 0, 0, 0];
        rec[1..].copy_from_slice(&pgid.to_ne_bytes());
        let _ = sys::write(fd, &rec);
    }
}

fn start_guard() -> Option<RawFd> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: the child only makes async-signal-safe calls and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        sys::close(r);
        sys::close(w);
        return None;
    }
    if pid == 0 {
        // SAFETY: our own descriptors and dispositions; no allocation from here on.
        unsafe {
            libc::close(w);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                libc::signal(s, libc::SIG_IGN);
            }
            // Out of the caller's group: a signal to that group must not take the guard.
            libc::setpgid(0, 0);
        }
        guard_loop(r);
    }
    sys::close(r);
    Some(w)
}

fn guard_loop(r: RawFd) -> ! {
    let mut groups = [0 as libc::pid_t; 256];
    loop {
        let mut rec = [0u8; 5];
        let mut got = 0;
        while got < rec.len() {
            // SAFETY: reading into our own buffer.
            let n = unsafe {
                libc::read(
                    r,
                    rec[got..].as_mut_ptr() as *mut libc::c_void,
                    rec.len() - got,
                )
            };
            if n > 0 {
                got += n as usize;
            } else if n < 0 && sys::errno() == libc::EINTR {
                continue;
            } else {
                // End of file: our parent is gone. Kill what it left.
                for &g in groups.iter().filter(|&&g| g > 0) {
                    // SAFETY: signalling process groups.
                    unsafe {
                        libc::kill(-g, libc::SIGKILL);
                    }
                }
                // SAFETY: ends the guard.
                unsafe { libc::_exit(0) }
            }
        }
        let pgid = libc::pid_t::from_ne_bytes([rec[1], rec[2], rec[3], rec[4]]);
        if rec[0] == b'+' {
            if let Some(slot) = groups.iter_mut().find(|g| **g == 0) {
                *slot = pgid;
            }
        } else if let Some(slot) = groups.iter_mut().find(|g| **g == pgid) {
            *slot = 0;
        }
    }
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct Supervised {
    /// The leader's report.
    pub outcome: Outcome,
    /// Wall time from fork of the leader to the end of the sweep.
    pub wall_ns: u64,
}

static SUBREAPER: Once = Once::new();

/// Kill process group `pgid` and reap every member until none is left; returns how many
/// processes were reaped.
pub fn kill_group(pgid: libc::pid_t) -> u64 {
    let mut reaped = 0;
    loop {
        // SAFETY: signalling and reaping our own process group.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let mut st = 0;
        // SAFETY: st is a valid int.
        let r = unsafe { libc::waitpid(-pgid, &mut st, 0) };
        if r > 0 {
            reaped += 1;
            continue;
        }
        if sys::errno() == libc::EINTR {
            continue;
        }
        return reaped;
    }
}

/// Run `work` in a supervised leader process (see the module documentation).
pub fn supervise<W: FnOnce(&mut Ctx) -> Res<Outcome>>(
    opts: &RunOptions,
    thread_stack: usize,
    work: W,
) -> Result<Supervised, RunError> {
    SUBREAPER.call_once(|| {
        // SAFETY: sets a flag on our own process.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
    });
    let fail = |e: Fail| RunError::Failed(e.0);
    let (res_r, res_w) = sys::pipe().map_err(fail)?;
    let (err_r, err_w) = match sys::pipe() {
        Ok(p) => p,
        Err(e) => {
            sys::close(res_r);
            sys::close(res_w);
            return Err(fail(e));
        }
    };
    let start = sys::now_ns();
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    // SAFETY: the child runs the workload and `_exit`s; it never returns here.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = explain("fork", sys::errno());
        for fd in [res_r, res_w, err_r, err_w] {
            sys::close(fd);
        }
        return Err(fail(e));
    }
    if pid == 0 {
        // The leader.
        // SAFETY: process-group and signal set-up of our own process.
        unsafe {
            libc::setpgid(0, 0);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
                libc::signal(s, libc::SIG_DFL);
            }
        }
        die_with_parent(me);
        sys::close(res_r);
        sys::close(err_r);
        let mut ctx = Ctx {
            err_fd: err_w,
            res_fd: res_w,
            tasks: 0,
            thread_stack,
        };
        child_body(err_w, move || {
            let mut out = work(&mut ctx)?;
            out.tasks = ctx.tasks;
            out.rusage = own_rusage();
            let text = serde_json::to_vec(&out).map_err(|e| Fail(e.to_string()))?;
            sys::write_full(res_w, &text)
        });
    }
    // The supervisor.
    // SAFETY: placing our child in its own group (it does the same; one of us wins).
    unsafe {
        libc::setpgid(pid, pid);
    }
    sys::close(res_w);
    sys::close(err_w);
    let outcome = watch(pid, res_r, err_r, opts, start);
    sys::close(res_r);
    sys::close(err_r);
    outcome.map(|outcome| Supervised {
        outcome,
        wall_ns: sys::now_ns() - start,
    })
}

fn watch(
    pid: libc::pid_t,
    res_r: RawFd,
    err_r: RawFd,
    opts: &RunOptions,
    start: u64,
) -> Result<Outcome, RunError> {
    let deadline = opts.timeout.map(|t| start + t.as_nanos() as u64);
    let mut res = Vec::new();
    let mut err = Vec::new();
    let (mut res_open, mut err_open) = (true, true);
    let mut buf = [0u8; 8192];
    let first_line = |e: &[u8]| -> Option<String> {
        let s = String::from_utf8_lossy(e);
        s.find('\n').map(|i| s[..i].to_string())
    };
    loop {
        if opts
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst))
        {
            return Err(RunError::Interrupted {
                stopped: kill_group(pid),
                signal: interrupt_signal(),
            });
        }
        let now = sys::now_ns();
        let mut wait_ms: i32 = 1000;
        if let Some(d) = deadline {
            if now >= d {
                return Err(RunError::Timeout {
                    secs: opts.timeout.unwrap_or_default().as_secs_f64(),
                    stopped: kill_group(pid),
                });
            }
            wait_ms = wait_ms.min(((d - now) / 1_000_000) as i32 + 1);
        }
        if !res_open {
            break;
        }
        let mut fds = [
            libc::pollfd {
                fd: res_r,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: if err_open { err_r } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds; EINTR (a signal) just loops to check the flag.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, wait_ms) };
        if n <= 0 {
            continue;
        }
        if fds[1].revents != 0 {
            match sys::read(err_r, &mut buf) {
                Ok(0) | Err(_) => err_open = false,
                Ok(k) => err.extend_from_slice(&buf[..k]),
            }
            if let Some(line) = first_line(&err) {
                kill_group(pid);
                return Err(RunError::Failed(line));
            }
        }
        if fds[0].revents != 0 {
            match sys::read(res_r, &mut buf) {
                Ok(0) | Err(_) => res_open = false,
                Ok(k) => res.extend_from_slice(&buf[..k]),
            }
        }
    }
    // The leader closed the result pipe: it is exiting. Reap it, then sweep the group.
    let status = sys::waitpid(pid).map(|(_, st)| st).ok();
    kill_group(pid);
    // A failure line may have raced the leader's exit.
    // SAFETY: non-blocking flag on our own descriptor.
    unsafe {
        libc::fcntl(err_r, libc::F_SETFL, libc::O_NONBLOCK);
    }
    if let Ok(k) = sys::read(err_r, &mut buf) {
        err.extend_from_slice(&buf[..k]);
    }
    if let Some(line) = first_line(&err) {
        return Err(RunError::Failed(line));
    }
    if let Some(why) = status.and_then(sys::bad_status) {
        return Err(RunError::Failed(format!("workload leader {why}")));
    }
    serde_json::from_slice(&res)
        .map_err(|e| RunError::Failed(format!("workload leader sent no result ({e})")))
}
