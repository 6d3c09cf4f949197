//! Verify + parse over realistic Slack payloads, and the answers per verdict.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use chat_core::Webhook as _;
use chat_core::{
    Event, EventKind, Inbound, Mention, MessageChange, PlatformAdapter, Verdict, WebhookError,
};
use chat_slack::{NO_RETRY_HEADER, SlackAdapter, signature};
use common::*;
use serde_json::{Value, json};

fn parse_event(adapter: &SlackAdapter, body: &Value) -> Event {
    event_of(deliver(adapter, &json_request(body)).unwrap())
}

fn ignored(adapter: &SlackAdapter, body: &Value) -> String {
    ignored_reason(deliver(adapter, &json_request(body)).unwrap())
}

fn message_of(e: &Event) -> &chat_core::Message {
    match &e.kind {
        EventKind::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn app_mention(ts: &str, thread_ts: Option<&str>) -> Value {
    let mut e = json!({
        "type": "app_mention",
        "user": "U061F7AUR",
        "text": format!("<@{BOT_USER}> what's the status of the deploy?"),
        "ts": ts,
        "channel": "C0LAN2Q65",
        "event_ts": ts,
        "team": TEAM,
        "client_msg_id": "c9f6e1a0-5d4e-4b7a-9a49-6a9f2b1f3e11",
        "blocks": [{"type": "rich_text", "block_id": "x", "elements": []}]
    });
    if let Some(t) = thread_ts {
        e["thread_ts"] = json!(t);
        e["parent_user_id"] = json!("U061F7AUR");
    }
    e
}

fn channel_message(ts: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "channel": "C0LAN2Q65",
        "user": "U061F7AUR",
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "channel_type": "channel",
        "team": TEAM,
        "user_profile": {"display_name": "river", "real_name": "River Song"}
    })
}

// ---------------------------------------------------------------- url_verification

#[test]
fn url_verification_echoes_the_challenge_after_verification() {
    let a = adapter();
    let body = json!({
        "token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification"
    });
    let Inbound::Response(r) = deliver(&a, &json_request(&body)).unwrap() else {
        panic!("a reply");
    };
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        r.body().as_ref(),
        b"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
}

#[test]
fn url_verification_is_signed_over_the_whole_body() {
    // E3: signing only the challenge must not pass.
    let a = adapter();
    let body = br#"{"token":"t","challenge":"abc","type":"url_verification"}"#;
    let (parts, _) = signed(Some("application/json"), b"abc", &[]);
    assert_eq!(
        a.verify(&parts, &Bytes::from_static(body)),
        Err(WebhookError::BadSignature)
    );
}

#[test]
fn url_verification_without_a_challenge_is_malformed() {
    let a = adapter();
    let err = deliver(&a, &json_request(&json!({"type": "url_verification"}))).unwrap_err();
    assert!(matches!(err, WebhookError::Malformed(_)), "{err:?}");
}

// ---------------------------------------------------------------- messages

#[test]
fn an_app_mention_is_a_mention_keyed_on_channel_and_ts() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback("Ev01", app_mention("1700000000.000100", None)),
    );
    assert_eq!(e.id.as_str(), "Ev01");
    assert_eq!(e.dedupe_key.as_str(), "C0LAN2Q65:1700000000.000100");
    assert_eq!(
        e.thread.to_string(),
        "slack:T0001:C0LAN2Q65:1700000000.000100"
    );
    assert_eq!(e.attempt, 0);
    assert_eq!(e.retry_reason, None);
    assert_eq!(e.received_at_ms, NOW * 1000);
    let m = message_of(&e);
    assert_eq!(m.id, "1700000000.000100");
    assert_eq!(m.author.id, "U061F7AUR");
    assert!(!m.author.is_bot && !m.author.is_me);
    assert!(m.is_mention && !m.is_dm);
    assert_eq!(m.change, MessageChange::Posted);
    assert_eq!(m.markup, "<@UBOT> what's the status of the deploy?");
    assert_eq!(m.text, "@UBOT what's the status of the deploy?");
    assert_eq!(m.text_after_mention(), "what's the status of the deploy?");
    assert_eq!(m.mentions, [Mention::new("UBOT").with_me(true)]);
}

/// An event keeps its payload as `raw` — everything but Slack's legacy
/// verification `token`, a credential of the app that is never needed and
/// must not be stored with the event in the state backend.
#[test]
fn the_raw_body_is_kept_without_the_verification_token() {
    let a = adapter();
    let body = callback("Ev01", app_mention("1.0", None));
    assert!(body.get("token").is_some());
    let req = json_request(&body);
    let e = event_of(deliver(&a, &req).unwrap());
    let kept: serde_json::Value = serde_json::from_slice(&e.raw).unwrap();
    let mut expected = body;
    expected.as_object_mut().unwrap().remove("token");
    assert_eq!(kept, expected);

    // A body with its `token` twice is refused, as a body with any member
    // the adapter reads twice is: which of the two to cut is not the
    // adapter's guess to make.
    let mut twice = serde_json::to_string(&expected).unwrap();
    twice.insert_str(1, r#""token":"a","token":"b","#);
    let req = signed(Some("application/json"), twice.as_bytes(), &[]);
    assert!(matches!(deliver(&a, &req), Err(WebhookError::Malformed(_))));

    // A slash command's form and an interaction's payload alike.
    let form = "token=SECRET-VERIFICATION&team_id=T0001&channel_id=C1&user_id=U1&command=%2Fecho&text=hi&trigger_id=1.2.3&response_url=https%3A%2F%2Fhooks.slack.com%2Fx";
    let e = event_of(deliver(&a, &form_request(form)).unwrap());
    let raw = String::from_utf8(e.raw.to_vec()).unwrap();
    assert!(
        !raw.contains("SECRET-VERIFICATION") && !raw.contains("token="),
        "{raw}"
    );
    assert!(
        raw.contains("response_url=") && raw.contains("text=hi"),
        "{raw}"
    );
    let payload = serde_json::json!({
        "type": "block_actions", "token": "SECRET-VERIFICATION", "trigger_id": "9.9.9",
        "team": {"id": "T0001"}, "user": {"id": "U1"},
        "channel": {"id": "C1"}, "container": {"type": "message", "message_ts": "1.0", "channel_id": "C1"},
        "actions": [{"action_id": "go", "value": "v"}],
    });
    let e = event_of(deliver(&a, &payload_request(&payload)).unwrap());
    let raw = String::from_utf8(e.raw.to_vec()).unwrap();
    assert!(!raw.contains("SECRET-VERIFICATION"), "{raw}");
    assert!(raw.contains("block_actions"), "{raw}");
}

#[test]
fn a_mention_in_a_thread_belongs_to_the_thread_root() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "Ev02",
            app_mention("1700000050.000200", Some("1700000000.000100")),
        ),
    );
    assert_eq!(e.thread.thread, "1700000000.000100");
    assert_eq!(e.dedupe_key.as_str(), "C0LAN2Q65:1700000050.000200");
    assert_eq!(message_of(&e).id, "1700000050.000200");
}

