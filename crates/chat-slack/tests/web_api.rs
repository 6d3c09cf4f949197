//! The Web API client and the adapter's outbound methods against chat-testkit's
//! fake Slack Web API, served in-process on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chat_core::{Messaging as _, Status as _, Webhook as _};
use std::time::Duration;

use chat_core::{AdapterError, MessageRef, OutboundMessage, Platform, ThreadRef};
use chat_slack::{SlackAdapter, SlackClient};
use chat_testkit::{FakeSlack, RetryAfter, SlackReply};
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

fn adapter_at(url: &str) -> SlackAdapter {
    common::builder().api_base_url(url).build().unwrap()
}

fn thread(ts: &str) -> ThreadRef {
    ThreadRef::new(Platform::SLACK, "T0001", "C0LAN2Q65", ts)
}

// ---------------------------------------------------------------- posting

#[tokio::test]
async fn post_replies_in_the_thread_with_the_bearer_token() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    let posted = a
        .post(
            &thread("1700000000.000100"),
            &OutboundMessage::text("on it"),
        )
        .await
        .unwrap();
    assert_eq!(posted.id, "1700000100.000100");
    assert_eq!(posted.thread, thread("1700000000.000100"));
    let calls = fake.calls();
    assert_eq!(calls.len(), 1, "configured ids: no auth.test");
    let c = &calls[0];
    assert_eq!(c.method, "chat.postMessage");
    assert_eq!(c.authorization.as_deref(), Some("Bearer xoxb-test-token"));
    assert_eq!(
        c.content_type.as_deref(),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(
        c.body,
        json!({"channel": "C0LAN2Q65", "thread_ts": "1700000000.000100", "text": "on it"})
    );
}

/// A run's reply carries `chat_rs_reply` metadata; the same reply of a
/// repeated run is found in the thread (read page by page) and not posted
/// again; a reply at another position is.
#[tokio::test]
async fn a_repeated_runs_reply_is_found_in_the_thread_not_posted_twice() {
    let fake = FakeSlack::start().await;
    let a = adapter_at(fake.base_url());
    let t = thread("1700000000.000100");
    let client = SlackClient::builder("xoxb-test-token")
        .base_url(fake.base_url())
        .build()
        .unwrap();
    // Enough other replies that the run's own sits on the second page.
    for i in 0..210 {
        client
            .post_message(
                "C0LAN2Q65",
                Some("1700000000.000100"),
                &format!("noise {i}"),
            )
            .await
            .unwrap();
    }
    let key = |position, attempt| {
        chat_core::PostKey::new(chat_core::EventId::new("Ev1"), position, attempt)
    };
    let first = a
        .post(
            &t,
            &OutboundMessage::text("answer").with_post_key(key(0, 1)),
        )
        .await
        .unwrap();
    let posts = fake.posts();
    let last = posts.last().unwrap();
    assert_eq!(last.body["metadata"]["event_type"], "chat_rs_reply");
    assert_eq!(
        last.body["metadata"]["event_payload"],
        json!({"event_id": "Ev1", "position": 0})
    );
    let again = a
        .post(
            &t,
            &OutboundMessage::text("answer").with_post_key(key(0, 2)),
        )
        .await
        .unwrap();
    assert_eq!(again, first);
    let second = a
        .post(&t, &OutboundMessage::text("more").with_post_key(key(1, 2)))
        .await
        .unwrap();
    assert_ne!(second.id, first.id);
    assert_eq!(fake.replies_per_event()["Ev1"], 2);
    let reads = fake.calls_of("conversations.replies");
    assert!(reads.len() >= 3, "two pages per lookup: {}", reads.len());
    assert_eq!(
        reads[0].content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(reads[0].body["include_all_metadata"], "true");
}

/// A repeated run's post into the channel itself (not in a thread) is looked
/// up in the channel's history and returned, not posted again; a reply the
/// first attempt never posted is posted.
#[tokio::test]
async fn a_repeated_runs_channel_post_is_found_in_the_history_not_posted_twice() {
    let fake = FakeSlack::start().await;
    let a = adapter_at(fake.base_url());
    let channel = thread("");
    let key = |position, attempt| {
        chat_core::PostKey::new(chat_core::EventId::new("Ev3"), position, attempt)
    };
    let first = a
        .post(
            &channel,
            &OutboundMessage::text("form: hi").with_post_key(key(0, 1)),
        )
        .await
        .unwrap();
    // Later messages in the channel, one of them a reply in the post's thread.
    let client = SlackClient::builder("xoxb-test-token")
        .base_url(fake.base_url())
        .build()
        .unwrap();
    for i in 0..3 {
        client
            .post_message("C0LAN2Q65", None, &format!("noise {i}"))
            .await
            .unwrap();
    }
    client
        .post_message("C0LAN2Q65", Some(first.id.as_str()), "in its thread")
        .await
        .unwrap();
    let again = a
        .post(
            &channel,
            &OutboundMessage::text("form: hi").with_post_key(key(0, 2)),
        )
        .await
        .unwrap();
    assert_eq!(again, first);
    let other = a
        .post(
            &channel,
            &OutboundMessage::text("more").with_post_key(key(1, 2)),
        )
        .await
        .unwrap();
    assert_ne!(other.id, first.id);
    assert_eq!(fake.replies_per_event()["Ev3"], 2);
    let reads = fake.calls_of("conversations.history");
    assert_eq!(reads.len(), 2, "one lookup per repeated post");
    assert_eq!(reads[0].body["include_all_metadata"], "true");
}

/// When the thread cannot be read (a missing scope), the reply is posted:
/// at least once rather than never.
#[tokio::test]
async fn an_unreadable_thread_falls_back_to_posting() {
    let fake = FakeSlack::start().await;
    fake.fail("conversations.replies", "missing_scope", 1);
    let a = adapter_at(fake.base_url());
    let key = chat_core::PostKey::new(chat_core::EventId::new("Ev2"), 0, 2);
    a.post(
        &thread("1700000000.000100"),
        &OutboundMessage::text("answer").with_post_key(key),
    )
    .await
    .unwrap();
    assert_eq!(fake.posts().len(), 1);
}

#[tokio::test]
async fn markdown_is_sent_as_mrkdwn() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    a.post(
        &thread("1.0"),
        &OutboundMessage::markdown("**Done** for <@U1>: [PR](https://x.io/1) & more"),
    )
    .await
    .unwrap();
    assert_eq!(
        fake.calls()[0].body["text"],
        "*Done* for <@U1>: <https://x.io/1|PR> &amp; more"
    );
}

