//! # chat-telegram
//!
//! The Telegram [`PlatformAdapter`](chat_core::PlatformAdapter) for chat-rs,
//! on the [Bot API](https://core.telegram.org/bots/api):
//!
//! * **Verify** ([`secret`]): the `X-Telegram-Bot-Api-Secret-Token` header
//!   set with `setWebhook`'s `secret_token`, compared in constant time before
//!   anything is parsed (Telegram signs nothing else). Several bots in one
//!   process each get a token derived from one webhook secret.
//! * **Parse**: an [Update](https://core.telegram.org/bots/api#update) —
//!   messages, edits, channel posts, button clicks, reactions — into
//!   normalized events (see `inbound`'s table). A private chat or group is
//!   one conversation (channel lock scope), a forum topic its own (thread
//!   scope); `@bot` mentions, text mentions and replies to the bot are
//!   mentions; `/cmd` and `/cmd@bot` are slash commands; the dedupe key is
//!   the `update_id`, kept for [`DEDUPE_TTL`] (Telegram drops an update it
//!   could not deliver after 24 hours).
//! * **Answer**: a 2xx for what was taken (Telegram resends anything else);
//!   a button's `answerCallbackQuery` (its toast) in the webhook answer
//!   itself. Every other reply is a Bot API call of its own: Telegram says
//!   nothing of how a call in the webhook answer went.
//! * **Talk back** ([`TelegramClient`]): `sendMessage` with Markdown as
//!   entities ([`text`]), split at 4,096 characters; cards as text and an
//!   inline keyboard ([`keyboard`], `callback_data` checked against 64
//!   bytes); `editMessageText`, `deleteMessage`, `setMessageReaction`
//!   ([`emoji`]), `sendChatAction`, `sendDocument`, `getFile`; streams as
//!   message drafts in private chats, else a post and throttled edits; a
//!   429 waited out for its `retry_after`.
//!
//! ```
//! use bytes::Bytes;
//! use chat_core::{EventKind, Inbound, Webhook};
//! use chat_telegram::{TelegramAdapter, secret::SECRET_HEADER};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let telegram = TelegramAdapter::builder()
//!     .bot_token("123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11")
//!     .secret_token("my-webhook-secret")
//!     .bot_username("echo_bot")
//!     .build()?;
//!
//! let body = Bytes::from_static(br#"{"update_id": 10000, "message": {
//!     "message_id": 7, "date": 1700000000, "text": "hey there",
//!     "from": {"id": 42, "is_bot": false, "first_name": "Ada"},
//!     "chat": {"id": 42, "type": "private", "first_name": "Ada"}}}"#);
//! let (parts, ()) = http::Request::post("/webhooks/telegram")
//!     .header(SECRET_HEADER, "my-webhook-secret")
//!     .body(())?
//!     .into_parts();
//! telegram.verify(&parts, &body)?;
//! let Inbound::Event(event) = telegram.parse(&parts, &body)? else { panic!("an event") };
//! assert_eq!(event.thread.to_string(), "telegram:123456:42:");
//! assert_eq!(event.dedupe_key.as_str(), "update:10000");
//! let EventKind::Message(message) = &event.kind else { panic!("a message") };
//! assert!(message.is_dm);
//!
//! // The wrong token is refused before the body is read.
//! let (forged, ()) = http::Request::post("/webhooks/telegram")
//!     .header(SECRET_HEADER, "guess")
//!     .body(())?
//!     .into_parts();
//! assert!(telegram.verify(&forged, &body).is_err());
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod adapter;
mod client;
pub mod emoji;
mod error;
mod inbound;
pub mod keyboard;
mod payload;
pub mod secret;
pub mod text;

use chat_core::Platform;

pub use adapter::{DEDUPE_TTL, TelegramAdapter, TelegramAdapterBuilder};
pub use client::{DEFAULT_API_URL, MAX_DOWNLOAD, TelegramClient};
pub use error::BuildError;

/// The Telegram platform.
pub const TELEGRAM: Platform = Platform::new("telegram");
