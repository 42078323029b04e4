//! rt-app files natively (rtapp.md): the same file, read by the same parser as the
//! simulator's (`schedlab::workload::rtapp::parse`), played by threads of this process
//! with the host's own calls — `run` a busy loop for that much CPU time of the thread,
//! `runtime` a busy loop until that much wall time, `sleep` `nanosleep`, `timer`
//! `clock_nanosleep(TIMER_ABSTIME)`, mutexes, condition variables, barriers and
//! semaphores the C library's pthread and POSIX objects, `yield` `sched_yield`, `fork` a
//! new thread, `cpus` `sched_setaffinity`, `priority` `setpriority`. Results as the
//! simulated run reports them: per thread rows, wake-up latency of timers, least slack,
//! timers missed; the figure is the largest wake-up latency, µs.
//!
//! At `duration` the leader reports and the process exits, ending every thread wherever
//! it is — as rt-app cancels its threads (an unfinished iteration writes no row).

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use schedlab::spec::Params;
use schedlab::workload::rtapp::parse::{self, Attrs, Event, RtApp, TaskDef};

use crate::host;
use crate::runner::{Ctx, Outcome};
use crate::sys::{self, Fail, Res};

/// A pthread or POSIX object, in memory that does not move.
struct Obj<T>(Box<UnsafeCell<T>>);
// SAFETY: the objects are used only through the C library's thread-safe calls.
unsafe impl<T> Sync for Obj<T> {}
unsafe impl<T> Send for Obj<T> {}

impl<T> Obj<T> {
    fn ptr(&self) -> *mut T {
        self.0.get()
    }
}

/// The process's synchronisation objects, by kind and name, created before the threads.
#[derive(Default)]
struct Objects {
    mutexes: BTreeMap<String, Obj<libc::pthread_mutex_t>>,
    conds: BTreeMap<String, Obj<libc::pthread_cond_t>>,
    barriers: BTreeMap<String, Obj<libc::pthread_barrier_t>>,
    sems: BTreeMap<String, Obj<libc::sem_t>>,
}

impl Objects {
    fn new(app: &RtApp) -> Objects {
        let mut o = Objects::default();
        let parties = parse::barrier_parties(app);
        let mutex = |o: &mut Objects, n: &str| {
            o.mutexes.entry(n.to_string()).or_insert_with(|| {
                // SAFETY: a zeroed mutex is initialised at once with default attributes.
                let m = Obj(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })));
                unsafe { libc::pthread_mutex_init(m.ptr(), std::ptr::null()) };
                m
            });
        };
        let cond = |o: &mut Objects, n: &str| {
            o.conds.entry(n.to_string()).or_insert_with(|| {
                // SAFETY: as for the mutex.
                let c = Obj(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })));
                unsafe { libc::pthread_cond_init(c.ptr(), std::ptr::null()) };
                c
            });
        };
        for t in &app.tasks {
            mutex(&mut o, &t.name);
            cond(&mut o, &t.name);
            for ph in &t.phases {
                for (_, e) in &ph.events {
                    match e {
                        Event::Lock(m) | Event::Unlock(m) => mutex(&mut o, m),
                        Event::Wait { cond: c, mutex: m } | Event::Sync { cond: c, mutex: m } => {
                            mutex(&mut o, m);
                            cond(&mut o, c);
                        }
                        Event::Signal(c) | Event::Broad(c) => cond(&mut o, c),
                        Event::Resume(t) => {
                            mutex(&mut o, t);
                            cond(&mut o, t);
                        }
                        Event::Barrier(b) => {
                            let n = parties.get(b).copied().unwrap_or(1).max(1);
                            o.barriers.entry(b.clone()).or_insert_with(|| {
                                // SAFETY: initialised at once for `n` parties.
                                let x =
                                    Obj(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })));
                                unsafe { libc::pthread_barrier_init(x.ptr(), std::ptr::null(), n) };
                                x
                            });
                        }
                        Event::SemPost(s) | Event::SemWait(s) => {
                            o.sems.entry(s.clone()).or_insert_with(|| {
                                // SAFETY: initialised at once, value 0, process-private.
                                let x =
                                    Obj(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })));
                                unsafe { libc::sem_init(x.ptr(), 0, 0) };
                                x
                            });
                        }
                        _ => {}
                    }
                }
            }
        }
        o
    }
}

