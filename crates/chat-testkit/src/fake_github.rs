//! [`FakeGitHub`]: a fake GitHub REST API for tests — installation tokens
//! for an App's JWT, issue and review comments, reactions — refusing what
//! GitHub refuses and answering rate limits as GitHub does.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{patch, post};
use bytes::Bytes;
use http::header::{CONTENT_TYPE, USER_AGENT};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::scaffold::{Call, Fake, Reply, bearer};
use crate::server::{Server, serve};

/// The longest comment body GitHub takes, in characters.
const MAX_COMMENT: usize = 65_536;
/// The reactions GitHub has.
const REACTIONS: [&str; 8] = [
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];
/// How long an installation token lasts.
const TOKEN_LIFE: Duration = Duration::from_secs(3600);

/// One REST call the fake received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GitHubCall {
    /// What was called: `access_tokens`, `create_comment`, `list_comments`,
    /// `edit_comment`, `delete_comment`, `react`, `list_reactions`,
    /// `delete_reaction`, `reply_review`, `list_review_comments`,
    /// `check_run`.
    pub endpoint: String,
    /// The method.
    pub method: Method,
    /// The path.
    pub path: String,
    /// The bearer token (an App's JWT for `access_tokens`).
    pub token: String,
    /// The JSON body.
    pub body: Value,
    /// When it arrived, on tokio's clock.
    pub at: Instant,
    /// The status answered.
    pub status: StatusCode,
}

impl Call for GitHubCall {
    fn key(&self) -> &str {
        &self.endpoint
    }
}

/// GitHub's REST API, as the platform of a [`Reply`].
#[derive(Debug)]
pub enum GitHubApi {}

/// One scripted answer of [`FakeGitHub`].
pub type GitHubReply = Reply<GitHubApi>;

impl Reply<GitHubApi> {
    /// The primary rate limit spent: `403`, `x-ratelimit-remaining: 0` and
    /// `x-ratelimit-reset` `reset_in` from now.
    pub fn rate_limited(reset_in: Duration) -> Self {
        let reset = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            + reset_in.as_secs();
        Self::raw(
            StatusCode::FORBIDDEN,
            json!({ "message": "API rate limit exceeded for installation." }).to_string(),
        )
        .with_header(
            HeaderName::from_static("x-ratelimit-remaining"),
            HeaderValue::from_static("0"),
        )
        .with_header(
            HeaderName::from_static("x-ratelimit-reset"),
            HeaderValue::from(reset),
        )
        .with_header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
    }

    /// A secondary rate limit: `403` with `retry-after` seconds.
    pub fn secondary_rate_limited(retry_after: Duration) -> Self {
        Self::raw(
            StatusCode::FORBIDDEN,
            json!({ "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." })
                .to_string(),
        )
        .with_header(
            HeaderName::from_static("retry-after"),
            HeaderValue::from(retry_after.as_secs()),
        )
        .with_header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
    }
}

/// A comment the fake holds.
#[derive(Debug, Clone)]
struct Comment {
    id: u64,
    /// `issues` or `pulls`.
    kind: &'static str,
    repo: String,
    /// The issue or pull request number.
    number: u64,
    /// A review reply: the comment it answers.
    in_reply_to: Option<u64>,
    body: String,
    login: String,
    created_at: String,
}

impl Comment {
    fn json(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "body": self.body,
            "user": { "login": self.login, "id": 1, "type": "Bot" },
            "created_at": self.created_at,
        });
        if let Some(root) = self.in_reply_to {
            v["in_reply_to_id"] = json!(root);
        }
        v
    }
}

