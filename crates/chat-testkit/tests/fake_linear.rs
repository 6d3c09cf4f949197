//! The fake Linear GraphQL API, driven by chat-linear's client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chat_core::AdapterError;
use chat_linear::{LinearAdapter, SessionUpdate};
use chat_testkit::{FakeLinear, LinearReply};
use http::StatusCode;
use serde_json::json;

fn linear(fake: &FakeLinear) -> LinearAdapter {
    LinearAdapter::builder()
        .signing_secret("lin_wh_fake")
        .access_token("lin_oauth_fake")
        .endpoint(fake.endpoint())
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_operation_succeeds_by_default_and_every_request_is_recorded() {
    let fake = FakeLinear::start().await;
    assert_eq!(
        fake.endpoint(),
        format!("http://127.0.0.1:{}/graphql", fake.addr().port())
    );
    let l = linear(&fake);

    let thought = l.thought("s1", "looking").await.unwrap();
    let response = l.response("s1", "found it").await.unwrap();
    l.update_session(
        "s1",
        &SessionUpdate::new().external_link("https://x.example/1"),
    )
    .await
    .unwrap();
    let comment = l.comment("issue-1", Some("c0"), "a reply").await.unwrap();
    assert_eq!(l.viewer_id().await.unwrap(), FakeLinear::VIEWER_ID);

    let calls = fake.calls();
    let operations: Vec<&str> = calls.iter().map(|c| c.operation.as_str()).collect();
    assert_eq!(
        operations,
        [
            "AgentActivityCreate",
            "AgentActivityCreate",
            "AgentSessionUpdate",
            "CommentCreate",
            "Viewer",
        ]
    );
    assert!(calls.iter().all(|c| c.ok && c.status == StatusCode::OK));
    assert!(
        calls
            .iter()
            .all(|c| c.authorization.as_deref() == Some("Bearer lin_oauth_fake"))
    );
    assert!(calls[0].query.starts_with("mutation AgentActivityCreate("));
    assert_eq!(calls[4].variables, json!({}));

    // Created entities answer with the client-supplied ids.
    let activities = fake.activities();
    assert_eq!(activities.len(), 2);
    assert_eq!(activities[0].input()["id"], thought.as_str());
    assert_eq!(activities[0].activity_type(), Some("thought"));
    assert_eq!(activities[0].activity_body(), Some("looking"));
    assert_eq!(activities[1].input()["id"], response.as_str());
    assert_eq!(activities[1].activity_type(), Some("response"));
    assert_eq!(activities[1].input()["agentSessionId"], "s1");
    let created = &fake.calls_of("CommentCreate")[0];
    assert_eq!(created.input()["id"], comment.as_str());
    assert_eq!(created.input()["parentId"], "c0");
    assert_eq!(fake.calls_of("AgentSessionUpdate")[0].variables["id"], "s1");
}

#[tokio::test]
async fn an_operation_fails_n_times_then_succeeds() {
    let fake = FakeLinear::start().await;
    fake.fail("AgentActivityCreate", "INVALID_INPUT", 2);
    let l = linear(&fake);
    for _ in 0..2 {
        let err = l.thought("s1", "x").await.unwrap_err();
        assert!(
            matches!(&err, AdapterError::Api { code } if code == "INVALID_INPUT"),
            "{err:?}"
        );
    }
    // Scripts are per operation.
    l.viewer_id().await.unwrap();
    l.thought("s1", "x").await.unwrap();

    let sent = fake.calls_of("AgentActivityCreate");
    let oks: Vec<bool> = sent.iter().map(|c| c.ok).collect();
    assert_eq!(oks, [false, false, true]);
    assert_eq!(sent[0].status, StatusCode::BAD_REQUEST);
    assert_eq!(fake.activities().len(), 1);
}

#[tokio::test]
async fn rate_limits_are_waited_out() {
    let fake = FakeLinear::start().await;
    fake.rate_limit("AgentActivityCreate", 0, 2);
    let now_ms = u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    fake.enqueue("Viewer", LinearReply::rate_limited(now_ms + 100));
    let l = linear(&fake);
    l.thought("s1", "x").await.unwrap();
    l.viewer_id().await.unwrap();

    let statuses: Vec<StatusCode> = fake
        .calls_of("AgentActivityCreate")
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
    let viewer = fake.calls_of("Viewer");
    assert_eq!(viewer.len(), 2, "the RATELIMITED error, then the answer");
    assert!(!viewer[0].ok && viewer[1].ok);

    // A wait longer than the client's budget is a rate-limit error.
    fake.rate_limit("AgentActivityCreate", 120, 1);
    let err = l
        .with_timeout(Duration::from_secs(5))
        .thought("s1", "x")
        .await
        .unwrap_err();
    assert!(
        matches!(err, AdapterError::RateLimited { retry_after } if retry_after == Duration::from_secs(120)),
        "{err:?}"
    );
}

#[tokio::test]
async fn any_answer_can_be_scripted() {
    let fake = FakeLinear::start().await;
    fake.enqueue_any(LinearReply::raw(
        StatusCode::BAD_GATEWAY,
        "<html>proxy error</html>",
    ));
    fake.enqueue(
        "AgentActivityCreate",
        LinearReply::json(&json!({"data": {"agentActivityCreate": {"success": false}}})),
    );
    fake.enqueue(
        "Viewer",
        LinearReply::json(&json!({"data": {"viewer": {"id": "someone-else"}}})),
    );
    let l = linear(&fake);
    // The "any" reply was queued first, so the first request of any operation
    // gets it.
    let err = l.viewer_id().await.unwrap_err();
    assert!(
        matches!(err, AdapterError::Status(s) if s == StatusCode::BAD_GATEWAY),
        "{err:?}"
    );
    assert_eq!(l.viewer_id().await.unwrap(), "someone-else");
    let err = l.thought("s1", "x").await.unwrap_err();
    assert!(
        matches!(&err, AdapterError::Api { code } if code == "UNSUCCESSFUL"),
        "{err:?}"
    );
    let calls = fake.calls();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| !c.ok || c.operation == "Viewer"));
    assert_eq!(
        LinearReply::error("X", "no").status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        LinearReply::too_many_requests(3).status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn a_delayed_answer_is_recorded_on_arrival() {
    let fake = FakeLinear::start().await;
    fake.enqueue(
        "AgentActivityCreate",
        LinearReply::success().after(Duration::from_secs(5)),
    );
    let l = linear(&fake);
    let err = l
        .with_timeout(Duration::from_millis(300))
        .thought("s1", "x")
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::DeadlineExceeded), "{err:?}");
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].ok, "the answer it was going to give");
}

