//! `schbench` (Chris Mason, Meta; github.com/masoncl/schbench, v1.x, read at 24e32b8):
//! message threads waking batches of worker threads through futexes, the workers doing a
//! request each — a sleep and a cache-sized matrix multiply — and the wake-up latency,
//! request latency and requests per second it reports as percentiles.
//!
//! # The original
//!
//! `main` starts `m` message threads; each starts its `t` workers (default: one worker per
//! online CPU in all). A worker loops: mark its futex word BLOCKED and note the time, push
//! itself on its message thread's lock-free list (LIFO), post the message thread, wait on
//! its own word; on waking, the wake-up latency is now minus the time the message thread
//! noted when it posted it. Then the request: `usleep(s)`, then, holding the per-CPU lock
//! of the CPU it runs on (a `trylock` spin; `-L` drops it), `n` naive multiplies of three
//! `msize²` matrices of `unsigned long` (`msize = sqrt(F KB / 3 / 8)`); the request latency
//! runs from before the sleep to after the multiplies. A message thread loops: mark itself
//! BLOCKED, take its whole list, note one time, and post each worker on it (most recent
//! first); then wait. A post is a compare-and-swap of the target's word from BLOCKED to
//! RUNNING, followed by `FUTEX_WAKE` only when the swap succeeded; a wait consumes RUNNING
//! or sleeps in `FUTEX_WAIT`. `main` samples the workers' request count every second (the
//! RPS percentiles) and after `-r` seconds stops everyone. Warm-up (`-w`, only when
//! `-r` ≥ 30) clears the statistics once.
//!
//! # The model
//!
//! The same threads and loops. A futex word and a thread's list entry are shared memory of
//! the one process, read and written by the programs at no simulated cost (one atomic
//! each); the slow paths are the model's futex calls: a post that finds its target asleep
//! (or deciding to sleep) is a `sem_post` on the target's semaphore, a wait that finds no
//! token a `sem_wait` ([`SyncOp`]). A post that finds the target awake costs nothing here,
//! where schbench still enters the kernel for a `FUTEX_WAKE` that finds nobody. The
//! multiplies are user time of `n · msize³` multiply-adds at
//! [`CYCLES_PER_MADD`] cycles each over a working set of the three matrices, so the cache
//! model charges what a cold worker refills. The per-CPU lock is a flag per CPU that a
//! worker spins on in steps of [`SPIN_STEP_NS`] (schbench's `trylock` and `pause` take
//! tens of ns a turn; a microsecond a step keeps a spin behind a preempted holder — one
//! time slice long — to a few thousand events), re-reading its CPU after taking it.
//! Results are kept in schbench's histogram (fio's: exact below 512 µs, then 256 buckets
//! per power of two, read at the bucket's middle).
//!
//! Not modelled: `-p` (pipe mode), `-R`/`-A` (requests-per-second and auto-RPS modes),
//! `-M`/`-W` pinning, `--split`, interval reports (`-i`, `-z`).

use std::sync::{Arc, Mutex};

use crate::engine::{Time, MS, SEC, US};
use crate::kernel::abi::{Env, Op, Program, Record, SyncOp};
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::spec::{Params, SpecError};
use crate::workload::Metric;

use super::toolkit::{step, Spawn};
use super::{metric, Workload, WorkloadInfo};