/// What the fake holds beyond its calls and script.
#[derive(Default)]
struct Repos {
    comments: BTreeMap<u64, Comment>,
    /// Reactions by subject (`issues` or `pulls` and a comment id, or
    /// `issue` and an issue number): each reaction's id and content.
    reactions: HashMap<(&'static str, u64), Vec<(u64, String)>>,
    /// Installation tokens issued: token → installation.
    tokens: HashMap<String, u64>,
    /// The login comments are made as, per token; else `login`.
    login: String,
    /// Node ids GraphQL handed out: a discussion's (`D_…`) or a discussion
    /// comment's (`DC_…`), and what each is.
    nodes: HashMap<String, (&'static str, String, u64)>,
    next_id: u64,
}

type Shared = Fake<GitHubCall, GitHubApi, Repos>;

/// A fake GitHub REST API: an HTTP server on `127.0.0.1` (a free port).
///
/// * Every call is recorded as a [`GitHubCall`] and answered from the
///   script first ([`enqueue`](Self::enqueue); rate limits with
///   [`GitHubReply::rate_limited`] and
///   [`GitHubReply::secondary_rate_limited`]), else as GitHub does.
/// * A call without a bearer token is `401`; without a `User-Agent`,
///   `403` (GitHub refuses both).
/// * `POST /app/installations/{id}/access_tokens` takes an App's JWT (three
///   dot-separated parts) and issues `ghs_{id}_{n}`, valid for an hour.
/// * Issue comments (`/repos/{owner}/{repo}/issues/…`), review comments and
///   their replies (`/repos/{owner}/{repo}/pulls/…`): created, listed a page
///   at a time (`per_page` ≤ 100, `page`), edited, deleted; a body over
///   65,536 characters is `422`. Reactions on comments and on issues: GitHub's
///   eight, `201` when new, `200` when already there; listed (`content=`
///   filters) and deleted by id.
///
/// Point the adapter at [`api_url`](Self::api_url).
#[derive(Clone)]
pub struct FakeGitHub {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeGitHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeGitHub")
            .field("addr", &self.addr)
            .field("calls", &self.shared.count())
            .finish_non_exhaustive()
    }
}

impl FakeGitHub {
    /// Starts the server; comments are made as `login` (the bot's: the
    /// App's `<slug>[bot]`, or the token's user).
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn start(login: &str) -> Self {
        match Self::try_start(login).await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeGitHub: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server, or says why it could not.
    pub async fn try_start(login: &str) -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        shared.state(|r| login.clone_into(&mut r.login));
        let app = Router::new()
            .route("/app/installations/{id}/access_tokens", post(access_tokens))
            .route(
                "/repos/{owner}/{repo}/issues/{number}/comments",
                post(create_comment).get(list_comments),
            )
            .route(
                "/repos/{owner}/{repo}/{kind}/comments/{id}",
                patch(edit_comment).delete(delete_comment),
            )
            .route(
                "/repos/{owner}/{repo}/{kind}/comments/{id}/reactions",
                post(react).get(list_reactions),
            )
            .route(
                "/repos/{owner}/{repo}/{kind}/comments/{id}/reactions/{reaction}",
                axum::routing::delete(delete_reaction),
            )
            .route(
                "/repos/{owner}/{repo}/issues/{number}/reactions",
                post(react_issue).get(list_issue_reactions),
            )
            .route(
                "/repos/{owner}/{repo}/issues/{number}/reactions/{reaction}",
                axum::routing::delete(delete_issue_reaction),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies",
                post(reply_review),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/comments",
                axum::routing::get(list_review_comments),
            )
            .route("/repos/{owner}/{repo}/check-runs", post(check_run))
            .route("/graphql", post(graphql))
            .with_state(Arc::clone(&shared));
        let (addr, server) = serve(app).await?;
        Ok(Self {
            shared,
            addr,
            _server: Arc::new(server),
        })
    }

    /// The API's base URL (`http://127.0.0.1:{port}`), for the adapter's
    /// `api_url`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bodies of the comments on issue or pull request `number` of
    /// `repo` (`owner/name`), review comments included, in order.
    pub fn comments(&self, repo: &str, number: u64) -> Vec<String> {
        self.shared.state(|r| {
            r.comments
                .values()
                .filter(|c| c.repo == repo && c.number == number)
                .map(|c| c.body.clone())
                .collect()
        })
    }

    /// The reactions on comment `id` (`r<id>` for a review comment).
    pub fn reactions(&self, id: &str) -> Vec<String> {
        let (kind, id) = match id.strip_prefix('r') {
            Some(id) => ("pulls", id),
            None => ("issues", id),
        };
        let id: u64 = id.parse().unwrap_or(0);
        self.reactions_on(kind, id)
    }

