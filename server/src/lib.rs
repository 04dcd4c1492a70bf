//! The socialsearch runtime: the generated routes of the catalogue, wired to authentication,
//! credits, sources and the account operations.

pub mod accounts;
pub mod auth;
pub mod billing;
pub mod config;
pub mod cursor_secret;
pub mod db;
pub mod error;
pub mod http;
pub mod listener;
pub mod ops;
pub mod platform;

use std::sync::Arc;

use axum::Router;
use serde_json::{Value, json};

pub use config::Config;

/// Generated from the catalogue: error codes, typed operation inputs, the router and the OpenAPI documents.
#[allow(clippy::all, clippy::pedantic, unused_mut)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/server_api.rs"));
}

/// Shared state of the running service.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub config: Config,
    pub sources: adapters::sources::Sources,
    pub accounts: accounts::Accounts,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Connects to the database in force (`DATABASE_URL`, else the configuration, else the default).
    pub async fn start(config: Config) -> Result<Self, String> {
        let url = db::resolve_url(config.database_url.as_deref());
        let db = db::Db::connect_with(&url, &config.sqlite_synchronous).await?;
        AppState::with_db(config, db).await
    }

    pub async fn with_db(config: Config, db: db::Db) -> Result<Self, String> {
        let sources = adapters::sources::Sources::new(&config.sources)?;
        let accounts = accounts::Accounts::start(&config, db).await?;
        // Cursors are sealed with the deployment's shared secret, re-read so rotations arrive.
        sources.set_cursor_keys(cursor_secret::load(&accounts.db, &config.cursors).await?);
        let state = AppState(Arc::new(Inner {
            config,
            sources,
            accounts,
        }));
        cursor_secret::keep_loading(Arc::downgrade(&state.0), &state.config.cursors);
        Ok(state)
    }

    /// Releases holds left by a crash (every hold older than `cutoff`), then keeps releasing holds
    /// older than the configured expiry every few seconds.
    pub async fn release_stale_holds(&self, cutoff: i64) -> Result<usize, String> {
        self.accounts
            .ledger
            .release_stale(&self.accounts.db, cutoff)
            .await
            .map_err(|e| format!("releasing stale holds: {e}"))
    }

    pub fn spawn_janitor(&self) {
        let state = self.clone();
        tokio::spawn(async move {
            let expiry = state.config.limits.hold_expiry_seconds as i64;
            let every = (expiry as u64 / 2).clamp(1, 10);
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(every));
            loop {
                tick.tick().await;
                match state.release_stale_holds(db::now() - expiry).await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!("released {n} expired credit holds"),
                    Err(e) => tracing::error!("{e}"),
                }
            }
        });
    }

    /// The body of GET /v1/status.
    pub fn status(&self) -> Value {
        let endpoints = &adapters::api::ENDPOINTS;
        let platforms: Vec<Value> = adapters::api::PLATFORMS
            .iter()
            .map(|(platform, kind)| {
                json!({
                    "platform": platform,
                    "kind": kind,
                    "endpoints": endpoints.iter().filter(|m| m.platform == *platform).count(),
                    "status": self.sources.platform_status(platform),
                    "sources": self.sources.source_states(platform),
                })
            })
            .collect();
        let all_ok = platforms.iter().all(|p| p["status"] == "ok");
        json!({
            "ok": true,
            "status": if all_ok { "ok" } else { "degraded" },
            "version": adapters::api::API_VERSION,
            "endpoint_count": endpoints.len(),
            "platforms": platforms,
        })
    }
}

/// The whole application: catalogue routes, fallbacks, panic catching and the request context.
pub fn app(state: AppState) -> Router {
    with_service_layers(
        api::catalogue_router()
            .fallback(http::unknown_endpoint)
            .method_not_allowed_fallback(http::unknown_endpoint)
            .with_state(state),
    )
}

/// The layers every route runs under: panic catching inside the request context, so a panic
/// still answers in the envelope with the request id. Public so tests can wrap their own routes
/// exactly as `app` does.
pub fn with_service_layers(router: Router) -> Router {
    router
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            http::panic_response,
        ))
        .layer(axum::middleware::from_fn(http::request_context))
}
