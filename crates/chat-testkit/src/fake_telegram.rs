//! [`FakeTelegram`]: a fake Telegram Bot API for tests, enforcing the
//! limits the Bot API documents.

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

use crate::scaffold::{Call, Fake, Reply};
use crate::server::{Server, serve};

/// One Bot API call the fake received.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TelegramCall {
    /// The method (`sendMessage`, …).
    pub method: String,
    /// The bot token of the URL (`/bot{token}/…`).
    pub token: String,
    /// The parameters: the JSON body, or a multipart body's fields (a
    /// file's as `{"filename": …, "size": …}`).
    pub body: Value,
    /// When it arrived, on tokio's clock.
    pub at: Instant,
    /// The status answered.
    pub status: StatusCode,
    /// Whether the answer was `ok: true`.
    pub ok: bool,
}

impl Call for TelegramCall {
    fn key(&self) -> &str {
        &self.method
    }
}

/// Telegram's Bot API, as the platform of a [`Reply`].
#[derive(Debug)]
pub enum TelegramApi {}

/// One scripted answer of [`FakeTelegram`].
pub type TelegramReply = Reply<TelegramApi>;

impl Reply<TelegramApi> {
    /// `ok: false` with `error_code` and `description`, as the Bot API
    /// refuses a call (its status the error code).
    pub fn error(error_code: u16, description: &str) -> Self {
        Self::json(&json!({ "ok": false, "error_code": error_code, "description": description }))
            .with_status(StatusCode::from_u16(error_code).unwrap_or(StatusCode::BAD_REQUEST))
    }

    /// 429 with `parameters.retry_after`, as the Bot API rate-limits.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::json(&json!({
            "ok": false,
            "error_code": 429,
            "description": format!("Too Many Requests: retry after {retry_after_secs}"),
            "parameters": { "retry_after": retry_after_secs },
        }))
        .with_status(StatusCode::TOO_MANY_REQUESTS)
    }
}

/// The most UTF-16 code units of a message's text.
const MAX_TEXT: usize = 4096;
/// The most bytes of a button's `callback_data`.
const MAX_CALLBACK_DATA: usize = 64;

/// The reaction emoji the Bot API takes (`ReactionTypeEmoji`).
const REACTIONS: &[&str] = &[
    "👍",
    "👎",
    "❤",
    "🔥",
    "🥰",
    "👏",
    "😁",
    "🤔",
    "🤯",
    "😱",
    "🤬",
    "😢",
    "🎉",
    "🤩",
    "🤮",
    "💩",
    "🙏",
    "👌",
    "🕊",
    "🤡",
    "🥱",
    "🥴",
    "😍",
    "🐳",
    "❤\u{200d}🔥",
    "🌚",
    "🌭",
    "💯",
    "🤣",
    "⚡",
    "🍌",
    "🏆",
    "💔",
    "🤨",
    "😐",
    "🍓",
    "🍾",
    "💋",
    "🖕",
    "😈",
    "😴",
    "😭",
    "🤓",
    "👻",
    "👨\u{200d}💻",
    "👀",
    "🎃",
    "🙈",
    "😇",
    "😨",
    "🤝",
    "✍",
    "🤗",
    "🫡",
    "🎅",
    "🎄",
    "☃",
    "💅",
    "🤪",
    "🗿",
    "🆒",
    "💘",
    "🙉",
    "🦄",
    "😘",
    "💊",
    "🙊",
    "😎",
    "👾",
    "🤷\u{200d}♂",
    "🤷",
    "🤷\u{200d}♀",
    "😡",
];

/// What the fake holds beyond its calls and script.
#[derive(Default)]
struct Bots {
    /// Messages sent, by chat: `message_id`, `text`, `entities`,
    /// `reply_markup`, `message_thread_id`, `reaction`.
    chats: HashMap<i64, Vec<Value>>,
    next_id: i64,
    /// Files by id: their path and bytes.
    files: HashMap<String, (String, Bytes)>,
    /// Usernames `getMe` answers, by bot id.
    usernames: HashMap<String, String>,
}

type Shared = Fake<TelegramCall, TelegramApi, Bots>;

