//! The `socialsearch` binary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use server::{AppState, Config};

#[derive(Parser)]
#[command(
    name = "socialsearch",
    version,
    about = "Search and read public social content through one API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service.
    Serve {
        /// Address to listen on (default 127.0.0.1:8080, or `listen` in the config).
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// TOML configuration file (also SOCIALSEARCH_CONFIG).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print every upstream source as JSON: id, platform, base URL, endpoints, credential, enabled.
    Sources {
        /// TOML configuration file (also SOCIALSEARCH_CONFIG).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Operator commands on the database (the same DATABASE_URL as `serve`).
    Admin {
        /// TOML configuration file (also SOCIALSEARCH_CONFIG).
        #[arg(long, global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        command: Admin,
    },
    /// Print the OpenAPI document to stdout.
    Openapi {
        /// `3.1` (default) or `3.0`.
        #[arg(long, default_value = "3.1", value_parser = ["3.1", "3.0"])]
        version: String,
    },
}

#[derive(Subcommand)]
enum Admin {
    /// Create an account (no-op if it exists); prints it as JSON.
    CreateAccount {
        #[arg(long)]
        email: String,
        /// Credits of the new account (default: the sign-up credits, 50).
        #[arg(long)]
        credits: Option<i64>,
    },
    /// Add credits to an account (a `grant` ledger row); prints the new balance as JSON.
    Grant {
        #[arg(long)]
        email: String,
        #[arg(long)]
        credits: i64,
    },
    /// Create an API key (and the account if needed); prints only the key, once.
    CreateKey {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
    },
    /// Print an account as JSON: balance and keys by prefix.
    Account {
        #[arg(long)]
        email: String,
    },
    /// Replace the secret that seals pagination cursors; the previous one stays accepted for
    /// `[cursors] previous_accepted_hours`. Prints the key ids as JSON, never a secret.
    RotateCursorSecret,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Openapi { version } => {
            let doc = if version == "3.0" {
                server::api::OPENAPI_30_JSON
            } else {
                server::api::OPENAPI_JSON
            };
            println!("{}", doc.trim_end());
            ExitCode::SUCCESS
        }
        Command::Sources { config } => {
            let listing = Config::load(config.as_deref())
                .and_then(|c| adapters::sources::Sources::new(&c.sources))
                .map(|s| serde_json::to_string_pretty(&s.list()).unwrap_or_default());
            match listing {
                Ok(text) => {
                    println!("{text}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Admin { config, command } => {
            let config = match Config::load(config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(admin(config, command)))
            {
                Ok(out) => {
                    println!("{out}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Serve { listen, config } => {
            init_logging();
            let config = match Config::load(config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build();
            match runtime
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(serve(config, listen)))
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn init_logging() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: logs redirected to files and pipes stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

async fn serve(mut config: Config, listen: Option<SocketAddr>) -> Result<(), String> {
    if let Some(addr) = listen {
        config.listen = addr;
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    if config.public_url.is_empty() {
        config.public_url = format!("http://{addr}");
    }
    let state = AppState::start(config).await?;
    let released = state.release_stale_holds(server::db::now() + 1).await?;
    if released > 0 {
        tracing::warn!("released {released} credit holds left by an earlier run");
    }
    state.spawn_janitor();
    tracing::info!("sign-in e-mail: {}", state.accounts.mailer.describe());
    let app = server::app(state.clone());
    tracing::info!("socialsearch listening on http://{addr}");
    let stopped = server::listener::serve(listener, app, &state.config.server, shutdown()).await;
    tracing::info!(
        cut = stopped.cut,
        "stopped accepting; connections closed, waiting for paid calls to settle"
    );
    // Calls whose connection was cut release their reservation as soon as they notice.
    if !server::platform::calls_ended(std::time::Duration::from_secs(5)).await {
        tracing::warn!(
            "paid calls still running at exit; their holds are released at the next start"
        );
    }
    // Every answered call is already committed; this writes the remaining call log.
    state.accounts.ledger.shutdown().await;
    state.accounts.db.close().await;
    tracing::info!("socialsearch stopped");
    Ok(())
}

async fn admin(config: Config, command: Admin) -> Result<String, String> {
    use server::ops::admin::{AccountBody, GrantBody};
    let state = AppState::start(config).await?;
    let a = &state.accounts;
    let fail = |e: server::accounts::AccountsError| e.to_string();
    let out = match command {
        Admin::CreateAccount { email, credits } => {
            let credits = credits.unwrap_or(state.config.signin.signup_credits);
            let (_, created) = a.ensure_account(&email, credits).await.map_err(fail)?;
            let view = a.admin_view(&email).await.map_err(fail)?;
            let mut view = serde_json::to_value(view.map(AccountBody::from)).unwrap_or_default();
            view["created"] = created.into();
            serde_json::to_string_pretty(&view).unwrap_or_default()
        }
        Admin::Grant { email, credits } => {
            if credits <= 0 {
                return Err("--credits must be a positive number".into());
            }
            let (id, _) = a
                .account_by_email(&email)
                .await
                .map_err(fail)?
                .ok_or_else(|| format!("no account for {email}"))?;
            let reference = server::accounts::secrets::new_id("admin:");
            let balance = a
                .grant(&id, credits, "grant", &reference)
                .await
                .map_err(fail)?;
            let body = GrantBody {
                ok: true,
                email,
                granted: credits,
                balance,
            };
            serde_json::to_string(&body).unwrap_or_default()
        }
        Admin::CreateKey { email, name } => {
            let (id, _) = a
                .ensure_account(&email, state.config.signin.signup_credits)
                .await
                .map_err(fail)?;
            server::accounts::admin_create_key(&a.db, &id, name.as_deref())
                .await
                .map_err(fail)?
        }
        Admin::Account { email } => {
            let view = a
                .admin_view(&email)
                .await
                .map_err(fail)?
                .ok_or_else(|| format!("no account for {email}"))?;
            serde_json::to_string_pretty(&AccountBody::from(view)).unwrap_or_default()
        }
        Admin::RotateCursorSecret => {
            let rotation = server::cursor_secret::rotate(&a.db).await?;
            serde_json::json!({ "ok": true, "rotation": rotation }).to_string()
        }
    };
    a.ledger.shutdown().await;
    a.db.close().await;
    Ok(out)
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
