//! Parsing: every path from a verified body to an event or an ignore, with
//! payloads built from the schema's webhook payload fields.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use chat_core::Webhook as _;
use chat_core::{
    AgentSessionAction, Event, EventKind, Inbound, MessageChange, Platform, WebhookError,
};
use chat_linear::payload::{AgentSessionEventWebhookPayload, CommentEvent};
use chat_linear::thread::{self, LinearThread};
use common::{APP_USER, ISSUE, ORG, SESSION, USER, adapter, body, builder, parts, payloads};
use proptest::prelude::*;
use serde_json::json;

fn parse_with(a: &chat_linear::LinearAdapter, v: &serde_json::Value) -> Inbound {
    let b = body(v);
    let p = parts(&b);
    a.verify(&p, &b).expect("signed and fresh");
    a.parse(&p, &b).expect("parses")
}

fn parse(v: &serde_json::Value) -> Inbound {
    parse_with(&adapter(), v)
}

fn event(v: &serde_json::Value) -> Event {
    match parse(v) {
        Inbound::Event(e) => *e,
        other => panic!("expected an event, got {other:?}"),
    }
}

fn ignored(v: &serde_json::Value) -> String {
    match parse(v) {
        Inbound::Ignored { reason } => reason,
        other => panic!("expected an ignore, got {other:?}"),
    }
}

fn malformed(v: &[u8]) -> String {
    let b = Bytes::copy_from_slice(v);
    match adapter().parse(&parts(&b), &b) {
        Err(WebhookError::Malformed(m)) => m,
        other => panic!("expected malformed, got {other:?}"),
    }
}

#[test]
fn created_opens_a_session_thread_routed_as_a_new_session() {
    let e = event(&payloads::session_created());
    assert_eq!(e.platform(), Platform::LINEAR);
    assert_eq!(e.tenant().as_str(), ORG);
    assert_eq!(e.thread, thread::session_thread(ORG, Some(ISSUE), SESSION));
    assert_eq!(e.thread.channel, ISSUE);
    assert_eq!(
        LinearThread::of(&e.thread),
        Some(LinearThread::AgentSession {
            session_id: SESSION
        })
    );
    assert_eq!(e.id.as_str(), "234d1a4e-b617-4388-90fe-adc3633d6b72");
    assert_eq!(e.dedupe_key.as_str(), format!("session:{SESSION}:created"));
    assert_eq!(e.received_at_ms, common::NOW_MS);
    assert_eq!(e.attempt, 0);
    assert!(!e.is_control());
    assert_eq!(e.raw, body(&payloads::session_created()));
    let EventKind::AgentSession(s) = &e.kind else {
        panic!("an agent session")
    };
    assert_eq!(s.action, AgentSessionAction::Created);
    assert_eq!(s.session_id, SESSION);
    assert!(s.prompt_context.as_deref().unwrap().contains("ENG-42"));
    // Without a prompt activity, the text is the comment that started it.
    assert_eq!(
        e.text(),
        Some("@helper can you find out why this is flaky?")
    );
    assert_eq!(s.user.id, USER);
    assert_eq!(s.user.name.as_deref(), Some("Ada Lovelace"));
    assert!(!s.user.is_me);

    // The full payload is there for what the event does not carry.
    let full = AgentSessionEventWebhookPayload::from_event(&e).unwrap();
    assert_eq!(
        full.guidance.unwrap()[0].body,
        "Always link the failing CI run."
    );
    assert_eq!(
        full.agent_session.issue.unwrap().identifier.as_deref(),
        Some("ENG-42")
    );
}

#[test]
fn a_session_without_an_issue_uses_its_own_id_as_the_channel() {
    let mut v = payloads::session_created();
    let s = v["agentSession"].as_object_mut().unwrap();
    s.remove("issueId");
    s.remove("issue");
    let e = event(&v);
    assert_eq!(e.thread.channel, SESSION);
    assert_eq!(e.thread.thread, format!("session:{SESSION}"));
}

