//! Inbound deliveries: which kind a verified body is, and the normalized
//! [`Event`] it becomes.
//!
//! * JSON bodies are the Events API ([`events`]).
//! * Form bodies are slash commands, the SSL check, and interactivity payloads
//!   (`payload=`) ([`form`], [`interactive`]).

mod events;
mod form;
mod interactive;
mod markup;
pub(crate) mod payload;

use bytes::Bytes;
use chat_core::{Author, Event, EventKind, Inbound, Platform, ThreadRef, WebhookError};

/// Header: how many times Slack has retried this event (`1`..`3`).
pub(crate) const RETRY_NUM_HEADER: &str = "x-slack-retry-num";
/// Header: why Slack retried (`http_timeout`, …).
pub(crate) const RETRY_REASON_HEADER: &str = "x-slack-retry-reason";

/// Everything a parser needs besides the body: who "we" are, the filter
/// settings, and the delivery's metadata.
#[derive(Debug)]
pub(crate) struct Context {
    /// Our bot user ids (configured, learned from `auth.test`).
    pub(crate) own_user_ids: Vec<String>,
    /// Our bot ids (`B…`).
    pub(crate) own_bot_ids: Vec<String>,
    /// Ignore messages of other bots too (not only our own).
    pub(crate) ignore_bots: bool,
    /// Installation mode: `app_uninstalled` and `tokens_revoked` become
    /// events, for the adapter's `resolve` to delete the installation.
    pub(crate) lifecycle_events: bool,
    pub(crate) received_at_ms: u64,
    pub(crate) attempt: u32,
    pub(crate) retry_reason: Option<String>,
    pub(crate) raw: Bytes,
}

