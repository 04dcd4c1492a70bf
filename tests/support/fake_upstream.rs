//! A local fake upstream for tests: serves recorded responses in each upstream's wire format,
//! chosen by method, path and query. Shared by the adapters tests and the end-to-end tests
//! (included with `#[path]`), so every suite speaks to upstreams the same way.
//!
//! ```ignore
//! let up = FakeUpstream::start().await;
//! up.route(Route::get("/algolia/search").query("tags", "story").file("techforum/algolia/search.json"));
//! // point the source at up.url("/algolia")
//! ```

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

/// Where fixture files live: `tests/fixtures/` at the workspace root.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

#[derive(Clone)]
pub enum Reply {
    /// A fixture file under `tests/fixtures/`, served as is.
    File(String),
    /// A literal body.
    Body(Vec<u8>),
    /// Waits, then answers with the inner reply (for timeouts).
    Delay(Duration, Box<Reply>),
    /// Closes the connection without an answer.
    Hang,
}

#[derive(Clone)]
pub struct Route {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    status: u16,
    headers: Vec<(String, String)>,
    reply: Reply,
    /// Answer at most this many times (then fall through to later routes).
    times: Option<usize>,
}

impl Route {
    pub fn get(path: &str) -> Self {
        Route::new("GET", path)
    }

    pub fn new(method: &str, path: &str) -> Self {
        Route {
            method: method.into(),
            path: path.into(),
            query: Vec::new(),
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            reply: Reply::Body(b"{}".to_vec()),
            times: None,
        }
    }

    /// Requires this query pair (other pairs may be present too).
    pub fn query(mut self, key: &str, value: &str) -> Self {
        self.query.push((key.into(), value.into()));
        self
    }

    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn file(mut self, fixture: &str) -> Self {
        if fixture.ends_with(".xml") || fixture.ends_with(".rss") {
            self = self.header("content-type", "application/rss+xml; charset=utf-8");
        } else if fixture.ends_with(".html") {
            self = self.header("content-type", "text/html; charset=utf-8");
        }
        self.reply = Reply::File(fixture.into());
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.reply = Reply::Body(body.into());
        self
    }

    pub fn delay(mut self, d: Duration) -> Self {
        self.reply = Reply::Delay(d, Box::new(self.reply));
        self
    }

    pub fn hang(mut self) -> Self {
        self.reply = Reply::Hang;
        self
    }

    pub fn times(mut self, n: usize) -> Self {
        self.times = Some(n);
        self
    }

    fn matches(&self, method: &str, path: &str, query: &[(String, String)]) -> bool {
        self.method == method
            && self.path == path
            && self.times != Some(0)
            && self.query.iter().all(|q| query.contains(q))
    }
}

/// One request the fake upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
}

#[derive(Default)]
struct State {
    routes: Vec<Route>,
    seen: Vec<Seen>,
}

/// The running fake upstream. Unmatched requests get 404 with a JSON body naming the request.
#[derive(Clone)]
pub struct FakeUpstream {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FakeUpstream {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake upstream");
        let addr = listener.local_addr().expect("local address");
        let shared = state.clone();
        let app = axum::Router::new().fallback(move |req: Request| handle(shared.clone(), req));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeUpstream { addr, state }
    }

    /// Starts it on a runtime of its own thread, for callers without an async context.
    pub fn start_blocking() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                tx.send(FakeUpstream::start().await).expect("send");
                std::future::pending::<()>().await;
            });
        });
        rx.recv().expect("fake upstream started")
    }

    /// `http://127.0.0.1:PORT` + `prefix`.
    pub fn url(&self, prefix: &str) -> String {
        format!("http://{}{}", self.addr, prefix)
    }

    pub fn route(&self, route: Route) -> &Self {
        self.state.lock().expect("lock").routes.push(route);
        self
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().expect("lock").seen.clone()
    }

    pub fn reset(&self) {
        let mut s = self.state.lock().expect("lock");
        s.routes.clear();
        s.seen.clear();
    }
}

fn parse_query(q: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

async fn handle(state: Arc<Mutex<State>>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = parse_query(req.uri().query().unwrap_or(""));
    let route = {
        let mut s = state.lock().expect("lock");
        s.seen.push(Seen {
            method: method.clone(),
            path: path.clone(),
            query: query.clone(),
            headers: req.headers().clone(),
        });
        let found = s
            .routes
            .iter_mut()
            .find(|r| r.matches(&method, &path, &query));
        found.map(|r| {
            if let Some(n) = r.times.as_mut() {
                *n -= 1;
            }
            r.clone()
        })
    };
    let Some(route) = route else {
        let body = format!("{{\"error\":\"no fake route for {method} {path}?{query:?}\"}}");
        return Response::builder()
            .status(404)
            .body(Body::from(body))
            .expect("response");
    };
    let mut reply = route.reply.clone();
    loop {
        match reply {
            Reply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            Reply::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                reply = Reply::Body(Vec::new());
            }
            _ => break,
        }
    }
    let body = match reply {
        Reply::File(name) => std::fs::read(fixtures_dir().join(&name))
            .unwrap_or_else(|e| panic!("fixture {name}: {e}")),
        Reply::Body(b) => b,
        Reply::Delay(..) | Reply::Hang => Vec::new(),
    };
    let mut res =
        Response::builder().status(StatusCode::from_u16(route.status).unwrap_or(StatusCode::OK));
    for (k, v) in &route.headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k.as_str()), HeaderValue::from_str(v)) {
            res = res.header(k, v);
        }
    }
    res.body(Body::from(body)).expect("response")
}