#[test]
fn prompted_continues_the_session_with_the_prompt_text() {
    let e = event(&payloads::session_prompted(
        "act-1",
        "Also check the retry logic",
    ));
    assert_eq!(e.thread, thread::session_thread(ORG, Some(ISSUE), SESSION));
    assert_eq!(
        e.dedupe_key.as_str(),
        format!("session:{SESSION}:activity:act-1")
    );
    let EventKind::AgentSession(s) = &e.kind else {
        panic!("an agent session")
    };
    assert_eq!(s.action, AgentSessionAction::Prompted);
    assert_eq!(s.text.as_deref(), Some("Also check the retry logic"));
    assert_eq!(s.activity_id.as_deref(), Some("act-1"));
    assert_eq!(s.prompt_context, None);
    assert_eq!(s.user.id, USER);
    assert!(!e.is_control());
}

#[test]
fn a_stop_signal_is_a_control_event_on_the_same_thread() {
    let created = event(&payloads::session_created());
    let e = event(&payloads::session_stop("act-stop"));
    assert!(e.is_control());
    assert_eq!(e.thread, created.thread);
    assert_eq!(e.thread.thread_scope(), created.thread.thread_scope());
    assert_eq!(
        e.dedupe_key.as_str(),
        format!("session:{SESSION}:activity:act-stop")
    );
    let EventKind::AgentSession(s) = &e.kind else {
        panic!("an agent session")
    };
    assert_eq!(s.action, AgentSessionAction::StopRequested);
    assert_eq!(s.text, None);
}

#[test]
fn our_own_activities_are_ignored() {
    let mut v = payloads::session_prompted("act-2", "thinking out loud");
    v["agentActivity"]["userId"] = json!(APP_USER);
    v["agentActivity"]["user"]["id"] = json!(APP_USER);
    assert_eq!(ignored(&v), "own-activity");

    // The payload's appUserId counts even when the adapter was not told it.
    let a = common::builder().build().unwrap();
    let other_app = "b0b0b0b0-0000-4000-8000-000000000001";
    let mut v = payloads::session_prompted("act-3", "hello");
    v["appUserId"] = json!(other_app);
    v["agentActivity"]["userId"] = json!(other_app);
    assert!(matches!(parse_with(&a, &v), Inbound::Ignored { .. }));
}

#[test]
fn unknown_session_actions_and_other_types_are_ignored() {
    let mut v = payloads::session_created();
    v["action"] = json!("updated");
    assert_eq!(ignored(&v), "unsupported:AgentSessionEvent:updated");

    let issue = payloads::entity("Issue", "update", json!({"id": ISSUE, "title": "x"}));
    assert_eq!(ignored(&issue), "unsupported:Issue:update");
    let project = payloads::entity("Project", "create", json!({"id": "p1"}));
    assert_eq!(ignored(&project), "unsupported:Project:create");
    let on_issue = payloads::entity(
        "Reaction",
        "create",
        json!({"id": "r1", "emoji": "+1", "issueId": ISSUE}),
    );
    assert_eq!(ignored(&on_issue), "reaction-on:not-a-comment");
    let weird = payloads::entity("Comm\nent<script>", "cre ate", json!({"id": "x"}));
    assert_eq!(ignored(&weird), "unsupported:Commentscript:create");

    let edited = payloads::entity(
        "Comment",
        "update",
        payloads::comment_data("c1", None, USER, "edited"),
    );
    assert_eq!(ignored(&edited), "unsupported:Comment:update");
    let removed = payloads::entity(
        "Comment",
        "remove",
        payloads::comment_data("c1", None, USER, "gone"),
    );
    assert_eq!(ignored(&removed), "unsupported:Comment:remove");
}

#[test]
fn a_root_comment_is_a_message_in_its_own_thread() {
    let e = event(&payloads::comment_created(
        "c-root",
        None,
        USER,
        "Looks flaky to me",
    ));
    assert_eq!(e.thread, thread::comment_thread(ORG, ISSUE, "c-root"));
    assert_eq!(e.thread.thread, "comment:c-root");
    assert_eq!(
        LinearThread::of(&e.thread),
        Some(LinearThread::Comment {
            issue_id: ISSUE,
            root_comment_id: "c-root"
        })
    );
    assert_eq!(e.dedupe_key.as_str(), "comment:c-root");
    let m = e.message().unwrap();
    assert_eq!(m.id, "c-root");
    assert_eq!(m.text, "Looks flaky to me");
    assert_eq!(m.change, MessageChange::Posted);
    assert!(!m.is_mention);
    assert!(!m.is_dm);
    assert_eq!(m.author.id, USER);
    assert!(!m.author.is_bot);
    let full = CommentEvent::from_event(&e).unwrap();
    assert_eq!(
        full.data.issue.unwrap().identifier.as_deref(),
        Some("ENG-42")
    );
}

