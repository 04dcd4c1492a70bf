//! The semantic pass: resolves the written catalogue into the model the emitters use, and reports every
//! problem at once, each naming the endpoint (or grammar) and the field.

use std::collections::BTreeSet;

use indexmap::IndexMap;
use regex::Regex;
use serde_json::Value;

use crate::model::{self, Auth, EnumSpec, Method, ParamType};
use crate::names;

/// The typed parsers that exist in `adapters/src/request/parse.rs`, with the Rust type each returns.
pub const PARSERS: &[(&str, &str)] = &[
    ("strip_slash_prefix", "String"),
    ("strip_type_prefix", "String"),
    ("strip_at", "String"),
    ("id_list", "Vec<String>"),
    ("video_id", "String"),
    ("date_bound", "DateBound"),
    ("repo_ref", "RepoRef"),
    ("issue_ref", "IssueRef"),
];

#[derive(Debug)]
pub struct Api {
    pub info: model::Info,
    pub value_max_length: u32,
    pub keys_per_account: Option<u32>,
    pub billing: Option<Billing>,
    pub errors: Vec<ErrorCode>,
    pub platforms: Vec<(String, String)>,
    pub enums: Vec<SharedEnum>,
    pub grammars: Vec<GrammarSpec>,
    pub schemas: IndexMap<String, Value>,
    pub operations: Vec<Operation>,
}

/// Checked billing data: the packs in catalogue order.
#[derive(Debug)]
pub struct Billing {
    pub currency: String,
    pub list_price_micro: u64,
    pub packs: Vec<Pack>,
}

#[derive(Debug)]
pub struct Pack {
    pub id: String,
    pub credits: u64,
    pub price_cents: u64,
}

#[derive(Debug)]
pub struct ErrorCode {
    pub name: String,
    pub status: u16,
    pub description: String,
}

#[derive(Debug)]
pub struct SharedEnum {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Debug)]
pub struct GrammarSpec {
    pub name: String,
    pub description: String,
    pub pattern: String,
    pub max_length: Option<u32>,
    pub parser: Option<String>,
    pub example: String,
    pub valid: Vec<String>,
    pub invalid: Vec<String>,
    pub invalid_by_parser: Vec<String>,
    /// Made from an endpoint's inline `pattern` rather than declared under `grammars`.
    pub inline: bool,
}

#[derive(Debug)]
pub enum OpKind {
    Platform {
        platform: String,
        credits: u32,
    },
    Account {
        auth: Auth,
        handler: String,
        response: String,
    },
}

#[derive(Debug)]
pub struct Operation {
    pub method: Method,
    pub path: String,
    /// snake_case name, unique: `forum_community_search`, `auth_verify`.
    pub ident: String,
    pub kind: OpKind,
    pub summary: String,
    pub description: Option<String>,
    pub params: Vec<ParamSpec>,
    pub path_params: Vec<ParamSpec>,
    pub body: Option<Vec<ParamSpec>>,
    pub one_of: Vec<Vec<String>>,
    pub requires: Vec<Requirement>,
    pub exclusive: Vec<Vec<String>>,
    pub errors: Vec<String>,
}

/// A checked cross-parameter rule: when any parameter of `when` is given, each of `then` holds.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub when: Vec<String>,
    pub then: Vec<(String, Needed)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needed {
    /// The parameter is given.
    Present,
    /// The parameter's value (given, or else its default) is one of these.
    OneOf(Vec<String>),
}

impl Requirement {
    /// The rule in words, for the OpenAPI description: "`after`, `before` only with `sort=new`".
    pub fn describe(&self) -> String {
        let when = self
            .when
            .iter()
            .map(|w| format!("`{w}`"))
            .collect::<Vec<_>>()
            .join(" or ");
        let then = self
            .then
            .iter()
            .map(|(name, need)| match need {
                Needed::Present => format!("`{name}` is given"),
                Needed::OneOf(values) if values.len() == 1 => {
                    format!("`{name}` is `{}`", values[0])
                }
                Needed::OneOf(values) => format!(
                    "`{name}` is one of {}",
                    values
                        .iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
            .collect::<Vec<_>>()
            .join(" and ");
        format!("{when} can be given only when {then}.")
    }
}

impl Operation {
    pub fn platform(&self) -> Option<(&str, u32)> {
        match &self.kind {
            OpKind::Platform { platform, credits } => Some((platform, *credits)),
            OpKind::Account { .. } => None,
        }
    }

    /// A working request, shown in `error.fix`: required parameters and the first member of each
    /// one-of group, with their example values.
    pub fn example_request(&self) -> String {
        let mut path = self.path.clone();
        for p in &self.path_params {
            path = path.replace(&format!("{{{}}}", p.name), &p.example);
        }
        let wanted =
            |p: &&ParamSpec| p.required || self.one_of.iter().any(|g| g.first() == Some(&p.name));
        let query: Vec<(&str, &str)> = self
            .params
            .iter()
            .filter(wanted)
            .map(|p| (p.name.as_str(), p.example.as_str()))
            .collect();
        let mut out = format!("{} {}", method_str(self.method), path);
        if !query.is_empty() {
            out.push('?');
            out.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(query)
                    .finish(),
            );
        }
        if let Some(body) = &self.body {
            let fields: serde_json::Map<String, Value> = body
                .iter()
                .filter(wanted)
                .map(|p| (p.name.clone(), p.example_json()))
                .collect();
            out.push(' ');
            out.push_str(&Value::Object(fields).to_string());
        }
        out
    }
}

pub fn method_str(m: Method) -> &'static str {
    match m {
        Method::Get => "GET",
        Method::Post => "POST",
        Method::Delete => "DELETE",
    }
}

#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: String,
    pub required: bool,
    pub kind: Kind,
    pub min_length: u32,
    pub max_length: u32,
    pub default: Option<String>,
    pub description: String,
    pub example: String,
}

