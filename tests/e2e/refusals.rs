//! Every refusal comes before any credit is touched (issue 8), on SQLite and on PostgreSQL.
//!
//! An account with a balance of 0 sends, to every platform endpoint of the catalogue, requests that
//! are wrong by the request alone: a missing required parameter, an empty one-of group, numbers out
//! of range, values outside their grammar or enum, over-long and empty values, an unknown
//! parameter, a broken cross-parameter rule, a cursor the service did not issue and a fediverse
//! `instance` that is not a public host. Each answers 422 VALIDATION_ERROR naming the parameter,
//! never 402; the ledger gains no row and no hold is left; nothing reaches an upstream. Then the
//! account gets credits and the same requests get the same answers with the balance unchanged.
//!
//! Every source is enabled (pointed at the fake upstream, with a credential), so each endpoint that
//! any source serves has a chain and the cursor and host checks are reached. An endpoint no source
//! serves answers 501 NOT_CONFIGURED before it judges a cursor (there is nothing to resume): still
//! before any credit is touched.

use adapters::api::{ENDPOINTS, EndpointId};
use adapters::request::{EndpointMeta, Needed, ParamKind};
use serde_json::Value;

use crate::accounts_support::{Backend, Env, Options, admin, at, error_type, only_sources};
use crate::fake_upstream::FakeUpstream;
use crate::on_both_databases;
use crate::support::enc;

on_both_databases!(zero_balance_sweep);

const EMAIL: &str = "zero@example.com";

/// Hosts a client may not name: loopback and private addresses, this machine's names, a cloud
/// metadata name and a public-looking name that resolves to loopback (both pinned in the config).
const REFUSED_HOSTS: &[&str] = &[
    "localhost",
    "127.0.0.1",
    "10.0.0.1",
    "[::1]",
    "api.localhost",
    "metadata.google.internal",
    "evil.test",
];

/// A cursor this service did not issue: not base64 of anything it wrote, and one naming a source
/// that does not exist.
const FORGED_CURSORS: &[&str] = &["c2FtcGxl", "bm8uc3VjaC5zb3VyY2UKMQ"];

/// One invalid request and what its answer must say.
struct Case {
    endpoint: EndpointId,
    target: String,
    /// The parameter the 422 names; `None` when the endpoint has no source here (501).
    parameter: Option<&'static str>,
    what: String,
}