#[test]
fn a_reply_joins_its_roots_thread() {
    let e = event(&payloads::comment_created(
        "c-reply",
        Some("c-root"),
        USER,
        "same here",
    ));
    assert_eq!(e.thread, thread::comment_thread(ORG, ISSUE, "c-root"));
    assert_eq!(e.dedupe_key.as_str(), "comment:c-reply");
    assert_eq!(e.message().unwrap().id, "c-reply");
}

#[test]
fn mentions_of_a_configured_handle_are_mentions() {
    let a = builder().mention_name("@Helper").build().unwrap();
    let cases = [
        ("@helper why does this fail?", true),
        (
            "[Helper](https://linear.app/acme/profiles/helper) take a look",
            true,
        ),
        ("@helpers assemble", false),
        ("no mention here", false),
    ];
    for (text, mention) in cases {
        let v = payloads::comment_created("c9", None, USER, text);
        let Inbound::Event(e) = parse_with(&a, &v) else {
            panic!("an event")
        };
        assert_eq!(e.message().unwrap().is_mention, mention, "{text}");
    }
    // Without a configured handle nothing is a mention.
    let e = event(&payloads::comment_created("c9", None, USER, "@helper hi"));
    assert!(!e.message().unwrap().is_mention);
}

#[test]
fn our_own_comments_and_bot_comments_are_ignored() {
    let own = payloads::comment_created("c2", Some("c-root"), APP_USER, "Here is the answer");
    assert_eq!(ignored(&own), "own-message");

    let mut bot = payloads::comment_created("c3", None, USER, "Deployed to staging");
    bot["data"]["botActor"] = json!({"id": "github", "type": "integration", "name": "GitHub"});
    assert_eq!(ignored(&bot), "bot-message");

    let a = builder().ignore_bot_comments(false).build().unwrap();
    let Inbound::Event(e) = parse_with(&a, &bot) else {
        panic!("an event")
    };
    assert!(e.message().unwrap().author.is_bot);
}

#[test]
fn comments_outside_issues_are_ignored() {
    let mut v = payloads::comment_created("c4", None, USER, "on a project update");
    v["data"]["issueId"] = json!(null);
    v["data"]["issue"] = json!(null);
    v["data"]["projectUpdateId"] = json!("pu-1");
    assert_eq!(ignored(&v), "unsupported:Comment:not-on-an-issue");
}

#[test]
fn without_a_delivery_header_the_event_id_is_the_entity() {
    let b = body(&payloads::comment_created("c5", None, USER, "hi"));
    let p = common::parts_signed_with(common::SECRET, &b, None);
    let Inbound::Event(e) = adapter().parse(&p, &b).unwrap() else {
        panic!("an event")
    };
    assert_eq!(e.id.as_str(), "comment:c5");
    // A header that is not a plausible id is not used.
    let p = common::parts_signed_with(common::SECRET, &b, Some("has spaces in it"));
    let Inbound::Event(e) = adapter().parse(&p, &b).unwrap() else {
        panic!("an event")
    };
    assert_eq!(e.id.as_str(), "comment:c5");
}

#[test]
fn redeliveries_share_the_dedupe_key_whatever_the_delivery_id() {
    let b = body(&payloads::session_prompted("act-9", "again"));
    let first = common::parts_signed_with(common::SECRET, &b, Some("delivery-1"));
    let retry = common::parts_signed_with(common::SECRET, &b, Some("delivery-2"));
    let (Inbound::Event(a), Inbound::Event(b2)) = (
        adapter().parse(&first, &b).unwrap(),
        adapter().parse(&retry, &b).unwrap(),
    ) else {
        panic!("events")
    };
    assert_ne!(a.id, b2.id);
    assert_eq!(a.dedupe_key, b2.dedupe_key);
}

