//! The socket as hyper sees it: every request head is read and checked here first, so that
//! malformed framing is answered in the spec's envelope (hyper can only answer it with a bare
//! status line), and slow or idle clients are timed out.
//!
//! A checked head is handed to hyper whole, then exactly its `Content-Length` of body, then the
//! next head is checked (keep-alive and pipelining keep working). A refused head is replaced by a
//! synthetic request for the refusal path, which carries an unguessable per-process token, and
//! the connection is closed after its answer.

use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use crate::error::ErrorCode;

/// Header fields a request may have, as hyper's own default.
const MAX_HEADERS: usize = 100;
/// The longest path kept as the refusal envelope's `endpoint`.
const MAX_ENDPOINT: usize = 256;
/// Bytes read from the socket at once while a head is incomplete.
const READ_CHUNK: usize = 4096;

/// The limits a connection is held to (from the `[server]` configuration).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_url: usize,
    pub max_head: usize,
}

/// Why a request head was refused, for the envelope the refusal path answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    /// The path of the refused request (cut short), as the envelope's `endpoint`.
    pub endpoint: String,
}

/// What the connection's request handling and its socket share.
#[derive(Default)]
pub struct Shared {
    /// Requests handed to the application and not answered yet.
    active: AtomicUsize,
    /// When the last answer was ready, in nanoseconds since the connection started.
    last_done: AtomicU64,
    /// The refusal the next synthetic request stands for.
    refusal: Mutex<Option<Refusal>>,
}

/// Counts one request as active until dropped.
pub struct Active<'a> {
    shared: &'a Shared,
    started: Instant,
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.shared
            .last_done
            .store(self.started.elapsed().as_nanos() as u64, Ordering::Release);
        self.shared.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Shared {
    pub fn begin(&self, started: Instant) -> Active<'_> {
        self.active.fetch_add(1, Ordering::AcqRel);
        Active {
            shared: self,
            started,
        }
    }

    pub fn take_refusal(&self) -> Option<Refusal> {
        self.refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// The outcome of checking the bytes received so far against the head rules.
#[derive(Debug, PartialEq, Eq)]
pub enum Head {
    /// More bytes are needed.
    Partial,
    /// A valid head of `len` bytes, followed by `body` bytes of body.
    Complete {
        len: usize,
        body: u64,
    },
    Refused(Refusal),
}

fn refuse(code: ErrorCode, message: String, path: &[u8]) -> Head {
    let mut end = path
        .iter()
        .position(|b| *b == b'?')
        .unwrap_or(path.len())
        .min(MAX_ENDPOINT);
    while end > 0 && std::str::from_utf8(&path[..end]).is_err() {
        end -= 1;
    }
    let endpoint = String::from_utf8_lossy(&path[..end]).into_owned();
    Head::Refused(Refusal {
        code,
        message,
        endpoint,
    })
}

fn bad(message: String, path: &[u8]) -> Head {
    refuse(ErrorCode::BadRequest, message, path)
}

/// The request target of a head whose request line is complete (for the refusal's `endpoint`).
fn target_of(bytes: &[u8]) -> &[u8] {
    let line = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
    line.split(|b| *b == b' ').nth(1).unwrap_or(&[])
}

/// Checks the head at the start of `bytes` under `limits`.
pub fn check_head(bytes: &[u8], limits: &Limits) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            if bytes.len() <= limits.max_head {
                return Head::Partial;
            }
            if !bytes.contains(&b'\n') {
                return bad(
                    format!(
                        "the request URL is over {} bytes; send a shorter one",
                        limits.max_url
                    ),
                    target_of(bytes),
                );
            }
            return bad(
                format!(
                    "the request head (request line and header fields) is over {} bytes",
                    limits.max_head
                ),
                target_of(bytes),
            );
        }
        Err(httparse::Error::TooManyHeaders) => {
            return bad(
                format!("the request has more than {MAX_HEADERS} header fields"),
                target_of(bytes),
            );
        }
        Err(e) => {
            return bad(
                format!("the request is not valid HTTP/1.1 ({e})"),
                target_of(bytes),
            );
        }
    };
    let path = req.path.unwrap_or("").as_bytes();
    if len > limits.max_head {
        return bad(
            format!(
                "the request head (request line and header fields) is over {} bytes",
                limits.max_head
            ),
            path,
        );
    }
    if path.len() > limits.max_url {
        return bad(
            format!(
                "the request URL is over {} bytes; send a shorter one",
                limits.max_url
            ),
            path,
        );
    }
    if !valid_target(path) {
        return bad("the request URL is not a valid request target".into(), path);
    }
    let mut length: Option<u64> = None;
    let mut transfer_encoding = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // One header may list the value several times (`5, 5`); every value must agree.
            for part in h.value.split(|b| *b == b',') {
                let Some(n) = parse_length(part) else {
                    return bad(
                        "the Content-Length header is not a non-negative whole number".into(),
                        path,
                    );
                };
                if length.is_some_and(|l| l != n) {
                    return bad(
                        "the request has Content-Length headers with different values".into(),
                        path,
                    );
                }
                length = Some(n);
            }
        }
    }
    if transfer_encoding {
        if length.is_some() {
            return bad(
                "the request has both Content-Length and Transfer-Encoding; send only Content-Length"
                    .into(),
                path,
            );
        }
        return refuse(
            ErrorCode::LengthRequired,
            "chunked request bodies are refused; send the body with a Content-Length header".into(),
            path,
        );
    }
    Head::Complete {
        len,
        body: length.unwrap_or(0),
    }
}

