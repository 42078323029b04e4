//! An rt-app file, read as rt-app's json-c reader reads it (rtapp.md §1–§6): comments and
//! trailing commas accepted, key order kept, every repeated key its own event (workgen's
//! reading), unknown keys listed as ignored, wrong types refused in one line.

use std::collections::BTreeMap;

use jsonc_parser::ast::{Object, Value};
use jsonc_parser::{CollectOptions, ParseOptions};

/// A parsed file.
#[derive(Clone, Debug)]
pub struct RtApp {
    /// `global`.
    pub global: Global,
    /// The task objects, in file order.
    pub tasks: Vec<TaskDef>,
    /// Keys accepted without effect on scheduling, as `where: key` (rtapp.md §1, §3).
    pub ignored: Vec<String>,
}

/// The `global` keys that change a run.
#[derive(Clone, Debug)]
pub struct Global {
    /// `duration`, s; −1: until every thread ends.
    pub duration_s: i64,
    /// `cumulative_slack`.
    pub cumulative_slack: bool,
}

/// What a task or a phase sets when it starts (kept afterwards).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    /// `priority` under SCHED_OTHER: the nice value.
    pub nice: Option<i32>,
    /// `cpus`: the allowed CPUs.
    pub cpus: Option<Vec<usize>>,
}

/// A task object.
#[derive(Clone, Debug)]
pub struct TaskDef {
    /// Its name.
    pub name: String,
    /// `instance` (0: a template for `fork`).
    pub instance: u32,
    /// Task loops (−1: forever).
    pub loops: i64,
    /// `delay`, µs.
    pub delay_us: u64,
    /// Task-level attributes.
    pub attrs: Attrs,
    /// The phases (one, the task itself, when it has no `phases`).
    pub phases: Vec<PhaseDef>,
}

/// A phase object.
#[derive(Clone, Debug)]
pub struct PhaseDef {
    /// Its key.
    pub name: String,
    /// Phase loops (−1: forever).
    pub loops: i64,
    /// What the phase sets.
    pub attrs: Attrs,
    /// Its events in file order, with their keys.
    pub events: Vec<(String, Event)>,
}

/// An event (rtapp.md §6).
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `run`: µs of CPU work.
    Run(u64),
    /// `runtime`: µs of wall time spent running or runnable.
    Runtime(u64),
    /// `sleep`: µs, relative.
    Sleep(u64),
    /// `timer`: absolute periodic wake-up.
    Timer {
        /// The timer's name (shared unless it starts with `unique`).
        name: String,
        /// µs.
        period_us: u64,
        /// `mode: absolute` keeps the grid after a miss.
        absolute: bool,
    },
    /// `lock`.
    Lock(String),
    /// `unlock`.
    Unlock(String),
    /// `wait`.
    Wait {
        /// The condition.
        cond: String,
        /// The mutex held.
        mutex: String,
    },
    /// `signal`.
    Signal(String),
    /// `broad`.
    Broad(String),
    /// `sync`: signal, then wait.
    Sync {
        /// The condition.
        cond: String,
        /// The mutex held.
        mutex: String,
    },
    /// `suspend`: wait on the condition named after the thread's task.
    Suspend,
    /// `resume`: wake every suspended thread of the task named.
    Resume(String),
    /// `barrier`.
    Barrier(String),
    /// `sem_post`.
    SemPost(String),
    /// `sem_wait`.
    SemWait(String),
    /// `yield`.
    Yield,
    /// `fork` of the task named.
    Fork(String),
    /// `mem`, `iorun`, `memrun`: bytes written through memory.
    Mem(u64),
}

/// Event prefixes, longest first where one is a prefix of another (§6).
const PREFIXES: &[&str] = &[
    "runtime", "run", "memrun", "mem", "sem_post", "sem_wait", "unlock", "lock", "wait", "signal",
    "broad", "sync", "sleep", "timer", "suspend", "resume", "iorun", "yield", "barrier", "fork",
];

/// Task and phase keys that are properties (rtapp.md §4).
const TASK_KEYS: &[&str] = &["instance", "loop", "delay", "phases"];
const ATTR_KEYS: &[&str] = &["policy", "priority", "cpus"];
/// Properties accepted with no effect here (no deadline class, NUMA, uclamp or cgroups).
const IGNORED_ATTRS: &[&str] = &[
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "period",
    "deadline",
    "nodes_membind",
    "util_min",
    "util_max",
    "taskgroup",
];
const GLOBAL_IGNORED: &[&str] = &[
    "calibration",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "pi_enabled",
];

/// The event prefix `key` starts with, if any.
pub fn event_prefix(key: &str) -> Option<&'static str> {
    PREFIXES.iter().copied().find(|p| key.starts_with(p))
}