impl Context {
    /// Reads the retry headers; the rest is filled by the adapter.
    pub(crate) fn delivery_headers(headers: &http::HeaderMap) -> (u32, Option<String>) {
        let attempt = headers
            .get(RETRY_NUM_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let reason = headers
            .get(RETRY_REASON_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(reason_name)
            .filter(|r| !r.is_empty());
        (attempt, reason)
    }

    /// Whether `user` / `bot_id` is this bot. `installation_user` is the bot user
    /// of the installation the delivery is for (`authorizations[0]`, when it is
    /// a bot), which identifies us even before `auth.test` was called.
    fn is_me(
        &self,
        user: Option<&str>,
        bot_id: Option<&str>,
        installation_user: Option<&str>,
    ) -> bool {
        let user_is_me = user.filter(|u| !u.is_empty()).is_some_and(|u| {
            installation_user == Some(u) || self.own_user_ids.iter().any(|o| o == u)
        });
        let bot_is_me = bot_id
            .filter(|b| !b.is_empty())
            .is_some_and(|b| self.own_bot_ids.iter().any(|o| o == b));
        user_is_me || bot_is_me
    }

    /// A message's markup read into the portable message, with its files.
    fn message(
        &self,
        ts: String,
        author: Author,
        text: &str,
        files: &[payload::SlackFile],
        installation_user: Option<&str>,
    ) -> chat_core::Message {
        let me: Vec<&str> = installation_user
            .into_iter()
            .chain(self.own_user_ids.iter().map(String::as_str))
            .collect();
        normalized(ts, author, text, files, &me)
    }

    /// Whether `text` @-mentions this bot (`<@U…>` or `<@U…|name>`).
    fn mentions_me(&self, text: &str, installation_user: Option<&str>) -> bool {
        installation_user
            .into_iter()
            .chain(self.own_user_ids.iter().map(String::as_str))
            .any(|u| mentions_user(text, u))
    }

    /// Builds the event with this delivery's metadata.
    fn event(&self, id: String, dedupe: String, thread: ThreadRef, kind: EventKind) -> Inbound {
        self.event_keeping(without_token(&self.raw), id, dedupe, thread, kind)
    }

    /// [`event`](Self::event), keeping `raw`: the body already cut.
    fn event_keeping(
        &self,
        raw: Bytes,
        id: String,
        dedupe: String,
        thread: ThreadRef,
        kind: EventKind,
    ) -> Inbound {
        Inbound::Event(Box::new(
            Event::new(id, dedupe, thread, kind)
                .with_received_at_ms(self.received_at_ms)
                .with_attempt(self.attempt, self.retry_reason.clone())
                .with_raw(raw),
        ))
    }

    /// What an Events API delivery keeps of its `body` (this delivery's):
    /// the body without its top-level `token`, whose value the envelope's read
    /// found — cut out where it is, or the body as it came when it has none —
    /// else (a key written with escapes, say) [`without_token`]'s scan.
    fn kept_body(&self, body: &[u8], token: Option<&serde_json::value::RawValue>) -> Bytes {
        let Some(token) = token else {
            return self.raw.clone();
        };
        crate::json_member::without_value(body, "token", token.get().as_bytes())
            .map_or_else(|| without_token(&self.raw), Bytes::from)
    }
}

/// The body an event keeps as its `raw`: the delivery's payload without
/// Slack's legacy verification `token` (deprecated, never used here, and a
/// credential of the app): events are stored in the state backend while they
/// wait or run. What a run needs stays — the payload, its `response_url` (in
/// the event's kind too). A body that does not parse again keeps nothing.
fn without_token(raw: &Bytes) -> Bytes {
    fn json(body: &[u8]) -> Option<Vec<u8>> {
        crate::json_member::without_member(body, "token")
    }
    if is_json(raw) {
        return json(raw).map(Bytes::from).unwrap_or_default();
    }
    let Ok(pairs) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(raw) else {
        return Bytes::new();
    };
    let mut kept = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        match k.as_str() {
            "token" => {}
            "payload" => match json(v.as_bytes()).and_then(|p| String::from_utf8(p).ok()) {
                Some(p) => kept.push((k, p)),
                None => return Bytes::new(),
            },
            _ => kept.push((k, v)),
        }
    }
    serde_urlencoded::to_string(kept)
        .map(Bytes::from)
        .unwrap_or_default()
}

/// A message's markup (`<@U1>`, `<https://x|label>`, `&amp;`) read into
/// the portable message — plain text, Markdown, mentions (`me` are this
/// bot's user ids), links — with its files as attachments: for deliveries
/// and for what history reads back.
pub(crate) fn normalized(
    ts: String,
    author: Author,
    text: &str,
    files: &[payload::SlackFile],
    me: &[&str],
) -> chat_core::Message {
    let read = markup::read(text, me, None);
    chat_core::Message::new(ts, author, read.text)
        .with_markup(text)
        .with_markdown(read.markdown)
        .with_mentions(read.mentions)
        .with_links(read.links)
        .with_attachments(
            files
                .iter()
                .filter_map(payload::SlackFile::attachment)
                .collect(),
        )
}

/// Whether `text` @-mentions `user` (`<@U…>` or `<@U…|name>`).
pub(crate) fn mentions_user(text: &str, user: &str) -> bool {
    !user.is_empty()
        && text.match_indices("<@").any(|(i, _)| {
            let rest = &text[i + 2..];
            rest.strip_prefix(user)
                .is_some_and(|after| after.starts_with('>') || after.starts_with('|'))
        })
}

/// Parses a verified delivery. Form-encoded (slash commands, interactivity) or
/// JSON (Events API) is read from the signed body itself — a JSON object starts
/// with `{`, a form never does — not from the unsigned `Content-Type` header, so
/// a captured JSON delivery replayed under a form content type is still the
/// same JSON, never a form whose fields come from user text.
pub(crate) fn parse(cx: &Context, body: &[u8]) -> Result<Inbound, WebhookError> {
    if is_json(body) {
        events::parse(cx, body)
    } else {
        form::parse(cx, body)
    }
}

fn is_json(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

fn thread(tenant: &str, channel: &str, thread: &str) -> ThreadRef {
    ThreadRef::new(Platform::SLACK, tenant, channel, thread)
}

/// `Some(s)` unless `s` is missing or empty.
fn present(s: Option<&String>) -> Option<&str> {
    s.map(String::as_str).filter(|s| !s.is_empty())
}

fn malformed(what: &str) -> WebhookError {
    WebhookError::Malformed(what.to_owned())
}

/// A JSON error, described without echoing the input.
fn json_error(e: &serde_json::Error) -> WebhookError {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => "invalid JSON",
        Category::Data => "unexpected JSON shape",
    };
    if e.line() > 0 {
        WebhookError::Malformed(format!("{what} at line {} column {}", e.line(), e.column()))
    } else {
        WebhookError::Malformed(what.to_owned())
    }
}

/// A platform-supplied name made safe for a log reason: ASCII letters, digits
/// and `_.-:`, at most 64 characters.
fn reason_name(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        .take(64)
        .collect()
}

fn ignored(reason: impl Into<String>) -> Inbound {
    Inbound::Ignored {
        reason: reason.into(),
    }
}

/// A stable id for deliveries that carry none: a digest of the signed body.
fn body_id(raw: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, raw);
    format!("body-{}", hex::encode(&digest.as_ref()[..16]))
}

/// An author from a message's `user` / `bot_id` / `subtype`.
fn author(
    cx: &Context,
    user: Option<&String>,
    bot_id: Option<&String>,
    is_bot_subtype: bool,
    name: Option<String>,
    installation_user: Option<&str>,
) -> Author {
    let user = present(user);
    let bot_id = present(bot_id);
    let mut author = Author::new(user.or(bot_id).unwrap_or_default())
        .with_bot(bot_id.is_some() || is_bot_subtype)
        .with_me(cx.is_me(user, bot_id, installation_user));
    author.name = name;
    author
}

/// The loop filter: our own messages always, other bots' unless configured.
fn filtered(cx: &Context, author: &Author) -> Option<Inbound> {
    if author.is_me {
        Some(ignored("own-message"))
    } else if author.is_bot && cx.ignore_bots {
        Some(ignored("bot-message"))
    } else {
        None
    }
}
