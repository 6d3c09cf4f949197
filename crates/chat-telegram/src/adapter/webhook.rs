//! The webhook side: verify the secret token, parse the update, resolve the
//! bot's identity, answer each verdict as Telegram expects.
//!
//! Telegram counts any 2xx as delivered and sends the update again after
//! anything else, "and give[s] up after a reasonable number of attempts"
//! (`setWebhook`). A webhook answer may carry one Bot API call as its body
//! (*Making requests when getting updates*): a command's reply and a
//! button's `answerCallbackQuery` go that way, with no extra request.

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, BoxError, DefaultLockScope, Event, EventKind, Inbound, PlatformAdapter, Reply,
    Resolution, Verdict, Visibility, WebhookError,
};
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::TelegramAdapter;
use crate::TELEGRAM;
use crate::inbound::{self, Context};

impl PlatformAdapter for TelegramAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn platform(&self) -> chat_core::Platform {
        TELEGRAM
    }

    fn as_streams(&self) -> Option<&dyn chat_core::Streams> {
        Some(self)
    }

    fn as_users(&self) -> Option<&dyn chat_core::Users> {
        Some(self)
    }

    fn as_uploads(&self) -> Option<&dyn chat_core::Uploads> {
        Some(self)
    }

    fn as_downloads(&self) -> Option<&dyn chat_core::Downloads> {
        Some(self)
    }

    fn as_status(&self) -> Option<&dyn chat_core::Status> {
        Some(self)
    }

    fn as_unreact(&self) -> Option<&dyn chat_core::Unreact> {
        Some(self)
    }

    fn as_direct_messages(&self) -> Option<&dyn chat_core::DirectMessages> {
        Some(self)
    }
}

#[async_trait]
impl chat_core::Webhook for TelegramAdapter {
    fn max_body_bytes(&self) -> usize {
        self.max_body
    }

    /// [`DEDUPE_TTL`](super::DEDUPE_TTL): 25 h.
    fn dedupe_ttl(&self) -> std::time::Duration {
        super::DEDUPE_TTL
    }

    /// A private chat or group is one conversation (channel scope).
    fn lock_scope(&self) -> DefaultLockScope {
        DefaultLockScope::Channel
    }

    /// A forum topic is a conversation of its own (thread scope); any
    /// other chat is one conversation.
    fn lock_scope_of(&self, event: &Event) -> DefaultLockScope {
        if event.thread.thread.is_empty() {
            DefaultLockScope::Channel
        } else {
            DefaultLockScope::Thread
        }
    }

