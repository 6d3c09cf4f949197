//! Shared helpers: an adapter on a fixed clock, and signed requests.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use chat_core::Webhook as _;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::{Event, Inbound, WebhookError};
use chat_slack::{SlackAdapter, SlackAdapterBuilder, signature};
use http::request::Parts;
use serde_json::{Value, json};

pub const SECRET: &str = "e3b0c44298fc1c149afbf4c8996fb924";
pub const NOW: u64 = 1_700_000_000;
pub const TEAM: &str = "T0001";
pub const BOT_USER: &str = "UBOT";
pub const BOT_ID: &str = "BBOT";

/// An adapter with a fixed clock and configured bot ids; its Web API points
/// at a closed port.
pub fn builder() -> SlackAdapterBuilder {
    SlackAdapter::builder()
        .signing_secret(SECRET)
        .bot_token("xoxb-test-token")
        .bot_user_id(BOT_USER)
        .bot_id(BOT_ID)
        .api_base_url("http://127.0.0.1:9/api")
        .clock(|| UNIX_EPOCH + Duration::from_secs(NOW))
}

pub fn adapter() -> SlackAdapter {
    builder().build().unwrap()
}

/// A POST signed now with `SECRET`, with extra headers.
pub fn signed(content_type: Option<&str>, body: &[u8], extra: &[(&str, &str)]) -> (Parts, Bytes) {
    signed_at(NOW, content_type, body, extra)
}

pub fn signed_at(
    ts: u64,
    content_type: Option<&str>,
    body: &[u8],
    extra: &[(&str, &str)],
) -> (Parts, Bytes) {
    let ts = ts.to_string();
    let mut req = http::Request::post("/slack/events")
        .header(signature::TIMESTAMP_HEADER, &ts)
        .header(
            signature::SIGNATURE_HEADER,
            signature::sign(SECRET, &ts, body),
        );
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let (parts, ()) = req.body(()).unwrap().into_parts();
    (parts, Bytes::copy_from_slice(body))
}

pub fn json_request(body: &Value) -> (Parts, Bytes) {
    signed(
        Some("application/json"),
        &serde_json::to_vec(body).unwrap(),
        &[],
    )
}

pub fn form_request(body: &str) -> (Parts, Bytes) {
    signed(
        Some("application/x-www-form-urlencoded"),
        body.as_bytes(),
        &[],
    )
}

/// An interactivity delivery: `payload=<url-encoded JSON>`.
pub fn payload_request(payload: &Value) -> (Parts, Bytes) {
    let encoded: String = url_encode(&payload.to_string());
    form_request(&format!("payload={encoded}"))
}

pub fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Verifies, then parses.
pub fn deliver(
    adapter: &SlackAdapter,
    (parts, body): &(Parts, Bytes),
) -> Result<Inbound, WebhookError> {
    adapter.verify(parts, body)?;
    adapter.parse(parts, body)
}

pub fn event_of(inbound: Inbound) -> Event {
    match inbound {
        Inbound::Event(e) => *e,
        other => panic!("expected an event, got {other:?}"),
    }
}

pub fn ignored_reason(inbound: Inbound) -> String {
    match inbound {
        Inbound::Ignored { reason } => reason,
        other => panic!("expected an ignore, got {other:?}"),
    }
}

/// An `event_callback` envelope around `event`, as Slack sends it.
pub fn callback(event_id: &str, event: Value) -> Value {
    let mut body = json!({
        "token": "XXYYZZ",
        "team_id": TEAM,
        "api_app_id": "A0APP",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1_700_000_000,
        "authorizations": [{
            "enterprise_id": null,
            "team_id": TEAM,
            "user_id": BOT_USER,
            "is_bot": true,
            "is_enterprise_install": false
        }],
        "is_ext_shared_channel": false,
        "event_context": "4-eyJldCI6Im1lc3NhZ2UiLCJ0aWQiOiJUMDAwMSJ9"
    });
    body["event"] = event;
    body
}
