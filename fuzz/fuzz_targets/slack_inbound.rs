//! Slack verify + parse on arbitrary input.
//!
//! The first byte picks the content type; the rest is the body. Each body is
//! checked twice: with a garbage signature (verify must refuse it without
//! panicking) and correctly signed (so parse runs on it, and must not panic).

#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::Webhook;
use chat_slack::{SlackAdapter, signature};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-signing-secret";
const NOW: u64 = 1_700_000_000;

fn adapter() -> &'static SlackAdapter {
    static ADAPTER: OnceLock<SlackAdapter> = OnceLock::new();
    ADAPTER.get_or_init(|| {
        match SlackAdapter::builder()
            .signing_secret(SECRET)
            .bot_token("xoxb-fuzz")
            .bot_user_id("UBOT")
            .bot_id("BBOT")
            .api_base_url("http://127.0.0.1:9/api")
            .clock(|| UNIX_EPOCH + Duration::from_secs(NOW))
            .build()
        {
            Ok(a) => a,
            Err(e) => panic!("the fuzz adapter must build: {e}"),
        }
    })
}

fn request(content_type: Option<&str>, signature: &str) -> http::request::Parts {
    let mut req = http::Request::post("/slack/events")
        .header(signature::TIMESTAMP_HEADER, NOW.to_string())
        .header(signature::SIGNATURE_HEADER, signature);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    match req.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => panic!("static headers are valid: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let content_type = match selector % 3 {
        0 => Some("application/json"),
        1 => Some("application/x-www-form-urlencoded"),
        _ => None,
    };
    let a = adapter();
    let body = Bytes::copy_from_slice(body);

    let forged = request(content_type, "v0=0000000000000000000000000000000000000000000000000000000000000000");
    assert!(a.verify(&forged, &body).is_err());

    let signed = request(content_type, &signature::sign(SECRET, &NOW.to_string(), &body));
    if a.verify(&signed, &body).is_ok() {
        let _ = a.parse(&signed, &body);
    }
});
