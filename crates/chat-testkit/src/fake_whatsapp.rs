//! [`FakeWhatsApp`]: a fake WhatsApp Cloud API for tests, enforcing the
//! limits the Cloud API documents, the 24-hour customer-service window
//! among them.

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
use axum::routing::{get, post};
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::scaffold::{Call, Fake, Reply, bearer};
use crate::server::{Server, serve};

/// The Graph API version the fake's URL carries.
const VERSION: &str = "v21.0";

/// One Cloud API call the fake received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WhatsAppCall {
    /// What was called: `messages` (a send or a read receipt), `media` (an
    /// upload), `media_url` (`GET /{media-id}`) or `download`.
    pub endpoint: String,
    /// The phone number id of the path (`messages`, `media`), or the media
    /// id (`media_url`, `download`).
    pub id: String,
    /// The bearer token.
    pub token: String,
    /// The JSON body (an upload's fields, its file as `{"filename", "size"}`).
    pub body: Value,
    /// When it arrived, on tokio's clock.
    pub at: Instant,
    /// The status answered.
    pub status: StatusCode,
}

impl Call for WhatsAppCall {
    fn key(&self) -> &str {
        &self.endpoint
    }
}

/// The WhatsApp Cloud API, as the platform of a [`Reply`].
#[derive(Debug)]
pub enum WhatsAppApi {}

/// One scripted answer of [`FakeWhatsApp`].
pub type WhatsAppReply = Reply<WhatsAppApi>;

impl Reply<WhatsAppApi> {
    /// A Graph API error: HTTP 400 with `{"error": {"code", "message", …}}`.
    pub fn error(code: i64, message: &str) -> Self {
        Self::json(&graph_error(code, message)).with_status(StatusCode::BAD_REQUEST)
    }

    /// The throughput limit (`130429`, "Rate limit hit").
    pub fn rate_limited() -> Self {
        Self::error(130_429, "Rate limit hit")
    }
}

fn graph_error(code: i64, message: &str) -> Value {
    json!({ "error": {
        "message": message, "type": "OAuthException", "code": code,
        "error_data": { "messaging_product": "whatsapp", "details": message },
        "fbtrace_id": "AbCdEf",
    }})
}

/// The most characters of a text message's body.
const MAX_TEXT: usize = 4096;
/// The most characters of an interactive message's body.
const MAX_BODY: usize = 1024;
/// The most reply buttons.
const MAX_BUTTONS: usize = 3;
/// The most characters of a reply button's title (and a list's button).
const MAX_BUTTON_TITLE: usize = 20;
/// The most rows of a list, over all its sections.
const MAX_ROWS: usize = 10;
/// The most characters of a list row's title.
const MAX_ROW_TITLE: usize = 24;
/// The most characters of a reply button's id.
const MAX_BUTTON_ID: usize = 256;
/// The most characters of a list row's id.
const MAX_ROW_ID: usize = 200;
/// How long after a user's message the business may write freely.
const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// What the fake holds beyond its calls and script.
#[derive(Default)]
struct Numbers {
    /// Messages sent, by (phone number id, user): the message object as
    /// sent, with its `id`.
    chats: HashMap<(String, String), Vec<Value>>,
    /// When each user last wrote to each number.
    wrote: HashMap<(String, String), Instant>,
    /// Read receipts: (phone number id, message id, typing indicator).
    read: Vec<(String, String, bool)>,
    /// The statuses of messages that failed after they were accepted:
    /// (phone number id, status object).
    statuses: Vec<(String, Value)>,
    /// Media by id: name, type, bytes.
    media: HashMap<String, (String, String, Bytes)>,
    next_id: u64,
}

type Shared = Fake<WhatsAppCall, WhatsAppApi, Numbers>;

/// A fake WhatsApp Cloud API: an HTTP server on `127.0.0.1` (a free port).
///
/// * Every call is recorded as a [`WhatsAppCall`] and answered from the
///   script first ([`enqueue`](Self::enqueue), [`fail`](Self::fail),
///   [`rate_limit`](Self::rate_limit)), else as the Cloud API does.
/// * `POST /{phone-number-id}/messages` keeps the messages sent per chat
///   ([`messages`](Self::messages), [`texts`](Self::texts)) and refuses what
///   WhatsApp refuses: no bearer token (`190`), a text over 4,096 characters
///   or empty, reply buttons over 3 or titles over 20 characters, a list of
///   over 10 rows or row titles over 24, an interactive body over 1,024,
///   an unknown media id. Any message but a template or a read receipt to a
///   user who has not written within 24 hours ([`user_wrote`](Self::user_wrote))
///   is accepted, not delivered, and reported as a `failed` status with
///   error `131047` ([`failed_statuses`](Self::failed_statuses)), as the
///   Cloud API does.
/// * `POST /{phone-number-id}/media` stores an upload; `GET /{media-id}`
///   answers its URL (on the fake), which serves the bytes to a bearer.
///   [`add_media`](Self::add_media) adds one a user sent.
///
/// Point the adapter at [`api_url`](Self::api_url).
#[derive(Clone)]
pub struct FakeWhatsApp {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeWhatsApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeWhatsApp")
            .field("addr", &self.addr)
            .field("calls", &self.shared.count())
            .finish_non_exhaustive()
    }
}

