//! The cost equations (the module table of [`super`]) solved from the medians.

use std::collections::BTreeMap;

use schedlab::machine::preset::piii700;

use super::probe::read;

/// What sysfs and the buffer probes told.
pub(super) struct Geometry {
    pub(super) line: u64,
    pub(super) l1: u64,
    pub(super) l1_ways: u64,
    pub(super) l2: u64,
    pub(super) l2_ways: u64,
    /// The shared level 3 (bytes, ways), where sysfs shows one at least four L2s deep.
    pub(super) llc: Option<(u64, u64)>,
    pub(super) sndbuf: u64,
    pub(super) msgs: u64,
    pub(super) pipe_bytes: u64,
    /// Core clock (`/proc/cpuinfo`).
    pub(super) mhz: u64,
}

/// A solved quantity: its value from the medians, and the spread it inherits from them
/// (the half inter-quartile ranges of its terms, weighted by their coefficients).
#[derive(Clone, Copy, Debug)]
pub(super) struct Est {
    pub(super) v: f64,
    pub(super) spread: f64,
}

impl Est {
    /// The value by [`solve`]'s rule: a difference larger than its spread is itself; one
    /// within it is not resolved and takes half the spread (`false`).
    fn resolved(self) -> (f64, bool) {
        if self.v > self.spread {
            (self.v, true)
        } else {
            (self.spread / 2.0, false)
        }
    }
}

impl std::ops::Sub for Est {
    type Output = Est;
    fn sub(self, o: Est) -> Est {
        Est {
            v: self.v - o.v,
            spread: self.spread + o.spread,
        }
    }
}

impl std::ops::Add for Est {
    type Output = Est;
    fn add(self, o: Est) -> Est {
        Est {
            v: self.v + o.v,
            spread: self.spread + o.spread,
        }
    }
}

impl std::ops::Mul<f64> for Est {
    type Output = Est;
    fn mul(self, k: f64) -> Est {
        Est {
            v: self.v * k,
            spread: self.spread * k.abs(),
        }
    }
}

/// An AF_UNIX skb's truesize as the fill probe saw it: `SO_SNDBUF` over the 100-byte
/// writes it took (at least 128 bytes, should the probe have seen none).
pub(super) fn skb_truesize(sndbuf: u64, msgs: u64) -> u64 {
    (sndbuf / msgs.max(1)).max(128)
}

/// The queues `{prefix}_0`, `{prefix}_1` … as measured: each one's bytes
/// (`{prefix}_J_bytes`) and its mean over `base`, up to the first one missing.
fn depth_means(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
    prefix: &str,
    base: Est,
) -> Vec<(f64, Est)> {
    (0..schedlab::machine::preset::DepthCurve::MAX)
        .map_while(|j| {
            let name = format!("{prefix}_{j}");
            let (Some(_), Some(&t)) = (b.get(&name), b.get(&format!("{name}_bytes"))) else {
                return None;
            };
            Some((t, e(&name) - base))
        })
        .collect()
}

/// The skb depth curve (`Costs::skb_depth_ns`) from the `unix_depth_J` queues: each
/// queue's mean cost over the 1-deep one, then each band's from the means ([`bands`]).
/// The 1-deep queue is the origin: its depths, `80 x truesize`, cost nothing by
/// definition.
fn depth_curve(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
    truesize: u64,
) -> Option<(schedlab::machine::preset::DepthCurve, String)> {
    let means = depth_means(b, e, "unix_depth", e("unix_queue_80x1"));
    bands(means, (80 * truesize) as f64).map(|(curve, notes)| {
        (
            curve,
            format!("100-byte AF_UNIX write+read over queues of doubling depth less queued 1 deep, per skb; each band from the means ({notes})"),
        )
    })
}

/// The pipe depth curve (`Costs::pipe_depth_ns`) from the `pipe_depth_J` queues: each
/// queue's mean over 8 pipes 200 deep, then each band's from the means ([`bands`]). The
/// shallow queue's 160 000 bytes are the origin.
fn pipe_depth_curve(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
) -> Option<(schedlab::machine::preset::DepthCurve, String)> {
    b.get("pipe_depth_base")?;
    let means = depth_means(b, e, "pipe_depth", e("pipe_depth_base"));
    bands(means, 8.0 * 200.0 * 100.0).map(|(curve, notes)| {
        (
            curve,
            format!("100-byte pipe write+read over pipes of doubling total depth less 8 pipes 200 deep, per message; each band from the means ({notes})"),
        )
    })
}

/// An IPI's delivery to a running CPU (`ipi_latency_ns`) from the membarrier round trip:
/// `membarrier(PRIVATE_EXPEDITED)` beside a thread spinning on the other CPU, less alone,
/// is the send, the delivery, the handler (`irq_ns`) and two line transfers (the call's
/// data read by the handler, its completion flag read back by the waiting sender). What
/// waking a *halted* CPU adds (`idle_exit_ns`) is fitted with the simulator afterwards
/// ([`super::measure`]). The send is the one measured to a halted CPU, which may cost
/// more under a hypervisor (the host wakes the vCPU's thread): the delivery is then a lower
/// estimate. Without the benchmark (no expedited membarrier) both stay unsolved here and
/// `ipi_latency_ns` is fitted alone, idle exit included.
fn ipi_delivery(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
    ipi_send: Est,
    c2c: Est,
    irq_ns: u64,
) -> Option<Est> {
    b.get("membarrier_beside_spinner")?;
    let irq = Est {
        v: irq_ns as f64,
        spread: 0.0,
    };
    let round = e("membarrier_beside_spinner") - e("membarrier_alone");
    Some(round - ipi_send - irq - c2c * 2.0)
}

