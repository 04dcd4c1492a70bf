//! The runtime half of the generated parsers: reading raw query strings, path segments and JSON bodies,
//! checking each value against its rule, and collecting every violation with a message that names
//! the parameter. The generated code (see `crate::api`) only calls these functions; the rules
//! themselves come from the catalogue.

pub mod parse;

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

pub use parse::{DateBound, IssueRef, RepoRef, SpanUnit};

/// The violation rules, generated from the generator's one list (`codegen::rules::RULES`), which
/// the OpenAPI schema of `error.violations` is emitted from too.
#[allow(clippy::all, clippy::pedantic)]
mod rule {
    include!(concat!(env!("OUT_DIR"), "/rule.rs"));
}
pub use rule::Rule;

/// Where a parameter was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Query,
    Path,
    Body,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub parameter: String,
    #[serde(rename = "in")]
    pub location: Location,
    /// The rule broken, serialised as its machine name (see [`Rule`]).
    pub rule: Rule,
    pub message: String,
}

/// Every broken rule of one request, in the order the parameters are documented.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Violations(pub Vec<Violation>);

impl Violations {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn absorb(&mut self, r: Result<(), Violations>) {
        if let Err(v) = r {
            self.0.extend(v.0);
        }
    }

    pub fn into_result(self) -> Result<(), Violations> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }

    /// The `error.message`: the one violation, or a count followed by each.
    pub fn summary(&self) -> String {
        match self.0.as_slice() {
            [] => "the request is invalid".into(),
            [one] => one.message.clone(),
            many => format!(
                "{} problems: {}",
                many.len(),
                many.iter()
                    .map(|v| v.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// A typed parser's verdict on a value that matched its grammar's pattern.
pub type ParserCheck = fn(&str) -> Result<(), String>;

/// A named value grammar of the catalogue. The regex is compiled on first use; the generator has
/// already compiled it with the same engine, so it cannot fail here.
pub struct Grammar {
    pub name: &'static str,
    pub description: &'static str,
    pub pattern: &'static str,
    pub max_length: u32,
    /// Examples from the catalogue, used by the tests.
    pub valid: &'static [&'static str],
    pub invalid: &'static [&'static str],
    pub invalid_by_parser: &'static [&'static str],
    /// The typed parser's verdict, for grammars that have one.
    pub parser_check: Option<ParserCheck>,
    regex: OnceLock<Regex>,
}

impl Grammar {
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        name: &'static str,
        description: &'static str,
        pattern: &'static str,
        max_length: u32,
        valid: &'static [&'static str],
        invalid: &'static [&'static str],
        invalid_by_parser: &'static [&'static str],
        parser_check: Option<ParserCheck>,
    ) -> Self {
        Grammar {
            name,
            description,
            pattern,
            max_length,
            valid,
            invalid,
            invalid_by_parser,
            parser_check,
            regex: OnceLock::new(),
        }
    }

    pub fn is_match(&self, value: &str) -> bool {
        self.regex
            .get_or_init(|| Regex::new(self.pattern).expect("pattern compiled at build time"))
            .is_match(value)
    }

    /// The full verdict on a value: length, pattern and typed parser.
    pub fn accepts(&self, value: &str) -> bool {
        let len = value.chars().count();
        len >= 1
            && len <= self.max_length as usize
            && self.is_match(value)
            && self.parser_check.is_none_or(|check| check(value).is_ok())
    }
}

impl fmt::Debug for Grammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grammar")
            .field("name", &self.name)
            .field("pattern", &self.pattern)
            .finish()
    }
}

/// A generated enum of allowed string values.
/// The longest text read as an integer: ample for any `i64` with leading zeros, and short enough
/// that a pasted blob is refused as too long before it is parsed.
const NUMBER_MAX_LENGTH: u32 = 32;

pub trait Choice: Copy + Sized + 'static {
    const VALUES: &'static [&'static str];
    fn from_index(i: usize) -> Self;
    fn as_str(self) -> &'static str;
}

/// What the endpoint table says about one parameter (used by tests, the server's error help and
/// anything else that needs the grammar at run time).
#[derive(Debug)]
pub struct ParamMeta {
    pub name: &'static str,
    pub required: bool,
    pub kind: ParamKind,
    pub default: Option<&'static str>,
    pub example: &'static str,
    pub min_length: u32,
    pub max_length: u32,
}