    /// The bodies of the comments in discussion `number` of `repo`.
    pub fn discussion_comments(&self, repo: &str, number: u64) -> Vec<String> {
        self.shared.state(|r| {
            r.comments
                .values()
                .filter(|c| c.kind == "discussion" && c.repo == repo && c.number == number)
                .map(|c| c.body.clone())
                .collect()
        })
    }

    /// The reactions on the node GraphQL named `node` (a discussion
    /// comment's `DC_…`).
    pub fn reactions_of_node(&self, node: &str) -> Vec<String> {
        let subject = self.shared.state(|r| r.nodes.get(node).cloned());
        match subject {
            Some((kind, _, id)) => self.reactions_on(kind, id),
            None => Vec::new(),
        }
    }

    /// The reactions on discussion `number` itself.
    pub fn discussion_reactions(&self, number: u64) -> Vec<String> {
        self.reactions_on("discussion", number)
    }

    /// The reactions on issue or pull request `number` itself.
    pub fn issue_reactions(&self, number: u64) -> Vec<String> {
        self.reactions_on("issue", number)
    }

    fn reactions_on(&self, kind: &'static str, id: u64) -> Vec<String> {
        self.shared.state(|r| {
            r.reactions
                .get(&(kind, id))
                .map(|l| l.iter().map(|(_, c)| c.clone()).collect())
                .unwrap_or_default()
        })
    }

