//! A run: validate the configuration, boot the kernel with the workload's first program,
//! handle events until the workload is done. The report is built above this layer
//! ([`crate::report`]).

use std::time::Instant;

use crate::engine::Time;
use crate::kernel::sched::SchedClass;
use crate::kernel::task::TaskState;
use crate::kernel::{Acct, Kernel};
use crate::machine::Machine;
use crate::policy;
use crate::spec::Spec;
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

/// Why a run produced no result. [`SimError::is_input`] tells bad input from a run that
/// failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Bad input: unknown name, option or value, impossible parameters.
    #[error(transparent)]
    Input(#[from] crate::spec::SpecError),
    /// The machine cannot be booted as asked (CPU count out of range).
    #[error("{0}")]
    Machine(String),
    /// The workload could not run as the real kernel would have refused it (fork or file
    /// limits), or reported another error.
    #[error("workload failed: {0}")]
    Workload(String),
    /// The simulated time limit passed before the workload finished.
    #[error("the workload did not finish within {0} s of simulated time")]
    TimeLimit(u64),
    /// The caller's event budget ([`Simulation::set_event_limit`]) ran out first.
    #[error("the run was stopped after {0} events (its event budget)")]
    EventLimit(u64),
}

impl SimError {
    /// True for errors in what was asked (nothing was run).
    pub fn is_input(&self) -> bool {
        matches!(self, SimError::Input(_) | SimError::Machine(_))
    }
}

/// The whole simulated system.
pub struct Simulation {
    /// The kernel, with its scheduling class and the workload's programs.
    pub k: Kernel,
    workload: Box<dyn Workload>,
    workload_params: std::collections::BTreeMap<String, String>,
    config: RunConfig,
    policy_spec: Spec,
    workload_spec: Spec,
    wall: std::time::Duration,
    event_limit: Option<u64>,
}

impl Simulation {
    /// Stop [`Simulation::run`] with [`SimError::EventLimit`] after `events` events (for
    /// tests that only need a run to get going, whatever its length).
    pub fn set_event_limit(&mut self, events: u64) {
        self.event_limit = Some(events);
    }

    /// Validate the configuration and boot.
    pub fn new(config: RunConfig) -> Result<Simulation, SimError> {
        let machine = boot_machine(&config)?;
        let policy_spec = Spec::parse("policy", &config.policy).map_err(input)?;
        let class = policy::build(&policy_spec, &machine).map_err(input)?;
        Self::with_parts(config, machine, class, policy_spec)
    }

    /// Boot under a scheduling class built in code — a policy of one's own, written
    /// against [`crate::kernel::sched::SchedClass`] outside this crate's registry.
    /// `config.policy` is not used: the report names the class.
    pub fn with_class(
        config: RunConfig,
        class: Box<dyn SchedClass>,
    ) -> Result<Simulation, SimError> {
        let machine = boot_machine(&config)?;
        let policy_spec = Spec {
            name: class.name().to_string(),
            args: Vec::new(),
        };
        Self::with_parts(config, machine, class, policy_spec)
    }

    /// Boot on a machine built in code — a preset whose costs one has changed, to see
    /// how a result depends on them. `config.machine` and `config.cpus` are not used
    /// (the report names `machine`'s preset); `machine` must be `'static`, so a preset
    /// made at run time is leaked, once per distinct machine.
    pub fn on_machine(config: RunConfig, machine: Machine) -> Result<Simulation, SimError> {
        let policy_spec = Spec::parse("policy", &config.policy).map_err(input)?;
        let class = policy::build(&policy_spec, &machine).map_err(input)?;
        Self::with_parts(config, machine, class, policy_spec)
    }

    fn with_parts(
        config: RunConfig,
        mut machine: Machine,
        class: Box<dyn SchedClass>,
        policy_spec: Spec,
    ) -> Result<Simulation, SimError> {
        crate::kernel::release::boot_limits(&mut machine, class.release());
        let workload_spec = Spec::parse("workload", &config.workload).map_err(input)?;
        let (workload, params) = workload::build(&workload_spec, &machine).map_err(input)?;
        // A run the kernel would certainly refuse stops here, naming the limit.
        crate::kernel::limits::Limit::check(&machine, workload.needs())
            .map_err(|e| SimError::Workload(format!("{}: {e}", workload_spec)))?;
        let mut sim = Self::boot(machine, class, workload, config, policy_spec, workload_spec);
        sim.workload_params = params.to_map();
        Ok(sim)
    }

