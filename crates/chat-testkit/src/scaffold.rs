//! What every fake platform API shares: a scripted [`Reply`], and one
//! [`Fake`] record (the calls received, the script of answers still to give,
//! the platform's own state) with waiting for calls.
//!
//! A fake is its routes and its platform's success answers; recording,
//! scripting, delaying and waiting live here once.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::pin::pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderName, HeaderValue, StatusCode};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

fn json_type() -> HeaderValue {
    HeaderValue::from_static("application/json; charset=utf-8")
}

/// One scripted answer of a fake platform API: a status, headers, a body (or
/// the call's usual success answer) and an optional delay.
///
/// `P` names the platform ([`SlackApi`](crate::SlackApi),
/// [`LinearApi`](crate::LinearApi)), whose own constructors (Slack's
/// `ok: false` error, Linear's GraphQL error, each one's rate limit) sit
/// beside the shared ones; a reply scripted for one fake cannot be given to
/// another.
pub struct Reply<P> {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// `None`: the call's usual success answer.
    body: Option<Bytes>,
    delay: Duration,
    platform: PhantomData<fn() -> P>,
}

impl<P> Clone for Reply<P> {
    fn clone(&self) -> Self {
        Self {
            status: self.status,
            headers: self.headers.clone(),
            body: self.body.clone(),
            delay: self.delay,
            platform: PhantomData,
        }
    }
}

impl<P> fmt::Debug for Reply<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &self.body)
            .field("delay", &self.delay)
            .finish()
    }
}

impl<P> Reply<P> {
    /// The call's usual success answer (what an empty script gives); with
    /// [`after`](Self::after), a slow one.
    pub fn success() -> Self {
        Self {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: None,
            delay: Duration::ZERO,
            platform: PhantomData,
        }
    }

    /// 200 with `value` as the JSON body.
    pub fn json(value: &Value) -> Self {
        Self::raw(StatusCode::OK, value.to_string()).with_header(CONTENT_TYPE, json_type())
    }

    /// Any status with any body and no headers (a proxy's HTML error page, a
    /// 500, a malformed answer).
    pub fn raw(status: StatusCode, body: impl Into<Bytes>) -> Self {
        Self {
            body: Some(body.into()),
            status,
            ..Self::success()
        }
    }