#[test]
fn the_message_twin_of_an_app_mention_shares_its_dedupe_key() {
    // E4/E7: different event ids, same (channel, ts).
    let a = adapter();
    let mention = parse_event(
        &a,
        &callback("Ev0A", app_mention("1700000000.000100", None)),
    );
    let twin = parse_event(
        &a,
        &callback(
            "Ev0B",
            channel_message(
                "1700000000.000100",
                "<@UBOT> what's the status of the deploy?",
            ),
        ),
    );
    assert_ne!(mention.id, twin.id);
    assert_eq!(mention.dedupe_key, twin.dedupe_key);
    assert_eq!(mention.thread, twin.thread);
    assert!(message_of(&twin).is_mention, "the twin is also a mention");
}

#[test]
fn a_legacy_labelled_mention_counts() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback("Ev1", channel_message("1.0", "hey <@UBOT|bot> hi")),
    );
    assert!(message_of(&e).is_mention);
    let e = parse_event(
        &a,
        &callback("Ev2", channel_message("1.0", "hey <@UBOTX> hi")),
    );
    assert!(
        !message_of(&e).is_mention,
        "another user whose id starts like ours"
    );
}

#[test]
fn a_plain_channel_message_is_not_a_mention() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback("Ev03", channel_message("1700000001.000300", "lunch?")),
    );
    let m = message_of(&e);
    assert!(!m.is_mention && !m.is_dm);
    assert_eq!(m.author.name.as_deref(), Some("river"));
    assert_eq!(e.thread.thread, "1700000001.000300");
}

#[test]
fn a_thread_reply_belongs_to_its_root() {
    let a = adapter();
    let mut m = channel_message("1700000099.000900", "me too");
    m["thread_ts"] = json!("1700000001.000300");
    m["parent_user_id"] = json!("U0OTHER");
    let e = parse_event(&a, &callback("Ev04", m));
    assert_eq!(e.thread.thread, "1700000001.000300");
    assert_eq!(e.dedupe_key.as_str(), "C0LAN2Q65:1700000099.000900");
}

#[test]
fn a_direct_message_is_a_dm() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "Ev05",
            json!({
                "type": "message", "channel": "D0PNCRP9N", "user": "U061F7AUR",
                "text": "hello bot", "ts": "1700000002.000400", "event_ts": "1700000002.000400",
                "channel_type": "im"
            }),
        ),
    );
    assert!(message_of(&e).is_dm);
    assert_eq!(e.thread.channel, "D0PNCRP9N");
}

#[test]
fn user_message_subtypes_are_messages_and_notices_are_ignored() {
    let a = adapter();
    for subtype in ["thread_broadcast", "file_share", "me_message"] {
        let mut m = channel_message("1.5", "text");
        m["subtype"] = json!(subtype);
        let e = parse_event(&a, &callback("Ev", m));
        assert_eq!(message_of(&e).change, MessageChange::Posted, "{subtype}");
    }
    for subtype in [
        "channel_join",
        "channel_topic",
        "pinned_item",
        "message_replied",
    ] {
        let mut m = channel_message("1.5", "text");
        m["subtype"] = json!(subtype);
        assert_eq!(
            ignored(&a, &callback("Ev", m)),
            format!("subtype:{subtype}")
        );
    }
}

// ---------------------------------------------------------------- loops

fn from_bot(user: Option<&str>, bot_id: &str, subtype: Option<&str>) -> Value {
    let mut m = json!({
        "type": "message", "channel": "C0LAN2Q65", "text": "I am a bot",
        "ts": "1700000003.000500", "bot_id": bot_id, "app_id": "A0APP",
        "bot_profile": {"id": bot_id, "name": "bot"}, "channel_type": "channel"
    });
    if let Some(u) = user {
        m["user"] = json!(u);
    }
    if let Some(s) = subtype {
        m["subtype"] = json!(s);
        m["username"] = json!("classic");
    }
    m
}

#[test]
fn our_own_messages_are_ignored() {
    let a = adapter();
    assert_eq!(
        ignored(&a, &callback("Ev", from_bot(Some(BOT_USER), BOT_ID, None))),
        "own-message"
    );
    // Our bot id alone is enough.
    assert_eq!(
        ignored(&a, &callback("Ev", from_bot(None, BOT_ID, None))),
        "own-message"
    );
    // Our user id alone is enough.
    let mut m = channel_message("1.0", "hi");
    m["user"] = json!(BOT_USER);
    assert_eq!(ignored(&a, &callback("Ev", m)), "own-message");
}

#[test]
fn our_own_messages_are_recognized_from_authorizations_without_configuration() {
    let a = SlackAdapter::builder()
        .signing_secret(SECRET)
        .bot_token("xoxb-test-token")
        .api_base_url("http://127.0.0.1:9/api")
        .clock(|| std::time::UNIX_EPOCH + std::time::Duration::from_secs(NOW))
        .build()
        .unwrap();
    let m = from_bot(Some(BOT_USER), "BUNKNOWN", None);
    assert_eq!(ignored(&a, &callback("Ev", m)), "own-message");
    // And mentions of us are recognized the same way.
    let e = parse_event(&a, &callback("Ev", channel_message("1.0", "<@UBOT> hi")));
    assert!(message_of(&e).is_mention);
}

#[test]
fn other_bots_are_ignored_by_default_and_marked_when_allowed() {
    let a = adapter();
    assert_eq!(
        ignored(
            &a,
            &callback("Ev", from_bot(Some("UOTHER"), "BOTHER", None))
        ),
        "bot-message"
    );
    assert_eq!(
        ignored(
            &a,
            &callback("Ev", from_bot(None, "BOTHER", Some("bot_message")))
        ),
        "bot-message"
    );

    let open = builder().ignore_other_bots(false).build().unwrap();
    let e = parse_event(
        &open,
        &callback("Ev", from_bot(Some("UOTHER"), "BOTHER", None)),
    );
    let m = message_of(&e);
    assert!(m.author.is_bot && !m.author.is_me);
    assert_eq!(m.author.id, "UOTHER");
    let e = parse_event(
        &open,
        &callback("Ev", from_bot(None, "BOTHER", Some("bot_message"))),
    );
    assert_eq!(message_of(&e).author.id, "BOTHER");
    assert_eq!(message_of(&e).author.name.as_deref(), Some("classic"));
    // Our own stay ignored.
    assert_eq!(
        ignored(
            &open,
            &callback("Ev", from_bot(Some(BOT_USER), BOT_ID, None))
        ),
        "own-message"
    );
}

// ---------------------------------------------------------------- edits and deletes