crate::options! {
    /// The parameters of `schbench`, under its own letters.
    pub struct Options in PARAMS {
        m: u64 = int("1", 1, 1024).help("message threads (-m)")
            .source("schbench.c: message_threads = 1");
        t: u64 = int("0", 0, 100_000).help("worker threads per message thread (-t; 0: ceil(CPUs / m))")
            .source("schbench.c: worker_threads = ceil(nprocs / m)");
        r: u64 = int("30", 1, 3600).help("run time, s (-r)")
            .unit("s")
            .source("schbench.c: runtime = 30");
        w: u64 = int("0", 0, 3600).help("warm-up, s, after which the statistics are cleared once (-w; only when r >= 30)")
            .unit("s")
            .source("schbench.c: warmuptime = 0");
        s: u64 = int("100", 0, 10_000_000).help("sleep per request, us (-s)")
            .unit("us")
            .source("schbench.c: sleep_usec = 100");
        f: u64 = int("256", 1, 1_048_576).help("cache footprint of a request's matrices, KB (-F)")
            .unit("KB")
            .source("schbench.c: cache_footprint_kb = 256");
        n: u64 = int("5", 0, 100_000).help("matrix multiplies per request (-n)")
            .source("schbench.c: operations = 5");
        locking: bool = flag("on").help("the per-CPU lock around a request's multiplies (off: -L)")
            .source("schbench.c: do_work, per_cpu_locks");
        calibrate: bool = flag("off").help("calibration: the sleep is outside the request latency, no locking (-C)")
            .source("schbench.c: calibrate_only");
    }
}

/// Registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "schbench",
    about: "schbench: message threads waking batches of workers by futex, each request a sleep and a matrix multiply -> p99 wake-up latency",
    small: &["schbench:m=2,t=3,r=1,n=1,f=32", "schbench:m=1,t=4,r=1,n=1,f=16,locking=off,calibrate=on"],
    metric: "us (p99 wake-up latency)",
    params: PARAMS,
    build,
};

/// Cycles a naive `i, j, k` multiply-add of `unsigned long` takes, the inner loop striding
/// down a column of B (a new line each step, from L1 or L2). \[INFERRED\]: the integer
/// multiply's throughput is one a cycle and the strided loads overlap; two cycles is what
/// such a loop reaches out of L2 on the P6 through today's cores.
pub const CYCLES_PER_MADD: u64 = 2;

/// One step of the per-CPU lock's spin: the model's resolution of the lock's hand-off.
pub const SPIN_STEP_NS: Time = 1000;

fn build(p: &Params, m: &Machine) -> Result<Box<dyn Workload>, SpecError> {
    let o = Options::from_params(p);
    let cpus = m.cpus as u64;
    let workers = if o.t == 0 { cpus.div_ceil(o.m) } else { o.t };
    // msize = sqrt(F * 1024 / 3 / 8), integer division first, as schbench computes it.
    let msize = matrix_size(o.f);
    let madds = o.n * msize * msize * msize;
    let mhz = m.costs().cpu_mhz.max(1);
    Ok(Box::new(Schbench {
        o,
        workers,
        msize,
        work_ns: madds * CYCLES_PER_MADD * 1000 / mhz,
        cpus: cpus as usize,
        shared: Arc::new(Mutex::new(Shared::default())),
    }))
}

/// The schbench workload.
pub struct Schbench {
    o: Options,
    /// Workers per message thread.
    workers: u64,
    msize: u64,
    /// User time of one request's multiplies.
    work_ns: Time,
    cpus: usize,
    shared: Arc<Mutex<Shared>>,
}

/// A futex word: a token the poster sets and the waiter consumes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Word {
    #[default]
    Blocked,
    Running,
}

/// One thread's futex and what the message thread notes for it.
#[derive(Clone, Debug, Default)]
struct Waitee {
    word: Word,
    /// In (or about to enter) `sem_wait`: a post must wake it.
    asleep: bool,
    /// When it was posted (wake-up latency's start).
    wake_time: Time,
}

/// The process's shared memory: futex words, the message threads' lists, the counters and
/// the histograms.
#[derive(Default)]
struct Shared {
    msg: Vec<Waitee>,
    workers: Vec<Waitee>,
    /// Per message thread: workers waiting to be posted, most recent last.
    lists: Vec<Vec<usize>>,
    /// Per CPU: the schbench lock is held.
    cpu_locks: Vec<bool>,
    stopping: bool,
    /// Requests done, per worker (never cleared, as schbench's `loop_count`).
    loops: Vec<u64>,
    wakeup: Hist,
    request: Hist,
    rps: Hist,
    /// Time of the runtime's start, and of the warm-up's end if one cleared the stats.
    start: Time,
}