/// A thread's summary.
#[derive(Clone, Debug, Default)]
struct Stats {
    rows: u64,
    timers: u64,
    missed: u64,
    wu_lat_sum: u64,
    wu_lat_max: u64,
    slack_min: Option<i64>,
}

struct Shared {
    app: RtApp,
    objs: Objects,
    t_zero: u64,
    stop: AtomicBool,
    timers: Mutex<BTreeMap<String, u64>>,
    stats: Mutex<BTreeMap<String, Stats>>,
    next_index: Mutex<(u32, BTreeMap<String, u32>)>,
    live: Mutex<u32>,
    all_ended: (Mutex<bool>, std::sync::Condvar),
}

/// Nanoseconds of CPU time of the calling thread.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(at: u64) {
    let ts = libc::timespec {
        tv_sec: (at / 1_000_000_000) as libc::time_t,
        tv_nsec: (at % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: ts is valid; EINTR just ends the sleep early, as in rt-app.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn apply(a: &Attrs, nice: &mut i32) -> Res<()> {
    if let Some(cpus) = &a.cpus {
        // SAFETY: a zeroed cpu_set_t is empty; CPU_SET within its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(Fail(format!(
                "rtapp: sched_setaffinity({cpus:?}) failed: {}",
                sys::strerror(sys::errno())
            )));
        }
    }
    if let Some(n) = a.nice {
        if n != *nice {
            // SAFETY: plain syscall on our own thread id.
            let r =
                unsafe { libc::setpriority(libc::PRIO_PROCESS, sys::gettid() as libc::id_t, n) };
            if r < 0 {
                return Err(Fail(format!(
                    "rtapp: setpriority(nice={n}) failed: {} (a lower nice needs CAP_SYS_NICE)",
                    sys::strerror(sys::errno())
                )));
            }
            *nice = n;
        }
    }
    Ok(())
}