fn message_changed(inner: Value, previous_text: &str) -> Value {
    let mut v = json!({
        "type": "message",
        "subtype": "message_changed",
        "hidden": true,
        "channel": "C0LAN2Q65",
        "previous_message": {
            "type": "message", "user": "U061F7AUR", "text": previous_text,
            "ts": "1700000000.000100"
        },
        "event_ts": "1700000100.000000",
        "ts": "1700000100.000000",
        "channel_type": "channel"
    });
    v["message"] = inner;
    v
}

#[test]
fn an_edit_is_an_edited_message_without_a_top_level_user_or_text() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "EvEdit",
            message_changed(
                json!({
                    "type": "message", "user": "U061F7AUR", "text": "fixed typo <@UBOT>",
                    "ts": "1700000000.000100",
                    "edited": {"user": "U061F7AUR", "ts": "1700000100.000000"}
                }),
                "fixd typo",
            ),
        ),
    );
    let m = message_of(&e);
    assert_eq!(m.change, MessageChange::Edited);
    assert_eq!(m.id, "1700000000.000100");
    assert_eq!(m.markup, "fixed typo <@UBOT>");
    assert_eq!(m.text, "fixed typo @UBOT");
    assert_eq!(m.author.id, "U061F7AUR");
    assert!(m.is_mention);
    assert_eq!(e.thread.thread, "1700000000.000100");
    // Not the post's key: an edit must not be a duplicate of the post.
    assert_eq!(
        e.dedupe_key.as_str(),
        "C0LAN2Q65:1700000000.000100:edited:1700000100.000000"
    );
}

#[test]
fn an_edit_of_a_thread_reply_belongs_to_the_thread() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "EvEdit",
            message_changed(
                json!({"user": "U1", "text": "new", "ts": "5.0", "thread_ts": "4.0",
                       "edited": {"ts": "6.0"}}),
                "old",
            ),
        ),
    );
    assert_eq!(e.thread.thread, "4.0");
}

#[test]
fn edits_of_bot_messages_are_filtered_by_the_nested_bot_id() {
    // E8: the top level has no bot_id; only event.message has it.
    let a = adapter();
    let ours = message_changed(
        json!({"type": "message", "bot_id": BOT_ID, "user": BOT_USER, "text": "thinking… done",
               "ts": "1.0", "edited": {"ts": "2.0"}}),
        "thinking…",
    );
    assert_eq!(ignored(&a, &callback("Ev", ours)), "own-message");
    let ours_bot_id_only = message_changed(
        json!({"type": "message", "bot_id": BOT_ID, "text": "b", "ts": "1.0"}),
        "a",
    );
    assert_eq!(
        ignored(&a, &callback("Ev", ours_bot_id_only)),
        "own-message"
    );
    let other = message_changed(
        json!({"type": "message", "bot_id": "BOTHER", "text": "b", "ts": "1.0"}),
        "a",
    );
    assert_eq!(ignored(&a, &callback("Ev", other)), "bot-message");
}

#[test]
fn an_unfurl_that_leaves_the_text_alone_is_ignored() {
    let a = adapter();
    let unfurl = message_changed(
        json!({"type": "message", "user": "U061F7AUR", "text": "see https://example.com",
               "ts": "1.0", "attachments": [{"title": "Example"}]}),
        "see https://example.com",
    );
    assert_eq!(ignored(&a, &callback("Ev", unfurl)), "unchanged-text");
}

#[test]
fn an_edit_without_its_message_is_ignored_not_a_crash() {
    let a = adapter();
    let bare =
        json!({"type": "message", "subtype": "message_changed", "channel": "C1", "hidden": true});
    assert_eq!(ignored(&a, &callback("Ev", bare)), "edit-without-message");
    let no_ts = message_changed(json!({"user": "U1", "text": "x"}), "y");
    assert_eq!(ignored(&a, &callback("Ev", no_ts)), "edit-without-ts");
}

#[test]
fn an_edit_without_edited_ts_is_keyed_on_the_event_id() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "EvNoEdited",
            message_changed(json!({"user": "U1", "text": "b", "ts": "1.0"}), "a"),
        ),
    );
    assert_eq!(e.dedupe_key.as_str(), "EvNoEdited");
}

#[test]
fn a_delete_is_a_deleted_message() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "EvDel",
            json!({
                "type": "message", "subtype": "message_deleted", "hidden": true,
                "deleted_ts": "1700000050.000200", "channel": "C0LAN2Q65",
                "previous_message": {"type": "message", "user": "U061F7AUR", "text": "oops",
                                     "ts": "1700000050.000200", "thread_ts": "1700000000.000100"},
                "event_ts": "1700000200.000000", "ts": "1700000200.000000", "channel_type": "channel"
            }),
        ),
    );
    let m = message_of(&e);
    assert_eq!(m.change, MessageChange::Deleted);
    assert_eq!(m.id, "1700000050.000200");
    assert_eq!(m.author.id, "U061F7AUR");
    assert!(m.text.is_empty());
    assert_eq!(e.thread.thread, "1700000000.000100");
    assert_eq!(e.dedupe_key.as_str(), "C0LAN2Q65:1700000050.000200:deleted");
}

#[test]
fn a_delete_without_previous_message_does_not_crash() {
    let a = adapter();
    let e = parse_event(
        &a,
        &callback(
            "EvDel",
            json!({"type": "message", "subtype": "message_deleted", "deleted_ts": "9.0",
                   "channel": "C1", "hidden": true}),
        ),
    );
    assert_eq!(message_of(&e).author.id, "");
    assert_eq!(e.thread.thread, "9.0");
    let nothing = json!({"type": "message", "subtype": "message_deleted", "channel": "C1"});
    assert_eq!(ignored(&a, &callback("Ev", nothing)), "delete-without-ts");
}

#[test]
fn deleting_our_own_message_is_ignored() {
    let a = adapter();
    let del = json!({"type": "message", "subtype": "message_deleted", "deleted_ts": "9.0",
                     "channel": "C1", "previous_message": {"bot_id": BOT_ID, "text": "x", "ts": "9.0"}});
    assert_eq!(ignored(&a, &callback("Ev", del)), "own-message");
}

// ---------------------------------------------------------------- reactions

fn reaction(kind: &str, user: &str, item: Value) -> Value {
    let mut v = json!({
        "type": kind, "user": user, "reaction": "thumbsup", "item_user": "U0G9QF9C6",
         "event_ts": "1360782804.083113"
    });
    v["item"] = item;
    v
}

