//! A run: boot the machine, start the workload's first task, handle events until the
//! workload is done, and report.
//!
//! Boot order (determinism: everything below happens in this order, at time 0): idle
//! tasks 0..cpus; `policy.init`; `task_new` for each idle task; init (pid 1) running the
//! workload's root program, woken on CPU 0; one `Resume` per CPU in CPU order; the first
//! tick of CPU `c` at `tick + c·tick/cpus` (local APIC timers are not in phase, but all
//! see the same `jiffies`).

use std::time::Instant;

use crate::engine::{EventQueue, SimRng, Time};
use crate::kernel::frame::Frame;
use crate::kernel::task::{SchedPolicy, Task, TaskState, TaskStats};
use crate::kernel::{Acct, Cpu, Event, Kernel, KernelStats};
use crate::machine::{preset, CacheModel, Machine};
use crate::policy::{self, Policy, SchedCtx};
use crate::report::{self, RunReport};
use crate::spec::Spec;
use crate::workload::program::{Program, Record};
use crate::workload::{self, Workload};

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Machine preset name.
    pub machine: String,
    /// CPUs to boot (`None`: all).
    pub cpus: Option<usize>,
    /// Policy specification.
    pub policy: String,
    /// Workload specification.
    pub workload: String,
    /// Seed of the run's random source.
    pub seed: u64,
}

/// Why a run produced no result.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Bad input: unknown name, option or value.
    #[error("{0}")]
    Input(String),
    /// The workload could not run as the real kernel would have refused it (fork or file
    /// limits), or reported another error.
    #[error("{0}")]
    Workload(String),
    /// The simulated time limit passed before the workload finished.
    #[error("the workload did not finish within {0} s of simulated time")]
    TimeLimit(u64),
}

/// The whole simulated system.
pub struct Simulation {
    /// The kernel state.
    pub k: Kernel,
    pub(crate) policy: Box<dyn Policy>,
    pub(crate) programs: Vec<Option<Box<dyn Program>>>,
    /// What the workload recorded.
    pub rec: Record,
    workload: Box<dyn Workload>,
    workload_params: std::collections::BTreeMap<String, String>,
    pub(crate) stopped: bool,
    pub(crate) stop_at: Option<Time>,
    config: RunConfig,
    policy_spec: Spec,
    workload_spec: Spec,
    wall_ms: u64,
}

impl Simulation {
    /// Validate the configuration and boot.
    pub fn new(config: RunConfig) -> Result<Simulation, SimError> {
        let input = |e: crate::spec::SpecError| SimError::Input(e.0);
        let preset = preset::find(&config.machine).ok_or_else(|| {
            let names: Vec<&str> = preset::PRESETS.iter().map(|p| p.name).collect();
            let hint = crate::spec::closest(&config.machine, &names)
                .map(|c| format!("; did you mean '{c}'?"))
                .unwrap_or_default();
            SimError::Input(format!(
                "unknown machine '{}' (accepted: {}){hint}",
                config.machine,
                names.join(", ")
            ))
        })?;
        let machine = Machine::boot(preset, config.cpus).map_err(SimError::Input)?;
        let policy_spec = Spec::parse("policy", &config.policy).map_err(input)?;
        let workload_spec = Spec::parse("workload", &config.workload).map_err(input)?;
        let policy = policy::build(&policy_spec, &machine).map_err(input)?;
        let (workload, params) = workload::build(&workload_spec, &machine).map_err(input)?;
        let mut sim = Self::boot(
            machine,
            policy,
            workload,
            config,
            policy_spec,
            workload_spec,
        );
        sim.workload_params = params.to_map();
        Ok(sim)
    }

    /// Boot with a workload built in code (tests, experiments); `config.workload` is
    /// used only as the name in the report.
    pub fn with_workload(
        config: RunConfig,
        workload: Box<dyn Workload>,
    ) -> Result<Simulation, SimError> {
        let input = |e: crate::spec::SpecError| SimError::Input(e.0);
        let preset = preset::find(&config.machine)
            .ok_or_else(|| SimError::Input(format!("unknown machine '{}'", config.machine)))?;
        let machine = Machine::boot(preset, config.cpus).map_err(SimError::Input)?;
        let policy_spec = Spec::parse("policy", &config.policy).map_err(input)?;
        let workload_spec = Spec::parse("workload", &config.workload).map_err(input)?;
        let policy = policy::build(&policy_spec, &machine).map_err(input)?;
        Ok(Self::boot(
            machine,
            policy,
            workload,
            config,
            policy_spec,
            workload_spec,
        ))
    }