/// One thread's life (rtapp.md §5).
fn thread_body(
    sh: Arc<Shared>,
    task: TaskDef,
    index: u32,
    name: String,
    ctx_spawn: Spawner,
) -> Res<()> {
    // rt-app names each thread after its task.
    sys::set_comm(&name);
    let o = &sh.objs;
    let t_first = sh.t_zero + task.delay_us * 1000;
    let mut nice = 0;
    apply(&task.attrs, &mut nice)?;
    if task.delay_us > 0 {
        sleep_until(t_first);
    }
    let mut stats = Stats::default();
    let (mut phase, mut phase_loop, mut thread_loop) = (0usize, 0i64, 0i64);
    let mut buf = vec![0u8; 4 << 20];
    let done = |thread_loop: i64| task.loops >= 0 && thread_loop >= task.loops;
    while !sh.stop.load(Ordering::Relaxed) && !done(thread_loop) {
        let ph = &task.phases[phase];
        if phase_loop == 0 {
            apply(&ph.attrs, &mut nice)?;
        }
        let (mut slack, mut wu_lat, mut timers, mut missed) = (0i64, 0u64, 0u64, 0u64);
        for (_, e) in &ph.events {
            if sh.stop.load(Ordering::Relaxed) {
                break;
            }
            // SAFETY (all calls below): the objects were initialised before any thread
            // started and live as long as the process.
            match e {
                Event::Run(us) => {
                    let end = thread_cpu_ns() + us * 1000;
                    while thread_cpu_ns() < end {
                        std::hint::spin_loop();
                    }
                }
                Event::Runtime(us) => sys::spin_ns(us * 1000),
                Event::Sleep(us) => std::thread::sleep(std::time::Duration::from_micros(*us)),
                Event::Timer {
                    name: tn,
                    period_us,
                    absolute,
                } => {
                    let key = if tn.starts_with("unique") {
                        format!("{index}\u{0}{tn}")
                    } else {
                        tn.clone()
                    };
                    let at = {
                        let mut tm = sh.timers.lock().expect("timers");
                        let t = tm.entry(key.clone()).or_insert(t_first);
                        *t += period_us * 1000;
                        *t
                    };
                    let now = sys::now_ns();
                    let s = (at as i64 - now as i64) / 1000;
                    slack = if timers == 0 || !sh.app.global.cumulative_slack {
                        s
                    } else {
                        slack + s
                    };
                    timers += 1;
                    if now < at {
                        sleep_until(at);
                        wu_lat += sys::now_ns().saturating_sub(at) / 1000;
                    } else {
                        missed += 1;
                        if !absolute {
                            sh.timers.lock().expect("timers").insert(key, now);
                        }
                    }
                }
                Event::Lock(m) => unsafe {
                    libc::pthread_mutex_lock(o.mutexes[m].ptr());
                },
                Event::Unlock(m) => unsafe {
                    libc::pthread_mutex_unlock(o.mutexes[m].ptr());
                },
                Event::Wait { cond, mutex } => unsafe {
                    libc::pthread_cond_wait(o.conds[cond].ptr(), o.mutexes[mutex].ptr());
                },
                Event::Sync { cond, mutex } => unsafe {
                    libc::pthread_cond_signal(o.conds[cond].ptr());
                    libc::pthread_cond_wait(o.conds[cond].ptr(), o.mutexes[mutex].ptr());
                },
                Event::Signal(c) => unsafe {
                    libc::pthread_cond_signal(o.conds[c].ptr());
                },
                Event::Broad(c) => unsafe {
                    libc::pthread_cond_broadcast(o.conds[c].ptr());
                },
                Event::Suspend => unsafe {
                    let (m, c) = (o.mutexes[&task.name].ptr(), o.conds[&task.name].ptr());
                    libc::pthread_mutex_lock(m);
                    libc::pthread_cond_wait(c, m);
                    libc::pthread_mutex_unlock(m);
                },
                Event::Resume(t) => unsafe {
                    let (m, c) = (o.mutexes[t].ptr(), o.conds[t].ptr());
                    libc::pthread_mutex_lock(m);
                    libc::pthread_cond_broadcast(c);
                    libc::pthread_mutex_unlock(m);
                },
                Event::Barrier(b) => unsafe {
                    libc::pthread_barrier_wait(o.barriers[b].ptr());
                },
                Event::SemPost(s) => unsafe {
                    libc::sem_post(o.sems[s].ptr());
                },
                Event::SemWait(s) => unsafe {
                    libc::sem_wait(o.sems[s].ptr());
                },
                Event::Yield => sys::sched_yield(),
                Event::Fork(t) => ctx_spawn(sh.clone(), t)?,
                Event::Mem(bytes) => {
                    let mut left = *bytes as usize;
                    while left > 0 {
                        let n = left.min(buf.len());
                        buf[..n].fill((left & 0xff) as u8);
                        left -= n;
                    }
                    std::hint::black_box(&buf);
                }
            }
        }
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        stats.rows += 1;
        stats.timers += timers;
        stats.missed += missed;
        if timers > 0 {
            stats.wu_lat_sum += wu_lat;
            stats.wu_lat_max = stats.wu_lat_max.max(wu_lat);
            stats.slack_min = Some(stats.slack_min.map_or(slack, |m| m.min(slack)));
        }
        sh.stats
            .lock()
            .expect("stats")
            .insert(name.clone(), stats.clone());
        phase_loop += 1;
        if ph.loops >= 0 && phase_loop >= ph.loops {
            phase_loop = 0;
            phase += 1;
            if phase == task.phases.len() {
                phase = 0;
                thread_loop += 1;
            }
        }
    }
    let mut live = sh.live.lock().expect("live");
    *live -= 1;
    if *live == 0 {
        let (m, cv) = &sh.all_ended;
        *m.lock().expect("ended") = true;
        cv.notify_all();
    }
    Ok(())
}

/// Starts a forked thread of the named task.
type Spawner = Arc<dyn Fn(Arc<Shared>, &str) -> Res<()> + Send + Sync>;

