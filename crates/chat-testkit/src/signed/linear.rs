//! Linear deliveries, signed as Linear signs them: `Linear-Signature` is the
//! hex HMAC-SHA256 of the body, `webhookTimestamp` (ms) is inside it, and
//! `Linear-Delivery` / `Linear-Event` name the delivery and its type.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{hmac_hex, now_ms, post};
use crate::FakeLinear;

/// Builds signed Linear webhooks for one organization, agent and issue.
///
/// Defaults: app user [`FakeLinear::VIEWER_ID`], a fixed organization, user
/// and issue (`ENG-42`), path `/webhooks/linear`, signed now.
#[derive(Debug, Clone)]
pub struct LinearDeliveries {
    secret: String,
    path: String,
    org: String,
    app_user: String,
    user: String,
    issue: String,
}

impl LinearDeliveries {
    /// The default organization.
    pub const ORG: &'static str = "8f0b0c1e-1d7e-4b7a-9f7e-3d1c0a9b2e01";
    /// The default human who mentions and prompts the agent.
    pub const USER: &'static str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
    /// The default issue.
    pub const ISSUE: &'static str = "5b3a8e3c-2d4f-4a6b-9c1d-0e2f3a4b5c6d";

    /// Deliveries signed with the webhook's `signing_secret`.
    pub fn new(signing_secret: impl Into<String>) -> Self {
        Self {
            secret: signing_secret.into(),
            path: "/webhooks/linear".to_owned(),
            org: Self::ORG.to_owned(),
            app_user: FakeLinear::VIEWER_ID.to_owned(),
            user: Self::USER.to_owned(),
            issue: Self::ISSUE.to_owned(),
        }
    }

    /// The request path (default `/webhooks/linear`).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The organization (the tenant).
    #[must_use]
    pub fn organization(mut self, org: impl Into<String>) -> Self {
        self.org = org.into();
        self
    }

    /// The agent's app user id.
    #[must_use]
    pub fn app_user(mut self, app_user: impl Into<String>) -> Self {
        self.app_user = app_user.into();
        self
    }

    /// `body` signed, with `delivery` as its `Linear-Delivery` id. The body's
    /// `webhookTimestamp` is sent as it is.
    pub fn signed(&self, body: &Value, delivery: &str) -> http::Request<Bytes> {
        let bytes = body.to_string().into_bytes();
        let signature = hmac_hex(&self.secret, &[&bytes]);
        let event = body.get("type").and_then(Value::as_str).unwrap_or_default();
        post(
            &self.path,
            &[
                ("content-type", "application/json; charset=utf-8"),
                ("user-agent", "Linear-Webhook"),
                ("linear-signature", &signature),
                ("linear-delivery", delivery),
                ("linear-event", event),
            ],
            bytes,
        )
    }

    /// `AgentSessionEvent` `created`: the agent was mentioned (or delegated
    /// the issue) in a comment whose body is `comment`.
    pub fn session_created(
        &self,
        session_id: &str,
        comment: &str,
        delivery: &str,
    ) -> http::Request<Bytes> {
        self.signed(&self.session_created_body(session_id, comment), delivery)
    }

    /// `AgentSessionEvent` `prompted`: the user's follow-up `text`, as the
    /// activity `activity_id`.
    pub fn session_prompted(
        &self,
        session_id: &str,
        activity_id: &str,
        text: &str,
        delivery: &str,
    ) -> http::Request<Bytes> {
        let mut body = self.envelope("prompted", session_id, "");
        body["agentActivity"] = self.activity(session_id, activity_id, text, None);
        self.signed(&body, delivery)
    }

    /// The user's stop request: `prompted` with `signal: stop`.
    pub fn session_stop(
        &self,
        session_id: &str,
        activity_id: &str,
        delivery: &str,
    ) -> http::Request<Bytes> {
        let mut body = self.envelope("prompted", session_id, "");
        body["agentActivity"] = self.activity(session_id, activity_id, "Stop", Some("stop"));
        self.signed(&body, delivery)
    }