#[test]
fn reactions_are_keyed_on_the_event_id() {
    let a = adapter();
    let item = json!({"type": "message", "channel": "C0G9QF9GZ", "ts": "1360782400.498405"});
    let e = parse_event(
        &a,
        &callback(
            "EvR1",
            reaction("reaction_added", "U024BE7LH", item.clone()),
        ),
    );
    assert_eq!(e.dedupe_key.as_str(), "EvR1");
    assert_eq!(
        e.thread.to_string(),
        "slack:T0001:C0G9QF9GZ:1360782400.498405"
    );
    let EventKind::Reaction(r) = &e.kind else {
        panic!("a reaction")
    };
    assert!(r.added);
    assert_eq!(r.emoji, "thumbsup");
    assert_eq!(r.message_id, "1360782400.498405");
    assert_eq!(r.user.id, "U024BE7LH");

    let e = parse_event(
        &a,
        &callback(
            "EvR2",
            reaction("reaction_removed", "U024BE7LH", item.clone()),
        ),
    );
    let EventKind::Reaction(r) = &e.kind else {
        panic!("a reaction")
    };
    assert!(!r.added);

    assert_eq!(
        ignored(
            &a,
            &callback("EvR3", reaction("reaction_added", BOT_USER, item))
        ),
        "own-reaction"
    );
    let file = json!({"type": "file", "file": "F0HS27V1Z"});
    assert_eq!(
        ignored(
            &a,
            &callback("EvR4", reaction("reaction_added", "U1", file))
        ),
        "reaction-on:file"
    );
}

// ---------------------------------------------------------------- other event kinds

#[test]
fn assistant_threads_are_other_events_on_their_thread() {
    let a = adapter();
    for kind in [
        "assistant_thread_started",
        "assistant_thread_context_changed",
    ] {
        let e = parse_event(
            &a,
            &callback(
                "EvA",
                json!({
                    "type": kind,
                    "assistant_thread": {
                        "user_id": "U123ABC456", "context": {"channel_id": "C123ABC456",
                        "team_id": TEAM, "enterprise_id": "E480293PS82"},
                        "channel_id": "D123ABC456", "thread_ts": "1729999327.187299"
                    },
                    "event_ts": "1715873754.429808"
                }),
            ),
        );
        assert_eq!(
            e.thread.to_string(),
            "slack:T0001:D123ABC456:1729999327.187299"
        );
        let EventKind::Other(o) = &e.kind else {
            panic!("other")
        };
        assert_eq!(o.name, kind);
        assert_eq!(o.data["assistant_thread"]["user_id"], "U123ABC456");
        assert_eq!(e.dedupe_key.as_str(), "EvA");
    }
}

#[test]
fn app_home_and_member_joined_are_channel_level_other_events() {
    let a = adapter();
    let home = json!({"type": "app_home_opened", "user": "U061F7AUR", "channel": "D0LAN2Q65",
                      "event_ts": "1515449522000016", "tab": "home", "view": {"id": "V1"}});
    let e = parse_event(&a, &callback("EvH", home));
    assert_eq!(e.thread.channel, "D0LAN2Q65");
    assert_eq!(e.thread.thread, "");
    assert!(matches!(&e.kind, EventKind::Other(o) if o.name == "app_home_opened"));

    let joined = json!({"type": "member_joined_channel", "user": "W06GH7XHN", "channel": "C0698JE0H",
                        "channel_type": "C", "team": TEAM, "inviter": "U123456789"});
    let e = parse_event(&a, &callback("EvJ", joined));
    assert_eq!(e.thread.channel, "C0698JE0H");
    assert!(matches!(&e.kind, EventKind::Other(o) if o.name == "member_joined_channel"));
}

#[test]
fn unknown_events_and_envelopes_are_ignored() {
    let a = adapter();
    let created = json!({"type": "channel_created", "channel": {"id": "C1", "name": "x"}});
    assert_eq!(
        ignored(&a, &callback("Ev", created)),
        "unsupported:channel_created"
    );
    let limited = json!({"token": "t", "type": "app_rate_limited", "team_id": TEAM,
                         "minute_rate_limited": 1518467820, "api_app_id": "A0APP"});
    assert_eq!(ignored(&a, &limited), "app-rate-limited");
    assert_eq!(
        ignored(&a, &json!({"type": "some_future<thing>"})),
        "unsupported:some_futurething"
    );
}

// ---------------------------------------------------------------- tenants

#[test]
fn an_org_wide_install_is_keyed_by_the_enterprise() {
    let a = adapter();
    let mut body = callback("Ev", channel_message("1.0", "hi"));
    body["enterprise_id"] = json!("E0ORG");
    body["authorizations"] = json!([{"enterprise_id": "E0ORG", "team_id": null,
        "user_id": BOT_USER, "is_bot": true, "is_enterprise_install": true}]);
    assert_eq!(parse_event(&a, &body).thread.tenant.as_str(), "E0ORG");

    // A workspace install inside an org is keyed by the team.
    body["authorizations"] = json!([{"enterprise_id": "E0ORG", "team_id": "T0WS",
        "user_id": BOT_USER, "is_bot": true, "is_enterprise_install": false}]);
    assert_eq!(parse_event(&a, &body).thread.tenant.as_str(), "T0WS");
}

#[test]
fn without_authorizations_the_team_id_is_the_tenant() {
    let a = adapter();
    let mut body = callback("Ev", channel_message("1.0", "hi"));
    body.as_object_mut().unwrap().remove("authorizations");
    assert_eq!(parse_event(&a, &body).thread.tenant.as_str(), TEAM);
    body.as_object_mut().unwrap().remove("team_id");
    body["enterprise_id"] = json!("E0ORG");
    assert_eq!(parse_event(&a, &body).thread.tenant.as_str(), "E0ORG");
    body.as_object_mut().unwrap().remove("enterprise_id");
    let err = deliver(&a, &json_request(&body)).unwrap_err();
    assert!(matches!(err, WebhookError::Malformed(_)));
}

// ---------------------------------------------------------------- retries

#[test]
fn retry_headers_are_recorded_never_used_to_skip() {
    let a = adapter();
    let body = serde_json::to_vec(&callback("Ev01", app_mention("1.0", None))).unwrap();
    let req = signed(
        Some("application/json"),
        &body,
        &[
            ("x-slack-retry-num", "2"),
            ("x-slack-retry-reason", "http_timeout"),
        ],
    );
    let e = event_of(deliver(&a, &req).unwrap());
    assert_eq!(e.attempt, 2);
    assert_eq!(e.retry_reason.as_deref(), Some("http_timeout"));
    assert_eq!(e.dedupe_key.as_str(), "C0LAN2Q65:1.0");
    // Garbage retry headers are not fatal.
    let req = signed(
        Some("application/json"),
        &body,
        &[("x-slack-retry-num", "lots")],
    );
    assert_eq!(event_of(deliver(&a, &req).unwrap()).attempt, 0);
}

// ---------------------------------------------------------------- refusals

