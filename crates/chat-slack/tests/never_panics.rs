//! Network input never panics: arbitrary bytes, and arbitrary JSON in every
//! field the parsers read, through verify and parse.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chat_core::Webhook as _;
use chat_slack::mrkdwn::markdown_to_mrkdwn;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Keys the event and interactivity parsers read, so arbitrary values land
/// where type confusion would matter.
const KEYS: &[&str] = &[
    "type",
    "subtype",
    "channel",
    "channel_type",
    "user",
    "bot_id",
    "username",
    "text",
    "ts",
    "thread_ts",
    "message",
    "previous_message",
    "deleted_ts",
    "edited",
    "item",
    "reaction",
    "assistant_thread",
    "channel_id",
    "user_profile",
    "display_name",
    "team",
    "enterprise",
    "id",
    "is_enterprise_install",
    "container",
    "actions",
    "action_id",
    "value",
    "selected_option",
    "view",
    "root_view_id",
    "callback_id",
    "state",
    "values",
    "trigger_id",
    "response_url",
    "enterprise_id",
    "team_id",
    "authorizations",
    "is_bot",
    "user_id",
];

const TYPES: &[&str] = &[
    "message",
    "app_mention",
    "reaction_added",
    "reaction_removed",
    "assistant_thread_started",
    "assistant_thread_context_changed",
    "app_home_opened",
    "member_joined_channel",
    "message_changed",
    "message_deleted",
    "bot_message",
    "block_actions",
    "view_submission",
    "view_closed",
    "shortcut",
    "message_action",
    "event_callback",
    "url_verification",
    "view",
    "im",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        prop::sample::select(TYPES).prop_map(|s| json!(s)),
        "[A-Za-z0-9<>@|:._ -]{0,12}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

/// An object with a known type and arbitrary values under the keys parsers read.
fn shaped() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(TYPES),
        prop::collection::vec((prop::sample::select(KEYS), value()), 0..12),
    )
        .prop_map(|(kind, kv)| {
            let mut m: Map<String, Value> =
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            m.entry("type").or_insert_with(|| json!(kind));
            Value::Object(m)
        })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(
        body in prop::collection::vec(any::<u8>(), 0..1024),
        ct in prop::sample::select(vec![
            Some("application/json"),
            Some("application/x-www-form-urlencoded"),
            Some("text/plain"),
            None,
        ]),
    ) {
        let a = common::adapter();
        let (parts, body) = common::signed(ct, &body, &[]);
        prop_assert!(a.verify(&parts, &body).is_ok());
        let _ = a.parse(&parts, &body);
    }

    #[test]
    fn arbitrary_events_never_panic(event in shaped(), envelope in shaped(), event_id in "[A-Za-z0-9]{0,4}") {
        let a = common::adapter();
        let mut body = common::callback(&event_id, event);
        // Sometimes also scramble the envelope's own fields.
        if let (Value::Object(b), Value::Object(extra)) = (&mut body, envelope) {
            for (k, v) in extra {
                if k != "type" && k != "event" {
                    b.insert(k, v);
                }
            }
        }
        let _ = common::deliver(&a, &common::json_request(&body));
    }

    #[test]
    fn arbitrary_interactions_never_panic(payload in shaped()) {
        let a = common::adapter();
        let _ = common::deliver(&a, &common::payload_request(&payload));
    }

    #[test]
    fn arbitrary_forms_never_panic(
        fields in prop::collection::vec(
            (prop::sample::select(vec!["command", "team_id", "channel_id", "ssl_check", "payload",
                                       "text", "trigger_id", "is_enterprise_install", "enterprise_id"]),
             "[A-Za-z0-9%+&=/{}\"]{0,16}"),
            0..8,
        ),
    ) {
        let a = common::adapter();
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = common::deliver(&a, &common::form_request(&body.join("&")));
    }

    #[test]
    fn arbitrary_signature_headers_never_panic(ts in "\\PC{0,24}", sig in "\\PC{0,80}", body in ".{0,64}") {
        let a = common::adapter();
        let mut req = http::Request::post("/slack/events");
        if let Ok(v) = http::HeaderValue::from_str(&ts) {
            req = req.header(chat_slack::signature::TIMESTAMP_HEADER, v);
        }
        if let Ok(v) = http::HeaderValue::from_str(&sig) {
            req = req.header(chat_slack::signature::SIGNATURE_HEADER, v);
        }
        let (parts, ()) = req.body(()).unwrap().into_parts();
        prop_assert!(a.verify(&parts, &bytes::Bytes::from(body)).is_err());
    }

    #[test]
    fn arbitrary_markdown_never_panics(md in "[-*_~`#>\\[\\]()<>!&|@\\\\ \nA-Za-z0-9.:/]{0,200}") {
        let out = markdown_to_mrkdwn(&md);
        // Nothing unescaped but Slack's own tokens and links we wrote.
        prop_assert!(!out.contains("<<"));
    }
}
