//! A verified [Update](https://core.telegram.org/bots/api#update) as
//! normalized events.
//!
//! | update | event | thread |
//! |---|---|---|
//! | `message`, `channel_post` | `Message` (posted); a DM in a private chat; a mention when it names the bot (`@bot`, a text mention, a reply to the bot's message); a command (`/echo`, `/echo@bot`) as `SlashCommand` | the chat, or its forum topic |
//! | `edited_message`, `edited_channel_post` | `Message` (edited) | the same |
//! | `callback_query` | `Action` (the button's `callback_data`: action id and value) | the message's chat or topic |
//! | `message_reaction` | one `Reaction` per emoji added or removed | the chat |
//! | anything else | [`Inbound::Ignored`] (`unsupported:{kind}`) | |
//!
//! The dedupe key is the update's `update_id` (a reaction's, with its emoji):
//! Telegram sends an update again, with the same id, until it is answered
//! with a 2xx, for as long as it keeps it (24 hours).

use bytes::Bytes;
use chat_core::{
    Action, Attachment, Author, Event, EventKind, Handle, Inbound, Link, Mention, Message,
    MessageChange, Reaction, SlashCommand, ThreadRef, WebhookError,
};
use serde_json::Value;

use crate::TELEGRAM;
use crate::payload::{CallbackQuery, Chat, Entity, File, Update, User};
use crate::text::{InEntity, byte_offset, to_markdown};

/// What parsing needs besides the body.
pub(crate) struct Context<'a> {
    /// The bot the update is for (the tenant).
    pub(crate) bot_id: &'a str,
    pub(crate) received_at_ms: u64,
    pub(crate) raw: &'a Bytes,
}

fn malformed(what: &str) -> WebhookError {
    WebhookError::Malformed(format!("telegram: {what}"))
}

fn ignored(reason: impl Into<String>) -> Inbound {
    Inbound::Ignored {
        reason: reason.into(),
    }
}

impl Context<'_> {
    fn event(&self, id: String, dedupe: String, thread: ThreadRef, kind: EventKind) -> Event {
        Event::new(id, dedupe, thread, kind)
            .with_received_at_ms(self.received_at_ms)
            .with_raw(self.raw.clone())
    }

    /// The conversation of a message: its chat, or its forum topic.
    fn thread(&self, chat: &Chat, topic: Option<i64>) -> Option<ThreadRef> {
        let chat = chat.id?;
        Some(ThreadRef::new(
            TELEGRAM,
            self.bot_id,
            chat.to_string(),
            topic.map(|t| t.to_string()).unwrap_or_default(),
        ))
    }

    fn author(&self, user: &User) -> Author {
        let id = user.id.map(|i| i.to_string()).unwrap_or_default();
        let name = match (&user.first_name, &user.last_name) {
            (Some(f), Some(l)) => Some(format!("{f} {l}")),
            (Some(f), None) => Some(f.clone()),
            _ => user.username.clone(),
        };
        let mut author = Author::new(id.clone())
            .with_bot(user.is_bot == Some(true))
            .with_me(!id.is_empty() && id == self.bot_id);
        author.name = name;
        author
    }
}

/// Parses a verified body.
pub(crate) fn parse(cx: &Context<'_>, body: &[u8]) -> Result<Inbound, WebhookError> {
    let update: Update = serde_json::from_slice(body).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Data => malformed("an update of an unexpected shape"),
            _ => malformed("not JSON"),
        }
    })?;
    let id = update
        .update_id
        .ok_or_else(|| malformed("an update without update_id"))?;
    let id = format!("update:{id}");
    if let Some(m) = update.message.as_ref().or(update.channel_post.as_ref()) {
        return message(cx, id, m, MessageChange::Posted);
    }
    if let Some(m) = update
        .edited_message
        .as_ref()
        .or(update.edited_channel_post.as_ref())
    {
        return message(cx, id, m, MessageChange::Edited);
    }
    if let Some(q) = &update.callback_query {
        return callback(cx, id, q);
    }
    if let Some(r) = &update.message_reaction {
        return reactions(cx, &id, r);
    }
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let kind = value
        .as_object()
        .and_then(|o| o.keys().find(|k| *k != "update_id").cloned())
        .unwrap_or_default();
    let kind: String = kind
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(48)
        .collect();
    Ok(ignored(format!("unsupported:{kind}")))
}