#[test]
fn optional_fields_may_be_missing_or_null() {
    let minimal = json!({
        "type": "AgentSessionEvent", "action": "prompted", "organizationId": ORG,
        "webhookTimestamp": common::NOW_MS,
        "agentSession": {"id": SESSION},
        "agentActivity": {"id": "a1", "content": {"type": "prompt", "body": "hi"}},
    });
    let e = event(&minimal);
    assert_eq!(e.text(), Some("hi"));
    assert_eq!(e.thread.channel, SESSION);

    let mut nulls = payloads::comment_created("c6", None, USER, "x");
    for k in [
        "user",
        "issue",
        "parent",
        "reactionData",
        "botActor",
        "editedAt",
    ] {
        nulls["data"][k] = json!(null);
    }
    nulls["data"]["body"] = json!(null);
    let e = event(&nulls);
    assert_eq!(e.message().unwrap().text, "");
}

#[test]
fn malformed_bodies_are_refused() {
    assert_eq!(malformed(b"not json"), "body: not a JSON object");
    assert!(malformed(b"{not json").starts_with("body: syntax error"));
    assert_eq!(malformed(b"[1,2]"), "body: not a JSON object");
    assert_eq!(malformed(br#"{"action":"create"}"#), "body: no type");
    let m = malformed(br#"{"type":"AgentSessionEvent","action":"created","organizationId":"o"}"#);
    assert!(m.starts_with("AgentSessionEvent:"), "{m}");
    let m = malformed(
        br#"{"type":"AgentSessionEvent","action":"prompted","organizationId":"o","agentSession":{"id":"s"}}"#,
    );
    assert_eq!(m, "AgentSessionEvent: prompted without agentActivity");
    let m = malformed(
        br#"{"type":"Comment","action":"create","organizationId":"o","data":{"body":"x"}}"#,
    );
    assert!(m.starts_with("Comment:"), "{m}");
    // The message says where, never what: no payload text in it.
    let m = malformed(
        br#"{"type":"Comment","action":"create","organizationId":"o","data":{"id":"c","body":{"secret":"do not log me"}}}"#,
    );
    assert!(!m.contains("do not log me"), "{m}");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..512)) {
        let a = adapter();
        let b = Bytes::from(raw);
        let p = parts(&b);
        let _ = a.verify(&p, &b);
        let _ = a.parse(&p, &b);
    }

    #[test]
    fn mangled_payloads_never_panic(
        which in 0usize..4,
        cut in 0usize..2000,
        flip in any::<u8>(),
        at in 0usize..2000,
    ) {
        let v = match which {
            0 => payloads::session_created(),
            1 => payloads::session_prompted("a", "b"),
            2 => payloads::session_stop("s"),
            _ => payloads::comment_created("c", Some("r"), USER, "text"),
        };
        let mut raw = body(&v).to_vec();
        if !raw.is_empty() {
            let i = at % raw.len();
            raw[i] ^= flip;
            raw.truncate(cut.max(1).min(raw.len()));
        }
        let a = adapter();
        let b = Bytes::from(raw);
        let p = parts(&b);
        let _ = a.verify(&p, &b);
        let _ = a.parse(&p, &b);
    }

    #[test]
    fn any_json_types_in_known_fields_never_panic(
        field in prop::sample::select(vec![
            "/agentSession", "/agentSession/id", "/agentActivity", "/agentActivity/content",
            "/agentActivity/signal", "/agentActivity/userId", "/organizationId", "/promptContext",
            "/data", "/data/id", "/data/body", "/data/parentId", "/data/issueId", "/data/botActor",
            "/webhookTimestamp", "/action", "/type",
        ]),
        value in prop_oneof![
            Just(json!(null)), Just(json!(true)), Just(json!(-1)), Just(json!(1.5e300)),
            Just(json!("")), Just(json!("stop")), Just(json!([])), Just(json!({})),
            Just(json!([{"id": 1}])), Just(json!({"id": null, "body": 3})),
        ],
        which in 0usize..3,
    ) {
        let mut v = match which {
            0 => payloads::session_created(),
            1 => payloads::session_stop("s"),
            _ => payloads::comment_created("c", Some("r"), USER, "text"),
        };
        if let Some(slot) = v.pointer_mut(field) {
            *slot = value;
        }
        let a = adapter();
        let b = body(&v);
        let p = parts(&b);
        let _ = a.verify(&p, &b);
        let _ = a.parse(&p, &b);
    }
}
