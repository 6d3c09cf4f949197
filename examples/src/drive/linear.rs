//! The Linear payloads echo-bot is driven with, as Linear sends them.

use chat_testkit::FakeLinear;
use serde_json::{Value, json};

/// The workspace (organization).
pub const ORG: &str = "8f0b0c1e-1d7e-4b7a-9f7e-3d1c0a9b2e01";
/// The app user (the agent); echo-bot is given it as `LINEAR_APP_USER_ID`.
pub const APP_USER: &str = FakeLinear::VIEWER_ID;
/// The human who mentions the agent.
pub const USER: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
/// The issue everything happens on.
pub const ISSUE: &str = "5b3a8e3c-2d4f-4a6b-9c1d-0e2f3a4b5c6d";

/// `AgentSessionEvent` `created`: the agent was mentioned in a comment whose
/// body is `comment`; signed now (`webhookTimestamp` in milliseconds).
pub fn session_created(session_id: &str, comment: &str) -> Value {
    let team =
        json!({"id": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b", "key": "ENG", "name": "Engineering"});
    json!({
        "type": "AgentSessionEvent",
        "action": "created",
        "createdAt": "2025-10-09T08:53:20.000Z",
        "organizationId": ORG,
        "oauthClientId": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "appUserId": APP_USER,
        "webhookId": "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
        "webhookTimestamp": super::now_ms(),
        "promptContext": "<issue identifier=\"ENG-42\">\n<title>Checkout test is flaky on CI</title>\n</issue>",
        "previousComments": [],
        "guidance": [],
        "agentSession": {
            "id": session_id,
            "appUserId": APP_USER,
            "organizationId": ORG,
            "status": "pending",
            "type": "commentThread",
            "issueId": ISSUE,
            "issue": {
                "id": ISSUE,
                "identifier": "ENG-42",
                "title": "Checkout test is flaky on CI",
                "url": "https://linear.app/acme/issue/ENG-42/checkout-test-is-flaky-on-ci",
                "teamId": team["id"],
                "team": team,
            },
            "commentId": "c0ffee00-0000-4000-8000-000000000001",
            "comment": {
                "id": "c0ffee00-0000-4000-8000-000000000001",
                "body": comment,
                "userId": USER,
                "issueId": ISSUE,
            },
            "creatorId": USER,
            "creator": {
                "id": USER,
                "name": "Ada Lovelace",
                "email": "ada.lovelace@example.com",
                "avatarUrl": null,
                "url": "https://linear.app/acme/profiles/ada",
            },
            "sourceCommentId": null,
            "sourceMetadata": null,
            "startedAt": null,
            "endedAt": null,
            "summary": null,
            "url": format!("https://linear.app/acme/issue/ENG-42#agent-session-{session_id}"),
            "createdAt": "2025-10-09T08:53:19.000Z",
            "updatedAt": "2025-10-09T08:53:19.000Z",
            "archivedAt": null,
        },
    })
}