fn message(
    cx: &Context<'_>,
    id: String,
    m: &crate::payload::Message,
    change: MessageChange,
) -> Result<Inbound, WebhookError> {
    let chat = m
        .chat
        .as_ref()
        .ok_or_else(|| malformed("a message without chat"))?;
    let message_id = m
        .message_id
        .ok_or_else(|| malformed("a message without message_id"))?;
    let topic = m
        .is_topic_message
        .unwrap_or(false)
        .then_some(m.message_thread_id)
        .flatten();
    let thread = cx
        .thread(chat, topic)
        .ok_or_else(|| malformed("a chat without id"))?;
    let author = match (&m.from, &m.sender_chat) {
        (Some(user), _) => cx.author(user),
        (None, Some(sender)) => {
            let mut a = Author::new(sender.id.map(|i| i.to_string()).unwrap_or_default());
            a.name.clone_from(&sender.title);
            a
        }
        (None, None) => Author::default(),
    };
    if author.is_me {
        return Ok(ignored("own-message"));
    }
    let text = m
        .text
        .as_deref()
        .or(m.caption.as_deref())
        .unwrap_or_default();
    let entities = m
        .entities
        .as_deref()
        .or(m.caption_entities.as_deref())
        .unwrap_or_default();
    let entities = in_entities(text, entities);
    let is_dm = chat.kind.as_deref() == Some("private");
    // A command: `/echo args` or `/echo@bot args`, at the start.
    if change == MessageChange::Posted
        && let Some(command) = entities
            .iter()
            .find(|e| e.kind == "bot_command" && e.start == 0)
    {
        let name = &text[..command.end];
        let args = text[command.end..].trim();
        let mut cmd = SlashCommand::new(name, args, author);
        // Where an answer goes later: the chat and the command's message.
        cmd.follow_up = Some(Handle::new(format!("{}:{message_id}", thread.channel)));
        return Ok(Inbound::Event(Box::new(cx.event(
            id.clone(),
            id,
            thread,
            EventKind::SlashCommand(cmd),
        ))));
    }
    let replied_to_me = m
        .reply_to_message
        .as_ref()
        .and_then(|r| r.from.as_ref())
        .and_then(|u| u.id)
        .is_some_and(|u| u.to_string() == cx.bot_id);
    let (mentions, links) = mentions_and_links(cx, text, &entities);
    let texted_me = mentions.iter().any(|m| m.is_me);
    let message = Message::new(message_id.to_string(), author, text)
        .with_markup(text)
        .with_markdown(to_markdown(text, &entities))
        .with_mentions(mentions)
        .with_links(links)
        .with_attachments(attachments(m))
        .with_change(change)
        .with_dm(is_dm)
        .with_mention(replied_to_me || texted_me);
    Ok(Inbound::Event(Box::new(cx.event(
        id.clone(),
        id,
        thread,
        EventKind::Message(message),
    ))))
}

/// A message's entities in byte offsets; those whose offsets do not fall on
/// the text's characters are dropped.
fn in_entities(text: &str, entities: &[Entity]) -> Vec<InEntity> {
    entities
        .iter()
        .filter_map(|e| {
            let start = byte_offset(text, e.offset)?;
            let end = byte_offset(text, e.offset.checked_add(e.length)?)?;
            (end > start).then(|| InEntity {
                kind: e.kind.clone(),
                start,
                end,
                url: e.url.clone(),
                user: e.user.as_ref().and_then(|u| {
                    let name = u.first_name.clone().or_else(|| u.username.clone())?;
                    Some((u.id?, name))
                }),
            })
        })
        .collect()
}

/// The users a message mentions (`@username`, text mentions) and its links.
/// A mention of the bot by id is marked here; by username, once the adapter
/// knows its own (`resolve`).
fn mentions_and_links(
    cx: &Context<'_>,
    text: &str,
    entities: &[InEntity],
) -> (Vec<Mention>, Vec<Link>) {
    let mut mentions = Vec::new();
    let mut links = Vec::new();
    for e in entities {
        let shown = &text[e.start..e.end];
        match e.kind.as_str() {
            "mention" => {
                let name = shown.trim_start_matches('@');
                mentions.push(Mention::new(name).with_name(name));
            }
            "text_mention" => {
                if let Some((id, name)) = &e.user {
                    let id = id.to_string();
                    let me = id == cx.bot_id;
                    mentions.push(Mention::new(id).with_name(name.clone()).with_me(me));
                }
            }
            "url" => links.push(Link::new(shown)),
            "text_link" => {
                if let Some(url) = &e.url {
                    links.push(Link::new(url.clone()).with_label(shown));
                }
            }
            _ => {}
        }
    }
    (mentions, links)
}

