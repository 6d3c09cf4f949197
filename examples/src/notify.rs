//! `POST /notify`: a message posted into a conversation outside any webhook
//! — the way a cron job, a CI hook or an approval reaches a channel — once
//! per idempotency key, on any replica.
//!
//! ```
//! use examples::notify::Notify;
//! let n: Notify = serde_json::from_str(
//!     r#"{"platform":"slack","tenant":"T1","channel":"C1","text":"deployed","key":"deploy-42"}"#,
//! ).unwrap();
//! assert_eq!(n.thread().unwrap().to_string(), "slack:T1:C1:");
//! ```

use chat_core::{AdapterError, Platform, ThreadRef};
use chat_runtime::Bot;
use serde::{Deserialize, Serialize};

/// The body of `POST /notify`.
#[derive(Debug, Clone, Deserialize)]
pub struct Notify {
    /// `slack`, `linear`, …
    pub platform: String,
    /// The workspace (Slack team id); empty in single-token mode is fine.
    #[serde(default)]
    pub tenant: String,
    /// The channel (Slack `C…`).
    pub channel: String,
    /// A thread in it (Slack: the root's `ts`); none for a new message.
    #[serde(default)]
    pub thread: String,
    /// What to post.
    pub text: String,
    /// The idempotency key: a retry with the same key posts nothing more.
    #[serde(default, alias = "idempotency_key")]
    pub key: Option<String>,
}

impl Notify {
    /// Where it goes.
    ///
    /// # Errors
    /// An unknown platform name.
    pub fn thread(&self) -> Result<ThreadRef, String> {
        let platform = Platform::parse(&self.platform).map_err(|e| e.to_string())?;
        Ok(ThreadRef::new(
            platform,
            self.tenant.as_str(),
            self.channel.as_str(),
            self.thread.as_str(),
        ))
    }
}

/// What `POST /notify` answers when it posted (or found the post of an
/// earlier call with the same key).
#[derive(Debug, Clone, Serialize)]
pub struct Sent {
    /// Always `true`.
    pub ok: bool,
    /// The conversation.
    pub channel: String,
    /// The message's platform id (Slack `ts`).
    pub id: String,
}

/// Why `POST /notify` did not post.
#[derive(Debug)]
pub enum NotifyError {
    /// The body is not a notification (400).
    BadRequest(String),
    /// The platform refused or failed (502).
    Platform(AdapterError),
}

/// Whether `given` is `token`, compared in constant time.
pub fn token_matches(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Posts a notification: `body` is a [`Notify`]; `header_key` an
/// `Idempotency-Key` header, used when the body names no key.
///
/// # Errors
/// [`NotifyError`].
pub async fn post(bot: &Bot, body: &[u8], header_key: Option<String>) -> Result<Sent, NotifyError> {
    let notify: Notify =
        serde_json::from_slice(body).map_err(|e| NotifyError::BadRequest(e.to_string()))?;
    if notify.text.trim().is_empty() || notify.channel.is_empty() {
        return Err(NotifyError::BadRequest(
            "a notification needs a channel and a text".to_owned(),
        ));
    }
    let target = notify.thread().map_err(NotifyError::BadRequest)?;
    let thread = bot.thread(&target).map_err(NotifyError::Platform)?;
    let key = notify.key.clone().or(header_key).filter(|k| !k.is_empty());
    let text = notify.text;
    let sent = match key {
        Some(key) => thread.post_once(&key, text).await,
        None => thread.post(text).await,
    }
    .map_err(NotifyError::Platform)?;
    Ok(Sent {
        ok: true,
        channel: sent.thread.channel.clone(),
        id: sent.id().to_owned(),
    })
}
