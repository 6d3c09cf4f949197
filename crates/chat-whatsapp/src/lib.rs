//! # chat-whatsapp
//!
//! The WhatsApp [`PlatformAdapter`](chat_core::PlatformAdapter) for chat-rs,
//! on the [WhatsApp Business Cloud API](https://developers.facebook.com/docs/whatsapp/cloud-api):
//!
//! * **Verify** ([`signature`]): every delivery's `X-Hub-Signature-256`
//!   (HMAC-SHA256 of the raw body with the app secret), in constant time,
//!   before anything is parsed; the subscription handshake (`GET` with
//!   `hub.mode=subscribe`, `hub.verify_token`, `hub.challenge`) answered
//!   with the challenge when the verify token matches.
//! * **Parse**: one delivery may carry several messages and statuses, each
//!   an event of its own ([`Inbound::Events`](chat_core::Inbound::Events)):
//!   text and media messages, button and list replies (actions), reactions;
//!   statuses (sent, delivered, read, failed) are observable through
//!   [`routes::status`] and never run a handler otherwise. The conversation
//!   is the user's chat with a business phone number (channel lock scope);
//!   the dedupe key is the message's `wamid`, kept for [`DEDUPE_TTL`] (Meta
//!   retries a delivery for up to seven days).
//! * **Answer**: a 200 for what was taken; a 503 or 500 makes Meta retry.
//! * **Talk back** ([`WhatsAppClient`]): text in WhatsApp's own formatting
//!   ([`mod@format`], split at 4,096 characters); cards as reply buttons or a
//!   list ([`interactive`], WhatsApp's limits checked before the call);
//!   reactions; read receipts with the typing indicator; media uploads;
//!   templates ([`WhatsAppAdapter::send_template`]) — the way to write to a
//!   user after the 24-hour customer-service window closed. Another message
//!   to a user this process last heard from over 24 hours ago is
//!   [`AdapterError::WindowClosed`](chat_core::AdapterError::WindowClosed)
//!   before any call; one the Cloud API accepts and then refuses comes back
//!   as a `failed` [`Status`] whose [`window_closed`](Status::window_closed)
//!   is true.
//!   WhatsApp messages cannot be edited or deleted by the API: a streamed
//!   answer is posted whole, and an edit is a typed `Unsupported`.
//!
//! ```
//! use bytes::Bytes;
//! use chat_core::{EventKind, Inbound, Webhook};
//! use chat_whatsapp::{WhatsAppAdapter, signature::{SIGNATURE_HEADER, sign}};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let whatsapp = WhatsAppAdapter::builder()
//!     .app_secret("app-secret")
//!     .verify_token("verify-me")
//!     .access_token("EAAG-access-token")
//!     .phone_number_id("106540352242922")
//!     .build()?;
//!
//! let body = Bytes::from_static(br#"{"object": "whatsapp_business_account", "entry": [{
//!     "id": "102290129340398", "changes": [{"field": "messages", "value": {
//!       "messaging_product": "whatsapp",
//!       "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
//!       "contacts": [{"profile": {"name": "Ada"}, "wa_id": "16505551234"}],
//!       "messages": [{"from": "16505551234", "id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=",
//!         "timestamp": "1749416383", "type": "text", "text": {"body": "hey"}}]}}]}]}"#);
//! let (parts, ()) = http::Request::post("/webhooks/whatsapp")
//!     .header(SIGNATURE_HEADER, sign("app-secret", &body))
//!     .body(())?
//!     .into_parts();
//! whatsapp.verify(&parts, &body)?;
//! let Inbound::Event(event) = whatsapp.parse(&parts, &body)? else { panic!("one event") };
//! assert_eq!(event.thread.to_string(), "whatsapp:106540352242922:16505551234:");
//! let EventKind::Message(message) = &event.kind else { panic!("a message") };
//! assert_eq!(message.text, "hey");
//!
//! // A body signed with another secret is refused before it is parsed.
//! let (forged, ()) = http::Request::post("/webhooks/whatsapp")
//!     .header(SIGNATURE_HEADER, sign("guess", &body))
//!     .body(())?
//!     .into_parts();
//! assert!(whatsapp.verify(&forged, &body).is_err());
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod adapter;
mod client;
mod error;
pub mod format;
mod inbound;
pub mod interactive;
mod payload;
pub mod signature;
mod status;

use chat_core::Platform;

pub use adapter::{DEDUPE_TTL, MAX_DOWNLOAD, Template, WhatsAppAdapter, WhatsAppAdapterBuilder};
pub use client::{DEFAULT_API_URL, SERVICE_WINDOW, WINDOW_CLOSED_CODE, WhatsAppClient};
pub use error::BuildError;
pub use inbound::STATUS_EVENT;
pub use status::{Status, StatusError};

/// The WhatsApp platform.
pub const WHATSAPP: Platform = Platform::new("whatsapp");

/// Routes for what only WhatsApp sends.
pub mod routes {
    use chat_core::Route;

    /// A message status (`sent`, `delivered`, `read`, `failed`) of a message
    /// the bot sent: the event is an [`OtherEvent`](chat_core::OtherEvent)
    /// named [`STATUS_EVENT`](crate::STATUS_EVENT), read with
    /// [`Status::of`](crate::Status::of). Unrouted, statuses are
    /// acknowledged and recorded as ignored.
    pub fn status() -> Route {
        Route::other(crate::STATUS_EVENT)
    }
}
