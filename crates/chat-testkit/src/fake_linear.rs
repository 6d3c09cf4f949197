//! [`FakeLinear`]: an in-process fake of Linear's GraphQL API, served over HTTP
//! on `127.0.0.1`, that records every request and answers each operation as
//! Linear does unless a scripted answer is queued.

use crate::scaffold::{Call, Fake, Reply};
use crate::server::{Server, serve};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The header in which Linear gives the end of a rate-limit window, in Unix
/// milliseconds.
pub const RATELIMIT_RESET_HEADER: &str = "x-ratelimit-requests-reset";

/// One GraphQL request the fake received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LinearCall {
    /// The operation's name: `operationName`, else the name in the document
    /// (`mutation AgentActivityCreate(…)`); empty for an anonymous one.
    pub operation: String,
    /// The GraphQL document (`query`), empty when there is none.
    pub query: String,
    /// The `variables`; `Value::Null` when there are none.
    pub variables: Value,
    /// The body parsed as JSON; `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as sent.
    pub raw_body: Bytes,
    /// The `Authorization` header (an API key, or `Bearer …`), if any.
    pub authorization: Option<String>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// When it arrived, on tokio's clock.
    pub at: Instant,
    /// The HTTP status the fake answered with.
    pub status: StatusCode,
    /// Whether the answer was a success: a 2xx with `data`, no `errors`, and
    /// no mutation result with `"success": false`.
    pub ok: bool,
}

impl LinearCall {
    /// `variables.input`, or `Value::Null`.
    pub fn input(&self) -> &Value {
        &self.variables["input"]
    }

    /// For an `AgentActivityCreate`: the activity's `content.type`
    /// (`thought`, `response`, …).
    pub fn activity_type(&self) -> Option<&str> {
        self.input()["content"]["type"].as_str()
    }

    /// For an `AgentActivityCreate`: the activity's `content.body`.
    pub fn activity_body(&self) -> Option<&str> {
        self.input()["content"]["body"].as_str()
    }
}

/// Linear's GraphQL API, as the platform of a [`Reply`]: `LinearReply`'s own
/// constructors are Linear's failure answers.
#[derive(Debug)]
pub enum LinearApi {}

/// One scripted answer of [`FakeLinear`]: a status, headers, a body (or the
/// operation's usual success answer) and an optional delay.
pub type LinearReply = Reply<LinearApi>;

impl Reply<LinearApi> {
    /// 400 with a GraphQL error of `code` (`INVALID_INPUT`, `FORBIDDEN`, …), as
    /// Linear reports a failed operation.
    pub fn error(code: &str, message: &str) -> Self {
        Self::json(&json!({
            "errors": [{ "message": message, "extensions": { "code": code } }],
            "data": null,
        }))
        .with_status(StatusCode::BAD_REQUEST)
    }

    /// Linear's rate limit: 400 with a `RATELIMITED` GraphQL error and the end
    /// of the window in [`RATELIMIT_RESET_HEADER`] (Unix milliseconds).
    pub fn rate_limited(reset_at_ms: u64) -> Self {
        Self::error("RATELIMITED", "Rate limit exceeded").with_header(
            HeaderName::from_static(RATELIMIT_RESET_HEADER),
            HeaderValue::from(reset_at_ms),
        )
    }

    /// 429 with `Retry-After: {seconds}` and an empty body, as a proxy in
    /// front of the API answers.
    pub fn too_many_requests(retry_after_secs: u64) -> Self {
        Self::raw(StatusCode::TOO_MANY_REQUESTS, Bytes::new())
            .with_header(RETRY_AFTER, HeaderValue::from(retry_after_secs))
    }
}