    /// Boot with a workload built in code (tests, experiments); `config.workload` is
    /// used only as the name in the report.
    pub fn with_workload(
        config: RunConfig,
        workload: Box<dyn Workload>,
    ) -> Result<Simulation, SimError> {
        let machine = boot_machine(&config)?;
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
        mut machine: Machine,
        class: Box<dyn SchedClass>,
        workload: Box<dyn Workload>,
        config: RunConfig,
        policy_spec: Spec,
        workload_spec: Spec,
    ) -> Simulation {
        crate::kernel::release::boot_limits(&mut machine, class.release());
        let k = Kernel::boot(machine, class, workload.root(), config.seed);
        Simulation {
            k,
            workload,
            workload_params: Default::default(),
            config,
            policy_spec,
            workload_spec,
            wall: std::time::Duration::ZERO,
            event_limit: None,
        }
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
            if self.k.stop_at.is_some_and(|s| t > s) && !self.zombie_on_cpu() {
                break;
            }
            if t > limit {
                return Err(SimError::TimeLimit(limit / crate::engine::SEC));
            }
            self.k.now = t;
            if let Some(tr) = self.k.trace.as_mut() {
                tr.advance(t);
            }
            self.k.handle(ev);
            if self.k.stopped {
                break;
            }
            let events = self.k.queue.popped();
            if self.event_limit.is_some_and(|n| events >= n) {
                return Err(SimError::EventLimit(events));
            }
            if events & ((1 << 20) - 1) == 0 {
                progress(t, events);
            }
            if check_every != 0 && events.is_multiple_of(check_every) {
                self.check()
                    .unwrap_or_else(|e| panic!("invariant broken at {t} ns: {e}"));
            }
        }
        if let Some(e) = &self.k.rec.error {
            // A call the kernel refused at a limit: name the limit, its value and the
            // option that raises it after the workload's own words.
            return Err(SimError::Workload(match self.k.limit_hit {
                Some(l) => format!("{e}: {}", l.describe(&self.k.machine)),
                None => e.clone(),
            }));
        }
        let end = self.k.stop_at.unwrap_or(self.k.now).max(self.k.now);
        for c in &mut self.k.cpus {
            if c.halted && c.clock < end {
                c.acct[Acct::Idle as usize] += end - c.clock;
                c.clock = end;
            }
        }
        self.k.now = end;
        self.wall = started.elapsed();
        self.check()
            .unwrap_or_else(|e| panic!("invariant broken at the end of the run: {e}"));
        Ok(())
    }

    fn zombie_on_cpu(&self) -> bool {
        self.k
            .cpus
            .iter()
            .any(|c| self.k.tasks[c.curr as usize].state == TaskState::Zombie)
    }

    /// Install a trace observer (before [`Simulation::run`]): the kernel reports every
    /// scheduling event to it ([`crate::trace`]). Without one, tracing costs nothing.
    pub fn set_trace(&mut self, mut sink: Box<dyn crate::trace::TraceSink>) {
        sink.attach(&self.k, &self.workload_spec.name);
        self.k.trace = Some(sink);
    }

    /// Close the trace observer after the run: outputs write what they hold. Returns
    /// what each output wrote (empty when no trace was installed).
    pub fn finish_trace(&mut self) -> std::io::Result<Vec<crate::trace::OutputSummary>> {
        match self.k.trace.take() {
            Some(mut t) => t.finish(self.k.now),
            None => Ok(Vec::new()),
        }
    }

    /// Why the scheduling class's own scheduler ended during the run, if it did
    /// (sched_ext's error exit).
    pub fn exit_reason(&self) -> Option<String> {
        self.k.class().exit_reason()
    }

    /// Kernel and policy invariants.
    pub fn check(&self) -> Result<(), String> {
        self.k.check_invariants()
    }

    /// The configuration this run was built from.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    pub(crate) fn specs(&self) -> (&Spec, &Spec) {
        (&self.policy_spec, &self.workload_spec)
    }

    pub(crate) fn policy(&self) -> &dyn SchedClass {
        self.k.class()
    }

    pub(crate) fn workload(&self) -> &dyn Workload {
        self.workload.as_ref()
    }

    pub(crate) fn workload_params(&self) -> std::collections::BTreeMap<String, String> {
        self.workload_params.clone()
    }

    /// Host wall-clock time the last [`Simulation::run`] took: not part of the result
    /// (equal runs must print equal bytes); `schedlab run --timing` shows it.
    pub fn wall(&self) -> std::time::Duration {
        self.wall
    }
}

fn input(e: crate::spec::SpecError) -> SimError {
    SimError::Input(e)
}

/// The machine `config` names, with the CPUs it boots.
fn boot_machine(config: &RunConfig) -> Result<Machine, SimError> {
    Machine::boot_spec(&config.machine, config.cpus).map_err(|e| match e {
        crate::spec::SpecError::Invalid(m) => SimError::Machine(m),
        e => SimError::Input(e),
    })
}
