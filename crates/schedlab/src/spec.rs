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
        let whole = PATH_SPECS.iter().find(|(n, _)| *n == name);
        if let (Some(&(_, key)), Some(rest)) = (whole, rest) {
            let value = rest.strip_prefix(key).and_then(|r| r.strip_prefix('='));
            let value = value.unwrap_or(rest).trim();
            if value.is_empty() {
                let problem = format!("nothing after '{name}:' (its {key})");
                return Err(malformed(problem, "NAME:VALUE"));
            }
            return Ok(Spec {
                name: name.to_string(),
                args: vec![(key.to_string(), value.to_string())],
            });
        }
        if let Some(rest) = rest {
            for part in rest.split(',') {
                let part = part.trim();
                if part.is_empty() {
                    continue;
                }
                // A bare `@NAME` names a built-in (`scx:@fifo` is `scx:src=@fifo`).
                let at_key = AT_NAMES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k);
                if let Some(key) = at_key.filter(|_| part.starts_with('@')) {
                    args.push((key.to_string(), part.to_string()));
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
    /// Any non-empty text (a file path).
    Text,
}

/// Specs whose whole argument is one value, commas and `=` included, as (name, key):
/// `rtapp:FILE.json` is `rtapp:file=FILE.json`, and `mix:A+B` (workloads with options of
/// their own) is `mix:of=A+B`.
const PATH_SPECS: &[(&str, &str)] = &[("rtapp", "file"), ("mix", "of")];

/// Specs whose `@NAME` option names a built-in, as (name, key): `scx:@vtime,set=…` is
/// `scx:src=@vtime,set=…`.
const AT_NAMES: &[(&str, &str)] = &[("scx", "src")];

/// A declared parameter: name, type and accepted range, default, unit, and where the
/// default comes from. Declared once, with the const builders below (or the [`crate::options!`]
/// macro, which also generates the typed struct the owner reads it into).
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Key.
    pub name: &'static str,
    /// Default value as text; `"auto"` means "derived from other parameters" (the owner
    /// resolves it).
    pub default: &'static str,
    /// Type and range.
    pub kind: Kind,
    /// One line of help: what the parameter means.
    pub help: &'static str,
    /// Unit of the value (`""` for counts and switches).
    pub unit: &'static str,
    /// Where the default comes from (a spec section, a source, or "model choice").
    pub source: &'static str,
}

impl ParamSpec {
    const fn new(name: &'static str, default: &'static str, kind: Kind) -> ParamSpec {
        ParamSpec {
            name,
            default,
            kind,
            help: "",
            unit: "",
            source: "",
        }
    }

    /// An integer in `min..=max`.
    pub const fn int(name: &'static str, default: &'static str, min: i64, max: i64) -> ParamSpec {
        Self::new(name, default, Kind::Int { min, max })
    }

    /// A number in `min..=max`.
    pub const fn float(name: &'static str, default: &'static str, min: f64, max: f64) -> ParamSpec {
        Self::new(name, default, Kind::Float { min, max })
    }

    /// `on` or `off`.
    pub const fn flag(name: &'static str, default: &'static str) -> ParamSpec {
        Self::new(name, default, Kind::Bool)
    }

    /// A file path.
    pub const fn text(name: &'static str, default: &'static str) -> ParamSpec {
        Self::new(name, default, Kind::Text)
    }

    /// One of `choices`.
    pub const fn choice(
        name: &'static str,
        default: &'static str,
        choices: &'static [&'static str],
    ) -> ParamSpec {
        Self::new(name, default, Kind::Choice(choices))
    }

    /// The timer frequency of a policy's kernel: every policy's `hz`, declared once.
    pub const fn hz(name: &'static str, default: &'static str) -> ParamSpec {
        Self::int(name, default, 10, 10000)
            .unit("Hz")
            .help("timer ticks per second (the tick, jiffies and every period counted in ticks)")
    }

    /// Whether a policy honours `__wake_up_sync` (the waker is about to sleep): every
    /// policy's `sync_wakeups`, declared once; `help` says what honouring means there.
    pub const fn sync_wakeups(name: &'static str, default: &'static str) -> ParamSpec {
        Self::flag(name, default)
    }

    /// This parameter's value in `p` (validated against a declaration containing it).
    pub fn get<T: FromParam>(&self, p: &Params) -> T {
        T::from_param(self.name, p.raw(self.name))
    }

    /// With help text `help`.
    pub const fn help(self, help: &'static str) -> ParamSpec {
        ParamSpec { help, ..self }
    }

    /// With unit `unit`.
    pub const fn unit(self, unit: &'static str) -> ParamSpec {
        ParamSpec { unit, ..self }
    }

    /// With the source of its default.
    pub const fn source(self, source: &'static str) -> ParamSpec {
        ParamSpec { source, ..self }
    }
}

/// A value read from a validated parameter. Declarations guarantee the text parses, so a
/// failure is a bug in a declaration and panics naming it.
pub trait FromParam: Sized {
    /// The value of `key` from its validated text.
    fn from_param(key: &str, raw: &str) -> Self;
}