/// A fake Linear GraphQL API for tests: an HTTP server on `127.0.0.1` (a free
/// port) in the current tokio runtime.
///
/// * Every `POST {endpoint}` is recorded as a [`LinearCall`] (operation name,
///   document, variables, `Authorization` header, arrival time, the status
///   answered).
/// * A request answers from the script first: the oldest queued reply for its
///   operation ([`enqueue`](Self::enqueue), [`fail`](Self::fail),
///   [`rate_limit`](Self::rate_limit)) or for any operation
///   ([`enqueue_any`](Self::enqueue_any)), whichever was queued first. Once
///   nothing matches it answers as Linear does on success:
///   `AgentActivityCreate` and `CommentCreate` with the client-supplied `id`
///   (or a new one) — an `id` created before is refused, as Linear refuses an
///   existing id — the `AgentActivity` and `Comment` queries with the entity
///   when one with that id was created (else "Entity not found"),
///   `AgentSessionUpdate`, `CommentUpdate`, `CommentDelete` and
///   `ReactionCreate` with `success: true`, `Viewer` with
///   [`VIEWER_ID`](Self::VIEWER_ID); any other operation with a
///   `GRAPHQL_VALIDATION_FAILED` error.
///
/// Point a Linear client at [`endpoint`](Self::endpoint) (for chat-linear:
/// `LinearAdapter::builder().endpoint(fake.endpoint())`). Clones share the
/// server and its record; the server stops when the last clone is dropped or
/// its runtime shuts down.
///
/// ```
/// use std::time::Duration;
/// use chat_linear::LinearAdapter;
/// use chat_testkit::FakeLinear;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let fake = FakeLinear::start().await;
/// fake.fail("AgentActivityCreate", "INVALID_INPUT", 1);
///
/// let linear = LinearAdapter::builder()
///     .signing_secret("lin_wh_secret")
///     .access_token("lin_oauth_token")
///     .endpoint(fake.endpoint())
///     .build()?;
/// assert!(linear.thought("session-1", "looking").await.is_err());
/// linear.thought("session-1", "looking again").await?;
///
/// let sent = fake.wait_for_calls("AgentActivityCreate", 2, Duration::from_secs(5)).await;
/// assert_eq!(sent.len(), 2);
/// assert_eq!(sent[0].status, 400);
/// assert!(sent[1].ok);
/// assert_eq!(sent[1].activity_type(), Some("thought"));
/// assert_eq!(sent[1].input()["agentSessionId"], "session-1");
/// assert_eq!(sent[1].authorization.as_deref(), Some("Bearer lin_oauth_token"));
/// # Ok::<_, Box<dyn std::error::Error>>(()) })?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FakeLinear {
    shared: Arc<Shared>,
    endpoint: String,
    addr: SocketAddr,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeLinear {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeLinear")
            .field("endpoint", &self.endpoint)
            .field("calls", &self.shared.count())
            .finish_non_exhaustive()
    }
}

type Shared = Fake<LinearCall, LinearApi, Organization>;

impl Call for LinearCall {
    fn key(&self) -> &str {
        &self.operation
    }
}

/// What the fake Linear holds beyond its requests and script.
#[derive(Default)]
struct Organization {
    ids: u64,
    /// Ids of the activities and comments created so far.
    created: HashSet<String>,
    /// `user`'s users, by id.
    users: HashMap<String, Value>,
    /// Comments (created, or added by the test), as `comment` nodes with
    /// their `parentId`.
    comments: Vec<Value>,
    /// Agent activities (created, or added), as nodes with their
    /// `sessionId`.
    activities: Vec<Value>,
    /// Reactions on comments: `id`, `emoji`, `commentId`, `user`.
    reactions: Vec<Value>,
    /// Uploaded files, by path under `/uploads/`.
    uploads: HashMap<String, Bytes>,
}

impl FakeLinear {
    /// Adds a user for the `user` query: Linear's `User` fields (`id`,
    /// `name`, `displayName`, `email`, `app`). An unknown user is "Entity not
    /// found".
    pub fn add_user(&self, user: Value) {
        if let Some(id) = user["id"].as_str() {
            let id = id.to_owned();
            self.shared.state(|org| org.users.insert(id, user));
        }
    }

    /// Adds a comment (a user's, for a comment thread's history): Linear's
    /// `Comment` fields (`id`, `body`, `createdAt`, `user`), with `parentId`
    /// for a reply.
    pub fn add_comment(&self, comment: Value) {
        self.shared.state(|org| org.comments.push(comment));
    }

    /// Adds an activity to session `session_id` (a prompt, say): Linear's
    /// `AgentActivity` fields (`id`, `createdAt`, `user`, `content`).
    pub fn add_activity(&self, session_id: &str, mut activity: Value) {
        activity["sessionId"] = json!(session_id);
        self.shared.state(|org| org.activities.push(activity));
    }

    /// Adds a reaction by `user_id` (someone else: the app's own are made
    /// with `reactionCreate`) on comment `comment_id`; returns its id.
    pub fn add_reaction(&self, comment_id: &str, emoji: &str, user_id: &str) -> String {
        self.shared.state(|org| {
            org.ids += 1;
            let id = format!("00000000-0000-4000-8000-{:012}", org.ids);
            org.reactions.push(json!({
                "id": id, "emoji": emoji, "commentId": comment_id,
                "user": { "id": user_id, "isMe": user_id == Self::VIEWER_ID },
            }));
            id
        })
    }