#[derive(Debug)]
pub enum ParamKind {
    Text(Option<&'static Grammar>),
    Integer { min: i64, max: i64 },
    Boolean,
    Choice(&'static [&'static str]),
}

/// One platform endpoint of the catalogue.
#[derive(Debug)]
pub struct EndpointMeta {
    pub path: &'static str,
    pub platform: &'static str,
    pub credits: u32,
    pub summary: &'static str,
    /// A working request, shown in `error.fix`.
    pub example: &'static str,
    pub params: &'static [ParamMeta],
    pub one_of: &'static [&'static [&'static str]],
    /// Cross-parameter rules: when any of `when` is given, each of `then` must hold.
    pub requires: &'static [RuleMeta],
    /// Groups of parameters of which at most one may be given.
    pub exclusive: &'static [&'static [&'static str]],
}

/// One cross-parameter rule of the catalogue (`requires` of an endpoint).
#[derive(Debug)]
pub struct RuleMeta {
    pub when: &'static [&'static str],
    pub then: &'static [(&'static str, Needed)],
}

/// What a rule needs of the other parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// It is given.
    Present,
    /// Its value (given, or else its default) is one of these.
    OneOf(&'static [&'static str]),
}

enum Raw<'a> {
    Text(Cow<'a, str>),
    /// A JSON number or boolean of a body, as text, with the name of its JSON type: an integer or
    /// boolean field reads it, a text field refuses it.
    Json(Cow<'a, str>, &'static str),
    /// A JSON body value that is not a string; the name of its JSON type.
    Other(&'static str),
}

/// Reads the parameters of one request and collects violations. Every `read` returns `None` when
/// the value is absent or broke a rule (the violation is recorded), so the generated code can read
/// all parameters before `finish` decides.
pub struct Params<'a> {
    location: Location,
    values: Vec<(Cow<'a, str>, Raw<'a>)>,
    violations: Violations,
}

const ECHO_MAX: usize = 64;

/// A value quoted back in a message, shortened so a huge value cannot flood the response.
fn echo(v: &str) -> String {
    let mut out: String = v.chars().take(ECHO_MAX).collect();
    if v.chars().count() > ECHO_MAX {
        out.push('…');
    }
    out
}