impl ParamSpec {
    pub fn example_json(&self) -> Value {
        match &self.kind {
            Kind::Integer { .. } => self
                .example
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or(Value::Null),
            Kind::Boolean => Value::Bool(self.example == "true"),
            _ => Value::String(self.example.clone()),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// Free text, or text matching a grammar (by name; inline patterns become grammars too).
    Text {
        grammar: Option<String>,
    },
    Integer {
        min: i64,
        max: i64,
    },
    Boolean,
    /// `shared` names a shared enum; otherwise the enum belongs to this parameter.
    Choice {
        shared: Option<String>,
        values: Vec<String>,
    },
}

/// Collects every problem before failing, so one build reports them all.
#[derive(Default)]
struct Diags(Vec<String>);

impl Diags {
    fn at(&mut self, place: &str, field: &str, msg: impl std::fmt::Display) {
        self.0.push(format!("{place}, field `{field}`: {msg}"));
    }
}

fn anchored(re: &str) -> bool {
    re.starts_with('^') && re.ends_with('$')
}

fn compile(d: &mut Diags, place: &str, field: &str, pattern: &str) -> Option<Regex> {
    if !anchored(pattern) {
        d.at(
            place,
            field,
            format_args!("pattern `{pattern}` must be anchored with ^ and $"),
        );
    }
    match Regex::new(pattern) {
        Ok(re) => Some(re),
        Err(e) => {
            d.at(place, field, format_args!("pattern does not compile: {e}"));
            None
        }
    }
}

fn fits(re: &Regex, max_length: u32, v: &str) -> bool {
    !v.is_empty() && re.is_match(v) && v.chars().count() <= max_length as usize
}

pub fn check(cat: model::Catalogue) -> Result<Api, Vec<String>> {
    let mut d = Diags::default();
    let max_default = cat.limits.value_max_length;

    let mut errors = Vec::new();
    for (name, e) in &cat.errors {
        if !(400..=599).contains(&e.status) {
            d.at(
                &format!("error `{name}`"),
                "status",
                "must be a 4xx or 5xx status",
            );
        }
        if !names::is_screaming(name) {
            d.at(
                &format!("error `{name}`"),
                "name",
                "must be SCREAMING_SNAKE_CASE",
            );
        }
        errors.push(ErrorCode {
            name: name.clone(),
            status: e.status,
            description: e.description.clone(),
        });
    }
    for code in &cat.platform_errors {
        if !cat.errors.contains_key(code) {
            d.at("platform_errors", code, "is not declared under `errors`");
        }
    }

    let mut enums = Vec::new();
    for (name, values) in &cat.enums {
        check_enum_values(&mut d, &format!("enum `{name}`"), "values", values);
        enums.push(SharedEnum {
            name: name.clone(),
            values: values.clone(),
        });
    }

    let mut grammars = Vec::new();
    let mut regexes: IndexMap<String, (Regex, u32)> = IndexMap::new();
    for (name, g) in &cat.grammars {
        let place = format!("grammar `{name}`");
        let max = g.max_length.unwrap_or(max_default);
        if let Some(p) = &g.parse
            && !PARSERS.iter().any(|(n, _)| n == p)
        {
            let known: Vec<&str> = PARSERS.iter().map(|(n, _)| *n).collect();
            d.at(
                &place,
                "parse",
                format_args!("unknown parser `{p}`; known: {}", known.join(", ")),
            );
        }
        if let Some(re) = compile(&mut d, &place, "pattern", &g.pattern) {
            if !fits(&re, max, &g.example) {
                d.at(
                    &place,
                    "example",
                    format_args!("`{}` does not match the grammar", g.example),
                );
            }
            for v in &g.valid {
                if !fits(&re, max, v) {
                    d.at(
                        &place,
                        "valid",
                        format_args!("`{v}` is listed as valid but is rejected"),
                    );
                }
            }
            for v in &g.invalid {
                if fits(&re, max, v) {
                    d.at(
                        &place,
                        "invalid",
                        format_args!("`{v}` is listed as invalid but is accepted"),
                    );
                }
            }
            for v in &g.invalid_by_parser {
                if !fits(&re, max, v) {
                    d.at(
                        &place,
                        "invalid_by_parser",
                        format_args!(
                            "`{v}` is already rejected by the pattern; list it under `invalid`"
                        ),
                    );
                }
                if g.parse.is_none() {
                    d.at(
                        &place,
                        "invalid_by_parser",
                        "needs a `parse` to reject these values",
                    );
                }
            }
            regexes.insert(name.clone(), (re, max));
        }
        grammars.push(GrammarSpec {
            name: name.clone(),
            description: g.description.clone(),
            pattern: g.pattern.clone(),
            max_length: g.max_length,
            parser: g.parse.clone(),
            example: g.example.clone(),
            valid: g.valid.clone(),
            invalid: g.invalid.clone(),
            invalid_by_parser: g.invalid_by_parser.clone(),
            inline: false,
        });
    }

    let mut operations = Vec::new();
    let mut seen_routes = BTreeSet::new();
    let mut seen_idents = BTreeSet::new();
    for (key, ep) in cat.endpoints {
        let (method, path) = match split_key(&key, ep.method) {
            Ok(mp) => mp,
            Err(e) => {
                d.at(&format!("endpoint `{key}`"), "method", e);
                continue;
            }
        };
        let place = format!("endpoint `{} {path}`", method_str(method));
        if !path.starts_with("/v1/") {
            d.at(&place, "path", "must start with /v1/");
        }
        if !seen_routes.insert((method_str(method), path.clone())) {
            d.at(&place, "path", "is declared twice");
        }
        let ident = names::op_ident(&path, method, ep.handler.as_deref());
        if !seen_idents.insert(ident.clone()) {
            d.at(
                &place,
                "handler",
                format_args!("name `{ident}` is used twice"),
            );
        }

        let kind = match (&ep.platform, &ep.credits) {
            (Some(platform), Some(credits)) => {
                if !cat.platforms.contains_key(platform) {
                    d.at(
                        &place,
                        "platform",
                        format_args!("`{platform}` is not declared under `platforms`"),
                    );
                }
                if !path.starts_with(&format!("/v1/{platform}/")) {
                    d.at(
                        &place,
                        "path",
                        format_args!("a {platform} endpoint must live under /v1/{platform}/"),
                    );
                }
                if !(1..=5).contains(credits) {
                    d.at(
                        &place,
                        "credits",
                        "a platform endpoint costs 1 to 5 credits",
                    );
                }
                if method != Method::Get {
                    d.at(&place, "method", "platform endpoints are GET");
                }
                for (field, set) in [
                    ("auth", ep.auth.is_some()),
                    ("handler", ep.handler.is_some()),
                    ("body", ep.body.is_some()),
                    ("response", ep.response.is_some()),
                    ("path_params", !ep.path_params.is_empty()),
                ] {
                    if set {
                        d.at(&place, field, "is not allowed on a platform endpoint");
                    }
                }
                OpKind::Platform {
                    platform: platform.clone(),
                    credits: *credits,
                }
            }
            (Some(_), None) => {
                d.at(&place, "credits", "a platform endpoint needs a price");
                continue;
            }
            (None, credits) => {
                if credits.is_some() {
                    d.at(&place, "credits", "only platform endpoints cost credits");
                }
                let auth = ep.auth.unwrap_or_else(|| {
                    d.at(&place, "auth", "is required on a non-platform operation");
                    Auth::None
                });
                let handler = ep.handler.clone().unwrap_or_else(|| {
                    d.at(&place, "handler", "is required on a non-platform operation");
                    String::new()
                });
                if !handler.is_empty() && !names::is_snake(&handler) {
                    d.at(&place, "handler", "must be a snake_case function name");
                }
                let response = ep.response.clone().unwrap_or_else(|| {
                    d.at(
                        &place,
                        "response",
                        "is required on a non-platform operation",
                    );
                    String::new()
                });
                if !response.is_empty() && !cat.schemas.contains_key(&response) {
                    d.at(
                        &place,
                        "response",
                        format_args!("schema `{response}` is not declared under `schemas`"),
                    );
                }
                if method == Method::Get && ep.body.is_some() {
                    d.at(&place, "body", "a GET operation has no body");
                }
                if method == Method::Post && ep.body.is_none() && !ep.params.is_empty() {
                    d.at(
                        &place,
                        "params",
                        "POST operations take a JSON body, not query parameters",
                    );
                }
                OpKind::Account {
                    auth,
                    handler,
                    response,
                }
            }
        };

        let mut resolve_all =
            |d: &mut Diags, params: &IndexMap<String, model::Param>, what: &str| {
                params
                    .iter()
                    .filter_map(|(name, p)| {
                        resolve_param(
                            d,
                            &place,
                            what,
                            name,
                            p,
                            &ident,
                            max_default,
                            &cat.enums,
                            &mut grammars,
                            &mut regexes,
                        )
                    })
                    .collect::<Vec<_>>()
            };
        let params = resolve_all(&mut d, &ep.params, "params");
        // A path segment is never absent from a matched route, so its parameter is required by
        // construction and the generated input types it as a plain value.
        let path_params: Vec<ParamSpec> = resolve_all(&mut d, &ep.path_params, "path_params")
            .into_iter()
            .map(|p| ParamSpec {
                required: true,
                ..p
            })
            .collect();
        let body = ep.body.as_ref().map(|b| resolve_all(&mut d, b, "body"));

        let template: BTreeSet<String> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(str::to_string)
            .collect();
        let declared: BTreeSet<String> = path_params.iter().map(|p| p.name.clone()).collect();
        for missing in template.difference(&declared) {
            d.at(
                &place,
                &format!("path_params.{missing}"),
                "appears in the path but is not declared",
            );
        }
        for extra in declared.difference(&template) {
            d.at(
                &place,
                &format!("path_params.{extra}"),
                "is declared but not in the path",
            );
        }

        let fields: Vec<&ParamSpec> = params.iter().chain(body.iter().flatten()).collect();
        for (i, group) in ep.one_of.iter().enumerate() {
            if group.len() < 2 {
                d.at(
                    &place,
                    &format!("one_of[{i}]"),
                    "a group needs at least two members",
                );
            }
            for member in group {
                match fields.iter().find(|p| &p.name == member) {
                    None => d.at(
                        &place,
                        &format!("one_of[{i}]"),
                        format_args!("`{member}` is not a parameter"),
                    ),
                    Some(p) if p.required || p.default.is_some() => d.at(
                        &place,
                        &format!("one_of[{i}]"),
                        format_args!("`{member}` must be optional and without a default"),
                    ),
                    Some(_) => {}
                }
            }
        }

        // Cross-parameter rules live beside the values they read: query parameters of a platform
        // endpoint, body fields of an operation (the generated reader checks them there).
        let (rule_fields, noun): (&[ParamSpec], &str) = if ep.platform.is_some() {
            (&params, "a parameter")
        } else {
            (body.as_deref().unwrap_or(&[]), "a body field")
        };
        let requires = check_requires(&mut d, &place, &ep.requires, rule_fields, noun, &regexes);
        check_exclusive(&mut d, &place, &ep.exclusive, rule_fields, noun);
        let wanted: Vec<&str> = fields
            .iter()
            .filter(|p| p.required || ep.one_of.iter().any(|g| g.first() == Some(&p.name)))
            .map(|p| p.name.as_str())
            .collect();
        if let Some(why) = broken_by(&wanted, rule_fields, &requires, &ep.exclusive) {
            d.at(
                &place,
                "requires",
                format_args!("the working example (required parameters and the first of each one-of group) breaks a rule: {why}"),
            );
        }

        let mut errors_for_op: Vec<String> = Vec::new();
        if ep.platform.is_some() {
            errors_for_op.extend(cat.platform_errors.iter().cloned());
        }
        for code in &ep.errors {
            if !cat.errors.contains_key(code) {
                d.at(
                    &place,
                    "errors",
                    format_args!("`{code}` is not declared under `errors`"),
                );
            } else if !errors_for_op.contains(code) {
                errors_for_op.push(code.clone());
            }
        }
        // Codes the runtime can send on any operation, whatever the catalogue lists: unknown query
        // parameters (422) and faults (500); and on every operation with a body, the body rules.
        let mut implied = vec!["VALIDATION_ERROR", "INTERNAL"];
        if ep.body.is_some() {
            implied.extend(["BAD_REQUEST", "LENGTH_REQUIRED", "PAYLOAD_TOO_LARGE"]);
        }
        for code in implied {
            if cat.errors.contains_key(code) && !errors_for_op.iter().any(|c| c == code) {
                errors_for_op.push(code.into());
            }
        }

        operations.push(Operation {
            method,
            path,
            ident,
            kind,
            summary: ep.summary,
            description: ep.description,
            params,
            path_params,
            body,
            one_of: ep.one_of,
            requires,
            exclusive: ep.exclusive,
            errors: errors_for_op,
        });
    }

    for (name, schema) in &cat.schemas {
        check_schema(&mut d, &format!("schema `{name}`"), "", schema);
    }

    for required in ["Item", "SuccessEnvelope"] {
        if !cat.schemas.contains_key(required) {
            d.at(
                "schemas",
                required,
                "is required (the platform success envelope refers to it)",
            );
        }
    }

    let billing = cat
        .billing
        .map(|b| check_billing(&mut d, b, &operations, &cat.schemas));
    if cat.limits.keys_per_account == Some(0) {
        d.at("limits", "keys_per_account", "must be at least 1");
    }

    if d.0.is_empty() {
        Ok(Api {
            info: cat.info,
            value_max_length: max_default,
            keys_per_account: cat.limits.keys_per_account,
            billing,
            errors,
            platforms: cat.platforms.into_iter().collect(),
            enums,
            grammars,
            schemas: cat.schemas,
            operations,
        })
    } else {
        Err(d.0)
    }
}

/// The spec sells exactly three packs, each cheaper per credit than the list price (so a discount
/// is never negative), and the `plan` every operation accepts is exactly the pack ids.
fn check_billing(
    d: &mut Diags,
    b: model::Billing,
    operations: &[Operation],
    schemas: &IndexMap<String, Value>,
) -> Billing {
    if b.list_price_micro == 0 {
        d.at("billing", "list_price_micro", "must be positive");
    }
    if b.packs.len() != 3 {
        d.at(
            "billing",
            "packs",
            format_args!("must declare exactly three packs (got {})", b.packs.len()),
        );
    }
    let mut packs = Vec::new();
    for (id, p) in b.packs {
        let field = |f: &str| format!("packs.{id}.{f}");
        if p.credits == 0 {
            d.at("billing", &field("credits"), "must be positive");
        }
        if p.price_cents == 0 {
            d.at("billing", &field("price_cents"), "must be positive");
        }
        // price per credit in micro units = price_cents * 10_000 / credits
        if p.credits > 0
            && u128::from(p.price_cents) * 10_000
                > u128::from(b.list_price_micro) * u128::from(p.credits)
        {
            d.at(
                "billing",
                &field("price_cents"),
                "costs more per credit than list_price_micro",
            );
        }
        packs.push(Pack {
            id,
            credits: p.credits,
            price_cents: p.price_cents,
        });
    }
    let ids: Vec<&str> = packs.iter().map(|p| p.id.as_str()).collect();
    for op in operations {
        let fields = op
            .path_params
            .iter()
            .chain(op.params.iter())
            .chain(op.body.iter().flatten());
        for p in fields.filter(|p| p.name == "plan") {
            if let Kind::Choice { values, .. } = &p.kind
                && values.iter().map(String::as_str).ne(ids.iter().copied())
            {
                d.at(
                    &format!("endpoint {}", op.path),
                    "plan",
                    format_args!("values {values:?} must be the pack ids {ids:?}, in order"),
                );
            }
        }
    }
    // Response schemas are written as JSON Schema, so their plan enums are checked here too: the
    // document cannot show a pack the server does not sell.
    for (name, schema) in schemas {
        let mut enums = Vec::new();
        pack_enums(schema, &ids, &mut enums);
        for values in enums {
            if values.iter().map(String::as_str).ne(ids.iter().copied()) {
                d.at(
                    &format!("schema `{name}`"),
                    "enum",
                    format_args!("values {values:?} must be the pack ids {ids:?}, in order"),
                );
            }
        }
    }
    Billing {
        currency: b.currency,
        list_price_micro: b.list_price_micro,
        packs,
    }
}

/// Every `enum` in `v` that names at least one pack id.
fn pack_enums(v: &Value, ids: &[&str], out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(values)) = m.get("enum") {
                let values: Vec<String> = values
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect();
                if values.iter().any(|x| ids.contains(&x.as_str())) {
                    out.push(values);
                }
            }
            m.values().for_each(|x| pack_enums(x, ids, out));
        }
        Value::Array(a) => a.iter().for_each(|x| pack_enums(x, ids, out)),
        _ => {}
    }
}

