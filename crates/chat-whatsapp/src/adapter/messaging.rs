//! Posting, and what else WhatsApp can do: users (the profile names the
//! webhook carried), media up (`/{phone-number-id}/media`, then a document
//! message) and down, read receipts with the typing indicator, taking a
//! reaction back, direct messages. Editing and deleting are not in the
//! Cloud API: both are a typed `Unsupported`, and a stream is posted whole.

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::card::Card;
use chat_core::{
    AdapterError, MessageRef, OutboundMessage, TenantId, TextFormat, ThreadRef, UserInfo,
};
use serde_json::{Value, json};

use super::{WhatsAppAdapter, user_of};
use crate::format::{MAX_TEXT, markdown, split};

/// The largest media file downloaded (WhatsApp's documents are at most
/// 100 MB).
pub const MAX_DOWNLOAD: u64 = 100 * 1024 * 1024;

/// A message as WhatsApp messages: texts of at most 4,096 characters, or
/// one interactive message (a card with buttons or a list).
#[derive(Debug)]
pub(crate) enum Rendered {
    Texts(Vec<String>),
    Interactive(Value),
}

/// How `message` goes out, checked against WhatsApp's limits.
pub(crate) fn render(message: &OutboundMessage) -> Result<Rendered, AdapterError> {
    let text = if let Some(card) = &message.card {
        if let Some(interactive) = crate::interactive::render(card)? {
            return Ok(Rendered::Interactive(
                json!({ "type": "interactive", "interactive": interactive }),
            ));
        }
        let text = markdown(&card.to_markdown(Card::link_buttons));
        if text.is_empty() {
            card.fallback_text()
        } else {
            text
        }
    } else {
        match message.format {
            TextFormat::Markdown => markdown(&message.text),
            _ => message.text.clone(),
        }
    };
    if text.trim().is_empty() {
        return Err(AdapterError::Invalid(
            "WhatsApp sends no empty message".to_owned(),
        ));
    }
    Ok(Rendered::Texts(split(&text, MAX_TEXT)))
}

fn text_message(body: &str) -> Value {
    json!({ "type": "text", "text": { "body": body, "preview_url": false } })
}

/// The emoji of a reaction: a name from the shared table, or an emoji.
fn reaction_emoji(emoji: &str) -> Result<String, AdapterError> {
    if let Some(c) = chat_core::emoji::char_of(emoji) {
        return Ok(c.to_owned());
    }
    if !emoji.is_empty() && !emoji.is_ascii() && emoji.chars().count() <= 8 {
        return Ok(emoji.to_owned());
    }
    Err(AdapterError::Invalid(format!(
        "not an emoji WhatsApp reacts with: {emoji:?}"
    )))
}

/// The MIME type of a file sent as a document, by its name; WhatsApp
/// refuses documents whose type it does not list.
fn mime_of(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "txt" | "log" | "md" => "text/plain",
        "csv" => "text/csv",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls" => "application/vnd.ms-excel",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt" => "application/vnd.ms-powerpoint",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        _ => "application/octet-stream",
    }
}

#[async_trait]
impl chat_core::Messaging for WhatsAppAdapter {
    /// Text in WhatsApp's formatting, split at 4,096 characters, or a card
    /// as one interactive message. A message outside the user's 24-hour
    /// window is [`AdapterError::WindowClosed`] (send a
    /// [`Template`](crate::Template)). The Cloud API keeps nothing to find a
    /// message by, so a run repeated after a crash may post again (at least
    /// once).
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        match render(message)? {
            Rendered::Interactive(body) => self.send(thread, body).await,
            Rendered::Texts(parts) => {
                let mut last = None;
                for part in &parts {
                    last = Some(self.send(thread, text_message(part)).await?);
                }
                last.ok_or_else(|| AdapterError::Invalid("an empty message".to_owned()))
            }
        }
    }

    /// Unsupported: the Cloud API cannot edit a sent message.
    async fn edit(
        &self,
        _message: &MessageRef,
        _content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported(
            "WhatsApp messages cannot be edited",
        ))
    }

    /// Unsupported: the Cloud API cannot delete a sent message.
    async fn delete(&self, _message: &MessageRef) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported(
            "WhatsApp messages cannot be deleted",
        ))
    }

    /// A `reaction` message with the emoji of `emoji` (a name, or an emoji).
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        let emoji = reaction_emoji(emoji)?;
        self.send(
            &message.thread,
            json!({ "type": "reaction", "reaction": { "message_id": message.id, "emoji": emoji } }),
        )
        .await
        .map(drop)
    }

    /// `false`: a streamed answer is posted once, whole.
    fn can_edit(&self) -> bool {
        false
    }
}

