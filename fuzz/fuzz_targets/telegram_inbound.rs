//! Telegram verify + parse on arbitrary input.
//!
//! Each body is checked twice: with a wrong secret token (verify must refuse
//! it without panicking), and with the right one, where verify must pass and
//! parse must not panic.

#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use chat_core::Webhook;
use chat_telegram::TelegramAdapter;
use chat_telegram::secret::SECRET_HEADER;
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-telegram-secret_token";

fn adapter() -> &'static TelegramAdapter {
    static ADAPTER: OnceLock<TelegramAdapter> = OnceLock::new();
    ADAPTER.get_or_init(|| {
        match TelegramAdapter::builder()
            .bot_token("777000:AAFuzzToken")
            .secret_token(SECRET)
            .bot_username("fuzz_bot")
            .api_url("http://127.0.0.1:9")
            .build()
        {
            Ok(a) => a,
            Err(e) => panic!("the fuzz adapter must build: {e}"),
        }
    })
}

fn request(token: &str) -> http::request::Parts {
    let req = http::Request::post("/telegram")
        .header("content-type", "application/json")
        .header(SECRET_HEADER, token);
    match req.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => panic!("static headers are valid: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let a = adapter();
    let body = Bytes::copy_from_slice(data);

    let forged = request("not-the-secret");
    assert!(a.verify(&forged, &body).is_err());

    let signed = request(SECRET);
    if a.verify(&signed, &body).is_ok() {
        let _ = a.parse(&signed, &body);
    }
});
