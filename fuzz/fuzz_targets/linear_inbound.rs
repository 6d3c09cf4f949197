//! Linear verify + parse on arbitrary input.
//!
//! Each body is checked twice: with a forged signature (verify must refuse it
//! without panicking), and correctly signed, where verify must not panic and
//! parse runs whether or not the timestamp window passed (so the parser sees
//! every body, not only fresh ones).

#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::Webhook;
use chat_linear::{LinearAdapter, signature};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-linear-signing-secret";
const NOW_MS: u64 = 1_760_000_000_000;

fn adapter() -> &'static LinearAdapter {
    static ADAPTER: OnceLock<LinearAdapter> = OnceLock::new();
    ADAPTER.get_or_init(|| {
        match LinearAdapter::builder()
            .signing_secret(SECRET)
            .access_token("lin_oauth_fuzz")
            .app_user_id("app-user")
            .mention_name("helper")
            .endpoint("http://127.0.0.1:9/graphql")
            .clock(|| UNIX_EPOCH + Duration::from_millis(NOW_MS))
            .build()
        {
            Ok(a) => a,
            Err(e) => panic!("the fuzz adapter must build: {e}"),
        }
    })
}

fn request(signature: &str) -> http::request::Parts {
    let req = http::Request::post("/linear")
        .header("content-type", "application/json; charset=utf-8")
        .header(signature::DELIVERY_HEADER, "234d1a4e-b617-4388-90fe-adc3633d6b72")
        .header(signature::SIGNATURE_HEADER, signature);
    match req.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => panic!("static headers are valid: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let a = adapter();
    let body = Bytes::copy_from_slice(data);

    let forged = request(&"0".repeat(64));
    assert!(a.verify(&forged, &body).is_err());

    let signed = request(&signature::sign(SECRET, &body));
    let _ = a.verify(&signed, &body);
    let _ = a.parse(&signed, &body);
});