/// TCP's four costs over loopback (`tcp_sendmsg_ns`, `tcp_recvmsg_ns`, `tcp_segment_ns`,
/// `tcp_ack_ns`) and how they were found. A 100-byte write+read in one thread
/// (`tcp_pair_100`) is 2 syscalls, a send, a receive, a segment, the pure ACKs
/// /proc/net/snmp counted and 200 bytes copied. 32 writes held with `MSG_MORE` and read
/// back at once (`tcp_corked_32x100`) are 33 syscalls, 32 sends, a receive, one segment,
/// its ACKs and 6 400 bytes copied. The two separate a call from a segment. Within each
/// pair the P6 preset's proportions stay (send = receive; an ACK 9/14 of a segment).
/// Without the corked benchmark, or when the split is not resolved, all four come from
/// the write+read alone in the P6 proportions 2:2:14:9.
fn tcp_costs(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
    syscall: Est,
    copy_per_kb: Est,
    p6: [u64; 4],
) -> ([Est; 4], String) {
    let acks = |name: &str| b.get(name).map_or(0.0, |s| (s - 1.0).max(0.0));
    let ack_per_seg = p6[3] as f64 / p6[2] as f64;
    let pair = e("tcp_pair_100") - syscall * 2.0 - copy_per_kb * (200.0 / 1024.0);
    let a_pair = acks("tcp_pair_100_segments");
    let proportional = || {
        let weight = (p6[0] + p6[1] + p6[2]) as f64 + a_pair * p6[3] as f64;
        let per = pair * (1.0 / weight);
        (
            p6.map(|w| per * w as f64),
            format!("100-byte write+read over a loopback TCP pair in one thread (TCP_NODELAY; {a_pair:.2} pure ACKs per round counted), less 2 syscalls and the copies, split in the P6 preset's proportions 2:2:14:9 (sendmsg:recvmsg:segment:ack)"),
        )
    };
    if !b.contains_key("tcp_corked_32x100") {
        return proportional();
    }
    let k = super::TCP_CORKED_WRITES as f64;
    let corked =
        e("tcp_corked_32x100") - syscall * (k + 1.0) - copy_per_kb * (2.0 * k * 100.0 / 1024.0);
    let a_corked = acks("tcp_corked_32x100_segments");
    // pair = 2 call + alpha seg, corked = (k + 1) call + beta seg, an ACK ack_per_seg of a
    // segment: solve for the call, then the segment.
    let (alpha, beta) = (1.0 + a_pair * ack_per_seg, 1.0 + a_corked * ack_per_seg);
    let call = (corked - pair * (beta / alpha)) * (1.0 / (k + 1.0 - 2.0 * beta / alpha));
    let seg = (pair - call * 2.0) * (1.0 / alpha);
    if call.v <= call.spread || seg.v <= seg.spread {
        let (v, how) = proportional();
        return (v, format!("{how}; the corked writes did not separate a call from a segment (call {:.0} +/- {:.0}, segment {:.0} +/- {:.0} ns)", call.v, call.spread, seg.v, seg.spread));
    }
    (
        [call, call, seg, seg * ack_per_seg],
        format!("100-byte write+read over a loopback TCP pair in one thread (TCP_NODELAY; {a_pair:.2} pure ACKs per round counted) and 32 writes held with MSG_MORE then read back ({a_corked:.2} pure ACKs), less syscalls and copies: a call and a segment solved apart (send = receive, an ACK 9/14 of a segment, the P6 preset's proportions)"),
    )
}

/// The task counts of the refill micro-benchmarks (`yield_threads_N`, `yield_procs_N`,
/// `ring_threads_N`): N tasks taking turns on one CPU switch each back in after N − 1
/// switches; 2 is the calibration's own case. 3 gives the curves a point at 2 switches,
/// the distance of two token sets sharing a CPU (reflex), which the point at 3 priced
/// otherwise: on this host a ring of 3 costs 0.5 µs a hop beyond 2, one of 4 1.3 µs.
pub(super) const REFILL_TASKS: [usize; 5] = [2, 3, 4, 16, 64];

/// The three refill benchmarks of N tasks: threads yielding, processes yielding, threads
/// round a ring of pipes.
pub(super) fn refill_names(n: usize) -> [String; 3] {
    [
        format!("yield_threads_{n}"),
        format!("yield_procs_{n}"),
        format!("ring_threads_{n}"),
    ]
}

/// The reuse-distance curves of a switched-in task (`task_refill_ns`, `mm_refill_ns`,
/// `wake_refill_ns`) from the refill benchmarks: at N tasks taking turns on one CPU each
/// is switched back in after N − 1 switches, and what N costs beyond 2 is what the
/// distance costs. Threads yielding give the running state; processes yielding, beyond
/// threads, the mm; threads woken round a ring, beyond threads yielding, the sleep's
/// state. Point values at `[N − 1, ns]`, from `[1, 0]` (a difference within its spread
/// takes half the spread, [`solve`]'s rule; never below 0).
fn refill_curves(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
) -> Option<[(schedlab::machine::preset::DepthCurve, String); 3]> {
    let [t2, p2, r2] = refill_names(2);
    let ns: Vec<usize> = REFILL_TASKS
        .iter()
        .copied()
        .filter(|&n| n > 2 && refill_names(n).iter().all(|k| b.contains_key(k)))
        .collect();
    if ns.is_empty() || ![&t2, &p2, &r2].iter().all(|k| b.contains_key(*k)) {
        return None;
    }
    let resolve = |x: Est| match x.resolved() {
        (v, true) => (v, ""),
        (v, false) => (v, " unresolved"),
    };
    let mut out: [(Vec<[u64; 2]>, Vec<String>); 3] = Default::default();
    for &n in &ns {
        let [t, p, r] = refill_names(n);
        let run = e(&t) - e(&t2);
        let parts = [run, (e(&p) - e(&p2)) - run, (e(&r) - e(&r2)) - run];
        for (k, x) in parts.into_iter().enumerate() {
            let (v, note) = resolve(x);
            out[k].0.push([n as u64 - 1, v.max(0.0).round() as u64]);
            out[k]
                .1
                .push(format!("{n} tasks: {:.0} +/- {:.0}{note}", x.v, x.spread));
        }
    }
    let what = [
        "threads yielding in turn on one CPU less 2 of them, per yield, at N - 1 switches",
        "processes yielding in turn on one CPU less 2, less as many threads, per yield",
        "threads round a ring of pipes on one CPU less 2, less as many threads yielding, per hop",
    ];
    let mut curves = out.into_iter().zip(what).map(|((mut pts, notes), what)| {
        pts.insert(0, [1, 0]);
        let c = schedlab::machine::preset::DepthCurve::try_from(pts).ok()?;
        Some((c, format!("{what} ({})", notes.join("; "))))
    });
    Some([curves.next()??, curves.next()??, curves.next()??])
}