/// Semaphore of message thread `i`: objects 0..m; workers after them.
fn msg_sem(i: usize) -> u32 {
    i as u32
}

/// `post`: set `w`'s word RUNNING; a `sem_post` only when it was BLOCKED and `w` sleeps.
fn post(w: &mut Waitee, sem: u32) -> Option<Op> {
    if w.word == Word::Running {
        return None;
    }
    w.word = Word::Running;
    w.asleep.then(|| {
        w.asleep = false;
        Op::Sync(SyncOp::SemPost(sem))
    })
}

/// `wait`: consume RUNNING, or sleep.
fn wait(w: &mut Waitee, sem: u32) -> Option<Op> {
    if w.word == Word::Running {
        w.word = Word::Blocked;
        return None;
    }
    w.asleep = true;
    Some(Op::Sync(SyncOp::SemWait(sem)))
}

/// A worker thread.
struct Worker {
    /// Global worker index.
    id: usize,
    /// Its message thread.
    msg: usize,
    sem: u32,
    sh: Arc<Mutex<Shared>>,
    state: WState,
    sleep: Time,
    work: (Time, u64),
    locking: bool,
    calibrate: bool,
    work_start: Time,
    locked_cpu: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WState {
    /// Queue on the message thread's list and post it.
    Queue,
    /// Wait for the message thread's post.
    Wait,
    /// Woken: note the latency, start the request (the sleep).
    Woken,
    /// After the sleep: take the per-CPU lock.
    Lock,
    /// The multiplies are done: release, count.
    Done,
}

impl Program for Worker {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        loop {
            let mut sh = self.sh.lock().expect("schbench shared state");
            match self.state {
                WState::Queue => {
                    if sh.stopping {
                        return Op::Exit;
                    }
                    let me = &mut sh.workers[self.id];
                    me.word = Word::Blocked;
                    me.wake_time = env.now;
                    sh.lists[self.msg].push(self.id);
                    self.state = WState::Wait;
                    if let Some(op) = post(&mut sh.msg[self.msg], msg_sem(self.msg)) {
                        return op;
                    }
                }
                WState::Wait => {
                    if sh.stopping {
                        return Op::Exit;
                    }
                    if let Some(op) = wait(&mut sh.workers[self.id], self.sem) {
                        return op;
                    }
                    self.state = WState::Woken;
                }
                WState::Woken => {
                    let lat = env.now.saturating_sub(sh.workers[self.id].wake_time) / US;
                    if lat > 0 {
                        sh.wakeup.add(lat);
                    }
                    self.state = WState::Lock;
                    if self.calibrate {
                        // -C: the sleep comes before the request's start.
                        if self.sleep > 0 {
                            self.work_start = Time::MAX;
                            return Op::Sleep { ns: self.sleep };
                        }
                        continue;
                    }
                    self.work_start = env.now;
                    if self.sleep > 0 {
                        return Op::Sleep { ns: self.sleep };
                    }
                }
                WState::Lock => {
                    if self.work_start == Time::MAX {
                        self.work_start = env.now;
                    }
                    if self.locking {
                        // schbench's trylock spin on the lock of the CPU it runs on; a
                        // migration between the lookup and the lock retries.
                        let cpu = env.cpu;
                        match self.locked_cpu {
                            Some(c) if c == cpu => {}
                            Some(c) => {
                                sh.cpu_locks[c] = false;
                                self.locked_cpu = None;
                                continue;
                            }
                            None if sh.cpu_locks[cpu] => {
                                return Op::Compute {
                                    ns: SPIN_STEP_NS,
                                    ws: 64,
                                };
                            }
                            None => {
                                sh.cpu_locks[cpu] = true;
                                self.locked_cpu = Some(cpu);
                                // Re-read the CPU after taking it.
                                continue;
                            }
                        }
                    }
                    self.state = WState::Done;
                    let (ns, ws) = self.work;
                    if ns > 0 {
                        return Op::Compute { ns, ws };
                    }
                }
                WState::Done => {
                    if let Some(c) = self.locked_cpu.take() {
                        sh.cpu_locks[c] = false;
                    }
                    let lat = env.now.saturating_sub(self.work_start) / US;
                    if lat > 0 {
                        sh.request.add(lat);
                    }
                    sh.loops[self.id] += 1;
                    self.state = WState::Queue;
                }
            }
        }
    }