impl FakeWhatsApp {
    /// Starts the server.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeWhatsApp: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server, or says why it could not.
    pub async fn try_start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route(&format!("/{VERSION}/{{phone}}/messages"), post(messages))
            .route(&format!("/{VERSION}/{{phone}}/media"), post(upload))
            .route(&format!("/{VERSION}/{{media}}"), get(media_url))
            .route("/download/{media}", get(download))
            .with_state(Arc::clone(&shared));
        let (addr, server) = serve(app).await?;
        Ok(Self {
            shared,
            addr,
            _server: Arc::new(server),
        })
    }

    /// The Graph API's base URL with its version
    /// (`http://127.0.0.1:{port}/v21.0`), for the adapter's `api_url`.
    pub fn api_url(&self) -> String {
        format!("http://{}/{VERSION}", self.addr)
    }

    /// User `user` wrote to number `phone_number_id` now: the 24-hour
    /// window opens (tokio's clock).
    pub fn user_wrote(&self, phone_number_id: &str, user: &str) {
        self.shared.state(|n| {
            n.wrote.insert(
                (phone_number_id.to_owned(), user.to_owned()),
                Instant::now(),
            );
        });
    }

    /// Media a user sent, by the id returned.
    pub fn add_media(&self, name: &str, mime: &str, bytes: impl Into<Bytes>) -> String {
        let bytes = bytes.into();
        self.shared.state(|n| {
            n.next_id += 1;
            let id = format!("{}", 900_000 + n.next_id);
            n.media
                .insert(id.clone(), (name.to_owned(), mime.to_owned(), bytes));
            id
        })
    }

    /// The messages sent from `phone_number_id` to `user`, in order.
    pub fn messages(&self, phone_number_id: &str, user: &str) -> Vec<Value> {
        self.shared.state(|n| {
            n.chats
                .get(&(phone_number_id.to_owned(), user.to_owned()))
                .cloned()
                .unwrap_or_default()
        })
    }

    /// The bodies of the text messages sent from `phone_number_id` to
    /// `user`, in order.
    pub fn texts(&self, phone_number_id: &str, user: &str) -> Vec<String> {
        self.messages(phone_number_id, user)
            .iter()
            .filter_map(|m| m.pointer("/text/body").and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    }

    /// The read receipts sent: phone number id, message id, and whether
    /// the typing indicator came with it.
    pub fn read_receipts(&self) -> Vec<(String, String, bool)> {
        self.shared.state(|n| n.read.clone())
    }

    /// The statuses WhatsApp would deliver for messages that were accepted
    /// and then failed (a message outside the 24-hour window: error
    /// 131047), with the phone number id they are for; deliver them with
    /// `WhatsAppDeliveries::statuses`.
    pub fn failed_statuses(&self) -> Vec<(String, Value)> {
        self.shared.state(|n| n.statuses.clone())
    }

    /// Queues `reply` for the next call of `endpoint`.
    pub fn enqueue(&self, endpoint: &str, reply: WhatsAppReply) {
        self.shared.enqueue(Some(endpoint), reply);
    }

    /// The next `times` calls of `endpoint` are refused with `code`.
    pub fn fail(&self, endpoint: &str, code: i64, message: &str, times: usize) {
        for _ in 0..times {
            self.enqueue(endpoint, WhatsAppReply::error(code, message));
        }
    }

    /// The next `times` calls of `endpoint` hit the throughput limit.
    pub fn rate_limit(&self, endpoint: &str, times: usize) {
        for _ in 0..times {
            self.enqueue(endpoint, WhatsAppReply::rate_limited());
        }
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<WhatsAppCall> {
        self.shared.calls()
    }

    /// The calls of `endpoint` so far.
    pub fn calls_of(&self, endpoint: &str) -> Vec<WhatsAppCall> {
        self.shared.calls_of(endpoint)
    }

    /// Waits until `count` calls of `endpoint` arrived, or `timeout` passed.
    pub async fn wait_for_calls(
        &self,
        endpoint: &str,
        count: usize,
        timeout: Duration,
    ) -> Vec<WhatsAppCall> {
        self.shared
            .wait_for(|c| c.endpoint == endpoint, count, timeout)
            .await
    }
}

type Answer = (StatusCode, Value);

fn refusal(code: i64, message: &str) -> Answer {
    (StatusCode::BAD_REQUEST, graph_error(code, message))
}

fn invalid(message: &str) -> Answer {
    refusal(131_009, &format!("Parameter value is not valid: {message}"))
}

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// An interactive message's buttons or list, checked as the Cloud API
/// checks them.
fn check_interactive(i: &Value) -> Result<(), Answer> {
    let body = chars(&i["body"]["text"]);
    if body == 0 || body > MAX_BODY {
        return Err(invalid("the body text is 1 to 1024 characters"));
    }
    match i["type"].as_str() {
        Some("button") => {
            let buttons = i["action"]["buttons"]
                .as_array()
                .map_or(&[][..], Vec::as_slice);
            if buttons.is_empty() || buttons.len() > MAX_BUTTONS {
                return Err(invalid("1 to 3 buttons"));
            }
            let mut ids = Vec::new();
            for b in buttons {
                let (title, id) = (&b["reply"]["title"], &b["reply"]["id"]);
                if chars(title) == 0 || chars(title) > MAX_BUTTON_TITLE {
                    return Err(invalid("a button title is 1 to 20 characters"));
                }
                if chars(id) == 0 || chars(id) > MAX_BUTTON_ID || ids.contains(&id) {
                    return Err(invalid("button ids are unique, 1 to 256 characters"));
                }
                ids.push(id);
            }
            Ok(())
        }
        Some("list") => {
            if chars(&i["action"]["button"]) == 0
                || chars(&i["action"]["button"]) > MAX_BUTTON_TITLE
            {
                return Err(invalid("the list's button is 1 to 20 characters"));
            }
            let rows: Vec<&Value> = i["action"]["sections"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .flat_map(|s| s["rows"].as_array().map_or(&[][..], Vec::as_slice))
                .collect();
            if rows.is_empty() || rows.len() > MAX_ROWS {
                return Err(invalid("1 to 10 rows"));
            }
            for r in rows {
                if chars(&r["title"]) == 0 || chars(&r["title"]) > MAX_ROW_TITLE {
                    return Err(invalid("a row title is 1 to 24 characters"));
                }
                if chars(&r["id"]) == 0 || chars(&r["id"]) > MAX_ROW_ID {
                    return Err(invalid("a row id is 1 to 200 characters"));
                }
            }
            Ok(())
        }
        _ => Err(invalid("an interactive type this fake does not know")),
    }
}

/// What `POST /{phone}/messages` answers when nothing is scripted.
fn send(numbers: &mut Numbers, phone: &str, body: &Value) -> Answer {
    if body["messaging_product"] != "whatsapp" {
        return invalid("messaging_product must be whatsapp");
    }
    if body["status"] == "read" {
        let Some(message) = body["message_id"].as_str() else {
            return invalid("message_id is required");
        };
        let typing = body["typing_indicator"]["type"] == "text";
        numbers
            .read
            .push((phone.to_owned(), message.to_owned(), typing));
        return (StatusCode::OK, json!({ "success": true }));
    }
    let Some(to) = body["to"]
        .as_str()
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
    else {
        return refusal(131_030, "Recipient phone number not in allowed list");
    };
    let kind = body["type"].as_str().unwrap_or("text");
    let checked = match kind {
        "text" => {
            let n = chars(&body["text"]["body"]);
            if n == 0 || n > MAX_TEXT {
                Err(invalid("the text body is 1 to 4096 characters"))
            } else {
                Ok(())
            }
        }
        "interactive" => check_interactive(&body["interactive"]),
        "reaction" => {
            if body["reaction"]["message_id"]
                .as_str()
                .is_none_or(str::is_empty)
            {
                Err(invalid("a reaction needs its message_id"))
            } else {
                Ok(())
            }
        }
        "document" | "image" | "audio" | "video" => {
            let media = body[kind]["id"].as_str().unwrap_or_default();
            if numbers.media.contains_key(media) {
                Ok(())
            } else {
                Err(invalid("unknown media id"))
            }
        }
        "template" => {
            if body["template"]["name"].as_str().is_none_or(str::is_empty)
                || body["template"]["language"]["code"].as_str().is_none()
            {
                Err(invalid("a template needs its name and language code"))
            } else {
                Ok(())
            }
        }
        _ => Err(invalid("a message type this fake does not know")),
    };
    if let Err(e) = checked {
        return e;
    }
    let key = (phone.to_owned(), to.to_owned());
    let open = numbers
        .wrote
        .get(&key)
        .is_some_and(|at| at.elapsed() < WINDOW);
    numbers.next_id += 1;
    let id = format!("wamid.FAKE{:08}", numbers.next_id);
    if kind != "template" && !open {
        // Accepted, then failed: the Cloud API reports the closed window in
        // a status, not in the answer.
        numbers.statuses.push((
            phone.to_owned(),
            json!({
                "id": id, "status": "failed", "timestamp": "1700000000", "recipient_id": to,
                "errors": [{
                    "code": 131_047,
                    "title": "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
                }],
            }),
        ));
    } else {
        let mut message = body.clone();
        message["id"] = json!(id);
        numbers.chats.entry(key).or_default().push(message);
    }
    (
        StatusCode::OK,
        json!({
            "messaging_product": "whatsapp",
            "contacts": [{ "input": to, "wa_id": to }],
            "messages": [{ "id": id }],
        }),
    )
}

async fn messages(
    State(shared): State<Arc<Shared>>,
    Path(phone): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    respond(&shared, "messages", phone, &headers, body, send).await
}

async fn upload(
    State(shared): State<Arc<Shared>>,
    Path(phone): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let parts = crate::scaffold::multipart(&content_type, &raw);
    let mut fields = serde_json::Map::new();
    let mut file = None;
    for part in parts {
        match part.filename {
            Some(name) => {
                fields.insert(
                    part.name.clone(),
                    json!({ "filename": name, "size": part.content.len() }),
                );
                file = Some((name, part.content));
            }
            None => {
                fields.insert(
                    part.name,
                    json!(String::from_utf8_lossy(&part.content).into_owned()),
                );
            }
        }
    }
    let body = Value::Object(fields);
    respond(
        &shared,
        "media",
        phone,
        &headers,
        body,
        move |n, _, body| {
            let Some((name, bytes)) = file.take() else {
                return invalid("an upload needs its file");
            };
            if body["messaging_product"] != "whatsapp" {
                return invalid("messaging_product must be whatsapp");
            }
            let mime = body["type"].as_str().unwrap_or_default().to_owned();
            n.next_id += 1;
            let id = format!("{}", 900_000 + n.next_id);
            n.media.insert(id.clone(), (name, mime, bytes));
            (StatusCode::OK, json!({ "id": id }))
        },
    )
    .await
}

async fn media_url(
    State(shared): State<Arc<Shared>>,
    Path(media): Path<String>,
    headers: HeaderMap,
) -> Response {
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_owned();
    respond(
        &shared,
        "media_url",
        media,
        &headers,
        Value::Null,
        move |n, id, _| match n.media.get(id) {
            Some((_, mime, bytes)) => (
                StatusCode::OK,
                json!({
                    "messaging_product": "whatsapp", "id": id, "mime_type": mime,
                    "file_size": bytes.len(), "sha256": "",
                    "url": format!("http://{host}/download/{id}"),
                }),
            ),
            None => refusal(100, "Unsupported get request: the media does not exist"),
        },
    )
    .await
}

async fn download(
    State(shared): State<Arc<Shared>>,
    Path(media): Path<String>,
    headers: HeaderMap,
) -> Response {
    let token = bearer(&headers);
    let book = shared.lock();
    let bytes = book.state.media.get(&media).map(|(_, _, b)| b.clone());
    let status = match (&token, &bytes) {
        (None, _) => StatusCode::UNAUTHORIZED,
        (Some(_), None) => StatusCode::NOT_FOUND,
        (Some(_), Some(_)) => StatusCode::OK,
    };
    let call = WhatsAppCall {
        endpoint: "download".to_owned(),
        id: media,
        token: token.unwrap_or_default(),
        body: Value::Null,
        at: Instant::now(),
        status,
    };
    shared.record(book, call);
    let mut response = Response::new(Body::from(if status == StatusCode::OK {
        bytes.unwrap_or_default()
    } else {
        Bytes::new()
    }));
    *response.status_mut() = status;
    response
}

/// Records a call of `endpoint` and answers it: scripted, refused without
/// a bearer token, else `success`.
async fn respond(
    shared: &Arc<Shared>,
    endpoint: &str,
    id: String,
    headers: &HeaderMap,
    body: Value,
    mut success: impl FnMut(&mut Numbers, &str, &Value) -> Answer,
) -> Response {
    let at = Instant::now();
    let token = bearer(headers);
    let (reply, answer) = {
        let mut book = shared.lock();
        let (reply, answer) = if token.is_none() {
            let e = graph_error(190, "Invalid OAuth access token");
            (
                WhatsAppReply::raw(StatusCode::UNAUTHORIZED, e.to_string()),
                Bytes::from(e.to_string()),
            )
        } else {
            book.scripted(endpoint)
                .body_or(|| success(&mut book.state, &id, &body))
        };
        let call = WhatsAppCall {
            endpoint: endpoint.to_owned(),
            id,
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
