//! Typed webhook payloads, named and shaped after the webhook payload types of
//! Linear's published GraphQL schema (`AgentSessionEventWebhookPayload`,
//! `EntityWebhookPayload`, `CommentWebhookPayload`, …).
//!
//! Only the identifying fields are required; every other field is optional
//! (`#[serde(default)]`) so that a payload with fields added or left out still
//! parses. Fields whose shape the schema leaves open (`JSONObject`, unions) are
//! kept as [`serde_json::Value`].
//!
//! The adapter keeps the raw body in [`Event::raw`](chat_core::Event::raw);
//! [`AgentSessionEventWebhookPayload::from_event`] and
//! [`CommentEvent::from_event`] read the full payload back, for what the
//! normalized event does not carry (guidance, previous comments, the issue).

use chat_core::{Event, WebhookError};
use serde::Deserialize;
use serde_json::Value;

use crate::json::malformed;

/// Reads `null` as the type's default, for fields that are optional in effect
/// but not wrapped in `Option`.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The fields every webhook body shares, read first to route the delivery.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WebhookHead {
    /// The entity type (`AgentSessionEvent`, `Comment`, `Issue`, …).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// What happened (`created`, `prompted`, `create`, `update`, `remove`, …).
    #[serde(default)]
    pub action: String,
}

/// `AgentSessionEventWebhookPayload`: an agent session was created, or a user
/// prompted it (or asked it to stop).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentSessionEventWebhookPayload {
    /// `created` or `prompted`.
    pub action: String,
    /// `AgentSessionEvent`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The activity that was created (a prompt, on `prompted`).
    #[serde(default)]
    pub agent_activity: Option<AgentActivityWebhookPayload>,
    /// The session the event belongs to.
    pub agent_session: AgentSessionWebhookPayload,
    /// The app user the session belongs to: this agent, in this workspace.
    #[serde(default)]
    pub app_user_id: Option<String>,
    /// When the payload was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Workspace and team guidance for the agent, nearest team first in weight.
    #[serde(default)]
    pub guidance: Option<Vec<GuidanceRuleWebhookPayload>>,
    /// The OAuth client the app user is tied to.
    #[serde(default)]
    pub oauth_client_id: Option<String>,
    /// The workspace: the tenant.
    pub organization_id: String,
    /// The thread's earlier comments, when the session started from a mention
    /// in a child comment (`created` only).
    #[serde(default)]
    pub previous_comments: Option<Vec<CommentChildWebhookPayload>>,
    /// Linear's prepared prompt for a new session (`created` only).
    #[serde(default)]
    pub prompt_context: Option<String>,
    /// The webhook subscription that sent it.
    #[serde(default)]
    pub webhook_id: Option<String>,
    /// When it was sent, in Unix milliseconds (checked by `verify`).
    #[serde(default)]
    pub webhook_timestamp: Option<f64>,
}

impl AgentSessionEventWebhookPayload {
    /// Parses a body as an agent session event.
    pub fn from_slice(body: &[u8]) -> Result<Self, WebhookError> {
        serde_json::from_slice(body).map_err(|e| malformed("AgentSessionEvent", &e))
    }

    /// Reads the full payload of an agent-session event back from its raw body.
    pub fn from_event(event: &Event) -> Result<Self, WebhookError> {
        Self::from_slice(&event.raw)
    }
}

/// `AgentSessionWebhookPayload`: the session.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentSessionWebhookPayload {
    /// The session's id.
    pub id: String,
    /// The agent (app user) the session belongs to.
    #[serde(default)]
    pub app_user_id: Option<String>,
    /// When it was archived.
    #[serde(default)]
    pub archived_at: Option<String>,
    /// The root comment of the thread the session is attached to.
    #[serde(default)]
    pub comment: Option<CommentChildWebhookPayload>,
    /// The id of that root comment.
    #[serde(default)]
    pub comment_id: Option<String>,
    /// When it was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// The human responsible for the session, if any.
    #[serde(default)]
    pub creator: Option<UserChildWebhookPayload>,
    /// The id of that human.
    #[serde(default)]
    pub creator_id: Option<String>,
    /// When the session ended.
    #[serde(default)]
    pub ended_at: Option<String>,
    /// The issue the session is about.
    #[serde(default)]
    pub issue: Option<IssueWithDescriptionChildWebhookPayload>,
    /// The id of that issue.
    #[serde(default)]
    pub issue_id: Option<String>,
    /// The workspace.
    #[serde(default)]
    pub organization_id: Option<String>,
    /// The comment the session was spawned from, if from another thread.
    #[serde(default)]
    pub source_comment_id: Option<String>,
    /// Metadata about the external source that created the session.
    #[serde(default)]
    pub source_metadata: Option<Value>,
    /// When the session started working.
    #[serde(default)]
    pub started_at: Option<String>,
    /// `pending`, `active`, `awaitingInput`, `error`, `complete` or `stale`.
    #[serde(default)]
    pub status: Option<String>,
    /// A summary of the session's activities.
    #[serde(default)]
    pub summary: Option<String>,
    /// The session type (deprecated by Linear).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// When it was last updated.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// The session's URL in Linear.
    #[serde(default)]
    pub url: Option<String>,
}

