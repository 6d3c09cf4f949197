//! [`FakeSlack`]: an in-process fake of Slack's Web API, served over HTTP on
//! `127.0.0.1`, that records every call and answers from per-method scripts.

mod methods;

use crate::scaffold::{Call, Fake, Reply};
use crate::server::{Server, serve};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;

/// One Web API call the fake received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SlackCall {
    /// The method, from the path (`chat.postMessage`).
    pub method: String,
    /// The body parsed as JSON; `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as sent.
    pub raw_body: Bytes,
    /// The `Authorization` header (`Bearer xoxb-…`), if any.
    pub authorization: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// When it arrived, on tokio's clock.
    pub at: Instant,
    /// The HTTP status the fake answered with.
    pub status: StatusCode,
    /// Whether the answer was a success: a 2xx with `"ok": true`.
    pub ok: bool,
}

/// How a scripted 429 tells the client how long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// A `Retry-After: {seconds}` header, as the Web API sends it.
    Header(u64),
    /// `"retry_after": {seconds}` in the JSON body and no header, as
    /// `response_url` and incoming webhooks sometimes answer.
    Body(u64),
}

/// The Slack Web API, as the platform of a [`Reply`]: `SlackReply`'s own
/// constructors are Slack's failure answers.
#[derive(Debug)]
pub enum SlackApi {}

/// One scripted answer of [`FakeSlack`]: a status, headers, a body (or the
/// method's usual success answer) and an optional delay.
pub type SlackReply = Reply<SlackApi>;

impl Reply<SlackApi> {
    /// 200 with `{"ok": false, "error": code}`, as Slack reports a failed call.
    pub fn error(code: &str) -> Self {
        Self::json(&json!({ "ok": false, "error": code }))
    }

    /// 429 with `{"ok": false, "error": "ratelimited"}` and the wait in the
    /// header or in the body.
    pub fn rate_limited(retry_after: RetryAfter) -> Self {
        let limited = |body: Value| Self::json(&body).with_status(StatusCode::TOO_MANY_REQUESTS);
        match retry_after {
            RetryAfter::Header(secs) => limited(json!({ "ok": false, "error": "ratelimited" }))
                .with_header(RETRY_AFTER, HeaderValue::from(secs)),
            RetryAfter::Body(secs) => {
                limited(json!({ "ok": false, "error": "ratelimited", "retry_after": secs }))
            }
        }
    }
}

/// A fake Slack Web API for tests: an HTTP server on `127.0.0.1` (a free
/// port) in the current tokio runtime.
///
/// * Every `POST {base_url}/{method}` is recorded as a [`SlackCall`] (method,
///   JSON body, `Authorization` header, arrival time, the status answered).
/// * A method answers from its script first ([`enqueue`](Self::enqueue),
///   [`fail`](Self::fail), [`rate_limit`](Self::rate_limit)), one scripted
///   reply per call, in order; once its script is used up it answers as Slack
///   does on success: `chat.postMessage` with a new `ts` per post
///   (`1700000100.000100`, `1700000100.000101`, …), `chat.update` and
///   `chat.delete` echoing `channel` and `ts` (and changing the stored
///   message), `conversations.replies` with the thread's messages posted here
///   or [added](Self::add_message) (metadata with `include_all_metadata`,
///   pages of `limit` with a `next_cursor`), `chat.postEphemeral` with a
///   `message_ts`, `users.info` with a user [added](Self::add_user) (else
///   `user_not_found`), `invalid_blocks` for `blocks` beyond Slack's
///   documented limits, `views.open` with the view and an id, `auth.test` with the
///   identity in [`TEAM_ID`](Self::TEAM_ID), [`BOT_USER_ID`](Self::BOT_USER_ID)
///   and [`BOT_ID`](Self::BOT_ID), and every other method (`reactions.add`,
///   `assistant.threads.setStatus`, …) with `{"ok": true}`.
///
/// Point a Slack client at [`base_url`](Self::base_url) (for chat-slack:
/// `SlackAdapter::builder().api_base_url(fake.base_url())`). Clones share the
/// server and its record; the server stops when the last clone is dropped or
/// its runtime shuts down.
///
/// ```
/// use chat_slack::SlackClient;
/// use chat_testkit::{FakeSlack, RetryAfter};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let fake = FakeSlack::start().await;
/// fake.fail("chat.update", "cant_update_message", 1);
/// fake.rate_limit("chat.postMessage", RetryAfter::Header(0), 1);
///
/// let client = SlackClient::builder("xoxb-test").base_url(fake.base_url()).build()?;
/// let posted = client.post_message("C1", Some("1.0"), "hello").await?;
/// assert_eq!(posted.ts, "1700000100.000100");
/// assert!(client.update_message("C1", &posted.ts, "edited").await.is_err());
///
/// let posts = fake.calls_of("chat.postMessage");
/// assert_eq!(posts.len(), 2, "a 429, then the post");
/// assert_eq!(posts[0].status, 429);
/// assert!(posts[1].ok);
/// assert_eq!(posts[1].body["thread_ts"], "1.0");
/// assert_eq!(posts[1].authorization.as_deref(), Some("Bearer xoxb-test"));
/// # Ok::<_, Box<dyn std::error::Error>>(()) })?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FakeSlack {
    shared: Arc<Shared>,
    base_url: String,
    addr: SocketAddr,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeSlack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeSlack")
            .field("base_url", &self.base_url)
            .field("calls", &self.shared.count())
            .finish_non_exhaustive()
    }
}