/// Read `text`; `cpus` is the number of CPUs online (a `cpus` entry must name one).
pub fn parse(text: &str, cpus: usize) -> Result<RtApp, String> {
    let opts = ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let ast = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &opts)
        .map_err(|e| format!("not JSON, even as rt-app reads it: {e}"))?;
    let Some(Value::Object(top)) = ast.value else {
        return Err("the file is not a JSON object".into());
    };
    let mut ignored = Vec::new();
    let mut global = Global {
        duration_s: -1,
        cumulative_slack: false,
    };
    let mut tasks_obj = None;
    for p in &top.properties {
        match p.name.as_str() {
            "global" => global = parse_global(&p.value, &mut ignored)?,
            "tasks" => tasks_obj = Some(&p.value),
            "resources" => ignored.push("resources".to_string()),
            k => ignored.push(k.to_string()),
        }
    }
    let Some(Value::Object(tasks_obj)) = tasks_obj else {
        return Err("no \"tasks\" object (rt-app needs one)".into());
    };
    let mut tasks = Vec::new();
    for p in &tasks_obj.properties {
        let name = p.name.as_str().to_string();
        let Value::Object(o) = &p.value else {
            return Err(format!("task \"{name}\" is not an object"));
        };
        tasks.push(parse_task(&name, o, cpus, &mut ignored)?);
    }
    if tasks.is_empty() {
        return Err("\"tasks\" is empty".into());
    }
    let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
    for t in &tasks {
        for ph in &t.phases {
            for (k, e) in &ph.events {
                // A `resume` names a condition, created on first use; a `fork` needs its task.
                if let Event::Fork(target) = e {
                    if !names.contains(&target.as_str()) {
                        return Err(format!(
                            "task \"{}\": event \"{k}\" names task \"{target}\", which the file does not define",
                            t.name
                        ));
                    }
                }
            }
        }
    }
    Ok(RtApp {
        global,
        tasks,
        ignored,
    })
}

fn parse_global(v: &Value<'_>, ignored: &mut Vec<String>) -> Result<Global, String> {
    let Value::Object(o) = v else {
        return Err("\"global\" is not an object".into());
    };
    let mut g = Global {
        duration_s: -1,
        cumulative_slack: false,
    };
    for p in &o.properties {
        let k = p.name.as_str();
        match k {
            "duration" => g.duration_s = int(&p.value, "global: duration")?,
            "cumulative_slack" => {
                g.cumulative_slack = boolean(&p.value, "global: cumulative_slack")?
            }
            "default_policy" => {
                let s = string(&p.value, "global: default_policy")?;
                policy(&s, "global: default_policy")?;
            }
            k if GLOBAL_IGNORED.contains(&k) => ignored.push(format!("global: {k}")),
            k => ignored.push(format!("global: {k}")),
        }
    }
    Ok(g)
}

/// Check a policy name: SCHED_OTHER is modelled; the others are refused by name.
fn policy(s: &str, at: &str) -> Result<(), String> {
    match s {
        "SCHED_OTHER" => Ok(()),
        "SCHED_BATCH" | "SCHED_IDLE" | "SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE" => Err(format!(
            "{at}: {s} is not modelled: the simulated kernel schedules SCHED_OTHER tasks only (sched_setscheduler is not modelled)"
        )),
        _ => Err(format!(
            "{at}: unknown policy \"{s}\" (accepted: SCHED_OTHER; SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE are refused)"
        )),
    }
}

