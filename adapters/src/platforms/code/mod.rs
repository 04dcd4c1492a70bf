//! code: a code hosting platform of repositories, issues, pull requests and users.
//!
//! Item types: `repository`, `issue`, `pull_request`, `comment`, `profile`, `readme`, `release`,
//! `code` (a file matched by code search).
//!
//! `extra` keys:
//! - repositories: `language`, `forks`, `open_issues`, `watchers`, `topics` (array), `license`
//!   (SPDX id), `archived`, `fork`, `default_branch`, `homepage`, `pushed_at`, `updated_at`.
//! - issues and pull requests: `repository` (`owner/name`), `number`, `state`, `state_reason`,
//!   `labels` (array of names), `locked`, `closed_at`, `author_association`, `draft` and `merged`
//!   (pull requests only).
//! - comments: `parent_id` (`owner/name#number` of the issue), `author_association`, `updated_at`.
//! - profiles: `account_type` (`User`/`Organization`), `followers`, `following`, `public_repos`,
//!   `company`, `location`, `blog`.
//! - releases: `repository`, `tag_name`, `draft`, `prerelease`.
//! - readmes: `repository`, `path`.
//! - code: `repository`, `path`, `sha`.
//! - any item whose author account was deleted: `author_deleted` (true), with `author` null.
//!
//! Metrics: `likes` = stars of a repository, `+1` reactions of an issue, comment or release;
//! `comments` = comment count of an issue.

pub mod github;

use serde_json::Value;

use crate::item::Item;
use crate::upstream::{dates, json};

pub const PLATFORM: &str = "code";

/// The login of a `user`/`owner` object; deleted accounts (`ghost`, or no user at all) are `None`.
fn login(v: &Value, key: &str) -> (Option<String>, bool) {
    match v.get(key) {
        Some(u) if u.is_object() => match json::string(u, "login") {
            Some(l) if l != "ghost" => (Some(l), false),
            _ => (None, true),
        },
        _ => (None, true),
    }
}

fn set_author(item: &mut Item, v: &Value, key: &str) {
    let (author, deleted) = login(v, key);
    item.author = author;
    if deleted {
        item.extra("author_deleted", true);
    }
}

fn plus_one(v: &Value) -> Option<f64> {
    v.get("reactions").and_then(|r| json::number(r, "+1"))
}

pub fn repo_item(v: &Value) -> Option<Item> {
    let full_name = json::string(v, "full_name")?;
    let mut item = Item::new(PLATFORM, "repository", full_name.clone());
    item.title = Some(full_name);
    item.text = json::string(v, "description");
    item.url = json::string(v, "html_url");
    set_author(&mut item, v, "owner");
    item.created_at = v.get("created_at").and_then(dates::normalize);
    item.metrics.likes = json::number(v, "stargazers_count");
    item.extra("language", json::string(v, "language"));
    item.extra("forks", json::int(v, "forks_count"));
    item.extra("open_issues", json::int(v, "open_issues_count"));
    item.extra("watchers", json::int(v, "subscribers_count"));
    let topics: Vec<Value> = json::array(v, "topics").to_vec();
    if !topics.is_empty() {
        item.extra("topics", topics);
    }
    item.extra(
        "license",
        v.get("license").and_then(|l| json::string(l, "spdx_id")),
    );
    for flag in ["archived", "fork"] {
        item.extra(flag, v.get(flag).and_then(Value::as_bool));
    }
    item.extra("default_branch", json::string(v, "default_branch"));
    item.extra("homepage", json::string(v, "homepage"));
    item.extra("pushed_at", v.get("pushed_at").and_then(dates::normalize));
    item.extra("updated_at", v.get("updated_at").and_then(dates::normalize));
    Some(item)
}

/// `owner/name` of an issue: from `repository_url` (`.../repos/owner/name`), else its page URL.
fn issue_repo(v: &Value) -> Option<String> {
    if let Some(u) = json::str(v, "repository_url") {
        let mut parts = u.rsplit('/');
        let (name, owner) = (parts.next()?, parts.next()?);
        return Some(format!("{owner}/{name}"));
    }
    let html = json::str(v, "html_url")?;
    let path = html.split_once("://")?.1.split_once('/')?.1;
    let mut parts = path.split('/');
    Some(format!("{}/{}", parts.next()?, parts.next()?))
}

