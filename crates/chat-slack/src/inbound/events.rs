//! The Events API: `url_verification`, `event_callback`, `app_rate_limited`.

use bytes::Bytes;
use chat_core::{
    EventKind, Inbound, Message, MessageChange, OtherEvent, Reaction, ThreadRef, WebhookError,
};
use http::{HeaderValue, StatusCode};
use serde::Deserialize;

use super::payload::{
    AssistantThreadEvent, ChannelEvent, Envelope, EventHead, MessageEvent, ReactionEvent,
};
use super::{
    Context, author, filtered, ignored, json_error, malformed, present, reason_name, thread,
};

/// Message subtypes that are a person's message (a new post); every other
/// subtype is a channel notice or a bot and is ignored.
const USER_MESSAGE_SUBTYPES: &[&str] = &["thread_broadcast", "file_share", "me_message"];

pub(super) fn parse(cx: &Context, body: &[u8]) -> Result<Inbound, WebhookError> {
    let env: Envelope<'_> = serde_json::from_slice(body).map_err(|e| json_error(&e))?;
    match env.kind.as_deref() {
        Some("url_verification") => url_verification(&env),
        Some("event_callback") => callback(cx, body, &env),
        Some("app_rate_limited") => {
            tracing::warn!(
                team_id = env.team_id.as_deref().unwrap_or(""),
                "slack: app_rate_limited: Slack is dropping this app's events for the workspace"
            );
            Ok(ignored("app-rate-limited"))
        }
        Some(other) => Ok(ignored(format!("unsupported:{}", reason_name(other)))),
        None => Err(malformed("Events API body without type")),
    }
}

/// The challenge, echoed as `text/plain` (the body was already verified).
fn url_verification(env: &Envelope<'_>) -> Result<Inbound, WebhookError> {
    let challenge = env
        .challenge
        .as_deref()
        .ok_or_else(|| malformed("url_verification without challenge"))?;
    let mut response = http::Response::new(Bytes::copy_from_slice(challenge.as_bytes()));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(Inbound::Response(response))
}

/// What an `event_callback` is about, besides its inner event.
struct Delivery<'a> {
    event_id: String,
    tenant: String,
    /// The bot user of the installation the delivery is for.
    installation_user: Option<String>,
    /// The delivery's body, and its `token`'s value in it: what the event
    /// keeps of the body is cut from them when an event is built, not for a
    /// delivery that is ignored (see [`Context::kept_body`]).
    body: &'a [u8],
    token: Option<&'a serde_json::value::RawValue>,
}

impl Delivery<'_> {
    /// The event of this delivery, keeping its body without the token.
    fn event(&self, cx: &Context, dedupe: String, thread: ThreadRef, kind: EventKind) -> Inbound {
        cx.event_keeping(
            cx.kept_body(self.body, self.token),
            self.event_id.clone(),
            dedupe,
            thread,
            kind,
        )
    }
}

/// The installation key: `authorizations[0]` (its enterprise id for an
/// org-wide install, else its team id), else the envelope's team / enterprise.
fn tenant(env: &Envelope<'_>) -> Option<String> {
    if let Some(a) = env.authorizations.as_ref().and_then(|a| a.first()) {
        if a.is_enterprise_install == Some(true)
            && let Some(e) = present(a.enterprise_id.as_ref())
        {
            return Some(e.to_owned());
        }
        if let Some(t) = present(a.team_id.as_ref()) {
            return Some(t.to_owned());
        }
    }
    [
        &env.team_id,
        &env.enterprise_id,
        &env.context_team_id,
        &env.context_enterprise_id,
    ]
    .into_iter()
    .find_map(|id| present(id.as_ref()))
    .map(str::to_owned)
}

fn callback(cx: &Context, body: &[u8], env: &Envelope<'_>) -> Result<Inbound, WebhookError> {
    let event_id = present(env.event_id.as_ref())
        .ok_or_else(|| malformed("event_callback without event_id"))?
        .to_owned();
    let tenant = tenant(env).ok_or_else(|| malformed("event_callback without a team id"))?;
    let installation_user = env
        .authorizations
        .as_ref()
        .and_then(|a| a.first())
        .filter(|a| a.is_bot == Some(true))
        .and_then(|a| present(a.user_id.as_ref()))
        .map(str::to_owned);
    let event = env
        .event
        .ok_or_else(|| malformed("event_callback without event"))?;
    let d = Delivery {
        event_id,
        tenant,
        installation_user,
        body,
        token: env.token,
    };
    let event = event.get();
    // Most deliveries are messages: the event is read as one first, and its
    // type taken from that, in one pass. An event that does not read as a
    // message (a field of the same name in another shape) is typed by its
    // head.
    let (kind, read) = match serde_json::from_str::<MessageEvent>(event) {
        Ok(mut m) => (m.kind.take().unwrap_or_default(), Some(m)),
        Err(_) => {
            let head: EventHead = serde_json::from_str(event).map_err(|e| json_error(&e))?;
            (head.kind.unwrap_or_default(), None)
        }
    };
    let kind = kind.as_str();
    // The less common kinds keep the event's JSON as a value.
    let value = || serde_json::from_str::<serde_json::Value>(event).map_err(|e| json_error(&e));
    match kind {
        "app_mention" | "message" => {
            let m = match read {
                Some(m) => m,
                None => serde_json::from_str(event).map_err(|e| json_error(&e))?,
            };
            message(cx, &d, &m, kind == "app_mention")
        }
        "reaction_added" | "reaction_removed" => reaction(cx, &d, event, kind == "reaction_added"),
        "assistant_thread_started" | "assistant_thread_context_changed" => {
            assistant_thread(cx, &d, kind, value()?)
        }
        "app_home_opened" | "member_joined_channel" => channel_event(cx, &d, kind, value()?),
        "app_uninstalled" | "tokens_revoked" if cx.lifecycle_events => {
            Ok(lifecycle(cx, &d, kind, value()?))
        }
        "" => Err(malformed("event without type")),
        other => Ok(ignored(format!("unsupported:{}", reason_name(other)))),
    }
}