    fn comm(&self) -> Option<String> {
        Some("schbench-worker".into())
    }
}

/// A message thread: start its workers, then post batches.
struct Message {
    idx: usize,
    sh: Arc<Mutex<Shared>>,
    spawn: Spawn,
    /// First worker id and how many.
    first: usize,
    sem_base: u32,
    proto: WorkerProto,
    /// Workers to post in this batch (the list taken, in posting order).
    batch: Vec<usize>,
    stopping_pass: bool,
}

/// What every worker is made from.
#[derive(Clone, Copy)]
struct WorkerProto {
    sleep: Time,
    work: (Time, u64),
    locking: bool,
    calibrate: bool,
}

impl Program for Message {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        let (idx, first, sem_base, proto) = (self.idx, self.first, self.sem_base, self.proto);
        let sh = Arc::clone(&self.sh);
        step!(self.spawn.step(env, |i, _| {
            let id = first + i as usize;
            Box::new(Worker {
                id,
                msg: idx,
                sem: sem_base + id as u32,
                sh: Arc::clone(&sh),
                state: WState::Queue,
                sleep: proto.sleep,
                work: proto.work,
                locking: proto.locking,
                calibrate: proto.calibrate,
                work_start: 0,
                locked_cpu: None,
            })
        }));
        loop {
            let mut sh = self.sh.lock().expect("schbench shared state");
            // Post the batch in hand, one futex call at a time.
            while let Some(w) = self.batch.pop() {
                if let Some(op) = post(&mut sh.workers[w], sem_base + w as u32) {
                    return op;
                }
            }
            if self.stopping_pass {
                return Op::Exit;
            }
            // Wake all: mark BLOCKED, take the list, one timestamp for the batch.
            sh.msg[idx].word = Word::Blocked;
            let list = std::mem::take(&mut sh.lists[idx]);
            if !list.is_empty() {
                let now = env.now;
                for &w in &list {
                    sh.workers[w].wake_time = now;
                }
                // Posted most recent first: `batch` pops from its end.
                self.batch = list;
                continue;
            }
            if sh.stopping {
                // Post every worker so that each sees the stop.
                self.batch = (first..first + self.spawn.spawned() as usize)
                    .rev()
                    .collect();
                self.stopping_pass = true;
                continue;
            }
            if let Some(op) = wait(&mut sh.msg[idx], msg_sem(idx)) {
                return op;
            }
        }
    }

    fn comm(&self) -> Option<String> {
        Some("schbench-msg".into())
    }
}

/// `main`: start the message threads, sample the request rate every second, stop.
struct Main {
    spawn: Spawn,
    sh: Arc<Mutex<Shared>>,
    m: usize,
    workers: u64,
    sem_base: u32,
    proto: WorkerProto,
    runtime: Time,
    warmup: Time,
    /// Last RPS sample: (time, total requests).
    last: Option<(Time, u64)>,
    warmed: bool,
    /// Message threads posted at the stop.
    posted: usize,
}

