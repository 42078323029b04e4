//! PELT, per-entity load tracking (modern.md §5; pelt.c, fair.c: update_load_avg,
//! attach/detach_entity_load_avg, post_init_entity_util_avg).
//!
//! Time is cut into periods of 1024 "µs" (`now >> 10` of ns); a signal's sum decays by
//! `y` per period, `y^32 = 1/2`; averages are sums over `LOAD_AVG_MAX − 1024 +
//! period_contrib`. A task entity tracks (load = on_rq, runnable = on_rq and not delayed,
//! running = curr); a cfs_rq tracks (load = its weight W, runnable = its `h_nr_running`,
//! running = it has a curr). `util_est` (§5.5) keeps a task's utilisation at its last
//! sleeps, smoothed on the way down; a queue's is the sum over its queued tasks. Only the
//! balancer and wake-up placement read PELT; the per-CPU pick never does (§5.6).

/// `LOAD_AVG_PERIOD`.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// `LOAD_AVG_MAX` (integer-truncated `1024·Σ y^n`).
pub const LOAD_AVG_MAX: u64 = 47742;
/// `SCHED_CAPACITY_SHIFT`.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE`: one full CPU.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// `runnable_avg_yN_inv[n]` ≈ 2^32·y^n (sched-pelt.h).
const RUNNABLE_AVG_YN_INV: [u64; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// (E14) `decay_load(val, n)` = `val·y^n`.
pub fn decay_load(mut val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut local_n = n;
    if local_n >= LOAD_AVG_PERIOD {
        val >>= local_n / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD;
    }
    ((val as u128 * RUNNABLE_AVG_YN_INV[local_n as usize] as u128) >> 32) as u64
}

/// (E15) `__accumulate_pelt_segments(periods, d1, d3)`.
fn accumulate_pelt_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// `struct sched_avg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// Time of the last update, ns, on a period-µs boundary (0: never; attach pending).
    pub last_update_time: u64,
    /// Σ load input · contribution.
    pub load_sum: u64,
    /// Σ runnable input · contribution << 10.
    pub runnable_sum: u64,
    /// Σ running · contribution << 10.
    pub util_sum: u64,
    /// Part of the current period already accounted (0..1024).
    pub period_contrib: u64,
    /// `load_avg`.
    pub load_avg: u64,
    /// `runnable_avg`.
    pub runnable_avg: u64,
    /// `util_avg`.
    pub util_avg: u64,
}

impl SchedAvg {
    /// `get_pelt_divider`.
    pub fn divider(&self) -> u64 {
        LOAD_AVG_MAX - 1024 + self.period_contrib
    }