fn message(
    cx: &Context,
    d: &Delivery<'_>,
    m: &MessageEvent,
    is_app_mention: bool,
) -> Result<Inbound, WebhookError> {
    let channel = present(m.channel.as_ref())
        .ok_or_else(|| malformed("message without channel"))?
        .to_owned();
    let is_dm = m.channel_type.as_deref() == Some("im");
    match m.subtype.as_deref() {
        Some("message_changed") => Ok(edited(cx, d, m, &channel, is_dm)),
        Some("message_deleted") => Ok(deleted(cx, d, m, &channel, is_dm)),
        None | Some("bot_message") => posted(cx, d, m, &channel, is_dm, is_app_mention),
        Some(s) if USER_MESSAGE_SUBTYPES.contains(&s) => {
            posted(cx, d, m, &channel, is_dm, is_app_mention)
        }
        Some(s) => Ok(ignored(format!("subtype:{}", reason_name(s)))),
    }
}

/// A new message (or the `app_mention` twin of one): dedupe on (channel, ts).
fn posted(
    cx: &Context,
    d: &Delivery<'_>,
    m: &MessageEvent,
    channel: &str,
    is_dm: bool,
    is_app_mention: bool,
) -> Result<Inbound, WebhookError> {
    let is_bot_subtype = m.subtype.as_deref() == Some("bot_message");
    let name = m
        .user_profile
        .as_ref()
        .and_then(|p| present(p.display_name.as_ref()).or(present(p.real_name.as_ref())))
        .or(present(m.username.as_ref()))
        .map(str::to_owned);
    let author = author(
        cx,
        m.user.as_ref(),
        m.bot_id.as_ref(),
        is_bot_subtype,
        name,
        d.installation_user.as_deref(),
    );
    if let Some(skip) = filtered(cx, &author) {
        return Ok(skip);
    }
    let ts = present(m.ts.as_ref())
        .ok_or_else(|| malformed("message without ts"))?
        .to_owned();
    let text = m.text.clone().unwrap_or_default();
    let root = present(m.thread_ts.as_ref()).unwrap_or(&ts).to_owned();
    let is_mention = is_app_mention || cx.mentions_me(&text, d.installation_user.as_deref());
    Ok(d.event(
        cx,
        format!("{channel}:{ts}"),
        thread(&d.tenant, channel, &root),
        EventKind::Message(
            cx.message(ts, author, &text, &m.files, d.installation_user.as_deref())
                .with_mention(is_mention)
                .with_dm(is_dm),
        ),
    ))
}

/// `message_changed`: the data is in `event.message`; the top level has no
/// user, bot id or text.
fn edited(cx: &Context, d: &Delivery<'_>, m: &MessageEvent, channel: &str, is_dm: bool) -> Inbound {
    let Some(inner) = m.message.as_ref() else {
        return ignored("edit-without-message");
    };
    let author = author(
        cx,
        inner.user.as_ref(),
        inner.bot_id.as_ref(),
        inner.subtype.as_deref() == Some("bot_message"),
        present(inner.username.as_ref()).map(str::to_owned),
        d.installation_user.as_deref(),
    );
    if let Some(skip) = filtered(cx, &author) {
        return skip;
    }
    let Some(ts) = present(inner.ts.as_ref()).map(str::to_owned) else {
        return ignored("edit-without-ts");
    };
    let text = inner.text.clone().unwrap_or_default();
    // Unfurls and other attachment updates change the message but not its text.
    if m.previous_message.as_ref().and_then(|p| p.text.as_ref()) == Some(&text) {
        return ignored("unchanged-text");
    }
    // Each edit has its own `edited.ts`; the message `ts` repeats across edits.
    let dedupe = match inner.edited.as_ref().and_then(|e| present(e.ts.as_ref())) {
        Some(edited_ts) => format!("{channel}:{ts}:edited:{edited_ts}"),
        None => d.event_id.clone(),
    };
    let root = present(inner.thread_ts.as_ref()).unwrap_or(&ts).to_owned();
    let is_mention = cx.mentions_me(&text, d.installation_user.as_deref());
    d.event(
        cx,
        dedupe,
        thread(&d.tenant, channel, &root),
        EventKind::Message(
            cx.message(
                ts,
                author,
                &text,
                &inner.files,
                d.installation_user.as_deref(),
            )
            .with_change(MessageChange::Edited)
            .with_mention(is_mention)
            .with_dm(is_dm),
        ),
    )
}

