//! schbench natively, as the model (`schedlab::workload::schbench`) and with its options:
//! `m` message threads each start `t` workers (threads of this one process). A worker marks
//! its futex word BLOCKED, notes the time, joins its message thread's list, posts the
//! message thread and waits; woken, it records the wake-up latency (from the time the
//! message thread noted for its batch), sleeps `s` µs and, holding the lock of the CPU it
//! runs on (`sched_getcpu`, a `trylock` spin; `locking=off` drops it), does `n` naive
//! multiplies of three `msize²` matrices of `u64`; the request latency runs from before the
//! sleep to after the multiplies (after the sleep with `calibrate=on`). A message thread
//! takes its whole list, notes one time and posts each worker on it (most recent first),
//! then waits. A post swaps the target's word from BLOCKED to RUNNING and calls
//! `FUTEX_WAKE` only when the swap succeeded; a wait consumes RUNNING or sleeps in
//! `FUTEX_WAIT`. The leader samples the request count every second and stops everyone
//! after `r` seconds. The histograms and the printed text are the model's
//! ([`schedlab::workload::schbench::report`]), so both print what schbench prints.
//!
//! One difference from schbench: the message thread's list is a mutex-guarded vector, not
//! a lock-free stack (the same order: most recent first).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use schedlab::spec::Params;
use schedlab::workload::schbench::{matrix_size, report, Hist, Options, Stats};

use crate::host;
use crate::runner::{Ctx, Outcome};
use crate::sys::{self, Fail, Res};

const BLOCKED: u32 = 0;
const RUNNING: u32 = 1;

/// A thread's futex word and the time its poster noted.
#[derive(Default)]
struct Waitee {
    word: AtomicU32,
    wake_us: AtomicU64,
}

fn post(w: &Waitee) {
    if w.word
        .compare_exchange(BLOCKED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        sys::futex_wake(&w.word);
    }
}

fn wait(w: &Waitee) {
    while w
        .word
        .compare_exchange(RUNNING, BLOCKED, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        sys::futex_wait(&w.word, BLOCKED);
    }
}

fn now_us() -> u64 {
    sys::now_ns() / 1000
}

/// What every thread shares.
struct Shared {
    msg: Vec<Waitee>,
    workers: Vec<Waitee>,
    lists: Vec<Mutex<Vec<usize>>>,
    cpu_locks: Vec<Mutex<()>>,
    stopping: AtomicBool,
    loops: Vec<AtomicU64>,
    /// Per worker: (wake-up, request) histograms.
    hists: Vec<Mutex<(Hist, Hist)>>,
    /// Run delay ns and timeslices of the message threads and of the workers, read by
    /// each thread at its end.
    delay: Mutex<[(u64, u64); 2]>,
}

fn note_delay(sh: &Shared, which: usize) {
    let (ns, n) = sys::thread_schedstat();
    let mut d = sh.delay.lock().expect("delay");
    d[which].0 += ns;
    d[which].1 += n;
}

/// `n` naive `i, j, k` multiplies of `msize²` matrices in `buf` (A, B, C in a row).
fn multiply(buf: &mut [u64], msize: usize, n: u64) {
    let sq = msize * msize;
    for _ in 0..n {
        for i in 0..msize {
            for j in 0..msize {
                let mut sum = 0u64;
                for k in 0..msize {
                    sum =
                        sum.wrapping_add(buf[i * msize + k].wrapping_mul(buf[sq + k * msize + j]));
                }
                buf[2 * sq + i * msize + j] = sum;
            }
        }
        std::hint::black_box(&mut *buf);
    }
}

fn worker(sh: &Shared, id: usize, msg: usize, o: &Options, msize: usize) -> Res<()> {
    let mut buf = vec![1u64; 3 * msize * msize];
    let locking = o.locking && !o.calibrate;
    loop {
        if sh.stopping.load(Ordering::Acquire) {
            break;
        }
        let me = &sh.workers[id];
        me.word.store(BLOCKED, Ordering::Release);
        me.wake_us.store(now_us(), Ordering::Release);
        sh.lists[msg].lock().expect("list").push(id);
        post(&sh.msg[msg]);
        if sh.stopping.load(Ordering::Acquire) {
            break;
        }
        wait(me);
        let woke = now_us();
        let lat = woke.saturating_sub(me.wake_us.load(Ordering::Acquire));
        let mut start = woke;
        if o.calibrate && o.s > 0 {
            std::thread::sleep(std::time::Duration::from_micros(o.s));
            start = now_us();
        } else if o.s > 0 {
            std::thread::sleep(std::time::Duration::from_micros(o.s));
        }
        if locking {
            loop {
                let cpu = sys::getcpu() % sh.cpu_locks.len();
                if let Ok(g) = sh.cpu_locks[cpu].try_lock() {
                    if sys::getcpu() % sh.cpu_locks.len() == cpu {
                        multiply(&mut buf, msize, o.n);
                        drop(g);
                        break;
                    }
                    drop(g);
                } else {
                    std::hint::spin_loop();
                }
            }
        } else {
            multiply(&mut buf, msize, o.n);
        }
        let req = now_us().saturating_sub(start);
        {
            let mut h = sh.hists[id].lock().expect("hists");
            if lat > 0 {
                h.0.add(lat);
            }
            if req > 0 {
                h.1.add(req);
            }
        }
        sh.loops[id].fetch_add(1, Ordering::Release);
    }
    note_delay(sh, 1);
    Ok(())
}