fn spawner() -> Spawner {
    Arc::new(|sh: Arc<Shared>, name: &str| {
        let Some(task) = sh.app.tasks.iter().find(|t| t.name == name).cloned() else {
            return Ok(());
        };
        let (index, thread_name) = {
            let mut g = sh.next_index.lock().expect("index");
            let (next, forks) = &mut *g;
            let k = forks.entry(name.to_string()).or_insert(0);
            if *k >= 1024 {
                return Ok(());
            }
            let tn = format!("{name}-{next}-{:04}", *k);
            *k += 1;
            *next += 1;
            (*next - 1, tn)
        };
        *sh.live.lock().expect("live") += 1;
        let sp = spawner();
        std::thread::Builder::new()
            .spawn(move || thread_body(sh, task, index, thread_name, sp))
            .map_err(|e| Fail(format!("rtapp: fork of {name}: {e}")))?;
        Ok(())
    })
}

/// Run it.
pub fn run(p: &Params, ctx: &mut Ctx) -> Res<Outcome> {
    let o = schedlab::workload::rtapp::Options::from_params(p);
    let text = schedlab::workload::rtapp::file_text(&o.file).map_err(Fail)?;
    let cpus = host::allowed_cpus().iter().max().map_or(1, |m| m + 1);
    let app = parse::parse(&text, cpus).map_err(|e| Fail(format!("rtapp: {}: {e}", o.file)))?;
    let threads: Vec<(TaskDef, String)> = {
        let mut v = Vec::new();
        for t in &app.tasks {
            for _ in 0..t.instance {
                let n = format!("{}-{}", t.name, v.len());
                v.push((t.clone(), n));
            }
        }
        v
    };
    let duration_s = if app.global.duration_s < 0 {
        10
    } else {
        app.global.duration_s as u64
    };
    let n = threads.len() as u32;
    let start = Arc::new(std::sync::Barrier::new(threads.len() + 1));
    // The use-case start: threads created after it read it once the start barrier opens.
    let t_zero = sys::now_ns();
    let sh = Arc::new(Shared {
        objs: Objects::new(&app),
        app,
        t_zero,
        stop: AtomicBool::new(false),
        timers: Mutex::new(BTreeMap::new()),
        stats: Mutex::new(BTreeMap::new()),
        next_index: Mutex::new((n, BTreeMap::new())),
        live: Mutex::new(n),
        all_ended: (Mutex::new(n == 0), std::sync::Condvar::new()),
    });
    for (i, (task, name)) in threads.into_iter().enumerate() {
        let (sh, start, sp) = (sh.clone(), start.clone(), spawner());
        // Threads are not joined: at `duration` the leader reports and exits.
        let _ = ctx.thread(move || {
            start.wait();
            thread_body(sh, task, i as u32, name, sp)
        })?;
    }
    start.wait();
    let deadline = std::time::Duration::from_secs(duration_s);
    let (m, cv) = &sh.all_ended;
    let ended = cv
        .wait_timeout_while(m.lock().expect("ended"), deadline, |e| !*e)
        .expect("ended");
    let all_ended = *ended.0;
    drop(ended);
    sh.stop.store(true, Ordering::Relaxed);
    let timed = sys::now_ns() - t_zero;
    let stats = sh.stats.lock().expect("stats").clone();
    let worst = stats.values().map(|s| s.wu_lat_max).max().unwrap_or(0);
    let mut out = Outcome::new("max_wakeup_latency_us", worst as f64, "us", "lower", timed);
    for (name, s) in &stats {
        out.counts.insert(format!("{name}.rows"), s.rows as f64);
        out.counts
            .insert(format!("{name}.missed_timers"), s.missed as f64);
        out.counts
            .insert(format!("{name}.wakeup_latency_max_us"), s.wu_lat_max as f64);
        if s.timers > s.missed {
            out.counts.insert(
                format!("{name}.wakeup_latency_mean_us"),
                s.wu_lat_sum as f64 / (s.timers - s.missed) as f64,
            );
        }
        if let Some(sl) = s.slack_min {
            out.counts.insert(format!("{name}.slack_min_us"), sl as f64);
        }
    }
    out.counts
        .insert("ended_by_duration".into(), f64::from(u8::from(!all_ended)));
    Ok(out)
}
