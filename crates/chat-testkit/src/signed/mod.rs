//! Signed webhook deliveries, as Slack and Linear send them: each builder
//! returns a ready `http::Request<Bytes>` — path, headers, signature and the
//! exact body bytes it was signed over — to hand to
//! [`Bot::handle`](https://docs.rs/chat-runtime) or to a mounted webhook.
//!
//! * [`SlackDeliveries`]: Events API callbacks (`app_mention`, `message`, any
//!   event), retries, slash commands, `block_actions`, `view_submission`.
//! * [`LinearDeliveries`]: agent-session events (`created`, `prompted`, a stop
//!   request), comments, reactions and any other webhook body.
//! * [`TelegramDeliveries`]: updates (messages, topics, edits, documents,
//!   button clicks, reactions) with the webhook's secret token.
//! * [`WhatsAppDeliveries`]: Cloud API notifications (texts, button and list
//!   replies, reactions, documents, statuses, several messages in one)
//!   signed with the app secret, and the subscription handshake.
//! * [`GitHubDeliveries`]: webhook events (comments, review comments, issues
//!   opened, any event; `ping`) signed with the webhook secret, as JSON or as
//!   a form.
//!
//! The default identities match the fakes: Slack's team and bot user are
//! [`FakeSlack::TEAM_ID`](crate::FakeSlack::TEAM_ID) and
//! [`FakeSlack::BOT_USER_ID`](crate::FakeSlack::BOT_USER_ID), Linear's app user
//! [`FakeLinear::VIEWER_ID`](crate::FakeLinear::VIEWER_ID).
//!
//! ```
//! use chat_testkit::signed::SlackDeliveries;
//!
//! let slack = SlackDeliveries::new("my-signing-secret");
//! let request = slack.app_mention("Ev01", "1700000000.000100", None, &slack.mentioning("hi"));
//! assert_eq!(request.uri(), "/webhooks/slack");
//! assert!(request.headers().contains_key("x-slack-signature"));
//! ```

mod github;
mod linear;
mod slack;
mod telegram;
mod whatsapp;

use std::time::{SystemTime, UNIX_EPOCH};

use ring::hmac;

pub use github::GitHubDeliveries;
pub use linear::LinearDeliveries;
pub use slack::SlackDeliveries;
pub use telegram::{TelegramDeliveries, entities_of as telegram_entities};
pub use whatsapp::WhatsAppDeliveries;

/// Hex HMAC-SHA256 of `message` under `secret`.
fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = hmac::Context::with_key(&key);
    for part in parts {
        ctx.update(part);
    }
    hex::encode(ctx.sign().as_ref())
}

/// Now, in Unix milliseconds (wall clock: platforms sign with real time).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A POST of `body` to `path` with `headers`.
fn post(path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> http::Request<bytes::Bytes> {
    let mut request = http::Request::new(bytes::Bytes::from(body));
    *request.method_mut() = http::Method::POST;
    *request.uri_mut() = http::Uri::try_from(path).unwrap_or_default();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::try_from(*name),
            http::HeaderValue::try_from(*value),
        ) {
            request.headers_mut().append(name, value);
        }
    }
    request
}
