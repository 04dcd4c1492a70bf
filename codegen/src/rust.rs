//! Emits the Rust side: typed requests with their parsers (for `adapters`), and the routes, body types
//! and error codes (for `server`). Both files go to `OUT_DIR` and are pulled in with `include!`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::check::{Api, Kind, Needed, OpKind, Operation, PARSERS, ParamSpec};
use crate::model::Auth;
use crate::names;

fn ident(s: &str) -> syn::Ident {
    syn::parse_str::<syn::Ident>(s)
        .unwrap_or_else(|_| format_ident!("r#{}", s.trim_start_matches("r#")))
}

fn grammar_static(name: &str) -> syn::Ident {
    format_ident!("{}", names::screaming(name))
}

fn opt_lit(s: &Option<String>) -> TokenStream {
    match s {
        Some(s) => quote!(Some(#s)),
        None => quote!(None),
    }
}

/// The Rust type of a parameter's value, before optionality.
fn value_type(api: &Api, op: &Operation, p: &ParamSpec, root: &TokenStream) -> TokenStream {
    match &p.kind {
        Kind::Text { grammar } => {
            let parser = grammar
                .as_ref()
                .and_then(|g| api.grammars.iter().find(|x| &x.name == g))
                .and_then(|g| g.parser.as_ref());
            match parser.and_then(|name| PARSERS.iter().find(|(n, _)| n == name)) {
                Some((_, ty)) => {
                    let ty: syn::Type =
                        syn::parse_str(ty).expect("parser types are valid Rust types");
                    quote!(#ty)
                }
                None => quote!(String),
            }
        }
        Kind::Integer { min, max } => {
            if *min >= 0 && *max <= u32::MAX as i64 {
                quote!(u32)
            } else {
                quote!(i64)
            }
        }
        Kind::Boolean => quote!(bool),
        Kind::Choice {
            shared: Some(name), ..
        } => {
            let t = format_ident!("{}", names::camel(name));
            quote!(#root #t)
        }
        Kind::Choice { shared: None, .. } => {
            let t = inline_enum_name(op, p);
            quote!(#t)
        }
    }
}

fn inline_enum_name(op: &Operation, p: &ParamSpec) -> syn::Ident {
    format_ident!("{}{}", op_struct_name(op), names::camel(&p.name))
}

fn op_struct_name(op: &Operation) -> String {
    match &op.kind {
        OpKind::Platform { platform, .. } => names::platform_struct(&op.path, platform),
        OpKind::Account { .. } => format!("{}Input", names::camel(&op.ident)),
    }
}

fn choice_enum(
    rt: &TokenStream,
    name: &syn::Ident,
    values: &[String],
    default: Option<&str>,
    doc: &str,
) -> TokenStream {
    let default_idx = default
        .and_then(|d| values.iter().position(|v| v == d))
        .unwrap_or(0);
    let variants = values.iter().enumerate().map(|(i, v)| {
        let var = format_ident!("{}", names::camel(v));
        let d = if i == default_idx {
            quote!(#[default])
        } else {
            quote!()
        };
        let doc = format!("`{v}`");
        quote!(#[doc = #doc] #d #var)
    });
    let arms = values.iter().enumerate().map(|(i, v)| {
        let var = format_ident!("{}", names::camel(v));
        quote!(#i => Self::#var)
    });
    let first = format_ident!("{}", names::camel(&values[0]));
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum #name { #(#variants,)* }
        impl #rt::Choice for #name {
            const VALUES: &'static [&'static str] = &[#(#values),*];
            fn from_index(i: usize) -> Self {
                match i { #(#arms,)* _ => Self::#first }
            }
            fn as_str(self) -> &'static str {
                Self::VALUES[self as usize]
            }
        }
    }
}

/// Statements that read each parameter into a local of its final type, recording violations.
fn field_reads(
    api: &Api,
    op: &Operation,
    params: &[ParamSpec],
    root: &TokenStream,
) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| {
            let name = &p.name;
            let local = format_ident!("v_{}", p.name);
            let default = opt_lit(&p.default);
            let (min_len, max_len) = (p.min_length, p.max_length);
            let read = match &p.kind {
                Kind::Text { grammar } => {
                    let g = grammar.as_ref().map(|g| {
                        let s = grammar_static(g);
                        quote!(Some(&grammar::#s))
                    });
                    let g = g.unwrap_or(quote!(None));
                    let parser = grammar
                        .as_ref()
                        .and_then(|g| api.grammars.iter().find(|x| &x.name == g))
                        .and_then(|g| g.parser.as_ref());
                    match parser {
                        Some(parser) => {
                            let f = format_ident!("{}", parser);
                            quote!(p.parsed(#name, #min_len, #max_len, #g, crate::request::parse::#f, #default))
                        }
                        None => quote!(p.text(#name, #min_len, #max_len, #g, #default)),
                    }
                }
                Kind::Integer { min, max } => {
                    let ty = value_type(api, op, p, root);
                    quote!(p.integer::<#ty>(#name, #min, #max, #default))
                }
                Kind::Boolean => quote!(p.boolean(#name, #default)),
                Kind::Choice { .. } => {
                    let ty = value_type(api, op, p, root);
                    let max_len = api.value_max_length;
                    quote!(p.choice::<#ty>(#name, #max_len, #default))
                }
            };
            if p.required {
                quote!(let #local = #read; let #local = p.required(#name, #local);)
            } else if p.default.is_some() {
                quote!(let #local = #read.unwrap_or_default();)
            } else {
                quote!(let #local = #read;)
            }
        })
        .collect()
}

fn struct_fields(
    api: &Api,
    op: &Operation,
    params: &[ParamSpec],
    root: &TokenStream,
) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| {
            let f = ident(&names::field(&p.name));
            let ty = value_type(api, op, p, root);
            let doc = param_doc(p);
            if p.required || p.default.is_some() {
                quote!(#[doc = #doc] pub #f: #ty)
            } else {
                quote!(#[doc = #doc] pub #f: Option<#ty>)
            }
        })
        .collect()
}

/// The catalogue's `limits` and `billing`, declared once there and read by the request runtime,
/// the accounts code and the billing code.
fn constants(api: &Api) -> TokenStream {
    let value_max = api.value_max_length;
    let keys = api.keys_per_account.map(|n| {
        quote! {
            /// `limits.keys_per_account`: active keys one account may hold.
            pub const KEYS_PER_ACCOUNT: u32 = #n;
        }
    });
    let billing = api.billing.as_ref().map(|b| {
        let currency = &b.currency;
        let list = b.list_price_micro;
        let n = b.packs.len();
        let packs = b.packs.iter().map(|p| {
            let (id, credits, price) = (&p.id, p.credits, p.price_cents);
            quote!(Pack { id: #id, credits: #credits, price_cents: #price })
        });
        quote! {
            /// A credit pack of `billing.packs`.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct Pack {
                pub id: &'static str,
                pub credits: u64,
                /// Price in hundredths of `CURRENCY`.
                pub price_cents: u64,
            }

            /// `billing.currency`.
            pub const CURRENCY: &str = #currency;
            /// `billing.list_price_micro`: one credit at list price, in millionths of `CURRENCY`.
            pub const LIST_PRICE_MICRO: u64 = #list;
            /// `billing.packs`, in catalogue order.
            pub const PACKS: [Pack; #n] = [#(#packs),*];
        }
    });
    quote! {
        /// `limits` of the catalogue.
        pub mod limits {
            /// `limits.value_max_length`: the longest value a parameter without its own limit takes.
            pub const VALUE_MAX_LENGTH: u32 = #value_max;
            #keys
        }

        #billing
    }
}

fn param_doc(p: &ParamSpec) -> String {
    let mut doc = if p.description.is_empty() {
        format!("`{}`", p.name)
    } else {
        p.description.clone()
    };
    if let Some(d) = &p.default {
        doc.push_str(&format!(" (default `{d}`)"));
    }
    doc
}

fn field_inits(params: &[ParamSpec]) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| {
            let f = ident(&names::field(&p.name));
            let local = format_ident!("v_{}", p.name);
            quote!(#f: #local)
        })
        .collect()
}

fn param_meta(p: &ParamSpec) -> TokenStream {
    let name = &p.name;
    let required = p.required;
    let default = opt_lit(&p.default);
    let example = &p.example;
    let (min_length, max_length) = (p.min_length, p.max_length);
    let kind = match &p.kind {
        Kind::Text { grammar: Some(g) } => {
            let s = grammar_static(g);
            quote!(crate::request::ParamKind::Text(Some(&grammar::#s)))
        }
        Kind::Text { grammar: None } => quote!(crate::request::ParamKind::Text(None)),
        Kind::Integer { min, max } => {
            quote!(crate::request::ParamKind::Integer { min: #min, max: #max })
        }
        Kind::Boolean => quote!(crate::request::ParamKind::Boolean),
        Kind::Choice { values, .. } => quote!(crate::request::ParamKind::Choice(&[#(#values),*])),
    };
    quote! {
        crate::request::ParamMeta {
            name: #name, required: #required, kind: #kind, default: #default, example: #example,
            min_length: #min_length, max_length: #max_length,
        }
    }
}

fn needed(rt: &TokenStream, need: &Needed) -> TokenStream {
    match need {
        Needed::Present => quote!(#rt::Needed::Present),
        Needed::OneOf(values) => quote!(#rt::Needed::OneOf(&[#(#values),*])),
    }
}

/// The checks of the cross-parameter rules, run by the reader of the values they name (after every
/// value is read, so a rule is judged only on values that are themselves valid).
fn rule_checks(rt: &TokenStream, op: &Operation, fields: &[ParamSpec]) -> Vec<TokenStream> {
    let mut out = Vec::new();
    for rule in &op.requires {
        let when = &rule.when;
        for (name, need) in &rule.then {
            let need = needed(rt, need);
            let default = opt_lit(
                &fields
                    .iter()
                    .find(|p| &p.name == name)
                    .and_then(|p| p.default.clone()),
            );
            out.push(quote!(p.requires(&[#(#when),*], #name, #need, #default);));
        }
    }
    for group in &op.exclusive {
        out.push(quote!(p.exclusive(&[#(#group),*]);));
    }
    out
}

/// The rules as data in the endpoint table.
fn rule_metas(rt: &TokenStream, op: &Operation) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let requires = op
        .requires
        .iter()
        .map(|rule| {
            let when = &rule.when;
            let then = rule.then.iter().map(|(name, need)| {
                let need = needed(rt, need);
                quote!((#name, #need))
            });
            quote!(#rt::RuleMeta { when: &[#(#when),*], then: &[#(#then),*] })
        })
        .collect();
    let exclusive = op.exclusive.iter().map(|g| quote!(&[#(#g),*])).collect();
    (requires, exclusive)
}

fn grammars(api: &Api) -> TokenStream {
    let statics = api.grammars.iter().map(|g| {
        let s = grammar_static(&g.name);
        let (name, desc, pat) = (&g.name, &g.description, &g.pattern);
        let max = g.max_length.unwrap_or(api.value_max_length);
        let (valid, invalid, by_parser) = (&g.valid, &g.invalid, &g.invalid_by_parser);
        let parser_check = match &g.parser {
            Some(p) => {
                let f = format_ident!("{}", p);
                quote!(Some(|v: &str| crate::request::parse::#f(v).map(drop)))
            }
            None => quote!(None),
        };
        let doc = format!("{desc}: `{pat}`");
        quote! {
            #[doc = #doc]
            pub static #s: Grammar = Grammar::new(#name, #desc, #pat, #max, &[#(#valid),*], &[#(#invalid),*], &[#(#by_parser),*], #parser_check);
        }
    });
    let all = api.grammars.iter().map(|g| grammar_static(&g.name));
    let n = api.grammars.len();
    quote! {
        /// The shared value grammars of the catalogue (and the inline patterns of single parameters).
        pub mod grammar {
            use crate::request::Grammar;
            #(#statics)*
            pub static ALL: [&Grammar; #n] = [#(&#all),*];
        }
    }
}

fn shared_enums(api: &Api) -> TokenStream {
    let items = api.enums.iter().map(|e| {
        let name = format_ident!("{}", names::camel(&e.name));
        choice_enum(
            &quote!(crate::request),
            &name,
            &e.values,
            None,
            &format!("The shared `{}` enum.", e.name),
        )
    });
    quote!(#(#items)*)
}

/// One module per platform with one request struct per endpoint, plus the endpoint table, the
/// `Request` sum type and the parse entry point.
pub fn typed_requests(api: &Api) -> TokenStream {
    let grammar_mod = grammars(api);
    let enums = shared_enums(api);
    let platform_ops: Vec<&Operation> = api
        .operations
        .iter()
        .filter(|o| o.platform().is_some())
        .collect();

    let mut modules = Vec::new();
    for (platform, kind) in &api.platforms {
        let ops: Vec<&&Operation> = platform_ops
            .iter()
            .filter(|o| o.platform().map(|p| p.0) == Some(platform))
            .collect();
        let items = ops.iter().map(|op| {
            let sname = format_ident!("{}", op_struct_name(op));
            let variant = format_ident!("{}", names::camel(&op.ident));
            let inline_enums = op.params.iter().filter_map(|p| match &p.kind {
                Kind::Choice {
                    shared: None,
                    values,
                } => {
                    let doc = format!("Values of `{}` on `{}`.", p.name, op.path);
                    Some(choice_enum(
                        &quote!(crate::request),
                        &inline_enum_name(op, p),
                        values,
                        p.default.as_deref(),
                        &doc,
                    ))
                }
                _ => None,
            });
            let root = quote!(super::);
            let fields = struct_fields(api, op, &op.params, &root);
            let reads = field_reads(api, op, &op.params, &root);
            let inits = field_inits(&op.params);
            let accepted: Vec<&str> = op.params.iter().map(|p| p.name.as_str()).collect();
            let one_of = op.one_of.iter().map(|g| quote!(p.one_of(&[#(#g),*]);));
            let rules = rule_checks(&quote!(crate::request), op, &op.params);
            let doc = format!("`GET {}`: {}", op.path, op.summary);
            quote! {
                #(#inline_enums)*
                #[doc = #doc]
                #[derive(Debug, Clone, PartialEq)]
                pub struct #sname { #(#fields,)* }
                impl #sname {
                    pub const ENDPOINT: super::EndpointId = super::EndpointId::#variant;
                    /// Parses and validates a raw query string, reporting every violation at once.
                    pub fn from_query(raw: &str) -> Result<Self, Violations> {
                        let mut p = Params::query(raw, &[#(#accepted),*]);
                        #(#reads)*
                        #(#one_of)*
                        #(#rules)*
                        p.finish()?;
                        Ok(Self { #(#inits,)* })
                    }
                }
            }
        });
        let handlers = handler_table(platform, &ops);
        let m = format_ident!("{}", platform);
        let doc = format!("Requests of the `{platform}` platform ({kind}).");
        modules.push(quote! {
            #[doc = #doc]
            pub mod #m {
                #![allow(unused_imports)]
                use super::grammar;
                use crate::request::{Params, Violations, DateBound, RepoRef, IssueRef};
                #(#items)*
                #handlers
            }
        });
    }

    let variants: Vec<syn::Ident> = platform_ops
        .iter()
        .map(|o| format_ident!("{}", names::camel(&o.ident)))
        .collect();
    let types: Vec<TokenStream> = platform_ops
        .iter()
        .map(|o| {
            let m = format_ident!("{}", o.platform().map(|p| p.0).unwrap_or_default());
            let s = format_ident!("{}", op_struct_name(o));
            quote!(#m::#s)
        })
        .collect();
    let metas = platform_ops.iter().map(|op| {
        let (platform, credits) = op.platform().unwrap_or_default();
        let path = &op.path;
        let summary = &op.summary;
        let example = op.example_request();
        let params = op.params.iter().map(param_meta);
        let groups = op.one_of.iter().map(|g| quote!(&[#(#g),*]));
        let (requires, exclusive) = rule_metas(&quote!(crate::request), op);
        quote! {
            crate::request::EndpointMeta {
                path: #path, platform: #platform, credits: #credits, summary: #summary,
                example: #example, params: &[#(#params),*], one_of: &[#(#groups),*],
                requires: &[#(#requires),*], exclusive: &[#(#exclusive),*],
            }
        }
    });
    let cursor_arms: Vec<TokenStream> = platform_ops
        .iter()
        .zip(&variants)
        .filter(|(op, _)| op.params.iter().any(|p| p.name == "cursor" && !p.required))
        .map(|(_, v)| quote!(Request::#v(r) => r.cursor.as_deref(),))
        .collect();
    let instance_arms: Vec<TokenStream> = platform_ops
        .iter()
        .zip(&variants)
        .filter(|(op, _)| {
            op.params
                .iter()
                .any(|p| p.name == "instance" && !p.required)
        })
        .map(|(_, v)| quote!(Request::#v(r) => r.instance.as_deref(),))
        .collect();
    let dispatch = dispatch(api, &platform_ops);
    let api_version = &api.info.version;
    let n_platforms = api.platforms.len();
    let platform_names = api.platforms.iter().map(|(p, _)| p.as_str());
    let platform_kinds = api.platforms.iter().map(|(_, k)| k.as_str());
    let indices = 0..variants.len();
    let count = variants.len();
    let constants = constants(api);

    quote! {
        use crate::request::Violations;

        #grammar_mod
        #enums
        #(#modules)*

        /// `info.version` of the catalogue (the API version the document declares).
        pub const API_VERSION: &str = #api_version;

        #constants

        /// Every platform of the catalogue as (path segment, kind of platform), in catalogue order.
        pub static PLATFORMS: [(&str, &str); #n_platforms] = [#((#platform_names, #platform_kinds)),*];

        /// Every platform endpoint of the catalogue.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EndpointId { #(#variants,)* }

        impl EndpointId {
            pub const ALL: [EndpointId; #count] = [#(EndpointId::#variants),*];
            pub fn meta(self) -> &'static crate::request::EndpointMeta {
                &ENDPOINTS[self as usize]
            }
            /// Parses a raw query string into this endpoint's typed request.
            pub fn parse(self, raw_query: &str) -> Result<Request, Violations> {
                match self { #(EndpointId::#variants => #types::from_query(raw_query).map(Request::#variants),)* }
            }
        }

        /// The endpoint table: path, platform, price and parameter grammar, in catalogue order.
        pub static ENDPOINTS: [crate::request::EndpointMeta; #count] = [#(#metas),*];

        /// A validated request to any platform endpoint.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request { #(#variants(#types),)* }

        impl Request {
            pub fn endpoint(&self) -> EndpointId {
                match self { #(Request::#variants(_) => EndpointId::#variants,)* }
            }
            /// The client's pagination cursor, on endpoints that take one.
            pub fn cursor(&self) -> Option<&str> {
                match self {
                    #(#cursor_arms)*
                    _ => None,
                }
            }
            /// The host the client named (`instance`), on endpoints that take one: a source
            /// connects to it instead of its configured base URL.
            pub fn instance(&self) -> Option<&str> {
                match self {
                    #(#instance_arms)*
                    _ => None,
                }
            }
        }

        #dispatch

        const _: () = { #( assert!(EndpointId::#variants as usize == #indices); )* };
    }
}

fn slot_ident(op: &Operation) -> syn::Ident {
    let platform = op.platform().map(|p| p.0).unwrap_or_default();
    ident(&names::slot_field(&op.path, platform))
}

/// A platform's registration table: one typed handler slot per endpoint. A source fills the slots
/// of what it serves; everything else (its endpoint list, the chains, the docs table) is read from it.
fn handler_table(platform: &str, ops: &[&&Operation]) -> TokenStream {
    let rt = quote!(crate::slot);
    let fields = ops.iter().map(|op| {
        let f = slot_ident(op);
        let s = format_ident!("{}", op_struct_name(op));
        let doc = format!("`GET {}`", op.path);
        quote!(#[doc = #doc] pub #f: Option<#rt::Slot<#s>>)
    });
    let nones = ops.iter().map(|op| {
        let f = slot_ident(op);
        quote!(#f: None)
    });
    let doc = format!(
        "What one source of `{platform}` serves: a handler per endpoint, `None` where it serves none."
    );
    quote! {
        #[doc = #doc]
        pub struct Handlers { #(#fields,)* }
        impl Handlers {
            /// Serves nothing; a source's table starts from it (`..Handlers::NONE`).
            pub const NONE: Self = Self { #(#nones,)* };
        }
    }
}

/// Dispatch over every platform's table: which endpoints a source serves, whether a request is
/// one it takes, and the call itself, each one arm per endpoint.
fn dispatch(api: &Api, ops: &[&Operation]) -> TokenStream {
    let rt = quote!(crate::slot);
    let platforms: Vec<syn::Ident> = api
        .platforms
        .iter()
        .map(|(p, _)| format_ident!("{}", names::camel(p)))
        .collect();
    let modules: Vec<syn::Ident> = api
        .platforms
        .iter()
        .map(|(p, _)| format_ident!("{}", p))
        .collect();
    let platform_names: Vec<&str> = api.platforms.iter().map(|(p, _)| p.as_str()).collect();
    let arms = |body: &dyn Fn(&syn::Ident) -> TokenStream| -> Vec<TokenStream> {
        ops.iter()
            .map(|op| {
                let platform = op.platform().map(|p| p.0).unwrap_or_default();
                let pv = format_ident!("{}", names::camel(platform));
                let v = format_ident!("{}", names::camel(&op.ident));
                let f = slot_ident(op);
                let b = body(&f);
                quote!((Handlers::#pv(h), Request::#v(r)) => #b,)
            })
            .collect()
    };
    let slot_arms = ops.iter().map(|op| {
        let platform = op.platform().map(|p| p.0).unwrap_or_default();
        let pv = format_ident!("{}", names::camel(platform));
        let v = format_ident!("{}", names::camel(&op.ident));
        let f = slot_ident(op);
        quote!((Handlers::#pv(h), EndpointId::#v) => h.#f.as_ref().map(#rt::Slot::meta),)
    });
    let serves_arms = arms(&|f| quote!(h.#f.as_ref().is_some_and(|s| s.takes(r))));
    let fetch_arms = arms(&|f| quote!(h.#f.as_ref().map(|s| s.call(ctx, r))));
    quote! {
        /// A source's registration table, of the platform it serves.
        pub enum Handlers { #(#platforms(#modules::Handlers),)* }

        #[allow(unreachable_patterns)]
        impl Handlers {
            pub fn platform(&self) -> &'static str {
                match self { #(Handlers::#platforms(_) => #platform_names,)* }
            }
            /// The slot of `endpoint`, or `None` when this source does not serve it.
            pub fn slot(&self, endpoint: EndpointId) -> Option<#rt::SlotMeta> {
                match (self, endpoint) {
                    #(#slot_arms)*
                    _ => None,
                }
            }
            /// Whether the source serves this request (its endpoint, and the slot's condition).
            pub fn serves(&self, request: &Request) -> bool {
                match (self, request) {
                    #(#serves_arms)*
                    _ => false,
                }
            }
            /// Calls the handler of the request's endpoint; `None` when the source serves none.
            pub fn dispatch<'a>(&'a self, ctx: &'a #rt::Ctx<'a>, request: &'a Request) -> Option<#rt::Call<'a>> {
                match (self, request) {
                    #(#fetch_arms)*
                    _ => None,
                }
            }
        }
    }
}

fn auth_tokens(a: Auth) -> TokenStream {
    match a {
        Auth::None => quote!(crate::auth::Scheme::None),
        Auth::ApiKey => quote!(crate::auth::Scheme::ApiKey),
        Auth::Session => quote!(crate::auth::Scheme::Session),
        Auth::ApiKeyOrSession => quote!(crate::auth::Scheme::ApiKeyOrSession),
        Auth::OwnerKey => quote!(crate::auth::Scheme::OwnerKey),
    }
}

/// The server side: error codes, typed inputs of the account operations, and the router.
pub fn server(api: &Api, openapi_json: &str, openapi_30_json: &str) -> TokenStream {
    let codes: Vec<syn::Ident> = api
        .errors
        .iter()
        .map(|e| format_ident!("{}", names::camel(&e.name.to_lowercase())))
        .collect();
    let names_: Vec<&str> = api.errors.iter().map(|e| e.name.as_str()).collect();
    let statuses: Vec<u16> = api.errors.iter().map(|e| e.status).collect();
    let descs: Vec<&str> = api.errors.iter().map(|e| e.description.as_str()).collect();

    let mut inputs = Vec::new();
    let mut by_name = Vec::new();
    let mut routes = Vec::new();
    let mut route_list = Vec::new();
    for op in &api.operations {
        let path = &op.path;
        let method_name = format_ident!("{}", crate::check::method_str(op.method).to_lowercase());
        let method_str = crate::check::method_str(op.method);
        route_list.push(quote!((#method_str, #path)));
        match &op.kind {
            OpKind::Platform { .. } => {
                let v = format_ident!("{}", names::camel(&op.ident));
                routes.push(quote! {
                    .route(#path, axum::routing::#method_name(|state: axum::extract::State<crate::AppState>, req: axum::extract::Request| {
                        crate::platform::serve(state.0, adapters::api::EndpointId::#v, req)
                    }))
                });
            }
            OpKind::Account { auth, handler, .. } => {
                let input = format_ident!("{}", op_struct_name(op));
                let ident_str = op.ident.as_str();
                by_name.push(quote! {
                    #ident_str => Some((inputs::#input::EXAMPLE, |raw| inputs::#input::extract(raw).map(drop)))
                });
                let all: Vec<ParamSpec> = op
                    .path_params
                    .iter()
                    .chain(op.params.iter())
                    .chain(op.body.iter().flatten())
                    .cloned()
                    .collect();
                let root = quote!(adapters::api::);
                let fields = struct_fields(api, op, &all, &root);
                let inline_enums: Vec<TokenStream> = all
                    .iter()
                    .filter_map(|p| match &p.kind {
                        Kind::Choice {
                            shared: None,
                            values,
                        } => {
                            let doc =
                                format!("Values of `{}` on `{} {}`.", p.name, method_str, op.path);
                            Some(choice_enum(
                                &quote!(adapters::request),
                                &inline_enum_name(op, p),
                                values,
                                p.default.as_deref(),
                                &doc,
                            ))
                        }
                        _ => None,
                    })
                    .collect();
                let inits = field_inits(&all);
                let path_reads = field_reads(api, op, &op.path_params, &root);
                let path_names: Vec<&str> =
                    op.path_params.iter().map(|p| p.name.as_str()).collect();
                let query_reads = field_reads(api, op, &op.params, &root);
                let query_names: Vec<&str> = op.params.iter().map(|p| p.name.as_str()).collect();
                let body_reads = op
                    .body
                    .as_ref()
                    .map(|b| field_reads(api, op, b, &root))
                    .unwrap_or_default();
                let body_names: Vec<&str> =
                    op.body.iter().flatten().map(|p| p.name.as_str()).collect();
                let has_body = op.body.is_some();
                let one_of = op.one_of.iter().map(|g| quote!(p.one_of(&[#(#g),*]);));
                let rules = rule_checks(
                    &quote!(adapters::request),
                    op,
                    op.body.as_deref().unwrap_or(&[]),
                );
                let doc = format!("Input of `{} {}`: {}", method_str, op.path, op.summary);
                let h = format_ident!("{}", handler);
                let scheme = auth_tokens(*auth);
                let example = op.example_request();
                inputs.push(quote! {
                    #(#inline_enums)*
                    #[doc = #doc]
                    #[derive(Debug, Clone, PartialEq)]
                    pub struct #input { #(#fields,)* }
                    impl #input {
                        pub const HAS_BODY: bool = #has_body;
                        pub const EXAMPLE: &'static str = #example;
                        pub fn extract(raw: &crate::http::RawInput) -> Result<Self, adapters::request::Violations> {
                            let mut all = adapters::request::Violations::default();
                            let mut p = Params::path(&raw.path_params, &[#(#path_names),*]);
                            #(#path_reads)*
                            all.absorb(p.finish());
                            let mut p = Params::query(&raw.query, &[#(#query_names),*]);
                            #(#query_reads)*
                            all.absorb(p.finish());
                            let mut p = Params::body(raw.body.as_ref(), &[#(#body_names),*]);
                            #(#body_reads)*
                            #(#one_of)*
                            #(#rules)*
                            all.absorb(p.finish());
                            all.into_result()?;
                            Ok(Self { #(#inits,)* })
                        }
                    }
                });
                routes.push(quote! {
                    .route(#path, axum::routing::#method_name(|state: axum::extract::State<crate::AppState>, req: axum::extract::Request| {
                        crate::http::operation(state.0, req, #scheme, inputs::#input::HAS_BODY, |state, caller, raw| async move {
                            let input = inputs::#input::extract(&raw).map_err(|v| crate::error::ApiError::validation(v, inputs::#input::EXAMPLE))?;
                            crate::ops::#h(state, caller, input).await
                        })
                    }))
                });
            }
        }
    }
    let n_routes = route_list.len();
    let docs_url = &api.info.docs_url;

    quote! {
        /// Every `error.type` the service sends (spec section 7), with its HTTP status.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { #(#codes,)* }

        /// Base of `error.docs_url`; each code links to its own anchor.
        pub const DOCS_URL: &str = #docs_url;

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[#(ErrorCode::#codes),*];
            pub fn as_str(self) -> &'static str {
                match self { #(ErrorCode::#codes => #names_,)* }
            }
            pub fn status(self) -> u16 {
                match self { #(ErrorCode::#codes => #statuses,)* }
            }
            pub fn description(self) -> &'static str {
                match self { #(ErrorCode::#codes => #descs,)* }
            }
        }

        /// Typed inputs of the account, billing and status operations.
        pub mod inputs {
            #![allow(unused_imports)]
            use adapters::api::grammar;
            use adapters::request::{Params, DateBound, RepoRef, IssueRef};
            #(#inputs)*
        }

        /// Type-checks a raw input as the operation named `operation_id` would (its working example and
        /// the verdict of its generated `extract`), for tests and tools; `None` for a platform
        /// endpoint or an unknown name.
        pub fn operation_input(operation_id: &str) -> Option<(&'static str, fn(&crate::http::RawInput) -> Result<(), adapters::request::Violations>)> {
            match operation_id {
                #(#by_name,)*
                _ => None,
            }
        }

        /// Every route of the catalogue as (method, path), in catalogue order.
        pub const ROUTES: [(&str, &str); #n_routes] = [#(#route_list),*];

        /// The OpenAPI 3.1.0 document generated from the catalogue.
        pub const OPENAPI_JSON: &str = #openapi_json;
        /// The same document rendered as OpenAPI 3.0.3.
        pub const OPENAPI_30_JSON: &str = #openapi_30_json;

        /// The router of every catalogue route.
        pub fn catalogue_router() -> axum::Router<crate::AppState> {
            axum::Router::new() #(#routes)*
        }
    }
}

pub fn render(tokens: TokenStream) -> Result<String, String> {
    render_from(
        tokens,
        "spec/catalogue.yaml. Do not edit: change the catalogue",
    )
}

/// Formatted code under a header naming what it is generated from (`origin`).
pub fn render_from(tokens: TokenStream, origin: &str) -> Result<String, String> {
    let file: syn::File =
        syn::parse2(tokens).map_err(|e| format!("generated code does not parse: {e}"))?;
    Ok(format!(
        "// @generated by codegen from {origin}.\n\n{}",
        prettyplease::unparse(&file)
    ))
}