/// A fake Telegram Bot API: an HTTP server on `127.0.0.1` (a free port).
///
/// * Every `POST /bot{token}/{method}` is recorded as a [`TelegramCall`],
///   and answered from the script first ([`enqueue`](Self::enqueue),
///   [`fail`](Self::fail), [`rate_limit`](Self::rate_limit)), else as the
///   Bot API does.
/// * It keeps the messages sent per chat ([`messages`](Self::messages)) and
///   refuses what Telegram refuses: a text over 4,096 UTF-16 code units or
///   empty, entities outside their text, `callback_data` over 64 bytes, an
///   edit that changes nothing ("message is not modified") or of an unknown
///   message, a reaction emoji Telegram does not take, a draft outside a
///   private chat, an `answerCallbackQuery` text over 200 characters.
/// * `getFile` and `GET /file/bot{token}/{path}` serve the files of
///   [`add_file`](Self::add_file); `sendDocument` (multipart) stores one.
///
/// Point the adapter at [`api_url`](Self::api_url).
#[derive(Clone)]
pub struct FakeTelegram {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _server: Arc<Server>,
}

impl fmt::Debug for FakeTelegram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeTelegram")
            .field("addr", &self.addr)
            .field("calls", &self.shared.count())
            .finish_non_exhaustive()
    }
}