/// A rule's member: an optional parameter without a default (one that is always there makes the
/// rule either always apply or never matter, which is a mistake in the catalogue).
fn rule_member<'p>(
    d: &mut Diags,
    place: &str,
    field: &str,
    name: &str,
    fields: &'p [ParamSpec],
    noun: &str,
) -> Option<&'p ParamSpec> {
    match fields.iter().find(|p| p.name == name) {
        None => {
            d.at(place, field, format_args!("`{name}` is not {noun}"));
            None
        }
        Some(p) if p.required || p.default.is_some() => {
            d.at(
                place,
                field,
                format_args!(
                    "`{name}` is always present (required or defaulted), so the rule cannot work"
                ),
            );
            None
        }
        Some(p) => Some(p),
    }
}

fn check_requires(
    d: &mut Diags,
    place: &str,
    rules: &[model::Requirement],
    fields: &[ParamSpec],
    noun: &str,
    regexes: &IndexMap<String, (Regex, u32)>,
) -> Vec<Requirement> {
    let mut out = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let here = format!("requires[{i}]");
        if rule.when.is_empty() {
            d.at(place, &format!("{here}.if"), "names no parameter");
        }
        if rule.then.is_empty() {
            d.at(place, &format!("{here}.then"), "names no parameter");
        }
        let mut seen = BTreeSet::new();
        for w in &rule.when {
            if !seen.insert(w) {
                d.at(
                    place,
                    &format!("{here}.if"),
                    format_args!("`{w}` is listed twice"),
                );
            }
            rule_member(d, place, &format!("{here}.if"), w, fields, noun);
        }
        let mut then = Vec::new();
        for (name, cond) in &rule.then {
            let field = format!("{here}.then.{name}");
            if rule.when.contains(name) {
                d.at(place, &field, "a parameter cannot require itself");
                continue;
            }
            let Some(p) = fields.iter().find(|p| &p.name == name) else {
                d.at(place, &field, format_args!("`{name}` is not {noun}"));
                continue;
            };
            let need = match cond {
                model::Condition::Word(w) if w == "present" => {
                    if p.required || p.default.is_some() {
                        d.at(
                            place,
                            &field,
                            "is always present (required or defaulted); `present` would always hold",
                        );
                    }
                    Needed::Present
                }
                model::Condition::Word(w) => {
                    d.at(
                        place,
                        &field,
                        format_args!(
                            "`{w}` is not a condition; give a list of values or `present`"
                        ),
                    );
                    continue;
                }
                model::Condition::Values(values) => {
                    let values: Vec<String> = values.iter().map(model::Scalar::as_text).collect();
                    if !matches!(p.kind, Kind::Choice { .. } | Kind::Boolean) {
                        d.at(
                            place,
                            &field,
                            "a value condition needs an enum or boolean parameter (their values have one spelling)",
                        );
                        continue;
                    }
                    if values.is_empty() {
                        d.at(place, &field, "lists no value");
                    }
                    for v in &values {
                        if let Err(why) = accepts(p, v, regexes) {
                            d.at(
                                place,
                                &field,
                                format_args!("`{v}` is not a value of `{name}`: {why}"),
                            );
                        }
                    }
                    Needed::OneOf(values)
                }
            };
            then.push((name.clone(), need));
        }
        out.push(Requirement {
            when: rule.when.clone(),
            then,
        });
    }
    out
}

