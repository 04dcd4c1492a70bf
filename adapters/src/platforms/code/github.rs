//! The code platform's REST API (`https://api.github.com`): search, users, repositories, READMEs,
//! releases, issues and their comments. The credential (a token) is optional and sent as
//! `Authorization: Bearer`; without one the upstream allows fewer calls and refuses code search.
//!
//! Errors are read from the upstream's own signals: a 403 or 429 with `x-ratelimit-remaining: 0`
//! (or a "secondary rate limit" message) is rate limiting, 404 is not found, and 422 (a search query
//! the upstream refuses) carries the upstream's message.

use reqwest::RequestBuilder;
use serde_json::Value;

use super::{PLATFORM, code_item, comment_item, issue_item, profile_item, release_item, repo_item};
use crate::api::Handlers;
use crate::api::code::{
    self, Issue, IssueComments, Profile, ProfileRepos, Repo, RepoIssues, RepoIssuesState,
    RepoReadme, RepoReleases, Search, SearchType,
};
use crate::item::{Item, Page};
use crate::request::{Choice, RepoRef};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::path::segment;
use crate::upstream::{Ctx, RawResponse, encoding, json, status_error};

pub static SOURCE: Source = Source {
    id: "code.github",
    default_base_url: "https://api.github.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Code(code::Handlers {
        search: Some(serve!(search)),
        profile: Some(serve!(profile)),
        profile_repos: Some(serve!(profile_repos)),
        repo: Some(serve!(repo)),
        repo_readme: Some(serve!(repo_readme)),
        repo_releases: Some(serve!(repo_releases)),
        repo_issues: Some(serve!(repo_issues)),
        issue: Some(serve!(issue)),
        issue_comments: Some(serve!(issue_comments)),
    }),
};

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let body = get(ctx, &format!("users/{}", segment(&r.handle)?), &[]).await?;
    one(profile_item(&body))
}

async fn profile_repos(ctx: &Ctx<'_>, r: &ProfileRepos) -> Result<Page, SourceError> {
    let q = [
        ("sort", r.sort.as_str().to_string()),
        ("per_page", r.limit.to_string()),
    ];
    let body = get(ctx, &format!("users/{}/repos", segment(&r.handle)?), &q).await?;
    list(&body, r.limit, repo_item)
}

async fn repo(ctx: &Ctx<'_>, r: &Repo) -> Result<Page, SourceError> {
    one(repo_item(&get(ctx, &repo_path(&r.id, "")?, &[]).await?))
}

async fn repo_readme(ctx: &Ctx<'_>, r: &RepoReadme) -> Result<Page, SourceError> {
    readme(ctx, &r.id).await
}

async fn repo_releases(ctx: &Ctx<'_>, r: &RepoReleases) -> Result<Page, SourceError> {
    let q = [("per_page", r.limit.clamp(1, 100).to_string())];
    let body = get(ctx, &repo_path(&r.id, "/releases")?, &q).await?;
    let repo = r.id.to_string();
    list(&body, r.limit, |v| release_item(v, &repo))
}

async fn repo_issues(ctx: &Ctx<'_>, r: &RepoIssues) -> Result<Page, SourceError> {
    let state = match r.state {
        RepoIssuesState::Open => "open",
        RepoIssuesState::Closed => "closed",
        RepoIssuesState::All => "all",
    };
    let q = [
        ("state", state.to_string()),
        ("per_page", r.limit.to_string()),
    ];
    let body = get(ctx, &repo_path(&r.id, "/issues")?, &q).await?;
    let repo = r.id.to_string();
    list(&body, r.limit, |v| issue_item(v, Some(&repo)))
}

async fn issue(ctx: &Ctx<'_>, r: &Issue) -> Result<Page, SourceError> {
    let path = repo_path(&r.id.repo, &format!("/issues/{}", r.id.number))?;
    let repo = r.id.repo.to_string();
    one(issue_item(&get(ctx, &path, &[]).await?, Some(&repo)))
}