fn closest<'n>(name: &str, accepted: &[&'n str]) -> Option<&'n str> {
    accepted
        .iter()
        .map(|a| (edit_distance(&name.to_ascii_lowercase(), a), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Decodes one `application/x-www-form-urlencoded` component: `+` is a space, `%XX` a byte.
/// Stricter than the form rules, which pass a malformed escape through and replace bytes that
/// are not UTF-8: either makes the value unreadable (`None`), so the client hears of it.
fn decode_component(s: &str) -> Option<Cow<'_, str>> {
    // An escape is `%` and exactly two hex digits.
    let well_formed = s.split('%').skip(1).all(|rest| {
        rest.as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return None;
    }
    if !s.contains('+') {
        return percent_encoding::percent_decode_str(s).decode_utf8().ok();
    }
    // `+` is replaced before decoding, so an escaped plus (`%2B`) stays a plus.
    let spaced = s.replace('+', " ");
    let decoded = percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .ok()?;
    Some(Cow::Owned(decoded.into_owned()))
}

impl<'a> Params<'a> {
    fn new(location: Location) -> Self {
        Params {
            location,
            values: Vec::new(),
            violations: Violations::default(),
        }
    }

    fn violate(&mut self, parameter: &str, rule: Rule, message: String) {
        self.violations.0.push(Violation {
            parameter: parameter.to_string(),
            location: self.location,
            rule,
            message,
        });
    }

    fn noun(&self) -> &'static str {
        match self.location {
            Location::Body => "field",
            Location::Query | Location::Path => "parameter",
        }
    }

    /// Records a name/value pair, reporting unknown and repeated names.
    fn add(&mut self, name: Cow<'a, str>, value: Raw<'a>, accepted: &[&'static str]) {
        if !accepted.contains(&name.as_ref()) {
            let noun = self.noun();
            let hint = closest(&name, accepted)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            let list = if accepted.is_empty() {
                format!("this operation takes no {noun}s here")
            } else {
                format!("accepted {noun}s: {}", accepted.join(", "))
            };
            let shown = echo(&name);
            self.violate(
                &shown,
                Rule::UnknownParameter,
                format!("unknown {noun} `{shown}`{hint}; {list}"),
            );
            return;
        }
        if self.values.iter().any(|(n, _)| *n == name) {
            if !self
                .violations
                .0
                .iter()
                .any(|v| v.rule == Rule::Repeated && v.parameter == name)
            {
                let noun = self.noun();
                self.violate(
                    &name,
                    Rule::Repeated,
                    format!("`{name}` is given more than once; give each {noun} once"),
                );
            }
            return;
        }
        self.values.push((name, value));
    }

    /// A raw query string (without the `?`).
    pub fn query(raw: &'a str, accepted: &[&'static str]) -> Self {
        let mut p = Params::new(Location::Query);
        for pair in raw.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match (decode_component(k), decode_component(v)) {
                (Some(k), Some(v)) => p.add(k, Raw::Text(v), accepted),
                (k, _) => {
                    let name = k.map(|k| echo(&k)).unwrap_or_else(|| echo(pair));
                    p.violate(
                        &name,
                        Rule::Format,
                        format!("`{name}`: the query string has a malformed percent-escape or is not UTF-8"),
                    );
                }
            }
        }
        p
    }

    /// Path parameters already split out by the router.
    pub fn path(pairs: &'a [(String, String)], accepted: &[&'static str]) -> Self {
        let mut p = Params::new(Location::Path);
        for (k, v) in pairs {
            p.add(Cow::Borrowed(k), Raw::Text(Cow::Borrowed(v)), accepted);
        }
        p
    }

    /// A parsed JSON body. `None` means there was no body at all.
    pub fn body(body: Option<&'a Value>, accepted: &[&'static str]) -> Self {
        let mut p = Params::new(Location::Body);
        match body {
            None | Some(Value::Null) => {}
            Some(Value::Object(fields)) => {
                for (k, v) in fields {
                    // Numbers and booleans are kept as text with their JSON type, so that the rule
                    // of the field decides: an integer field reads a number (the OpenAPI document
                    // declares it `integer`), a text field refuses it by type.
                    let raw = match v {
                        Value::String(s) => Raw::Text(Cow::Borrowed(s)),
                        Value::Number(n) => Raw::Json(Cow::Owned(n.to_string()), "a number"),
                        Value::Bool(b) => Raw::Json(Cow::Owned(b.to_string()), "a boolean"),
                        Value::Null => Raw::Other("null"),
                        Value::Array(_) => Raw::Other("an array"),
                        Value::Object(_) => Raw::Other("an object"),
                    };
                    p.add(Cow::Borrowed(k), raw, accepted);
                }
            }
            Some(other) => {
                let kind = match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    _ => "a boolean",
                };
                p.violate(
                    "body",
                    Rule::Body,
                    format!("the body must be a JSON object, not {kind}"),
                );
            }
        }
        p
    }

    /// Given, even if its value was refused while reading (repeated, or a malformed escape), so
    /// that `required` and `one_of` do not report a parameter the client did send.
    fn present(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| n == name)
            || self
                .violations
                .0
                .iter()
                .any(|v| v.parameter == name && matches!(v.rule, Rule::Repeated | Rule::Format))
    }

    /// Given with a value that broke no rule of its own: only such values take part in the
    /// cross-parameter rules, so one mistake is reported once.
    fn given_valid(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| n == name)
            && !self.violations.0.iter().any(|v| v.parameter == name)
    }

    /// The value as text, with the shared checks (type, empty, lengths, pattern); the default when absent.
    fn checked_text(
        &mut self,
        name: &'static str,
        min_length: u32,
        max_length: u32,
        grammar: Option<&Grammar>,
        default: Option<&'static str>,
    ) -> Option<Cow<'a, str>> {
        self.checked_value(name, min_length, max_length, grammar, default, None)
    }

    /// `checked_text` that also reads a body's JSON value of the type `json` (`"a number"` for an
    /// integer field, `"a boolean"` for a boolean one).
    fn checked_value(
        &mut self,
        name: &'static str,
        min_length: u32,
        max_length: u32,
        grammar: Option<&Grammar>,
        default: Option<&'static str>,
        json: Option<&'static str>,
    ) -> Option<Cow<'a, str>> {
        let value = match self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
            None => return default.map(Cow::Borrowed),
            Some(Raw::Json(v, kind)) if json == Some(*kind) => v.clone(),
            Some(Raw::Json(_, kind) | Raw::Other(kind)) => {
                let kind = *kind;
                self.violate(
                    name,
                    Rule::Type,
                    format!("`{name}` must be a string, not {kind}"),
                );
                return None;
            }
            Some(Raw::Text(v)) => v.clone(),
        };
        let echo_value = self.location != Location::Body;
        let got = |v: &str| {
            if echo_value {
                format!(" (got `{}`)", echo(v))
            } else {
                String::new()
            }
        };
        let len = value.chars().count();
        if len == 0 {
            let how = if self.location == Location::Query {
                "; leave it out instead"
            } else {
                ""
            };
            self.violate(
                name,
                Rule::Empty,
                format!("`{name}` must not be empty{how}"),
            );
            return None;
        }
        if len > max_length as usize {
            self.violate(
                name,
                Rule::MaxLength,
                format!("`{name}` is {len} characters long; the limit is {max_length}"),
            );
            return None;
        }
        if len < min_length as usize {
            self.violate(
                name,
                Rule::MinLength,
                format!(
                    "`{name}` must be at least {min_length} characters long{}",
                    got(&value)
                ),
            );
            return None;
        }
        if let Some(g) = grammar
            && !g.is_match(&value)
        {
            self.violate(
                name,
                Rule::Pattern,
                format!("`{name}` must be {}{}", g.description, got(&value)),
            );
            return None;
        }
        Some(value)
    }

    pub fn text(
        &mut self,
        name: &'static str,
        min_length: u32,
        max_length: u32,
        grammar: Option<&Grammar>,
        default: Option<&'static str>,
    ) -> Option<String> {
        self.checked_text(name, min_length, max_length, grammar, default)
            .map(Cow::into_owned)
    }

    pub fn parsed<T>(
        &mut self,
        name: &'static str,
        min_length: u32,
        max_length: u32,
        grammar: Option<&Grammar>,
        parse: fn(&str) -> Result<T, String>,
        default: Option<&'static str>,
    ) -> Option<T> {
        let value = self.checked_text(name, min_length, max_length, grammar, default)?;
        match parse(&value) {
            Ok(v) => Some(v),
            Err(why) => {
                self.violate(name, Rule::Format, format!("`{name}`: {why}"));
                None
            }
        }
    }

    pub fn integer<T: TryFrom<i64>>(
        &mut self,
        name: &'static str,
        min: i64,
        max: i64,
        default: Option<&'static str>,
    ) -> Option<T> {
        let value =
            self.checked_value(name, 1, NUMBER_MAX_LENGTH, None, default, Some("a number"))?;
        let digits = value.strip_prefix('-').unwrap_or(&value);
        let got = echo(&value);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            self.violate(
                name,
                Rule::Integer,
                format!("`{name}` must be a whole number from {min} to {max} (got `{got}`)"),
            );
            return None;
        }
        let n = match value.parse::<i64>() {
            Ok(n) => n,
            Err(_) if value.starts_with('-') => i64::MIN,
            Err(_) => i64::MAX,
        };
        if n < min {
            self.violate(
                name,
                Rule::Minimum,
                format!("`{name}` must be from {min} to {max} (got `{got}`)"),
            );
            return None;
        }
        if n > max {
            self.violate(
                name,
                Rule::Maximum,
                format!("`{name}` must be from {min} to {max} (got `{got}`)"),
            );
            return None;
        }
        T::try_from(n).ok()
    }

    pub fn boolean(&mut self, name: &'static str, default: Option<&'static str>) -> Option<bool> {
        // `false` is the longest value a boolean takes.
        let longest = "false".len() as u32;
        let value = self.checked_value(name, 1, longest, None, default, Some("a boolean"))?;
        match value.as_ref() {
            "true" => Some(true),
            "false" => Some(false),
            other => {
                let got = echo(other);
                self.violate(
                    name,
                    Rule::Boolean,
                    format!("`{name}` must be `true` or `false` (got `{got}`)"),
                );
                None
            }
        }
    }

    /// `value_max_length` is the catalogue's `limits.value_max_length` (the generator passes it):
    /// a longer value is a length violation, a shorter unknown one is "not one of".
    pub fn choice<C: Choice>(
        &mut self,
        name: &'static str,
        value_max_length: u32,
        default: Option<&'static str>,
    ) -> Option<C> {
        let max = C::VALUES.iter().map(|v| v.len()).max().unwrap_or(1).max(1) as u32;
        let value = self.checked_text(name, 1, max.max(value_max_length), None, default)?;
        match C::VALUES.iter().position(|v| *v == value) {
            Some(i) => Some(C::from_index(i)),
            None => {
                let got = if self.location == Location::Body {
                    String::new()
                } else {
                    format!(" (got `{}`)", echo(&value))
                };
                self.violate(
                    name,
                    Rule::Enum,
                    format!("`{name}` must be one of: {}{got}", C::VALUES.join(", ")),
                );
                None
            }
        }
    }

    /// For a required parameter: reports it when absent. The placeholder returned then is never
    /// seen, because `finish` fails.
    pub fn required<T: Default>(&mut self, name: &'static str, value: Option<T>) -> T {
        if value.is_none() && !self.present(name) {
            let noun = self.noun();
            self.violate(
                name,
                Rule::Required,
                format!("`{name}` is required; this {noun} is missing"),
            );
        }
        value.unwrap_or_default()
    }

    /// At least one of `names` must be present.
    pub fn one_of(&mut self, names: &[&'static str]) {
        if !names.iter().any(|n| self.present(n)) {
            let list = names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ");
            let noun = self.noun();
            self.violate(
                names[0],
                Rule::OneOf,
                format!("one of {list} is required; give at least one {noun}"),
            );
        }
    }

    /// A cross-parameter rule: each of `when` that is given needs `then` to hold (see [`Needed`]).
    /// Judged only on values that are valid by themselves, so one mistake is reported once.
    pub fn requires(
        &mut self,
        when: &[&'static str],
        then: &'static str,
        needed: Needed,
        default: Option<&'static str>,
    ) {
        if self.violations.0.iter().any(|v| v.parameter == then) {
            return;
        }
        let given = self
            .values
            .iter()
            .find(|(n, _)| n == then)
            .map(|(_, v)| match v {
                Raw::Text(t) | Raw::Json(t, _) => t.to_string(),
                Raw::Other(kind) => (*kind).to_string(),
            });
        let problem = match needed {
            Needed::Present if given.is_none() => Some(format!("add `{then}`")),
            Needed::Present => None,
            Needed::OneOf(values) => {
                let wanted = if let [one] = values {
                    format!("`{then}={one}`")
                } else {
                    format!("`{then}` set to one of: {}", values.join(", "))
                };
                match (&given, default) {
                    (Some(v), _) if values.contains(&v.as_str()) => None,
                    (None, Some(d)) if values.contains(&d) => None,
                    (Some(v), _) => Some(format!("{wanted} (got `{then}={}`)", echo(v))),
                    (None, Some(d)) => Some(format!("{wanted} (`{then}` defaults to `{d}`)")),
                    (None, None) => Some(format!("{wanted} (`{then}` is not given)")),
                }
            }
        };
        let Some(problem) = problem else {
            return;
        };
        let triggered: Vec<&'static str> = when
            .iter()
            .copied()
            .filter(|n| self.given_valid(n))
            .collect();
        for name in triggered {
            self.violate(
                name,
                Rule::Requires,
                format!(
                    "`{name}` can be used only with {problem}; change that or leave `{name}` out"
                ),
            );
        }
    }

    /// At most one of `names` may be given; each one after the first is reported.
    pub fn exclusive(&mut self, names: &[&'static str]) {
        let given: Vec<&'static str> = names
            .iter()
            .copied()
            .filter(|n| self.given_valid(n))
            .collect();
        if let [first, rest @ ..] = given.as_slice() {
            let noun = self.noun();
            for name in rest {
                self.violate(
                    name,
                    Rule::Exclusive,
                    format!(
                        "`{name}` cannot be combined with `{first}`; give only one {noun} of {}",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
    }

    pub fn finish(self) -> Result<(), Violations> {
        self.violations.into_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire names are the ones clients have always read in `error.violations[].rule`.
    #[test]
    fn rules_serialise_to_their_wire_names() {
        let wire: Vec<String> = Rule::ALL
            .iter()
            .map(|r| {
                serde_json::to_value(r)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            wire,
            [
                "required",
                "one_of",
                "unknown_parameter",
                "repeated",
                "empty",
                "min_length",
                "max_length",
                "pattern",
                "format",
                "integer",
                "minimum",
                "maximum",
                "boolean",
                "enum",
                "type",
                "body",
                "requires",
                "exclusive",
                "refused",
            ]
        );
        assert!(
            Rule::ALL
                .iter()
                .all(|r| wire.contains(&r.as_str().to_string()))
        );
        let v = Violation {
            parameter: "limit".into(),
            location: Location::Query,
            rule: Rule::OneOf,
            message: "m".into(),
        };
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            serde_json::json!({"parameter": "limit", "in": "query", "rule": "one_of", "message": "m"})
        );
    }

    #[test]
    fn decodes_form_components() {
        assert_eq!(decode_component("a+b%20c").as_deref(), Some("a b c"));
        assert_eq!(decode_component("%E2%9C%93").as_deref(), Some("✓"));
        assert_eq!(decode_component("%zz"), None);
        assert_eq!(decode_component("%ff"), None, "lone 0xff is not UTF-8");
        assert_eq!(decode_component("%4"), None);
        assert_eq!(decode_component("%%41"), None);
        assert_eq!(decode_component("a%2Bb+c").as_deref(), Some("a+b c"));
        assert_eq!(decode_component("100%25").as_deref(), Some("100%"));
        // A sign is not a hex digit (the hand-written decoder took `%+1` for byte 1).
        assert_eq!(decode_component("%+1"), None);
    }

    /// Whatever the form serialiser writes, the parser reads back unchanged.
    #[test]
    fn reads_what_the_form_serialiser_writes() {
        for value in [
            "rust async",
            "a+b",
            "100%",
            "~*'()!",
            "Grüße ✓",
            "x=y&z",
            "",
        ] {
            let encoded: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
            assert_eq!(
                decode_component(&encoded).as_deref(),
                Some(value),
                "{encoded}"
            );
        }
    }

    #[test]
    fn suggests_the_closest_name() {
        assert_eq!(
            closest("limt", &["query", "limit", "cursor"]),
            Some("limit")
        );
        assert_eq!(closest("LIMIT", &["query", "limit"]), Some("limit"));
        assert_eq!(closest("zzzzzz", &["query", "limit"]), None);
    }

    #[test]
    fn a_body_number_is_read_by_an_integer_field_and_refused_by_a_text_field() {
        let body = serde_json::json!({ "credits": 5, "name": 7, "on": true });
        let mut p = Params::body(Some(&body), &["credits", "name", "on"]);
        assert_eq!(p.integer::<i64>("credits", 1, 10, None), Some(5));
        assert_eq!(p.boolean("on", None), Some(true));
        assert_eq!(p.text("name", 1, 10, None, None), None);
        let v = p.finish().expect_err("the text field refuses a number");
        assert_eq!(
            (v.0.len(), v.0[0].parameter.as_str(), v.0[0].rule.as_str()),
            (1, "name", "type")
        );
        let body = serde_json::json!({ "credits": 2.5 });
        let mut p = Params::body(Some(&body), &["credits"]);
        assert_eq!(p.integer::<i64>("credits", 1, 10, None), None);
        assert!(p.finish().is_err(), "a fraction is not a whole number");
    }

    #[test]
    fn echo_shortens_long_values() {
        let long = "x".repeat(500);
        assert_eq!(echo(&long).chars().count(), ECHO_MAX + 1);
    }
}