#[test]
fn malformed_bodies_are_refused_not_panicked_on() {
    let a = adapter();
    let cases: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"{".to_vec(),
        b"[]".to_vec(),
        b"{}".to_vec(),
        b"null".to_vec(),
        br#"{"type":5}"#.to_vec(),
        br#"{"type":"event_callback","team_id":"T1","event":{"type":"message"}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1"}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{"type":"message","ts":"1.0"}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{"type":"message","channel":"C1"}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{"type":"message","channel":"C1","ts":"1","text":5}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{"type":"reaction_added","item":{}}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{"type":"app_home_opened"}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{"type":"assistant_thread_started"}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":{}}"#.to_vec(),
        br#"{"type":"event_callback","event_id":"Ev","team_id":"T1","event":"x"}"#.to_vec(),
        b"\xff\xfe{".to_vec(),
    ];
    for body in cases {
        let req = signed(Some("application/json"), &body, &[]);
        match deliver(&a, &req) {
            Err(WebhookError::Malformed(msg)) => assert!(!msg.is_empty()),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(&body)),
        }
    }
}

#[test]
fn malformed_messages_do_not_echo_the_input() {
    let a = adapter();
    let req = signed(
        Some("application/json"),
        br#"{"type":"secret-value-here","x":}"#,
        &[],
    );
    let WebhookError::Malformed(msg) = deliver(&a, &req).unwrap_err() else {
        panic!()
    };
    assert!(!msg.contains("secret-value-here"), "{msg}");
}

#[test]
fn bodies_over_the_cap_are_too_large() {
    let a = builder().max_body_bytes(64).build().unwrap();
    assert_eq!(a.max_body_bytes(), 64);
    let req = json_request(&callback("Ev", app_mention("1.0", None)));
    assert_eq!(
        a.verify(&req.0, &req.1),
        Err(WebhookError::TooLarge { limit: 64 })
    );
    assert_eq!(
        a.parse(&req.0, &req.1).unwrap_err(),
        WebhookError::TooLarge { limit: 64 }
    );
}

#[test]
fn only_post_is_accepted() {
    let a = adapter();
    let (mut parts, body) = json_request(&json!({"type": "url_verification", "challenge": "c"}));
    parts.method = http::Method::GET;
    assert_eq!(a.verify(&parts, &body), Err(WebhookError::MethodNotAllowed));
}

#[test]
fn stale_and_future_deliveries_are_refused() {
    let a = adapter();
    let body = serde_json::to_vec(&callback("Ev", app_mention("1.0", None))).unwrap();
    for (ts, ok) in [
        (NOW - 301, false),
        (NOW - 299, true),
        (NOW + 299, true),
        (NOW + 301, false),
    ] {
        let req = signed_at(ts, Some("application/json"), &body, &[]);
        let got = a.verify(&req.0, &req.1);
        assert_eq!(got.is_ok(), ok, "{ts}: {got:?}");
        if !ok {
            assert_eq!(got, Err(WebhookError::StaleTimestamp));
        }
    }
}

#[test]
fn a_missing_content_type_is_sniffed() {
    let a = adapter();
    let body = serde_json::to_vec(&callback("Ev", app_mention("1.0", None))).unwrap();
    let e = event_of(deliver(&a, &signed(None, &body, &[])).unwrap());
    assert!(matches!(e.kind, EventKind::Message(_)));
    let form = b"ssl_check=1&token=x";
    assert!(matches!(
        deliver(&a, &signed(None, form, &[])).unwrap(),
        Inbound::Response(_)
    ));
}

// ---------------------------------------------------------------- slash commands

/// The slash command body of Slack's signing documentation.
const DOC_SLASH_BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";

#[test]
fn the_documented_slash_command_verifies_and_parses() {
    let a = SlackAdapter::builder()
        .signing_secret("8f742231b10e8888abcd99yyyzzz85a5")
        .bot_token("xoxb-test")
        .clock(|| std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_531_420_618))
        .build()
        .unwrap();
    let (parts, ()) = http::Request::post("/slack/commands")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", "1531420618")
        .header(
            "x-slack-signature",
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
        )
        .body(())
        .unwrap()
        .into_parts();
    let body = Bytes::from_static(DOC_SLASH_BODY.as_bytes());
    a.verify(&parts, &body).unwrap();
    let e = event_of(a.parse(&parts, &body).unwrap());
    assert_eq!(e.thread.to_string(), "slack:T1DC2JH3J:G8PSS9T3V:");
    assert_eq!(
        e.id.as_str(),
        "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    );
    assert_eq!(e.dedupe_key.as_str(), e.id.as_str());
    let EventKind::SlashCommand(c) = &e.kind else {
        panic!("a command")
    };
    assert_eq!(c.command, "/webhook-collect");
    assert_eq!(c.text, "");
    assert_eq!(c.user.id, "U2CERLKJA");
    assert_eq!(c.user.name.as_deref(), Some("roadrunner"));
    assert_eq!(
        c.follow_up.as_ref().map(chat_core::Handle::as_str),
        Some("https://hooks.slack.com/commands/T1DC2JH3J/397700885554/96rGlfmibIGlgcZRskXaIFfN")
    );
    assert!(c.trigger.is_some());
}

#[test]
fn slash_command_text_is_decoded_and_org_installs_use_the_enterprise() {
    let a = adapter();
    let body = "token=x&team_id=T0WS&enterprise_id=E0ORG&is_enterprise_install=true&channel_id=C1&user_id=U1&command=%2Fask&text=what+is+*bold*+%26+%3Cthis%3E&trigger_id=tr1&response_url=https%3A%2F%2Fhooks.slack.com%2Fx";
    let e = event_of(deliver(&a, &form_request(body)).unwrap());
    assert_eq!(e.thread.tenant.as_str(), "E0ORG");
    let EventKind::SlashCommand(c) = &e.kind else {
        panic!()
    };
    assert_eq!(c.text, "what is *bold* & <this>");
    let body = body.replace("is_enterprise_install=true", "is_enterprise_install=false");
    assert_eq!(
        event_of(deliver(&a, &form_request(&body)).unwrap())
            .thread
            .tenant
            .as_str(),
        "T0WS"
    );
}

#[test]
fn a_slash_command_without_trigger_id_gets_a_stable_body_id() {
    let a = adapter();
    let body = "team_id=T1&channel_id=C1&user_id=U1&command=%2Fx&text=";
    let one = event_of(deliver(&a, &form_request(body)).unwrap());
    let two = event_of(deliver(&a, &form_request(body)).unwrap());
    assert!(one.id.as_str().starts_with("body-"));
    assert_eq!(one.id, two.id);
}

#[test]
fn the_ssl_check_is_answered_200() {
    let a = adapter();
    let Inbound::Response(r) = deliver(
        &a,
        &form_request("ssl_check=1&token=xyzz0WbapA4vBCDEFasx0q6G"),
    )
    .unwrap() else {
        panic!("a reply");
    };
    assert_eq!(r.status(), 200);
    assert!(r.body().is_empty());
}

