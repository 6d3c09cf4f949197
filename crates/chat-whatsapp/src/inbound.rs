//! A verified delivery as events. One delivery may carry several
//! messages and statuses (of several phone numbers): each is an event of
//! its own, in order ([`Inbound::Events`]).
//!
//! | `messages[].type` | event |
//! |---|---|
//! | `text` | `Message`: a direct message (every WhatsApp chat is one user with one business number) |
//! | `image`, `document`, `audio`, `video`, `sticker` | `Message` with its caption and the media as an attachment (downloaded by id) |
//! | `interactive` (`button_reply`, `list_reply`) | `Action`: the button's or row's action id and value |
//! | `button` (a template's quick reply) | `Action`: its payload as the action id, its text as the value |
//! | `reaction` | `Reaction` (an empty emoji takes it back) |
//! | anything else | `Other` named `whatsapp.{type}` |
//!
//! `statuses[]` (sent, delivered, read, failed) are `Other` events named
//! [`STATUS_EVENT`]: observable through a route
//! ([`routes::status`](crate::routes::status)), and without one acknowledged
//! and recorded as ignored, never a handler run. The conversation is the
//! user's chat with the business number: tenant the phone number id,
//! channel the user's WhatsApp id. The dedupe key is the message's `wamid`
//! (a status's, with its state).

use bytes::Bytes;
use chat_core::{
    Action, Attachment, Author, Event, EventKind, Inbound, Message, OtherEvent, Reaction,
    ThreadRef, WebhookError,
};
use serde_json::Value;

use crate::WHATSAPP;
use crate::payload::{ChangeValue, InMessage, Media, Notification};

/// The [`OtherEvent`] name of a message status (sent, delivered, read,
/// failed).
pub const STATUS_EVENT: &str = "whatsapp.status";

fn malformed(what: &str) -> WebhookError {
    WebhookError::Malformed(format!("whatsapp: {what}"))
}

/// What parsing needs besides the body, and what it learns of the users
/// who wrote.
pub(crate) struct Context<'a> {
    pub(crate) received_at_ms: u64,
    pub(crate) raw: &'a Bytes,
    pub(crate) heard: std::cell::RefCell<Vec<Heard>>,
}

/// A user's message to a business number: who, which, when (Unix seconds,
/// as WhatsApp says), and the name on their profile.
#[derive(Debug, Clone)]
pub(crate) struct Heard {
    pub(crate) phone: String,
    pub(crate) user: String,
    pub(crate) message: String,
    pub(crate) at_secs: Option<u64>,
    pub(crate) name: Option<String>,
}

impl Context<'_> {
    fn event(&self, dedupe: String, thread: ThreadRef, kind: EventKind) -> Event {
        Event::new(dedupe.clone(), dedupe, thread, kind)
            .with_received_at_ms(self.received_at_ms)
            .with_raw(self.raw.clone())
    }
}

/// Parses a verified body.
pub(crate) fn parse(cx: &Context<'_>, body: &[u8]) -> Result<Inbound, WebhookError> {
    let n: Notification =
        serde_json::from_slice(body).map_err(|_| malformed("a body that is not a notification"))?;
    if n.object.as_deref() != Some("whatsapp_business_account") {
        return Ok(Inbound::Ignored {
            reason: "unsupported:object".to_owned(),
        });
    }
    let mut events = Vec::new();
    for change in n.entry.iter().flat_map(|e| &e.changes) {
        if change.field.as_deref() != Some("messages") {
            continue;
        }
        events.extend(change_events(cx, &change.value)?);
    }
    Ok(match events.len() {
        0 => Inbound::Ignored {
            reason: "nothing-to-handle".to_owned(),
        },
        1 => Inbound::Event(Box::new(events.remove(0))),
        _ => Inbound::Events(events),
    })
}

