//! The catalogue as written in YAML (`docs/catalogue-format.md`). `check` turns it into the resolved
//! model the emitters use; nothing here decides anything.

use std::fmt;
use std::marker::PhantomData;

use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// Deserialises a map refusing repeated keys: YAML parsers keep the last of two equal keys, which
/// would silently drop an endpoint, grammar or parameter declared twice.
fn unique<'de, D, V>(d: D) -> Result<IndexMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct UniqueVisitor<V>(PhantomData<V>);
    impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueVisitor<V> {
        type Value = IndexMap<String, V>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = IndexMap::new();
            while let Some(key) = map.next_key::<String>()? {
                if out.contains_key(&key) {
                    return Err(de::Error::custom(format_args!("`{key}` is declared twice")));
                }
                let value = map.next_value()?;
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    d.deserialize_map(UniqueVisitor(PhantomData))
}

fn unique_opt<'de, D, V>(d: D) -> Result<Option<IndexMap<String, V>>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    unique(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    pub info: Info,
    pub limits: Limits,
    /// Credit packs and list price; optional so a catalogue without billing (the test fixture)
    /// stays valid.
    #[serde(default)]
    pub billing: Option<Billing>,
    #[serde(deserialize_with = "unique")]
    pub errors: IndexMap<String, ErrorDef>,
    pub platform_errors: Vec<String>,
    #[serde(deserialize_with = "unique")]
    pub platforms: IndexMap<String, String>,
    #[serde(default, deserialize_with = "unique")]
    pub enums: IndexMap<String, Vec<String>>,
    #[serde(default, deserialize_with = "unique")]
    pub grammars: IndexMap<String, Grammar>,
    #[serde(default, deserialize_with = "unique")]
    pub schemas: IndexMap<String, Value>,
    #[serde(deserialize_with = "unique")]
    pub endpoints: IndexMap<String, Endpoint>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Info {
    pub title: String,
    pub version: String,
    pub description: String,
    pub docs_url: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub value_max_length: u32,
    /// Active keys one account may hold; optional for catalogues without accounts.
    #[serde(default)]
    pub keys_per_account: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Billing {
    pub currency: String,
    /// Price of one credit bought outside a pack, in millionths of the currency unit.
    pub list_price_micro: u64,
    #[serde(deserialize_with = "unique")]
    pub packs: IndexMap<String, PackDef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackDef {
    pub credits: u64,
    /// Price in hundredths of the currency unit.
    pub price_cents: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorDef {
    pub status: u16,
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grammar {
    pub description: String,
    pub pattern: String,
    pub max_length: Option<u32>,
    pub parse: Option<String>,
    pub example: String,
    #[serde(default)]
    pub valid: Vec<String>,
    #[serde(default)]
    pub invalid: Vec<String>,
    #[serde(default)]
    pub invalid_by_parser: Vec<String>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Delete,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Auth {
    None,
    ApiKey,
    Session,
    ApiKeyOrSession,
    OwnerKey,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub method: Option<Method>,
    pub platform: Option<String>,
    pub credits: Option<u32>,
    pub auth: Option<Auth>,
    pub handler: Option<String>,
    pub summary: String,
    pub description: Option<String>,
    #[serde(default, deserialize_with = "unique")]
    pub params: IndexMap<String, Param>,
    #[serde(default, deserialize_with = "unique")]
    pub path_params: IndexMap<String, Param>,
    #[serde(default, deserialize_with = "unique_opt")]
    pub body: Option<IndexMap<String, Param>>,
    #[serde(default)]
    pub one_of: Vec<Vec<String>>,
    /// Cross-parameter rules: "X only with Y = values" and "X only with Y present".
    #[serde(default)]
    pub requires: Vec<Requirement>,
    /// Groups of parameters of which at most one may be given.
    #[serde(default)]
    pub exclusive: Vec<Vec<String>>,
    pub response: Option<String>,
    #[serde(default)]
    pub errors: Vec<String>,
}

/// `{ if: [after, before], then: { sort: [new] } }`: when any parameter of `if` is given, every
/// parameter of `then` must hold one of its values (its default counts), or be given (`present`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    #[serde(rename = "if")]
    pub when: Vec<String>,
    #[serde(deserialize_with = "unique")]
    pub then: IndexMap<String, Condition>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Condition {
    /// The allowed values.
    Values(Vec<Scalar>),
    /// A word: only `present` is known.
    Word(String),
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ParamType {
    #[default]
    String,
    Integer,
    Boolean,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum EnumSpec {
    Shared(String),
    Inline(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Str(String),
}

impl Scalar {
    pub fn as_text(&self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Str(s) => s.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    #[serde(default)]
    pub required: bool,
    #[serde(rename = "type", default)]
    pub ty: ParamType,
    pub grammar: Option<String>,
    pub pattern: Option<String>,
    #[serde(rename = "enum")]
    pub choices: Option<EnumSpec>,
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
    pub min_length: Option<u32>,
    pub max_length: Option<u32>,
    pub default: Option<Scalar>,
    pub description: Option<String>,
    pub example: Option<Scalar>,
}