/// Digits only, surrounded by optional blanks, that fit a u64.
fn parse_length(raw: &[u8]) -> Option<u64> {
    let trimmed = raw.trim_ascii();
    if trimmed.is_empty() || !trimmed.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(trimmed).ok()?.parse().ok()
}

/// Whether hyper will accept the target: the common origin form is checked by bytes with no
/// allocation; anything else goes through the same URI parser hyper uses.
fn valid_target(path: &[u8]) -> bool {
    let plain = |b: &u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(b);
    if path.first() == Some(&b'/') && path.iter().all(plain) {
        return true;
    }
    axum::http::Uri::try_from(path).is_ok()
}

enum State {
    /// Reading the next head. `since`: when its first byte came (or the connection started).
    Head { since: Option<Instant> },
    /// Handing hyper `left` more bytes of the current request (head, then body).
    Forward { left: u64, since: Instant },
    /// Handing hyper the synthetic request of a refusal; `sent` bytes of it so far.
    Refused { sent: usize },
    /// After a refusal: nothing more is read; hyper closes once the answer is written.
    Done,
}

/// The TCP stream with the head check and the read timeouts in front of it.
pub struct Framing {
    io: TcpStream,
    /// Bytes read from the socket and not yet handed to hyper: `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    state: State,
    limits: Limits,
    shared: std::sync::Arc<Shared>,
    started: Instant,
    /// The synthetic request a refusal is replaced with.
    refusal_request: &'static [u8],
    timer: Pin<Box<Sleep>>,
    armed: Instant,
}