#[test]
fn form_bodies_without_a_command_or_payload_are_malformed() {
    let a = adapter();
    for body in [
        "",
        "token=x",
        "ssl_check=0",
        "command=&team_id=T1",
        "team_id=T1&command=%2Fx",
    ] {
        let err = deliver(&a, &form_request(body)).unwrap_err();
        assert!(matches!(err, WebhookError::Malformed(_)), "{body}: {err:?}");
    }
}

// ---------------------------------------------------------------- interactivity

fn block_actions(container: Value, message: Option<Value>, action: Value) -> Value {
    let mut p = json!({
        "type": "block_actions",
        "user": {"id": "U061F7AUR", "username": "river", "name": "river", "team_id": TEAM},
        "api_app_id": "A0APP",
        "token": "XXYYZZ",

        "trigger_id": "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3",
        "team": {"id": TEAM, "domain": "example"},
        "enterprise": null,
        "is_enterprise_install": false,
        "channel": {"id": "C0LAN2Q65", "name": "general"},
        "response_url": "https://hooks.slack.com/actions/T0001/1/abc",
        "actions": []
    });
    p["container"] = container;
    p["actions"] = Value::Array(vec![action]);
    if let Some(m) = message {
        p["message"] = m;
    }
    p
}

#[test]
fn a_button_in_a_thread_reply_acts_on_the_thread() {
    let a = adapter();
    let payload = block_actions(
        json!({"type": "message", "message_ts": "1700000050.000200", "channel_id": "C0LAN2Q65",
               "is_ephemeral": false, "thread_ts": "1700000000.000100"}),
        Some(
            json!({"type": "message", "ts": "1700000050.000200", "thread_ts": "1700000000.000100",
                    "bot_id": BOT_ID, "text": "Approve?"}),
        ),
        json!({"type": "button", "action_id": "approve", "block_id": "b1", "value": "deploy-42",
               "action_ts": "1700000060.000000", "text": {"type": "plain_text", "text": "Approve"}}),
    );
    let e = event_of(deliver(&a, &payload_request(&payload)).unwrap());
    assert_eq!(
        e.thread.to_string(),
        "slack:T0001:C0LAN2Q65:1700000000.000100"
    );
    assert_eq!(
        e.id.as_str(),
        "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3"
    );
    let EventKind::Action(act) = &e.kind else {
        panic!("an action")
    };
    assert_eq!(act.action_id, "approve");
    assert_eq!(act.value.as_deref(), Some("deploy-42"));
    assert_eq!(act.user.id, "U061F7AUR");
    assert_eq!(
        act.follow_up.as_ref().map(chat_core::Handle::as_str),
        Some("https://hooks.slack.com/actions/T0001/1/abc")
    );
    assert!(act.trigger.is_some());
}

#[test]
fn a_select_on_a_root_message_acts_on_that_message_thread() {
    let a = adapter();
    let payload = block_actions(
        json!({"type": "message", "message_ts": "1700000001.000300", "channel_id": "C0LAN2Q65"}),
        Some(json!({"type": "message", "ts": "1700000001.000300", "text": "Pick one"})),
        json!({"type": "static_select", "action_id": "env", "block_id": "b2",
               "selected_option": {"text": {"type": "plain_text", "text": "Prod"}, "value": "prod"},
               "action_ts": "1700000061.000000"}),
    );
    let e = event_of(deliver(&a, &payload_request(&payload)).unwrap());
    assert_eq!(e.thread.thread, "1700000001.000300");
    let EventKind::Action(act) = &e.kind else {
        panic!()
    };
    assert_eq!(act.value.as_deref(), Some("prod"));
}

#[test]
fn an_action_in_a_modal_belongs_to_the_root_view() {
    let a = adapter();
    let mut payload = block_actions(
        json!({"type": "view", "view_id": "V0PUSHED"}),
        None,
        json!({"type": "users_select", "action_id": "who", "selected_user": "U0SOMEONE"}),
    );
    payload.as_object_mut().unwrap().remove("channel");
    payload["view"] = json!({"id": "V0PUSHED", "root_view_id": "V0ROOT", "type": "modal",
                             "callback_id": "cb", "state": {"values": {}}});
    let e = event_of(deliver(&a, &payload_request(&payload)).unwrap());
    assert_eq!(e.thread.channel, "");
    assert_eq!(e.thread.thread, "V0ROOT");
    let EventKind::Action(act) = &e.kind else {
        panic!()
    };
    assert_eq!(act.value.as_deref(), Some("U0SOMEONE"));
}

#[test]
fn block_actions_without_actions_are_ignored() {
    let a = adapter();
    let mut payload = block_actions(json!({"type": "message"}), None, json!({}));
    payload["actions"] = json!([]);
    assert_eq!(
        ignored_reason(deliver(&a, &payload_request(&payload)).unwrap()),
        "block-actions-without-actions"
    );
}

fn view_payload(kind: &str) -> Value {
    json!({
        "type": kind,
        "team": {"id": TEAM, "domain": "example"},
        "user": {"id": "U061F7AUR", "username": "river", "name": "river", "team_id": TEAM},
        "api_app_id": "A0APP",
        "token": "XXYYZZ",
        "trigger_id": "1234.5678.abcd",
        "view": {
            "id": "V0MODAL", "team_id": TEAM, "type": "modal", "callback_id": "feedback",
            "private_metadata": "C0LAN2Q65", "hash": "156772938.1827394",
            "root_view_id": "V0MODAL", "app_installed_team_id": TEAM,
            "state": {"values": {"b1": {"comment": {"type": "plain_text_input", "value": "great *work*"}}}}
        },
        "response_urls": [],
        "is_enterprise_install": false,
        "enterprise": null
    })
}

#[test]
fn a_view_submission_is_a_modal_submit_with_its_values() {
    let a = adapter();
    let e = event_of(deliver(&a, &payload_request(&view_payload("view_submission"))).unwrap());
    assert_eq!(e.thread.to_string(), "slack:T0001::V0MODAL");
    assert_eq!(e.dedupe_key.as_str(), "1234.5678.abcd");
    let EventKind::ModalSubmit(m) = &e.kind else {
        panic!("a submit")
    };
    assert_eq!(m.callback_id, "feedback");
    assert_eq!(m.view_id, "V0MODAL");
    assert_eq!(m.values["b1"]["comment"]["value"], "great *work*");
    assert_eq!(m.user.id, "U061F7AUR");
}

#[test]
fn a_view_closed_is_a_modal_close() {
    let a = adapter();
    let mut p = view_payload("view_closed");
    p.as_object_mut().unwrap().remove("trigger_id");
    p["is_cleared"] = json!(false);
    let e = event_of(deliver(&a, &payload_request(&p)).unwrap());
    assert!(matches!(&e.kind, EventKind::ModalClose(m) if m.callback_id == "feedback"));
    assert!(e.id.as_str().starts_with("body-"));
}

