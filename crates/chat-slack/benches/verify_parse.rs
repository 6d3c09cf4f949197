//! Verify + parse of a typical 2 KB Slack `app_mention` delivery: the work the
//! Slack adapter does on the ack path before any state is touched.
//!
//! `cargo bench -p chat-slack --bench verify_parse` (or `cargo xtask bench micro`).

use chat_core::Webhook as _;
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::Inbound;
use chat_slack::{SlackAdapter, signature};
use divan::{Bencher, black_box};

fn main() {
    divan::main();
}

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const TS: u64 = 1_700_000_000;

/// An `app_mention` in a thread as Slack sends it, with rich-text blocks,
/// padded to about 2 KB by its text.
fn body() -> Bytes {
    let text = "could you summarize the thread so far and list the open questions about the \
                deploy, the rollback plan, the latency budget for staging and who owns each \
                item before friday please, with links to the dashboards and the runbook, and \
                flag anything that blocks the release train or needs a decision from the \
                on-call lead this week; also note which alerts fired overnight, whether the \
                canary looked healthy, and what we still need from the database team before \
                the migration, thanks a lot for the help with all of this";
    let json = format!(
        r#"{{"token":"ZZZZZZWSxiZZZ2yIvs3peJ","team_id":"T061EG9R6","context_team_id":"T061EG9R6","context_enterprise_id":null,"api_app_id":"A0MDYCDME","event":{{"user":"U061F7AUR","type":"app_mention","ts":"1700000000.000200","client_msg_id":"7e5e4a4c-0b8c-4b6d-9f3e-2f1a0c9d8e7b","text":"<@U0LAN0Z89> {text}","team":"T061EG9R6","thread_ts":"1699999000.000100","parent_user_id":"U061F7AUR","blocks":[{{"type":"rich_text","block_id":"Xq9tZ","elements":[{{"type":"rich_text_section","elements":[{{"type":"user","user_id":"U0LAN0Z89"}},{{"type":"text","text":" {text}"}}]}}]}}],"channel":"C0LAN2Q65","event_ts":"1700000000.000200"}},"type":"event_callback","event_id":"Ev0LAN670R","event_time":1700000000,"authorizations":[{{"enterprise_id":null,"team_id":"T061EG9R6","user_id":"U0LAN0Z89","is_bot":true,"is_enterprise_install":false}}],"is_ext_shared_channel":false,"event_context":"4-eyJldCI6ImFwcF9tZW50aW9uIiwidGlkIjoiVDA2MUVHOVI2IiwiYWlkIjoiQTBNRFlDRE1FIiwiY2lkIjoiQzBMQU4yUTY1In0"}}"#
    );
    Bytes::from(json)
}

struct Fixture {
    adapter: SlackAdapter,
    parts: http::request::Parts,
    body: Bytes,
}

fn fixture() -> Fixture {
    let adapter = SlackAdapter::builder()
        .signing_secret(SECRET)
        .bot_token("xoxb-bench")
        .bot_user_id("U0LAN0Z89")
        .clock(|| UNIX_EPOCH + Duration::from_secs(TS))
        .build()
        .unwrap_or_else(|e| panic!("adapter: {e}"));
    let body = body();
    let ts = TS.to_string();
    let (parts, ()) = http::Request::post("/slack/events")
        .header("content-type", "application/json")
        .header(signature::TIMESTAMP_HEADER, &ts)
        .header(
            signature::SIGNATURE_HEADER,
            signature::sign(SECRET, &ts, &body),
        )
        .body(())
        .unwrap_or_else(|e| panic!("request: {e}"))
        .into_parts();
    let f = Fixture {
        adapter,
        parts,
        body,
    };
    assert!(
        (1900..=2200).contains(&f.body.len()),
        "the payload is {} bytes",
        f.body.len()
    );
    assert!(f.adapter.verify(&f.parts, &f.body).is_ok(), "verify failed");
    assert!(
        matches!(f.adapter.parse(&f.parts, &f.body), Ok(Inbound::Event(_))),
        "parse did not give an event"
    );
    f
}

/// What the ack path does: verify the signature, then parse into an event.
#[divan::bench]
fn verify_and_parse(bencher: Bencher<'_, '_>) {
    let f = fixture();
    bencher
        .counter(divan::counter::BytesCount::new(f.body.len()))
        .bench_local(|| {
            let verified = f.adapter.verify(black_box(&f.parts), black_box(&f.body));
            let parsed = f.adapter.parse(&f.parts, &f.body);
            black_box((verified.is_ok(), parsed.is_ok()))
        });
}

/// The HMAC-SHA256 check alone.
#[divan::bench]
fn verify(bencher: Bencher<'_, '_>) {
    let f = fixture();
    bencher.bench_local(|| {
        black_box(
            f.adapter
                .verify(black_box(&f.parts), black_box(&f.body))
                .is_ok(),
        )
    });
}

/// The JSON parse into a normalized event alone.
#[divan::bench]
fn parse(bencher: Bencher<'_, '_>) {
    let f = fixture();
    bencher.bench_local(|| {
        black_box(
            f.adapter
                .parse(black_box(&f.parts), black_box(&f.body))
                .is_ok(),
        )
    });
}