impl Framing {
    pub fn new(
        io: TcpStream,
        limits: Limits,
        shared: std::sync::Arc<Shared>,
        started: Instant,
        refusal_request: &'static [u8],
    ) -> Self {
        let deadline = started + limits.header_timeout;
        Framing {
            io,
            buf: Vec::new(),
            pos: 0,
            state: State::Head {
                since: Some(started),
            },
            limits,
            shared,
            started,
            refusal_request,
            timer: Box::pin(tokio::time::sleep_until(deadline.into())),
            armed: deadline,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// When the connection's wait for the client ends. A body is owed in full within its time;
    /// a head only once the application has answered the requests before it (`None` until then).
    fn deadline(&self) -> Option<Instant> {
        let since = match &self.state {
            State::Forward { since, .. } => return Some(*since + self.limits.body_timeout),
            State::Refused { .. } | State::Done => return None,
            State::Head { since } => *since,
        };
        if self.shared.active.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last_done =
            self.started + Duration::from_nanos(self.shared.last_done.load(Ordering::Acquire));
        Some(match since {
            Some(since) => since.max(last_done) + self.limits.header_timeout,
            None => last_done + self.limits.idle_timeout,
        })
    }

    /// Called when the socket has nothing to read: `Ready` when the client has run out of time.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let now = Instant::now();
            // No deadline while the application answers: look again later, when the wait may
            // have begun.
            let target = self.deadline().unwrap_or(now + self.limits.idle_timeout);
            // The timer is moved only earlier (or once it has fired): a deadline that moved
            // later is found when the timer fires, so a busy connection rarely touches the timer.
            if target < self.armed || self.armed <= now {
                self.timer.as_mut().reset(target.into());
                self.armed = target;
            }
            ready!(self.timer.as_mut().poll(cx));
            if self.deadline().is_some_and(|d| d <= Instant::now()) {
                return Poll::Ready(());
            }
        }
    }

    /// Reads more bytes into `buf` (bounded by the head limit); `Ok(0)` at end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.buf.len();
        let room = (self.limits.max_head + 1)
            .saturating_sub(len)
            .clamp(1, READ_CHUNK);
        self.buf.resize(len + room, 0);
        let mut rb = ReadBuf::new(&mut self.buf[len..]);
        let polled = Pin::new(&mut self.io).poll_read(cx, &mut rb);
        let n = rb.filled().len();
        self.buf.truncate(len + n);
        ready!(polled)?;
        Poll::Ready(Ok(n))
    }

    fn poll_read_inner(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            match &mut self.state {
                State::Head { since } => {
                    if !self.buf[self.pos..].is_empty() {
                        let since = *since;
                        match check_head(self.buffered(), &self.limits) {
                            Head::Complete { len, body } => {
                                self.state = State::Forward {
                                    left: len as u64 + body,
                                    since: Instant::now(),
                                };
                                continue;
                            }
                            Head::Refused(refusal) => {
                                *self
                                    .shared
                                    .refusal
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner()) = Some(refusal);
                                self.buf.clear();
                                self.pos = 0;
                                self.state = State::Refused { sent: 0 };
                                continue;
                            }
                            Head::Partial => {
                                self.state = State::Head {
                                    since: since.or_else(|| Some(Instant::now())),
                                };
                            }
                        }
                    }
                    match self.poll_fill(cx) {
                        Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                        Poll::Ready(Ok(_)) => continue,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => {
                            ready!(self.poll_expired(cx));
                            // Out of time for a head: end of stream, so hyper closes quietly.
                            return Poll::Ready(Ok(()));
                        }
                    }
                }
                State::Forward { left, .. } => {
                    if *left == 0 {
                        self.state = State::Head { since: None };
                        continue;
                    }
                    let want = (*left).min(dst.remaining() as u64) as usize;
                    let buffered = self.buf.len() - self.pos;
                    if buffered > 0 {
                        let n = want.min(buffered);
                        dst.put_slice(&self.buf[self.pos..self.pos + n]);
                        self.pos += n;
                        *left -= n as u64;
                        if self.pos == self.buf.len() {
                            self.buf.clear();
                            self.pos = 0;
                        }
                        return Poll::Ready(Ok(()));
                    }
                    // The body beyond what came with the head goes straight to hyper, never
                    // past its own end (the next head must be checked first).
                    let mut part = ReadBuf::new(dst.initialize_unfilled_to(want));
                    match Pin::new(&mut self.io).poll_read(cx, &mut part) {
                        Poll::Ready(Ok(())) => {
                            let n = part.filled().len();
                            *left -= n as u64;
                            dst.advance(n);
                            return Poll::Ready(Ok(()));
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => {
                            ready!(self.poll_expired(cx));
                            return Poll::Ready(Err(io::Error::new(
                                io::ErrorKind::TimedOut,
                                "the request body did not arrive in time",
                            )));
                        }
                    }
                }
                State::Refused { sent } => {
                    let rest = &self.refusal_request[*sent..];
                    let n = rest.len().min(dst.remaining());
                    dst.put_slice(&rest[..n]);
                    *sent += n;
                    if *sent == self.refusal_request.len() {
                        self.state = State::Done;
                    }
                    return Poll::Ready(Ok(()));
                }
                // Not end of stream: hyper would take that for a client that hung up and drop
                // the answer. It closes the connection itself once the answer is written.
                State::Done => return Poll::Pending,
            }
        }
    }
}