    /// Queues `reply` for the next call of `endpoint`.
    pub fn enqueue(&self, endpoint: &str, reply: GitHubReply) {
        self.shared.enqueue(Some(endpoint), reply);
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<GitHubCall> {
        self.shared.calls()
    }

    /// The calls of `endpoint` so far.
    pub fn calls_of(&self, endpoint: &str) -> Vec<GitHubCall> {
        self.shared.calls_of(endpoint)
    }

    /// Waits until `count` calls of `endpoint` arrived, or `timeout` passed.
    pub async fn wait_for_calls(
        &self,
        endpoint: &str,
        count: usize,
        timeout: Duration,
    ) -> Vec<GitHubCall> {
        self.shared
            .wait_for(|c| c.endpoint == endpoint, count, timeout)
            .await
    }
}

type Answer = (StatusCode, Value);

fn message(status: StatusCode, text: &str) -> Answer {
    (
        status,
        json!({ "message": text, "documentation_url": "https://docs.github.com/rest" }),
    )
}

/// Records the call and answers it: the script first, else `success`.
async fn respond(
    shared: &Arc<Shared>,
    endpoint: &str,
    method: Method,
    path: String,
    headers: &HeaderMap,
    body: Value,
    success: impl FnOnce(&mut Repos, &str, &Value) -> Answer,
) -> Response {
    let at = Instant::now();
    let token = bearer(headers);
    let (reply, answer) = {
        let mut book = shared.lock();
        let refused = if token.is_none() {
            Some(message(StatusCode::UNAUTHORIZED, "Requires authentication"))
        } else if headers.get(USER_AGENT).is_none() {
            Some(message(
                StatusCode::FORBIDDEN,
                "Request forbidden by administrative rules. Please make sure your request has a User-Agent header",
            ))
        } else {
            None
        };
        let (reply, answer) = match refused {
            Some((status, v)) => (
                GitHubReply::raw(status, v.to_string()),
                Bytes::from(v.to_string()),
            ),
            None => {
                let token = token.clone().unwrap_or_default();
                book.scripted(endpoint)
                    .body_or(|| success(&mut book.state, &token, &body))
            }
        };
        let call = GitHubCall {
            endpoint: endpoint.to_owned(),
            method,
            path,
            token: token.unwrap_or_default(),
            body,
            at,
            status: reply.status(),
        };
        shared.record(book, call);
        (reply, answer)
    };
    let reply = if reply.has_content_type() {
        reply
    } else {
        reply.with_header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
    };
    reply.respond(answer).await
}

fn json_body(raw: &Bytes) -> Value {
    serde_json::from_slice(raw).unwrap_or(Value::Null)
}

fn iso(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // The civil date of a day count (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

async fn access_tokens(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<u64>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/app/installations/{id}/access_tokens");
    respond(
        &shared,
        "access_tokens",
        Method::POST,
        path,
        &headers,
        Value::Null,
        |r, jwt, _| {
            if jwt.split('.').count() != 3 {
                return message(
                    StatusCode::UNAUTHORIZED,
                    "A JSON web token could not be decoded",
                );
            }
            r.next_id += 1;
            let token = format!("ghs_{id}_{}", r.next_id);
            r.tokens.insert(token.clone(), id);
            (
                StatusCode::CREATED,
                json!({ "token": token, "expires_at": iso(SystemTime::now() + TOKEN_LIFE),
                    "permissions": { "issues": "write", "pull_requests": "write" } }),
            )
        },
    )
    .await
}

/// A new comment's body, checked as GitHub checks it.
fn comment_body(body: &Value) -> Result<String, Answer> {
    let text = body["body"].as_str().unwrap_or_default();
    if text.is_empty() {
        return Err(message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: body is missing",
        ));
    }
    if text.chars().count() > MAX_COMMENT {
        return Err(message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: Body is too long (maximum is 65536 characters)",
        ));
    }
    Ok(text.to_owned())
}

fn add(
    r: &mut Repos,
    kind: &'static str,
    repo: String,
    number: u64,
    in_reply_to: Option<u64>,
    body: String,
) -> Answer {
    r.next_id += 1;
    let c = Comment {
        id: 10_000 + r.next_id,
        kind,
        repo,
        number,
        in_reply_to,
        body,
        login: r.login.clone(),
        created_at: iso(SystemTime::now()),
    };
    let v = c.json();
    r.comments.insert(c.id, c);
    (StatusCode::CREATED, v)
}

async fn create_comment(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/comments");
    let full = format!("{owner}/{repo}");
    respond(
        &shared,
        "create_comment",
        Method::POST,
        path,
        &headers,
        json_body(&raw),
        |r, _, body| match comment_body(body) {
            Ok(text) => add(r, "issues", full, number, None, text),
            Err(a) => a,
        },
    )
    .await
}

async fn reply_review(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number, id)): Path<(String, String, u64, u64)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies");
    let full = format!("{owner}/{repo}");
    respond(
        &shared,
        "reply_review",
        Method::POST,
        path,
        &headers,
        json_body(&raw),
        |r, _, body| {
            // Replies answer a thread's first comment, never a reply. A thread
            // opened by a person has no comment here: taken as is.
            if r.comments.get(&id).is_some_and(|c| c.in_reply_to.is_some()) {
                return message(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Validation Failed: replies to replies are not supported",
                );
            }
            match comment_body(body) {
                Ok(text) => add(r, "pulls", full, number, Some(id), text),
                Err(a) => a,
            }
        },
    )
    .await
}

/// `per_page` (≤ 100, default 30) and `page` (from 1) of the query.
fn page(uri: &http::Uri) -> (usize, usize) {
    let param = |name: &str| {
        uri.query()
            .unwrap_or_default()
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let per = param("per_page").unwrap_or(30).clamp(1, 100);
    (per, param("page").unwrap_or(1).max(1))
}

async fn list_comments(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/comments");
    let full = format!("{owner}/{repo}");
    respond(
        &shared,
        "list_comments",
        Method::GET,
        path,
        &headers,
        Value::Null,
        |r, _, _| list(r, "issues", &full, number, page(&uri)),
    )
    .await
}

async fn list_review_comments(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/pulls/{number}/comments");
    let full = format!("{owner}/{repo}");
    respond(
        &shared,
        "list_review_comments",
        Method::GET,
        path,
        &headers,
        Value::Null,
        |r, _, _| list(r, "pulls", &full, number, page(&uri)),
    )
    .await
}

fn list(r: &Repos, kind: &str, repo: &str, number: u64, (per, page): (usize, usize)) -> Answer {
    let all: Vec<Value> = r
        .comments
        .values()
        .filter(|c| c.kind == kind && c.repo == repo && c.number == number)
        .skip(per * (page - 1))
        .take(per)
        .map(Comment::json)
        .collect();
    (StatusCode::OK, Value::Array(all))
}

fn kind_of(kind: &str) -> Option<&'static str> {
    match kind {
        "issues" => Some("issues"),
        "pulls" => Some("pulls"),
        _ => None,
    }
}