type Shared = Fake<SlackCall, SlackApi, Workspace>;

impl Call for SlackCall {
    fn key(&self) -> &str {
        &self.method
    }
}

/// What the fake Slack holds beyond its calls and script.
#[derive(Default)]
struct Workspace {
    posts: u64,
    /// Views opened or pushed, for their ids.
    views: u64,
    /// Every message of the workspace, in order, as `conversations.replies`
    /// shows it (each with its `channel`): the bot's posts, edited and
    /// deleted as the bot does, and messages added with
    /// [`FakeSlack::add_message`].
    messages: Vec<Value>,
    /// `users.info`'s users, by id.
    users: HashMap<String, Value>,
    /// Where `files.getUploadURLExternal` sends uploads
    /// (`http://127.0.0.1:{port}/upload`).
    upload_base: String,
    /// Files: id → (name, bytes uploaded, shared by `completeUploadExternal`).
    files: HashMap<String, (String, Option<Bytes>, bool)>,
    /// Messages scheduled with `chat.scheduleMessage` and not deleted:
    /// `id`, `channel`, `post_at`, `text`, `thread_ts`.
    scheduled: Vec<Value>,
}

impl FakeSlack {
    /// The `team_id` `auth.test` answers.
    pub const TEAM_ID: &'static str = "T0001";
    /// The `user_id` (the bot user) `auth.test` answers, and the `user` of
    /// posted messages.
    pub const BOT_USER_ID: &'static str = "ULEARNED";
    /// The `bot_id` `auth.test` answers, and the `bot_id` of posted messages.
    pub const BOT_ID: &'static str = "BLEARNED";