fn check_exclusive(
    d: &mut Diags,
    place: &str,
    groups: &[Vec<String>],
    fields: &[ParamSpec],
    noun: &str,
) {
    for (i, group) in groups.iter().enumerate() {
        let field = format!("exclusive[{i}]");
        if group.len() < 2 {
            d.at(place, &field, "a group needs at least two members");
        }
        let mut seen = BTreeSet::new();
        for member in group {
            if !seen.insert(member) {
                d.at(place, &field, format_args!("`{member}` is listed twice"));
            }
            rule_member(d, place, &field, member, fields, noun);
        }
    }
}

/// Whether a request giving exactly `given` (all other parameters at their defaults) breaks a rule,
/// and which.
fn broken_by(
    given: &[&str],
    fields: &[ParamSpec],
    requires: &[Requirement],
    exclusive: &[Vec<String>],
) -> Option<String> {
    for rule in requires {
        if !rule.when.iter().any(|w| given.contains(&w.as_str())) {
            continue;
        }
        for (name, need) in &rule.then {
            let default = fields
                .iter()
                .find(|p| &p.name == name)
                .and_then(|p| p.default.as_deref());
            let holds = match need {
                Needed::Present => given.contains(&name.as_str()),
                // An example value is not known here; only defaults and absence are judged.
                Needed::OneOf(values) => {
                    given.contains(&name.as_str())
                        || default.is_some_and(|d| values.iter().any(|v| v == d))
                }
            };
            if !holds {
                return Some(rule.describe());
            }
        }
    }
    for group in exclusive {
        if group.iter().filter(|m| given.contains(&m.as_str())).count() > 1 {
            return Some(format!("{} are exclusive", group.join(", ")));
        }
    }
    None
}