#[tokio::test]
async fn a_channel_level_post_starts_a_new_thread() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    let posted = a.post(&thread(""), &"hello".into()).await.unwrap();
    assert!(fake.calls()[0].body.get("thread_ts").is_none());
    assert_eq!(posted.thread.thread, "1700000100.000100");
}

#[tokio::test]
async fn a_thread_without_a_channel_cannot_be_posted_to() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    let modal = ThreadRef::new(Platform::SLACK, "T0001", "", "V0MODAL");
    let err = a.post(&modal, &"x".into()).await.unwrap_err();
    assert!(matches!(err, AdapterError::Unsupported(_)), "{err:?}");
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn ok_false_is_an_api_error_with_slacks_code() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.fail("chat.postMessage", "channel_not_found", 1);
    let a = adapter_at(url);
    let err = a.post(&thread("1.0"), &"x".into()).await.unwrap_err();
    assert!(
        matches!(&err, AdapterError::Api { code } if code == "channel_not_found"),
        "{err:?}"
    );
    fake.enqueue("chat.update", SlackReply::json(&json!({"ok": false})));
    let msg = MessageRef {
        thread: thread("1.0"),
        id: "2.0".into(),
    };
    let err = a.edit(&msg, &"y".into()).await.unwrap_err();
    assert!(
        matches!(&err, AdapterError::Api { code } if code == "unknown_error"),
        "{err:?}"
    );
}