/// `AgentActivityWebhookPayload`: one activity of a session.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentActivityWebhookPayload {
    /// The activity's id.
    pub id: String,
    /// The session it belongs to.
    #[serde(default)]
    pub agent_session_id: Option<String>,
    /// When it was archived.
    #[serde(default)]
    pub archived_at: Option<String>,
    /// The content (`{"type": "prompt", "body": "…"}` for a user's prompt).
    #[serde(default)]
    pub content: Value,
    /// When it was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// A modifier: `stop` asks the agent to stop.
    #[serde(default)]
    pub signal: Option<String>,
    /// Metadata of the signal.
    #[serde(default)]
    pub signal_metadata: Option<Value>,
    /// The comment the activity is linked to.
    #[serde(default)]
    pub source_comment_id: Option<String>,
    /// When it was last updated.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// Who created it.
    #[serde(default)]
    pub user: Option<UserChildWebhookPayload>,
    /// The id of who created it.
    #[serde(default)]
    pub user_id: Option<String>,
}

impl AgentActivityWebhookPayload {
    /// The content's `type` (`prompt`, `thought`, …), when it has one.
    pub fn content_type(&self) -> Option<&str> {
        self.content.get("type").and_then(Value::as_str)
    }

    /// The content's Markdown `body`, when it has one.
    pub fn body(&self) -> Option<&str> {
        self.content.get("body").and_then(Value::as_str)
    }

    /// Whether this activity asks the agent to stop.
    pub fn is_stop(&self) -> bool {
        self.signal.as_deref() == Some("stop")
    }
}

/// `UserChildWebhookPayload`: a user, as nested in other payloads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UserChildWebhookPayload {
    /// The user's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// The user's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The user's email.
    #[serde(default)]
    pub email: Option<String>,
    /// The user's avatar.
    #[serde(default)]
    pub avatar_url: Option<String>,
    /// The user's profile URL.
    #[serde(default)]
    pub url: Option<String>,
}

/// `CommentChildWebhookPayload`: a comment, as nested in other payloads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommentChildWebhookPayload {
    /// The comment's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Its Markdown body.
    #[serde(default)]
    pub body: Option<String>,
    /// Its author.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The issue it belongs to.
    #[serde(default)]
    pub issue_id: Option<String>,
    /// The document content it belongs to.
    #[serde(default)]
    pub document_content_id: Option<String>,
    /// The project update it belongs to.
    #[serde(default)]
    pub project_update_id: Option<String>,
    /// The initiative update it belongs to.
    #[serde(default)]
    pub initiative_update_id: Option<String>,
}

/// `IssueWithDescriptionChildWebhookPayload`: the issue of a session.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct IssueWithDescriptionChildWebhookPayload {
    /// The issue's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Its human identifier (`ENG-123`).
    #[serde(default)]
    pub identifier: Option<String>,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// Its Markdown description.
    #[serde(default)]
    pub description: Option<String>,
    /// Its URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Its team's id.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Its team.
    #[serde(default)]
    pub team: Option<TeamChildWebhookPayload>,
}

/// `IssueChildWebhookPayload`: the issue of a comment.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct IssueChildWebhookPayload {
    /// The issue's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Its human identifier (`ENG-123`).
    #[serde(default)]
    pub identifier: Option<String>,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// Its URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Its team's id.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Its team.
    #[serde(default)]
    pub team: Option<TeamChildWebhookPayload>,
}

/// `TeamChildWebhookPayload`: a team.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TeamChildWebhookPayload {
    /// The team's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Its key (`ENG`).
    #[serde(default)]
    pub key: Option<String>,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
}

/// `GuidanceRuleWebhookPayload`: guidance for the agent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GuidanceRuleWebhookPayload {
    /// The guidance, in Markdown.
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    /// Where it comes from (the organization or a team), as sent.
    #[serde(default)]
    pub origin: Value,
}