#[async_trait]
impl chat_core::Unreact for WhatsAppAdapter {
    /// A `reaction` message with an empty emoji.
    async fn unreact(&self, message: &MessageRef, _emoji: &str) -> Result<(), AdapterError> {
        self.send(
            &message.thread,
            json!({ "type": "reaction", "reaction": { "message_id": message.id, "emoji": "" } }),
        )
        .await
        .map(drop)
    }
}

#[async_trait]
impl chat_core::Status for WhatsAppAdapter {
    /// The chat's last incoming message marked as read, with the typing
    /// indicator (shown up to 25 seconds, or until the answer). Clearing
    /// sends nothing; a chat this process has not heard from lately has no
    /// message to mark, and nothing is sent.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        if status.is_none_or(str::is_empty) {
            return Ok(());
        }
        let user = user_of(thread)?;
        let last = self
            .recent()
            .last_message(thread.tenant.as_str(), user)
            .cloned();
        match last {
            Some(message) => self.mark_read(&thread.tenant, &message, true).await,
            None => Ok(()),
        }
    }
}

#[async_trait]
impl chat_core::Users for WhatsAppAdapter {
    /// WhatsApp has no user lookup: the profile name the user's last
    /// message carried (while remembered), else their number.
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AdapterError::Invalid(format!("not a WhatsApp id: {id}")));
        }
        let name = self.recent().name(tenant.as_str(), id).cloned();
        let number = format!("+{id}");
        let mut info =
            UserInfo::new(id, name.clone().unwrap_or_else(|| number.clone())).with_handle(number);
        if let Some(name) = name {
            info = info.with_real_name(name);
        }
        Ok(info)
    }
}

#[async_trait]
impl chat_core::Uploads for WhatsAppAdapter {
    /// The file uploaded as media, then sent as a document with `comment`
    /// as its caption; the media id.
    async fn upload(
        &self,
        thread: &ThreadRef,
        name: &str,
        content: Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        user_of(thread)?;
        let media = self
            .client_for(&thread.tenant)
            .await?
            .upload(thread.tenant.as_str(), name, mime_of(name), content)
            .await?;
        let mut document = json!({ "id": media, "filename": name });
        if let Some(comment) = comment {
            document["caption"] = json!(comment);
        }
        self.send(thread, json!({ "type": "document", "document": document }))
            .await?;
        Ok(media)
    }
}

#[async_trait]
impl chat_core::Downloads for WhatsAppAdapter {
    /// The media's URL (`GET /{media-id}`), then the file from Meta's media
    /// host with the access token (at most 100 MB).
    async fn download(
        &self,
        tenant: &TenantId,
        file: &chat_core::Attachment,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        self.client_for(tenant)
            .await?
            .download(&file.source, limit.min(MAX_DOWNLOAD))
            .await
    }
}

#[async_trait]
impl chat_core::DirectMessages for WhatsAppAdapter {
    /// A user's chat with the business number is their WhatsApp id: nothing
    /// to open (outside the 24-hour window only a template gets through).
    async fn open_dm(&self, tenant: &TenantId, user: &str) -> Result<ThreadRef, AdapterError> {
        let thread = ThreadRef::new(crate::WHATSAPP, tenant.as_str(), user, "");
        user_of(&thread)?;
        Ok(thread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_emoji_both_react() {
        assert_eq!(reaction_emoji("thumbsup").ok().as_deref(), Some("👍"));
        assert_eq!(reaction_emoji("🎉").ok().as_deref(), Some("🎉"));
        assert!(reaction_emoji("no-such-name").is_err());
        assert!(reaction_emoji("").is_err());
    }

    #[test]
    fn an_empty_message_is_refused_and_a_long_one_split() {
        assert!(render(&OutboundMessage::text("  ")).is_err());
        let long = "word ".repeat(2000);
        let Ok(Rendered::Texts(parts)) = render(&OutboundMessage::text(long)) else {
            panic!("texts")
        };
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_TEXT));
    }
}