/// The benchmarks of 80 socketpairs queued `k` deep, written across the sockets, alone
/// and beside another CPU's own queue.
pub(super) fn shared_names(k: usize) -> (String, String) {
    (
        format!("unix_shared_{k}"),
        format!("unix_shared_{k}_paired"),
    )
}

/// The allocator's shared state by depth (`Costs::skb_shared_ns`) from the
/// `unix_shared_K` queues timed beside another CPU's own and alone: each depth's
/// difference, twice (both loops free skbs at the same rate at independent moments, so
/// half the frees find the shared state last touched by the other CPU: a pull costs
/// twice the mean difference), then each band's from the means ([`bands`]), from depth 0.
fn shared_curve(
    b: &BTreeMap<String, f64>,
    e: &dyn Fn(&str) -> Est,
    truesize: u64,
) -> Option<(schedlab::machine::preset::DepthCurve, String)> {
    let mut ks: Vec<usize> = b
        .keys()
        .filter_map(|n| {
            n.strip_prefix("unix_shared_")?
                .strip_suffix("_paired")?
                .parse()
                .ok()
        })
        .collect();
    ks.sort_unstable();
    let means: Vec<(f64, Est)> = ks
        .iter()
        .filter_map(|&k| {
            let (alone, paired) = shared_names(k);
            b.contains_key(&alone).then(|| {
                (
                    (80 * k as u64 * truesize) as f64,
                    (e(&paired) - e(&alone)) * 2.0,
                )
            })
        })
        .collect();
    bands(means, 0.0).map(|(curve, notes)| {
        (
            curve,
            format!("100-byte AF_UNIX write+read over 80 socketpairs queued 1 deep to 4 x L2, written across the sockets, beside another CPU's own queue less alone, per skb, twice (half the frees follow the other CPU's); each band from the means ({notes})"),
        )
    })
}

/// A curve of bands from queues' mean costs: `(T, mean)` for queues `T` bytes deep,
/// depths increasing, above an origin of depth `origin` that costs nothing. A mean
/// within its spread takes half the spread ([`solve`]'s rule). In a queue `T` bytes deep
/// written and read in one order, the skbs' depths spread evenly over `[0, T)`, so its
/// mean is the curve's mean over that range: the band `(T_{j-1}, T_j]` costs
/// `(T_j m_j - T_{j-1} m_{j-1}) / (T_j - T_{j-1})` (never below 0). With the notes that
/// say so, per point. A positive origin is the curve's first point, at 0: a depth the
/// shallow queue already had costs what that queue cost, which the per-call costs hold
/// (without it the first band, often a mean within its spread, would price data the
/// L2 still holds, by half the noise of the measurement).
fn bands(
    means: Vec<(f64, Est)>,
    origin: f64,
) -> Option<(schedlab::machine::preset::DepthCurve, String)> {
    let (mut prev_t, mut prev_m) = (origin, 0.0);
    let (mut points, mut notes) = (Vec::new(), Vec::new());
    if origin >= 1.0 {
        points.push([origin as u64, 0]);
    }
    // The origin takes a point: a curve holds at most DepthCurve::MAX.
    let room = schedlab::machine::preset::DepthCurve::MAX - points.len();
    for (t, x) in means.into_iter().take(room) {
        if t <= prev_t {
            continue;
        }
        let (m, resolved) = if x.v > x.spread {
            (x.v, "")
        } else {
            (x.spread / 2.0, " unresolved")
        };
        let band = ((t * m - prev_t * prev_m) / (t - prev_t)).max(0.0);
        points.push([t as u64, band.round() as u64]);
        notes.push(format!(
            "{:.1} MB: mean {:.0} +/- {:.0}{resolved}, band {:.0}",
            t / 1048576.0,
            x.v,
            x.spread,
            band
        ));
        (prev_t, prev_m) = (t, m);
    }
    let curve = schedlab::machine::preset::DepthCurve::try_from(points).ok()?;
    (!notes.is_empty()).then(|| (curve, notes.join("; ")))
}