fn query(pairs: &[(&'static str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Required parameters and the first member of each one-of group, leaving out `skip`.
fn valid(e: &EndpointMeta, skip: &[&str]) -> Vec<(&'static str, String)> {
    e.params
        .iter()
        .filter(|p| p.required || e.one_of.iter().any(|g| g.first() == Some(&p.name)))
        .filter(|p| !skip.contains(&p.name))
        .map(|p| (p.name, p.example.to_string()))
        .collect()
}

fn with(
    pairs: &[(&'static str, String)],
    name: &'static str,
    value: String,
) -> Vec<(&'static str, String)> {
    let mut out: Vec<_> = pairs.iter().filter(|(k, _)| *k != name).cloned().collect();
    out.push((name, value));
    out
}

fn example(e: &EndpointMeta, name: &str) -> String {
    e.params
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.example.to_string())
        .expect("a rule names a parameter of its endpoint")
}

fn served_here(id: EndpointId) -> bool {
    adapters::platforms::all()
        .iter()
        .any(|s| s.meta().endpoints.contains(&id))
}

/// Every invalid request of the sweep.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for id in EndpointId::ALL {
        let e = id.meta();
        let base = valid(e, &[]);
        let mut add = |pairs: Vec<(&'static str, String)>, parameter, what: String| {
            out.push(Case {
                endpoint: id,
                target: format!("{}?{}", e.path, query(&pairs)),
                parameter,
                what,
            });
        };
        for p in e.params.iter().filter(|p| p.required) {
            let pairs = base.iter().filter(|(k, _)| *k != p.name).cloned().collect();
            add(
                pairs,
                Some(p.name),
                format!("missing required `{}`", p.name),
            );
        }
        for group in e.one_of {
            let pairs = base
                .iter()
                .filter(|(k, _)| !group.contains(k))
                .cloned()
                .collect();
            add(pairs, Some(group[0]), format!("empty one-of {group:?}"));
        }
        for p in e.params {
            let name = p.name;
            match p.kind {
                ParamKind::Integer { min, max } => {
                    for bad in [(min - 1).to_string(), (max + 1).to_string(), "ten".into()] {
                        let what = format!("`{name}` = {bad}");
                        add(with(&base, name, bad), Some(name), what);
                    }
                }
                ParamKind::Choice(_) => {
                    add(
                        with(&base, name, "bogus".into()),
                        Some(name),
                        format!("`{name}` outside its enum"),
                    );
                }
                ParamKind::Boolean => {
                    add(
                        with(&base, name, "yes".into()),
                        Some(name),
                        format!("`{name}` not a boolean"),
                    );
                }
                ParamKind::Text(grammar) => {
                    if let Some(bad) = grammar.and_then(|g| g.invalid.first()) {
                        add(
                            with(&base, name, bad.to_string()),
                            Some(name),
                            format!("`{name}` = {bad:?} outside its grammar"),
                        );
                    }
                    add(
                        with(&base, name, "a".repeat(p.max_length as usize + 1)),
                        Some(name),
                        format!("`{name}` over {} characters", p.max_length),
                    );
                }
            }
            add(
                with(&base, name, String::new()),
                Some(name),
                format!("`{name}` empty"),
            );
        }
        add(
            with(&base, "bogus_param", "1".into()),
            Some("bogus_param"),
            "unknown parameter".into(),
        );
        for rule in e.requires {
            for &when in rule.when {
                for &(then, needed) in rule.then {
                    let mut pairs = with(&valid(e, &[when, then]), when, example(e, when));
                    let Needed::OneOf(values) = needed else {
                        add(pairs, Some(when), format!("`{when}` without `{then}`"));
                        continue;
                    };
                    if let Some(ParamKind::Choice(all)) =
                        e.params.iter().find(|p| p.name == then).map(|p| &p.kind)
                        && let Some(other) = all.iter().find(|v| !values.contains(v))
                    {
                        pairs = with(&pairs, then, other.to_string());
                    }
                    add(pairs, Some(when), format!("`{when}` against `{then}`"));
                }
            }
        }
        for group in e.exclusive {
            let pairs = with(
                &with(&valid(e, group), group[0], example(e, group[0])),
                group[1],
                example(e, group[1]),
            );
            add(pairs, Some(group[1]), format!("{group:?} together"));
        }
        if e.params.iter().any(|p| p.name == "cursor") {
            // The unsigned form of earlier releases, `base64url(source id, newline, state)`, naming
            // each source that serves the endpoint, with a hostile state: refused by the signature
            // before the source could read it.
            let own_source: Vec<String> = adapters::platforms::all()
                .iter()
                .filter(|s| s.meta().endpoints.contains(&id))
                .map(|s| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .encode(format!("{}\n../../admin?x=1", s.meta().id))
                })
                .collect();
            for forged in FORGED_CURSORS
                .iter()
                .copied()
                .chain(own_source.iter().map(String::as_str))
            {
                let parameter = served_here(id).then_some("cursor");
                add(
                    with(&base, "cursor", forged.to_string()),
                    parameter,
                    format!("forged cursor {forged}"),
                );
            }
        }
        if e.params.iter().any(|p| p.name == "instance") {
            for host in REFUSED_HOSTS {
                add(
                    with(&base, "instance", host.to_string()),
                    Some("instance"),
                    format!("instance {host}"),
                );
            }
        }
    }
    out
}

/// Every source enabled on the fake upstream with a credential; two names pinned to addresses a
/// client may not reach.
fn config(up: &FakeUpstream) -> String {
    let tables: Vec<_> = adapters::platforms::all()
        .iter()
        .map(|s| at(s.meta().id, up.url("/up")).with("credential = \"test-credential\""))
        .collect();
    let top = "allow_private_hosts = false\n[sources.host_overrides]\n\"evil.test\" = [\"127.0.0.1\"]\n\"metadata.google.internal\" = [\"169.254.169.254\"]";
    only_sources(top, &tables)
}

async fn ledger_rows(env: &Env) -> i64 {
    let db = env.db.connect().await;
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM credit_entries WHERE account_id = (SELECT id FROM accounts WHERE email = $1)",
    )
    .bind(EMAIL)
    .fetch_one(&db.read)
    .await
    .expect("query");
    db.close().await;
    n
}