fn change_events(cx: &Context<'_>, v: &ChangeValue) -> Result<Vec<Event>, WebhookError> {
    let phone = v
        .metadata
        .phone_number_id
        .clone()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| malformed("a change without metadata.phone_number_id"))?;
    let name_of = |wa_id: &str| {
        v.contacts
            .iter()
            .find(|c| c.wa_id.as_deref() == Some(wa_id))
            .and_then(|c| c.profile.name.clone())
    };
    let mut events = Vec::new();
    for m in &v.messages {
        let (Some(from), Some(id)) = (
            m.from.as_deref().filter(|f| !f.is_empty()),
            m.id.as_deref().filter(|i| !i.is_empty()),
        ) else {
            return Err(malformed("a message without from or id"));
        };
        let thread = ThreadRef::new(WHATSAPP, phone.as_str(), from, "");
        let mut author = Author::new(from);
        author.name = name_of(from);
        cx.heard.borrow_mut().push(Heard {
            phone: phone.clone(),
            user: from.to_owned(),
            message: id.to_owned(),
            at_secs: m.timestamp.as_deref().and_then(|t| t.parse().ok()),
            name: author.name.clone(),
        });
        events.push(cx.event(id.to_owned(), thread, message_kind(m, id, author)));
    }
    for s in &v.statuses {
        let (Some(id), Some(status)) = (s["id"].as_str(), s["status"].as_str()) else {
            continue;
        };
        let to = s["recipient_id"].as_str().unwrap_or_default();
        let thread = ThreadRef::new(WHATSAPP, phone.as_str(), to, "");
        events.push(cx.event(
            format!("status:{id}:{status}"),
            thread,
            EventKind::Other(OtherEvent::new(STATUS_EVENT, s.clone())),
        ));
    }
    Ok(events)
}

fn media(m: &Media, default_name: &str) -> Option<Attachment> {
    let id = m.id.clone().filter(|i| !i.is_empty())?;
    let name = m
        .filename
        .clone()
        .unwrap_or_else(|| default_name.to_owned());
    let mut a = Attachment::new(id.clone(), name, id);
    if let Some(mime) = &m.mime_type {
        a = a.with_mime_type(mime.clone());
    }
    Some(a)
}

fn message_kind(m: &InMessage, id: &str, author: Author) -> EventKind {
    let kind = m.kind.as_deref().unwrap_or_default();
    let message = |text: &str, files: Vec<Attachment>| {
        EventKind::Message(
            Message::new(id, author.clone(), text)
                .with_attachments(files)
                .with_dm(true),
        )
    };
    match kind {
        "text" => message(
            m.text
                .as_ref()
                .and_then(|t| t.body.as_deref())
                .unwrap_or_default(),
            Vec::new(),
        ),
        "image" | "document" | "audio" | "video" | "sticker" => {
            let (object, default) = match kind {
                "image" => (&m.image, "image.jpg"),
                "document" => (&m.document, "document"),
                "audio" => (&m.audio, "audio.ogg"),
                "video" => (&m.video, "video.mp4"),
                _ => (&m.sticker, "sticker.webp"),
            };
            let caption = object
                .as_ref()
                .and_then(|o| o.caption.clone())
                .unwrap_or_default();
            let files = object
                .as_ref()
                .and_then(|o| media(o, default))
                .into_iter()
                .collect();
            message(&caption, files)
        }
        "interactive" => {
            let choice = m
                .interactive
                .as_ref()
                .and_then(|i| i.button_reply.as_ref().or(i.list_reply.as_ref()));
            let raw = choice.and_then(|c| c.id.as_deref()).unwrap_or_default();
            let (action_id, value) = crate::interactive::action_of(raw);
            let mut action = Action::new(action_id, author);
            action.value = value
                .map(str::to_owned)
                .or_else(|| choice.and_then(|c| c.title.clone()));
            EventKind::Action(action)
        }
        "button" => {
            let b = m.button.as_ref();
            let mut action = Action::new(
                b.and_then(|b| b.payload.clone()).unwrap_or_default(),
                author,
            );
            action.value = b.and_then(|b| b.text.clone());
            EventKind::Action(action)
        }
        "reaction" => {
            let r = m.reaction.as_ref();
            let emoji = r.and_then(|r| r.emoji.clone()).unwrap_or_default();
            let name =
                chat_core::emoji::name_of(&emoji).map_or_else(|| emoji.clone(), str::to_owned);
            EventKind::Reaction(Reaction::new(
                name,
                !emoji.is_empty(),
                author,
                r.and_then(|r| r.message_id.clone()).unwrap_or_default(),
            ))
        }
        other => {
            let name: String = other
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(32)
                .collect();
            EventKind::Other(OtherEvent::new(
                format!("whatsapp.{name}"),
                serde_json::to_value(m_json(m)).unwrap_or(Value::Null),
            ))
        }
    }
}

/// What a message of another type keeps: its sender, id and type.
fn m_json(m: &InMessage) -> Value {
    serde_json::json!({ "from": m.from, "id": m.id, "type": m.kind, "timestamp": m.timestamp })
}