async fn issue_comments(ctx: &Ctx<'_>, r: &IssueComments) -> Result<Page, SourceError> {
    let path = repo_path(&r.id.repo, &format!("/issues/{}/comments", r.id.number))?;
    let q = [("per_page", r.limit.to_string())];
    let body = get(ctx, &path, &q).await?;
    let parent = format!("{}#{}", r.id.repo, r.id.number);
    list(&body, r.limit, |v| comment_item(v, &parent))
}

/// `repos/{owner}/{name}{rest}`; `rest` is this file's own text, never a client's.
fn repo_path(repo: &RepoRef, rest: &str) -> Result<String, SourceError> {
    Ok(format!(
        "repos/{}/{}{rest}",
        segment(&repo.owner)?,
        segment(&repo.name)?
    ))
}

fn request(ctx: &Ctx<'_>, path: &str, query: &[(&str, String)], accept: &str) -> RequestBuilder {
    let mut req = ctx
        .get(path)
        .query(query)
        .header("Accept", accept)
        .header("X-GitHub-Api-Version", "2022-11-28");
    if let Some(token) = ctx.credential {
        req = req.bearer_auth(token);
    }
    req
}

/// Sends and reads the answer as JSON.
async fn send(ctx: &Ctx<'_>, req: RequestBuilder) -> Result<Value, SourceError> {
    let raw = ctx.send_raw(req).await?;
    check(&raw)?.ok_or_else(|| SourceError::Malformed("not JSON".into()))
}

/// The upstream's error conventions; on success the body as JSON when it is JSON.
fn check(raw: &RawResponse) -> Result<Option<Value>, SourceError> {
    let body: Option<Value> = serde_json::from_slice(&raw.body).ok();
    let message = body
        .as_ref()
        .and_then(|b| json::string(b, "message"))
        .unwrap_or_default();
    let status = raw.status.as_u16();
    if matches!(status, 403 | 429)
        && (raw.header("x-ratelimit-remaining") == Some("0")
            || message.to_ascii_lowercase().contains("rate limit")
            || status == 429)
    {
        return Err(SourceError::RateLimited);
    }
    if status == 422 || (400..500).contains(&status) && !matches!(status, 401 | 403 | 404 | 410) {
        let details: Vec<String> = body
            .as_ref()
            .map(|b| json::array(b, "errors"))
            .unwrap_or(&[])
            .iter()
            .filter_map(|e| json::string(e, "message"))
            .collect();
        let mut why = if message.is_empty() {
            format!("answered {}", raw.status)
        } else {
            message
        };
        if !details.is_empty() {
            why = format!("{why}: {}", details.join("; "));
        }
        return Err(SourceError::Rejected(why));
    }
    if let Some(e) = status_error(raw.status) {
        return Err(e);
    }
    Ok(body)
}

async fn get(ctx: &Ctx<'_>, path: &str, query: &[(&str, String)]) -> Result<Value, SourceError> {
    send(
        ctx,
        request(ctx, path, query, "application/vnd.github+json"),
    )
    .await
}

fn one(item: Option<Item>) -> Result<Page, SourceError> {
    let item =
        item.ok_or_else(|| SourceError::Malformed("the answer lacks its identity".into()))?;
    Ok(Page::single(item))
}

/// A JSON array answer mapped item by item (unreadable entries skipped).
fn list(
    body: &Value,
    limit: u32,
    map: impl Fn(&Value) -> Option<Item>,
) -> Result<Page, SourceError> {
    let entries = body
        .as_array()
        .ok_or_else(|| SourceError::Malformed("expected a JSON array".into()))?;
    let mut items: Vec<Item> = entries.iter().filter_map(map).collect();
    items.truncate(limit as usize);
    Ok(Page {
        items,
        total: None,
        next_cursor: None,
    })
}