/// On real time: the client's own timeouts would fire if a paused clock
/// jumped while a request was on the socket.
#[tokio::test]
async fn waiting_for_calls_is_bounded() {
    let fake = FakeLinear::start().await;
    let waiter = {
        let fake = fake.clone();
        tokio::spawn(async move {
            fake.wait_for_calls("AgentActivityCreate", 2, Duration::from_secs(60))
                .await
        })
    };
    let any = {
        let fake = fake.clone();
        tokio::spawn(async move { fake.wait_for_requests(3, Duration::from_secs(60)).await })
    };
    let l = linear(&fake);
    l.thought("s1", "a").await.unwrap();
    l.viewer_id().await.unwrap();
    l.thought("s1", "b").await.unwrap();
    assert_eq!(waiter.await.unwrap().len(), 2, "woken by the second call");
    assert_eq!(any.await.unwrap().len(), 3);

    let start = tokio::time::Instant::now();
    let calls = fake
        .wait_for_calls("CommentCreate", 1, Duration::from_millis(200))
        .await;
    assert!(calls.is_empty());
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn clones_share_the_record_and_the_server_stops_with_the_last() {
    let fake = FakeLinear::start().await;
    let clone = fake.clone();
    let l = linear(&fake);
    l.thought("s1", "x").await.unwrap();
    assert_eq!(clone.calls().len(), 1);
    drop(clone);
    l.thought("s1", "y").await.unwrap();
    assert_eq!(fake.activities().len(), 2);
    assert!(format!("{fake:?}").contains(fake.endpoint()));

    let endpoint = fake.endpoint().to_owned();
    drop(fake);
    tokio::task::yield_now().await;
    let fresh = LinearAdapter::builder()
        .signing_secret("lin_wh_fake")
        .access_token("lin_oauth_fake")
        .endpoint(endpoint)
        .build()
        .unwrap();
    let err = fresh.thought("s1", "z").await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
}