fn parse_task(
    name: &str,
    o: &Object<'_>,
    cpus: usize,
    ignored: &mut Vec<String>,
) -> Result<TaskDef, String> {
    let at = format!("task \"{name}\"");
    let mut instance = 1u32;
    let mut task_loop: Option<i64> = None;
    let mut delay_us = 0u64;
    let mut phases_obj = None;
    for p in &o.properties {
        let k = p.name.as_str();
        match k {
            "instance" => {
                let n = int(&p.value, &format!("{at}: instance"))?;
                instance = u32::try_from(n)
                    .map_err(|_| format!("{at}: instance {n} is not in 0..=4294967295"))?;
            }
            "loop" => task_loop = Some(int(&p.value, &format!("{at}: loop"))?),
            "delay" => delay_us = uint(&p.value, &format!("{at}: delay"))?,
            "phases" => phases_obj = Some(&p.value),
            _ => {}
        }
    }
    let attrs = parse_attrs(o, &at, cpus, ignored)?;
    let phases = match phases_obj {
        Some(Value::Object(po)) => {
            let mut v = Vec::new();
            for p in &po.properties {
                let pname = p.name.as_str();
                let Value::Object(ph) = &p.value else {
                    return Err(format!("{at}: phase \"{pname}\" is not an object"));
                };
                let pat = format!("{at}, phase \"{pname}\"");
                let loops = ph
                    .properties
                    .iter()
                    .find(|q| q.name.as_str() == "loop")
                    .map(|q| int(&q.value, &format!("{pat}: loop")))
                    .transpose()?
                    .unwrap_or(1);
                if loops == 0 {
                    return Err(format!(
                        "{pat}: loop 0 (rt-app would repeat it forever; use -1)"
                    ));
                }
                v.push(PhaseDef {
                    name: pname.to_string(),
                    loops,
                    attrs: parse_attrs(ph, &pat, cpus, ignored)?,
                    events: parse_events(ph, &pat, &["loop"], ignored)?,
                });
            }
            if v.is_empty() {
                return Err(format!("{at}: \"phases\" is empty"));
            }
            // Events written beside `phases` are not run by rt-app.
            for p in &o.properties {
                if event_prefix(p.name.as_str()).is_some() {
                    ignored.push(format!("{at}: {} (beside \"phases\")", p.name.as_str()));
                }
            }
            v
        }
        Some(_) => return Err(format!("{at}: \"phases\" is not an object")),
        None => {
            let events = parse_events(o, &at, TASK_KEYS, ignored)?;
            vec![PhaseDef {
                name: name.to_string(),
                // Without phases, the task's `loop` counts the single phase (§5).
                loops: task_loop.unwrap_or(-1),
                attrs: Attrs::default(),
                events,
            }]
        }
    };
    let loops = if phases_obj.is_some() {
        task_loop.unwrap_or(-1)
    } else if task_loop.is_some() {
        1
    } else {
        -1
    };
    Ok(TaskDef {
        name: name.to_string(),
        instance,
        loops,
        delay_us,
        attrs,
        phases,
    })
}

fn parse_attrs(
    o: &Object<'_>,
    at: &str,
    cpus: usize,
    ignored: &mut Vec<String>,
) -> Result<Attrs, String> {
    let mut a = Attrs::default();
    for p in &o.properties {
        let k = p.name.as_str();
        match k {
            "policy" => policy(
                &string(&p.value, &format!("{at}: policy"))?,
                &format!("{at}: policy"),
            )?,
            "priority" => {
                let n = int(&p.value, &format!("{at}: priority"))?;
                if !(-20..=19).contains(&n) {
                    return Err(format!(
                        "{at}: priority {n} is not a nice value in -20..=19 (SCHED_OTHER)"
                    ));
                }
                a.nice = Some(n as i32);
            }
            "cpus" => {
                let Value::Array(arr) = &p.value else {
                    return Err(format!("{at}: cpus is not an array of CPU numbers"));
                };
                let mut v = Vec::new();
                for e in &arr.elements {
                    let c = uint(e, &format!("{at}: cpus"))? as usize;
                    if c >= cpus {
                        return Err(format!(
                            "{at}: invalid cpu {c} in cpus (this machine has CPUs 0..={})",
                            cpus - 1
                        ));
                    }
                    v.push(c);
                }
                if v.is_empty() {
                    return Err(format!("{at}: cpus is empty"));
                }
                a.cpus = Some(v);
            }
            k if IGNORED_ATTRS.contains(&k) => ignored.push(format!("{at}: {k}")),
            _ => {}
        }
    }
    Ok(a)
}

