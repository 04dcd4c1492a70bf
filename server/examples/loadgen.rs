//! Load generator of the benchmark (`bench/run.sh`): an instant upstream, seeding of accounts and keys,
//! and closed-loop (throughput) or open-loop (latency at a fixed rate) runs. Not part of the service.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the recorded techforum search answer for any GET, at once.
    Upstream {
        #[arg(long)]
        listen: SocketAddr,
    },
    /// Create accounts with keys in the database; write the keys, one a line.
    Seed {
        #[arg(long)]
        accounts: usize,
        #[arg(long)]
        keys_per_account: usize,
        #[arg(long)]
        credits: i64,
        #[arg(long)]
        out: String,
    },
    /// Send GET requests and print throughput and latency.
    Run {
        #[arg(long)]
        url: String,
        /// File of keys sent round-robin as x-api-key (none: no header).
        #[arg(long)]
        keys: Option<String>,
        /// Closed loop with this many concurrent clients (throughput).
        #[arg(long)]
        concurrency: Option<usize>,
        /// Open loop at this many requests per second (latency).
        #[arg(long)]
        rate: Option<u64>,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long)]
        label: String,
    },
}

fn main() {
    let cli = Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        match cli.command {
            Cmd::Upstream { listen } => upstream(listen).await,
            Cmd::Seed {
                accounts,
                keys_per_account,
                credits,
                out,
            } => seed(accounts, keys_per_account, credits, &out).await,
            Cmd::Run {
                url,
                keys,
                concurrency,
                rate,
                seconds,
                label,
            } => {
                let keys: Vec<String> = keys
                    .map(|p| {
                        std::fs::read_to_string(p)
                            .expect("keys file")
                            .lines()
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                run(url, keys, concurrency, rate, seconds, label).await
            }
        }
    });
}

async fn upstream(listen: SocketAddr) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/techforum/algolia/search_story.json"
    );
    let body = bytes_of(path);
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "application/json")], body) }
    });
    let listener = tokio::net::TcpListener::bind(listen).await.expect("bind");
    eprintln!(
        "upstream on http://{}",
        listener.local_addr().expect("addr")
    );
    axum::serve(listener, app).await.expect("serve");
}

fn bytes_of(path: &str) -> axum::body::Bytes {
    axum::body::Bytes::from(std::fs::read(path).expect("fixture"))
}

async fn seed(accounts: usize, keys_per_account: usize, credits: i64, out: &str) {
    let config = server::Config::load(None).expect("config");
    let state = server::AppState::start(config).await.expect("database");
    let a = &state.accounts;
    let mut keys = Vec::with_capacity(accounts * keys_per_account);
    for i in 0..accounts {
        let (id, _) = a
            .ensure_account(&format!("bench{i}@example.com"), credits)
            .await
            .expect("account");
        for _ in 0..keys_per_account {
            keys.push(
                server::accounts::admin_create_key(&a.db, &id, Some("bench"))
                    .await
                    .expect("key"),
            );
        }
    }
    std::fs::write(out, keys.join("\n")).expect("write keys");
    a.ledger.shutdown().await;
    eprintln!("seeded {accounts} accounts with {} keys", keys.len());
}

struct Stats {
    latencies: Vec<Duration>,
    statuses: std::collections::BTreeMap<u16, usize>,
    errors: usize,
}

async fn one(client: &reqwest::Client, url: &str, key: Option<&str>) -> (Option<u16>, Duration) {
    let start = Instant::now();
    let mut req = client.get(url);
    if let Some(k) = key {
        req = req.header("x-api-key", k);
    }
    let status = match req.send().await {
        Ok(res) => {
            let s = res.status().as_u16();
            let _ = res.bytes().await;
            Some(s)
        }
        Err(_) => None,
    };
    (status, start.elapsed())
}

async fn run(
    url: String,
    keys: Vec<String>,
    concurrency: Option<usize>,
    rate: Option<u64>,
    seconds: u64,
    label: String,
) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .expect("client");
    let keys = Arc::new(keys);
    let next = Arc::new(AtomicUsize::new(0));
    let url = Arc::new(url);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut results: Vec<(Option<u16>, Duration)> = Vec::new();
    if let Some(c) = concurrency {
        let workers: Vec<_> = (0..c)
            .map(|_| {
                let (client, keys, next, url) =
                    (client.clone(), keys.clone(), next.clone(), url.clone());
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    while Instant::now() < deadline {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let key = (!keys.is_empty()).then(|| keys[i % keys.len()].as_str());
                        out.push(one(&client, &url, key).await);
                    }
                    out
                })
            })
            .collect();
        for w in workers {
            results.extend(w.await.expect("worker"));
        }
    } else {
        let rate = rate.unwrap_or(1000).max(1);
        let mut tick = tokio::time::interval(Duration::from_nanos(1_000_000_000 / rate));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut tasks = Vec::new();
        while Instant::now() < deadline {
            tick.tick().await;
            let (client, keys, next, url) =
                (client.clone(), keys.clone(), next.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let key = (!keys.is_empty()).then(|| keys[i % keys.len()].as_str());
                one(&client, &url, key).await
            }));
        }
        for t in tasks {
            results.push(t.await.expect("task"));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut stats = Stats {
        latencies: Vec::with_capacity(results.len()),
        statuses: Default::default(),
        errors: 0,
    };
    for (s, d) in results {
        match s {
            Some(s) => {
                *stats.statuses.entry(s).or_default() += 1;
                stats.latencies.push(d);
            }
            None => stats.errors += 1,
        }
    }
    stats.latencies.sort();
    let pct = |p: f64| {
        let l = &stats.latencies;
        if l.is_empty() {
            0.0
        } else {
            l[((l.len() as f64 * p) as usize).min(l.len() - 1)].as_secs_f64() * 1000.0
        }
    };
    let ok = stats.statuses.get(&200).copied().unwrap_or(0);
    println!(
        "{{\"label\":\"{label}\",\"ok\":{ok},\"per_second\":{:.0},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"statuses\":\"{:?}\",\"errors\":{}}}",
        ok as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        stats.statuses,
        stats.errors
    );
}
