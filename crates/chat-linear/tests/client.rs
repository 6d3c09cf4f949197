//! The GraphQL client against a fake Linear API: answers, errors, rate limits,
//! credentials, and the first-activity guarantee.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chat_core::{Messaging as _, Status as _, Webhook as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chat_core::{AdapterError, Inbound, MessageRef, OutboundMessage};
use chat_linear::thread::{comment_thread, session_thread};
use chat_linear::{Activity, Credential, LinearAdapter, SessionUpdate};
use chat_testkit::{FakeLinear, LinearReply};
use common::{ISSUE, NOW_MS, ORG, SESSION, USER, payloads};
use http::StatusCode;
use serde_json::json;

async fn setup() -> (FakeLinear, LinearAdapter) {
    let fake = FakeLinear::start().await;
    let linear = common::builder().endpoint(fake.endpoint()).build().unwrap();
    (fake, linear)
}

fn created_event(linear: &LinearAdapter, session_id: &str) -> chat_core::Event {
    let b = common::body(&payloads::session_created_for(session_id));
    match linear.parse(&common::parts(&b), &b).unwrap() {
        Inbound::Event(e) => *e,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn post_in_a_session_is_a_response_activity() {
    let (fake, linear) = setup().await;
    let thread = session_thread(ORG, Some(ISSUE), SESSION);
    let posted = linear
        .post(&thread, &OutboundMessage::markdown("The mock **changed**."))
        .await
        .unwrap();
    let sent = fake.calls_of("AgentActivityCreate");
    assert_eq!(sent.len(), 1);
    let input = sent[0].input();
    assert_eq!(input["agentSessionId"], SESSION);
    assert_eq!(
        input["content"],
        json!({"type": "response", "body": "The mock **changed**."})
    );
    assert!(input.get("ephemeral").is_none());
    assert_eq!(posted.thread, thread);
    assert_eq!(posted.id, input["id"].as_str().unwrap());
    assert_eq!(sent[0].content_type.as_deref(), Some("application/json"));
}

#[tokio::test]
async fn post_in_a_comment_thread_replies_to_the_root() {
    let (fake, linear) = setup().await;
    let thread = comment_thread(ORG, ISSUE, "c-root");
    let posted = linear
        .post(&thread, &OutboundMessage::text("On it"))
        .await
        .unwrap();
    let sent = fake.calls_of("CommentCreate");
    assert_eq!(sent.len(), 1);
    let input = sent[0].input();
    assert_eq!(input["issueId"], ISSUE);
    assert_eq!(input["parentId"], "c-root");
    assert_eq!(input["body"], "On it");
    assert_eq!(posted.id, input["id"].as_str().unwrap());

    linear
        .edit(&posted, &OutboundMessage::text("Done"))
        .await
        .unwrap();
    assert_eq!(
        fake.calls_of("CommentUpdate")[0].variables["id"],
        posted.id.as_str()
    );
    linear.react(&posted, "+1").await.unwrap();
    assert_eq!(
        fake.calls_of("ReactionCreate")[0].input()["commentId"],
        posted.id.as_str()
    );
    linear.delete(&posted).await.unwrap();
    assert_eq!(
        fake.calls_of("CommentDelete")[0].variables["id"],
        posted.id.as_str()
    );
}

#[tokio::test]
async fn activities_cannot_be_edited_deleted_or_reacted_to() {
    let (fake, linear) = setup().await;
    let m = MessageRef {
        thread: session_thread(ORG, Some(ISSUE), SESSION),
        id: "act-1".to_owned(),
    };
    assert!(matches!(
        linear.edit(&m, &OutboundMessage::text("x")).await,
        Err(AdapterError::Unsupported(_))
    ));
    assert!(matches!(
        linear.delete(&m).await,
        Err(AdapterError::Unsupported(_))
    ));
    assert!(matches!(
        linear.react(&m, "eyes").await,
        Err(AdapterError::Unsupported(_))
    ));
    let foreign = chat_core::ThreadRef::new(chat_core::Platform::SLACK, "T", "C", "1.0");
    assert!(matches!(
        linear.post(&foreign, &OutboundMessage::text("x")).await,
        Err(AdapterError::Unsupported(_))
    ));
    // Only thoughts and actions may be ephemeral.
    assert!(matches!(
        linear
            .activity(SESSION, &Activity::response("x").ephemeral())
            .await,
        Err(AdapterError::Unsupported(_))
    ));
    // A comment thread is not a session.
    assert!(matches!(
        linear.thought(&comment_thread(ORG, ISSUE, "c"), "x").await,
        Err(AdapterError::Unsupported(_))
    ));
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn a_client_id_is_kept_and_each_activity_gets_a_fresh_one() {
    let (fake, linear) = setup().await;
    let id = "0b6c2a4e-8f1d-4c3b-9a5e-7d2f1e0c9b8a";
    let got = linear
        .activity(SESSION, &Activity::thought("x").id(id))
        .await
        .unwrap();
    assert_eq!(got, id);
    linear.thought(SESSION, "a").await.unwrap();
    linear.thought(SESSION, "b").await.unwrap();
    let ids: Vec<String> = fake
        .calls()
        .iter()
        .map(|r| r.input()["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids[0], id);
    assert_ne!(ids[1], ids[2]);
}

#[tokio::test]
async fn set_status_is_an_ephemeral_thought_in_a_session() {
    let (fake, linear) = setup().await;
    let thread = session_thread(ORG, Some(ISSUE), SESSION);
    linear
        .set_status(&thread, Some("Reading CI logs"))
        .await
        .unwrap();
    linear.set_status(&thread, None).await.unwrap();
    linear
        .set_status(&comment_thread(ORG, ISSUE, "c"), Some("x"))
        .await
        .unwrap();
    let sent = fake.calls();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].input()["ephemeral"], true);
    assert_eq!(
        sent[0].input()["content"],
        json!({"type": "thought", "body": "Reading CI logs"})
    );
}

#[tokio::test]
async fn session_updates_and_the_viewer() {
    let (fake, linear) = setup().await;
    linear
        .update_session(
            SESSION,
            &SessionUpdate::new().external_link("https://agent.example/runs/9"),
        )
        .await
        .unwrap();
    // An empty update sends nothing.
    linear
        .update_session(SESSION, &SessionUpdate::new())
        .await
        .unwrap();
    let sent = fake.calls_of("AgentSessionUpdate");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].variables["id"], SESSION);
    assert_eq!(
        sent[0].input(),
        &json!({"externalLink": "https://agent.example/runs/9"})
    );
    assert_eq!(linear.viewer_id().await.unwrap(), common::APP_USER);
}

#[tokio::test]
async fn graphql_errors_are_api_errors() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::raw(
        StatusCode::BAD_REQUEST,
        json!({"errors": [{"message": "Entity not found: AgentSession - secret detail",
            "extensions": {"code": "INVALID_INPUT", "type": "invalid input", "userError": true}}]})
        .to_string(),
    ));
    let e = linear.thought(SESSION, "x").await.unwrap_err();
    match &e {
        AdapterError::Api { code } => assert_eq!(code, "INVALID_INPUT"),
        other => panic!("{other:?}"),
    }
    assert!(!e.to_string().contains("secret detail"));

    // A 200 with errors is an error too; the code may be only in `type`.
    fake.enqueue_any(LinearReply::json(
        &json!({"data": null, "errors": [{"message": "no",
        "extensions": {"type": "forbidden"}}]}),
    ));
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::Api { code }) if code == "forbidden"
    ));

    fake.enqueue_any(LinearReply::json(
        &json!({"errors": [{"message": "no extensions"}]}),
    ));
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::Api { code }) if code == "GRAPHQL_ERROR"
    ));

    fake.enqueue_any(LinearReply::json(
        &json!({"data": {"agentActivityCreate": {"success": false}}}),
    ));
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::Api { code }) if code == "UNSUCCESSFUL"
    ));

    fake.enqueue_any(LinearReply::raw(
        StatusCode::BAD_GATEWAY,
        "<html>bad gateway</html>",
    ));
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::Status(s)) if s == 502
    ));

    fake.enqueue_any(LinearReply::raw(StatusCode::UNAUTHORIZED, ""));
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::Status(s)) if s == 401
    ));

    fake.enqueue_any(LinearReply::json(&json!({"data": {}})));
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::Decode(_))
    ));
}