async fn edit_comment(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, kind, id)): Path<(String, String, String, u64)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/{kind}/comments/{id}");
    respond(
        &shared,
        "edit_comment",
        Method::PATCH,
        path,
        &headers,
        json_body(&raw),
        |r, _, body| {
            let text = match comment_body(body) {
                Ok(text) => text,
                Err(a) => return a,
            };
            match r
                .comments
                .get_mut(&id)
                .filter(|c| Some(c.kind) == kind_of(&kind))
            {
                Some(c) => {
                    c.body = text;
                    (StatusCode::OK, c.json())
                }
                None => message(StatusCode::NOT_FOUND, "Not Found"),
            }
        },
    )
    .await
}

async fn delete_comment(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, kind, id)): Path<(String, String, String, u64)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/{kind}/comments/{id}");
    respond(
        &shared,
        "delete_comment",
        Method::DELETE,
        path,
        &headers,
        Value::Null,
        |r, _, _| {
            let found = r
                .comments
                .get(&id)
                .is_some_and(|c| Some(c.kind) == kind_of(&kind));
            if found {
                r.comments.remove(&id);
                (StatusCode::NO_CONTENT, Value::Null)
            } else {
                message(StatusCode::NOT_FOUND, "Not Found")
            }
        },
    )
    .await
}

/// Adds reaction `body.content` to `subject`: `201` when new, `200` when
/// the bot had it already.
fn add_reaction(r: &mut Repos, subject: (&'static str, u64), body: &Value) -> Answer {
    let content = body["content"].as_str().unwrap_or_default().to_owned();
    if !REACTIONS.contains(&content.as_str()) {
        return message(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: content is not included in the list",
        );
    }
    r.next_id += 1;
    let fresh = 50_000 + r.next_id;
    let login = r.login.clone();
    let list = r.reactions.entry(subject).or_default();
    let json = |id: u64, content: &str| json!({ "id": id, "content": content, "user": { "login": login, "type": "Bot" } });
    match list.iter().find(|(_, c)| *c == content) {
        Some((id, c)) => (StatusCode::OK, json(*id, c)),
        None => {
            list.push((fresh, content.clone()));
            (StatusCode::CREATED, json(fresh, &content))
        }
    }
}

fn list_reactions_of(r: &Repos, subject: (&'static str, u64), uri: &http::Uri) -> Answer {
    let only = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("content="))
        .map(|c| c.replace("%2B", "+"));
    let list: Vec<Value> = r
        .reactions
        .get(&subject)
        .into_iter()
        .flatten()
        .filter(|(_, c)| only.as_ref().is_none_or(|o| o == c))
        .map(|(id, c)| json!({ "id": id, "content": c, "user": { "login": r.login, "type": "Bot" } }))
        .collect();
    (StatusCode::OK, Value::Array(list))
}

fn remove_reaction(r: &mut Repos, subject: (&'static str, u64), reaction: u64) -> Answer {
    let list = r.reactions.entry(subject).or_default();
    let before = list.len();
    list.retain(|(id, _)| *id != reaction);
    if list.len() < before {
        (StatusCode::NO_CONTENT, Value::Null)
    } else {
        message(StatusCode::NOT_FOUND, "Not Found")
    }
}

/// A comment's subject, if `kind` is one and the comment, when known, is
/// of that kind.
fn comment_subject(r: &Repos, kind: &str, id: u64) -> Option<(&'static str, u64)> {
    let kind = kind_of(kind)?;
    r.comments
        .get(&id)
        .is_none_or(|c| c.kind == kind)
        .then_some((kind, id))
}

async fn react(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, kind, id)): Path<(String, String, String, u64)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/{kind}/comments/{id}/reactions");
    respond(
        &shared,
        "react",
        Method::POST,
        path,
        &headers,
        json_body(&raw),
        |r, _, body| match comment_subject(r, &kind, id) {
            Some(subject) => add_reaction(r, subject, body),
            None => message(StatusCode::NOT_FOUND, "Not Found"),
        },
    )
    .await
}