    /// Starts the server on `127.0.0.1` and a free port.
    ///
    /// # Panics
    ///
    /// When no local port can be bound (the test cannot run); see
    /// [`try_start`](Self::try_start).
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeSlack: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server on `127.0.0.1` and a free port, or says why it
    /// could not.
    pub async fn try_start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/api/{method}", post(answer))
            .route("/hooks/{*path}", post(response_url))
            .route("/upload/{id}", post(upload))
            .route("/files/{id}/{name}", axum::routing::get(file))
            .with_state(Arc::clone(&shared));
        let (addr, server) = serve(app).await?;
        shared.state(|ws| ws.upload_base = format!("http://{addr}/upload"));
        Ok(Self {
            shared,
            base_url: format!("http://{addr}/api"),
            addr,
            _server: Arc::new(server),
        })
    }

    /// A `response_url` on this fake (`http://127.0.0.1:{port}/hooks/{path}`):
    /// what is posted to it is recorded as a call of the method `response_url`.
    pub fn response_url(&self, path: &str) -> String {
        format!("http://{}/hooks/{path}", self.addr)
    }

    /// The Web API base URL, `http://127.0.0.1:{port}/api`; a call of
    /// `method` goes to `{base_url}/{method}`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends `reply` to `method`'s script: the first call of `method` not
    /// answered by an earlier scripted reply gets this one.
    pub fn enqueue(&self, method: &str, reply: SlackReply) {
        self.shared.enqueue(Some(method), reply);
    }

    /// The next `times` calls of `method` answer `{"ok": false, "error": code}`;
    /// later ones succeed.
    pub fn fail(&self, method: &str, code: &str, times: usize) {
        for _ in 0..times {
            self.enqueue(method, SlackReply::error(code));
        }
    }

    /// The next `times` calls of `method` answer 429 with `retry_after`; later
    /// ones succeed.
    pub fn rate_limit(&self, method: &str, retry_after: RetryAfter, times: usize) {
        for _ in 0..times {
            self.enqueue(method, SlackReply::rate_limited(retry_after));
        }
    }

    /// Adds a message to `channel` (a user's, for `conversations.replies` to
    /// read): Slack's message object, with at least `ts` (and `thread_ts` for
    /// a reply).
    pub fn add_message(&self, channel: &str, mut message: Value) {
        message["channel"] = json!(channel);
        if message.get("type").is_none() {
            message["type"] = json!("message");
        }
        self.shared.state(|ws| ws.messages.push(message));
    }

    /// The messages of thread `ts` in `channel` as they stand now (edits and
    /// deletions applied, streams with what was appended), oldest first.
    pub fn thread(&self, channel: &str, ts: &str) -> Vec<Value> {
        self.shared.state(|ws| {
            ws.messages
                .iter()
                .filter(|m| m["channel"] == channel && (m["ts"] == ts || m["thread_ts"] == ts))
                .cloned()
                .collect()
        })
    }

    /// Adds a user for `users.info`: Slack's user object, with at least `id`
    /// (`name`, `real_name`, `is_bot`, `profile.display_name`,
    /// `profile.real_name`, `profile.email` as Slack sends them). An unknown
    /// user is `user_not_found`.
    pub fn add_user(&self, user: Value) {
        if let Some(id) = user["id"].as_str() {
            let id = id.to_owned();
            self.shared.state(|ws| ws.users.insert(id, user));
        }
    }

    /// Adds a file a user shared, served at its `url_private_download` on
    /// this fake (a `GET` of it is recorded as a call of the method `file`,
    /// with its `Authorization`); returns Slack's file object, for a
    /// message's `files`.
    pub fn add_file(&self, id: &str, name: &str, mimetype: &str, bytes: impl Into<Bytes>) -> Value {
        let bytes = bytes.into();
        let size = bytes.len();
        self.shared.state(|ws| {
            ws.files
                .insert(id.to_owned(), (name.to_owned(), Some(bytes), true));
        });
        let url = format!("http://{}/files/{id}/{name}", self.addr);
        json!({
            "id": id, "name": name, "title": name, "mimetype": mimetype, "size": size,
            "url_private": url, "url_private_download": url,
        })
    }

    /// A file shared with `files.completeUploadExternal`: its name and bytes.
    pub fn file(&self, id: &str) -> Option<(String, Bytes)> {
        match self.shared.lock().state.files.get(id) {
            Some((name, Some(bytes), true)) => Some((name.clone(), bytes.clone())),
            _ => None,
        }
    }

    /// The messages scheduled with `chat.scheduleMessage` and not deleted,
    /// in order: `id`, `channel`, `post_at` (Unix seconds), `text`,
    /// `thread_ts`.
    pub fn scheduled(&self) -> Vec<Value> {
        self.shared.state(|w| w.scheduled.clone())
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<SlackCall> {
        self.shared.calls()
    }

    /// The calls of one method so far, in arrival order.
    pub fn calls_of(&self, method: &str) -> Vec<SlackCall> {
        self.shared.calls_of(method)
    }

    /// The successful `chat.postMessage` calls so far: what was really posted.
    pub fn posts(&self) -> Vec<SlackCall> {
        self.calls_of("chat.postMessage")
            .into_iter()
            .filter(|c| c.ok)
            .collect()
    }

    /// How many replies were posted per event, by the `chat_rs_reply`
    /// metadata a handler run's replies carry: more than one reply at one
    /// position means an answer was posted twice.
    pub fn replies_per_event(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for post in self.posts() {
            let payload = &post.body["metadata"]["event_payload"];
            if let Some(id) = payload["event_id"].as_str() {
                *counts.entry(id.to_owned()).or_default() += 1;
            }
        }
        counts
    }

    /// Waits until `method` has been called at least `count` times, or
    /// `timeout` (on tokio's clock) passed; returns its calls either way, so
    /// assert on their number.
    pub async fn wait_for_calls(
        &self,
        method: &str,
        count: usize,
        timeout: Duration,
    ) -> Vec<SlackCall> {
        self.shared
            .wait_for(|c| c.method == method, count, timeout)
            .await
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    raw_body: Bytes,
) -> Response {
    let at = Instant::now();
    // JSON for the write methods; a form for the read ones.
    let body: Value = serde_json::from_slice(&raw_body).unwrap_or_else(|_| {
        serde_urlencoded::from_bytes::<Vec<(String, String)>>(&raw_body)
            .map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect(),
                )
            })
            .unwrap_or(Value::Null)
    });
    let header = |name: HeaderName| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let authorization = header(AUTHORIZATION);
    let content_type = header(CONTENT_TYPE);
    let (reply, answer) = {
        let mut book = shared.lock();
        let (reply, answer) = book.scripted(&method).body_or(|| {
            (
                StatusCode::OK,
                methods::success(&mut book.state, &method, &body),
            )
        });
        let ok = reply.status().is_success()
            && serde_json::from_slice::<Value>(&answer)
                .is_ok_and(|v| v.get("ok").and_then(Value::as_bool) == Some(true));
        let call = SlackCall {
            method,
            body,
            raw_body,
            authorization,
            content_type,
            at,
            status: reply.status(),
            ok,
        };
        shared.record(book, call);
        (reply, answer)
    };
    reply.respond(answer).await
}