/// Sends every case; checks each answer; returns (status, error type, violations) per case.
async fn sweep(env: &Env, key: &str, cases: &[Case]) -> Vec<(u16, String, Value)> {
    let mut answers = Vec::with_capacity(cases.len());
    for case in cases {
        let (status, body) = env.get(&case.target, &[("x-api-key", key)]).await;
        let context = format!(
            "{} ({}): {}\n{body}",
            case.endpoint.meta().path,
            case.what,
            case.target
        );
        assert_eq!(body["credits_used"], 0, "{context}");
        match case.parameter {
            Some(parameter) => {
                assert_eq!(
                    (status.as_u16(), error_type(&body)),
                    (422, "VALIDATION_ERROR"),
                    "{context}"
                );
                let named = body["error"]["violations"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| v["parameter"] == parameter);
                assert!(named, "no violation names `{parameter}`: {context}");
                assert!(
                    body["error"]["message"]
                        .as_str()
                        .unwrap_or("")
                        .contains(parameter),
                    "the message names `{parameter}`: {context}"
                );
            }
            None => assert_eq!(
                (status.as_u16(), error_type(&body)),
                (501, "NOT_CONFIGURED"),
                "{context}"
            ),
        }
        answers.push((
            status.as_u16(),
            error_type(&body).to_string(),
            body["error"]["violations"].clone(),
        ));
    }
    answers
}

async fn zero_balance_sweep(b: Backend) {
    let up = FakeUpstream::start().await;
    let opts = Options {
        limits: "rate_per_second = 100000.0\nburst = 100000\nin_flight = 100000\n".into(),
        extra: config(&up),
        ..Options::default()
    };
    let upstream = up.url("/up");
    let Some(env) = Env::start_with(b, opts, upstream, up).await else {
        return;
    };
    admin(
        &env.db,
        &["create-account", "--email", EMAIL, "--credits", "0"],
    );
    let key = admin(&env.db, &["create-key", "--email", EMAIL])
        .trim()
        .to_string();
    let opening = ledger_rows(&env).await;
    assert!(opening <= 1, "at most the opening grant: {opening} rows");

    let cases = cases();
    let kinds = |needle: &str| cases.iter().filter(|c| c.what.contains(needle)).count();
    assert!(cases.len() > 500, "only {} cases", cases.len());
    for (needle, at_least) in [
        ("missing required", 50),
        ("empty one-of", 3),
        ("outside its grammar", 50),
        ("unknown parameter", ENDPOINTS.len()),
        ("against `sort`", 2),
        ("together", 2),
        ("forged cursor", 2 * 10),
        ("instance", 2 * REFUSED_HOSTS.len()),
    ] {
        assert!(kinds(needle) >= at_least, "{needle}: {}", kinds(needle));
    }
    let served_cursor_cases = cases
        .iter()
        .filter(|c| c.what.starts_with("forged cursor") && c.parameter.is_some())
        .count();
    assert!(
        served_cursor_cases >= 2 * 8,
        "forged cursors reach the cursor check on served endpoints: {served_cursor_cases}"
    );

    // A balance of 0: each is its 422, never 402, and nothing is written to the ledger.
    let first = sweep(&env, &key, &cases).await;
    assert_eq!(
        ledger_rows(&env).await,
        opening,
        "no ledger row for a refusal"
    );
    assert_eq!(env.stored_balance(EMAIL).await, 0);
    env.check_ledger(true).await;
    assert!(
        env.up.seen().is_empty(),
        "a refused request reached the upstream: {:?}",
        env.up.seen()
    );

    // With credits: the same answers, and the balance does not move.
    env.grant(EMAIL, 100).await;
    let granted = ledger_rows(&env).await;
    assert_eq!(granted, opening + 1, "the grant is one row");
    let second = sweep(&env, &key, &cases).await;
    for ((case, a), b) in cases.iter().zip(&first).zip(&second) {
        assert_eq!(a, b, "{} ({}) answered differently", case.target, case.what);
    }
    assert_eq!(env.stored_balance(EMAIL).await, 100);
    assert_eq!(
        ledger_rows(&env).await,
        granted,
        "no ledger row for a refusal"
    );
    assert!(env.up.seen().is_empty(), "{:?}", env.up.seen());
    env.finish(&[&key]).await;
}
