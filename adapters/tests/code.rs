//! code sources against recorded upstream answers.

mod support;

use adapters::api::EndpointId;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, header, item, sources};

fn sources_at(up: &FakeUpstream, credential: Option<&str>) -> Sources {
    sources(&[at("code.github", up.url("/gh")).credential(credential)])
}

#[tokio::test]
async fn search_repositories_with_headers_and_token() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/gh/search/repositories")
            .query("q", "rust language:rust")
            .query("sort", "stars")
            .query("per_page", "5")
            .file("code/github/search_repositories.json"),
    );
    let sources = sources_at(&up, Some("tok123"));
    let page = call(
        &sources,
        EndpointId::CodeSearch,
        "query=rust+language:rust&sort=stars&limit=5",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.total, Some(2));
    let rust = item(&page, 0);
    assert_eq!(rust["id"], "rust-lang/rust");
    assert_eq!(rust["type"], "repository");
    assert_eq!(rust["author"], "rust-lang");
    assert_eq!(rust["url"], "https://github.com/rust-lang/rust");
    assert_eq!(rust["created_at"], "2010-06-16T20:39:03Z");
    assert_eq!(rust["metrics"], json!({ "likes": 99512 }));
    assert_eq!(rust["extra"]["language"], "Rust");
    assert_eq!(rust["extra"]["forks"], 12876);
    assert_eq!(
        rust["extra"]["topics"],
        json!(["compiler", "language", "rust"])
    );
    let other = item(&page, 1);
    assert_eq!(other["id"], "zoë/wörterbuch");
    assert_eq!(other["text"], Value::Null);
    assert!(other["extra"].get("topics").is_none());
    assert!(other["extra"].get("license").is_none());

    let seen = &up.seen()[0];
    assert_eq!(
        header(seen, "accept").as_deref(),
        Some("application/vnd.github+json")
    );
    assert_eq!(
        header(seen, "x-github-api-version").as_deref(),
        Some("2022-11-28")
    );
    assert_eq!(
        header(seen, "authorization").as_deref(),
        Some("Bearer tok123")
    );
}

#[tokio::test]
async fn issue_search_without_type_runs_issue_and_pr_queries() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/gh/search/issues")
            .query("q", "borrowck is:issue")
            .file("code/github/search_issues_issue.json"),
    );
    up.route(
        Route::get("/gh/search/issues")
            .query("q", "borrowck is:pr")
            .file("code/github/search_issues_pr.json"),
    );
    let sources = sources_at(&up, None);
    let page = call(
        &sources,
        EndpointId::CodeSearch,
        "query=borrowck&type=issues",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.total, Some(42));
    assert_eq!(page.items.len(), 2);
    // Interleaved by the upstream's relevance score: the pull request scored higher.
    let pr = item(&page, 0);
    assert_eq!(pr["id"], "rust-lang/rust#102");
    assert_eq!(pr["type"], "pull_request");
    assert_eq!(pr["extra"]["draft"], true);
    assert_eq!(pr["extra"]["merged"], false);
    let issue = item(&page, 1);
    assert_eq!(issue["type"], "issue");
    assert_eq!(issue["title"], "ICE on `impl Trait` in <const> position");
    assert_eq!(issue["metrics"], json!({ "comments": 3, "likes": 4 }));
    assert_eq!(issue["extra"]["labels"], json!(["C-bug", "T-compiler"]));
    assert!(
        up.seen()[0].headers.get("authorization").is_none(),
        "no token, no header"
    );

    // A query that names its type runs once, as written.
    up.reset();
    up.route(
        Route::get("/gh/search/issues")
            .query("q", "is:pr borrowck")
            .file("code/github/search_issues_pr.json"),
    );
    let page = call(
        &sources,
        EndpointId::CodeSearch,
        "query=is:pr+borrowck&type=issues",
    )
    .await
    .expect("page");
    assert_eq!((page.items.len(), up.seen().len()), (1, 1));
}