/// `message_deleted`: `deleted_ts` and `previous_message`; no top-level user.
fn deleted(
    cx: &Context,
    d: &Delivery<'_>,
    m: &MessageEvent,
    channel: &str,
    is_dm: bool,
) -> Inbound {
    let previous = m.previous_message.as_ref();
    let author = author(
        cx,
        previous.and_then(|p| p.user.as_ref()),
        previous.and_then(|p| p.bot_id.as_ref()),
        previous.and_then(|p| p.subtype.as_deref()) == Some("bot_message"),
        None,
        d.installation_user.as_deref(),
    );
    if let Some(skip) = filtered(cx, &author) {
        return skip;
    }
    let Some(ts) = present(m.deleted_ts.as_ref())
        .or_else(|| previous.and_then(|p| present(p.ts.as_ref())))
        .map(str::to_owned)
    else {
        return ignored("delete-without-ts");
    };
    let root = previous
        .and_then(|p| present(p.thread_ts.as_ref()))
        .unwrap_or(&ts)
        .to_owned();
    d.event(
        cx,
        format!("{channel}:{ts}:deleted"),
        thread(&d.tenant, channel, &root),
        EventKind::Message(
            Message::new(ts, author, "")
                .with_change(MessageChange::Deleted)
                .with_dm(is_dm),
        ),
    )
}

/// `reaction_added` / `reaction_removed` on a message. The payload names the
/// message but not its thread, so the thread is the message's own `ts` (a
/// reaction on a reply lands on a thread named after that reply).
fn reaction(
    cx: &Context,
    d: &Delivery<'_>,
    event: &str,
    added: bool,
) -> Result<Inbound, WebhookError> {
    let r: ReactionEvent = serde_json::from_str(event).map_err(|e| json_error(&e))?;
    let item = r.item.unwrap_or_default();
    match item.kind.as_deref() {
        Some("message") => {}
        Some(other) => return Ok(ignored(format!("reaction-on:{}", reason_name(other)))),
        None => return Err(malformed("reaction without item type")),
    }
    let (Some(channel), Some(ts)) = (present(item.channel.as_ref()), present(item.ts.as_ref()))
    else {
        return Err(malformed("reaction without item channel or ts"));
    };
    let user = author(
        cx,
        r.user.as_ref(),
        None,
        false,
        None,
        d.installation_user.as_deref(),
    );
    if user.is_me {
        return Ok(ignored("own-reaction"));
    }
    let emoji = present(r.reaction.as_ref())
        .ok_or_else(|| malformed("reaction without name"))?
        .to_owned();
    Ok(d.event(
        cx,
        d.event_id.clone(),
        thread(&d.tenant, channel, ts),
        EventKind::Reaction(Reaction::new(emoji, added, user, ts)),
    ))
}

/// The AI-assistant side panel: the thread is `assistant_thread.{channel_id,
/// thread_ts}`.
fn assistant_thread(
    cx: &Context,
    d: &Delivery<'_>,
    kind: &str,
    event: serde_json::Value,
) -> Result<Inbound, WebhookError> {
    let a = AssistantThreadEvent::deserialize(&event).map_err(|e| json_error(&e))?;
    let at = a.assistant_thread.unwrap_or_default();
    let (Some(channel), Some(ts)) = (
        present(at.channel_id.as_ref()),
        present(at.thread_ts.as_ref()),
    ) else {
        return Err(malformed(
            "assistant_thread without channel_id or thread_ts",
        ));
    };
    let thread = thread(&d.tenant, channel, ts);
    Ok(d.event(
        cx,
        d.event_id.clone(),
        thread,
        EventKind::Other(OtherEvent::new(kind, event)),
    ))
}

/// Channel-level events (`app_home_opened`, `member_joined_channel`): the
/// thread part is empty.
fn channel_event(
    cx: &Context,
    d: &Delivery<'_>,
    kind: &str,
    event: serde_json::Value,
) -> Result<Inbound, WebhookError> {
    let c = ChannelEvent::deserialize(&event).map_err(|e| json_error(&e))?;
    let channel = present(c.channel.as_ref())
        .ok_or_else(|| malformed("event without channel"))?
        .to_owned();
    Ok(d.event(
        cx,
        d.event_id.clone(),
        thread(&d.tenant, &channel, ""),
        EventKind::Other(OtherEvent::new(kind, event)),
    ))
}

/// `app_uninstalled` and `tokens_revoked` in installation mode: an event of
/// the tenant, which the adapter's `resolve` acts on (and never admits).
fn lifecycle(cx: &Context, d: &Delivery<'_>, kind: &str, event: serde_json::Value) -> Inbound {
    d.event(
        cx,
        d.event_id.clone(),
        thread(&d.tenant, "", ""),
        EventKind::Other(OtherEvent::new(kind, event)),
    )
}
