//! The webhook side: verify the secret token, parse the update, resolve the
//! bot's identity, answer each verdict as Telegram expects.
//!
//! Telegram counts any 2xx as delivered and sends the update again after
//! anything else, "and give[s] up after a reasonable number of attempts"
//! (`setWebhook`). A webhook answer may carry one Bot API call as its body
//! (*Making requests when getting updates*), but "it is not possible to know
//! that such a request was successful or get its result": only a button's
//! `answerCallbackQuery` (its spinner stopped, or its toast) goes that way;
//! every reply is a call of its own.

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
    /// ignored. When the username cannot be learned now, an update that
    /// needs it fails, and Telegram sends it again.
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
        let Some(me) = self.username(&bot_id).await else {
            // Whether `@name` is this bot cannot be told now: answered as a
            // failure, so Telegram sends the update again.
            return Err("telegram: the bot's username is not known yet (getMe failed); a mention or an addressed command cannot be told ours".into());
        };
        match &mut event.kind {
            EventKind::Message(m) => {
                for mention in &mut m.mentions {
                    if mention
                        .name
                        .as_deref()
                        .is_some_and(|n| n.eq_ignore_ascii_case(&me))
                    {
                        mention.is_me = true;
                        m.is_mention = true;
                    }
                }
            }
            EventKind::SlashCommand(c) => {
                if let Some((command, to)) = c.command.split_once('@') {
                    if !me.eq_ignore_ascii_case(to) {
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
        // A button's spinner stops with the answer; the run goes on.
        let acknowledged = || match &callback {
            Some((query, _, _)) => json_response(&json!({
                "method": "answerCallbackQuery", "callback_query_id": query,
            })),
            None => empty(StatusCode::OK),
        };
        match verdict {
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
            // Only a toast is given to the response (`replies_in_response`).
            Verdict::Reply(reply) => match event.and_then(|e| toast_of(e, reply)) {
                Some(toast) => json_response(&toast),
                None => {
                    tracing::warn!(
                        "telegram: a reply that is not a click's toast reached the webhook answer; not sent"
                    );
                    acknowledged()
                }
            },
            _ => acknowledged(),
        }
    }

    /// Only a click's toast (an ephemeral text of at most 200 characters)
    /// goes in the webhook answer: Telegram says nothing of how a call made
    /// there went, so every other reply is a Bot API call whose failure is
    /// seen, split at 4,096 characters and retried after a 429.
    fn replies_in_response(&self, event: &Event, reply: &Reply) -> bool {
        toast_of(event, reply).is_some()
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

    /// A command's or a button's answer: a message in the chat replying to
    /// the command or the clicked message (split at 4,096 characters). An
    /// ephemeral answer is an ordinary message in a private chat; in a group
    /// nothing only one member sees exists but a click's toast, which goes
    /// only in the webhook answer — so there it is
    /// [`AdapterError::Unsupported`].
    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Platform(call) => {
                let method = call["method"]
                    .as_str()
                    .ok_or_else(|| {
                        AdapterError::Invalid("a Bot API call without its method".to_owned())
                    })?
                    .to_owned();
                let mut body = call.clone();
                if let Some(o) = body.as_object_mut() {
                    o.remove("method");
                }
                self.client_for(event.tenant())
                    .await?
                    .call(&method, &body)
                    .await
                    .map(drop)
            }
            Reply::Message {
                message,
                visibility,
                ..
            } => {
                let (chat, _) = super::chat_of(&event.thread)?;
                if *visibility == Visibility::Ephemeral && chat < 0 {
                    return Err(AdapterError::Unsupported(if callback_of(event).is_some() {
                        "a click's toast goes only in the webhook answer, before the acknowledgement"
                    } else {
                        "Telegram has no message only one member of a group sees"
                    }));
                }
                let (formatted, keyboard) = crate::adapter::messaging::render(message)?;
                self.send(
                    &event.thread,
                    &formatted,
                    keyboard.as_ref(),
                    reply_target(event),
                )
                .await
                .map(drop)
            }
            _ => Err(AdapterError::Unsupported("modals")),
        }
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

/// The longest text of a click's toast.
const MAX_TOAST: usize = 200;

/// The `answerCallbackQuery` that shows `reply` as a click's toast: an
/// ephemeral text without a card, of at most 200 characters, to a click.
fn toast_of(event: &Event, reply: &Reply) -> Option<Value> {
    let (query, _, _) = callback_of(event)?;
    let Reply::Message {
        message,
        visibility: Visibility::Ephemeral,
        ..
    } = reply
    else {
        return None;
    };
    (message.card.is_none() && message.text.chars().count() <= MAX_TOAST).then(|| {
        json!({
            "method": "answerCallbackQuery", "callback_query_id": query, "text": message.text,
        })
    })
}

/// The message a reply answers: the command's, or the clicked one.
fn reply_target(event: &Event) -> Option<i64> {
    let id = match &event.kind {
        EventKind::SlashCommand(c) => c
            .follow_up
            .as_ref()
            .and_then(|h| h.as_str().rsplit_once(':').map(|(_, m)| m.to_owned())),
        _ => callback_of(event).map(|(_, _, m)| m),
    };
    id.and_then(|m| m.parse().ok())
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