#[tokio::test]
async fn edit_delete_react_and_status_call_their_methods() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    let msg = MessageRef {
        thread: thread("1.0"),
        id: "2.0".into(),
    };
    a.edit(&msg, &OutboundMessage::markdown("_now_ **final**"))
        .await
        .unwrap();
    a.delete(&msg).await.unwrap();
    a.react(&msg, ":eyes:").await.unwrap();
    a.set_status(&thread("1.0"), Some("is thinking…"))
        .await
        .unwrap();
    a.set_status(&thread("1.0"), None).await.unwrap();
    a.set_status(&thread(""), Some("ignored: no thread"))
        .await
        .unwrap();
    let calls: Vec<(String, Value)> = fake
        .calls()
        .into_iter()
        .map(|c| (c.method, c.body))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "chat.update".into(),
                json!({"channel": "C0LAN2Q65", "ts": "2.0", "text": "_now_ *final*"})
            ),
            (
                "chat.delete".into(),
                json!({"channel": "C0LAN2Q65", "ts": "2.0"})
            ),
            (
                "reactions.add".into(),
                json!({"channel": "C0LAN2Q65", "timestamp": "2.0", "name": "eyes"})
            ),
            (
                "assistant.threads.setStatus".into(),
                json!({"channel_id": "C0LAN2Q65", "thread_ts": "1.0", "status": "is thinking…"})
            ),
            (
                "assistant.threads.setStatus".into(),
                json!({"channel_id": "C0LAN2Q65", "thread_ts": "1.0", "status": ""})
            ),
        ]
    );
}

#[tokio::test]
async fn reacting_twice_is_not_an_error() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.fail("reactions.add", "already_reacted", 1);
    fake.fail("reactions.remove", "no_reaction", 1);
    let a = adapter_at(url);
    let msg = MessageRef {
        thread: thread("1.0"),
        id: "2.0".into(),
    };
    a.react(&msg, "eyes").await.unwrap();
    a.client()
        .remove_reaction("C0LAN2Q65", "2.0", "eyes")
        .await
        .unwrap();
}

#[tokio::test]
async fn the_client_covers_ephemeral_messages_and_modals() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.enqueue(
        "views.open",
        SlackReply::json(&json!({"ok": true, "view": {"id": "V0NEW"}})),
    );
    let a = adapter_at(url);
    a.client()
        .post_ephemeral("C1", "U1", Some("1.0"), "only you")
        .await
        .unwrap();
    let view =
        json!({"type": "modal", "title": {"type": "plain_text", "text": "Hi"}, "blocks": []});
    let answer = a.client().open_view("tr1", &view).await.unwrap();
    assert_eq!(answer["view"]["id"], "V0NEW");
    let calls = fake.calls();
    assert_eq!(calls[0].method, "chat.postEphemeral");
    assert_eq!(
        calls[0].body,
        json!({"channel": "C1", "user": "U1", "thread_ts": "1.0", "text": "only you"})
    );
    assert_eq!(calls[1].method, "views.open");
    assert_eq!(calls[1].body, json!({"trigger_id": "tr1", "view": view}));
}

// ---------------------------------------------------------------- rate limits

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.rate_limit("chat.postMessage", RetryAfter::Header(1), 1);
    let a = adapter_at(url);
    let posted = a.post(&thread("1.0"), &"x".into()).await.unwrap();
    assert_eq!(posted.id, "1700000100.000100");
    let calls = fake.calls_of("chat.postMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls[1].at - calls[0].at >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_429_with_retry_after_in_the_body_is_waited_out() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.rate_limit("chat.postMessage", RetryAfter::Body(1), 1);
    let a = adapter_at(url);
    a.post(&thread("1.0"), &"x".into()).await.unwrap();
    let calls = fake.calls_of("chat.postMessage");
    assert_eq!(calls.len(), 2);
    assert!(calls[1].at - calls[0].at >= Duration::from_secs(1));
}

