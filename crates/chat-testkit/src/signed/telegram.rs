//! Telegram deliveries: an [Update](https://core.telegram.org/bots/api#update)
//! as JSON, with the webhook's secret token in
//! `X-Telegram-Bot-Api-Secret-Token` (Telegram signs nothing else).

use bytes::Bytes;
use serde_json::{Value, json};

use super::post;

/// The header Telegram sends the secret token in.
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// Builds Telegram deliveries for one bot, chat and user.
///
/// Defaults: secret token as given, path `/webhooks/telegram`, a group chat
/// `-1001000` (`supergroup`), user `42` "Ada" (`@ada`). Each builder takes
/// the `update_id`.
#[derive(Debug, Clone)]
pub struct TelegramDeliveries {
    secret: String,
    path: String,
    chat: i64,
    chat_type: String,
    user: i64,
    user_name: String,
}

impl TelegramDeliveries {
    /// Deliveries carrying `secret_token`.
    pub fn new(secret_token: impl Into<String>) -> Self {
        Self {
            secret: secret_token.into(),
            path: "/webhooks/telegram".to_owned(),
            chat: -1_001_000,
            chat_type: "supergroup".to_owned(),
            user: 42,
            user_name: "ada".to_owned(),
        }
    }

    /// The request path.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The chat: its id and type (`private`, `group`, `supergroup`,
    /// `channel`).
    #[must_use]
    pub fn chat(mut self, id: i64, kind: &str) -> Self {
        self.chat = id;
        self.chat_type = kind.to_owned();
        self
    }

    /// A private chat with the user (its id is the user's).
    #[must_use]
    pub fn private(self) -> Self {
        let user = self.user;
        self.chat(user, "private")
    }

    /// The user who writes: id and username.
    #[must_use]
    pub fn user(mut self, id: i64, username: &str) -> Self {
        self.user = id;
        self.user_name = username.to_owned();
        self
    }

    /// The chat's id.
    pub fn chat_id(&self) -> i64 {
        self.chat
    }

    /// `update` with the secret token.
    pub fn update(&self, update: &Value) -> http::Request<Bytes> {
        self.with_token(update, &self.secret)
    }

    /// `update` with another secret token (a forged delivery).
    pub fn with_token(&self, update: &Value, token: &str) -> http::Request<Bytes> {
        post(
            &self.path,
            &[("content-type", "application/json"), (SECRET_HEADER, token)],
            update.to_string().into_bytes(),
        )
    }

    fn from(&self) -> Value {
        json!({ "id": self.user, "is_bot": false, "first_name": "Ada", "username": self.user_name })
    }

    fn chat_json(&self) -> Value {
        json!({ "id": self.chat, "type": self.chat_type, "title": "Team" })
    }

    /// The message object of `text` (its entities given), number
    /// `message_id`.
    pub fn message_object(&self, message_id: i64, text: &str, entities: &Value) -> Value {
        let mut m = json!({
            "message_id": message_id, "date": 1_700_000_000,
            "from": self.from(), "chat": self.chat_json(), "text": text,
        });
        if entities.as_array().is_some_and(|e| !e.is_empty()) {
            m["entities"] = entities.clone();
        }
        m
    }

    /// A message: `text`, with a `mention` entity for each `@name` in it
    /// and a `bot_command` for a leading `/command`.
    pub fn message(&self, update_id: i64, message_id: i64, text: &str) -> http::Request<Bytes> {
        self.update(&json!({
            "update_id": update_id,
            "message": self.message_object(message_id, text, &entities_of(text)),
        }))
    }

    /// A message in forum topic `topic`.
    pub fn topic_message(
        &self,
        update_id: i64,
        message_id: i64,
        topic: i64,
        text: &str,
    ) -> http::Request<Bytes> {
        let mut m = self.message_object(message_id, text, &entities_of(text));
        m["message_thread_id"] = json!(topic);
        m["is_topic_message"] = json!(true);
        self.update(&json!({ "update_id": update_id, "message": m }))
    }

