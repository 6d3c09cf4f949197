//! Posting, and what else Telegram can do: native streams (message drafts
//! in private chats), users (`getChat`), files up (`sendDocument`) and down
//! (`getFile`), the typing status, taking a reaction back, and direct
//! messages (a user's private chat with the bot).

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, MessageRef, OutboundMessage, TenantId, TextFormat, ThreadRef, UserInfo,
};
use serde_json::{Value, json};

use super::{TelegramAdapter, chat_of};
use crate::text::{Formatted, MAX_TEXT, markdown, split};

/// A message as Telegram text and entities, and a card's inline keyboard.
pub(crate) fn render(
    message: &OutboundMessage,
) -> Result<(Formatted, Option<Value>), AdapterError> {
    if let Some(card) = &message.card {
        let (text, keyboard) = crate::keyboard::render(card)?;
        let mut formatted = markdown(&text);
        if formatted.text.is_empty() {
            formatted = Formatted::plain(message.text.clone());
        }
        return Ok((formatted, keyboard));
    }
    Ok(match message.format {
        TextFormat::Markdown => (markdown(&message.text), None),
        _ => (Formatted::plain(message.text.clone()), None),
    })
}

fn message_body(
    chat: i64,
    topic: Option<i64>,
    part: &Formatted,
    keyboard: Option<&Value>,
) -> Value {
    let mut body = json!({ "chat_id": chat, "text": part.text });
    if !part.entities.is_empty() {
        body["entities"] = json!(part.entities);
    }
    if let Some(topic) = topic {
        body["message_thread_id"] = json!(topic);
    }
    if let Some(keyboard) = keyboard {
        body["reply_markup"] = keyboard.clone();
    }
    body
}

fn message_id(result: &Value) -> Result<String, AdapterError> {
    result["message_id"]
        .as_i64()
        .map(|id| id.to_string())
        .ok_or_else(|| AdapterError::Decode("an answer without message_id".into()))
}

impl TelegramAdapter {
    /// `sendMessage` of `formatted`, split into messages of at most 4,096
    /// characters, the keyboard on the last, the first replying to message
    /// `reply_to` when given; the last message's id.
    pub(crate) async fn send(
        &self,
        thread: &ThreadRef,
        formatted: &Formatted,
        keyboard: Option<&Value>,
        reply_to: Option<i64>,
    ) -> Result<String, AdapterError> {
        let (chat, topic) = chat_of(thread)?;
        let client = self.client_for(&thread.tenant).await?;
        let parts = split(formatted, MAX_TEXT);
        let last = parts.len().saturating_sub(1);
        let mut id = None;
        for (i, part) in parts.iter().enumerate() {
            let keyboard = if i == last { keyboard } else { None };
            let mut body = message_body(chat, topic, part, keyboard);
            if let Some(to) = reply_to.filter(|_| i == 0) {
                body["reply_parameters"] =
                    json!({ "message_id": to, "allow_sending_without_reply": true });
            }
            let sent = client.call("sendMessage", &body).await?;
            id = Some(message_id(&sent)?);
        }
        id.ok_or_else(|| AdapterError::Invalid("an empty message".to_owned()))
    }

    /// The message a reference means: a finished draft's final message.
    fn resolved(&self, message: &MessageRef) -> String {
        self.drafts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .done
            .get(&message.id)
            .cloned()
            .unwrap_or_else(|| message.id.clone())
    }
}

fn message_number(id: &str) -> Result<i64, AdapterError> {
    id.parse()
        .map_err(|_| AdapterError::Invalid(format!("not a Telegram message id: {id}")))
}

