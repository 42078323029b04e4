//! `NAME[:key=value,...]` specifications and typed, validated parameters.
//!
//! Two layers, as in ripgrep: [`Spec::parse`] splits the raw text; [`resolve`] checks it
//! against a declared parameter list ([`ParamSpec`]) and yields [`Params`] whose getters
//! cannot fail. Every error is one line naming what is wrong and what is accepted.

use std::collections::BTreeMap;
use std::fmt;

/// A parsed `NAME:key=value,...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The name before the colon.
    pub name: String,
    /// The key/value pairs in the order given.
    pub args: Vec<(String, String)>,
}

/// What is wrong with a specification: one clear line naming what was given and what is
/// accepted. `what` names the kind of thing specified (`policy`, `workload`, `machine`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The text is not of the form `NAME[:key=value,...]`.
    #[error("{problem} in '{text}' (expected {expected})")]
    Malformed {
        /// What is wrong, e.g. "malformed workload option 'x'".
        problem: String,
        /// The whole text given.
        text: String,
        /// The form accepted.
        expected: &'static str,
    },
    /// No such policy, workload or machine.
    #[error("unknown {what} '{name}' (accepted: {}){}", accepted.join(", "), hint(name, accepted))]
    UnknownName {
        /// Kind of thing.
        what: String,
        /// The name given.
        name: String,
        /// The names accepted.
        accepted: Vec<String>,
    },
    /// An option the owner does not declare.
    #[error("unknown option '{key}' for {what} {owner} (accepted: {}){}", if accepted.is_empty() { "none".to_string() } else { accepted.join(", ") }, hint(key, accepted))]
    UnknownOption {
        /// Kind of owner.
        what: String,
        /// The owner's name.
        owner: String,
        /// The key given.
        key: String,
        /// The keys accepted.
        accepted: Vec<String>,
    },
    /// A value of the wrong type or out of range.
    #[error("bad value {key}={value} for {what} {owner}: expected {expected}")]
    BadValue {
        /// Kind of owner.
        what: String,
        /// The owner's name.
        owner: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is accepted, e.g. "an integer in 1..=100".
        expected: String,
    },
    /// Values each accepted but impossible together, or refused by the owner (a
    /// workload's parameter relation, a machine's CPU count).
    #[error("{0}")]
    Invalid(String),
}

fn hint(word: &str, accepted: &[String]) -> String {
    let names: Vec<&str> = accepted.iter().map(String::as_str).collect();
    closest(word, &names)
        .map(|c| format!("; did you mean '{c}'?"))
        .unwrap_or_default()
}

impl SpecError {
    /// An unknown `what` named `name`, with the accepted names.
    pub fn unknown(what: &str, name: &str, accepted: &[&str]) -> SpecError {
        SpecError::UnknownName {
            what: what.to_string(),
            name: name.to_string(),
            accepted: accepted.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Spec {
    /// Parse `NAME[:key=value,...]`.
    pub fn parse(what: &str, text: &str) -> Result<Spec, SpecError> {
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (text, None),
        };
        let name = name.trim();
        let malformed = |problem: String, expected| SpecError::Malformed {
            problem,
            text: text.to_string(),
            expected,
        };
        if name.is_empty() {
            return Err(malformed(
                format!("empty {what} name"),
                "NAME or NAME:key=value,...",
            ));
        }
        let mut args = Vec::new();
        if let Some(rest) = rest {
            for part in rest.split(',') {
                let part = part.trim();
                if part.is_empty() {
                    continue;
                }
                let Some((k, v)) = part.split_once('=') else {
                    return Err(malformed(
                        format!("malformed {what} option '{part}'"),
                        "key=value",
                    ));
                };
                let (k, v) = (k.trim(), v.trim());
                if k.is_empty() || v.is_empty() {
                    return Err(malformed(
                        format!("malformed {what} option '{part}'"),
                        "key=value",
                    ));
                }
                if args.iter().any(|(ek, _): &(String, String)| ek == k) {
                    return Err(malformed(
                        format!("{what} option '{k}' given twice"),
                        "each key once",
                    ));
                }
                args.push((k.to_string(), v.to_string()));
            }
        }
        Ok(Spec {
            name: name.to_string(),
            args,
        })
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.args.iter().enumerate() {
            f.write_str(if i == 0 { ":" } else { "," })?;
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// The type and range of a parameter.
#[allow(missing_docs)] // fields are named by their variant docs
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// An integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// A number in `min..=max`.
    Float { min: f64, max: f64 },
    /// `on|off` (also `true|false`, `1|0`, `yes|no`).
    Bool,
    /// One of the listed words.
    Choice(&'static [&'static str]),
}

/// A declared parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Key.
    pub name: &'static str,
    /// Default value as text; `"auto"` means "derived from other parameters" (the owner
    /// resolves it).
    pub default: &'static str,
    /// Type and range.
    pub kind: Kind,
    /// One line of help, with the unit and the source of the default.
    pub help: &'static str,
}

impl Kind {
    fn describe(&self) -> String {
        match self {
            Kind::Int { min, max } => format!("an integer in {min}..={max}"),
            Kind::Float { min, max } => format!("a number in {min}..={max}"),
            Kind::Bool => "on or off".to_string(),
            Kind::Choice(c) => format!("one of {}", c.join(", ")),
        }
    }

    fn check(&self, v: &str) -> Result<String, ()> {
        match self {
            Kind::Int { min, max } => match v.parse::<i64>() {
                Ok(n) if n >= *min && n <= *max => Ok(n.to_string()),
                _ => Err(()),
            },
            Kind::Float { min, max } => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= *min && x <= *max => Ok(v.to_string()),
                _ => Err(()),
            },
            Kind::Bool => match v {
                "on" | "true" | "1" | "yes" => Ok("on".into()),
                "off" | "false" | "0" | "no" => Ok("off".into()),
                _ => Err(()),
            },
            Kind::Choice(c) => c.iter().find(|&&x| x == v).map(|s| s.to_string()).ok_or(()),
        }
    }
}

/// Validated parameter values, defaults filled in.
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: BTreeMap<&'static str, String>,
    given: Vec<&'static str>,
}