impl Program for Main {
    fn next(&mut self, env: &mut Env<'_>) -> Op {
        let (sh, workers, sem_base, proto) = (
            Arc::clone(&self.sh),
            self.workers,
            self.sem_base,
            self.proto,
        );
        step!(self.spawn.step(env, |i, _| {
            Box::new(Message {
                idx: i as usize,
                sh: Arc::clone(&sh),
                spawn: Spawn::clones(workers, |i, ret| {
                    format!("schbench: worker {} not created ({ret})", i + 1)
                }),
                first: i as usize * workers as usize,
                sem_base,
                proto,
                batch: Vec::new(),
                stopping_pass: false,
            })
        }));
        let mut sh = self.sh.lock().expect("schbench shared state");
        let now = env.now;
        let Some((t0, n0)) = self.last else {
            // The first pass samples at once: a rate of 0, as schbench's does.
            sh.start = now;
            sh.rps.add(0);
            self.last = Some((now, 0));
            return Op::Sleep { ns: SEC };
        };
        if sh.stopping {
            // Post each message thread, then leave (its threads wind down).
            while self.posted < self.m {
                let i = self.posted;
                self.posted += 1;
                if let Some(op) = post(&mut sh.msg[i], msg_sem(i)) {
                    return op;
                }
            }
            return Op::Exit;
        }
        let total: u64 = sh.loops.iter().sum();
        if self.warmup > 0 && !self.warmed && now - sh.start >= self.warmup {
            // "warmup done, zeroing stats": this pass takes no RPS sample.
            self.warmed = true;
            sh.wakeup = Hist::default();
            sh.request = Hist::default();
            sh.rps = Hist::default();
        } else if now > t0 {
            sh.rps.add((total - n0) * SEC / (now - t0));
        }
        self.last = Some((now, total));
        if now - sh.start >= self.runtime {
            sh.stopping = true;
            env.mark("end");
            drop(sh);
            return self.next(env);
        }
        Op::Sleep { ns: SEC }
    }

    fn comm(&self) -> Option<String> {
        Some("schbench".into())
    }
}

impl Workload for Schbench {
    fn root(&self) -> Box<dyn Program> {
        let m = self.o.m as usize;
        let n = m * self.workers as usize;
        *self.shared.lock().expect("schbench shared state") = Shared {
            msg: vec![Waitee::default(); m],
            workers: vec![Waitee::default(); n],
            lists: vec![Vec::new(); m],
            cpu_locks: vec![false; self.cpus],
            loops: vec![0; n],
            ..Shared::default()
        };
        let ws = 3 * self.msize * self.msize * 8;
        Box::new(Main {
            spawn: Spawn::clones(self.o.m, |i, ret| {
                format!("schbench: message thread {} not created ({ret})", i + 1)
            }),
            sh: Arc::clone(&self.shared),
            m,
            workers: self.workers,
            sem_base: m as u32,
            proto: WorkerProto {
                sleep: self.o.s * US,
                work: (self.work_ns, ws),
                locking: self.o.locking && !self.o.calibrate,
                calibrate: self.o.calibrate,
            },
            runtime: self.o.r * SEC,
            // schbench forces the warm-up off for runs shorter than 30 s.
            warmup: if self.o.r >= 30 { self.o.w * SEC } else { 0 },
            last: None,
            warmed: false,
            posted: 0,
        })
    }

    fn result(&self, rec: &Record, k: &Kernel) -> Result<Metric, String> {
        let _ = rec;
        let sh = self.shared.lock().expect("schbench shared state");
        if sh.wakeup.n == 0 {
            return Err("schbench: no wake-up was measured".into());
        }
        let total: u64 = sh.loops.iter().sum();
        let delay = |comm: &str| {
            let (wait, n) = k
                .tasks
                .iter()
                .filter(|t| t.comm.as_deref() == Some(comm))
                .fold((0u64, 0u64), |(w, n), t| {
                    (w + t.stats.sched.wait_sum, n + t.stats.sched.wait_count)
                });
            wait / n.max(1) / 1000
        };
        let mut m = report(
            &Stats {
                wakeup: &sh.wakeup,
                request: &sh.request,
                rps: &sh.rps,
                requests: total,
                delay_us: (delay("schbench-msg"), delay("schbench-worker")),
            },
            &self.o,
        );
        let d = m.details.as_mut().expect("report() gives details");
        d["workers_per_message_thread"] = self.workers.into();
        d["matrix_size"] = self.msize.into();
        d["request_work_us"] = (self.work_ns as f64 / 1000.0).into();
        Ok(m)
    }

