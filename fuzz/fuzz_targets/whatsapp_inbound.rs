//! WhatsApp verify + parse on arbitrary input.
//!
//! Each body is checked three ways: with a forged signature (verify must
//! refuse it without panicking), correctly signed (verify must pass and
//! parse must not panic), and as the query of a subscription handshake
//! (verify and parse must not panic).

#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use chat_core::Webhook;
use chat_whatsapp::WhatsAppAdapter;
use chat_whatsapp::signature::{SIGNATURE_HEADER, sign};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-whatsapp-app-secret";

fn adapter() -> &'static WhatsAppAdapter {
    static ADAPTER: OnceLock<WhatsAppAdapter> = OnceLock::new();
    ADAPTER.get_or_init(|| {
        match WhatsAppAdapter::builder()
            .app_secret(SECRET)
            .verify_token("fuzz-verify")
            .access_token("EAAG-fuzz")
            .phone_number_id("106540352242922")
            .api_url("http://127.0.0.1:9/v21.0")
            .build()
        {
            Ok(a) => a,
            Err(e) => panic!("the fuzz adapter must build: {e}"),
        }
    })
}

fn post(signature: &str) -> http::request::Parts {
    let req = http::Request::post("/whatsapp")
        .header("content-type", "application/json")
        .header(SIGNATURE_HEADER, signature);
    match req.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => panic!("static headers are valid: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let a = adapter();
    let body = Bytes::copy_from_slice(data);

    let forged = post(&format!("sha256={}", "0".repeat(64)));
    assert!(a.verify(&forged, &body).is_err());

    let signed = post(&sign(SECRET, &body));
    if a.verify(&signed, &body).is_ok() {
        let _ = a.parse(&signed, &body);
    }

    // The same bytes as a handshake's query string.
    let query: String = String::from_utf8_lossy(data)
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .collect();
    if let Ok(req) = http::Request::get(format!("/whatsapp?{query}")).body(()) {
        let (parts, ()) = req.into_parts();
        if a.verify(&parts, &Bytes::new()).is_ok() {
            let _ = a.parse(&parts, &Bytes::new());
        }
    }
});
