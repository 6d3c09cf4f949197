//! Signed deliveries of every routed kind through the adapter's webhook
//! side, and end to end through the runtime: a redelivery runs once, a
//! wrong signature is refused before anything is parsed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use chat_core::{EventKind, Inbound, MessageChange, Webhook, WebhookError};
use chat_github::signature::{SIGNATURE_HEADER, sign};
use chat_github::{DELIVERY_HEADER, EVENT_HEADER, GitHubAdapter, HOOK_HEADER};
use serde_json::{Value, json};

const SECRET: &str = "webhook-secret";

fn adapter() -> GitHubAdapter {
    GitHubAdapter::builder()
        .webhook_secret(SECRET)
        .token("github_pat_test")
        .login("triage-bot")
        .build()
        .unwrap()
}

fn request(event: &str, id: &str, body: &[u8]) -> http::Request<Bytes> {
    http::Request::post("/webhooks/github")
        .header(SIGNATURE_HEADER, sign(SECRET, body))
        .header(EVENT_HEADER, event)
        .header(DELIVERY_HEADER, id)
        .header(HOOK_HEADER, "4242")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Bytes::copy_from_slice(body))
        .unwrap()
}

fn parse(event: &str, payload: &Value) -> Inbound {
    let github = adapter();
    let body = Bytes::from(payload.to_string());
    let (parts, body) = request(event, "d-1", &body).into_parts();
    github.verify(&parts, &body).unwrap();
    github.parse(&parts, &body).unwrap()
}

fn user(login: &str, kind: &str) -> Value {
    json!({ "login": login, "id": 77, "type": kind })
}

fn repo() -> Value {
    json!({ "id": 5, "full_name": "octo/hello" })
}

fn event_of(inbound: Inbound) -> chat_core::Event {
    match inbound {
        Inbound::Event(e) => *e,
        other => panic!("not one event: {other:?}"),
    }
}

fn message_of(e: &chat_core::Event) -> &chat_core::Message {
    match &e.kind {
        EventKind::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    }
}

#[test]
fn an_issue_comment_is_a_message_in_the_issues_thread_and_mentions_by_login() {
    let e = event_of(parse(
        "issue_comment",
        &json!({ "action": "created", "installation": { "id": 9 }, "repository": repo(),
                 "issue": { "number": 42 }, "sender": user("ada", "User"),
                 "comment": { "id": 1001, "body": "Hey @Triage-Bot, look", "user": user("ada", "User") } }),
    ));
    assert_eq!(e.thread.to_string(), "github:9:octo/hello:42");
    assert_eq!(e.id.as_str(), "d-1");
    let m = message_of(&e);
    assert!(m.is_mention);
    assert_eq!(m.id, "1001");
    assert_eq!(m.mentions.len(), 1);
    assert!(m.mentions[0].is_me);
    let said = event_of(parse(
        "issue_comment",
        &json!({ "action": "created", "repository": repo(), "issue": { "number": 42 },
                 "comment": { "id": 1, "body": "@Triage-Bot what broke? cc @bo", "user": user("ada", "User") } }),
    ));
    let m = message_of(&said);
    assert_eq!(m.text_after_mention(), "what broke? cc @bo");
    assert_eq!(m.mentions.iter().filter(|m| !m.is_me).count(), 1);
    assert_eq!(m.author.name.as_deref(), Some("ada"));

    // Not a mention: an e-mail address, a longer login.
    for body in [
        "mail triage-bot@example.com",
        "@triage-bot-2 there",
        "@triage-bots",
    ] {
        let e = event_of(parse(
            "issue_comment",
            &json!({ "action": "created", "repository": repo(), "issue": { "number": 42 },
                     "comment": { "id": 1, "body": body, "user": user("ada", "User") } }),
        ));
        assert!(!message_of(&e).is_mention, "{body}");
        // Without an installation, the repository's owner is the tenant.
        assert_eq!(e.thread.tenant.as_str(), "octo");
    }
}

#[test]
fn edits_and_deletions_are_messages_that_say_so() {
    for (action, change) in [
        ("edited", MessageChange::Edited),
        ("deleted", MessageChange::Deleted),
    ] {
        let e = event_of(parse(
            "issue_comment",
            &json!({ "action": action, "repository": repo(), "issue": { "number": 3 },
                     "comment": { "id": 5, "body": "x", "user": user("ada", "User") } }),
        ));
        assert_eq!(message_of(&e).change, change);
    }
}