    fn limit_ns(&self) -> Time {
        (self.o.r + 60) * SEC + 100 * MS
    }
}

/// What a schbench run measured, simulated or native.
pub struct Stats<'a> {
    /// Wake-up latencies, µs.
    pub wakeup: &'a Hist,
    /// Request latencies, µs.
    pub request: &'a Hist,
    /// Requests per second, one sample a second.
    pub rps: &'a Hist,
    /// Requests done in all (`loop_count`, never cleared).
    pub requests: u64,
    /// Mean scheduling delay of the message threads and of the workers, µs.
    pub delay_us: (u64, u64),
}

/// The result: p99 wake-up latency, the percentiles in `details`, and what schbench
/// prints at its end in `output`.
pub fn report(s: &Stats<'_>, o: &Options) -> Metric {
    let avg_rps = s.requests as f64 / o.r as f64;
    let mut m = metric(
        "wakeup_p99_us",
        s.wakeup.percentile(99.0) as f64,
        "us",
        "lower",
    );
    m.details = Some(serde_json::json!({
        "wakeup_latency_us": s.wakeup.json(&LAT_PCTS),
        "request_latency_us": s.request.json(&LAT_PCTS),
        "rps": s.rps.json(&RPS_PCTS),
        "average_rps": (avg_rps * 100.0).round() / 100.0,
        "message_threads": o.m,
    }));
    m.output = Some(format!(
        "{}{}{}average rps: {avg_rps:.2}\nsched delay: message {} (usec) worker {} (usec)",
        s.wakeup
            .block("Wakeup Latencies", "usec", o.r, &LAT_PCTS, 99.0),
        s.request
            .block("Request Latencies", "usec", o.r, &LAT_PCTS, 99.0),
        s.rps.block("RPS", "requests", o.r, &RPS_PCTS, 50.0),
        s.delay_us.0,
        s.delay_us.1,
    ));
    m
}

/// `msize` of a footprint of `f_kb` KB: `sqrt(F * 1024 / 3 / 8)`, integer division first.
pub fn matrix_size(f_kb: u64) -> u64 {
    ((f_kb * 1024 / 3 / 8) as f64).sqrt() as u64
}

/// The percentiles schbench prints for latencies, and for the request rate.
const LAT_PCTS: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
const RPS_PCTS: [f64; 3] = [20.0, 50.0, 90.0];
/// The list the sample counts are computed against.
const ALL_PCTS: [f64; 5] = [20.0, 50.0, 90.0, 99.0, 99.9];

/// schbench's (fio's) histogram: values below 512 exact, then 256 buckets per power of two.
#[derive(Clone, Debug, Default)]
pub struct Hist {
    buckets: std::collections::BTreeMap<u32, u64>,
    n: u64,
    min: u64,
    max: u64,
}

const PLAT_BITS: u32 = 8;
const PLAT_VAL: u64 = 1 << PLAT_BITS;

fn plat_idx(v: u64) -> u32 {
    if v < 2 * PLAT_VAL {
        return v as u32;
    }
    let msb = 63 - v.leading_zeros();
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits + 1) << PLAT_BITS;
    base + ((v >> error_bits) & (PLAT_VAL - 1)) as u32
}