fn message(sh: &Shared, idx: usize, first: usize, count: usize) {
    loop {
        sh.msg[idx].word.store(BLOCKED, Ordering::Release);
        let list = std::mem::take(&mut *sh.lists[idx].lock().expect("list"));
        if !list.is_empty() {
            let now = now_us();
            for &w in list.iter().rev() {
                sh.workers[w].wake_us.store(now, Ordering::Release);
                post(&sh.workers[w]);
            }
        }
        if sh.stopping.load(Ordering::Acquire) {
            for w in first..first + count {
                post(&sh.workers[w]);
            }
            break;
        }
        wait(&sh.msg[idx]);
    }
    note_delay(sh, 0);
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = Options::from_params(p);
    let cpus = host::allowed_cpus().len().max(1);
    let m = o.m as usize;
    let t = if o.t == 0 {
        cpus.div_ceil(m)
    } else {
        o.t as usize
    };
    let n = m * t;
    let msize = matrix_size(o.f) as usize;
    let sh = Arc::new(Shared {
        msg: (0..m).map(|_| Waitee::default()).collect(),
        workers: (0..n).map(|_| Waitee::default()).collect(),
        lists: (0..m).map(|_| Mutex::new(Vec::new())).collect(),
        cpu_locks: (0..host::host().cpus_online.max(cpus))
            .map(|_| Mutex::new(()))
            .collect(),
        stopping: AtomicBool::new(false),
        loops: (0..n).map(|_| AtomicU64::new(0)).collect(),
        hists: (0..n).map(|_| Mutex::new(Default::default())).collect(),
        delay: Mutex::new([(0, 0); 2]),
    });
    let mut tasks = Vec::with_capacity(n + m);
    for idx in 0..m {
        let first = idx * t;
        for id in first..first + t {
            let (sh, o) = (Arc::clone(&sh), o.clone());
            tasks.push(ctx.thread(move || worker(&sh, id, idx, &o, msize))?);
        }
        let sh = Arc::clone(&sh);
        tasks.push(ctx.thread(move || {
            message(&sh, idx, first, t);
            Ok(())
        })?);
    }
    let warmup = if o.r >= 30 { o.w } else { 0 };
    let t0 = sys::now_ns();
    let mut rps = Hist::default();
    rps.add(0);
    let (mut last_t, mut last_n) = (t0, 0u64);
    let mut warmed = false;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let now = sys::now_ns();
        let total: u64 = sh.loops.iter().map(|l| l.load(Ordering::Acquire)).sum();
        if warmup > 0 && !warmed && now - t0 >= warmup * 1_000_000_000 {
            warmed = true;
            rps = Hist::default();
            for h in &sh.hists {
                *h.lock().expect("hists") = Default::default();
            }
        } else if now > last_t {
            rps.add((total - last_n) * 1_000_000_000 / (now - last_t));
        }
        (last_t, last_n) = (now, total);
        if now - t0 >= o.r * 1_000_000_000 {
            break;
        }
    }
    sh.stopping.store(true, Ordering::Release);
    for w in &sh.msg {
        post(w);
    }
    ctx.join_all(tasks)?;
    let ns = sys::now_ns() - t0;
    let (mut wakeup, mut request) = (Hist::default(), Hist::default());
    for h in &sh.hists {
        let h = h.lock().expect("hists");
        wakeup.merge(&h.0);
        request.merge(&h.1);
    }
    if wakeup.samples() == 0 {
        return Err(Fail("schbench: no wake-up was measured".into()));
    }
    let requests: u64 = sh.loops.iter().map(|l| l.load(Ordering::Acquire)).sum();
    let d = *sh.delay.lock().expect("delay");
    let per = |(ns, k): (u64, u64)| ns / k.max(1) / 1000;
    let metric = report(
        &Stats {
            wakeup: &wakeup,
            request: &request,
            rps: &rps,
            requests,
            delay_us: (per(d[0]), per(d[1])),
        },
        &o,
    );
    let mut out = Outcome::new(
        &metric.metric,
        metric.value,
        &metric.unit,
        &metric.better,
        ns,
    );
    out.output = metric.output;
    out.details = metric.details;
    out.counts.insert("requests".into(), requests as f64);
    out.counts.insert("threads".into(), (n + m) as f64);
    Ok(out)
}
