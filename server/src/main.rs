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
    /// Print the OpenAPI document to stdout.
    Openapi {
        /// `3.1` (default) or `3.0`.
        #[arg(long, default_value = "3.1", value_parser = ["3.1", "3.0"])]
        version: String,
    },
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
    let app = server::app(AppState::new(config)?);
    tracing::info!("socialsearch listening on http://{addr}");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown())
        .await
        .map_err(|e| e.to_string())
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