#[async_trait]
impl chat_core::Messaging for TelegramAdapter {
    /// `sendMessage` in the chat (and forum topic): Markdown as entities, a
    /// card as its text and an inline keyboard, split at 4,096 characters.
    /// Telegram keeps nothing to find a message by, so a run repeated after
    /// a crash may post its reply again (at least once).
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        let (formatted, keyboard) = render(message)?;
        let id = self
            .send(thread, &formatted, keyboard.as_ref(), None)
            .await?;
        Ok(MessageRef {
            thread: thread.clone(),
            id,
        })
    }

    /// `editMessageText`; the same text again is success. An edit must fit
    /// one message (4,096 characters).
    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        let (chat, _) = chat_of(&message.thread)?;
        let (formatted, keyboard) = render(content)?;
        if formatted.len_utf16() > MAX_TEXT {
            return Err(AdapterError::Invalid(format!(
                "an edit of {} characters: Telegram takes {MAX_TEXT}",
                formatted.len_utf16()
            )));
        }
        let mut body = message_body(chat, None, &formatted, keyboard.as_ref());
        body["message_id"] = json!(message_number(&self.resolved(message))?);
        let answer = self
            .client_for(&message.thread.tenant)
            .await?
            .try_call("editMessageText", &body)
            .await?;
        match answer {
            Ok(_) => Ok(()),
            Err(r) if r.description.contains("message is not modified") => Ok(()),
            Err(r) => Err(AdapterError::Api {
                code: format!("{}: {}", r.status.as_u16(), r.description),
            }),
        }
    }

    /// 4,096: a stream by edits goes on in a new message past it.
    fn max_text_len(&self) -> Option<usize> {
        Some(MAX_TEXT)
    }

    /// `deleteMessage`.
    async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        let (chat, _) = chat_of(&message.thread)?;
        let body =
            json!({ "chat_id": chat, "message_id": message_number(&self.resolved(message))? });
        self.client_for(&message.thread.tenant)
            .await?
            .call("deleteMessage", &body)
            .await
            .map(drop)
    }

    /// `setMessageReaction` with the emoji of `emoji` (a name, or one of
    /// Telegram's reaction emoji): one Telegram does not take is
    /// [`AdapterError::Invalid`] before any call.
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        let (chat, _) = chat_of(&message.thread)?;
        let reaction = crate::emoji::reaction(emoji)
            .ok_or_else(|| AdapterError::Invalid(format!("Telegram has no reaction {emoji:?}")))?;
        let body = json!({
            "chat_id": chat,
            "message_id": message_number(&self.resolved(message))?,
            "reaction": [{ "type": "emoji", "emoji": reaction }],
        });
        self.client_for(&message.thread.tenant)
            .await?
            .call("setMessageReaction", &body)
            .await
            .map(drop)
    }
}

#[async_trait]
impl chat_core::Unreact for TelegramAdapter {
    /// `setMessageReaction` with no reaction (a bot has at most one).
    async fn unreact(&self, message: &MessageRef, _emoji: &str) -> Result<(), AdapterError> {
        let (chat, _) = chat_of(&message.thread)?;
        let body = json!({
            "chat_id": chat,
            "message_id": message_number(&self.resolved(message))?,
            "reaction": [],
        });
        self.client_for(&message.thread.tenant)
            .await?
            .call("setMessageReaction", &body)
            .await
            .map(drop)
    }
}

#[async_trait]
impl chat_core::Status for TelegramAdapter {
    /// `sendChatAction` `typing` (Telegram shows it for five seconds, or
    /// until the bot's next message); clearing it sends nothing.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        if status.is_none_or(str::is_empty) {
            return Ok(());
        }
        let (chat, topic) = chat_of(thread)?;
        let mut body = json!({ "chat_id": chat, "action": "typing" });
        if let Some(topic) = topic {
            body["message_thread_id"] = json!(topic);
        }
        self.client_for(&thread.tenant)
            .await?
            .call("sendChatAction", &body)
            .await
            .map(drop)
    }
}

#[async_trait]
impl chat_core::Streams for TelegramAdapter {
    /// In a private chat, `sendMessageDraft`: the answer grows in place as a
    /// draft, and [`stop_stream`](chat_core::Streams::stop_stream) sends it
    /// as a message. Elsewhere unsupported (the runtime posts and edits).
    async fn start_stream(
        &self,
        thread: &ThreadRef,
        text: &str,
        _recipient: Option<&str>,
    ) -> Result<MessageRef, AdapterError> {
        let (chat, _) = chat_of(thread)?;
        if chat <= 0 {
            return Err(AdapterError::Unsupported(
                "Telegram streams drafts only in private chats",
            ));
        }
        let draft: u32 = rand::random::<u32>().max(1);
        let id = format!("draft:{draft}");
        self.drafts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .started(&id, text);
        self.draft(thread, draft, text).await?;
        Ok(MessageRef {
            thread: thread.clone(),
            id,
        })
    }