/// `EntityWebhookPayload`: a data-change event (`create`, `update`, `remove`)
/// of one entity type, here with its `data` typed as `T`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EntityWebhookPayload<T> {
    /// `create`, `update` or `remove`.
    pub action: String,
    /// The entity type (`Comment`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// Who made the change.
    #[serde(default)]
    pub actor: Option<ActorWebhookPayload>,
    /// When the change happened.
    #[serde(default)]
    pub created_at: Option<String>,
    /// The entity.
    pub data: T,
    /// The workspace: the tenant.
    pub organization_id: String,
    /// The previous values of changed fields (`update`).
    #[serde(default)]
    pub updated_from: Option<Value>,
    /// The entity's URL.
    #[serde(default)]
    pub url: Option<String>,
    /// The webhook subscription that sent it.
    #[serde(default)]
    pub webhook_id: Option<String>,
    /// When it was sent, in Unix milliseconds (checked by `verify`).
    #[serde(default)]
    pub webhook_timestamp: Option<f64>,
}

/// A comment data-change event.
pub type CommentEvent = EntityWebhookPayload<CommentWebhookPayload>;

impl CommentEvent {
    /// Parses a body as a comment data-change event.
    pub fn from_slice(body: &[u8]) -> Result<Self, WebhookError> {
        serde_json::from_slice(body).map_err(|e| malformed("Comment", &e))
    }

    /// Reads the full payload of a comment event back from its raw body.
    pub fn from_event(event: &Event) -> Result<Self, WebhookError> {
        Self::from_slice(&event.raw)
    }
}

/// `ReactionWebhookPayload`: an emoji reaction, on a comment or an issue.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReactionWebhookPayload {
    /// The reaction's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// The emoji's name.
    #[serde(default, deserialize_with = "null_as_default")]
    pub emoji: String,
    /// The comment reacted to, when it is one.
    #[serde(default)]
    pub comment_id: Option<String>,
    /// The comment reacted to.
    #[serde(default)]
    pub comment: Option<CommentChildWebhookPayload>,
    /// The issue reacted to (or the comment's issue).
    #[serde(default)]
    pub issue_id: Option<String>,
    /// Who reacted.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Who reacted.
    #[serde(default)]
    pub user: Option<UserChildWebhookPayload>,
}

/// A reaction data-change event (`create`, `remove`).
pub type ReactionEvent = EntityWebhookPayload<ReactionWebhookPayload>;

/// The actor of a data change: one of the schema's `EntityActorWebhookPayload`
/// members (`UserActorWebhookPayload`, `OauthClientActorWebhookPayload`,
/// `IntegrationActorWebhookPayload`, `ExternalUserActorWebhookPayload`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActorWebhookPayload {
    /// The actor's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// `user`, `oauthClient`, `integration`, …
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The actor's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The actor's email (users).
    #[serde(default)]
    pub email: Option<String>,
    /// The actor's profile URL (users).
    #[serde(default)]
    pub url: Option<String>,
    /// The integration's service (integrations).
    #[serde(default)]
    pub service: Option<String>,
}

/// `CommentWebhookPayload`: a comment.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CommentWebhookPayload {
    /// The comment's id.
    pub id: String,
    /// When it was archived.
    #[serde(default)]
    pub archived_at: Option<String>,
    /// Its Markdown body.
    #[serde(default, deserialize_with = "null_as_default")]
    pub body: String,
    /// Set when a bot or integration wrote it (its data, as sent).
    #[serde(default)]
    pub bot_actor: Option<Value>,
    /// When it was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// The document content it belongs to.
    #[serde(default)]
    pub document_content_id: Option<String>,
    /// When it was last edited.
    #[serde(default)]
    pub edited_at: Option<String>,
    /// The external user (a synced Slack user, …) who wrote it.
    #[serde(default)]
    pub external_user_id: Option<String>,
    /// The initiative update it belongs to.
    #[serde(default)]
    pub initiative_update_id: Option<String>,
    /// The issue it belongs to.
    #[serde(default)]
    pub issue: Option<IssueChildWebhookPayload>,
    /// The id of that issue.
    #[serde(default)]
    pub issue_id: Option<String>,
    /// Its parent comment.
    #[serde(default)]
    pub parent: Option<CommentChildWebhookPayload>,
    /// The id of its parent comment: the thread's root, for a reply.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The post it belongs to.
    #[serde(default)]
    pub post_id: Option<String>,
    /// The project update it belongs to.
    #[serde(default)]
    pub project_update_id: Option<String>,
    /// The quoted text of an inline comment.
    #[serde(default)]
    pub quoted_text: Option<String>,
    /// Reactions, as sent.
    #[serde(default)]
    pub reaction_data: Option<Value>,
    /// When it was resolved.
    #[serde(default)]
    pub resolved_at: Option<String>,
    /// What it is synced with, as sent.
    #[serde(default)]
    pub synced_with: Option<Value>,
    /// When it was last updated.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// Its author.
    #[serde(default)]
    pub user: Option<UserChildWebhookPayload>,
    /// The id of its author.
    #[serde(default)]
    pub user_id: Option<String>,
}