#[test]
fn an_org_wide_interaction_is_keyed_by_the_enterprise() {
    let a = adapter();
    let mut p = view_payload("view_submission");
    p["is_enterprise_install"] = json!(true);
    p["enterprise"] = json!({"id": "E0ORG", "name": "Org"});
    p["team"] = Value::Null;
    let e = event_of(deliver(&a, &payload_request(&p)).unwrap());
    assert_eq!(e.thread.tenant.as_str(), "E0ORG");
}

#[test]
fn shortcuts_pass_through_and_unknown_interactions_are_ignored() {
    let a = adapter();
    let shortcut = json!({"type": "shortcut", "token": "x", "action_ts": "1.2", "team": {"id": TEAM},
                          "user": {"id": "U1"}, "callback_id": "new_ticket", "trigger_id": "tr9"});
    let e = event_of(deliver(&a, &payload_request(&shortcut)).unwrap());
    assert!(
        matches!(&e.kind, EventKind::Other(o) if o.name == "shortcut" && o.data["callback_id"] == "new_ticket")
    );
    assert_eq!(e.thread.thread, "tr9");

    let action = json!({"type": "message_action", "team": {"id": TEAM}, "user": {"id": "U1"},
                        "channel": {"id": "C1"}, "callback_id": "summarize", "trigger_id": "tr10",
                        "message": {"ts": "5.0", "thread_ts": "4.0", "text": "hi"}});
    let e = event_of(deliver(&a, &payload_request(&action)).unwrap());
    assert_eq!(e.thread.to_string(), "slack:T0001:C1:4.0");

    // An options load is an event, each one new (the same text typed again
    // asks again).
    let suggestion = json!({"type": "block_suggestion", "team": {"id": TEAM}, "value": "ab",
                            "action_id": "assignee", "block_id": "b",
                            "container": {"type": "message", "channel_id": "C1", "message_ts": "6.0"}});
    let e = event_of(deliver(&a, &payload_request(&suggestion)).unwrap());
    assert!(matches!(&e.kind, EventKind::Other(o) if o.name == "block_suggestion"));
    assert_eq!(e.thread.to_string(), "slack:T0001:C1:6.0");
    let asked = chat_slack::events::OptionsRequest::of(&e).unwrap();
    assert_eq!(
        (asked.action_id.as_str(), asked.value.as_str()),
        ("assignee", "ab")
    );

    let unknown = json!({"type": "dialog_submission", "team": {"id": TEAM}});
    assert_eq!(
        ignored_reason(deliver(&a, &payload_request(&unknown)).unwrap()),
        "unsupported:dialog_submission"
    );
}

#[test]
fn bad_payloads_are_malformed() {
    let a = adapter();
    for body in [
        "payload=",
        "payload=not%20json",
        "payload=%5B%5D",
        "payload=%7B%7D",
    ] {
        let err = deliver(&a, &form_request(body)).unwrap_err();
        assert!(matches!(err, WebhookError::Malformed(_)), "{body}: {err:?}");
    }
    let no_team = json!({"type": "block_actions", "actions": [{"action_id": "x"}]});
    assert!(matches!(
        deliver(&a, &payload_request(&no_team)),
        Err(WebhookError::Malformed(_))
    ));
    let no_view = json!({"type": "view_submission", "team": {"id": TEAM}});
    assert!(matches!(
        deliver(&a, &payload_request(&no_view)),
        Err(WebhookError::Malformed(_))
    ));
}

#[test]
fn an_interactivity_body_is_verified_raw_and_parsed_decoded() {
    // E2: `*` and spaces are encoded in the signed body.
    let a = adapter();
    let payload = view_payload("view_submission");
    let req = payload_request(&payload);
    assert!(std::str::from_utf8(&req.1).unwrap().contains("%2A"));
    let e = event_of(deliver(&a, &req).unwrap());
    assert!(
        matches!(&e.kind, EventKind::ModalSubmit(m) if m.values["b1"]["comment"]["value"] == "great *work*")
    );
    let decoded = format!("payload={payload}");
    assert_eq!(
        a.verify(&req.0, &Bytes::from(decoded)),
        Err(WebhookError::BadSignature)
    );
}

// ---------------------------------------------------------------- respond

fn slash_event(a: &SlackAdapter) -> Event {
    event_of(
        deliver(
            a,
            &form_request("team_id=T1&channel_id=C1&user_id=U1&command=%2Fx&text=hi&trigger_id=t"),
        )
        .unwrap(),
    )
}

fn mention_event(a: &SlackAdapter) -> Event {
    parse_event(a, &callback("Ev", app_mention("1.0", None)))
}

fn action_event(a: &SlackAdapter) -> Event {
    let p = block_actions(
        json!({"type": "message", "message_ts": "1.0", "channel_id": "C1"}),
        None,
        json!({"action_id": "go", "value": "1"}),
    );
    event_of(deliver(a, &payload_request(&p)).unwrap())
}

fn body_json(r: &http::Response<Bytes>) -> Value {
    assert_eq!(
        r.headers()["content-type"],
        "application/json; charset=utf-8"
    );
    serde_json::from_slice(r.body()).unwrap()
}

#[test]
fn accepted_duplicate_and_ignored_are_empty_200s() {
    let a = adapter();
    let (mention, slash, action) = (mention_event(&a), slash_event(&a), action_event(&a));
    for v in [Verdict::Accepted, Verdict::Duplicate, Verdict::Ignored] {
        for e in [None, Some(&mention), Some(&slash), Some(&action)] {
            let r = a.respond(e, &v);
            assert_eq!(r.status(), 200, "{v:?}");
            assert!(r.body().is_empty());
            assert!(r.headers().get(NO_RETRY_HEADER).is_none());
        }
    }
}

#[test]
fn at_capacity_is_503_for_events_and_actions_but_a_visible_200_for_commands() {
    let a = builder()
        .at_capacity_text("Busy, try again soon")
        .build()
        .unwrap();
    let r = a.respond(Some(&mention_event(&a)), &Verdict::AtCapacity);
    assert_eq!(r.status(), 503);
    assert!(
        r.headers().get(NO_RETRY_HEADER).is_none(),
        "Slack should retry"
    );
    assert_eq!(
        a.respond(Some(&action_event(&a)), &Verdict::AtCapacity)
            .status(),
        503
    );
    let r = a.respond(Some(&slash_event(&a)), &Verdict::AtCapacity);
    assert_eq!(r.status(), 200);
    assert_eq!(
        body_json(&r),
        json!({"response_type": "ephemeral", "text": "Busy, try again soon"})
    );
}