#[tokio::test]
async fn a_429_is_waited_out_and_retried_with_the_same_id() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::too_many_requests(1));
    let started = std::time::Instant::now();
    let id = linear.thought(SESSION, "x").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    let sent = fake.calls();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body, sent[1].body);
    assert_eq!(sent[1].input()["id"], id.as_str());
}

#[tokio::test]
async fn a_ratelimited_graphql_error_is_a_rate_limit() {
    let (fake, linear) = setup().await;
    // Linear answers rate limits as a GraphQL error with code RATELIMITED,
    // with the reset time in Unix milliseconds.
    fake.enqueue_any(LinearReply::rate_limited(NOW_MS + 200));
    linear.thought(SESSION, "x").await.unwrap();
    assert_eq!(fake.calls().len(), 2);
}

/// A hostile `Retry-After` or rate-limit reset (past what the clock can add)
/// is a rate limit, not a panic.
#[tokio::test]
async fn an_absurd_wait_is_a_rate_limit_not_a_panic() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::too_many_requests(10_000_000_000_000_000_000));
    fake.enqueue_any(LinearReply::rate_limited(u64::MAX));
    for _ in 0..2 {
        let e = linear.thought(SESSION, "x").await.unwrap_err();
        assert!(matches!(e, AdapterError::RateLimited { .. }), "{e:?}");
    }
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn a_rate_limit_past_the_deadline_fails_at_once() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::too_many_requests(120));
    let started = std::time::Instant::now();
    let e = linear
        .with_timeout(Duration::from_secs(5))
        .thought(SESSION, "x")
        .await
        .unwrap_err();
    assert!(
        matches!(e, AdapterError::RateLimited { retry_after } if retry_after == Duration::from_secs(120))
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn retries_are_bounded() {
    let fake = FakeLinear::start().await;
    let linear = common::builder()
        .endpoint(fake.endpoint())
        .max_retries(2)
        .build()
        .unwrap();
    for _ in 0..5 {
        fake.enqueue_any(LinearReply::too_many_requests(0));
    }
    assert!(matches!(
        linear.thought(SESSION, "x").await,
        Err(AdapterError::RateLimited { .. })
    ));
    assert_eq!(fake.calls().len(), 3);
}

#[tokio::test]
async fn a_passed_deadline_sends_nothing() {
    let (fake, linear) = setup().await;
    let late = linear.with_deadline(tokio::time::Instant::now());
    let e = late.thought(SESSION, "x").await.unwrap_err();
    assert!(matches!(e, AdapterError::DeadlineExceeded));
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::success().after(Duration::from_secs(5)));
    let started = std::time::Instant::now();
    let e = linear
        .with_timeout(Duration::from_millis(300))
        .thought(SESSION, "x")
        .await
        .unwrap_err();
    assert!(matches!(e, AdapterError::DeadlineExceeded), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn the_authorization_header_forms() {
    let fake = FakeLinear::start().await;
    let with_key = common::builder()
        .endpoint(fake.endpoint())
        .api_key("lin_api_personal_key")
        .build()
        .unwrap();
    with_key.viewer_id().await.unwrap();
    let with_token = common::builder()
        .endpoint(fake.endpoint())
        .access_token("lin_oauth_access")
        .build()
        .unwrap();
    with_token.viewer_id().await.unwrap();
    let multi = common::builder()
        .endpoint(fake.endpoint())
        .organization_credential(
            "org-other",
            Credential::AccessToken("lin_oauth_other".into()),
        )
        .build()
        .unwrap();
    multi
        .thought(&session_thread("org-other", None, "s9"), "x")
        .await
        .unwrap();
    multi
        .thought(&session_thread(ORG, None, "s9"), "x")
        .await
        .unwrap();
    multi
        .for_organization("org-other")
        .viewer_id()
        .await
        .unwrap();
    let auth: Vec<String> = fake
        .calls()
        .iter()
        .map(|r| r.authorization.clone().unwrap())
        .collect();
    assert_eq!(
        auth,
        [
            "lin_api_personal_key",
            "Bearer lin_oauth_access",
            "Bearer lin_oauth_other",
            "Bearer lin_oauth_test_token",
            "Bearer lin_oauth_other",
        ]
    );
    let only_org = LinearAdapter::builder()
        .signing_secret("s")
        .organization_credential("org-a", Credential::ApiKey("k".into()))
        .endpoint(fake.endpoint())
        .build()
        .unwrap();
    assert!(matches!(
        only_org
            .thought(&session_thread("org-b", None, "s"), "x")
            .await,
        Err(AdapterError::Unsupported(_))
    ));
}

#[test]
fn the_builder_refuses_what_cannot_work() {
    use chat_linear::BuildError;
    assert!(matches!(
        LinearAdapter::builder().access_token("t").build(),
        Err(BuildError::MissingSigningSecret)
    ));
    assert!(matches!(
        LinearAdapter::builder().signing_secret("s").build(),
        Err(BuildError::MissingCredential)
    ));
    assert!(matches!(
        common::builder().access_token("bad\ntoken").build(),
        Err(BuildError::InvalidCredential)
    ));
    assert!(matches!(
        common::builder().api_key("").build(),
        Err(BuildError::InvalidCredential)
    ));
    assert!(matches!(
        common::builder().endpoint("not a url").build(),
        Err(BuildError::InvalidEndpoint(_))
    ));
    assert!(matches!(
        common::builder()
            .endpoint("ftp://example.com/graphql")
            .build(),
        Err(BuildError::InvalidEndpoint(_))
    ));
    assert!(matches!(
        common::builder()
            .timestamp_tolerance(Duration::ZERO)
            .build(),
        Err(BuildError::InvalidOption(_))
    ));
    let e = common::builder()
        .access_token("bad\ntoken")
        .build()
        .unwrap_err();
    assert!(!format!("{e} {e:?}").contains("bad"));
    assert_eq!(
        format!("{:?}", Credential::ApiKey("k123".into())),
        "ApiKey(<redacted>)"
    );
}

#[tokio::test]
async fn the_first_thought_follows_a_new_session() {
    let (fake, linear) = setup().await;
    let event = created_event(&linear, "s-first");
    linear.after_ack(&event, &|| false).await;
    let sent = fake.calls_of("AgentActivityCreate");
    assert_eq!(sent.len(), 1);
    let input = sent[0].input();
    assert_eq!(input["agentSessionId"], "s-first");
    assert_eq!(input["ephemeral"], true);
    assert_eq!(
        input["content"],
        json!({"type": "thought", "body": "Thinking…"})
    );
    // Once per session.
    linear.after_ack(&event, &|| false).await;
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn the_first_thought_text_is_configurable() {
    let fake = FakeLinear::start().await;
    let linear = common::builder()
        .endpoint(fake.endpoint())
        .first_thought_text("On it — reading the issue")
        .build()
        .unwrap();
    assert_eq!(
        linear.first_thought_text(),
        Some("On it — reading the issue")
    );
    linear
        .after_ack(&created_event(&linear, "s-text"), &|| false)
        .await;
    assert_eq!(
        fake.calls()[0].input()["content"]["body"],
        "On it — reading the issue"
    );
}

#[tokio::test]
async fn no_first_thought_when_the_handler_posted_or_the_option_is_off() {
    let (fake, linear) = setup().await;
    // The handler posted through the thread.
    linear
        .after_ack(&created_event(&linear, "s-posted"), &|| true)
        .await;
    // The handler already sent an activity through the adapter.
    linear.thought("s-own", "Looking").await.unwrap();
    linear
        .after_ack(&created_event(&linear, "s-own"), &|| false)
        .await;
    // Not for prompts or comments.
    let b = common::body(&payloads::session_prompted("a1", "more"));
    let Inbound::Event(prompted) = linear.parse(&common::parts(&b), &b).unwrap() else {
        panic!()
    };
    linear.after_ack(&prompted, &|| false).await;
    let b = common::body(&payloads::comment_created("c1", None, USER, "hi"));
    let Inbound::Event(comment) = linear.parse(&common::parts(&b), &b).unwrap() else {
        panic!()
    };
    linear.after_ack(&comment, &|| false).await;
    assert_eq!(fake.calls().len(), 1, "only the handler's own thought");

    let off = common::builder()
        .endpoint(fake.endpoint())
        .first_thought(false)
        .build()
        .unwrap();
    assert_eq!(off.first_thought_text(), None);
    off.after_ack(&created_event(&off, "s-off"), &|| false)
        .await;
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn a_post_racing_the_first_thought_lands_after_it() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::success().after(Duration::from_millis(300)));
    let event = created_event(&linear, "s-race");
    let ack = {
        let linear = linear.clone();
        let event = event.clone();
        tokio::spawn(async move { linear.after_ack(&event, &|| false).await })
    };
    // Let the thought go out first, then answer while it is in flight.
    fake.wait_for_requests(1, Duration::from_secs(10)).await;
    linear
        .post(&event.thread, &OutboundMessage::text("Answer"))
        .await
        .unwrap();
    ack.await.unwrap();
    let sent = fake.calls();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].input()["content"]["type"], "thought");
    assert_eq!(sent[1].input()["content"]["type"], "response");
    assert!(sent[1].at >= sent[0].at + Duration::from_millis(250));
}