#[test]
fn a_review_comment_is_in_its_own_thread_within_the_pull_request() {
    let first = event_of(parse(
        "pull_request_review_comment",
        &json!({ "action": "created", "repository": repo(), "pull_request": { "number": 7 },
                 "comment": { "id": 500, "body": "@triage-bot why?", "path": "src/lib.rs", "line": 3,
                              "user": user("ada", "User") } }),
    ));
    assert_eq!(first.thread.thread, "7/r500");
    let reply = event_of(parse(
        "pull_request_review_comment",
        &json!({ "action": "created", "repository": repo(), "pull_request": { "number": 7 },
                 "comment": { "id": 501, "in_reply_to_id": 500, "body": "and?", "user": user("bo", "User") } }),
    ));
    assert_eq!(reply.thread.thread, "7/r500");
    // Its message id is the one the adapter's calls take for a review comment.
    assert_eq!(message_of(&reply).id, "r501");
}

#[test]
fn issues_and_pull_requests_open_their_conversation_and_an_assignment_to_the_bot_is_a_mention() {
    let opened = event_of(parse(
        "issues",
        &json!({ "action": "opened", "repository": repo(), "sender": user("ada", "User"),
                 "issue": { "number": 12, "title": "Crash", "body": "on start", "user": user("ada", "User") } }),
    ));
    let m = message_of(&opened);
    assert_eq!(
        (opened.thread.thread.as_str(), m.text.as_str()),
        ("12", "Crash\n\non start")
    );
    assert!(!m.is_mention);

    let assigned = event_of(parse(
        "issues",
        &json!({ "action": "assigned", "repository": repo(), "sender": user("ada", "User"),
                 "assignee": user("triage-bot", "User"),
                 "issue": { "number": 12, "title": "Crash", "user": user("ada", "User") } }),
    ));
    assert!(message_of(&assigned).is_mention);

    let requested = event_of(parse(
        "pull_request",
        &json!({ "action": "review_requested", "number": 8, "repository": repo(), "sender": user("ada", "User"),
                 "requested_reviewer": user("triage-bot", "User"),
                 "pull_request": { "number": 8, "title": "Fix", "body": "", "user": user("ada", "User") } }),
    ));
    assert!(message_of(&requested).is_mention);
    assert_eq!(requested.thread.thread, "8");

    // Someone else assigned, a label, a push: observable, never a message.
    for (event, payload, name) in [
        (
            "issues",
            json!({ "action": "assigned", "repository": repo(), "assignee": user("bo", "User"),
                           "issue": { "number": 12 } }),
            "github.issues.assigned",
        ),
        (
            "issues",
            json!({ "action": "labeled", "repository": repo(), "label": { "name": "bug" },
                           "issue": { "number": 12 } }),
            "github.issues.labeled",
        ),
        (
            "pull_request",
            json!({ "action": "synchronize", "number": 8, "repository": repo(), "after": "abc",
                                 "pull_request": { "number": 8 } }),
            "github.pull_request.synchronize",
        ),
    ] {
        let e = event_of(parse(event, &payload));
        match &e.kind {
            EventKind::Other(o) => assert_eq!(o.name, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn reviews_and_discussion_comments_are_messages() {
    let review = event_of(parse(
        "pull_request_review",
        &json!({ "action": "submitted", "repository": repo(), "pull_request": { "number": 8 },
                 "review": { "id": 60, "body": "@triage-bot summarize", "state": "commented", "user": user("ada", "User") } }),
    ));
    assert_eq!(review.thread.thread, "8");
    assert!(message_of(&review).is_mention);
    let discussion = event_of(parse(
        "discussion_comment",
        &json!({ "action": "created", "repository": repo(), "discussion": { "number": 30 },
                 "comment": { "id": 70, "body": "hi", "user": user("ada", "User") } }),
    ));
    assert_eq!(discussion.thread.thread, "d30");
    let with_node = event_of(parse(
        "discussion_comment",
        &json!({ "action": "created", "repository": repo(), "discussion": { "number": 30 },
                 "comment": { "id": 71, "node_id": "DC_kwDOA", "body": "hi", "user": user("ada", "User") } }),
    ));
    assert_eq!(message_of(&with_node).id, "DC_kwDOA");
}

#[test]
fn what_the_bot_did_itself_and_unknown_events_are_ignored_and_ping_is_answered() {
    let ignored = |i: &Inbound| matches!(i, Inbound::Ignored { reason } if reason == "self");
    let comment = |sender: &str, author: &str, via: Option<u64>| {
        let mut c = json!({ "id": 2, "body": "echo", "user": user(author, "User") });
        if let Some(app) = via {
            c["performed_via_github_app"] = json!({ "id": app });
        }
        json!({ "action": "created", "repository": repo(), "issue": { "number": 1 },
                "sender": user(sender, "User"), "comment": c })
    };
    // The sender alone, the author alone (either case), each is the bot.
    assert!(ignored(&parse(
        "issue_comment",
        &comment("Triage-Bot", "ada", None)
    )));
    assert!(ignored(&parse(
        "issue_comment",
        &comment("ada", "triage-bot", None)
    )));
    assert!(!ignored(&parse(
        "issue_comment",
        &comment("ada", "bo", None)
    )));
    // An App: its `[bot]` login, or a comment made through it.
    let app = GitHubAdapter::builder()
        .webhook_secret(SECRET)
        .app("4321", include_str!("fixtures/test-app-key.pem"))
        .app_slug("triage-bot")
        .build()
        .unwrap();
    let parse_app = |payload: &Value| {
        let body = Bytes::from(payload.to_string());
        let (parts, body) = request("issue_comment", "d-7", &body).into_parts();
        app.verify(&parts, &body).unwrap();
        app.parse(&parts, &body).unwrap()
    };
    assert!(ignored(&parse_app(&comment(
        "triage-bot[bot]",
        "triage-bot[bot]",
        None
    ))));
    assert!(ignored(&parse_app(&comment("ada", "ada", Some(4321)))));
    assert!(!ignored(&parse_app(&comment("ada", "ada", Some(99)))));
    let star = parse(
        "star",
        &json!({ "action": "created", "repository": repo() }),
    );
    assert!(matches!(star, Inbound::Ignored { .. }), "{star:?}");
    match parse(
        "ping",
        &json!({ "zen": "Keep it logically awesome.", "hook_id": 1 }),
    ) {
        Inbound::Response(r) => assert_eq!(r.status(), 200),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_form_encoded_delivery_reads_as_its_payload() {
    let github = adapter();
    let payload = json!({ "action": "created", "repository": repo(), "issue": { "number": 4 },
                          "comment": { "id": 9, "body": "@triage-bot form", "user": user("ada", "User") } });
    let body = format!(
        "payload={}",
        serde_urlencoded::to_string([("p", payload.to_string())])
            .unwrap()
            .trim_start_matches("p=")
    );
    let mut req = request("issue_comment", "d-2", body.as_bytes());
    req.headers_mut().insert(
        http::header::CONTENT_TYPE,
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    let (parts, body) = req.into_parts();
    github.verify(&parts, &body).unwrap();
    let e = event_of(github.parse(&parts, &body).unwrap());
    assert!(message_of(&e).is_mention);
}

#[test]
fn a_wrong_signature_is_refused_before_the_body_is_read() {
    let github = adapter();
    // Not even JSON: verification must not care.
    let (mut parts, body) = request("issue_comment", "d-3", b"\xff not json").into_parts();
    parts
        .headers
        .insert(SIGNATURE_HEADER, sign("guess", &body).parse().unwrap());
    assert!(matches!(
        github.verify(&parts, &body),
        Err(WebhookError::BadSignature)
    ));
    parts.headers.remove(SIGNATURE_HEADER);
    assert!(matches!(
        github.verify(&parts, &body),
        Err(WebhookError::MissingHeader(_))
    ));
    // Too large: refused by its size.
    let small = GitHubAdapter::builder()
        .webhook_secret(SECRET)
        .token("t")
        .login("triage-bot")
        .max_body_bytes(8)
        .build()
        .unwrap();
    let (parts, body) = request("issue_comment", "d-4", b"0123456789").into_parts();
    assert!(matches!(
        small.verify(&parts, &body),
        Err(WebhookError::TooLarge { .. })
    ));
}

#[test]
fn a_redelivery_has_the_same_event_id_and_dedupe_key() {
    let payload = json!({ "action": "created", "repository": repo(), "issue": { "number": 1 },
                          "comment": { "id": 2, "body": "x", "user": user("ada", "User") } });
    let a = event_of(parse("issue_comment", &payload));
    let b = event_of(parse("issue_comment", &payload));
    assert_eq!(
        (a.id.as_str(), a.dedupe_key.as_str()),
        (b.id.as_str(), b.dedupe_key.as_str())
    );
    assert_eq!(a.dedupe_key.as_str(), "4242:d-1");
}

/// Through the runtime: a mention acknowledged 200 at once (deferred), and
/// its redelivery — same `X-GitHub-Delivery` — acknowledged without a
/// second run.
#[tokio::test]
async fn a_redelivered_mention_runs_once() {
    let runs = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&runs);
    let bot = chat_runtime::Bot::builder()
        .state(chat_state_memory::MemoryState::new())
        .adapter(adapter())
        .options(chat_runtime::RuntimeOptions::default().dispatch(
            chat_runtime::DispatchOptions::deferred(std::time::Duration::from_secs(5)),
        ))
        .on_new_mention(move |_ctx: chat_runtime::Ctx, event: chat_runtime::Event| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(event.id.to_string());
                Ok::<(), chat_runtime::BoxError>(())
            }
        })
        .build()
        .unwrap();
    let payload = json!({ "action": "created", "repository": repo(), "issue": { "number": 1 },
                          "comment": { "id": 2, "body": "@triage-bot go", "user": user("ada", "User") } })
    .to_string();
    for _ in 0..3 {
        let r = bot
            .handle(
                "github",
                request("issue_comment", "d-9", payload.as_bytes()),
            )
            .await;
        assert_eq!(r.status(), 200);
    }
    bot.shutdown(std::time::Duration::from_secs(5)).await;
    assert_eq!(*runs.lock().unwrap(), ["d-9"]);
}

/// An uninstall is acknowledged and the runtime told to drop the tenant's
/// state; other installation events go on to routes.
#[tokio::test]
async fn an_uninstall_resolves_as_uninstalled() {
    let github = adapter();
    let mut deleted = event_of(parse(
        "installation",
        &json!({ "action": "deleted", "installation": { "id": 77, "account": { "login": "octo" } },
                 "sender": user("ada", "User") }),
    ));
    assert_eq!(deleted.thread.tenant.as_str(), "77");
    assert!(matches!(
        github.resolve(&mut deleted).await.unwrap(),
        chat_core::Resolution::Uninstalled {
            reason: "app-uninstalled"
        }
    ));
    let mut created = event_of(parse(
        "installation",
        &json!({ "action": "created", "installation": { "id": 77 }, "sender": user("ada", "User") }),
    ));
    assert!(matches!(
        github.resolve(&mut created).await.unwrap(),
        chat_core::Resolution::Proceed
    ));
}

/// chat-testkit's signed deliveries verify and parse: JSON and form,
/// comments, review comments, an opened issue, `ping`.
#[test]
fn the_testkits_signed_deliveries_verify_and_parse() {
    use chat_testkit::signed::GitHubDeliveries;
    let github = adapter();
    let check = |request: http::Request<Bytes>| {
        let (parts, body) = request.into_parts();
        github.verify(&parts, &body).unwrap();
        github.parse(&parts, &body).unwrap()
    };
    for deliveries in [
        GitHubDeliveries::new(SECRET),
        GitHubDeliveries::new(SECRET).form(),
    ] {
        let e = event_of(check(deliveries.installation(3).issue_comment(
            "d-1",
            42,
            1,
            "@triage-bot hi",
        )));
        assert_eq!(e.thread.to_string(), "github:3:octo/hello:42");
        assert!(message_of(&e).is_mention);
    }
    let d = GitHubDeliveries::new(SECRET);
    let e = event_of(check(d.review_comment("d-2", 7, 11, Some(10), "and this?")));
    assert_eq!(e.thread.thread, "7/r10");
    let e = event_of(check(d.issue_opened("d-3", 5, "Crash", "on start")));
    assert_eq!(message_of(&e).text, "Crash\n\non start");
    assert!(matches!(check(d.ping("d-4")), Inbound::Response(_)));
    let forged = GitHubDeliveries::new("guess").issue_comment("d-5", 1, 1, "x");
    let (parts, body) = forged.into_parts();
    assert!(matches!(
        github.verify(&parts, &body),
        Err(WebhookError::BadSignature)
    ));
}