fn plat_val(idx: u32) -> u64 {
    if (idx as u64) < 2 * PLAT_VAL {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx as u64) % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

impl Hist {
    /// Count one value.
    pub fn add(&mut self, v: u64) {
        *self.buckets.entry(plat_idx(v)).or_default() += 1;
        // schbench's min treats 0 as unset.
        self.min = if self.n == 0 || self.min == 0 {
            v
        } else {
            self.min.min(v)
        };
        self.max = self.max.max(v);
        self.n += 1;
    }

    /// The value at `p` % and the samples counted up to its bucket.
    fn at(&self, p: f64) -> (u64, u64) {
        let want = p / 100.0 * self.n as f64;
        let mut cum = 0;
        for (&i, &c) in &self.buckets {
            cum += c;
            if cum as f64 >= want {
                return (plat_val(i), cum);
            }
        }
        (self.max, self.n)
    }

    /// The value at `p` % (schbench's: the first bucket reaching the share).
    pub fn percentile(&self, p: f64) -> u64 {
        self.at(p).0
    }

    /// Add every sample of `other` (per-thread histograms into one).
    pub fn merge(&mut self, other: &Hist) {
        if other.n == 0 {
            return;
        }
        for (&i, &c) in &other.buckets {
            *self.buckets.entry(i).or_default() += c;
        }
        self.min = if self.n == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.max = self.max.max(other.max);
        self.n += other.n;
    }

    /// Samples counted.
    pub fn samples(&self) -> u64 {
        self.n
    }

    fn json(&self, pcts: &[f64]) -> serde_json::Value {
        let mut v = serde_json::Map::new();
        for &p in pcts {
            v.insert(format!("p{p}"), self.percentile(p).into());
        }
        v.insert("min".into(), self.min.into());
        v.insert("max".into(), self.max.into());
        v.insert("samples".into(), self.n.into());
        v.into()
    }

    /// schbench's `show_latencies` block.
    fn block(&self, label: &str, unit: &str, runtime: u64, pcts: &[f64], star: f64) -> String {
        let mut out = format!(
            "{label} percentiles ({unit}) runtime {runtime} (s) ({} total samples)\n",
            self.n
        );
        let mut prev = 0;
        for p in ALL_PCTS {
            let (v, cum) = self.at(p);
            let samples = cum - prev;
            prev = cum;
            if pcts.contains(&p) {
                let mark = if p == star { "* " } else { "  " };
                out.push_str(&format!("\t{mark}{p:2.1}th: {v:<10} ({samples} samples)\n"));
            }
        }
        out.push_str(&format!("\t  min={}, max={}\n", self.min, self.max));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_exact_below_512_and_bucketed_above() {
        for v in [0, 1, 511] {
            assert_eq!(plat_val(plat_idx(v)), v);
        }
        // 1000 falls in [992, 1000) of the 2-wide buckets above 512: read at 993.
        let v = plat_val(plat_idx(1000));
        assert!((999..=1001).contains(&v), "{v}");
        let big = plat_val(plat_idx(1_000_000));
        assert!((big as f64 - 1e6).abs() / 1e6 < 0.004, "{big}");
    }

    #[test]
    fn percentiles_take_the_first_bucket_that_reaches_the_share() {
        let mut h = Hist::default();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.percentile(50.0), 50);
        assert_eq!(h.percentile(99.0), 99);
        assert_eq!(h.percentile(99.9), 100);
        assert_eq!((h.min, h.max), (1, 100));
        let b = h.block("Wakeup Latencies", "usec", 30, &LAT_PCTS, 99.0);
        assert!(b.starts_with(
            "Wakeup Latencies percentiles (usec) runtime 30 (s) (100 total samples)\n"
        ));
        assert!(b.contains("\t  50.0th: 50         (30 samples)\n"), "{b}");
        assert!(b.contains("\t* 99.0th: 99         (9 samples)\n"), "{b}");
        assert!(b.ends_with("\t  min=1, max=100\n"));
    }

    #[test]
    fn a_post_to_a_waiting_thread_wakes_it_once() {
        let mut w = Waitee::default();
        assert!(matches!(
            wait(&mut w, 7),
            Some(Op::Sync(SyncOp::SemWait(7)))
        ));
        assert!(matches!(
            post(&mut w, 7),
            Some(Op::Sync(SyncOp::SemPost(7)))
        ));
        // A second post finds it RUNNING: no call.
        assert!(post(&mut w, 7).is_none());
        // Woken, it consumes the token without sleeping.
        assert!(wait(&mut w, 7).is_none());
        assert_eq!(w.word, Word::Blocked);
        // A post before the wait leaves a token the wait consumes.
        assert!(post(&mut w, 7).is_none());
        assert!(wait(&mut w, 7).is_none());
    }
}