/// The files of a message: a document, the largest size of a photo, a
/// video, an audio or a voice note. Each is downloaded by its `file_id`.
fn attachments(m: &crate::payload::Message) -> Vec<Attachment> {
    let file = |f: &File, name: String, mime: Option<&str>| {
        let id = f.file_id.clone()?;
        let mut a = Attachment::new(id.clone(), f.file_name.clone().unwrap_or(name), id);
        if let Some(mime) = f.mime_type.as_deref().or(mime) {
            a = a.with_mime_type(mime);
        }
        if let Some(size) = f.file_size {
            a = a.with_size(size);
        }
        Some(a)
    };
    let photo = m
        .photo
        .as_ref()
        .and_then(|sizes| sizes.iter().max_by_key(|s| s.file_size.unwrap_or(0)));
    [
        m.document
            .as_ref()
            .and_then(|f| file(f, "document".into(), None)),
        photo.and_then(|f| file(f, "photo.jpg".into(), Some("image/jpeg"))),
        m.video
            .as_ref()
            .and_then(|f| file(f, "video.mp4".into(), None)),
        m.audio.as_ref().and_then(|f| file(f, "audio".into(), None)),
        m.voice
            .as_ref()
            .and_then(|f| file(f, "voice.ogg".into(), None)),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn callback(cx: &Context<'_>, id: String, q: &CallbackQuery) -> Result<Inbound, WebhookError> {
    let query =
        q.id.clone()
            .filter(|i| !i.is_empty())
            .ok_or_else(|| malformed("a callback_query without id"))?;
    let user = q.from.as_ref().map(|u| cx.author(u)).unwrap_or_default();
    let message = q.message.as_ref();
    let Some(thread) = message.and_then(|m| {
        let topic = m
            .is_topic_message
            .unwrap_or(false)
            .then_some(m.message_thread_id)
            .flatten();
        cx.thread(m.chat.as_ref()?, topic)
    }) else {
        // A click on a message sent in inline mode (`inline_message_id`):
        // it has no chat for a conversation.
        return Ok(Inbound::Ignored {
            reason: "unsupported:inline_callback".to_owned(),
        });
    };
    let (action_id, value) = crate::keyboard::action_of(q.data.as_deref().unwrap_or_default());
    let mut action = Action::new(action_id, user);
    action.value = value.map(str::to_owned);
    let message_id = message.and_then(|m| m.message_id).unwrap_or_default();
    // Answered with `answerCallbackQuery` (its id), and a later message goes
    // to the chat, as a reply to the clicked message.
    action.follow_up = Some(Handle::new(format!(
        "{query}:{}:{message_id}",
        thread.channel
    )));
    Ok(Inbound::Event(Box::new(cx.event(
        id.clone(),
        id,
        thread,
        EventKind::Action(action),
    ))))
}

/// The emoji of a reaction list (custom and paid reactions left out).
fn emoji_of(reactions: &[Value]) -> Vec<String> {
    reactions
        .iter()
        .filter(|r| r["type"] == "emoji")
        .filter_map(|r| r["emoji"].as_str().map(str::to_owned))
        .collect()
}

fn reactions(
    cx: &Context<'_>,
    id: &str,
    r: &crate::payload::MessageReaction,
) -> Result<Inbound, WebhookError> {
    let chat = r
        .chat
        .as_ref()
        .ok_or_else(|| malformed("a message_reaction without chat"))?;
    let thread = cx
        .thread(chat, None)
        .ok_or_else(|| malformed("a chat without id"))?;
    let message_id = r
        .message_id
        .ok_or_else(|| malformed("a message_reaction without message_id"))?
        .to_string();
    let user = r.user.as_ref().map(|u| cx.author(u)).unwrap_or_default();
    if user.is_me {
        return Ok(ignored("own-reaction"));
    }
    let (old, new) = (emoji_of(&r.old_reaction), emoji_of(&r.new_reaction));
    let changed = new
        .iter()
        .filter(|e| !old.contains(e))
        .map(|e| (e, true))
        .chain(old.iter().filter(|e| !new.contains(e)).map(|e| (e, false)));
    let events: Vec<Event> = changed
        .map(|(emoji, added)| {
            let sign = if added { "+" } else { "-" };
            cx.event(
                id.to_owned(),
                format!("{id}:{sign}{emoji}"),
                thread.clone(),
                EventKind::Reaction(Reaction::new(
                    crate::emoji::name(emoji),
                    added,
                    user.clone(),
                    message_id.clone(),
                )),
            )
        })
        .collect();
    Ok(if events.is_empty() {
        ignored("reaction-unchanged")
    } else {
        Inbound::Events(events)
    })
}