/// An issue or pull request (the issues API lists both; a pull request has a `pull_request` key).
pub fn issue_item(v: &Value, repo: Option<&str>) -> Option<Item> {
    let number = json::int(v, "number")?;
    let repo = repo.map(str::to_string).or_else(|| issue_repo(v))?;
    let pr = v.get("pull_request").filter(|p| !p.is_null());
    let kind = if pr.is_some() {
        "pull_request"
    } else {
        "issue"
    };
    let mut item = Item::new(PLATFORM, kind, format!("{repo}#{number}"));
    item.title = json::string(v, "title");
    item.text = json::string(v, "body");
    item.url = json::string(v, "html_url");
    set_author(&mut item, v, "user");
    item.created_at = v.get("created_at").and_then(dates::normalize);
    item.metrics.comments = json::number(v, "comments");
    item.metrics.likes = plus_one(v);
    item.extra("repository", repo);
    item.extra("number", number);
    item.extra("state", json::string(v, "state"));
    item.extra("state_reason", json::string(v, "state_reason"));
    let labels: Vec<Value> = json::array(v, "labels")
        .iter()
        .filter_map(|l| {
            l.as_str()
                .map(str::to_string)
                .or_else(|| json::string(l, "name"))
        })
        .map(Value::from)
        .collect();
    item.extra("labels", labels);
    item.extra("locked", v.get("locked").and_then(Value::as_bool));
    item.extra("closed_at", v.get("closed_at").and_then(dates::normalize));
    item.extra("author_association", json::string(v, "author_association"));
    if let Some(pr) = pr {
        item.extra(
            "draft",
            v.get("draft").and_then(Value::as_bool).unwrap_or(false),
        );
        item.extra("merged", pr.get("merged_at").is_some_and(|m| !m.is_null()));
    }
    Some(item)
}

pub fn comment_item(v: &Value, parent: &str) -> Option<Item> {
    let id = json::id(v, "id")?;
    let mut item = Item::new(PLATFORM, "comment", id);
    item.text = json::string(v, "body");
    item.url = json::string(v, "html_url");
    set_author(&mut item, v, "user");
    item.created_at = v.get("created_at").and_then(dates::normalize);
    item.metrics.likes = plus_one(v);
    item.extra("parent_id", parent.to_string());
    item.extra("author_association", json::string(v, "author_association"));
    item.extra("updated_at", v.get("updated_at").and_then(dates::normalize));
    Some(item)
}

/// A user or organisation: full from `/users/{login}`, partial from user search.
pub fn profile_item(v: &Value) -> Option<Item> {
    let login = json::string(v, "login")?;
    let mut item = Item::new(PLATFORM, "profile", login.clone());
    item.author = Some(login);
    item.author_name = json::string(v, "name");
    item.text = json::string(v, "bio");
    item.url = json::string(v, "html_url");
    item.created_at = v.get("created_at").and_then(dates::normalize);
    item.extra("account_type", json::string(v, "type"));
    for key in ["followers", "following", "public_repos"] {
        item.extra(key, json::int(v, key));
    }
    for key in ["company", "location", "blog"] {
        item.extra(key, json::string(v, key));
    }
    Some(item)
}

pub fn release_item(v: &Value, repo: &str) -> Option<Item> {
    let tag = json::string(v, "tag_name");
    let id = match &tag {
        Some(t) => format!("{repo}@{t}"),
        None => format!("{repo}@{}", json::id(v, "id")?),
    };
    let mut item = Item::new(PLATFORM, "release", id);
    item.title = json::string(v, "name").or_else(|| tag.clone());
    item.text = json::string(v, "body");
    item.url = json::string(v, "html_url");
    set_author(&mut item, v, "author");
    item.created_at = v
        .get("published_at")
        .and_then(dates::normalize)
        .or_else(|| v.get("created_at").and_then(dates::normalize));
    item.metrics.likes = plus_one(v);
    item.extra("repository", repo.to_string());
    item.extra("tag_name", tag);
    item.extra("draft", v.get("draft").and_then(Value::as_bool));
    item.extra("prerelease", v.get("prerelease").and_then(Value::as_bool));
    Some(item)
}

/// A file matched by code search.
pub fn code_item(v: &Value) -> Option<Item> {
    let path = json::string(v, "path")?;
    let repo = v
        .get("repository")
        .and_then(|r| json::string(r, "full_name"))?;
    let mut item = Item::new(PLATFORM, "code", format!("{repo}:{path}"));
    item.title = Some(path.clone());
    let fragments: Vec<&str> = json::array(v, "text_matches")
        .iter()
        .filter_map(|m| json::str(m, "fragment"))
        .collect();
    item.text = (!fragments.is_empty()).then(|| fragments.join("\n…\n"));
    item.url = json::string(v, "html_url");
    if let Some(r) = v.get("repository") {
        set_author(&mut item, r, "owner");
    }
    item.extra("repository", repo);
    item.extra("path", path);
    item.extra("sha", json::string(v, "sha"));
    Some(item)
}