#[tokio::test]
async fn the_header_wins_over_the_body() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.enqueue(
        "chat.postMessage",
        SlackReply::raw(StatusCode::TOO_MANY_REQUESTS, r#"{"retry_after":60}"#)
            .with_header(RETRY_AFTER, HeaderValue::from_static("0")),
    );
    let a = adapter_at(url);
    let start = tokio::time::Instant::now();
    a.post(&thread("1.0"), &"x".into()).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn a_wait_past_the_deadline_is_rate_limited_at_once() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.rate_limit("chat.postMessage", RetryAfter::Header(30), 1);
    let a = adapter_at(url);
    let start = tokio::time::Instant::now();
    let err = a
        .client()
        .with_timeout(Duration::from_secs(2))
        .post_message("C1", None, "x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, AdapterError::RateLimited { retry_after } if retry_after == Duration::from_secs(30)),
        "{err:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(2), "did not sleep");
    assert_eq!(fake.calls().len(), 1);
}

/// A hostile or broken `Retry-After` (past what the clock can add) is a rate
/// limit that outlasts every deadline, not a panic.
#[tokio::test]
async fn an_absurd_retry_after_is_a_rate_limit_not_a_panic() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.rate_limit(
        "chat.postMessage",
        RetryAfter::Header(10_000_000_000_000_000_000),
        1,
    );
    fake.rate_limit(
        "chat.postMessage",
        RetryAfter::Body(10_000_000_000_000_000_000),
        1,
    );
    let a = adapter_at(url);
    for _ in 0..2 {
        let err = a.client().post_message("C1", None, "x").await.unwrap_err();
        assert!(matches!(err, AdapterError::RateLimited { .. }), "{err:?}");
    }
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn without_a_deadline_the_retry_budget_bounds_the_wait() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.rate_limit("chat.postMessage", RetryAfter::Header(30), 1);
    let a = common::builder()
        .api_base_url(url)
        .retry_budget(Duration::from_secs(5))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let err = a.post(&thread("1.0"), &"x".into()).await.unwrap_err();
    assert!(matches!(err, AdapterError::RateLimited { .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn retries_are_bounded() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.rate_limit("chat.postMessage", RetryAfter::Header(0), 3);
    let a = common::builder()
        .api_base_url(url)
        .max_retries(2)
        .build()
        .unwrap();
    let err = a.post(&thread("1.0"), &"x".into()).await.unwrap_err();
    assert!(
        matches!(err, AdapterError::RateLimited { retry_after } if retry_after.is_zero()),
        "{err:?}"
    );
    assert_eq!(fake.calls().len(), 3, "the first try and two retries");
}

#[tokio::test]
async fn a_passed_deadline_sends_nothing() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    let err = a
        .client()
        .with_deadline(tokio::time::Instant::now())
        .post_message("C1", None, "x")
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::DeadlineExceeded), "{err:?}");
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn an_answer_later_than_the_deadline_is_deadline_exceeded() {
    let fake = FakeSlack::start().await;
    fake.enqueue(
        "chat.postMessage",
        SlackReply::json(&serde_json::json!({"ok": true, "ts": "1.2"}))
            .after(Duration::from_secs(5)),
    );
    let a = adapter_at(fake.base_url());
    let started = std::time::Instant::now();
    let err = a
        .client()
        .with_timeout(Duration::from_millis(300))
        .post_message("C1", None, "x")
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::DeadlineExceeded), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

// ---------------------------------------------------------------- other failures

#[tokio::test]
async fn server_errors_are_statuses_and_not_retried() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.enqueue(
        "chat.postMessage",
        SlackReply::raw(StatusCode::INTERNAL_SERVER_ERROR, "oops"),
    );
    let a = adapter_at(url);
    let err = a.post(&thread("1.0"), &"x".into()).await.unwrap_err();
    assert!(
        matches!(err, AdapterError::Status(s) if s == StatusCode::INTERNAL_SERVER_ERROR),
        "{err:?}"
    );
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn undecodable_answers_are_decode_errors() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.enqueue(
        "chat.postMessage",
        SlackReply::raw(StatusCode::OK, "<html>proxy error</html>"),
    );
    fake.enqueue("chat.postMessage", SlackReply::json(&json!({"ok": true})));
    let a = adapter_at(url);
    let err = a.post(&thread("1.0"), &"x".into()).await.unwrap_err();
    assert!(matches!(err, AdapterError::Decode(_)), "{err:?}");
    let err = a.post(&thread("1.0"), &"x".into()).await.unwrap_err();
    assert!(
        matches!(err, AdapterError::Decode(_)),
        "answer without ts: {err:?}"
    );
}

#[tokio::test]
async fn an_unreachable_api_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = SlackClient::builder("xoxb-test-token")
        .base_url(format!("http://127.0.0.1:{port}/api"))
        .build()
        .unwrap();
    let err = client.call("auth.test", &json!({})).await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
    assert!(!format!("{err:?}").contains("xoxb-test-token"));
}

// ---------------------------------------------------------------- identity

