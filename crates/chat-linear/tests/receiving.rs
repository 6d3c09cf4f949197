//! What a handler receives from Linear and reads back: comments normalized
//! (plain text, mentions, links, uploaded files), reactions as events,
//! uploads downloaded with the token, the bot's reactions taken back, users
//! with avatar, handle and mention, history normalized.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chat_core::{
    Attachment, Downloads as _, EventKind, History as _, Inbound, MessageRef, Messaging as _,
    TenantId, Unreact as _, Users as _, Webhook as _,
};
use chat_linear::LinearAdapter;
use chat_linear::thread::comment_thread;
use chat_testkit::FakeLinear;
use common::{APP_USER, ISSUE, ORG, USER, payloads};
use serde_json::json;

async fn setup() -> (FakeLinear, LinearAdapter) {
    let fake = FakeLinear::start().await;
    let linear = common::builder()
        .endpoint(fake.endpoint())
        .mention_name("helper")
        .build()
        .unwrap();
    (fake, linear)
}

fn parse(linear: &LinearAdapter, value: &serde_json::Value) -> Inbound {
    let b = common::body(value);
    linear.parse(&common::parts(&b), &b).unwrap()
}

fn event(linear: &LinearAdapter, value: &serde_json::Value) -> chat_core::Event {
    match parse(linear, value) {
        Inbound::Event(e) => *e,
        other => panic!("not an event: {other:?}"),
    }
}

#[tokio::test]
async fn a_comment_is_read_into_plain_text_mentions_links_and_files() {
    let (_fake, linear) = setup().await;
    let body = "https://linear.app/acme/profiles/helper can you read \
                [the log](https://ci.example/run/7) and ![trace.png](https://uploads.linear.app/o/f/trace.png)?";
    let e = event(&linear, &payloads::comment_created("c1", None, USER, body));
    let EventKind::Message(m) = &e.kind else {
        panic!("{:?}", e.kind)
    };
    assert_eq!(m.text, "@helper can you read the log and trace.png?");
    assert_eq!(m.markup, body);
    assert_eq!(m.markdown, body);
    assert!(m.is_mention);
    assert_eq!(m.mentions.len(), 1);
    assert!(m.mentions[0].is_me);
    assert_eq!(
        m.text_after_mention(),
        "can you read the log and trace.png?"
    );
    assert_eq!(m.links[0].url, "https://ci.example/run/7");
    assert_eq!(m.links[0].label.as_deref(), Some("the log"));
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].name, "trace.png");
    assert_eq!(m.attachments[0].mime_type.as_deref(), Some("image/png"));
}

#[tokio::test]
async fn reactions_on_comments_are_events_in_the_comments_thread() {
    let (_fake, linear) = setup().await;
    let reaction = |action: &str, user: &str| {
        payloads::entity(
            "Reaction",
            action,
            json!({
                "id": "r-1", "emoji": "eyes", "commentId": "c-9",
                "comment": { "id": "c-9", "body": "hi", "issueId": ISSUE, "userId": USER },
                "issueId": ISSUE, "userId": user,
                "createdAt": "2025-10-09T09:00:00.000Z", "updatedAt": "2025-10-09T09:00:00.000Z",
            }),
        )
    };
    let added = event(&linear, &reaction("create", USER));
    assert_eq!(added.thread, comment_thread(ORG, ISSUE, "c-9"));
    assert_eq!(added.dedupe_key.as_str(), "reaction:r-1:create");
    let EventKind::Reaction(r) = &added.kind else {
        panic!("{:?}", added.kind)
    };
    assert_eq!(
        (r.emoji.as_str(), r.added, r.message_id.as_str()),
        ("eyes", true, "c-9")
    );
    assert_eq!(r.user.id, USER);
    let removed = event(&linear, &reaction("remove", USER));
    assert_eq!(removed.dedupe_key.as_str(), "reaction:r-1:remove");
    assert!(matches!(&removed.kind, EventKind::Reaction(r) if !r.added));
    // The app's own reaction is not an event.
    assert!(matches!(
        parse(&linear, &reaction("create", APP_USER)),
        Inbound::Ignored { reason } if reason == "own-reaction"
    ));
}