impl Params {
    /// Integer parameter `key` (declared as `Int`).
    pub fn int(&self, key: &str) -> i64 {
        self.raw(key)
            .parse()
            .unwrap_or_else(|_| panic!("parameter {key} is not an integer"))
    }

    /// Unsigned integer parameter.
    pub fn uint(&self, key: &str) -> u64 {
        self.int(key).max(0) as u64
    }

    /// Float parameter.
    pub fn float(&self, key: &str) -> f64 {
        self.raw(key)
            .parse()
            .unwrap_or_else(|_| panic!("parameter {key} is not a number"))
    }

    /// Bool parameter.
    pub fn flag(&self, key: &str) -> bool {
        self.raw(key) == "on"
    }

    /// Raw text of `key`.
    pub fn raw(&self, key: &str) -> &str {
        self.values
            .get(key)
            .unwrap_or_else(|| panic!("undeclared parameter {key}"))
    }

    /// True when `key` still has the `auto` default.
    pub fn is_auto(&self, key: &str) -> bool {
        self.raw(key) == "auto"
    }

    /// True when the user gave `key` explicitly.
    pub fn given(&self, key: &str) -> bool {
        self.given.contains(&key)
    }

    /// Replace a value (used to resolve `auto`).
    pub fn set(&mut self, key: &'static str, value: String) {
        self.values.insert(key, value);
    }

    /// All values, for reports.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.values
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }
}

/// Check `spec` against `decl` (for error messages, `what` is e.g. "workload" and the
/// owner is `spec.name`).
pub fn resolve(what: &str, spec: &Spec, decl: &[ParamSpec]) -> Result<Params, SpecError> {
    let mut p = Params::default();
    for d in decl {
        p.values.insert(d.name, d.default.to_string());
    }
    for (k, v) in &spec.args {
        let Some(d) = decl.iter().find(|d| d.name == k) else {
            return Err(SpecError::UnknownOption {
                what: what.to_string(),
                owner: spec.name.clone(),
                key: k.clone(),
                accepted: decl.iter().map(|d| d.name.to_string()).collect(),
            });
        };
        let value = d.kind.check(v).map_err(|_| SpecError::BadValue {
            what: what.to_string(),
            owner: spec.name.clone(),
            key: k.clone(),
            value: v.clone(),
            expected: d.kind.describe(),
        })?;
        p.values.insert(d.name, value);
        p.given.push(d.name);
    }
    Ok(p)
}

/// The accepted name closest to `word`, if it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, accepted: &[&'a str]) -> Option<&'a str> {
    accepted
        .iter()
        .map(|a| (edit_distance(word, a), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Describe parameters for `schedlab list`.
pub fn describe(decl: &[ParamSpec]) -> String {
    decl.iter()
        .map(|d| {
            format!(
                "    {}={:<8} {} ({})",
                d.name,
                d.default,
                d.help,
                d.kind.describe()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECL: &[ParamSpec] = &[
        ParamSpec {
            name: "tasks",
            default: "2",
            kind: Kind::Int { min: 1, max: 100 },
            help: "tasks",
        },
        ParamSpec {
            name: "sync_wakeups",
            default: "off",
            kind: Kind::Bool,
            help: "sync",
        },
    ];

    #[test]
    fn parses_and_validates() {
        let s = Spec::parse("workload", "reflex:tasks=8,sync_wakeups=on").unwrap();
        let p = resolve("workload", &s, DECL).unwrap();
        assert_eq!(p.int("tasks"), 8);
        assert!(p.flag("sync_wakeups"));
        assert_eq!(s.to_string(), "reflex:tasks=8,sync_wakeups=on");
    }

    #[test]
    fn errors_name_the_problem_and_the_accepted() {
        let s = Spec::parse("workload", "lat_pipe:bogus=1").unwrap();
        let e = resolve("workload", &s, DECL).unwrap_err().to_string();
        assert!(
            e.contains("unknown option 'bogus'") && e.contains("accepted: tasks, sync_wakeups"),
            "{e}"
        );
        let s = Spec::parse("workload", "x:tasks=0").unwrap();
        let e = resolve("workload", &s, DECL).unwrap_err().to_string();
        assert!(e.contains("expected an integer in 1..=100"), "{e}");
        assert!(Spec::parse("workload", "x:tasks").is_err());
        assert!(Spec::parse("workload", ":a=1").is_err());
        assert!(Spec::parse("workload", "x:a=1,a=2").is_err());
        let s = Spec::parse("workload", "x:taks=3").unwrap();
        assert!(resolve("workload", &s, DECL)
            .unwrap_err()
            .to_string()
            .contains("did you mean 'tasks'"));
    }
}
