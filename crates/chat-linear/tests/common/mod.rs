//! Shared test support: a signed-delivery builder and payloads built from the
//! fields of Linear's webhook payload types. The fake Linear GraphQL API is
//! chat-testkit's `FakeLinear`.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value
)]

pub mod payloads;

use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use chat_linear::{LinearAdapter, LinearAdapterBuilder, signature};

/// The webhook signing secret of every test adapter.
pub const SECRET: &str = "lin_wh_test_secret_5f1c";
/// The fixed "now" of every test adapter, in Unix milliseconds.
pub const NOW_MS: u64 = 1_760_000_000_000;
/// The organization (tenant) of every payload.
pub const ORG: &str = "8f0b0c1e-1d7e-4b7a-9f7e-3d1c0a9b2e01";
/// Our app user.
pub const APP_USER: &str = "a1b2c3d4-0000-4000-8000-00000000a99e";
/// A human.
pub const USER: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
/// The issue everything happens on.
pub const ISSUE: &str = "5b3a8e3c-2d4f-4a6b-9c1d-0e2f3a4b5c6d";
/// The agent session.
pub const SESSION: &str = "d3f1a2b4-6c8e-4f0a-9b1c-2e3d4f5a6b7c";

/// A builder with the test secret, an OAuth token, our app user and a clock
/// fixed at [`NOW_MS`].
pub fn builder() -> LinearAdapterBuilder {
    LinearAdapter::builder()
        .signing_secret(SECRET)
        .access_token("lin_oauth_test_token")
        .app_user_id(APP_USER)
        .clock(|| UNIX_EPOCH + Duration::from_millis(NOW_MS))
}

/// The default test adapter.
pub fn adapter() -> LinearAdapter {
    builder().build().unwrap()
}

/// Request parts for `body`, signed with `secret`, with a delivery id.
pub fn parts_signed_with(
    secret: &str,
    body: &[u8],
    delivery: Option<&str>,
) -> http::request::Parts {
    let mut req = http::Request::post("/linear")
        .header("content-type", "application/json; charset=utf-8")
        .header("user-agent", "Linear-Webhook")
        .header(signature::SIGNATURE_HEADER, signature::sign(secret, body));
    if let Some(d) = delivery {
        req = req.header(signature::DELIVERY_HEADER, d);
    }
    req.body(()).unwrap().into_parts().0
}

/// Request parts for `body`, signed with the test secret.
pub fn parts(body: &[u8]) -> http::request::Parts {
    parts_signed_with(SECRET, body, Some("234d1a4e-b617-4388-90fe-adc3633d6b72"))
}

/// A full signed request, for the runtime.
pub fn request(body: &Bytes, delivery: &str) -> http::Request<Bytes> {
    http::Request::from_parts(
        parts_signed_with(SECRET, body, Some(delivery)),
        body.clone(),
    )
}

/// `value` as a compact JSON body.
pub fn body(value: &serde_json::Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).unwrap())
}
