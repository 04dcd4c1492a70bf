//! JSON request bodies (spec section 7): chunked or unsized bodies are 411, oversized 413 stating
//! the limit, malformed JSON 400, unknown or missing fields 422 naming them. Exercised on
//! `POST /v1/auth/request-code`, which needs no credential, so its body is read and checked.

use crate::support::server;

const PATH: &str = "/v1/auth/request-code";

fn post(body: &str, extra_headers: &str) -> Vec<u8> {
    format!("POST {PATH} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n{extra_headers}\r\n{body}").into_bytes()
}

fn sized(body: &str) -> Vec<u8> {
    post(body, &format!("Content-Length: {}\r\n", body.len()))
}

#[test]
fn chunked_body_is_411() {
    let r = server().raw(&post(
        "2\r\n{}\r\n0\r\n\r\n",
        "Transfer-Encoding: chunked\r\n",
    ));
    r.assert_error(411, "LENGTH_REQUIRED");
}

#[test]
fn missing_content_length_is_411() {
    let r = server().raw(&post("", ""));
    r.assert_error(411, "LENGTH_REQUIRED");
    assert!(r.body["error"]["fix"].is_string());
}

#[test]
fn oversized_body_is_413_stating_the_limit() {
    // The default limit (config `limits.body_max_bytes`) is 16 KiB.
    let body = format!("{{\"email\":\"{}@example.com\"}}", "a".repeat(20_000));
    let r = server().raw(&sized(&body));
    r.assert_error(413, "PAYLOAD_TOO_LARGE");
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("16384"), "{message}");
}

#[test]
fn limit_comes_from_the_configuration() {
    let s = crate::support::Server::start(Some("[limits]\nbody_max_bytes = 64\n"));
    let r = s.raw(&sized(&format!(
        "{{\"email\":\"{}@example.com\"}}",
        "a".repeat(60)
    )));
    r.assert_error(413, "PAYLOAD_TOO_LARGE");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("64 bytes")
    );
}

#[test]
fn malformed_json_is_400() {
    for body in ["{\"email\":", "not json", "{\"email\":\"a@example.com\",}"] {
        server().raw(&sized(body)).assert_error(400, "BAD_REQUEST");
    }
}

#[test]
fn unknown_field_is_422_naming_it() {
    let r = server().raw(&sized(r#"{"email":"ada@example.com","credits":5000}"#));
    r.assert_names("credits");
}

#[test]
fn missing_field_is_422_naming_it() {
    server().raw(&sized("{}")).assert_names("email");
    server().raw(&sized("")).assert_names("email");
}

#[test]
fn wrong_type_and_form_are_422() {
    server()
        .raw(&sized(r#"{"email":42}"#))
        .assert_names("email");
    server()
        .raw(&sized(r#"{"email":"not-an-address"}"#))
        .assert_names("email");
    server()
        .raw(&sized(r#"["ada@example.com"]"#))
        .assert_error(422, "VALIDATION_ERROR");
}

#[test]
fn a_valid_body_passes_validation() {
    // Validation passes and the handler answers: the code is sent (to the dev outbox here).
    let reply = server().raw(&sized(r#"{"email":"ada@example.com"}"#));
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["ok"], true, "{}", reply.text);
}