fn parse_events(
    o: &Object<'_>,
    at: &str,
    props: &[&str],
    ignored: &mut Vec<String>,
) -> Result<Vec<(String, Event)>, String> {
    let mut v = Vec::new();
    for p in &o.properties {
        let k = p.name.as_str();
        if props.contains(&k) || ATTR_KEYS.contains(&k) || IGNORED_ATTRS.contains(&k) {
            continue;
        }
        let Some(prefix) = event_prefix(k) else {
            ignored.push(format!("{at}: {k}"));
            continue;
        };
        let what = format!("{at}: event \"{k}\"");
        let name = || string(&p.value, &what);
        let e = match prefix {
            "run" => Event::Run(uint(&p.value, &what)?),
            "runtime" => Event::Runtime(uint(&p.value, &what)?),
            "sleep" => Event::Sleep(uint(&p.value, &what)?),
            "mem" | "iorun" => Event::Mem(uint(&p.value, &what)?),
            "memrun" => {
                let Value::Object(m) = &p.value else {
                    return Err(format!(
                        "{what}: expected an object {{\"type\", \"count\", ...}}"
                    ));
                };
                let count = field(m, "count")
                    .map(|v| uint(v, &what))
                    .transpose()?
                    .unwrap_or(0);
                let stride = field(m, "stride")
                    .map(|v| uint(v, &what))
                    .transpose()?
                    .unwrap_or(1);
                let chase = field(m, "type")
                    .map(|v| string(v, &what))
                    .transpose()?
                    .is_some_and(|t| t == "chase");
                Event::Mem(if chase { count * stride } else { count })
            }
            "timer" => {
                let Value::Object(m) = &p.value else {
                    return Err(format!(
                        "{what}: expected an object {{\"ref\": name, \"period\": us}}"
                    ));
                };
                let name = field(m, "ref")
                    .map(|v| string(v, &what))
                    .transpose()?
                    .ok_or_else(|| format!("{what}: no \"ref\""))?;
                let period_us = field(m, "period")
                    .map(|v| uint(v, &what))
                    .transpose()?
                    .ok_or_else(|| format!("{what}: no \"period\""))?;
                let absolute = match field(m, "mode").map(|v| string(v, &what)).transpose()? {
                    None => false,
                    Some(s) if s == "relative" => false,
                    Some(s) if s == "absolute" => true,
                    Some(s) => {
                        return Err(format!(
                            "{what}: mode \"{s}\" (accepted: relative, absolute)"
                        ))
                    }
                };
                Event::Timer {
                    name,
                    period_us,
                    absolute,
                }
            }
            "lock" => Event::Lock(name()?),
            "unlock" => Event::Unlock(name()?),
            "signal" => Event::Signal(name()?),
            "broad" => Event::Broad(name()?),
            "wait" | "sync" => {
                let Value::Object(m) = &p.value else {
                    return Err(format!(
                        "{what}: expected an object {{\"ref\": cond, \"mutex\": mutex}} (rt-app: unknown or mismatch event type)"
                    ));
                };
                let cond = field(m, "ref")
                    .map(|v| string(v, &what))
                    .transpose()?
                    .ok_or_else(|| format!("{what}: no \"ref\""))?;
                let mutex = field(m, "mutex")
                    .map(|v| string(v, &what))
                    .transpose()?
                    .ok_or_else(|| format!("{what}: no \"mutex\""))?;
                if prefix == "wait" {
                    Event::Wait { cond, mutex }
                } else {
                    Event::Sync { cond, mutex }
                }
            }
            "suspend" => {
                string(&p.value, &what)?;
                Event::Suspend
            }
            "resume" => Event::Resume(name()?),
            "barrier" => Event::Barrier(name()?),
            "sem_post" => Event::SemPost(name()?),
            "sem_wait" => Event::SemWait(name()?),
            "yield" => {
                string(&p.value, &what)?;
                Event::Yield
            }
            "fork" => Event::Fork(name()?),
            _ => unreachable!("prefix {prefix}"),
        };
        v.push((k.to_string(), e));
    }
    Ok(v)
}

fn field<'a, 'b>(o: &'b Object<'a>, key: &str) -> Option<&'b Value<'a>> {
    o.properties
        .iter()
        .find(|p| p.name.as_str() == key)
        .map(|p| &p.value)
}

fn kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::StringLit(_) => "a string",
        Value::NumberLit(_) => "a number",
        Value::BooleanLit(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::NullKeyword(_) => "null",
    }
}

fn int(v: &Value<'_>, what: &str) -> Result<i64, String> {
    match v {
        Value::NumberLit(n) => n
            .value
            .parse::<i64>()
            .map_err(|_| format!("{what}: {} is not an integer", n.value)),
        other => Err(format!(
            "{what}: expected an integer, found {}",
            kind(other)
        )),
    }
}

fn uint(v: &Value<'_>, what: &str) -> Result<u64, String> {
    let n = int(v, what)?;
    u64::try_from(n).map_err(|_| format!("{what}: {n} is negative"))
}

fn boolean(v: &Value<'_>, what: &str) -> Result<bool, String> {
    match v {
        Value::BooleanLit(b) => Ok(b.value),
        other => Err(format!(
            "{what}: expected true or false, found {}",
            kind(other)
        )),
    }
}

fn string(v: &Value<'_>, what: &str) -> Result<String, String> {
    match v {
        Value::StringLit(s) => Ok(s.value.to_string()),
        other => Err(format!("{what}: expected a string, found {}", kind(other))),
    }
}

/// How many callers open each barrier: over every `barrier` event with that name, its
/// task's `instance` (rtapp.md §6).
pub fn barrier_parties(app: &RtApp) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for t in &app.tasks {
        for ph in &t.phases {
            for (_, e) in &ph.events {
                if let Event::Barrier(b) = e {
                    *m.entry(b.clone()).or_insert(0) += t.instance;
                }
            }
        }
    }
    m
}