    /// `Comment` `create`: a comment `body` (Markdown) by the user on the
    /// issue, as a reply to `parent` when given.
    pub fn comment_created(
        &self,
        comment_id: &str,
        parent: Option<&str>,
        body: &str,
        delivery: &str,
    ) -> http::Request<Bytes> {
        let data = json!({
            "id": comment_id,
            "body": body,
            "issueId": self.issue,
            "parentId": parent,
            "userId": self.user,
            "user": self.person(),
            "createdAt": "2025-10-09T08:53:20.000Z",
            "updatedAt": "2025-10-09T08:53:20.000Z",
        });
        self.signed(&self.entity("Comment", "create", &data), delivery)
    }

    /// `Reaction` `create` (or, with `added` false, `remove`): the user's
    /// `emoji` on comment `comment_id`, as reaction `reaction_id`.
    pub fn reaction(
        &self,
        reaction_id: &str,
        comment_id: &str,
        emoji: &str,
        added: bool,
        delivery: &str,
    ) -> http::Request<Bytes> {
        let data = json!({
            "id": reaction_id,
            "emoji": emoji,
            "commentId": comment_id,
            "comment": { "id": comment_id, "body": "", "issueId": self.issue, "userId": self.user },
            "issueId": self.issue,
            "userId": self.user,
            "user": self.person(),
            "createdAt": "2025-10-09T08:53:21.000Z",
            "updatedAt": "2025-10-09T08:53:21.000Z",
        });
        let action = if added { "create" } else { "remove" };
        self.signed(&self.entity("Reaction", action, &data), delivery)
    }

    /// A data-change event (`Comment`, `Reaction`, …) of the organization.
    fn entity(&self, kind: &str, action: &str, data: &Value) -> Value {
        json!({
            "action": action,
            "type": kind,
            "createdAt": "2025-10-09T08:53:20.000Z",
            "actor": { "id": self.user, "type": "user", "name": "Ada Lovelace" },
            "data": data,
            "url": "https://linear.app/acme/issue/ENG-42",
            "organizationId": self.org,
            "webhookId": "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
            "webhookTimestamp": now_ms(),
        })
    }

    /// The body of [`session_created`](Self::session_created).
    pub fn session_created_body(&self, session_id: &str, comment: &str) -> Value {
        let mut body = self.envelope("created", session_id, comment);
        body["promptContext"] = json!(
            "<issue identifier=\"ENG-42\">\n<title>Checkout test is flaky on CI</title>\n</issue>"
        );
        body["previousComments"] = json!([]);
        body["guidance"] = json!([]);
        body
    }

    fn envelope(&self, action: &str, session_id: &str, comment: &str) -> Value {
        json!({
            "type": "AgentSessionEvent",
            "action": action,
            "createdAt": "2025-10-09T08:53:20.000Z",
            "organizationId": self.org,
            "oauthClientId": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            "appUserId": self.app_user,
            "webhookId": "f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b",
            "webhookTimestamp": now_ms(),
            "agentSession": self.session(session_id, comment),
        })
    }

    fn person(&self) -> Value {
        json!({
            "id": self.user,
            "name": "Ada Lovelace",
            "email": "ada.lovelace@example.com",
            "avatarUrl": null,
            "url": "https://linear.app/acme/profiles/ada",
        })
    }

    fn session(&self, session_id: &str, comment: &str) -> Value {
        let team = json!({"id": "e4b6f2a0-1c3d-4e5f-8a9b-0c1d2e3f4a5b", "key": "ENG", "name": "Engineering"});
        json!({
            "id": session_id,
            "appUserId": self.app_user,
            "organizationId": self.org,
            "status": "pending",
            "type": "commentThread",
            "issueId": self.issue,
            "issue": {
                "id": self.issue,
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
                "userId": self.user,
                "issueId": self.issue,
            },
            "creatorId": self.user,
            "creator": self.person(),
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

    fn activity(
        &self,
        session_id: &str,
        activity_id: &str,
        text: &str,
        signal: Option<&str>,
    ) -> Value {
        json!({
            "id": activity_id,
            "agentSessionId": session_id,
            "content": {"type": "prompt", "body": text},
            "signal": signal,
            "signalMetadata": null,
            "sourceCommentId": "c0ffee00-0000-4000-8000-000000000002",
            "userId": self.user,
            "user": self.person(),
            "createdAt": "2025-10-09T08:54:00.000Z",
            "updatedAt": "2025-10-09T08:54:00.000Z",
            "archivedAt": null,
        })
    }
}