impl AsyncRead for Framing {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().poll_read_inner(cx, dst)
    }
}

impl AsyncWrite for Framing {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_url: 64,
            max_head: 256,
        }
    }

    fn refusal(bytes: &[u8]) -> Refusal {
        match check_head(bytes, &limits()) {
            Head::Refused(r) => r,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn good_heads_pass_with_their_body_length() {
        let get = b"GET /v1/status?a=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
        assert_eq!(
            check_head(get, &limits()),
            Head::Complete {
                len: get.len() - 9,
                body: 0
            }
        );
        let post = b"POST /v1/keys HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2, 2\r\n\r\n{}";
        assert!(matches!(
            check_head(post, &limits()),
            Head::Complete { body: 2, .. }
        ));
        assert_eq!(
            check_head(b"GET /v1/status HTTP/1.1\r\nHo", &limits()),
            Head::Partial
        );
    }

    #[test]
    fn bad_lengths_are_refused_with_a_message() {
        for (head, says) in [
            ("Content-Length: abc", "not a non-negative"),
            ("Content-Length: -1", "not a non-negative"),
            (
                "Content-Length: 99999999999999999999999",
                "not a non-negative",
            ),
            ("Content-Length: 2\r\nContent-Length: 3", "different values"),
            (
                "Content-Length: 2\r\nTransfer-Encoding: chunked",
                "both Content-Length and Transfer-Encoding",
            ),
        ] {
            let r = refusal(format!("POST /v1/keys HTTP/1.1\r\n{head}\r\n\r\n").as_bytes());
            assert_eq!(r.code, ErrorCode::BadRequest, "{head}");
            assert!(r.message.contains(says), "{head}: {}", r.message);
            assert_eq!(r.endpoint, "/v1/keys");
        }
        let chunked = refusal(b"POST /v1/keys HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(chunked.code, ErrorCode::LengthRequired);
    }

    #[test]
    fn oversized_heads_and_urls_state_the_limit() {
        let long_url = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(100));
        let r = refusal(long_url.as_bytes());
        assert!(r.message.contains("URL is over 64 bytes"), "{}", r.message);
        // A request line that never ends within the head limit is an over-long URL too.
        let r = refusal(format!("GET /{}?q=1", "a".repeat(300)).as_bytes());
        assert!(r.message.contains("URL is over 64 bytes"), "{}", r.message);
        assert!(r.endpoint.starts_with("/aaa"), "{}", r.endpoint);
        assert_eq!(r.endpoint.len(), MAX_ENDPOINT);
        let big = format!("GET /x HTTP/1.1\r\nx-big: {}\r\n", "b".repeat(300));
        let r = refusal(big.as_bytes());
        assert!(r.message.contains("head"), "{}", r.message);
        assert!(r.message.contains("over 256 bytes"), "{}", r.message);
        assert_eq!(r.endpoint, "/x");
        let garbage = refusal(b"GET /x HTTP/1.1\r\nbad header\r\n\r\n");
        assert!(garbage.message.contains("not valid HTTP/1.1"));
    }
}