#[test]
fn failed_is_500_for_events_but_an_ephemeral_200_for_commands() {
    let a = adapter();
    assert_eq!(
        a.respond(Some(&mention_event(&a)), &Verdict::Failed)
            .status(),
        500
    );
    assert_eq!(a.respond(None, &Verdict::Failed).status(), 500);
    let r = a.respond(Some(&slash_event(&a)), &Verdict::Failed);
    assert_eq!(r.status(), 200);
    let body = body_json(&r);
    assert_eq!(body["response_type"], "ephemeral");
    assert!(!body["text"].as_str().unwrap().is_empty());
}

#[test]
fn rejections_map_to_their_statuses() {
    let a = adapter();
    for (err, status, no_retry) in [
        (WebhookError::BadSignature, 401, false),
        (WebhookError::StaleTimestamp, 401, false),
        (WebhookError::MissingHeader("X-Slack-Signature"), 401, false),
        (WebhookError::Malformed("invalid JSON".into()), 400, true),
        (WebhookError::BodyRead, 400, true),
        (WebhookError::TooLarge { limit: 10 }, 413, true),
        (WebhookError::MethodNotAllowed, 405, true),
    ] {
        let r = a.respond(None, &Verdict::Rejected(err.clone()));
        assert_eq!(r.status(), status, "{err:?}");
        assert_eq!(
            r.headers().get(NO_RETRY_HEADER).is_some(),
            no_retry,
            "{err:?}"
        );
        if status == 401 {
            assert_eq!(r.body().as_ref(), b"unauthorized");
        }
    }
}

/// A handler's typed reply is Slack's JSON: a modal answer its
/// `response_action`, a message its `response_type` (Markdown as mrkdwn, a
/// card as blocks, `replace_original` when asked), a platform body as given.
#[test]
fn replies_are_json_200s() {
    use chat_core::{OutboundMessage, Reply, Visibility, view::ModalAnswer};
    let a = adapter();
    let submit = event_of(deliver(&a, &payload_request(&view_payload("view_submission"))).unwrap());
    let errors = Reply::from(ModalAnswer::errors([("b1", "Too short")]));
    let r = a.respond(Some(&submit), &Verdict::Reply(errors));
    assert_eq!(r.status(), 200);
    assert_eq!(
        body_json(&r),
        json!({"response_action": "errors", "errors": {"b1": "Too short"}})
    );

    let slash = slash_event(&a);
    let r = a.respond(Some(&slash), &Verdict::Reply(Reply::ephemeral("pong")));
    assert_eq!(
        body_json(&r),
        json!({"response_type": "ephemeral", "text": "pong"})
    );
    let public = Reply::message(OutboundMessage::markdown("**pong**"), Visibility::InChannel)
        .replacing_original();
    assert_eq!(
        body_json(&a.respond(Some(&slash), &Verdict::Reply(public))),
        json!({"response_type": "in_channel", "text": "*pong*", "replace_original": true})
    );
    let card = Reply::message(
        chat_core::Card::new().header("Deploy"),
        Visibility::Ephemeral,
    );
    let body = body_json(&a.respond(Some(&slash), &Verdict::Reply(card)));
    assert_eq!(body["blocks"][0]["type"], "header", "{body}");
    let raw = json!({"response_type": "in_channel", "text": "pong", "unfurl_links": false});
    assert_eq!(
        body_json(&a.respond(Some(&slash), &Verdict::Reply(Reply::platform(raw.clone())))),
        raw
    );
    assert_eq!(
        body_json(&a.respond(
            Some(&slash),
            &Verdict::Reply(Reply::platform(json!("pong")))
        )),
        json!({"text": "pong"})
    );
}

// ---------------------------------------------------------------- building

#[test]
fn the_builder_requires_a_secret_and_a_token() {
    assert!(matches!(
        SlackAdapter::builder().bot_token("xoxb-1").build(),
        Err(chat_slack::BuildError::MissingSigningSecret)
    ));
    assert!(matches!(
        SlackAdapter::builder().signing_secret("s").build(),
        Err(chat_slack::BuildError::MissingBotToken)
    ));
    assert!(matches!(
        builder().api_base_url("nope").build(),
        Err(chat_slack::BuildError::InvalidBaseUrl(_))
    ));
}

#[test]
fn the_adapter_names_itself_and_hides_its_secrets() {
    let a = builder().name("slack-support").build().unwrap();
    assert_eq!(a.name(), "slack-support");
    assert_eq!(a.platform(), chat_core::Platform::SLACK);
    let shown = format!("{a:?} {:?}", builder());
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(!shown.contains("xoxb-test-token"), "{shown}");
}

#[test]
fn the_signing_helper_matches_what_verify_checks() {
    let a = adapter();
    let body = b"{}";
    let (parts, _) = signed(Some("application/json"), body, &[]);
    assert_eq!(
        parts.headers[signature::SIGNATURE_HEADER].to_str().unwrap(),
        signature::sign(SECRET, &NOW.to_string(), body)
    );
    assert_eq!(a.verify(&parts, &Bytes::from_static(body)), Ok(()));
}

/// The unsigned `Content-Type` does not pick the parser: a captured, signed
/// JSON delivery replayed as a form is read as the same JSON — never as a form
/// whose fields (`command`, `payload`) would come from the user's text.
#[test]
fn the_signed_body_not_the_content_type_picks_the_parser() {
    let a = adapter();
    let text = "x&command=/deploy&text=prod&payload={\"type\":\"block_actions\"}";
    let body = callback(
        "Ev0REPLAY",
        json!({"type": "app_mention", "user": "U1", "text": text, "ts": "1.0", "channel": "C1", "event_ts": "1.0"}),
    );
    let bytes = serde_json::to_vec(&body).unwrap();
    for content_type in [
        Some("application/json"),
        Some("application/x-www-form-urlencoded"),
        Some("text/plain"),
        None,
    ] {
        let e = event_of(deliver(&a, &signed(content_type, &bytes, &[])).unwrap());
        assert_eq!(e.id.as_str(), "Ev0REPLAY", "{content_type:?}");
        assert_eq!(message_of(&e).text, text, "{content_type:?}");
    }
    // And a form is a form whatever it is labelled.
    let form = "token=t&team_id=T0001&channel_id=C1&user_id=U1&command=%2Fstatus&text=hi&trigger_id=1.2.3&response_url=https%3A%2F%2Fhooks.slack.com%2Fx";
    let e = event_of(deliver(&a, &signed(Some("application/json"), form.as_bytes(), &[])).unwrap());
    assert!(matches!(e.kind, EventKind::SlashCommand(_)), "{:?}", e.kind);
}

#[test]
fn slack_declares_every_capability_it_implements() {
    let caps = adapter().capabilities();
    for &c in chat_core::Capability::ALL {
        assert!(caps.contains(c), "slack lacks {c}");
    }
}