/// JSON Schema keywords the catalogue's response schemas may use. A key outside this list is
/// almost always a YAML slip (an unquoted comma in a flow mapping splits a description into a
/// stray key), so it fails the build instead of reaching the document.
const SCHEMA_KEYWORDS: &[&str] = &[
    "$ref",
    "type",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "default",
    "examples",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "deprecated",
    "readOnly",
    "writeOnly",
];

fn check_schema(d: &mut Diags, place: &str, at: &str, schema: &Value) {
    let Some(obj) = schema.as_object() else {
        if !schema.is_boolean() {
            d.at(
                place,
                if at.is_empty() { "schema" } else { at },
                "a schema must be an object or a boolean",
            );
        }
        return;
    };
    for (key, value) in obj {
        let here = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        if !SCHEMA_KEYWORDS.contains(&key.as_str()) {
            d.at(
                place,
                &here,
                format_args!("`{key}` is not a JSON Schema keyword (an unquoted comma in YAML?)"),
            );
            continue;
        }
        match key.as_str() {
            "properties" => {
                for (prop, sub) in value.as_object().into_iter().flatten() {
                    check_schema(d, place, &format!("{here}.{prop}"), sub);
                }
            }
            "items" | "not" | "additionalProperties" => check_schema(d, place, &here, value),
            "allOf" | "anyOf" | "oneOf" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    check_schema(d, place, &format!("{here}[{i}]"), sub);
                }
            }
            _ => {}
        }
    }
}