    fn boot(
        machine: Machine,
        policy: Box<dyn Policy>,
        workload: Box<dyn Workload>,
        config: RunConfig,
        policy_spec: Spec,
        workload_spec: Spec,
    ) -> Simulation {
        let n = machine.cpus;
        let costs = machine.costs();
        let hz = policy.hz();
        let tick_ns = Machine::tick_ns(hz);
        let k = Kernel {
            now: 0,
            hz,
            tick_ns,
            queue: EventQueue::new(),
            rng: SimRng::new(config.seed),
            tasks: Vec::new(),
            cpus: Vec::with_capacity(n),
            locks: Vec::new(),
            cache: CacheModel::new(n, costs.line_bytes, costs.l1_bytes, costs.l2_bytes),
            waitqs: Vec::new(),
            streams: Vec::new(),
            files: Vec::new(),
            open_files: 0,
            live_tasks: 0,
            next_pid: 1,
            next_mm: 1,
            stats: KernelStats::default(),
            machine,
        };
        let mut sim = Simulation {
            k,
            policy,
            programs: Vec::new(),
            rec: Record::default(),
            workload,
            workload_params: Default::default(),
            stopped: false,
            stop_at: None,
            config,
            policy_spec,
            workload_spec,
            wall_ms: 0,
        };
        for c in 0..n {
            let wq = sim.k.new_waitq();
            sim.k.tasks.push(Task {
                pid: 0,
                mm: 0,
                nice: 0,
                policy: SchedPolicy::Other,
                rt_priority: 0,
                cpus_allowed: 1 << c,
                processor: c,
                last_ran: Some(c),
                state: TaskState::Running,
                on_cpu: Some(c),
                need_resched: false,
                is_idle: true,
                parent: None,
                children: Vec::new(),
                zombies: Default::default(),
                wait_chldexit: wq,
                kstack: vec![Frame::Idle],
                ret: 0,
                wq_regs: Vec::new(),
                stats: TaskStats::default(),
                born_at: 0,
            });
            sim.programs.push(None);
            sim.k.cpus.push(Cpu {
                curr: c as u32,
                idle: c as u32,
                clock: 0,
                acct: [0; 4],
                halted: false,
                user: None,
                gen: 0,
                pending_ticks: 0,
                pending_ipi: false,
                last_schedule: 0,
                active_mm: 0,
                timers: Vec::new(),
                tick_phase: tick_ns * c as Time / n as Time,
                nr_switches: 0,
            });
        }
        let mut ctx = SchedCtx::new(&mut sim.k, 0, Acct::Sched);
        sim.policy.init(&mut ctx);
        for c in 0..n {
            sim.policy.task_new(&mut ctx, c as u32, None);
        }
        let root = sim.workload.root();
        let all = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        let init = sim.create_task(None, root, 1, 0, all, 0);
        sim.k.next_mm = 2;
        sim.k.tasks[init as usize].kstack.push(Frame::User);
        let mut ctx = SchedCtx::new(&mut sim.k, 0, Acct::Sched);
        sim.policy.task_new(&mut ctx, init, None);
        sim.policy.try_to_wake_up(&mut ctx, init, false);
        sim.k.tasks[init as usize].state = TaskState::Running;
        for c in 0..n {
            sim.k.queue.push(
                0,
                Event::Resume {
                    cpu: c as u16,
                    gen: 0,
                },
            );
        }
        for c in 0..n {
            let at = tick_ns + sim.k.cpus[c].tick_phase;
            sim.k.queue.push(at, Event::Tick { cpu: c as u16 });
        }
        sim
    }

    /// Run to completion. `progress` is called every 2^20 events with (simulated ns,
    /// events so far).
    pub fn run(&mut self, progress: &mut dyn FnMut(Time, u64)) -> Result<(), SimError> {
        let started = Instant::now();
        let limit = self.workload.limit_ns();
        let check_every: u64 = if cfg!(debug_assertions) { 1 << 12 } else { 0 };
        while let Some((t, ev)) = self.k.queue.pop() {
            // The run ends at the last exit, once every exited task has left its CPU (a
            // tick taken between exit() and its schedule() must not strand the zombie).
            if self.stop_at.is_some_and(|s| t > s) && !self.zombie_on_cpu() {
                break;
            }
            if t > limit {
                return Err(SimError::TimeLimit(limit / crate::engine::SEC));
            }
            self.k.now = t;
            self.handle(ev);
            if self.stopped {
                break;
            }
            let events = self.k.queue.popped();
            if events & ((1 << 20) - 1) == 0 {
                progress(t, events);
            }
            if check_every != 0 && events.is_multiple_of(check_every) {
                self.check()
                    .unwrap_or_else(|e| panic!("invariant broken at {t} ns: {e}"));
            }
        }
        if let Some(e) = &self.rec.error {
            return Err(SimError::Workload(e.clone()));
        }
        let end = self.stop_at.unwrap_or(self.k.now).max(self.k.now);
        for c in &mut self.k.cpus {
            if c.halted && c.clock < end {
                c.acct[Acct::Idle as usize] += end - c.clock;
                c.clock = end;
            }
        }
        self.k.now = end;
        self.wall_ms = started.elapsed().as_millis() as u64;
        self.check()
            .unwrap_or_else(|e| panic!("invariant broken at the end of the run: {e}"));
        Ok(())
    }

    fn zombie_on_cpu(&self) -> bool {
        self.k
            .cpus
            .iter()
            .any(|c| self.k.tasks[c.curr as usize].state == crate::kernel::task::TaskState::Zombie)
    }

    /// Kernel and policy invariants.
    pub fn check(&self) -> Result<(), String> {
        self.k.check_invariants()?;
        self.policy.check(&self.k)
    }

    /// The report of a finished run.
    pub fn report(&self) -> Result<RunReport, SimError> {
        let result = self
            .workload
            .result(&self.rec, &self.k)
            .map_err(SimError::Workload)?;
        Ok(report::build(self, result))
    }

    /// The configuration this run was built from.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    pub(crate) fn specs(&self) -> (&Spec, &Spec) {
        (&self.policy_spec, &self.workload_spec)
    }

    pub(crate) fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    pub(crate) fn workload_params(&self) -> std::collections::BTreeMap<String, String> {
        self.workload_params.clone()
    }

    pub(crate) fn wall_ms(&self) -> u64 {
        self.wall_ms
    }
}

/// Build, run and report in one call.
pub fn run(config: RunConfig) -> Result<RunReport, SimError> {
    let mut sim = Simulation::new(config)?;
    sim.run(&mut |_, _| {})?;
    sim.report()
}