/// Solve the cost equations (module doc) from the medians and their spreads.
///
/// A cost solved as a difference is kept only when it exceeds the spread it inherits;
/// otherwise the measurement cannot tell it from anything in `[0, spread]`, and the
/// documented rule takes the middle of that interval, `spread / 2` (the source says so).
/// The rule keeps a cost that noise cannot resolve from jumping between 0 and the noise
/// from one measurement to the next.
pub(super) fn solve(
    b: &BTreeMap<String, f64>,
    spread: &BTreeMap<String, [f64; 2]>,
    g: Geometry,
) -> (schedlab::machine::Costs, BTreeMap<String, String>) {
    let mut c = piii700(g.l2);
    let mut src = BTreeMap::new();
    let rounds = b.get("rounds").copied().unwrap_or(0.0);
    let e = |name: &str| Est {
        v: b[name],
        spread: spread.get(name).map_or(0.0, |[q1, q3]| (q3 - q1) / 2.0),
    };
    let set = |src: &mut BTreeMap<String, String>, field: &str, x: Est, how: &str| -> u64 {
        let (value, resolved) = x.resolved();
        let note = if resolved {
            format!(
                "{how} ({:.0} ns, spread +/- {:.0}, medians of {rounds:.0} interleaved rounds)",
                x.v, x.spread
            )
        } else {
            format!(
                "{how} (the difference, {:.0} ns, is within its spread +/- {:.0}: not resolved, taken as half the spread)",
                x.v, x.spread
            )
        };
        src.insert(field.to_string(), format!("measured: {note}"));
        value.max(0.0).round() as u64
    };
    let syscall = e("getppid");
    c.syscall_ns = set(&mut src, "syscall_ns", syscall, "getppid()");
    let pipe_call = (e("pipe_pair_1") - syscall * 2.0) * 0.5;
    c.pipe_call_ns = set(
        &mut src,
        "pipe_call_ns",
        pipe_call,
        "1-byte pipe write+read in one thread, less two syscalls, per call",
    );
    let copy_per_kb = (e("pipe_pair_65536") - e("pipe_pair_1")) * (1.0 / 128.0);
    c.copy_ns_per_kb = set(&mut src, "copy_ns_per_kb", copy_per_kb, "64 KB pipe write+read in one thread less the 1-byte pair, per KB copied (buffers beyond L1, pipe pages allocated and freed)");
    let unix = (e("unix_pair_100") - syscall * 2.0 - copy_per_kb * (200.0 / 1024.0)) * 0.5;
    c.unix_call_ns = set(
        &mut src,
        "unix_call_ns",
        unix,
        "100-byte AF_UNIX write+read, less syscalls and copies, per call",
    );
    let schedule = e("yield_alone") - syscall;
    c.schedule_ns = set(
        &mut src,
        "schedule_ns",
        schedule,
        "sched_yield() alone on a CPU, less a syscall",
    );
    let switch = e("yield_two_threads") - e("yield_alone");
    c.switch_ns = set(
        &mut src,
        "switch_ns",
        switch,
        "two threads yielding on one CPU, less one alone",
    );
    let wakeup = e("hop_same_thread") - syscall * 2.0 - pipe_call * 2.0 - schedule - switch;
    c.wakeup_ns = set(
        &mut src,
        "wakeup_ns",
        wakeup,
        "thread ping-pong on one CPU per hop, less 2 syscalls, 2 pipe calls, schedule and switch",
    );
    c.switch_mm_ns = set(
        &mut src,
        "switch_mm_ns",
        e("hop_same_process") - e("hop_same_thread"),
        "process ping-pong on one CPU less the thread one, per hop",
    );
    let local_write = syscall + pipe_call + wakeup;
    let ipi_send = e("write_waking_remote") - local_write;
    c.ipi_send_ns = set(&mut src, "ipi_send_ns", ipi_send, "a 1-byte write() waking a reader asleep on another CPU, less syscall, pipe call and wake-up");
    let deep = format!(
        "unix_queue_80x{}",
        b.get("unix_queue_deep").copied().unwrap_or(0.0)
    );
    if b.contains_key("unix_queue_80x1") && b.contains_key(&deep) {
        c.skb_cold_ns = Some(set(&mut src, "skb_cold_ns", e(&deep) - e("unix_queue_80x1"), "100-byte AF_UNIX write+read over 80 socketpairs queued 4 x L2 deep, less queued 1 deep, per skb"));
    }
    if b.contains_key("unix_queue_80x1") {
        if let Some((curve, note)) = depth_curve(b, &e, skb_truesize(g.sndbuf, g.msgs)) {
            c.skb_depth_ns = curve;
            src.insert("skb_depth_ns".into(), format!("measured: {note}"));
        }
    }
    if b.contains_key("unix_queue_deep_paired") && b.contains_key(&deep) {
        // Both loops free cold skbs at the same rate at independent moments, so half the
        // frees find the allocator's shared state last touched by the other CPU: the
        // price of one such pull is twice the per-skb difference.
        c.skb_page_shared_ns = Some(set(&mut src, "skb_page_shared_ns", (e("unix_queue_deep_paired") - e(&deep)) * 2.0, "the deep 80-socketpair AF_UNIX queue while another CPU runs its own, less alone, per skb, twice (half the paired loop's frees follow the other CPU's)"));
    }
    if let Some((curve, note)) = pipe_depth_curve(b, &e) {
        c.pipe_depth_ns = curve;
        src.insert("pipe_depth_ns".into(), format!("measured: {note}"));
    }
    if let Some([(run, rs), (mm, ms), (wake, ws)]) = refill_curves(b, &e) {
        c.task_refill_ns = run;
        c.mm_refill_ns = mm;
        c.wake_refill_ns = wake;
        src.insert("task_refill_ns".into(), format!("measured: {rs}"));
        src.insert("mm_refill_ns".into(), format!("measured: {ms}"));
        src.insert("wake_refill_ns".into(), format!("measured: {ws}"));
    }
    if let Some((curve, note)) = shared_curve(b, &e, skb_truesize(g.sndbuf, g.msgs)) {
        c.skb_shared_ns = curve;
        src.insert("skb_shared_ns".into(), format!("measured: {note}"));
    }
    if b.contains_key("unix_handoff_split") {
        c.skb_remote_ns = Some(set(&mut src, "skb_remote_ns", e("unix_handoff_split") - e("unix_handoff_same"), "100-byte AF_UNIX messages written 64 at a time on one CPU and read on another, less both on one CPU, per skb (its lines pulled, its slab object freed remotely)"));
    }
    if b.contains_key("tcp_pair_100") {
        let p6 = [
            c.tcp_sendmsg_ns,
            c.tcp_recvmsg_ns,
            c.tcp_segment_ns,
            c.tcp_ack_ns,
        ];
        let (v, how) = tcp_costs(b, &e, syscall, copy_per_kb, p6);
        for (field, x) in [
            "tcp_sendmsg_ns",
            "tcp_recvmsg_ns",
            "tcp_segment_ns",
            "tcp_ack_ns",
        ]
        .into_iter()
        .zip(v)
        {
            let ns = set(&mut src, field, x, &how);
            match field {
                "tcp_sendmsg_ns" => c.tcp_sendmsg_ns = ns,
                "tcp_recvmsg_ns" => c.tcp_recvmsg_ns = ns,
                "tcp_segment_ns" => c.tcp_segment_ns = ns,
                _ => c.tcp_ack_ns = ns,
            }
        }
    }
    if b.contains_key("udp_pair_100") {
        // A 100-byte send+receive over a connected UDP pair in one thread: 2 syscalls,
        // udp_sendmsg with the loopback path, udp_recvmsg, 200 bytes copied; the P6
        // preset's proportions split the sum.
        let p6 = [c.udp_sendmsg_ns, c.udp_recvmsg_ns];
        let path = (e("udp_pair_100") - syscall * 2.0 - copy_per_kb * (200.0 / 1024.0))
            * (1.0 / (p6[0] + p6[1]) as f64);
        let how = format!(
            "100-byte send+receive over a connected loopback UDP pair in one thread, less 2 syscalls and the copies, split in the P6 preset's proportions {}:{} (sendmsg:recvmsg)",
            p6[0], p6[1]
        );
        c.udp_sendmsg_ns = set(&mut src, "udp_sendmsg_ns", path * p6[0] as f64, &how);
        c.udp_recvmsg_ns = set(&mut src, "udp_recvmsg_ns", path * p6[1] as f64, &how);
    }
    c.fork_ns = set(
        &mut src,
        "fork_ns",
        e("fork_parent"),
        "fork() as the parent sees it",
    );
    c.wait_ns = set(
        &mut src,
        "wait_ns",
        e("waitpid_zombie"),
        "waitpid() of a zombie",
    );
    // A child's first steps (ret_from_fork, its first switch_mm, the copy-on-write faults
    // of what it touches first) are in fork+exit+wait too: solved apart, they leave exit.
    let first = b
        .contains_key("fork_child_first_byte")
        .then(|| e("fork_child_first_byte") - e("hop_same_process") * 2.0);
    if first.is_none() {
        src.insert(
            "fork_child_ns".into(),
            "0: not measured (a host file of an older schedlab); the child's first steps are inside exit_ns".into(),
        );
    }
    c.fork_child_ns = first.map_or(0, |x| {
        set(
            &mut src,
            "fork_child_ns",
            x,
            "a forked child's first byte back to its blocked parent on one CPU, less two process hops (the parent's read and switch, the child's write, read and switch)",
        )
    });
    let (exit, how) = match first {
        // The exit of a child that has run, as nearly every workload's children have:
        // it frees what its first steps copied on write, which an immediate `_exit`
        // (fork+exit+wait) never took.
        Some(_) if b.contains_key("fork_child_exit") => (
            e("fork_child_exit") - e("hop_same_process") - e("waitpid_zombie"),
            "a forked child that has run (its first byte written, blocked in a read) released by one byte, to its parent's waitpid() returning, less a process hop and waitpid() of a zombie: its exit and the parent's wake-up",
        ),
        Some(x) => (
            e("fork_exit_wait") - e("fork_parent") - e("waitpid_zombie") - x,
            "fork+exit+wait less fork, wait and the child's first steps (fork_child_ns): the child's exit and the parent's wake-up",
        ),
        None => (
            e("fork_exit_wait") - e("fork_parent") - e("waitpid_zombie"),
            "fork+exit+wait less fork and wait (the child's exit and the parent's wake-up)",
        ),
    };
    c.exit_ns = set(&mut src, "exit_ns", exit, how);
    if b.contains_key("fork_exec_wait") {
        // The exec'd program's exit differs from a forked copy's (a fresh, small mm):
        // the difference is folded into the exec.
        c.exec_ns = set(&mut src, "exec_ns", e("fork_exec_wait") - e("fork_exit_wait"), "fork + execv(/bin/true) + wait on one CPU, less fork+exit+wait: the new image, its loader's work, and its exit beyond a forked copy's");
    } else {
        src.insert(
            "exec_ns".into(),
            "not measured: the P6 preset's value (/bin/true could not be run here)".into(),
        );
    }
    c.clone_ns = set(
        &mut src,
        "clone_ns",
        e("thread_create"),
        "pthread_create() as the creator sees it",
    );
    let c2c = e("line_bounce");
    c.c2c_line_ns = set(
        &mut src,
        "c2c_line_ns",
        c2c,
        "an atomic counter bounced between two CPUs, per transfer",
    );
    c.idle_exit_ns = 0;
    match ipi_delivery(b, &e, ipi_send, c2c, c.irq_ns) {
        Some(delivery) => {
            c.ipi_latency_ns = set(&mut src, "ipi_latency_ns", delivery, "membarrier(PRIVATE_EXPEDITED) beside a thread spinning on the other CPU, less alone, less the send (ipi_send_ns), the handler (irq_ns) and two line transfers: an IPI's delivery to a running CPU");
            src.insert(
                "idle_exit_ns".into(),
                "fitted with the simulator after the rest (measure)".into(),
            );
        }
        None => {
            src.insert(
                "ipi_latency_ns".into(),
                "fitted with the simulator after the rest (measure)".into(),
            );
            src.insert("idle_exit_ns".into(), "0: no expedited membarrier here, so included in ipi_latency_ns (user space sees only their sum)".into());
        }
    }
    c.c2c_stream_line_ns = Some(set(
        &mut src,
        "c2c_stream_line_ns",
        e("stream_c2c_64kb_per_line"),
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
        e("chase_4x_l2"),
        "dependent loads over 4 x L2: an L2 miss as this machine serves it (from the LLC)",
    );
    // The streamed refills are 0-2 ns a line on current cores: kept in picoseconds too,
    // by the same rule (a difference within its spread takes half the spread).
    let ps = |x: Est| Some((x.resolved().0.max(0.0) * 1000.0).round() as u64);
    let l2_line = e("stream_half_l2_per_line") - e("stream_half_l1_per_line");
    c.l2_line_ns = set(
        &mut src,
        "l2_line_ns",
        l2_line,
        "streaming read of half the L2 (beyond the L1) less the same loop over half the L1, per line: what a pass over a working set loses to the refill, prefetchers running, beyond its own work",
    );
    c.l2_line_ps = ps(l2_line);
    src.insert(
        "l2_line_ps".into(),
        "l2_line_ns before rounding, in ps (working-set refills use it)".into(),
    );
    // Per KB of 64-byte lines: 16 loads.
    let per_kb = 1024.0 / g.line.max(1) as f64;
    c.l2_latency_ns_per_kb = Some(set(
        &mut src,
        "l2_latency_ns_per_kb",
        (e("chase_half_l2") - e("chase_l1")) * per_kb,
        "dependent loads over half the L2 less over half the L1, per KB of lines: a switched-in task's kernel footprint, reached pointer by pointer",
    ));
    let mem_line = e("stream_64mb_per_line") - e("stream_half_l1_per_line");
    c.mem_line_ns = set(
        &mut src,
        "mem_line_ns",
        mem_line,
        "streaming read of 64 MB less the same loop over half the L1, per line: the refill beyond the pass's own work",
    );
    c.mem_line_ps = ps(mem_line);
    src.insert(
        "mem_line_ps".into(),
        "mem_line_ns before rounding, in ps (working-set refills use it)".into(),
    );
    if let (Some((bytes, ways)), true) = (g.llc, b.contains_key("stream_llc_per_line")) {
        let llc_line = e("stream_llc_per_line") - e("stream_half_l1_per_line");
        c.llc_line_ps = ps(llc_line);
        src.insert(
            "llc_line_ps".into(),
            format!(
                "streaming read of four L2s (within the L3) less the same loop over half the L1, per line, in ps (measured {:.0}): a working set the L2 lost but the L3 kept",
                llc_line.resolved().0 * 1000.0
            ),
        );
        (c.llc_bytes, c.llc_ways) = (Some(bytes), Some(ways));
        for f in ["llc_bytes", "llc_ways"] {
            src.insert(
                f.into(),
                "sysfs: /sys/devices/system/cpu/cpu0/cache (the level 3)".into(),
            );
        }
    }
    c.sum_ns_per_kb = set(
        &mut src,
        "sum_ns_per_kb",
        e("sum_l1_per_kb"),
        "summing a 4 KB int array (lmbench sumit), per KB",
    );
    c.poll_fd_ns = set(
        &mut src,
        "poll_fd_ns",
        (e("poll_100") - e("poll_10")) * (1.0 / 90.0),
        "poll() of 100 pipes less 10, per fd",
    );
    c.poll_ns = set(
        &mut src,
        "poll_ns",
        e("poll_10") - (e("poll_100") - e("poll_10")) * (10.0 / 90.0) - syscall,
        "poll() of 10 pipes less the per-fd work and a syscall",
    );
    c.file_create_ns = set(
        &mut src,
        "file_create_ns",
        (e("pipe_create_close") - syscall * 3.0) * 0.5,
        "pipe()+2 close() less syscalls, per file",
    );
    let mhz = g.mhz;
    c.cpu_mhz = mhz;
    src.insert("cpu_mhz".into(), "procfs: /proc/cpuinfo cpu MHz".into());
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
        "udp_sendmsg_ns",
        "udp_recvmsg_ns",
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
            ("fork_exec_wait", 700_000.0),
            ("thread_create", 10_000.0),
            ("line_bounce", 80.0),
            ("stream_c2c_64kb_per_line", 4.0),
            ("chase_4x_l2", 20.0),
            ("stream_half_l2_per_line", 2.0),
            ("stream_half_l1_per_line", 1.0),
            ("chase_half_l2", 6.0),
            ("chase_l1", 1.5),
            ("stream_64mb_per_line", 9.0),
            ("sum_l1_per_kb", 30.0),
            ("poll_10", 1000.0),
            ("poll_100", 1900.0),
            ("pipe_create_close", 2300.0),
            ("unix_queue_80x1", 3000.0),
            ("unix_queue_80x27", 3800.0),
            ("unix_queue_deep", 27.0),
            ("unix_queue_deep_paired", 4000.0),
            ("unix_handoff_same", 700.0),
            ("unix_handoff_split", 1100.0),
            ("tcp_pair_100", 200.0 + 27.0 * 100.0 + 200.0 / 1024.0 * 50.0),
            ("tcp_pair_100_segments", 2.0),
            ("udp_pair_100", 200.0 + 1550.0 + 200.0 / 1024.0 * 50.0),
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
            llc: Some((16 << 20, 16)),
            sndbuf: 212_992,
            msgs: 278,
            pipe_bytes: 65_536,
            mhz: 3000,
        }
    }

    /// Corked writes separate a TCP call from a segment; the P6 proportions hold only
    /// within each.
    #[test]
    fn corked_tcp_writes_split_a_call_from_a_segment() {
        let mut b = bench();
        // A call 300 ns, a segment 1 400, an ACK 900: the pair is 2 calls, a segment
        // and its ACK; 32 corked writes are 33 calls and one segment, no ACK.
        b.insert(
            "tcp_pair_100".into(),
            2.0 * 300.0 + 1_400.0 + 900.0 + 200.0 + 200.0 / 1024.0 * 50.0,
        );
        b.insert(
            "tcp_corked_32x100".into(),
            33.0 * 300.0 + 1_400.0 + 33.0 * 100.0 + 6_400.0 / 1024.0 * 50.0,
        );
        b.insert("tcp_corked_32x100_segments".into(), 1.0);
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(
            (
                c.tcp_sendmsg_ns,
                c.tcp_recvmsg_ns,
                c.tcp_segment_ns,
                c.tcp_ack_ns
            ),
            (300, 300, 1_400, 900)
        );
        assert!(
            src["tcp_segment_ns"].contains("solved apart"),
            "{}",
            src["tcp_segment_ns"]
        );
        // Corked calls dearer than a whole write+read: not separated, said so.
        b.insert("tcp_corked_32x100".into(), 100_000.0);
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert!(
            src["tcp_segment_ns"].contains("did not separate"),
            "{}",
            src["tcp_segment_ns"]
        );
        // The pair alone, 2 900 ns of TCP, in the proportions 2:2:14:9 (ACKs 1 a round).
        assert_eq!((c.tcp_sendmsg_ns, c.tcp_segment_ns), (215, 1_504));
    }

    /// membarrier beside a spinner gives the IPI's delivery to a running CPU, and leaves
    /// the idle exit to the fit; without it the delivery is fitted with the idle exit in.
    #[test]
    fn an_ipi_to_a_running_cpu_is_solved_apart_from_waking_a_halted_one() {
        let mut b = bench();
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert!(src["ipi_latency_ns"].starts_with("fitted"));
        assert!(src["idle_exit_ns"].contains("no expedited membarrier"));
        assert_eq!(c.idle_exit_ns, 0);
        b.insert("membarrier_alone".into(), 300.0);
        b.insert("membarrier_beside_spinner".into(), 3_000.0);
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        // 3000 - 300 - the send (550) - irq_ns (the P6 value, 700) - 2 transfers of 80.
        assert_eq!(c.ipi_latency_ns, 1_290);
        assert!(src["ipi_latency_ns"].starts_with("measured: membarrier"));
        assert!(src["idle_exit_ns"].starts_with("fitted"));
        // A round trip no larger than its parts is not resolved: half its spread.
        b.insert("membarrier_beside_spinner".into(), 1_500.0);
        let spread =
            BTreeMap::from([("membarrier_beside_spinner".to_string(), [1_300.0, 1_700.0])]);
        let (c, src) = solve(&b, &spread, geometry());
        assert_eq!(c.ipi_latency_ns, 100);
        assert!(src["ipi_latency_ns"].contains("not resolved"));
    }

    /// Each cost is the module doc's equation over the medians.
    #[test]
    fn the_cost_equations_solve_in_order() {
        let (c, src) = solve(&bench(), &BTreeMap::new(), geometry());
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
        assert_eq!(c.exec_ns, 600_000); // 700 000 - 100 000
        assert_eq!(c.c2c_stream_line_ns, Some(4));
        assert_eq!(c.skb_cold_ns, Some(800));
        assert_eq!(c.skb_remote_ns, Some(400)); // 1100 - 700
        assert_eq!(c.skb_page_shared_ns, Some(400)); // (4000 - 3800) x 2
                                                     // Streaming refills beyond the loop's own work.
        assert_eq!((c.l2_line_ns, c.mem_line_ns), (1, 8));
        // Unrounded: 2 - 1 and 9 - 1.
        assert_eq!((c.l2_line_ps, c.mem_line_ps), (Some(1_000), Some(8_000)));
        // A footprint's lines reached one pointer at a time: 6 - 1.5, rounded.
        assert_eq!(c.l2_latency_ns_per_kb, Some(72)); // 16 x 4.5
                                                      // 2 syscalls + 200 bytes copied + 100 x (2 + 2 + 14 + 1 ACK x 9)
        assert_eq!(
            (
                c.tcp_sendmsg_ns,
                c.tcp_recvmsg_ns,
                c.tcp_segment_ns,
                c.tcp_ack_ns
            ),
            (200, 200, 1400, 900)
        );
        // 2 syscalls + 200 bytes copied + a tenth of the P6 table's 14 000 + 1 500.
        assert_eq!((c.udp_sendmsg_ns, c.udp_recvmsg_ns), (1400, 150));
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

    /// The depth curve's bands come from the queues' means: a queue `T` deep averages
    /// the curve over `[0, T)`, so a band is `(T_j m_j - T_j-1 m_j-1) / (T_j - T_j-1)`.
    #[test]
    fn the_depth_curve_is_solved_band_by_band_from_the_means() {
        let mut b = bench();
        let base = 80.0 * (212_992 / 278) as f64;
        // Means over the 1-deep queue's 3000: +100 at 1 MB, +300 at 2 MB, +1000 at 4 MB.
        for (j, (t, m)) in [(1 << 20, 100.0), (2 << 20, 300.0), (4 << 20, 1000.0)]
            .into_iter()
            .enumerate()
        {
            b.insert(format!("unix_depth_{j}"), 3000.0 + m);
            b.insert(format!("unix_depth_{j}_bytes"), t as f64);
        }
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        let mb = (1 << 20) as f64;
        let first = (mb * 100.0 / (mb - base)).round() as u64;
        assert_eq!(
            c.skb_depth_ns.points(),
            &[
                [base as u64, 0], // the 1-deep queue's depths cost what it cost
                [1 << 20, first],
                [2 << 20, 500],  // (2 x 300 - 1 x 100) / 1
                [4 << 20, 1700], // (4 x 1000 - 2 x 300) / 2
            ]
        );
        assert!(
            src["skb_depth_ns"].contains("band 1700"),
            "{}",
            src["skb_depth_ns"]
        );
        // A shallower-than-before mean never makes a band negative.
        b.insert("unix_depth_2".into(), 3000.0 + 100.0);
        let (c, _) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(c.skb_depth_ns.points()[3], [4 << 20, 0]);
        // Without the queues, no curve: the step (skb_cold_ns) applies.
        let (c, src) = solve(&bench(), &BTreeMap::new(), geometry());
        assert!(c.skb_depth_ns.is_empty() && !src.contains_key("skb_depth_ns"));
    }

    /// The pipe depth curve is solved as the skb one, over 8 pipes 200 deep (160 KB), and
    /// only with its shallow queue measured.
    #[test]
    fn the_pipe_depth_curve_is_solved_over_the_shallow_pipes() {
        let mut b = bench();
        for (j, (t, m)) in [(1 << 20, 50.0), (2 << 20, 100.0)].into_iter().enumerate() {
            b.insert(format!("pipe_depth_{j}"), 400.0 + m);
            b.insert(format!("pipe_depth_{j}_bytes"), t as f64);
        }
        let (c, _) = solve(&b, &BTreeMap::new(), geometry());
        assert!(c.pipe_depth_ns.is_empty(), "no shallow queue, no curve");
        b.insert("pipe_depth_base".into(), 400.0);
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        let (mb, base) = ((1 << 20) as f64, 160_000.0);
        let first = (mb * 50.0 / (mb - base)).round() as u64;
        assert_eq!(
            c.pipe_depth_ns.points(),
            &[[160_000, 0], [1 << 20, first], [2 << 20, 150]] // (2 x 100 - 1 x 50) / 1
        );
        assert!(src["pipe_depth_ns"].starts_with("measured: "));
        // Data the shallow pipes already held (64 KB, one ring) costs nothing more, even
        // when the first band is a mean within its spread.
        assert_eq!(c.pipe_depth_ns.band(64 << 10), 0);
        let mut spread = BTreeMap::new();
        spread.insert("pipe_depth_0".to_string(), [400.0, 520.0]);
        let (c, src) = solve(&b, &spread, geometry());
        assert!(
            src["pipe_depth_ns"].contains("unresolved"),
            "{}",
            src["pipe_depth_ns"]
        );
        assert_eq!(c.pipe_depth_ns.band(64 << 10), 0);
        assert!(c.pipe_depth_ns.band(1 << 20) > 0);
        // As many queues as a curve holds: the origin keeps its place, the deepest goes.
        let max = schedlab::machine::preset::DepthCurve::MAX;
        for j in 0..max {
            b.insert(format!("pipe_depth_{j}"), 400.0 + 10.0 * j as f64);
            b.insert(format!("pipe_depth_{j}_bytes"), ((j + 1) << 20) as f64);
        }
        let (c, _) = solve(&b, &BTreeMap::new(), geometry());
        let pts = c.pipe_depth_ns.points();
        assert_eq!((pts.len(), pts[0]), (max, [160_000, 0]));
        assert_eq!(pts[max - 1][0], ((max - 1) << 20) as u64);
    }

    /// The allocator's shared state by depth: each depth's paired-less-alone difference,
    /// twice, inverted band by band from depth 0; without the paired queues there is no
    /// curve.
    #[test]
    fn the_shared_allocator_curve_is_twice_each_depths_difference_in_bands() {
        let mut b = bench();
        let t = |k: u64| 80 * k * (212_992 / 278);
        for (k, alone, paired) in [
            (1, 3000.0, 3050.0),
            (4, 3000.0, 3200.0),
            (27, 3800.0, 4000.0),
        ] {
            b.insert(format!("unix_shared_{k}"), alone);
            b.insert(format!("unix_shared_{k}_paired"), paired);
        }
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(
            c.skb_shared_ns.points(),
            &[
                [t(1), 100],  // 2 x 50
                [t(4), 500],  // (4 x 400 - 1 x 100) / 3
                [t(27), 400], // a mean of 400 from 4 to 27 deep
            ]
        );
        assert!(
            src["skb_shared_ns"].contains("band 500"),
            "{}",
            src["skb_shared_ns"]
        );
        let (c, src) = solve(&bench(), &BTreeMap::new(), geometry());
        assert!(c.skb_shared_ns.is_empty() && !src.contains_key("skb_shared_ns"));
    }

    /// The refill curves: at N tasks each is switched back in after N - 1 switches;
    /// threads yielding beyond 2 give the running state, processes beyond threads the mm,
    /// a ring beyond yielding the sleep's state; a difference inside its spread is not
    /// solved; without the benchmarks there are no curves.
    #[test]
    fn the_refill_curves_are_each_kind_less_two_less_the_kind_below() {
        let mut b = bench();
        for (n, t, p, r) in [
            (2, 500.0, 600.0, 1000.0),
            (3, 520.0, 630.0, 1220.0),
            (4, 540.0, 680.0, 1440.0),
            (16, 600.0, 1000.0, 1500.0),
        ] {
            b.insert(format!("yield_threads_{n}"), t);
            b.insert(format!("yield_procs_{n}"), p);
            b.insert(format!("ring_threads_{n}"), r);
        }
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(
            c.task_refill_ns.points(),
            &[[1, 0], [2, 20], [3, 40], [15, 100]]
        );
        // procs 30, 80 and 400 beyond 2, less the threads' 20, 40 and 100.
        assert_eq!(
            c.mm_refill_ns.points(),
            &[[1, 0], [2, 10], [3, 40], [15, 300]]
        );
        // rings 220, 440 and 500 beyond 2, less 20, 40 and 100.
        assert_eq!(
            c.wake_refill_ns.points(),
            &[[1, 0], [2, 200], [3, 400], [15, 400]]
        );
        // A hop two switches on is priced at its own point, not at three's.
        assert_eq!(c.wake_refill_ns.band(2), 200);
        assert!(
            src["mm_refill_ns"].contains("16 tasks: 300"),
            "{}",
            src["mm_refill_ns"]
        );
        let mut spread = BTreeMap::new();
        spread.insert("yield_threads_4".to_string(), [400.0, 680.0]);
        let (c, src) = solve(&b, &spread, geometry());
        assert_eq!(
            c.task_refill_ns.points()[2],
            [3, 70],
            "within its spread: half of it"
        );
        assert!(src["task_refill_ns"].contains("unresolved"));
        let (c, _) = solve(&bench(), &BTreeMap::new(), geometry());
        assert!(c.task_refill_ns.is_empty() && c.mm_refill_ns.is_empty());
    }

    /// A child's first byte, less two process hops, is its first steps; they leave the
    /// exit figure, so fork + first steps + exit + wait still sum to fork+exit+wait.
    #[test]
    fn a_childs_first_steps_come_out_of_exit() {
        let mut b = bench();
        b.insert("fork_child_first_byte".into(), 26_200.0);
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(c.fork_child_ns, 20_000); // 26 200 - 2 x 3 100
        assert_eq!(c.exit_ns, 25_000); // 100 000 - 50 000 - 5 000 - 20 000
        assert_eq!(c.fork_ns + c.fork_child_ns + c.exit_ns + c.wait_ns, 100_000);
        assert!(src["exit_ns"].contains("fork_child_ns"));
        let (c, src) = solve(&bench(), &BTreeMap::new(), geometry());
        assert_eq!((c.fork_child_ns, c.exit_ns), (0, 45_000));
        assert!(src["fork_child_ns"].contains("not measured"));
    }

    /// With a run child's release-to-reaped timed, the exit is that less a hop and the
    /// wait: a child that has run exits dearer than fork+exit+wait's immediate `_exit`.
    #[test]
    fn a_run_childs_exit_is_its_release_to_reaped_less_a_hop_and_the_wait() {
        let mut b = bench();
        b.insert("fork_child_first_byte".into(), 26_200.0);
        b.insert("fork_child_exit".into(), 40_100.0);
        let (c, src) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(c.fork_child_ns, 20_000);
        assert_eq!(c.exit_ns, 32_000); // 40 100 - 3 100 - 5 000
        assert!(
            src["exit_ns"].contains("released by one byte"),
            "{}",
            src["exit_ns"]
        );
        // Without the child's first byte the release is not timed either: the old rule.
        b.remove("fork_child_first_byte");
        let (c, _) = solve(&b, &BTreeMap::new(), geometry());
        assert_eq!(c.exit_ns, 45_000);
    }

    /// A difference within the spread of its terms is not solved: the documented rule
    /// takes half the spread, and the source says so; one beyond it is kept.
    #[test]
    fn a_difference_within_its_spread_is_not_solved_and_said() {
        let mut b = bench();
        b.insert("hop_same_process".into(), 2900.0);
        let mut spread = BTreeMap::new();
        spread.insert("hop_same_process".to_string(), [2800.0, 3000.0]);
        spread.insert("hop_same_thread".to_string(), [2960.0, 3040.0]);
        let (c, src) = solve(&b, &spread, geometry());
        // -100 against a spread of 100 + 40: half of 140.
        assert_eq!(c.switch_mm_ns, 70);
        assert!(
            src["switch_mm_ns"].contains("not resolved, taken as half the spread"),
            "{}",
            src["switch_mm_ns"]
        );
        b.insert("hop_same_process".into(), 3300.0);
        let (c, src) = solve(&b, &spread, geometry());
        assert_eq!(c.switch_mm_ns, 300);
        assert!(
            src["switch_mm_ns"].contains("spread +/- 140"),
            "{}",
            src["switch_mm_ns"]
        );
    }
}