#[tokio::test]
async fn unreact_removes_only_the_bots_own_reaction() {
    let (fake, linear) = setup().await;
    let comment = MessageRef {
        thread: comment_thread(ORG, ISSUE, "c-root"),
        id: "c-5".to_owned(),
    };
    fake.add_reaction("c-5", "eyes", USER);
    linear.react(&comment, "eyes").await.unwrap();
    linear.react(&comment, ":tada:").await.unwrap();
    assert_eq!(fake.reactions("c-5").len(), 3);
    linear.unreact(&comment, ":eyes:").await.unwrap();
    assert_eq!(
        fake.reactions("c-5"),
        [
            ("eyes".to_owned(), USER.to_owned()),
            ("tada".to_owned(), FakeLinear::VIEWER_ID.to_owned())
        ]
    );
    // Nothing left to take back: success, no delete sent.
    let deletes = fake.calls_of("ReactionDelete").len();
    linear.unreact(&comment, "eyes").await.unwrap();
    assert_eq!(fake.calls_of("ReactionDelete").len(), deletes);
}

#[tokio::test]
async fn an_upload_is_downloaded_with_the_token_and_other_hosts_get_nothing() {
    let (fake, linear) = setup().await;
    let url = fake.add_upload("o/f/trace.png", vec![7u8; 1000]);
    let tenant = TenantId::new(ORG);
    let file = Attachment::new(url.clone(), "trace.png", url);
    let bytes = linear
        .download(&tenant, &file, 4096)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.len(), 1000);
    let got = fake.calls_of("upload");
    assert_eq!(
        got[0].authorization.as_deref(),
        Some("Bearer lin_oauth_test_token")
    );
    // Capped.
    let capped = linear
        .download(&tenant, &file, 100)
        .await
        .unwrap()
        .bytes()
        .await;
    assert!(matches!(
        capped,
        Err(chat_core::AdapterError::TooLarge { limit: 100 })
    ));
    // Another host is never sent the token.
    for source in [
        "https://evil.example/uploads/x",
        "http://uploads.linear.app/x",
        "https://uploads.linear.app.evil.example/x",
    ] {
        let foreign = Attachment::new(source, "x", source);
        assert!(matches!(
            linear.download(&tenant, &foreign, 100).await,
            Err(chat_core::AdapterError::Invalid(_))
        ));
    }
    assert_eq!(fake.calls_of("upload").len(), 2);
}

#[tokio::test]
async fn users_have_avatar_handle_and_their_mention() {
    let (fake, linear) = setup().await;
    fake.add_user(json!({
        "id": USER, "name": "Ada Lovelace", "displayName": "ada", "email": "ada@example.com",
        "avatarUrl": "https://public.linear.app/avatars/ada.png",
        "url": "https://linear.app/acme/profiles/ada", "app": false,
    }));
    let user = linear.user(&TenantId::new(ORG), USER).await.unwrap();
    assert_eq!(user.handle.as_deref(), Some("ada"));
    assert_eq!(
        user.avatar_url.as_deref(),
        Some("https://public.linear.app/avatars/ada.png")
    );
    assert_eq!(user.mention(), "https://linear.app/acme/profiles/ada");
    // Linear's mention needs the lookup: the id alone says nothing.
    assert_eq!(linear.mention(USER), None);
}

#[tokio::test]
async fn history_is_normalized_like_a_delivered_comment() {
    let (fake, linear) = setup().await;
    fake.add_comment(json!({
        "id": "c-root", "createdAt": "2026-12-01T10:00:00.000Z",
        "body": "[@helper](https://linear.app/acme/profiles/helper) look at [this](https://x.example)",
        "user": { "id": USER, "displayName": "ada", "app": false, "isMe": false },
    }));
    let page = linear
        .history(&comment_thread(ORG, ISSUE, "c-root"), None, 50)
        .await
        .unwrap();
    let root = &page.messages[0];
    assert_eq!(root.text, "@helper look at this");
    assert!(root.mentions[0].is_me);
    assert_eq!(root.links[0].url, "https://x.example");
    assert!(root.at_ms > 0);
}