#[tokio::test]
async fn users_and_code_search() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gh/search/users").file("code/github/search_users.json"));
    up.route(Route::get("/gh/search/code").file("code/github/search_code.json"));
    let sources = sources_at(&up, Some("t"));
    let users = call(&sources, EndpointId::CodeSearch, "query=octo&type=users")
        .await
        .unwrap();
    assert_items_valid(&users.items);
    assert_eq!(
        (
            item(&users, 0)["type"].clone(),
            item(&users, 0)["id"].clone()
        ),
        (json!("profile"), json!("octocat"))
    );
    let code = call(&sources, EndpointId::CodeSearch, "query=lookup&type=code")
        .await
        .unwrap();
    assert_items_valid(&code.items);
    let file = item(&code, 0);
    assert_eq!(file["id"], "zoë/wörterbuch:src/lib.rs");
    assert_eq!(file["type"], "code");
    assert_eq!(file["text"], "fn lookup(word: &str)\n…\n// lookup table");
    let accept = header(&up.seen()[1], "accept").unwrap();
    assert_eq!(accept, "application/vnd.github.text-match+json");
}

#[tokio::test]
async fn profile_and_repos() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gh/users/octocat").file("code/github/user.json"));
    up.route(
        Route::get("/gh/users/octocat/repos")
            .query("sort", "pushed")
            .query("per_page", "1")
            .file("code/github/user_repos.json"),
    );
    let sources = sources_at(&up, None);
    let page = call(&sources, EndpointId::CodeProfile, "handle=octocat")
        .await
        .unwrap();
    assert_items_valid(&page.items);
    let p = item(&page, 0);
    assert_eq!(p["type"], "profile");
    assert_eq!(p["author_name"], "The Octocat");
    assert_eq!(p["text"], Value::Null);
    assert_eq!(p["extra"]["followers"], 21000);
    assert_eq!(p["metrics"], json!({}));
    let repos = call(
        &sources,
        EndpointId::CodeProfileRepos,
        "handle=octocat&sort=pushed&limit=1",
    )
    .await
    .unwrap();
    assert_items_valid(&repos.items);
    assert_eq!(repos.items.len(), 1, "the limit is applied");
    assert_eq!(repos.items[0].id, "zoë/wörterbuch");
}

#[tokio::test]
async fn repo_readme_and_releases() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gh/repos/rust-lang/rust").file("code/github/repo.json"));
    up.route(Route::get("/gh/repos/rust-lang/rust/readme").file("code/github/readme.json"));
    up.route(
        Route::get("/gh/repos/rust-lang/rust/releases")
            .query("per_page", "20")
            .file("code/github/releases.json"),
    );
    up.route(
        Route::get("/gh/repos/raw/only/readme")
            .header("content-type", "application/vnd.github.raw+json")
            .body("# Raw readme\n"),
    );
    let sources = sources_at(&up, None);
    let repo = call(&sources, EndpointId::CodeRepo, "id=rust-lang/rust")
        .await
        .unwrap();
    assert_items_valid(&repo.items);
    assert_eq!(item(&repo, 0)["extra"]["watchers"], 1490);
    assert_eq!(item(&repo, 0)["extra"]["license"], "NOASSERTION");

    let readme = call(&sources, EndpointId::CodeRepoReadme, "id=rust-lang/rust")
        .await
        .unwrap();
    assert_items_valid(&readme.items);
    let r = item(&readme, 0);
    assert_eq!(r["type"], "readme");
    assert_eq!(r["id"], "rust-lang/rust");
    assert_eq!(r["title"], "README.md");
    assert_eq!(
        r["text"],
        "# Rust\n\nThis is the main source code repository for [Rust]. Ünïcode ✓\n"
    );
    let raw = call(&sources, EndpointId::CodeRepoReadme, "id=raw/only")
        .await
        .unwrap();
    assert_eq!(item(&raw, 0)["text"], "# Raw readme\n");

    let rel = call(&sources, EndpointId::CodeRepoReleases, "id=rust-lang/rust")
        .await
        .unwrap();
    assert_items_valid(&rel.items);
    let first = item(&rel, 0);
    assert_eq!(first["id"], "rust-lang/rust@1.85.0");
    assert_eq!(first["created_at"], "2025-02-20T15:00:00Z");
    assert_eq!(first["metrics"], json!({ "likes": 10 }));
    let second = item(&rel, 1);
    assert_eq!(
        second["title"], "1.84.1",
        "tag name when the release has no name"
    );
    assert_eq!(second["created_at"], "2025-01-30T10:00:00Z");
    assert_eq!(second["author"], Value::Null);
    assert_eq!(second["extra"]["author_deleted"], true);
    assert_eq!(second["extra"]["prerelease"], true);
}