    /// The reactions on comment `comment_id`: `(emoji, user id)`, in the order
    /// they were made.
    pub fn reactions(&self, comment_id: &str) -> Vec<(String, String)> {
        self.shared.state(|org| {
            org.reactions
                .iter()
                .filter(|r| r["commentId"] == comment_id)
                .map(|r| {
                    (
                        r["emoji"].as_str().unwrap_or_default().to_owned(),
                        r["user"]["id"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
    }

    /// Serves `bytes` at `/uploads/{path}` on the fake's own origin (where
    /// Linear serves `https://uploads.linear.app/{path}`); returns its URL.
    /// A `GET` is recorded as a call of the operation `upload`, with its
    /// `Authorization`.
    pub fn add_upload(&self, path: &str, bytes: impl Into<Bytes>) -> String {
        let bytes = bytes.into();
        self.shared
            .state(|org| org.uploads.insert(path.to_owned(), bytes));
        format!("http://{}/uploads/{path}", self.addr)
    }

    /// The id `Viewer` answers: the authenticated (app) user.
    pub const VIEWER_ID: &'static str = "a1b2c3d4-0000-4000-8000-00000000a99e";

    /// Starts the server on `127.0.0.1` and a free port.
    ///
    /// # Panics
    ///
    /// When no local port can be bound (the test cannot run); see
    /// [`try_start`](Self::try_start).
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeLinear: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server on `127.0.0.1` and a free port, or says why it
    /// could not.
    pub async fn try_start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/graphql", post(answer))
            .route("/uploads/{*path}", get(upload))
            .with_state(Arc::clone(&shared));
        let (addr, server) = serve(app).await?;
        Ok(Self {
            shared,
            endpoint: format!("http://{addr}/graphql"),
            addr,
            _server: Arc::new(server),
        })
    }

    /// The GraphQL endpoint, `http://127.0.0.1:{port}/graphql`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends `reply` to the script for `operation` (`AgentActivityCreate`):
    /// the first request of it not answered by an earlier scripted reply gets
    /// this one.
    pub fn enqueue(&self, operation: &str, reply: LinearReply) {
        self.shared.enqueue(Some(operation), reply);
    }

    /// Appends `reply` to the script for the next request of any operation.
    pub fn enqueue_any(&self, reply: LinearReply) {
        self.shared.enqueue(None, reply);
    }

    /// The next `times` requests of `operation` answer 400 with a GraphQL
    /// error of `code`; later ones succeed.
    pub fn fail(&self, operation: &str, code: &str, times: usize) {
        for _ in 0..times {
            self.enqueue(operation, LinearReply::error(code, "scripted failure"));
        }
    }

    /// The next `times` requests of `operation` answer 429 with
    /// `Retry-After: {retry_after_secs}`; later ones succeed.
    pub fn rate_limit(&self, operation: &str, retry_after_secs: u64, times: usize) {
        for _ in 0..times {
            self.enqueue(operation, LinearReply::too_many_requests(retry_after_secs));
        }
    }

    /// Every request so far, in arrival order.
    pub fn calls(&self) -> Vec<LinearCall> {
        self.shared.calls()
    }

    /// The requests of one operation so far, in arrival order.
    pub fn calls_of(&self, operation: &str) -> Vec<LinearCall> {
        self.shared.calls_of(operation)
    }

    /// The successful `AgentActivityCreate` requests so far: the activities
    /// really created, in arrival order.
    pub fn activities(&self) -> Vec<LinearCall> {
        self.calls_of("AgentActivityCreate")
            .into_iter()
            .filter(|c| c.ok)
            .collect()
    }

    /// Waits until `operation` has been requested at least `count` times, or
    /// `timeout` (on tokio's clock) passed; returns its requests either way,
    /// so assert on their number.
    pub async fn wait_for_calls(
        &self,
        operation: &str,
        count: usize,
        timeout: Duration,
    ) -> Vec<LinearCall> {
        self.shared
            .wait_for(|c| c.operation == operation, count, timeout)
            .await
    }

    /// Waits until at least `count` requests of any operation arrived, or
    /// `timeout` (on tokio's clock) passed; returns every request either way.
    pub async fn wait_for_requests(&self, count: usize, timeout: Duration) -> Vec<LinearCall> {
        self.shared.wait_for(|_| true, count, timeout).await
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    raw_body: Bytes,
) -> Response {
    let at = Instant::now();
    let body: Value = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    let header = |name: HeaderName| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let query = body
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let operation = body
        .get("operationName")
        .and_then(Value::as_str)
        .map_or_else(|| operation_in(&query).to_owned(), str::to_owned);
    let variables = body.get("variables").cloned().unwrap_or(Value::Null);
    let (reply, answer) = {
        let mut book = shared.lock();
        let (mut reply, answer) = book
            .scripted(&operation)
            .body_or(|| success(&mut book.state, &operation, &variables));
        if !answer.is_empty() && !reply.has_content_type() {
            reply = reply.with_header(
                CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=utf-8"),
            );
        }
        let ok = reply.status().is_success()
            && serde_json::from_slice::<Value>(&answer).is_ok_and(|v| succeeded(&v));
        let call = LinearCall {
            operation,
            query,
            variables,
            body,
            raw_body,
            authorization: header(AUTHORIZATION),
            content_type: header(CONTENT_TYPE),
            at,
            status: reply.status(),
            ok,
        };
        shared.record(book, call);
        (reply, answer)
    };
    reply.respond(answer).await
}

/// A `GET` of an uploaded file: its bytes (404 for an unknown one), with
/// the request recorded as a call of the operation `upload`.
async fn upload(
    State(shared): State<Arc<Shared>>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    let book = shared.lock();
    let bytes = book.state.uploads.get(&path).cloned();
    let status = if bytes.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    let call = LinearCall {
        operation: "upload".to_owned(),
        query: String::new(),
        variables: json!({ "path": path }),
        body: Value::Null,
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

/// The operation named in a GraphQL document: `mutation Name(` or
/// `query Name {`; empty when anonymous.
fn operation_in(query: &str) -> &str {
    let rest = query.trim_start();
    let Some(rest) = ["mutation", "query", "subscription"]
        .iter()
        .find_map(|kw| rest.strip_prefix(kw))
    else {
        return "";
    };
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Whether a GraphQL answer is a success: `data` present, no `errors`, and no
/// field of `data` with `"success": false`.
fn succeeded(answer: &Value) -> bool {
    let no_errors = answer
        .get("errors")
        .is_none_or(|e| e.is_null() || e.as_array().is_some_and(Vec::is_empty));
    let Some(data) = answer.get("data").and_then(Value::as_object) else {
        return false;
    };
    no_errors
        && data
            .values()
            .all(|v| v.get("success").and_then(Value::as_bool) != Some(false))
}

/// What Linear answers when `operation` succeeds, with its status.
fn success(record: &mut Organization, operation: &str, variables: &Value) -> (StatusCode, Value) {
    let input = &variables["input"];
    let mut id = || match input.get("id").and_then(Value::as_str) {
        Some(id) => id.to_owned(),
        None => {
            record.ids += 1;
            format!("00000000-0000-4000-8000-{:012}", record.ids)
        }
    };
    let not_found = || {
        (
            StatusCode::OK,
            json!({ "data": null, "errors": [{
                "message": "Entity not found",
                "extensions": { "code": "INVALID_INPUT" },
            }] }),
        )
    };
    let data = match operation {
        "AgentActivityCreate" | "CommentCreate" => {
            let id = id();
            if !record.created.insert(id.clone()) {
                return (
                    StatusCode::OK,
                    json!({ "data": null, "errors": [{
                        "message": "Entity already exists",
                        "extensions": { "code": "INVALID_INPUT" },
                    }] }),
                );
            }
            let me = json!({ "id": FakeLinear::VIEWER_ID, "displayName": "agent", "app": true, "isMe": true });
            let at = format!(
                "2026-12-01T10:{:02}:{:02}.000Z",
                (record.ids / 60) % 60,
                record.ids % 60
            );
            record.ids += 1;
            if operation == "CommentCreate" {
                record.comments.push(json!({
                    "id": id, "body": input["body"], "createdAt": at, "user": me,
                    "parentId": input["parentId"],
                }));
            } else {
                record.activities.push(json!({
                    "id": id, "createdAt": at, "user": me, "content": input["content"],
                    "sessionId": input["agentSessionId"], "ephemeral": input["ephemeral"],
                }));
            }
            if operation == "CommentCreate" {
                json!({ "commentCreate": { "success": true, "comment": { "id": id } } })
            } else {
                json!({ "agentActivityCreate": {
                    "success": true, "agentActivity": { "id": id } } })
            }
        }
        "AgentActivity" | "Comment" => {
            let id = variables["id"].as_str().unwrap_or_default();
            if !record.created.contains(id) {
                return not_found();
            }
            let field = if operation == "Comment" {
                "comment"
            } else {
                "agentActivity"
            };
            json!({ field: { "id": id } })
        }
        "User" => match variables["id"].as_str().and_then(|id| record.users.get(id)) {
            Some(user) => json!({ "user": user }),
            None => return not_found(),
        },
        "CommentThread" => {
            let id = variables["id"].as_str().unwrap_or_default();
            let Some(root) = record.comments.iter().find(|c| c["id"] == id).cloned() else {
                return not_found();
            };
            let replies: Vec<&Value> = record
                .comments
                .iter()
                .filter(|c| c["parentId"] == id)
                .collect();
            let mut root = root;
            root["children"] = page(&replies, variables);
            json!({ "comment": root })
        }
        "SessionActivities" => {
            let id = variables["id"].as_str().unwrap_or_default();
            let activities: Vec<&Value> = record
                .activities
                .iter()
                .filter(|a| a["sessionId"] == id && a["ephemeral"] != true)
                .collect();
            json!({ "agentSession": { "activities": page(&activities, variables) } })
        }
        "CommentUpdate" => json!({ "commentUpdate": { "success": true } }),
        "CommentDelete" => json!({ "commentDelete": { "success": true } }),
        "ReactionCreate" => {
            record.ids += 1;
            let id = format!("00000000-0000-4000-8000-{:012}", record.ids);
            record.reactions.push(json!({
                "id": id, "emoji": input["emoji"], "commentId": input["commentId"],
                "user": { "id": FakeLinear::VIEWER_ID, "isMe": true },
            }));
            json!({ "reactionCreate": { "success": true } })
        }
        "ReactionDelete" => {
            let id = variables["id"].as_str().unwrap_or_default();
            let before = record.reactions.len();
            record.reactions.retain(|r| r["id"] != id);
            if record.reactions.len() == before {
                return not_found();
            }
            json!({ "reactionDelete": { "success": true } })
        }
        "CommentReactions" => {
            let id = variables["id"].as_str().unwrap_or_default();
            let reactions: Vec<&Value> = record
                .reactions
                .iter()
                .filter(|r| r["commentId"] == id)
                .collect();
            json!({ "comment": { "reactions": reactions } })
        }
        "AgentSessionUpdate" => json!({ "agentSessionUpdate": { "success": true } }),
        "Viewer" => json!({ "viewer": { "id": FakeLinear::VIEWER_ID } }),
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                json!({ "errors": [{
                    "message": format!("Unknown operation `{operation}`"),
                    "extensions": { "code": "GRAPHQL_VALIDATION_FAILED" },
                }] }),
            );
        }
    };
    (StatusCode::OK, json!({ "data": data }))
}

/// One page of a connection: `first` nodes after the cursor `after` (an
/// index), with Linear's `pageInfo`.
fn page(nodes: &[&Value], variables: &Value) -> Value {
    let start = variables["after"]
        .as_str()
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let first = variables["first"]
        .as_u64()
        .and_then(|f| usize::try_from(f).ok())
        .unwrap_or(50);
    let taken: Vec<Value> = nodes
        .iter()
        .skip(start)
        .take(first)
        .map(|n| (*n).clone())
        .collect();
    let end = start + taken.len();
    json!({
        "nodes": taken,
        "pageInfo": { "hasNextPage": end < nodes.len(), "endCursor": end.to_string() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_operations_in_documents() {
        assert_eq!(
            operation_in("mutation AgentActivityCreate($input: X!) { a }"),
            "AgentActivityCreate"
        );
        assert_eq!(operation_in("query Viewer {\n viewer { id } }"), "Viewer");
        assert_eq!(operation_in("{ viewer { id } }"), "");
        assert_eq!(operation_in("query { viewer { id } }"), "");
    }

    #[test]
    fn judges_answers() {
        assert!(succeeded(&json!({"data": {"x": {"success": true}}})));
        assert!(succeeded(&json!({"data": {"viewer": {"id": "u"}}})));
        assert!(!succeeded(&json!({"data": {"x": {"success": false}}})));
        assert!(!succeeded(&json!({"data": null, "errors": [{}]})));
        assert!(!succeeded(&json!({"errors": [{}]})));
        assert!(!succeeded(
            &json!({"data": {}, "errors": [{"message": "no"}]})
        ));
    }
}