fn unconfigured(url: &str) -> SlackAdapter {
    SlackAdapter::builder()
        .signing_secret(common::SECRET)
        .bot_token("xoxb-test-token")
        .api_base_url(url)
        .clock(|| std::time::UNIX_EPOCH + Duration::from_secs(common::NOW))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_identity_is_learned_once_from_auth_test() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = unconfigured(url);
    let id = a.identity().await.unwrap();
    assert_eq!(id.user_id.as_deref(), Some(FakeSlack::BOT_USER_ID));
    assert_eq!(id.bot_id.as_deref(), Some(FakeSlack::BOT_ID));
    assert_eq!(id.team_id.as_deref(), Some(FakeSlack::TEAM_ID));
    a.identity().await.unwrap();
    assert_eq!(fake.calls_of("auth.test").len(), 1);

    // Now a message with only the learned bot id is ours.
    let mut body = common::callback(
        "Ev",
        json!({"type": "message", "channel": "C1", "bot_id": FakeSlack::BOT_ID, "text": "x", "ts": "1.0"}),
    );
    body["authorizations"] = json!([]);
    let reason = common::ignored_reason(common::deliver(&a, &common::json_request(&body)).unwrap());
    assert_eq!(reason, "own-message");
}

#[tokio::test]
async fn configured_ids_need_no_auth_test() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = adapter_at(url);
    let id = a.identity().await.unwrap();
    assert_eq!(id.user_id.as_deref(), Some(common::BOT_USER));
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn the_first_post_learns_the_identity_alongside() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    let a = unconfigured(url);
    a.post(&thread("1.0"), &"x".into()).await.unwrap();
    a.post(&thread("1.0"), &"y".into()).await.unwrap();
    assert_eq!(fake.calls_of("auth.test").len(), 1);
    assert_eq!(fake.calls_of("chat.postMessage").len(), 2);
}

#[tokio::test]
async fn a_failing_auth_test_does_not_fail_the_post() {
    let fake = FakeSlack::start().await;
    let url = fake.base_url();
    fake.fail("auth.test", "invalid_auth", 1);
    let a = unconfigured(url);
    a.post(&thread("1.0"), &"x".into()).await.unwrap();
    a.post(&thread("1.0"), &"y".into()).await.unwrap();
    // Not retried on every post: at most once a minute.
    assert_eq!(fake.calls_of("auth.test").len(), 1);
    // An explicit call asks again (and now succeeds).
    let id = a.identity().await.unwrap();
    assert_eq!(id.user_id.as_deref(), Some(FakeSlack::BOT_USER_ID));
    assert_eq!(fake.calls_of("auth.test").len(), 2);
}

/// A later reply goes only to a `response_url` on Slack's hosts (over https)
/// or on the Web API's own origin, compared as parsed origins: another host,
/// plain http to Slack's host, and a URL that merely starts like the API's
/// origin are refused before anything is sent.
#[tokio::test]
async fn a_response_url_outside_slacks_hosts_is_refused() {
    let fake = FakeSlack::start().await;
    let a = adapter_at(fake.base_url());
    let api = fake.base_url().trim_end_matches("/api").to_owned();
    let command = |url: &str| {
        let mut e = chat_testkit::EventBuilder::new(thread("1.0"))
            .id("Ev9")
            .slash_command("/echo", "hi")
            .build();
        if let chat_core::EventKind::SlashCommand(c) = &mut e.kind {
            c.follow_up = Some(chat_core::Handle::new(url));
        }
        e
    };
    for url in [
        "https://evil.example/commands/1".to_owned(),
        "http://hooks.slack.com/commands/1".to_owned(),
        "https://hooks.slack.com.evil.example/commands/1".to_owned(),
        format!("{api}@evil.example/hooks/x"),
        format!("{api}0/hooks/x"),
        "not a url".to_owned(),
    ] {
        let err = a
            .reply_later(&command(&url), &chat_core::Reply::ephemeral("hi"))
            .await
            .unwrap_err();
        assert!(matches!(err, AdapterError::Invalid(_)), "{url}: {err:?}");
    }
    assert!(fake.calls_of("response_url").is_empty());
    let ours = fake.response_url("commands/T0001/1/ok");
    a.reply_later(&command(&ours), &chat_core::Reply::ephemeral("hi"))
        .await
        .unwrap();
    assert_eq!(fake.calls_of("response_url").len(), 1);
}
