//! Webhook payloads built from the fields of `AgentSessionEventWebhookPayload`,
//! `EntityWebhookPayload` and `CommentWebhookPayload` in Linear's schema, with
//! the values a real delivery carries.

use serde_json::{Value, json};

use super::{APP_USER, ISSUE, NOW_MS, ORG, SESSION, USER};

fn user(id: &str, name: &str) -> Value {
    json!({
        "id": id,
        "name": name,
        "email": format!("{}@example.com", name.to_lowercase().replace(' ', ".")),
        "avatarUrl": null,
        "url": format!("https://linear.app/acme/profiles/{}", name.to_lowercase().replace(' ', "")),
    })
}

fn issue() -> Value {
    json!({
        "id": ISSUE,
        "identifier": "ENG-42",
        "title": "Checkout test is flaky on CI",
        "description": "Fails about one run in ten since the payment mock changed.",
        "url": "https://linear.app/acme/issue/ENG-42/checkout-test-is-flaky-on-ci",
        "teamId": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b",
        "team": {"id": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b", "key": "ENG", "name": "Engineering"},
    })
}

/// The `agentSession` object.
pub fn agent_session(session_id: &str) -> Value {
    json!({
        "id": session_id,
        "appUserId": APP_USER,
        "organizationId": ORG,
        "status": "pending",
        "type": "commentThread",
        "issueId": ISSUE,
        "issue": issue(),
        "commentId": "c0ffee00-0000-4000-8000-000000000001",
        "comment": {
            "id": "c0ffee00-0000-4000-8000-000000000001",
            "body": "@helper can you find out why this is flaky?",
            "userId": USER,
            "issueId": ISSUE,
        },
        "creatorId": USER,
        "creator": user(USER, "Ada Lovelace"),
        "sourceCommentId": null,
        "sourceMetadata": null,
        "startedAt": null,
        "endedAt": null,
        "summary": null,
        "url": format!("https://linear.app/acme/issue/ENG-42#agent-session-{session_id}"),
        "createdAt": "2025-10-09T08:53:19.000Z",
        "updatedAt": "2025-10-09T08:53:19.000Z",
        "archivedAt": null,
    })
}

fn envelope(action: &str, session_id: &str) -> Value {
    json!({
        "type": "AgentSessionEvent",
        "action": action,
        "createdAt": "2025-10-09T08:53:20.000Z",
        "organizationId": ORG,
        "oauthClientId": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "appUserId": APP_USER,
        "webhookId": "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
        "webhookTimestamp": NOW_MS,
        "agentSession": agent_session(session_id),
    })
}

/// `AgentSessionEvent` `created`.
pub fn session_created() -> Value {
    session_created_for(SESSION)
}

/// `AgentSessionEvent` `created` for another session.
pub fn session_created_for(session_id: &str) -> Value {
    let mut v = envelope("created", session_id);
    v["promptContext"] = json!(
        "<issue identifier=\"ENG-42\">\n<title>Checkout test is flaky on CI</title>\n</issue>\n<user>Ada Lovelace</user>"
    );
    v["previousComments"] = json!([]);
    v["guidance"] = json!([{
        "body": "Always link the failing CI run.",
        "origin": {"type": "team", "team": {
            "id": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b", "key": "ENG", "name": "Engineering"}},
    }]);
    v
}

/// An `agentActivity` object.
pub fn activity(activity_id: &str, user_id: &str, content: Value, signal: Option<&str>) -> Value {
    json!({
        "id": activity_id,
        "agentSessionId": SESSION,
        "content": content,
        "signal": signal,
        "signalMetadata": null,
        "sourceCommentId": "c0ffee00-0000-4000-8000-000000000002",
        "userId": user_id,
        "user": user(user_id, "Ada Lovelace"),
        "createdAt": "2025-10-09T08:54:00.000Z",
        "updatedAt": "2025-10-09T08:54:00.000Z",
        "archivedAt": null,
    })
}

/// `AgentSessionEvent` `prompted` with a user's prompt.
pub fn session_prompted(activity_id: &str, text: &str) -> Value {
    let mut v = envelope("prompted", SESSION);
    v["agentActivity"] = activity(
        activity_id,
        USER,
        json!({"type": "prompt", "body": text}),
        None,
    );
    v
}

/// `AgentSessionEvent` `prompted` with `signal: stop`.
pub fn session_stop(activity_id: &str) -> Value {
    let mut v = envelope("prompted", SESSION);
    v["agentActivity"] = activity(
        activity_id,
        USER,
        json!({"type": "prompt", "body": "Stop"}),
        Some("stop"),
    );
    v
}

/// The `data` of a comment.
pub fn comment_data(comment_id: &str, parent_id: Option<&str>, user_id: &str, body: &str) -> Value {
    json!({
        "id": comment_id,
        "createdAt": "2025-10-09T09:00:00.000Z",
        "updatedAt": "2025-10-09T09:00:00.000Z",
        "archivedAt": null,
        "body": body,
        "edited": false,
        "editedAt": null,
        "issueId": ISSUE,
        "issue": {
            "id": ISSUE, "identifier": "ENG-42", "title": "Checkout test is flaky on CI",
            "url": "https://linear.app/acme/issue/ENG-42", "teamId": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b",
            "team": {"id": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b", "key": "ENG", "name": "Engineering"},
        },
        "parentId": parent_id,
        "userId": user_id,
        "user": user(user_id, "Ada Lovelace"),
        "botActor": null,
        "externalUserId": null,
        "reactionData": [],
        "resolvedAt": null,
        "quotedText": null,
        "syncedWith": null,
        "documentContentId": null,
        "projectUpdateId": null,
        "initiativeUpdateId": null,
        "postId": null,
    })
}

/// A data-change event of `kind` with `data`.
pub fn entity(kind: &str, action: &str, data: Value) -> Value {
    json!({
        "action": action,
        "type": kind,
        "createdAt": "2025-10-09T09:00:00.000Z",
        "actor": {"id": USER, "type": "user", "name": "Ada Lovelace",
                  "email": "ada.lovelace@example.com", "url": "https://linear.app/acme/profiles/ada"},
        "data": data,
        "url": "https://linear.app/acme/issue/ENG-42#comment-1",
        "updatedFrom": null,
        "organizationId": ORG,
        "webhookId": "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
        "webhookTimestamp": NOW_MS,
    })
}

/// `Comment` `create`.
pub fn comment_created(
    comment_id: &str,
    parent_id: Option<&str>,
    user_id: &str,
    body: &str,
) -> Value {
    entity(
        "Comment",
        "create",
        comment_data(comment_id, parent_id, user_id, body),
    )
}