async fn list_reactions(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, kind, id)): Path<(String, String, String, u64)>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/{kind}/comments/{id}/reactions");
    respond(
        &shared,
        "list_reactions",
        Method::GET,
        path,
        &headers,
        Value::Null,
        |r, _, _| match comment_subject(r, &kind, id) {
            Some(subject) => list_reactions_of(r, subject, &uri),
            None => message(StatusCode::NOT_FOUND, "Not Found"),
        },
    )
    .await
}

async fn delete_reaction(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, kind, id, reaction)): Path<(String, String, String, u64, u64)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/{kind}/comments/{id}/reactions/{reaction}");
    respond(
        &shared,
        "delete_reaction",
        Method::DELETE,
        path,
        &headers,
        Value::Null,
        |r, _, _| match comment_subject(r, &kind, id) {
            Some(subject) => remove_reaction(r, subject, reaction),
            None => message(StatusCode::NOT_FOUND, "Not Found"),
        },
    )
    .await
}

async fn react_issue(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/reactions");
    respond(
        &shared,
        "react",
        Method::POST,
        path,
        &headers,
        json_body(&raw),
        |r, _, body| add_reaction(r, ("issue", number), body),
    )
    .await
}

async fn list_issue_reactions(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/reactions");
    respond(
        &shared,
        "list_reactions",
        Method::GET,
        path,
        &headers,
        Value::Null,
        |r, _, _| list_reactions_of(r, ("issue", number), &uri),
    )
    .await
}

async fn delete_issue_reaction(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo, number, reaction)): Path<(String, String, u64, u64)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/issues/{number}/reactions/{reaction}");
    respond(
        &shared,
        "delete_reaction",
        Method::DELETE,
        path,
        &headers,
        Value::Null,
        |r, _, _| remove_reaction(r, ("issue", number), reaction),
    )
    .await
}

