//! Invariants of the fair classes, checked after every hook in debug builds and by the
//! property tests: each queue's tree, weights and `avg_vruntime` sums agree with its
//! entities; every runnable task is on exactly one queue; the weighted lag of a queue
//! sums to zero (modern.md §4.2).

use crate::kernel::task::TaskState;
use crate::machine::CpuId;

use super::entity::AvgVruntime;
use super::Fair;

impl Fair {
    /// The weighted lag of `cpu`'s queue, `Σ w·(V − v)` over the on-rq entities.
    pub fn weighted_lag_sum(&self, cpu: CpuId) -> i128 {
        let v = self.avg_vruntime(cpu) as i128;
        let rq = &self.rqs[cpu];
        let mut sum: i128 = rq
            .timeline
            .iter()
            .map(|(_, p)| {
                let se = &self.se[p as usize];
                se.load.weight as i128 * (v - se.vruntime as i128)
            })
            .sum();
        if let Some((w, cv)) = self.curr_wv(cpu) {
            sum += w as i128 * (v - cv as i128);
        }
        sum
    }

    pub(super) fn check_rq(
        &self,
        k: &crate::kernel::Kernel,
        c: CpuId,
        seen: &mut [Option<CpuId>],
    ) -> Result<(), String> {
        let name = self.name_str();
        let rq = &self.rqs[c];
        if !self.nr_newest.matches(c, &rq.nr_pub) {
            return Err(format!(
                "{name}: cpu {c}'s dense nr_running differs from its published one"
            ));
        }
        let mut n = 0u32;
        let mut w = 0u64;
        let mut avg = AvgVruntime::default();
        for (key, p) in rq.timeline.iter() {
            let se = &self.se[p as usize];
            if let Some(o) = seen[p as usize].replace(c) {
                return Err(format!("{name}: task {p} queued on cpu {o} and cpu {c}"));
            }
            if !se.on_rq || se.cpu != c || se.key != key {
                return Err(format!(
                    "{name}: task {p} in cpu {c}'s tree but on_rq {} cpu {} key {} vs {key}",
                    se.on_rq, se.cpu, se.key
                ));
            }
            if rq.curr == Some(p) {
                return Err(format!("{name}: curr {p} of cpu {c} is in the tree"));
            }
            n += 1;
            w += se.load.weight;
            avg.add(se.load.weight, se.vruntime, rq.min_vruntime);
        }
        if let Some(cp) = rq.curr {
            let se = &self.se[cp as usize];
            if se.on_rq {
                if let Some(o) = seen[cp as usize].replace(c) {
                    return Err(format!(
                        "{name}: curr {cp} of cpu {c} also queued on cpu {o}"
                    ));
                }
                if se.cpu != c {
                    return Err(format!(
                        "{name}: curr {cp} of cpu {c} accounted on cpu {}",
                        se.cpu
                    ));
                }
                n += 1;
                w += se.load.weight;
            }
        }
        if n != rq.nr_running || w != rq.load {
            return Err(format!(
                "{name}: cpu {c} nr_running {} load {} but {n} queued weighing {w}",
                rq.nr_running, rq.load
            ));
        }
        let est: u64 = rq
            .timeline
            .iter()
            .map(|(_, p)| p)
            .chain(rq.curr.filter(|&p| self.se[p as usize].on_rq))
            .filter(|&p| !self.se[p as usize].sched_delayed)
            .map(|p| self.se[p as usize].util_est)
            .sum();
        if est != rq.util_est {
            return Err(format!(
                "{name}: cpu {c} util_est {} but its tasks' sum {est}",
                rq.util_est
            ));
        }
        if self.eevdf() && avg != rq.avg_vruntime {
            return Err(format!(
                "{name}: cpu {c} avg_vruntime {:?} but recomputed {avg:?}",
                rq.avg_vruntime
            ));
        }
        if self.eevdf() {
            let lag = self.weighted_lag_sum(c);
            let l = rq.avg_vruntime.load as i128 + self.curr_wv(c).map_or(0, |(w, _)| w as i128);
            if lag > 0 || (l > 0 && lag <= -l) {
                return Err(format!(
                    "{name}: cpu {c} weighted lag {lag} not in (-{l}, 0]"
                ));
            }
        }
        for (_, p) in rq.timeline.iter() {
            let t = k.task(p);
            let se = &self.se[p as usize];
            if t.processor != c {
                return Err(format!(
                    "{name}: pid {} queued on cpu {c} has processor {}",
                    t.pid, t.processor
                ));
            }
            if t.state != TaskState::Running && t.on_cpu.is_none() && !se.sched_delayed {
                return Err(format!("{name}: queued pid {} is {:?}", t.pid, t.state));
            }
        }
        Ok(())
    }
}
