//! [`Status`]: what became of a message the bot sent — `sent`, `delivered`,
//! `read`, or `failed` with the errors that say why
//! ([Status messages](https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/components#statuses-object)).
//!
//! A message the Cloud API accepted may still fail: one sent after the
//! customer-service window closed is accepted, and then reported `failed`
//! with error 131047. Route statuses ([`routes::status`](crate::routes::status))
//! to learn of it, and send a [`Template`](crate::Template) instead.

use chat_core::{Event, EventKind};
use serde::Deserialize;

use crate::client::WINDOW_CLOSED_CODE;
use crate::inbound::STATUS_EVENT;

/// A status of a message the bot sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Status {
    /// The message's id (`wamid`).
    #[serde(rename = "id")]
    pub message_id: String,
    /// `sent`, `delivered`, `read` or `failed`.
    pub status: String,
    /// The user's WhatsApp id.
    #[serde(rename = "recipient_id", default)]
    pub recipient: String,
    /// Why a `failed` message failed.
    #[serde(default)]
    pub errors: Vec<StatusError>,
}

/// One reason a message failed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct StatusError {
    /// The Cloud API's error code (131047: the window had closed).
    pub code: i64,
    /// Its title.
    #[serde(default)]
    pub title: String,
}

impl Status {
    /// The status an event carries, when it is one ([`STATUS_EVENT`]).
    ///
    /// ```
    /// use chat_core::{Event, EventKind, OtherEvent, ThreadRef};
    /// use chat_whatsapp::{STATUS_EVENT, Status, WHATSAPP};
    /// use serde_json::json;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let failed = json!({"id": "wamid.1", "status": "failed", "recipient_id": "16505551234",
    ///     "errors": [{"code": 131047, "title": "Re-engagement message"}]});
    /// let event = Event::new("s", "s", ThreadRef::new(WHATSAPP, "1", "16505551234", ""),
    ///     EventKind::Other(OtherEvent::new(STATUS_EVENT, failed)));
    /// let status = Status::of(&event).ok_or("not a status")?;
    /// assert_eq!(status.status, "failed");
    /// assert!(status.window_closed());
    /// # Ok(()) }
    /// ```
    pub fn of(event: &Event) -> Option<Self> {
        match &event.kind {
            EventKind::Other(o) if o.name == STATUS_EVENT => {
                serde_json::from_value(o.data.clone()).ok()
            }
            _ => None,
        }
    }

    /// Whether the message failed because the user's 24-hour window had
    /// closed (error 131047): only a template gets through now.
    pub fn window_closed(&self) -> bool {
        self.errors.iter().any(|e| e.code == WINDOW_CLOSED_CODE)
    }
}