#[tokio::test]
async fn posted_is_checked_again_once_the_session_is_claimed() {
    let (fake, linear) = setup().await;
    let calls = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&calls);
    // False at the first look, true at the second.
    let posted = move || seen.swap(true, Ordering::SeqCst);
    linear
        .after_ack(&created_event(&linear, "s-recheck"), &posted)
        .await;
    assert!(calls.load(Ordering::SeqCst));
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn a_failed_first_thought_is_not_raised() {
    let (fake, linear) = setup().await;
    fake.enqueue_any(LinearReply::raw(StatusCode::INTERNAL_SERVER_ERROR, "oops"));
    linear
        .after_ack(&created_event(&linear, "s-fail"), &|| false)
        .await;
    assert_eq!(fake.calls().len(), 1);
}

/// A redirect is not followed (it could carry the token to another host):
/// the call fails with the 3xx status and nothing reaches the other place.
#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (fake, linear) = setup().await;
    let elsewhere = FakeLinear::start().await;
    fake.enqueue_any(
        LinearReply::raw(StatusCode::TEMPORARY_REDIRECT, "").with_header(
            http::header::LOCATION,
            http::HeaderValue::from_str(elsewhere.endpoint()).unwrap(),
        ),
    );
    let thread = session_thread(ORG, Some(ISSUE), SESSION);
    let err = linear
        .post(&thread, &OutboundMessage::text("hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AdapterError::Status(StatusCode::TEMPORARY_REDIRECT)),
        "{err:?}"
    );
    assert!(elsewhere.calls().is_empty(), "the redirect was followed");
}

/// An answer larger than `MAX_ANSWER_BYTES` is refused, not read into memory.
#[tokio::test]
async fn an_oversized_answer_is_refused() {
    let (fake, linear) = setup().await;
    let huge = vec![b' '; chat_linear::MAX_ANSWER_BYTES + 1];
    fake.enqueue_any(LinearReply::raw(StatusCode::OK, huge));
    let thread = session_thread(ORG, Some(ISSUE), SESSION);
    let err = linear
        .post(&thread, &OutboundMessage::text("hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
}