async fn check_run(
    State(shared): State<Arc<Shared>>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let path = format!("/repos/{owner}/{repo}/check-runs");
    respond(&shared, "check_run", Method::POST, path, &headers, json_body(&raw), |r, _, body| {
        let named = body["name"].as_str().is_some_and(|n| !n.is_empty());
        let sha = body["head_sha"].as_str().is_some_and(|s| !s.is_empty());
        let status_ok = body["status"]
            .as_str()
            .is_none_or(|s| ["queued", "in_progress", "completed"].contains(&s));
        let conclusion_ok = body["conclusion"].as_str().is_none_or(|c| {
            ["action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"]
                .contains(&c)
        });
        if !(named && sha && status_ok && conclusion_ok) {
            return message(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed");
        }
        r.next_id += 1;
        (StatusCode::CREATED, json!({ "id": 70_000 + r.next_id, "name": body["name"], "head_sha": body["head_sha"] }))
    })
    .await
}

/// The GraphQL operations Discussions need (what the query names decides
/// which): a discussion's id and comments, adding, editing and deleting a
/// comment, adding and removing a reaction. Each is recorded as
/// `graphql:<operation>`.
async fn graphql(State(shared): State<Arc<Shared>>, headers: HeaderMap, raw: Bytes) -> Response {
    let body = json_body(&raw);
    let query = body["query"].as_str().unwrap_or_default().to_owned();
    let operation = [
        "addDiscussionComment",
        "updateDiscussionComment",
        "deleteDiscussionComment",
        "addReaction",
        "removeReaction",
        "discussion",
    ]
    .into_iter()
    .find(|op| query.contains(op))
    .unwrap_or("unknown");
    let endpoint = format!("graphql:{operation}");
    respond(
        &shared,
        &endpoint,
        Method::POST,
        "/graphql".to_owned(),
        &headers,
        body,
        |r, _, body| {
            let v = &body["variables"];
            let data = match operation {
                "discussion" => discussion_query(r, v),
                "addDiscussionComment" => {
                    let Some((_, repo, number)) =
                        v["id"].as_str().and_then(|id| r.nodes.get(id)).cloned()
                    else {
                        return graphql_error("Could not resolve to a node with the global id");
                    };
                    let text = match comment_body(&json!({ "body": v["body"] })) {
                        Ok(text) => text,
                        Err(_) => return graphql_error("Body is too long or missing"),
                    };
                    let (_, c) = add(r, "discussion", repo.clone(), number, None, text);
                    let node = format!("DC_{}", c["id"]);
                    r.nodes.insert(
                        node.clone(),
                        ("discussion_comment", repo, c["id"].as_u64().unwrap_or(0)),
                    );
                    json!({ "addDiscussionComment": { "comment": { "id": node } } })
                }
                "updateDiscussionComment" | "deleteDiscussionComment" => {
                    let Some(id) = v["id"]
                        .as_str()
                        .and_then(|n| n.strip_prefix("DC_"))
                        .and_then(|n| n.parse::<u64>().ok())
                    else {
                        return graphql_error("Could not resolve to a node with the global id");
                    };
                    if operation == "deleteDiscussionComment" {
                        r.comments.remove(&id);
                    } else if let Some(c) = r.comments.get_mut(&id) {
                        v["body"]
                            .as_str()
                            .unwrap_or_default()
                            .clone_into(&mut c.body);
                    }
                    json!({ operation: { "comment": { "id": v["id"] } } })
                }
                _ => {
                    let Some((kind, _, id)) =
                        v["id"].as_str().and_then(|n| r.nodes.get(n)).cloned()
                    else {
                        return graphql_error("Could not resolve to a node with the global id");
                    };
                    let content = v["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_ascii_lowercase();
                    let content = match content.as_str() {
                        "thumbs_up" => "+1".to_owned(),
                        "thumbs_down" => "-1".to_owned(),
                        other => other.to_owned(),
                    };
                    if operation == "addReaction" {
                        let (status, _) =
                            add_reaction(r, (kind, id), &json!({ "content": content }));
                        if !status.is_success() {
                            return graphql_error("Invalid reaction content");
                        }
                    } else {
                        r.reactions
                            .entry((kind, id))
                            .or_default()
                            .retain(|(_, c)| *c != content);
                    }
                    json!({ operation: { "reaction": { "content": v["content"] } } })
                }
            };
            (StatusCode::OK, json!({ "data": data }))
        },
    )
    .await
}

/// `repository.discussion`: its node id, and its comments a page at a time
/// (`first`, `after` a cursor this answered).
fn discussion_query(r: &mut Repos, v: &Value) -> Value {
    let repo = format!(
        "{}/{}",
        v["owner"].as_str().unwrap_or_default(),
        v["name"].as_str().unwrap_or_default()
    );
    let number = v["number"].as_u64().unwrap_or(0);
    let node = format!("D_{}_{number}", repo.replace('/', "_"));
    r.nodes
        .insert(node.clone(), ("discussion", repo.clone(), number));
    let first = usize::try_from(v["first"].as_u64().unwrap_or(100))
        .unwrap_or(100)
        .clamp(1, 100);
    let after: usize = v["after"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let all: Vec<&Comment> = r
        .comments
        .values()
        .filter(|c| c.kind == "discussion" && c.repo == repo && c.number == number)
        .collect();
    let nodes: Vec<Value> = all
        .iter()
        .skip(after)
        .take(first)
        .map(|c| {
            json!({ "id": format!("DC_{}", c.id), "body": c.body, "createdAt": c.created_at,
                         "author": { "login": c.login } })
        })
        .collect();
    let end = after + nodes.len();
    json!({ "repository": { "discussion": {
        "id": node,
        "comments": { "pageInfo": { "hasNextPage": end < all.len(), "endCursor": end.to_string() },
                      "nodes": nodes },
    } } })
}

fn graphql_error(message: &str) -> Answer {
    (
        StatusCode::OK,
        json!({ "data": null, "errors": [{ "message": message }] }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            iso(UNIX_EPOCH + Duration::from_secs(1_468_275_250)),
            "2016-07-11T22:14:10Z"
        );
        assert_eq!(
            iso(UNIX_EPOCH + Duration::from_secs(1_709_208_000)),
            "2024-02-29T12:00:00Z"
        );
    }
}
