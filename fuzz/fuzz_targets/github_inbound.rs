//! GitHub verify + parse on arbitrary input.
//!
//! Each body is checked with a forged signature (verify must refuse it
//! without panicking), then correctly signed as each routed event, as JSON
//! and as a form (verify must pass and parse must not panic).

#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use chat_core::Webhook;
use chat_github::GitHubAdapter;
use chat_github::signature::{SIGNATURE_HEADER, sign};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-github-webhook-secret";

const EVENTS: [&str; 10] = [
    "issue_comment",
    "issues",
    "pull_request",
    "pull_request_review_comment",
    "pull_request_review",
    "discussion_comment",
    "installation",
    "installation_repositories",
    "ping",
    "star",
];

fn adapter() -> &'static GitHubAdapter {
    static ADAPTER: OnceLock<GitHubAdapter> = OnceLock::new();
    ADAPTER.get_or_init(|| {
        match GitHubAdapter::builder()
            .webhook_secret(SECRET)
            .token("github_pat_fuzz")
            .login("fuzz-bot")
            .api_url("http://127.0.0.1:9")
            .build()
        {
            Ok(a) => a,
            Err(e) => panic!("the fuzz adapter must build: {e}"),
        }
    })
}

fn post(signature: &str, event: &str, content_type: &str) -> http::request::Parts {
    let req = http::Request::post("/github")
        .header("content-type", content_type)
        .header("x-github-event", event)
        .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
        .header(SIGNATURE_HEADER, signature);
    match req.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => panic!("static headers are valid: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let a = adapter();
    let body = Bytes::copy_from_slice(data);

    let forged = post(&format!("sha256={}", "0".repeat(64)), "issue_comment", "application/json");
    assert!(a.verify(&forged, &body).is_err());

    let signature = sign(SECRET, &body);
    for event in EVENTS {
        for content_type in ["application/json", "application/x-www-form-urlencoded"] {
            let signed = post(&signature, event, content_type);
            if a.verify(&signed, &body).is_ok() {
                let _ = a.parse(&signed, &body);
            }
        }
    }
});
