//! A broken catalogue must fail the build with a message naming the endpoint (or grammar) and the
//! field. Each case breaks the small fixture catalogue in one place and checks the message.

const MINI: &str = include_str!("fixtures/mini.yaml");

/// The fixture with `from` replaced by `to`; panics if `from` is not in it, so a fixture edit
/// cannot silently turn a case into a no-op.
fn broken(from: &str, to: &str) -> String {
    assert!(MINI.contains(from), "fixture no longer contains {from:?}");
    MINI.replacen(from, to, 1)
}

/// Loads `yaml`, expects failure, and returns every problem joined for matching.
fn problems(yaml: &str) -> Vec<String> {
    match codegen::load_str(yaml) {
        Ok(_) => panic!("the broken catalogue was accepted"),
        Err(p) => p,
    }
}

/// Asserts one problem mentions all of `parts` (endpoint, field, what is wrong).
fn assert_problem(problems: &[String], parts: &[&str]) {
    assert!(
        problems
            .iter()
            .any(|p| parts.iter().all(|part| p.contains(part))),
        "no problem mentions all of {parts:?}; got:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_fixture_itself_loads() {
    let api = codegen::load_str(MINI).expect("fixture is valid");
    // search, item, the test-only echo (the two-edit walk-through) and ping.
    assert_eq!(api.operations.len(), 4);
    let search = &api.operations[0];
    assert_eq!(
        search.requires.len(),
        1,
        "the fixture declares a cross-parameter rule"
    );
    assert_eq!(search.exclusive, [["query", "type"]]);
}

#[test]
fn unknown_grammar() {
    let p = problems(&broken(
        "id: { required: true, grammar: slug }",
        "id: { required: true, grammar: nope }",
    ));
    assert_problem(
        &p,
        &[
            "endpoint `GET /v1/demo/item`",
            "field `params.id`",
            "unknown grammar `nope`",
        ],
    );
}

#[test]
fn duplicate_path_through_method_key() {
    let yaml = broken(
        "  POST /v1/ping:",
        "  GET /v1/demo/item:\n    platform: demo\n    credits: 1\n    summary: again\n  POST /v1/ping:",
    );
    assert_problem(
        &problems(&yaml),
        &[
            "endpoint `GET /v1/demo/item`",
            "field `path`",
            "declared twice",
        ],
    );
}

#[test]
fn duplicate_path_as_repeated_key() {
    let yaml = broken(
        "  POST /v1/ping:",
        "  /v1/demo/item:\n    platform: demo\n    credits: 1\n    summary: again\n  POST /v1/ping:",
    );
    // YAML maps would silently keep the last entry; the loader refuses the repeat instead.
    assert_problem(
        &problems(&yaml),
        &["endpoints", "`/v1/demo/item` is declared twice"],
    );
}

#[test]
fn integer_default_outside_its_range() {
    let p = problems(&broken(
        "limit: { type: integer, minimum: 1, maximum: 10, default: 5 }",
        "limit: { type: integer, minimum: 1, maximum: 10, default: 11 }",
    ));
    assert_problem(
        &p,
        &[
            "endpoint `GET /v1/demo/search`",
            "field `params.limit`",
            "default `11`",
            "1..=10",
        ],
    );
}

#[test]
fn enum_default_not_among_the_values() {
    let p = problems(&broken(
        "sort: { enum: [new, top], default: new }",
        "sort: { enum: [new, top], default: old }",
    ));
    assert_problem(
        &p,
        &[
            "endpoint `GET /v1/demo/search`",
            "field `params.sort`",
            "default `old`",
        ],
    );
}

#[test]
fn bad_inline_regex() {
    let p = problems(&broken(
        "type: { pattern: '^[xy]$', example: x }",
        "type: { pattern: '^[xy$', example: x }",
    ));
    assert_problem(
        &p,
        &[
            "endpoint `GET /v1/demo/search`",
            "field `params.type`",
            "does not compile",
        ],
    );
}

#[test]
fn bad_grammar_regex() {
    let p = problems(&broken("pattern: '^[a-z]{2,8}$'", "pattern: '^[a-z]{2,8$'"));
    assert_problem(
        &p,
        &["grammar `slug`", "field `pattern`", "does not compile"],
    );
}

#[test]
fn unanchored_pattern() {
    let p = problems(&broken("pattern: '^[a-z]{2,8}$'", "pattern: '[a-z]{2,8}'"));
    assert_problem(&p, &["grammar `slug`", "field `pattern`", "anchored"]);
}

#[test]
fn grammar_examples_contradict_the_pattern() {
    let p = problems(&broken("valid: [ab, abcdefgh]", "valid: [ab, abcdefghi]"));
    assert_problem(&p, &["grammar `slug`", "field `valid`", "`abcdefghi`"]);
    let p = problems(&broken("invalid: [a, abcdefghi, AB]", "invalid: [a, abc]"));
    assert_problem(&p, &["grammar `slug`", "field `invalid`", "`abc`"]);
    let p = problems(&broken(
        "invalid_by_parser: ['2023-02-29']",
        "invalid_by_parser: [d7]",
    ));
    assert_problem(&p, &["grammar `when`", "field `invalid_by_parser`", "`d7`"]);
}

#[test]
fn unknown_parser() {
    let p = problems(&broken("parse: date_bound", "parse: moon_phase"));
    assert_problem(
        &p,
        &[
            "grammar `when`",
            "field `parse`",
            "unknown parser `moon_phase`",
        ],
    );
}

#[test]
fn one_of_member_that_is_not_a_parameter() {
    let p = problems(&broken("- [query, slug]", "- [query, slugg]"));
    assert_problem(
        &p,
        &[
            "endpoint `GET /v1/demo/search`",
            "field `one_of[0]`",
            "`slugg` is not a parameter",
        ],
    );
}

#[test]
fn platform_price_out_of_range() {
    let p = problems(&broken("credits: 2", "credits: 9"));
    assert_problem(
        &p,
        &[
            "endpoint `GET /v1/demo/search`",
            "field `credits`",
            "1 to 5",
        ],
    );
}

#[test]
fn unknown_error_code() {
    let p = problems(&broken(
        "errors: [VALIDATION_ERROR]",
        "errors: [VALIDATION_ERROR, NOPE]",
    ));
    assert_problem(
        &p,
        &["endpoint `POST /v1/ping`", "field `errors`", "`NOPE`"],
    );
}

#[test]
fn unknown_field_in_an_endpoint() {
    let p = problems(&broken(
        "    summary: One demo item",
        "    sumary: One demo item",
    ));
    assert_problem(&p, &["/v1/demo/item", "sumary"]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let yaml = broken("credits: 2", "credits: 9").replacen(
        "id: { required: true, grammar: slug }",
        "id: { required: true, grammar: nope }",
        1,
    );
    let p = problems(&yaml);
    assert_problem(&p, &["field `credits`"]);
    assert_problem(&p, &["field `params.id`"]);
}

#[test]
fn repeated_parameter_key() {
    let p = problems(&broken(
        "      flag: { type: boolean, default: false }",
        "      flag: { type: boolean, default: false }\n      flag: { type: boolean, default: true }",
    ));
    assert_problem(
        &p,
        &["/v1/demo/search", "params", "`flag` is declared twice"],
    );
}

#[test]
fn stray_key_in_a_response_schema() {
    // `description: a, b` in a YAML flow mapping splits into a stray key `b`.
    let p = problems(&broken(
        "properties: { ok: { const: true } }",
        "properties: { ok: { const: true, description: yes, really } }",
    ));
    assert_problem(
        &p,
        &[
            "schema `Pong`",
            "properties.ok.really",
            "not a JSON Schema keyword",
        ],
    );
}

const SEARCH: &str = "endpoint `GET /v1/demo/search`";

#[test]
fn rule_on_an_unknown_parameter() {
    let p = problems(&broken("- if: [type]", "- if: [tpye]"));
    assert_problem(
        &p,
        &[
            SEARCH,
            "field `requires[0].if`",
            "`tpye` is not a parameter",
        ],
    );
    let p = problems(&broken(
        "then: { sort: [top], slug: present }",
        "then: { sortt: [top] }",
    ));
    assert_problem(
        &p,
        &[
            SEARCH,
            "field `requires[0].then.sortt`",
            "`sortt` is not a parameter",
        ],
    );
    let p = problems(&broken("- [query, type]", "- [query, typ]"));
    assert_problem(
        &p,
        &[SEARCH, "field `exclusive[0]`", "`typ` is not a parameter"],
    );
}

#[test]
fn rule_with_an_unknown_value() {
    let p = problems(&broken(
        "then: { sort: [top], slug: present }",
        "then: { sort: [old] }",
    ));
    assert_problem(
        &p,
        &[
            SEARCH,
            "field `requires[0].then.sort`",
            "`old` is not a value of `sort`",
        ],
    );
}

#[test]
fn rule_with_an_unknown_condition_word() {
    let p = problems(&broken("slug: present", "slug: given"));
    assert_problem(
        &p,
        &[
            SEARCH,
            "field `requires[0].then.slug`",
            "`given` is not a condition",
        ],
    );
}

#[test]
fn value_condition_on_free_text() {
    let p = problems(&broken(
        "then: { sort: [top], slug: present }",
        "then: { slug: [abc] }",
    ));
    assert_problem(
        &p,
        &[SEARCH, "field `requires[0].then.slug`", "enum or boolean"],
    );
}

#[test]
fn rule_member_that_is_always_present() {
    // `sort` has a default: a rule triggered by it would always apply.
    let p = problems(&broken("- if: [type]", "- if: [type, sort]"));
    assert_problem(
        &p,
        &[SEARCH, "field `requires[0].if`", "`sort` is always present"],
    );
    let p = problems(&broken("- [query, type]", "- [query, limit]"));
    assert_problem(
        &p,
        &[SEARCH, "field `exclusive[0]`", "`limit` is always present"],
    );
    let p = problems(&broken("slug: present", "flag: present"));
    assert_problem(
        &p,
        &[
            SEARCH,
            "field `requires[0].then.flag`",
            "`present` would always hold",
        ],
    );
}

#[test]
fn rule_that_requires_itself() {
    let p = problems(&broken(
        "then: { sort: [top], slug: present }",
        "then: { type: present }",
    ));
    assert_problem(
        &p,
        &[
            SEARCH,
            "field `requires[0].then.type`",
            "cannot require itself",
        ],
    );
}

#[test]
fn exclusive_group_of_one() {
    let p = problems(&broken("- [query, type]", "- [type]"));
    assert_problem(
        &p,
        &[SEARCH, "field `exclusive[0]`", "at least two members"],
    );
}

#[test]
fn working_example_that_breaks_a_rule() {
    // The example request gives `query` (first of the one-of group), which this rule then refuses.
    let p = problems(&broken("- if: [type]", "- if: [query]"));
    assert_problem(&p, &[SEARCH, "field `requires`", "the working example"]);
    let p = problems(
        &broken("- [query, type]", "- [query, slug]\n      - [query, after]").replacen(
            "one_of:\n      - [query, slug]",
            "one_of:\n      - [query, slug]\n      - [after, type]",
            1,
        ),
    );
    assert_problem(&p, &[SEARCH, "field `requires`", "are exclusive"]);
}

#[test]
fn rule_on_an_operation_names_body_fields() {
    let p = problems(&broken(
        "    response: Pong",
        "    exclusive:\n      - [word, other]\n    response: Pong",
    ));
    assert_problem(
        &p,
        &[
            "endpoint `POST /v1/ping`",
            "field `exclusive[0]`",
            "`other` is not a body field",
        ],
    );
}

#[test]
fn path_segment_without_a_parameter() {
    let yaml = broken("POST /v1/ping:", "POST /v1/ping/{id}:");
    assert_problem(
        &problems(&yaml),
        &["/v1/ping/{id}", "path_params.id", "not declared"],
    );
}

#[test]
fn path_parameter_not_in_the_path() {
    let yaml = broken(
        "    handler: ping\n",
        "    handler: ping\n    path_params:\n      kid: { grammar: slug }\n",
    );
    assert_problem(
        &problems(&yaml),
        &["/v1/ping", "path_params.kid", "not in the path"],
    );
}

#[test]
fn path_parameter_is_required_by_construction() {
    // Declared without `required: true`, a path parameter still comes out required, so the
    // generated input types it as a plain value (no `Option`, no `unwrap_or("")` in handlers).
    let yaml = broken(
        "  POST /v1/ping:\n    auth: none\n    handler: ping\n",
        "  POST /v1/ping/{id}:\n    auth: none\n    handler: ping\n    path_params:\n      id: { grammar: slug }\n",
    );
    let api = codegen::load_str(&yaml).expect("a declared path parameter is valid");
    let ping = api
        .operations
        .iter()
        .find(|op| op.path == "/v1/ping/{id}")
        .expect("the ping operation");
    assert_eq!(ping.path_params.len(), 1);
    assert!(ping.path_params[0].required);
}

/// The fixture with a `billing` section (and a `plan` on ping when `plan` is given).
fn with_billing(packs: &str, plan: Option<&str>) -> String {
    let yaml = broken(
        "limits: { value_max_length: 64 }\n",
        &format!(
            "limits: {{ value_max_length: 64, keys_per_account: 3 }}\n\
             billing:\n  currency: USD\n  list_price_micro: 4000\n  packs:\n{packs}"
        ),
    );
    match plan {
        None => yaml,
        Some(values) => yaml.replacen(
            "    body:\n      word: { required: true, grammar: slug }\n    response: Pong",
            &format!(
                "    body:\n      word: {{ required: true, grammar: slug }}\n      plan: {{ enum: {values} }}\n    response: Pong"
            ),
            1,
        ),
    }
}

const THREE_PACKS: &str = "    a: { credits: 100, price_cents: 30 }\n    b: { credits: 200, price_cents: 50 }\n    c: { credits: 300, price_cents: 60 }\n";

#[test]
fn billing_that_is_valid_loads_with_its_constants() {
    let api = codegen::load_str(&with_billing(THREE_PACKS, Some("[a, b, c]"))).expect("valid");
    assert_eq!(api.keys_per_account, Some(3));
    let billing = api.billing.expect("billing");
    let ids: Vec<&str> = billing.packs.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(billing.list_price_micro, 4000);
}

#[test]
fn billing_without_three_packs() {
    let yaml = with_billing("    a: { credits: 100, price_cents: 30 }\n", None);
    assert_problem(&problems(&yaml), &["billing", "packs", "exactly three"]);
}

#[test]
fn pack_without_a_price() {
    let yaml = with_billing(
        &THREE_PACKS.replace("price_cents: 50", "price_cents: 0"),
        None,
    );
    assert_problem(
        &problems(&yaml),
        &["billing", "packs.b.price_cents", "must be positive"],
    );
}

#[test]
fn pack_dearer_than_the_list_price() {
    // 100 credits at the list price of 0.004 cost 40 cents; 41 is a negative discount.
    let yaml = with_billing(
        &THREE_PACKS.replace("price_cents: 30", "price_cents: 41"),
        None,
    );
    assert_problem(
        &problems(&yaml),
        &["billing", "packs.a.price_cents", "list_price_micro"],
    );
}

#[test]
fn plan_values_that_are_not_the_pack_ids() {
    let yaml = with_billing(THREE_PACKS, Some("[a, b, d]"));
    assert_problem(&problems(&yaml), &["/v1/ping", "plan", "pack ids"]);
}

#[test]
fn keys_per_account_of_zero() {
    let yaml =
        with_billing(THREE_PACKS, None).replace("keys_per_account: 3", "keys_per_account: 0");
    assert_problem(
        &problems(&yaml),
        &["limits", "keys_per_account", "at least 1"],
    );
}

#[test]
fn schema_plan_enum_that_is_not_the_pack_ids() {
    let yaml = with_billing(THREE_PACKS, None).replacen(
        "  Pong: { type: object, required: [ok], properties: { ok: { const: true } } }",
        "  Pong: { type: object, required: [ok], properties: { ok: { const: true }, plan: { enum: [a, b] } } }",
        1,
    );
    assert!(yaml.contains("enum: [a, b]"), "fixture changed");
    assert_problem(&problems(&yaml), &["schema `Pong`", "enum", "pack ids"]);
}
