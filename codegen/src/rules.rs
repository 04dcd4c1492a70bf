//! The rules a violation can name (`error.violations[].rule`), listed once. The runtime's `Rule`
//! enum (`adapters::request::Rule`) and the OpenAPI schema of a violation are both emitted from
//! this list, so the wire names cannot drift from the documented ones.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::names;

/// Wire name and meaning of each rule, in the order the schema lists them.
pub const RULES: &[(&str, &str)] = &[
    ("required", "a required parameter is missing"),
    (
        "one_of",
        "none, or more than one, of a one-of group is given",
    ),
    (
        "unknown_parameter",
        "a parameter the endpoint does not take",
    ),
    ("repeated", "a parameter given more than once"),
    ("empty", "a parameter given without a value"),
    ("min_length", "a value shorter than its minimum"),
    ("max_length", "a value longer than its maximum"),
    ("pattern", "a value that does not match its grammar"),
    (
        "format",
        "a value that cannot be read (encoding, typed parser, a cursor not issued here)",
    ),
    ("integer", "a value that is not an integer"),
    ("minimum", "a number below its minimum"),
    ("maximum", "a number above its maximum"),
    ("boolean", "a value that is not `true` or `false`"),
    ("enum", "a value outside its list of choices"),
    ("type", "a body field of the wrong JSON type"),
    ("body", "a body that is not a JSON object"),
    (
        "requires",
        "given without the value or parameter a catalogue rule needs beside it",
    ),
    (
        "exclusive",
        "given together with a parameter it cannot be combined with",
    ),
    (
        "refused",
        "valid by every rule of the request, but the service will not serve it (a host that is not public)",
    ),
];

/// The wire names, for the schema's `enum`.
pub fn names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|(name, _)| *name)
}

/// The runtime's `Rule` enum: one variant per rule, serialised as its wire name.
pub fn rust() -> TokenStream {
    let variants: Vec<_> = RULES
        .iter()
        .map(|(name, _)| format_ident!("{}", names::camel(name)))
        .collect();
    let docs = RULES
        .iter()
        .map(|(name, meaning)| format!("`{name}`: {meaning}."));
    let wire: Vec<&str> = names().collect();
    let as_str = variants
        .iter()
        .zip(&wire)
        .map(|(v, name)| quote!(Rule::#v => #name));
    quote! {
        /// The rule a violation broke (`error.violations[].rule`), generated from
        /// `codegen::rules::RULES`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        pub enum Rule {
            #(#[doc = #docs] #[serde(rename = #wire)] #variants,)*
        }

        impl Rule {
            /// Every rule, in the order the schema lists them.
            pub const ALL: &'static [Rule] = &[#(Rule::#variants,)*];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self { #(#as_str,)* }
            }
        }

        impl std::fmt::Display for Rule {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    }
}