    /// The same reply with another status.
    #[must_use]
    pub(crate) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Adds a header; one with the same name is replaced.
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value));
        self
    }

    /// Answers only after `delay` (on tokio's clock); the call is recorded on
    /// arrival.
    #[must_use]
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The status this reply answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The body, or — for [`success`](Self::success) — `usual` (the call's
    /// success answer: its status and JSON) with its content type.
    pub(crate) fn body_or(mut self, usual: impl FnOnce() -> (StatusCode, Value)) -> (Self, Bytes) {
        let body = match self.body.take() {
            Some(body) => body,
            None => {
                let (status, value) = usual();
                self.status = status;
                if !self.has_content_type() {
                    self.headers.push((CONTENT_TYPE, json_type()));
                }
                Bytes::from(value.to_string())
            }
        };
        (self, body)
    }

    /// Whether the reply carries a `Content-Type`.
    pub(crate) fn has_content_type(&self) -> bool {
        self.headers.iter().any(|(n, _)| *n == CONTENT_TYPE)
    }

    /// The HTTP answer: `body` with this reply's status and headers, after
    /// its delay.
    pub(crate) async fn respond(self, body: Bytes) -> Response {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status;
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// The token of an `Authorization: Bearer …` header, if any.
pub(crate) fn bearer(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// A call a fake records: what it is keyed by for scripts and
/// `calls_of` (Slack's method, Linear's operation).
pub(crate) trait Call: Clone {
    fn key(&self) -> &str;
}

/// A fake's record: the calls received, the answers scripted and not yet
/// given, and the platform's own state `S`.
pub(crate) struct Book<C, P, S> {
    pub(crate) calls: Vec<C>,
    /// Scripted replies, each for one key (`Some`) or any call (`None`).
    script: VecDeque<(Option<String>, Reply<P>)>,
    pub(crate) state: S,
}

impl<C, P, S> Book<C, P, S> {
    /// The oldest scripted reply for `key` or for any call, taken off the
    /// script; else the usual success answer.
    pub(crate) fn scripted(&mut self, key: &str) -> Reply<P> {
        self.script
            .iter()
            .position(|(k, _)| k.as_deref().is_none_or(|k| k == key))
            .and_then(|i| self.script.remove(i))
            .map_or_else(Reply::success, |(_, reply)| reply)
    }
}

/// One fake's shared record and the signal that a call was recorded.
pub(crate) struct Fake<C, P, S> {
    book: Mutex<Book<C, P, S>>,
    recorded: Notify,
}

impl<C: Call, P, S: Default> Default for Fake<C, P, S> {
    fn default() -> Self {
        Self {
            book: Mutex::new(Book {
                calls: Vec::new(),
                script: VecDeque::new(),
                state: S::default(),
            }),
            recorded: Notify::new(),
        }
    }
}

impl<C: Call, P, S> Fake<C, P, S> {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Book<C, P, S>> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the platform's state.
    pub(crate) fn state<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        f(&mut self.lock().state)
    }

    /// Appends `reply` to the script, for calls keyed `key` (`None`: any).
    pub(crate) fn enqueue(&self, key: Option<&str>, reply: Reply<P>) {
        self.lock()
            .script
            .push_back((key.map(str::to_owned), reply));
    }

    /// Records `call` and wakes whoever waits for calls.
    pub(crate) fn record(&self, book: MutexGuard<'_, Book<C, P, S>>, call: C) {
        let mut book = book;
        book.calls.push(call);
        drop(book);
        self.recorded.notify_waiters();
    }

    pub(crate) fn calls(&self) -> Vec<C> {
        self.lock().calls.clone()
    }

    pub(crate) fn calls_where(&self, keep: impl Fn(&C) -> bool) -> Vec<C> {
        self.lock()
            .calls
            .iter()
            .filter(|c| keep(c))
            .cloned()
            .collect()
    }

    pub(crate) fn calls_of(&self, key: &str) -> Vec<C> {
        self.calls_where(|c| c.key() == key)
    }

    pub(crate) fn count(&self) -> usize {
        self.lock().calls.len()
    }

    /// Waits until the calls `keep` selects number at least `count`, or
    /// `timeout` (on tokio's clock) passed; returns them either way.
    pub(crate) async fn wait_for(
        &self,
        keep: impl Fn(&C) -> bool,
        count: usize,
        timeout: Duration,
    ) -> Vec<C> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut recorded = pin!(self.recorded.notified());
            // Registered before the check, so a call recorded in between
            // wakes us.
            recorded.as_mut().enable();
            let calls = self.calls_where(&keep);
            if calls.len() >= count {
                return calls;
            }
            if tokio::time::timeout_at(deadline, recorded).await.is_err() {
                return self.calls_where(&keep);
            }
        }
    }
}

/// One part of a `multipart/form-data` body.
#[derive(Debug)]
pub(crate) struct Part {
    pub(crate) name: String,
    pub(crate) filename: Option<String>,
    pub(crate) content: Bytes,
}

/// The parts of a `multipart/form-data` body (none when `content_type`
/// names no boundary).
pub(crate) fn multipart(content_type: &str, body: &[u8]) -> Vec<Part> {
    let Some(boundary) = content_type.split("boundary=").nth(1) else {
        return Vec::new();
    };
    let marker = format!("--{boundary}");
    let marker = marker.as_bytes();
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(at) = find(rest, marker) {
        rest = &rest[at + marker.len()..];
        let end = find(rest, marker).unwrap_or(rest.len());
        let part = &rest[..end];
        let Some(split) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]);
        let content = &part[split + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        let quoted = |key: &str| {
            head.split(key)
                .nth(1)
                .and_then(|n| n.split('"').next())
                .map(str::to_owned)
        };
        let Some(name) = quoted(" name=\"").or_else(|| quoted(";name=\"")) else {
            continue;
        };
        parts.push(Part {
            name,
            filename: quoted("filename=\""),
            content: Bytes::copy_from_slice(content),
        });
    }
    parts
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
