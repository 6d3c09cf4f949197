//! A fake Linear GraphQL API on 127.0.0.1:0: it records every request and
//! answers each operation as Linear does, unless a scripted answer is queued.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The JSON body: `query`, `operationName`, `variables`.
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl Recorded {
    /// The operation's name.
    pub fn operation(&self) -> &str {
        self.body["operationName"].as_str().unwrap_or_default()
    }

    /// The variables.
    pub fn variables(&self) -> &Value {
        &self.body["variables"]
    }

    /// `variables.input`.
    pub fn input(&self) -> &Value {
        &self.body["variables"]["input"]
    }
}

/// A scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Only for this operation (else the next request of any operation).
    pub operation: Option<String>,
    /// Wait before answering.
    pub delay: Duration,
    /// The status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body; `None` for the default answer.
    pub body: Option<String>,
}

impl Reply {
    /// A 200 with `body`.
    pub fn json(body: Value) -> Self {
        Self::status(200, Some(body.to_string()))
    }

    /// `status` with `body`.
    pub fn status(status: u16, body: Option<String>) -> Self {
        Self {
            operation: None,
            delay: Duration::ZERO,
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// The default answer, after `delay`.
    pub fn delayed(delay: Duration) -> Self {
        Self {
            delay,
            ..Self::status(200, None)
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Only for `operation`.
    pub fn for_operation(mut self, operation: &str) -> Self {
        self.operation = Some(operation.to_owned());
        self
    }
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    script: Mutex<VecDeque<Reply>>,
}

/// The running fake.
pub struct FakeLinear {
    /// The GraphQL endpoint.
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLinear {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeLinear {
    /// Starts the fake on a free loopback port.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/graphql", axum::routing::post(handle))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{addr}/graphql"),
            shared,
            task,
        }
    }

    /// Queues a scripted answer.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests of one operation.
    pub fn of(&self, operation: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.operation() == operation)
            .collect()
    }

    /// Waits until `n` requests arrived (at most 10 s).
    pub async fn wait_for(&self, n: usize) -> Vec<Recorded> {
        let start = std::time::Instant::now();
        loop {
            let r = self.requests();
            if r.len() >= n || start.elapsed() > Duration::from_secs(10) {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = Recorded {
        authorization: header("authorization"),
        content_type: header("content-type"),
        body: parsed.clone(),
        at: Instant::now(),
    };
    let operation = recorded.operation().to_owned();
    shared.requests.lock().unwrap().push(recorded);
    let scripted = {
        let mut script = shared.script.lock().unwrap();
        let index = script
            .iter()
            .position(|r| r.operation.as_deref().is_none_or(|o| o == operation));
        index.and_then(|i| script.remove(i))
    };
    let reply = scripted.unwrap_or_else(|| Reply::status(200, None));
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let body = reply
        .body
        .unwrap_or_else(|| default_answer(&operation, &parsed).to_string());
    let mut response = (
        StatusCode::from_u16(reply.status).unwrap(),
        [("content-type", "application/json")],
        body,
    )
        .into_response();
    for (k, v) in reply.headers {
        response.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            axum::http::HeaderValue::from_str(&v).unwrap(),
        );
    }
    response
}

/// What Linear answers to each operation the client sends.
fn default_answer(operation: &str, request: &Value) -> Value {
    let input = &request["variables"]["input"];
    match operation {
        "AgentActivityCreate" => json!({"data": {"agentActivityCreate": {
            "success": true, "agentActivity": {"id": input["id"]}}}}),
        "CommentCreate" => json!({"data": {"commentCreate": {
            "success": true, "comment": {"id": input["id"]}}}}),
        "CommentUpdate" => json!({"data": {"commentUpdate": {"success": true}}}),
        "CommentDelete" => json!({"data": {"commentDelete": {"success": true}}}),
        "ReactionCreate" => json!({"data": {"reactionCreate": {"success": true}}}),
        "AgentSessionUpdate" => json!({"data": {"agentSessionUpdate": {"success": true}}}),
        "Viewer" => json!({"data": {"viewer": {"id": super::APP_USER}}}),
        _ => json!({"errors": [{"message": "Unknown operation",
                                 "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"}}]}),
    }
}