    /// A reply to the bot's message `reply_to` (by bot `bot_id`).
    pub fn reply_to_bot(
        &self,
        update_id: i64,
        message_id: i64,
        reply_to: i64,
        bot_id: i64,
        text: &str,
    ) -> http::Request<Bytes> {
        let mut m = self.message_object(message_id, text, &entities_of(text));
        m["reply_to_message"] = json!({
            "message_id": reply_to, "date": 1_699_999_999, "chat": self.chat_json(),
            "from": { "id": bot_id, "is_bot": true, "first_name": "Bot" }, "text": "…",
        });
        self.update(&json!({ "update_id": update_id, "message": m }))
    }

    /// The user edited message `message_id` to `text`.
    pub fn edited(&self, update_id: i64, message_id: i64, text: &str) -> http::Request<Bytes> {
        let mut m = self.message_object(message_id, text, &entities_of(text));
        m["edit_date"] = json!(1_700_000_100);
        self.update(&json!({ "update_id": update_id, "edited_message": m }))
    }

    /// A document attached to a message, captioned `caption`.
    pub fn document(
        &self,
        update_id: i64,
        message_id: i64,
        caption: &str,
        file_id: &str,
        name: &str,
        size: u64,
    ) -> http::Request<Bytes> {
        let mut m = json!({
            "message_id": message_id, "date": 1_700_000_000,
            "from": self.from(), "chat": self.chat_json(), "caption": caption,
            "document": { "file_id": file_id, "file_unique_id": "u", "file_name": name,
                          "mime_type": "application/octet-stream", "file_size": size },
        });
        let entities = entities_of(caption);
        if entities.as_array().is_some_and(|e| !e.is_empty()) {
            m["caption_entities"] = entities;
        }
        self.update(&json!({ "update_id": update_id, "message": m }))
    }

    /// A click on a button whose `callback_data` is `data`, on the bot's
    /// message `message_id`.
    pub fn callback(
        &self,
        update_id: i64,
        query_id: &str,
        message_id: i64,
        data: &str,
    ) -> http::Request<Bytes> {
        self.update(&json!({
            "update_id": update_id,
            "callback_query": {
                "id": query_id, "from": self.from(), "chat_instance": "1", "data": data,
                "message": { "message_id": message_id, "date": 1_700_000_000,
                             "chat": self.chat_json(), "text": "…" },
            },
        }))
    }

    /// The user's reactions on message `message_id` changed from `old` to
    /// `new` (emoji).
    pub fn reaction(
        &self,
        update_id: i64,
        message_id: i64,
        old: &[&str],
        new: &[&str],
    ) -> http::Request<Bytes> {
        let list = |emoji: &[&str]| -> Vec<Value> {
            emoji
                .iter()
                .map(|e| json!({ "type": "emoji", "emoji": e }))
                .collect()
        };
        self.update(&json!({
            "update_id": update_id,
            "message_reaction": {
                "chat": self.chat_json(), "message_id": message_id, "user": self.from(),
                "date": 1_700_000_000, "old_reaction": list(old), "new_reaction": list(new),
            },
        }))
    }
}

/// The entities Telegram would put in `text`: a `bot_command` for a
/// leading `/command`, a `mention` for each `@name` (UTF-16 offsets).
pub fn entities_of(text: &str) -> Value {
    let mut entities = Vec::new();
    let mut offset = 0usize;
    for (i, c) in text.char_indices() {
        let starts_word = i == 0 || text[..i].ends_with(char::is_whitespace);
        if starts_word && (c == '@' || (c == '/' && i == 0)) {
            let word: String = text[i..]
                .chars()
                .take_while(|ch| !ch.is_whitespace())
                .collect();
            let length: usize = word.chars().map(char::len_utf16).sum();
            if length > 1 {
                let kind = if c == '/' { "bot_command" } else { "mention" };
                entities.push(json!({ "type": kind, "offset": offset, "length": length }));
            }
        }
        offset += c.len_utf16();
    }
    Value::Array(entities)
}
