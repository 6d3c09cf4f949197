//! The fake Slack Web API, driven by chat-slack's client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use chat_core::AdapterError;
use chat_slack::SlackClient;
use chat_testkit::{FakeSlack, RetryAfter, SlackReply};
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};
use serde_json::json;

fn client(fake: &FakeSlack) -> SlackClient {
    SlackClient::builder("xoxb-fake")
        .base_url(fake.base_url())
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_method_succeeds_by_default_and_every_call_is_recorded() {
    let fake = FakeSlack::start().await;
    assert_eq!(
        fake.base_url(),
        format!("http://127.0.0.1:{}/api", fake.addr().port())
    );
    let c = client(&fake);

    let first = c.post_message("C1", Some("1.0"), "one").await.unwrap();
    let second = c.post_message("C1", None, "two").await.unwrap();
    assert_eq!(first.ts, "1700000100.000100");
    assert_eq!(second.ts, "1700000100.000101", "each post gets its own ts");
    assert_eq!(first.channel, "C1");
    c.update_message("C1", &first.ts, "one, edited")
        .await
        .unwrap();
    c.delete_message("C1", &second.ts).await.unwrap();
    c.add_reaction("C1", &first.ts, ":eyes:").await.unwrap();
    c.set_assistant_status("C1", "1.0", "is thinking…")
        .await
        .unwrap();
    let id = c.auth_test().await.unwrap();
    assert_eq!(id.user_id.as_deref(), Some(FakeSlack::BOT_USER_ID));
    assert_eq!(id.bot_id.as_deref(), Some(FakeSlack::BOT_ID));
    assert_eq!(id.team_id.as_deref(), Some(FakeSlack::TEAM_ID));
    let view = c
        .open_view("tr1", &json!({"type": "modal", "blocks": []}))
        .await
        .unwrap();
    assert!(view["view"]["id"].is_string());
    assert_eq!(view["view"]["type"], "modal");
    let other = c
        .call("conversations.info", &json!({"channel": "C1"}))
        .await;
    assert_eq!(other.unwrap(), json!({"ok": true}));

    let calls = fake.calls();
    let methods: Vec<&str> = calls.iter().map(|c| c.method.as_str()).collect();
    assert_eq!(
        methods,
        [
            "chat.postMessage",
            "chat.postMessage",
            "chat.update",
            "chat.delete",
            "reactions.add",
            "assistant.threads.setStatus",
            "auth.test",
            "views.open",
            "conversations.info",
        ]
    );
    assert!(calls.iter().all(|c| c.ok && c.status == StatusCode::OK));
    assert!(
        calls
            .iter()
            .all(|c| c.authorization.as_deref() == Some("Bearer xoxb-fake"))
    );
    assert_eq!(
        calls[0].body,
        json!({"channel": "C1", "thread_ts": "1.0", "text": "one"})
    );
    assert_eq!(
        calls[0].content_type.as_deref(),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(
        calls[0].raw_body,
        serde_json::to_vec(&calls[0].body).unwrap()
    );
    assert_eq!(fake.posts().len(), 2);
    assert_eq!(fake.calls_of("chat.update")[0].body["text"], "one, edited");
}

#[tokio::test]
async fn a_method_fails_n_times_then_succeeds() {
    let fake = FakeSlack::start().await;
    fake.fail("chat.postMessage", "channel_not_found", 2);
    let c = client(&fake);
    for _ in 0..2 {
        let err = c.post_message("C404", None, "x").await.unwrap_err();
        assert!(
            matches!(&err, AdapterError::Api { code } if code == "channel_not_found"),
            "{err:?}"
        );
    }
    c.post_message("C404", None, "x").await.unwrap();
    // Scripts are per method.
    c.update_message("C1", "1.0", "y").await.unwrap();

    let posts = fake.calls_of("chat.postMessage");
    let oks: Vec<bool> = posts.iter().map(|c| c.ok).collect();
    assert_eq!(oks, [false, false, true]);
    assert!(posts.iter().all(|c| c.status == StatusCode::OK));
    assert_eq!(fake.posts().len(), 1);
}

#[tokio::test]
async fn rate_limits_carry_the_wait_in_the_header_or_the_body() {
    let fake = FakeSlack::start().await;
    fake.rate_limit("chat.postMessage", RetryAfter::Header(30), 1);
    fake.rate_limit("chat.update", RetryAfter::Body(20), 1);
    let c = client(&fake).with_timeout(Duration::from_secs(5));
    let err = c.post_message("C1", None, "x").await.unwrap_err();
    assert!(
        matches!(err, AdapterError::RateLimited { retry_after } if retry_after == Duration::from_secs(30)),
        "{err:?}"
    );
    let err = c.update_message("C1", "1.0", "x").await.unwrap_err();
    assert!(
        matches!(err, AdapterError::RateLimited { retry_after } if retry_after == Duration::from_secs(20)),
        "{err:?}"
    );
    let limited = &fake.calls()[..];
    assert!(
        limited
            .iter()
            .all(|c| c.status == StatusCode::TOO_MANY_REQUESTS && !c.ok)
    );
    // Used up: the next calls succeed.
    c.post_message("C1", None, "x").await.unwrap();
    c.update_message("C1", "1.0", "x").await.unwrap();
}

#[tokio::test]
async fn rate_limited_n_times_then_success() {
    let fake = FakeSlack::start().await;
    fake.rate_limit("reactions.add", RetryAfter::Body(0), 2);
    client(&fake)
        .add_reaction("C1", "1.0", "eyes")
        .await
        .unwrap();
    let statuses: Vec<StatusCode> = fake
        .calls_of("reactions.add")
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(
        statuses,
        [
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::OK
        ]
    );
}

#[tokio::test]
async fn any_answer_can_be_scripted() {
    let fake = FakeSlack::start().await;
    fake.enqueue(
        "chat.postMessage",
        SlackReply::raw(StatusCode::BAD_GATEWAY, "<html>proxy error</html>"),
    );
    fake.enqueue(
        "chat.postMessage",
        SlackReply::raw(StatusCode::TOO_MANY_REQUESTS, r#"{"retry_after":60}"#)
            .with_header(RETRY_AFTER, HeaderValue::from_static("0")),
    );
    fake.enqueue(
        "chat.postMessage",
        SlackReply::json(&json!({"ok": true, "channel": "C9", "ts": "9.9"})),
    );
    let c = client(&fake);
    let err = c.post_message("C1", None, "x").await.unwrap_err();
    assert!(
        matches!(err, AdapterError::Status(s) if s == StatusCode::BAD_GATEWAY),
        "{err:?}"
    );
    // The 429's header (0 s) wins over its body (60 s); then the scripted post.
    let posted = c.post_message("C1", None, "x").await.unwrap();
    assert_eq!((posted.channel.as_str(), posted.ts.as_str()), ("C9", "9.9"));
    assert_eq!(fake.calls().len(), 3);
    assert_eq!(
        SlackReply::error("x").status(),
        StatusCode::OK,
        "Slack reports errors with a 200"
    );
}

#[tokio::test(start_paused = true)]
async fn waiting_for_calls_is_bounded() {
    let fake = FakeSlack::start().await;
    let waiter = {
        let fake = fake.clone();
        tokio::spawn(async move {
            fake.wait_for_calls("chat.postMessage", 2, Duration::from_secs(60))
                .await
        })
    };
    let c = client(&fake);
    c.post_message("C1", None, "a").await.unwrap();
    c.post_message("C1", None, "b").await.unwrap();
    assert_eq!(waiter.await.unwrap().len(), 2, "woken by the second call");

    let start = tokio::time::Instant::now();
    let calls = fake
        .wait_for_calls("chat.delete", 1, Duration::from_secs(5))
        .await;
    assert!(calls.is_empty());
    assert!(start.elapsed() >= Duration::from_secs(5));
}

#[tokio::test]
async fn clones_share_the_record_and_the_server_stops_with_the_last() {
    let fake = FakeSlack::start().await;
    let clone = fake.clone();
    let c = client(&fake);
    c.post_message("C1", None, "x").await.unwrap();
    assert_eq!(clone.calls().len(), 1);
    drop(clone);
    c.post_message("C1", None, "y").await.unwrap();
    assert_eq!(fake.posts().len(), 2);
    assert!(format!("{fake:?}").contains(fake.base_url()));

    drop(fake);
    // A fresh client (no pooled connection): nothing listens any more.
    let c = SlackClient::builder("xoxb-fake")
        .base_url(c.base_url())
        .build()
        .unwrap();
    tokio::task::yield_now().await;
    let err = c.post_message("C1", None, "z").await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
}