/// An endpoint key is a path, or `METHOD /path` when one path has several methods.
fn split_key(key: &str, field: Option<Method>) -> Result<(Method, String), String> {
    let (from_key, path) = match key.split_once(' ') {
        Some((m, p)) => {
            let m = match m {
                "GET" => Method::Get,
                "POST" => Method::Post,
                "DELETE" => Method::Delete,
                other => return Err(format!("unknown method `{other}` in the key")),
            };
            (Some(m), p.to_string())
        }
        None => (None, key.to_string()),
    };
    match (from_key, field) {
        (Some(a), Some(b)) if a != b => Err("the key and the `method` field disagree".into()),
        (a, b) => Ok((a.or(b).unwrap_or(Method::Get), path)),
    }
}

fn check_enum_values(d: &mut Diags, place: &str, field: &str, values: &[String]) {
    if values.is_empty() {
        d.at(place, field, "an enum needs at least one value");
    }
    let mut seen = BTreeSet::new();
    for v in values {
        if !seen.insert(names::camel(v)) {
            d.at(
                place,
                field,
                format_args!("value `{v}` is repeated (or differs only in case or punctuation)"),
            );
        }
        if v.is_empty()
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            d.at(
                place,
                field,
                format_args!("value `{v}` must be letters, digits, `_` or `-`"),
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn resolve_param(
    d: &mut Diags,
    place: &str,
    what: &str,
    name: &str,
    p: &model::Param,
    ident: &str,
    max_default: u32,
    enums: &IndexMap<String, Vec<String>>,
    grammars: &mut Vec<GrammarSpec>,
    regexes: &mut IndexMap<String, (Regex, u32)>,
) -> Option<ParamSpec> {
    let field = format!("{what}.{name}");
    let mut at = |msg: String| d.at(place, &field, msg);
    if !names::is_snake(name) {
        at("a parameter name must be snake_case".into());
    }
    let sources = [
        p.grammar.is_some(),
        p.pattern.is_some(),
        p.choices.is_some(),
    ];
    if sources.iter().filter(|s| **s).count() > 1 {
        at("use only one of `grammar`, `pattern` and `enum`".into());
    }
    if p.required && p.default.is_some() {
        at("a required parameter cannot have a default".into());
    }
    let mut grammar_example = None;
    let mut grammar_max = None;
    let kind = match p.ty {
        ParamType::Integer => {
            if sources.iter().any(|s| *s) || p.min_length.is_some() || p.max_length.is_some() {
                at("an integer takes only `minimum`, `maximum` and `default`".into());
            }
            match (p.minimum, p.maximum) {
                (Some(min), Some(max)) if min <= max => Kind::Integer { min, max },
                (Some(_), Some(_)) => {
                    at("`minimum` is greater than `maximum`".into());
                    return None;
                }
                _ => {
                    at("an integer needs both `minimum` and `maximum`".into());
                    return None;
                }
            }
        }
        ParamType::Boolean => {
            if sources.iter().any(|s| *s) || p.minimum.is_some() || p.maximum.is_some() {
                at("a boolean takes only `default`".into());
            }
            Kind::Boolean
        }
        ParamType::String => {
            if p.minimum.is_some() || p.maximum.is_some() {
                at(
                    "`minimum`/`maximum` apply to integers; use `min_length`/`max_length` for text"
                        .into(),
                );
            }
            if let Some(spec) = &p.choices {
                let (shared, values) = match spec {
                    EnumSpec::Shared(n) => match enums.get(n) {
                        Some(v) => (Some(n.clone()), v.clone()),
                        None => {
                            at(format!("shared enum `{n}` is not declared under `enums`"));
                            return None;
                        }
                    },
                    EnumSpec::Inline(v) => (None, v.clone()),
                };
                if shared.is_none() {
                    check_enum_values(d, place, &field, &values);
                }
                Kind::Choice { shared, values }
            } else if let Some(g) = &p.grammar {
                match grammars.iter().find(|x| &x.name == g) {
                    Some(spec) => {
                        grammar_example = Some(spec.example.clone());
                        grammar_max = spec.max_length;
                    }
                    None => {
                        at(format!("unknown grammar `{g}`"));
                        return None;
                    }
                }
                Kind::Text {
                    grammar: Some(g.clone()),
                }
            } else if let Some(pattern) = &p.pattern {
                let gname = format!("{ident}_{name}");
                if let Some(re) = compile(d, place, &field, pattern) {
                    regexes.insert(gname.clone(), (re, p.max_length.unwrap_or(max_default)));
                }
                grammars.push(GrammarSpec {
                    name: gname.clone(),
                    description: p
                        .description
                        .clone()
                        .unwrap_or_else(|| format!("a value matching `{pattern}`")),
                    pattern: pattern.clone(),
                    max_length: p.max_length,
                    parser: None,
                    example: p
                        .example
                        .as_ref()
                        .map(model::Scalar::as_text)
                        .unwrap_or_default(),
                    valid: vec![],
                    invalid: vec![],
                    invalid_by_parser: vec![],
                    inline: true,
                });
                Kind::Text {
                    grammar: Some(gname),
                }
            } else {
                Kind::Text { grammar: None }
            }
        }
    };
    let mut at = |msg: String| d.at(place, &field, msg);

    let max_length = p.max_length.or(grammar_max).unwrap_or(max_default);
    let min_length = p.min_length.unwrap_or(1);
    if min_length == 0 || min_length > max_length {
        at(format!(
            "length bounds {min_length}..{max_length} are empty or start at 0 (an empty value is never valid)"
        ));
    }

    let default = p.default.as_ref().map(model::Scalar::as_text);
    let example = p
        .example
        .as_ref()
        .map(model::Scalar::as_text)
        .or_else(|| default.clone())
        .or(grammar_example)
        .or_else(|| match &kind {
            Kind::Integer { min, max } => Some(((*min).max(1).min(*max)).to_string()),
            Kind::Boolean => Some("true".into()),
            Kind::Choice { values, .. } => values.first().cloned(),
            Kind::Text { .. } => None,
        })
        .unwrap_or_else(|| {
            if name == "query" {
                "rust".into()
            } else {
                "example".into()
            }
        });

    let spec = ParamSpec {
        name: name.to_string(),
        required: p.required,
        kind,
        min_length,
        max_length,
        default,
        description: p.description.clone().unwrap_or_default(),
        example,
    };
    if let Some(def) = &spec.default
        && let Err(why) = accepts(&spec, def, regexes)
    {
        at(format!("default `{def}` is not a valid value: {why}"));
    }
    if let Err(why) = accepts(&spec, &spec.example, regexes) {
        at(format!(
            "example `{}` is not a valid value: {why}",
            spec.example
        ));
    }
    Some(spec)
}

/// The build-time twin of the runtime check, used on defaults and examples.
fn accepts(p: &ParamSpec, v: &str, regexes: &IndexMap<String, (Regex, u32)>) -> Result<(), String> {
    let len = v.chars().count() as u32;
    if len < p.min_length || len > p.max_length {
        return Err(format!(
            "length must be {}..={}",
            p.min_length, p.max_length
        ));
    }
    match &p.kind {
        Kind::Integer { min, max } => match v.parse::<i64>() {
            Ok(n) if n >= *min && n <= *max => Ok(()),
            _ => Err(format!("must be a whole number in {min}..={max}")),
        },
        Kind::Boolean => matches!(v, "true" | "false")
            .then_some(())
            .ok_or_else(|| "must be true or false".into()),
        Kind::Choice { values, .. } => values
            .iter()
            .any(|x| x == v)
            .then_some(())
            .ok_or_else(|| format!("must be one of {}", values.join(", "))),
        Kind::Text { grammar: Some(g) } => match regexes.get(g) {
            Some((re, _)) if re.is_match(v) => Ok(()),
            Some(_) => Err(format!("does not match grammar `{g}`")),
            None => Ok(()), // the grammar itself failed to compile and was reported
        },
        Kind::Text { grammar: None } => Ok(()),
    }
}