/// The bytes of a file, posted to the URL `files.getUploadURLExternal`
/// answered: recorded as a call of the method `upload`; 404 for an unknown
/// file.
async fn upload(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    raw_body: Bytes,
) -> Response {
    let mut book = shared.lock();
    let known = match book.state.files.get_mut(&id) {
        Some(file) => {
            file.1 = Some(raw_body.clone());
            true
        }
        None => false,
    };
    let status = if known {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    let call = SlackCall {
        method: "upload".to_owned(),
        body: json!({ "file_id": id }),
        raw_body,
        authorization: None,
        content_type: None,
        at: Instant::now(),
        status,
        ok: known,
    };
    shared.record(book, call);
    let mut response = Response::new(Body::from(if known { "OK" } else { "" }));
    *response.status_mut() = status;
    response
}

/// A `GET` of a file's private URL: its bytes, recorded as a call of the
/// method `file`; 404 for an unknown or unshared file.
async fn file(
    State(shared): State<Arc<Shared>>,
    Path((id, _name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let book = shared.lock();
    let bytes = match book.state.files.get(&id) {
        Some((_, Some(bytes), true)) => Some(bytes.clone()),
        _ => None,
    };
    let status = if bytes.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    let call = SlackCall {
        method: "file".to_owned(),
        body: json!({ "file_id": id }),
        raw_body: Bytes::new(),
        authorization: headers
            .get(AUTHORIZATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        content_type: None,
        at: Instant::now(),
        status,
        ok: bytes.is_some(),
    };
    shared.record(book, call);
    let mut response = Response::new(Body::from(bytes.unwrap_or_default()));
    *response.status_mut() = status;
    response
}

/// A post to an interaction's `response_url` (`{base}/hooks/…`): recorded as a
/// call of the method `response_url`, answered `ok` as Slack does.
async fn response_url(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    raw_body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    let content_type = headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let call = SlackCall {
        method: "response_url".to_owned(),
        body,
        raw_body,
        authorization: None,
        content_type,
        at: Instant::now(),
        status: StatusCode::OK,
        ok: true,
    };
    shared.record(shared.lock(), call);
    Response::new(Body::from("ok"))
}
