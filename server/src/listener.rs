//! The HTTP/1 accept loop: a cap on open connections, read timeouts and the head check of
//! [`framing`], and a graceful shutdown bounded in time (docs/decisions.md, "Connections").

pub mod framing;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

use crate::config;
use framing::{Framing, Shared};

/// Where connections stand in the shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Running,
    /// Finish the request in flight, then close; idle connections close at once.
    Graceful,
    /// Close now (the grace period is over).
    Now,
}

/// What every connection task shares.
struct Common {
    app: Router,
    http: hyper::server::conn::http1::Builder,
    limits: framing::Limits,
    /// The path of the synthetic request a refused head is replaced with (random per process).
    refusal_path: String,
    refusal_request: &'static [u8],
}

/// How the serving ended.
#[derive(Debug, Default)]
pub struct Stopped {
    /// Connections still busy when the grace period ran out, closed without their answer.
    pub cut: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets requests in
/// flight finish for `shutdown_grace_ms`, and closes what is left.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    settings: &config::Server,
    shutdown: impl Future<Output = ()>,
) -> Stopped {
    let common = Arc::new(common(app, settings));
    let max = settings.max_connections;
    // A connection holds a permit for its whole life. At the cap the loop stops accepting, so
    // further connections wait in the kernel's listen backlog rather than being refused.
    let permits = Arc::new(Semaphore::new(max));
    let (stop_tx, stop_rx) = watch::channel(Stop::Running);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let common = common.clone();
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            connection(common, stream, peer, stop).await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop_tx.send(Stop::Graceful);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let grace = Duration::from_millis(settings.shutdown_grace_ms);
    let mut stopped = Stopped::default();
    if tokio::time::timeout(grace, permits.acquire_many(all))
        .await
        .is_err()
    {
        stopped.cut = max - permits.available_permits();
        tracing::warn!(
            connections = stopped.cut,
            "shutdown grace period over; closing the connections still busy"
        );
        let _ = stop_tx.send(Stop::Now);
        let _ = tokio::time::timeout(Duration::from_secs(2), permits.acquire_many(all)).await;
    }
    stopped
}

fn common(app: Router, s: &config::Server) -> Common {
    let mut http = hyper::server::conn::http1::Builder::new();
    // Head timing is done by `Framing`, which sees the bytes before hyper does.
    http.header_read_timeout(None);
    let mut token = [0u8; 16];
    // Without the OS generator the path is still unlikely to be guessed from the clock alone.
    if getrandom::fill(&mut token).is_err() {
        token = u128::from(std::process::id())
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .to_le_bytes();
    }
    let hex: String = token.iter().map(|b| format!("{b:02x}")).collect();
    let refusal_path = format!("/.refused/{hex}");
    let request =
        format!("GET {refusal_path} HTTP/1.1\r\nhost: refused\r\nconnection: close\r\n\r\n");
    Common {
        app,
        http,
        limits: framing::Limits {
            header_timeout: Duration::from_millis(s.header_timeout_ms),
            body_timeout: Duration::from_millis(s.body_timeout_ms),
            idle_timeout: Duration::from_millis(s.idle_timeout_ms),
            max_url: s.max_url_bytes,
            max_head: s.max_head_bytes,
        },
        refusal_path,
        // Made once per process; leaking it lets every connection hand it out without a copy.
        refusal_request: Box::leak(request.into_bytes().into_boxed_slice()),
    }
}

async fn connection(
    common: Arc<Common>,
    stream: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<Stop>,
) {
    let _ = stream.set_nodelay(true);
    let started = Instant::now();
    let shared = Arc::new(Shared::default());
    let io = Framing::new(
        stream,
        common.limits,
        shared.clone(),
        started,
        common.refusal_request,
    );
    let service = {
        let common = common.clone();
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let common = common.clone();
            let shared = shared.clone();
            async move {
                let _active = shared.begin(started);
                if req.uri().path() == common.refusal_path {
                    let refusal = shared.take_refusal();
                    return Ok::<_, Infallible>(refused(refusal, peer));
                }
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(ConnectInfo(peer));
                common.app.clone().oneshot(req).await
            }
        })
    };
    let conn = common.http.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    if *stop.borrow_and_update() != Stop::Running {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!(error = %e, %peer, "connection ended with an error");
                }
                return;
            }
            changed = stop.changed() => {
                let now = match changed {
                    Ok(()) => *stop.borrow_and_update(),
                    Err(_) => Stop::Now,
                };
                match now {
                    Stop::Running => {}
                    Stop::Graceful => conn.as_mut().graceful_shutdown(),
                    // Dropping the connection drops its request: a paid call in flight releases its hold.
                    Stop::Now => return,
                }
            }
        }
    }
}

/// The answer to the synthetic request of a refused head.
fn refused(refusal: Option<framing::Refusal>, peer: SocketAddr) -> axum::response::Response {
    let (error, endpoint) = match refusal {
        Some(r) => (crate::error::ApiError::new(r.code, r.message), r.endpoint),
        // Only reachable by a request naming the secret path itself: it is no route.
        None => (
            crate::error::ApiError::new(crate::error::ErrorCode::UnknownEndpoint, "no such route"),
            String::new(),
        ),
    };
    crate::http::respond_outside_router(endpoint, peer.ip().to_string(), error)
}