    /// `___update_load_sum`: account `now − last_update_time` at the given inputs.
    /// Returns true when a period boundary was crossed (the averages are then due).
    pub fn update_sum(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        if now < self.last_update_time {
            // A clock read behind the last update (another CPU's hook processed late):
            // the kernel resets here; the simulator keeps the newer time.
            return false;
        }
        let delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return false;
        }
        self.last_update_time += delta << 10;
        let (runnable, running) = if load == 0 {
            (0, false)
        } else {
            (runnable, running)
        };
        self.accumulate_sum(delta, load, runnable, running) != 0
    }

    fn accumulate_sum(&mut self, mut delta: u64, load: u64, runnable: u64, running: bool) -> u64 {
        let mut contrib = delta;
        delta += self.period_contrib;
        let periods = delta / 1024;
        if periods != 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            delta %= 1024;
            if load != 0 {
                contrib = accumulate_pelt_segments(periods, 1024 - self.period_contrib, delta);
            }
        }
        self.period_contrib = delta;
        if load != 0 {
            self.load_sum += load * contrib;
        }
        if runnable != 0 {
            self.runnable_sum += (runnable * contrib) << SCHED_CAPACITY_SHIFT;
        }
        if running {
            self.util_sum += contrib << SCHED_CAPACITY_SHIFT;
        }
        periods
    }

    /// (E16) `___update_load_avg(sa, load)`: `load` is the weight for an entity, 1 for a
    /// cfs_rq.
    pub fn update_avg(&mut self, load: u64) {
        let divider = self.divider();
        self.load_avg = load * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
    }

    /// `update_load_avg` of an entity: sum, then averages when a period ended (the
    /// return value: `cfs_se_util_change` is then due).
    pub fn update(
        &mut self,
        now: u64,
        weight: u64,
        on_rq: bool,
        runnable: bool,
        running: bool,
    ) -> bool {
        let crossed = self.update_sum(now, on_rq as u64, runnable as u64, running);
        if crossed {
            self.update_avg(weight);
        }
        crossed
    }

    /// `attach_entity_load_avg` + `enqueue_load_avg`: `se` joins this cfs_rq's sums,
    /// aligned to its period.
    ///
    /// An entity's `last_update_time` of 0 means "not attached" (the kernel's clock is
    /// never 0 by then; the simulator's is at boot): one attached at time 0 is stamped
    /// 1 ns, so that it is not attached a second time at its next update.
    pub fn attach(&mut self, se: &mut SchedAvg, weight: u64) {
        se.last_update_time = self.last_update_time.max(1);
        se.period_contrib = self.period_contrib;
        let divider = self.divider();
        se.util_sum = se.util_avg * divider;
        se.runnable_sum = se.runnable_avg * divider;
        se.load_sum = se.load_avg * divider;
        if weight < se.load_sum {
            se.load_sum /= weight.max(1);
        } else {
            se.load_sum = 1;
        }
        self.load_avg += se.load_avg;
        self.load_sum += weight * se.load_sum;
        self.util_avg += se.util_avg;
        self.util_sum += se.util_sum;
        self.runnable_avg += se.runnable_avg;
        self.runnable_sum += se.runnable_sum;
    }

    /// `detach_entity_load_avg` / the removed-load path: take `se`'s contribution out,
    /// clamped at zero, keeping the sums no smaller than the averages allow
    /// (`sub_positive`, the `PELT_MIN_DIVIDER` floor).
    pub fn detach(&mut self, se: &SchedAvg, weight: u64) {
        self.load_avg = self.load_avg.saturating_sub(se.load_avg);
        self.load_sum = self.load_sum.saturating_sub(weight * se.load_sum);
        self.util_avg = self.util_avg.saturating_sub(se.util_avg);
        self.util_sum = self.util_sum.saturating_sub(se.util_sum);
        self.runnable_avg = self.runnable_avg.saturating_sub(se.runnable_avg);
        self.runnable_sum = self.runnable_sum.saturating_sub(se.runnable_sum);
        let min_divider = LOAD_AVG_MAX - 1024;
        self.load_sum = self.load_sum.max(self.load_avg * min_divider);
        self.util_sum = self.util_sum.max(self.util_avg * min_divider);
        self.runnable_sum = self.runnable_sum.max(self.runnable_avg * min_divider);
    }
}

/// `init_entity_runnable_average`: a new task looks fully loaded.
pub fn init_entity_runnable_average(weight: u64) -> SchedAvg {
    SchedAvg {
        load_avg: weight,
        ..SchedAvg::default()
    }
}

/// `UTIL_EST_MARGIN` = 1024/100.
pub const UTIL_EST_MARGIN: u64 = SCHED_CAPACITY_SCALE / 100;

/// `util_est_update` (§5.5) of a task going to sleep: the new EWMA from `ewma`, the
/// task's `util_avg` and `runnable_avg` at dequeue. Weight 1/4 (`UTIL_EST_WEIGHT_SHIFT`
/// 2); only decreases are smoothed.
pub fn util_est_ewma(ewma: u64, dequeued: u64, runnable: u64) -> u64 {
    if ewma <= dequeued {
        return dequeued;
    }
    let diff = ewma - dequeued;
    if diff < UTIL_EST_MARGIN
        || dequeued + UTIL_EST_MARGIN < runnable
        || dequeued > SCHED_CAPACITY_SCALE
    {
        return ewma;
    }
    ((ewma << 2) - diff) >> 2
}

/// `post_init_entity_util_avg` (§5.4): a new task's utilisation from its CPU's.
pub fn post_init_entity_util_avg(se: &mut SchedAvg, cfs: &SchedAvg, weight: u64) {
    let cap = (SCHED_CAPACITY_SCALE as i64 - cfs.util_avg as i64) / 2;
    if cap > 0 {
        let cap = cap as u64;
        se.util_avg = if cfs.util_avg != 0 {
            (cfs.util_avg * weight / (cfs.load_avg + 1)).min(cap)
        } else {
            cap
        };
    }
    se.runnable_avg = se.util_avg;
}