/// Whether a search query already names what the issues search should return.
fn has_issue_type(query: &str) -> bool {
    query.split_whitespace().any(|t| {
        let t = t.trim_start_matches('-').to_ascii_lowercase();
        matches!(
            t.as_str(),
            "is:issue" | "is:pr" | "is:pull-request" | "type:issue" | "type:pr"
        )
    })
}

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let kind = match r.r#type {
        SearchType::Repositories => "repositories",
        SearchType::Issues => "issues",
        SearchType::Users => "users",
        SearchType::Code => "code",
    };
    // The issues search refuses a query that names neither issues nor pull requests (and finds
    // nothing when it names both), so such a query runs twice and the answers are merged.
    let queries: Vec<String> = if kind == "issues" && !has_issue_type(&r.query) {
        vec![
            format!("{} is:issue", r.query),
            format!("{} is:pr", r.query),
        ]
    } else {
        vec![r.query.clone()]
    };
    let accept = if kind == "code" {
        "application/vnd.github.text-match+json"
    } else {
        "application/vnd.github+json"
    };
    let mut items = Vec::new();
    let mut total = 0u64;
    for q in &queries {
        let mut params = vec![("q", q.clone()), ("per_page", r.limit.to_string())];
        if let Some(sort) = &r.sort {
            params.push(("sort", sort.clone()));
        }
        let body = send(
            ctx,
            request(ctx, &format!("search/{kind}"), &params, accept),
        )
        .await?;
        let found = body
            .get("items")
            .and_then(Value::as_array)
            .ok_or_else(|| SourceError::Malformed("no `items` array".into()))?;
        total += json::int(&body, "total_count").unwrap_or(0).max(0) as u64;
        for v in found {
            let item = match kind {
                "repositories" => repo_item(v),
                "issues" => issue_item(v, None),
                "users" => profile_item(v),
                _ => code_item(v),
            };
            items.extend(item.map(|i| (json::number(v, "score").unwrap_or(0.0), i)));
        }
    }
    if queries.len() > 1 {
        // Merged answers keep the upstream's order within each and interleave by the sort asked
        // for: newest first for created/updated, else by the upstream's relevance score.
        let key = |item: &Item| match r.sort.as_deref() {
            Some("created") => item.created_at.clone().unwrap_or_default(),
            Some("updated") => item
                .extra
                .get("updated_at")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_default(),
            _ => String::new(),
        };
        match r.sort.as_deref() {
            Some("created" | "updated") => items.sort_by_key(|(_, i)| std::cmp::Reverse(key(i))),
            Some("comments") => items.sort_by(|(_, a), (_, b)| {
                b.metrics
                    .comments
                    .unwrap_or(0.0)
                    .total_cmp(&a.metrics.comments.unwrap_or(0.0))
            }),
            _ => items.sort_by(|(a, _), (b, _)| b.total_cmp(a)),
        }
    }
    let mut items: Vec<Item> = items.into_iter().map(|(_, i)| i).collect();
    items.truncate(r.limit as usize);
    Ok(Page {
        items,
        total: Some(total),
        next_cursor: None,
    })
}

/// The README: the JSON answer carries the file base64-encoded; a raw answer (for a base URL that
/// serves raw media) is used as it is.
async fn readme(ctx: &Ctx<'_>, repo: &RepoRef) -> Result<Page, SourceError> {
    let req = request(
        ctx,
        &repo_path(repo, "/readme")?,
        &[],
        "application/vnd.github+json",
    );
    let raw = ctx.send_raw(req).await?;
    let parsed = check(&raw)?.filter(Value::is_object);
    let id = repo.to_string();
    let mut item = Item::new(PLATFORM, "readme", id.clone());
    item.extra("repository", id.clone());
    match parsed {
        Some(body) => {
            let content = json::str(&body, "content")
                .ok_or_else(|| SourceError::Malformed("the README answer has no content".into()))?;
            let text = match json::str(&body, "encoding") {
                Some("base64") | None => encoding::base64_decode(content)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .ok_or_else(|| {
                        SourceError::Malformed("the README is not valid base64".into())
                    })?,
                Some(_) => content.to_string(),
            };
            item.title = json::string(&body, "name");
            item.text = Some(text);
            item.url = json::string(&body, "html_url");
            item.extra("path", json::string(&body, "path"));
        }
        None => {
            item.title = Some("README".into());
            item.text = Some(String::from_utf8_lossy(&raw.body).into_owned());
            item.url = Some(format!("https://github.com/{id}#readme"));
        }
    }
    Ok(Page::single(item))
}