    /// The secret token, in constant time, before anything is read.
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError> {
        if parts.method != http::Method::POST {
            return Err(WebhookError::MethodNotAllowed);
        }
        if body.len() > self.max_body {
            return Err(WebhookError::TooLarge {
                limit: self.max_body,
            });
        }
        self.secrets.verify(&parts.headers).map(drop)
    }

    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        let bot_id = self
            .secrets
            .bot_of(&parts.headers)
            .ok_or(WebhookError::MissingHeader(crate::secret::SECRET_HEADER))?;
        let cx = Context {
            bot_id: &bot_id,
            received_at_ms: chat_core::clock::millis(std::time::SystemTime::now()),
            raw: body,
        };
        inbound::parse(&cx, body)
    }

    /// Installation mode: the bot must be installed. Either mode: the bot's
    /// username (configured, or `getMe` once) marks its `@mentions` and
    /// commands addressed to it; a command addressed to another bot is
    /// ignored.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let bot_id = event.thread.tenant.as_str().to_owned();
        if let Some(store) = &self.installations
            && store.get(TELEGRAM, &event.thread.tenant).await?.is_none()
        {
            tracing::info!(bot = %bot_id, "telegram: delivery for a bot that is not installed");
            return Ok(Resolution::Ignored {
                reason: "unknown-installation",
            });
        }
        let needs_name = match &event.kind {
            EventKind::Message(m) => m.mentions.iter().any(|m| !m.is_me),
            EventKind::SlashCommand(c) => c.command.contains('@'),
            _ => false,
        };
        if !needs_name {
            return Ok(Resolution::Proceed);
        }
        let me = self.username(&bot_id).await;
        match &mut event.kind {
            EventKind::Message(m) => {
                if let Some(me) = &me {
                    for mention in &mut m.mentions {
                        if mention
                            .name
                            .as_deref()
                            .is_some_and(|n| n.eq_ignore_ascii_case(me))
                        {
                            mention.is_me = true;
                            m.is_mention = true;
                        }
                    }
                }
            }
            EventKind::SlashCommand(c) => {
                if let Some((command, to)) = c.command.split_once('@') {
                    if me.as_deref().is_some_and(|me| !me.eq_ignore_ascii_case(to)) {
                        return Ok(Resolution::Ignored {
                            reason: "command-for-another-bot",
                        });
                    }
                    c.command = command.to_owned();
                }
            }
            _ => {}
        }
        Ok(Resolution::Proceed)
    }

    fn respond(&self, event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        let callback = event.and_then(callback_of);
        match verdict {
            Verdict::Accepted | Verdict::Duplicate | Verdict::Ignored | Verdict::Working => {
                // A button's spinner stops with the answer; the run goes on.
                match callback {
                    Some((query, _, _)) => json_response(&json!({
                        "method": "answerCallbackQuery", "callback_query_id": query,
                    })),
                    None => empty(StatusCode::OK),
                }
            }
            Verdict::AtCapacity => empty(StatusCode::SERVICE_UNAVAILABLE),
            Verdict::Failed => empty(StatusCode::INTERNAL_SERVER_ERROR),
            Verdict::Rejected(e) => {
                let status = e.status();
                let mut r = http::Response::new(Bytes::from(if e.is_unauthorized() {
                    "unauthorized".to_owned()
                } else {
                    e.to_string()
                }));
                *r.status_mut() = status;
                r
            }
            Verdict::Reply(reply) => match event.and_then(|e| inline_call(e, reply).ok()) {
                Some(call) => json_response(&call),
                None => empty(StatusCode::OK),
            },
            _ => empty(StatusCode::OK),
        }
    }

    /// Messages, cards and the platform's own call (a JSON object with a
    /// `method`); a modal's answer is unsupported.
    fn check_reply(&self, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Message { message, .. } => crate::adapter::messaging::render(message).map(drop),
            Reply::Platform(v) if v.get("method").is_some() => Ok(()),
            Reply::Platform(_) => Err(AdapterError::Invalid(
                "a Telegram reply of its own is a Bot API call: {\"method\": …}".to_owned(),
            )),
            _ => Err(AdapterError::Unsupported("modals")),
        }
    }

    /// A command's or a button's answer after the response went out: the
    /// message posted in the chat (ephemeral text of a button as its toast).
    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        let call = inline_call(event, reply)?;
        let method = call["method"].as_str().unwrap_or_default().to_owned();
        let mut body = call;
        if let Some(o) = body.as_object_mut() {
            o.remove("method");
        }
        self.client_for(event.tenant())
            .await?
            .call(&method, &body)
            .await
            .map(drop)
    }
}

/// A button's callback query id, chat and clicked message.
fn callback_of(event: &Event) -> Option<(String, String, String)> {
    let EventKind::Action(a) = &event.kind else {
        return None;
    };
    let handle = a.follow_up.as_ref()?.as_str();
    let mut parts = handle.splitn(3, ':');
    Some((
        parts.next()?.to_owned(),
        parts.next()?.to_owned(),
        parts.next()?.to_owned(),
    ))
}

/// The Bot API call that answers `event` with `reply`: a button's
/// ephemeral text as its toast (`answerCallbackQuery`), anything else a
/// message in the chat replying to the command or the clicked message.
fn inline_call(event: &Event, reply: &Reply) -> Result<Value, AdapterError> {
    if let Reply::Platform(v) = reply {
        return Ok(v.clone());
    }
    let Reply::Message {
        message,
        visibility,
        ..
    } = reply
    else {
        return Err(AdapterError::Unsupported("modals"));
    };
    if let Some((query, _, _)) = callback_of(event)
        && *visibility == Visibility::Ephemeral
        && message.card.is_none()
    {
        // A toast shows at most 200 characters.
        let text: String = message.text.chars().take(200).collect();
        return Ok(json!({
            "method": "answerCallbackQuery", "callback_query_id": query, "text": text,
        }));
    }
    let (chat, topic) = super::chat_of(&event.thread)?;
    let reply_to = match &event.kind {
        EventKind::SlashCommand(c) => c
            .follow_up
            .as_ref()
            .and_then(|h| h.as_str().rsplit_once(':').map(|(_, m)| m.to_owned())),
        _ => callback_of(event).map(|(_, _, m)| m),
    };
    let mut call = crate::adapter::messaging::send_message_body(chat, topic, message)?;
    call["method"] = json!("sendMessage");
    if let Some(id) = reply_to.and_then(|m| m.parse::<i64>().ok()) {
        call["reply_parameters"] = json!({ "message_id": id, "allow_sending_without_reply": true });
    }
    Ok(call)
}

fn empty(status: StatusCode) -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::new());
    *r.status_mut() = status;
    r
}

fn json_response(value: &Value) -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::from(serde_json::to_vec(value).unwrap_or_default()));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}