macro_rules! from_param_parse {
    ($($t:ty),*) => {$(
        impl FromParam for $t {
            fn from_param(key: &str, raw: &str) -> Self {
                raw.parse().unwrap_or_else(|_| {
                    panic!("parameter {key}={raw} is not a {}", stringify!($t))
                })
            }
        }
    )*};
}

from_param_parse!(i64, i32, u64, u32, usize, f64);

impl FromParam for bool {
    fn from_param(_key: &str, raw: &str) -> Self {
        raw == "on"
    }
}

impl FromParam for String {
    fn from_param(_key: &str, raw: &str) -> Self {
        raw.to_string()
    }
}

/// `None` for `auto` (the owner derives the value).
impl<T: FromParam> FromParam for Option<T> {
    fn from_param(key: &str, raw: &str) -> Self {
        (raw != "auto").then(|| T::from_param(key, raw))
    }
}

/// Declare an owner's options once: the typed struct it reads them into and the
/// [`ParamSpec`] list the parser checks and `list` prints, from the same tokens, so a
/// field cannot be missing from the declaration or read under another name.
///
/// ```
/// schedlab::options! {
///     /// Options of a policy.
///     pub struct Opts in PARAMS {
///         /// Timer frequency.
///         hz: u32 = hz("100").source("i386 2.4");
///         /// PROC_CHANGE_PENALTY.
///         pcp: i32 = int("15", 0, 1000).unit("goodness points").help("affinity bonus");
///     }
/// }
/// let spec = schedlab::spec::Spec::parse("policy", "x:pcp=20").unwrap();
/// let o = Opts::from_params(&schedlab::spec::resolve("policy", &spec, PARAMS).unwrap());
/// assert_eq!((o.hz, o.pcp), (100, 20));
/// ```
#[macro_export]
macro_rules! options {
    (
        $(#[$m:meta])* $vis:vis struct $name:ident in $decl:ident {
            $(
                $(#[$fm:meta])*
                $field:ident : $ty:ty = $ctor:ident ( $($a:expr),* $(,)? )
                    $( . $meth:ident ( $($ma:expr),* ) )* ;
            )*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Debug)]
        $vis struct $name {
            $(
                $(#[$fm])*
                #[doc = concat!("The `", stringify!($field), "` parameter (help, unit, range and source in the declaration).")]
                pub $field: $ty,
            )*
        }

        #[doc = concat!("The declaration of [`", stringify!($name), "`].")]
        $vis const $decl: &[$crate::spec::ParamSpec] = &[
            $( $crate::spec::ParamSpec::$ctor(stringify!($field), $($a),*) $( .$meth($($ma),*) )* , )*
        ];

        impl $name {
            /// The options from parameters validated against the declaration.
            pub fn from_params(p: &$crate::spec::Params) -> Self {
                $name {
                    $( $field: $crate::spec::FromParam::from_param(
                        stringify!($field),
                        p.raw(stringify!($field)),
                    ), )*
                }
            }
        }
    };
}

impl Kind {
    /// The accepted values, in words (`an integer in 1..=100`).
    pub fn describe(&self) -> String {
        match self {
            Kind::Int { min, max } => format!("an integer in {min}..={max}"),
            Kind::Float { min, max } => format!("a number in {min}..={max}"),
            Kind::Bool => "on or off".to_string(),
            Kind::Choice(c) => format!("one of {}", c.join(", ")),
            Kind::Text => "a file path".to_string(),
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
            Kind::Text if !v.is_empty() => Ok(v.to_string()),
            Kind::Text => Err(()),
        }
    }
}

/// Validated parameter values, defaults filled in.
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: BTreeMap<&'static str, String>,
}

impl Params {
    /// Raw text of `key`.
    pub fn raw(&self, key: &str) -> &str {
        self.values
            .get(key)
            .unwrap_or_else(|| panic!("undeclared parameter {key}"))
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

/// Describe parameters for `schedlab list`: per parameter `name=default`, its help, then
/// the accepted values with the unit and the source of the default.
pub fn describe(decl: &[ParamSpec]) -> String {
    decl.iter()
        .map(|d| {
            let mut accepted = d.kind.describe();
            if !d.unit.is_empty() {
                accepted += &format!(", in {}", d.unit);
            }
            if !d.source.is_empty() {
                accepted += &format!("; default from {}", d.source);
            }
            let head = format!("{}={}", d.name, d.default);
            format!("    {head:<26} {}\n    {:<26} ({accepted})", d.help, "")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECL: &[ParamSpec] = &[
        ParamSpec::int("tasks", "2", 1, 100).help("tasks"),
        ParamSpec::sync_wakeups("sync_wakeups", "off").help("sync"),
    ];

    #[test]
    fn parses_and_validates() {
        let s = Spec::parse("workload", "reflex:tasks=8,sync_wakeups=on").unwrap();
        let p = resolve("workload", &s, DECL).unwrap();
        assert_eq!(DECL[0].get::<u64>(&p), 8);
        assert!(DECL[1].get::<bool>(&p));
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
