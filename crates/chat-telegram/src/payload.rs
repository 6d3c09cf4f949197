//! The Bot API's objects as a webhook delivers them
//! ([Update](https://core.telegram.org/bots/api#update) and what it holds),
//! read leniently: every field the adapter does not need is left out, and
//! every field it does need may be missing without a panic.

use serde::Deserialize;
use serde_json::Value;

/// An [`Update`](https://core.telegram.org/bots/api#update): at most one of
/// its optional parts is present.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Update {
    pub(crate) update_id: Option<i64>,
    pub(crate) message: Option<Message>,
    pub(crate) edited_message: Option<Message>,
    pub(crate) channel_post: Option<Message>,
    pub(crate) edited_channel_post: Option<Message>,
    pub(crate) callback_query: Option<CallbackQuery>,
    pub(crate) message_reaction: Option<MessageReaction>,
}

/// A [`Message`](https://core.telegram.org/bots/api#message).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Message {
    pub(crate) message_id: Option<i64>,
    pub(crate) message_thread_id: Option<i64>,
    pub(crate) is_topic_message: Option<bool>,
    pub(crate) from: Option<User>,
    pub(crate) sender_chat: Option<Chat>,
    pub(crate) chat: Option<Chat>,
    pub(crate) date: Option<i64>,
    pub(crate) text: Option<String>,
    pub(crate) caption: Option<String>,
    pub(crate) entities: Option<Vec<Entity>>,
    pub(crate) caption_entities: Option<Vec<Entity>>,
    pub(crate) reply_to_message: Option<Box<Message>>,
    pub(crate) document: Option<File>,
    pub(crate) photo: Option<Vec<File>>,
    pub(crate) video: Option<File>,
    pub(crate) audio: Option<File>,
    pub(crate) voice: Option<File>,
}

/// A [`User`](https://core.telegram.org/bots/api#user).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct User {
    pub(crate) id: Option<i64>,
    pub(crate) is_bot: Option<bool>,
    pub(crate) first_name: Option<String>,
    pub(crate) last_name: Option<String>,
    pub(crate) username: Option<String>,
}

/// A [`Chat`](https://core.telegram.org/bots/api#chat).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Chat {
    pub(crate) id: Option<i64>,
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) is_forum: Option<bool>,
}

/// A [`MessageEntity`](https://core.telegram.org/bots/api#messageentity):
/// offsets and lengths in UTF-16 code units.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct Entity {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) offset: i64,
    pub(crate) length: i64,
    pub(crate) url: Option<String>,
    pub(crate) user: Option<User>,
}

/// A file of a message (document, the largest photo size, video, audio,
/// voice).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct File {
    pub(crate) file_id: Option<String>,
    pub(crate) file_unique_id: Option<String>,
    pub(crate) file_name: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) file_size: Option<u64>,
}

/// A [`CallbackQuery`](https://core.telegram.org/bots/api#callbackquery):
/// a click on an inline keyboard's button.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CallbackQuery {
    pub(crate) id: Option<String>,
    pub(crate) from: Option<User>,
    pub(crate) message: Option<Message>,
    pub(crate) data: Option<String>,
}

/// A [`MessageReactionUpdated`](https://core.telegram.org/bots/api#messagereactionupdated).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MessageReaction {
    pub(crate) chat: Option<Chat>,
    pub(crate) message_id: Option<i64>,
    pub(crate) user: Option<User>,
    pub(crate) old_reaction: Vec<Value>,
    pub(crate) new_reaction: Vec<Value>,
}