impl FakeTelegram {
    /// Starts the server.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn start() -> Self {
        match Self::try_start().await {
            Ok(fake) => fake,
            Err(e) => panic!("FakeTelegram: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts the server, or says why it could not.
    pub async fn try_start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/{bot}/{method}", post(answer))
            .route("/file/{bot}/{*path}", get(file))
            .with_state(Arc::clone(&shared));
        let (addr, server) = serve(app).await?;
        Ok(Self {
            shared,
            addr,
            _server: Arc::new(server),
        })
    }

    /// The Bot API's base URL (`http://127.0.0.1:{port}`), for the adapter's
    /// `api_url`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The username `getMe` answers for bot `bot_id` (default `fake_bot`).
    pub fn set_username(&self, bot_id: &str, username: &str) {
        self.shared.state(|b| {
            b.usernames.insert(bot_id.to_owned(), username.to_owned());
        });
    }

    /// A file the bot can download, by the `file_id` returned.
    pub fn add_file(&self, name: &str, bytes: impl Into<Bytes>) -> String {
        let bytes = bytes.into();
        self.shared.state(|b| {
            let id = format!("FILE{:06}", b.files.len() + 1);
            b.files
                .insert(id.clone(), (format!("documents/{id}_{name}"), bytes));
            id
        })
    }

    /// The messages the bots sent into `chat`, in order (edits applied,
    /// deletions removed).
    pub fn messages(&self, chat: i64) -> Vec<Value> {
        self.shared
            .state(|b| b.chats.get(&chat).cloned().unwrap_or_default())
    }

    /// Queues `reply` for the next call of `method`.
    pub fn enqueue(&self, method: &str, reply: TelegramReply) {
        self.shared.enqueue(Some(method), reply);
    }

    /// The next `times` calls of `method` are refused with `error_code` and
    /// `description`.
    pub fn fail(&self, method: &str, error_code: u16, description: &str, times: usize) {
        for _ in 0..times {
            self.enqueue(method, TelegramReply::error(error_code, description));
        }
    }

    /// The next `times` calls of `method` are rate-limited for
    /// `retry_after_secs`.
    pub fn rate_limit(&self, method: &str, retry_after_secs: u64, times: usize) {
        for _ in 0..times {
            self.enqueue(method, TelegramReply::rate_limited(retry_after_secs));
        }
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<TelegramCall> {
        self.shared.calls()
    }

    /// The calls of `method` so far.
    pub fn calls_of(&self, method: &str) -> Vec<TelegramCall> {
        self.shared.calls_of(method)
    }

    /// Waits until `count` calls of `method` arrived, or `timeout` passed.
    pub async fn wait_for_calls(
        &self,
        method: &str,
        count: usize,
        timeout: Duration,
    ) -> Vec<TelegramCall> {
        self.shared
            .wait_for(|c| c.method == method, count, timeout)
            .await
    }
}

fn refusal(description: &str) -> (StatusCode, Value) {
    (
        StatusCode::BAD_REQUEST,
        json!({ "ok": false, "error_code": 400, "description": format!("Bad Request: {description}") }),
    )
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// A message's text, entities and keyboard, checked as the Bot API checks
/// them.
fn check_message(body: &Value, text_required: bool) -> Result<(), (StatusCode, Value)> {
    let text = body["text"].as_str().unwrap_or_default();
    let len = utf16_len(text);
    if text_required && text.trim().is_empty() {
        return Err(refusal("message text is empty"));
    }
    if len > MAX_TEXT {
        return Err(refusal("message is too long"));
    }
    for e in body["entities"].as_array().map_or(&[][..], Vec::as_slice) {
        let (offset, length) = (e["offset"].as_u64(), e["length"].as_u64());
        let fits = matches!((offset, length), (Some(o), Some(l)) if l > 0 && o + l <= len as u64);
        if !fits || e["type"].as_str().is_none() {
            return Err(refusal(
                "can't parse entities: an entity is outside the text",
            ));
        }
    }
    let rows = body["reply_markup"]["inline_keyboard"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for button in rows
        .iter()
        .flat_map(|r| r.as_array().map_or(&[][..], Vec::as_slice))
    {
        if button["text"].as_str().is_none_or(str::is_empty) {
            return Err(refusal("button text is empty"));
        }
        let data = button["callback_data"].as_str();
        if data.is_some_and(|d| d.is_empty() || d.len() > MAX_CALLBACK_DATA) {
            return Err(refusal("BUTTON_DATA_INVALID"));
        }
        if data.is_none() && button["url"].as_str().is_none() {
            return Err(refusal("a button needs callback_data or a url"));
        }
    }
    Ok(())
}

fn chat_of(body: &Value) -> Option<i64> {
    body["chat_id"]
        .as_i64()
        .or_else(|| body["chat_id"].as_str().and_then(|c| c.parse().ok()))
}

/// What the Bot API answers when `method` succeeds.
fn success(bots: &mut Bots, token: &str, method: &str, body: &Value) -> (StatusCode, Value) {
    let ok = |result: Value| (StatusCode::OK, json!({ "ok": true, "result": result }));
    let bot_id = token.split_once(':').map_or("", |(id, _)| id).to_owned();
    match method {
        "getMe" => {
            let username = bots
                .usernames
                .get(&bot_id)
                .cloned()
                .unwrap_or_else(|| "fake_bot".to_owned());
            ok(
                json!({ "id": bot_id.parse::<i64>().unwrap_or(0), "is_bot": true,
                       "first_name": "Fake", "username": username }),
            )
        }
        "sendMessage" => {
            if let Err(e) = check_message(body, true) {
                return e;
            }
            let Some(chat) = chat_of(body) else {
                return refusal("chat not found");
            };
            bots.next_id += 1;
            let mut message = json!({
                "message_id": bots.next_id, "date": 1_700_000_000,
                "chat": { "id": chat }, "text": body["text"],
                "from": { "id": bot_id.parse::<i64>().unwrap_or(0), "is_bot": true },
            });
            for field in [
                "entities",
                "reply_markup",
                "message_thread_id",
                "reply_parameters",
            ] {
                if let Some(v) = body.get(field) {
                    message[field] = v.clone();
                }
            }
            bots.chats.entry(chat).or_default().push(message.clone());
            ok(message)
        }
        "editMessageText" => {
            if let Err(e) = check_message(body, true) {
                return e;
            }
            let (Some(chat), Some(id)) = (chat_of(body), body["message_id"].as_i64()) else {
                return refusal("message to edit not found");
            };
            let Some(m) = bots
                .chats
                .get_mut(&chat)
                .and_then(|ms| ms.iter_mut().find(|m| m["message_id"] == id))
            else {
                return refusal("message to edit not found");
            };
            let same = m["text"] == body["text"]
                && m.get("entities") == body.get("entities")
                && m.get("reply_markup") == body.get("reply_markup");
            if same {
                return refusal(
                    "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
                );
            }
            for field in ["text", "entities", "reply_markup"] {
                match body.get(field) {
                    Some(v) => m[field] = v.clone(),
                    None => drop(m.as_object_mut().map(|o| o.remove(field))),
                }
            }
            ok(m.clone())
        }
        "deleteMessage" => {
            let (Some(chat), Some(id)) = (chat_of(body), body["message_id"].as_i64()) else {
                return refusal("message to delete not found");
            };
            let messages = bots.chats.entry(chat).or_default();
            let before = messages.len();
            messages.retain(|m| m["message_id"] != id);
            if messages.len() == before {
                return refusal("message to delete not found");
            }
            ok(json!(true))
        }
        "setMessageReaction" => {
            let reactions = body["reaction"].as_array().map_or(&[][..], Vec::as_slice);
            let valid = reactions.iter().all(|r| {
                r["type"] == "emoji" && r["emoji"].as_str().is_some_and(|e| REACTIONS.contains(&e))
            });
            if !valid {
                return refusal("REACTION_INVALID");
            }
            let (Some(chat), Some(id)) = (chat_of(body), body["message_id"].as_i64()) else {
                return refusal("message not found");
            };
            if let Some(m) = bots
                .chats
                .get_mut(&chat)
                .and_then(|ms| ms.iter_mut().find(|m| m["message_id"] == id))
            {
                m["reaction"] = body["reaction"].clone();
            }
            ok(json!(true))
        }
        "sendMessageDraft" => {
            if let Err(e) = check_message(body, false) {
                return e;
            }
            if chat_of(body).is_none_or(|c| c <= 0) {
                return refusal("drafts can be sent only to private chats");
            }
            if body["draft_id"].as_u64().is_none_or(|d| d == 0) {
                return refusal("draft_id must be non-zero");
            }
            ok(json!(true))
        }
        "answerCallbackQuery" => {
            if body["text"]
                .as_str()
                .is_some_and(|t| t.chars().count() > 200)
            {
                return refusal("MESSAGE_TOO_LONG");
            }
            ok(json!(true))
        }
        "sendChatAction" | "setWebhook" => ok(json!(true)),
        "getChat" => match chat_of(body) {
            Some(id) => ok(json!({ "id": id, "type": "private",
                                   "first_name": "Ada", "last_name": "Lovelace", "username": "ada" })),
            None => refusal("chat not found"),
        },
        "getFile" => match body["file_id"].as_str().and_then(|id| bots.files.get(id)) {
            Some((path, bytes)) => ok(json!({
                "file_id": body["file_id"], "file_size": bytes.len(), "file_path": path,
            })),
            None => refusal("invalid file_id"),
        },
        "sendDocument" => {
            let Some(chat) = chat_of(body) else {
                return refusal("chat not found");
            };
            let id = format!("FILE{:06}", bots.files.len() + 1);
            let name = body["document"]["filename"]
                .as_str()
                .unwrap_or("file")
                .to_owned();
            bots.files
                .insert(id.clone(), (format!("documents/{id}_{name}"), Bytes::new()));
            bots.next_id += 1;
            let message = json!({
                "message_id": bots.next_id, "chat": { "id": chat },
                "caption": body["caption"],
                "document": { "file_id": id, "file_name": name },
            });
            bots.chats.entry(chat).or_default().push(message.clone());
            ok(message)
        }
        _ => (
            StatusCode::NOT_FOUND,
            json!({ "ok": false, "error_code": 404, "description": "Not Found: method not found" }),
        ),
    }
}

/// A multipart body's fields (a file field as its name and size).
fn multipart_fields(content_type: &str, body: &[u8]) -> Value {
    let mut fields = serde_json::Map::new();
    for part in crate::scaffold::multipart(content_type, body) {
        let value = match &part.filename {
            Some(file) => json!({ "filename": file, "size": part.content.len() }),
            None => json!(String::from_utf8_lossy(&part.content)),
        };
        fields.insert(part.name, value);
    }
    if fields.is_empty() {
        return Value::Null;
    }
    Value::Object(fields)
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    headers: HeaderMap,
    raw_body: Bytes,
) -> Response {
    let at = Instant::now();
    let token = bot.strip_prefix("bot").unwrap_or_default().to_owned();
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = if content_type.starts_with("multipart/form-data") {
        multipart_fields(&content_type, &raw_body)
    } else {
        serde_json::from_slice(&raw_body).unwrap_or(Value::Null)
    };
    let (reply, answer) = {
        let mut book = shared.lock();
        let (reply, answer) = if token.split_once(':').is_none() {
            let unauthorized =
                json!({ "ok": false, "error_code": 401, "description": "Unauthorized" });
            (
                TelegramReply::raw(StatusCode::UNAUTHORIZED, unauthorized.to_string()),
                Bytes::from(unauthorized.to_string()),
            )
        } else {
            book.scripted(&method)
                .body_or(|| success(&mut book.state, &token, &method, &body))
        };
        let ok = serde_json::from_slice::<Value>(&answer).is_ok_and(|v| v["ok"] == true);
        let call = TelegramCall {
            method,
            token,
            body,
            at,
            status: reply.status(),
            ok,
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

/// `GET /file/bot{token}/{path}`: the file's bytes, recorded as a call of
/// `file`.
async fn file(
    State(shared): State<Arc<Shared>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    let book = shared.lock();
    let bytes = book
        .state
        .files
        .values()
        .find(|(p, _)| *p == path)
        .map(|(_, b)| b.clone());
    let status = if bytes.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    let call = TelegramCall {
        method: "file".to_owned(),
        token: bot.strip_prefix("bot").unwrap_or_default().to_owned(),
        body: json!({ "path": path }),
        at: Instant::now(),
        status,
        ok: bytes.is_some(),
    };
    shared.record(book, call);
    let mut response = Response::new(Body::from(bytes.unwrap_or_default()));
    *response.status_mut() = status;
    response
}