#[tokio::test]
async fn issues_prs_and_comments() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/gh/repos/rust-lang/rust/issues")
            .query("state", "all")
            .query("per_page", "30")
            .file("code/github/repo_issues.json"),
    );
    up.route(Route::get("/gh/repos/rust-lang/rust/issues/104").file("code/github/issue_pr.json"));
    up.route(
        Route::get("/gh/repos/rust-lang/rust/issues/101/comments")
            .query("per_page", "50")
            .file("code/github/issue_comments.json"),
    );
    let sources = sources_at(&up, None);
    let page = call(
        &sources,
        EndpointId::CodeRepoIssues,
        "id=rust-lang/rust&state=all",
    )
    .await
    .unwrap();
    assert_items_valid(&page.items);
    let kinds: Vec<String> = page.items.iter().map(|i| i.kind.clone()).collect();
    assert_eq!(kinds, ["issue", "pull_request", "issue"]);
    let ghost = item(&page, 2);
    assert_eq!(ghost["author"], Value::Null);
    assert_eq!(ghost["extra"]["author_deleted"], true);
    assert_eq!(ghost["text"], Value::Null);
    assert_eq!(
        item(&page, 0)["text"],
        "Steps:\r\n1. build\r\n\r\n```rust\nfn main() {}\n```"
    );

    let pr = call(&sources, EndpointId::CodeIssue, "id=rust-lang/rust/104")
        .await
        .unwrap();
    assert_items_valid(&pr.items);
    let pr = item(&pr, 0);
    assert_eq!(pr["id"], "rust-lang/rust#104");
    assert_eq!(pr["type"], "pull_request");
    assert_eq!(pr["extra"]["merged"], true);
    assert_eq!(pr["extra"]["state"], "closed");
    assert_eq!(pr["extra"]["closed_at"], "2026-03-05T10:11:12Z");

    let comments = call(
        &sources,
        EndpointId::CodeIssueComments,
        "id=rust-lang/rust/101",
    )
    .await
    .unwrap();
    assert_items_valid(&comments.items);
    let c = item(&comments, 0);
    assert_eq!(c["id"], "2001");
    assert_eq!(c["type"], "comment");
    assert_eq!(c["extra"]["parent_id"], "rust-lang/rust#101");
    assert_eq!(c["metrics"], json!({ "likes": 2 }));
    let gone = item(&comments, 1);
    assert_eq!(
        (gone["author"].clone(), gone["text"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(gone["extra"]["author_deleted"], true);
}

#[tokio::test]
async fn upstream_errors() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/gh/search/issues")
            .status(422)
            .body(r#"{"message":"Validation Failed","errors":[{"message":"The search is longer than 256 characters.","resource":"Search","field":"q","code":"invalid"}],"status":"422"}"#),
    );
    up.route(
        Route::get("/gh/users/limited")
            .status(403)
            .header("x-ratelimit-remaining", "0")
            .body(r#"{"message":"API rate limit exceeded for 1.2.3.4."}"#),
    );
    up.route(Route::get("/gh/users/secondary").status(403).body(
        r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#,
    ));
    up.route(
        Route::get("/gh/users/nobody")
            .status(404)
            .body(r#"{"message":"Not Found"}"#),
    );
    up.route(Route::get("/gh/users/broken").body("<html>oops</html>"));
    let sources = sources_at(&up, None);

    match call(
        &sources,
        EndpointId::CodeSearch,
        "query=x+is:issue&type=issues",
    )
    .await
    {
        Err(CallError::Upstream(why)) => {
            assert!(
                why.contains("Validation Failed: The search is longer than 256 characters."),
                "{why}"
            )
        }
        other => panic!("expected an upstream error, got {other:?}"),
    }
    for handle in ["limited", "secondary"] {
        match call(
            &sources,
            EndpointId::CodeProfile,
            &format!("handle={handle}"),
        )
        .await
        {
            Err(CallError::AllSourcesFailed(why)) => assert!(why.contains("rate-limited"), "{why}"),
            other => panic!("expected rate limiting, got {other:?}"),
        }
    }
    assert!(matches!(
        call(&sources, EndpointId::CodeProfile, "handle=nobody").await,
        Err(CallError::Upstream(_))
    ));
    assert!(matches!(
        call(&sources, EndpointId::CodeProfile, "handle=broken").await,
        Err(CallError::AllSourcesFailed(_))
    ));
}