    async fn append_stream(&self, stream: &MessageRef, text: &str) -> Result<(), AdapterError> {
        let draft = draft_number(&stream.id)?;
        let full = {
            let mut drafts = self
                .drafts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let full = drafts.text.entry(stream.id.clone()).or_default();
            full.push_str(text);
            full.clone()
        };
        self.draft(&stream.thread, draft, &full).await
    }

    /// The draft sent as a message (split at 4,096 characters), which
    /// later edits of the stream's message change.
    async fn stop_stream(&self, stream: &MessageRef, full_text: &str) -> Result<(), AdapterError> {
        let formatted = markdown(full_text);
        let id = self.send(&stream.thread, &formatted, None, None).await?;
        self.drafts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .finished(&stream.id, id);
        Ok(())
    }
}

fn draft_number(id: &str) -> Result<u32, AdapterError> {
    id.strip_prefix("draft:")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| AdapterError::Invalid(format!("not a Telegram draft: {id}")))
}

impl TelegramAdapter {
    /// One `sendMessageDraft` of the draft's text so far (its last 4,096
    /// characters when longer: the message it ends in is split).
    async fn draft(&self, thread: &ThreadRef, draft: u32, text: &str) -> Result<(), AdapterError> {
        let (chat, topic) = chat_of(thread)?;
        let formatted = markdown(text);
        let shown = split(&formatted, MAX_TEXT).pop().unwrap_or_default();
        let mut body = message_body(chat, topic, &shown, None);
        body["draft_id"] = json!(draft);
        self.client_for(&thread.tenant)
            .await?
            .call("sendMessageDraft", &body)
            .await
            .map(drop)
    }
}

#[async_trait]
impl chat_core::Users for TelegramAdapter {
    /// `getChat` of the user's private chat with the bot (a user who never
    /// wrote to the bot cannot be looked up).
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError> {
        let chat = self
            .client_for(tenant)
            .await?
            .call("getChat", &json!({ "chat_id": id }))
            .await?;
        let text = |k: &str| {
            chat[k]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let full = match (text("first_name"), text("last_name")) {
            (Some(f), Some(l)) => Some(format!("{f} {l}")),
            (f, _) => f,
        };
        let username = text("username");
        let display = full
            .clone()
            .or_else(|| username.clone())
            .unwrap_or_else(|| id.to_owned());
        let mut info = UserInfo::new(id, display);
        if let Some(full) = full {
            info = info.with_real_name(full);
        }
        if let Some(username) = username {
            info = info
                .with_mention(format!("@{username}"))
                .with_handle(username);
        }
        Ok(info)
    }
}

#[async_trait]
impl chat_core::Uploads for TelegramAdapter {
    /// `sendDocument` (multipart), `comment` as its caption; the document's
    /// `file_id`.
    async fn upload(
        &self,
        thread: &ThreadRef,
        name: &str,
        content: Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        let (chat, topic) = chat_of(thread)?;
        let mut fields = vec![("chat_id", chat.to_string())];
        if let Some(topic) = topic {
            fields.push(("message_thread_id", topic.to_string()));
        }
        if let Some(comment) = comment {
            fields.push(("caption", comment.to_owned()));
        }
        let sent = self
            .client_for(&thread.tenant)
            .await?
            .call_with_file("sendDocument", &fields, ("document", name, content))
            .await?;
        sent.pointer("/document/file_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Decode("sendDocument answered no document".into()))
    }
}

#[async_trait]
impl chat_core::Downloads for TelegramAdapter {
    /// `getFile`, then the file from Telegram's file server (the bot token is
    /// in its URL; bots get files of at most 20 MB).
    async fn download(
        &self,
        tenant: &TenantId,
        file: &chat_core::Attachment,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        self.client_for(tenant)
            .await?
            .download(&file.source, limit.min(crate::client::MAX_DOWNLOAD))
            .await
    }
}

#[async_trait]
impl chat_core::DirectMessages for TelegramAdapter {
    /// A user's private chat with the bot has the user's id: nothing to
    /// open (the user must have started the bot for posts to arrive).
    async fn open_dm(&self, tenant: &TenantId, user: &str) -> Result<ThreadRef, AdapterError> {
        if user.parse::<i64>().is_err() {
            return Err(AdapterError::Invalid(format!(
                "not a Telegram user id: {user}"
            )));
        }
        Ok(ThreadRef::new(crate::TELEGRAM, tenant.as_str(), user, ""))
    }
}
