//! Verified deliveries → normalized events.
//!
//! | delivery | result |
//! |---|---|
//! | `AgentSessionEvent` with `agentActivity.signal == "stop"` | [`AgentSessionAction::StopRequested`]: a control event |
//! | `AgentSessionEvent` `created` | [`AgentSessionAction::Created`], with `promptContext`; its text is the prompt activity's body when the payload has one, else the body of the session's comment |
//! | `AgentSessionEvent` `prompted` | [`AgentSessionAction::Prompted`], text from `agentActivity.content.body` |
//! | `Comment` `create` | [`EventKind::Message`] in the comment thread (`parentId ?? id`): plain text, mentions (profile links), links and uploaded files read from its Markdown |
//! | `Reaction` `create` / `remove` on a comment | [`EventKind::Reaction`] in the comment's thread (named after the comment reacted to); reactions on issues and the app's own are ignored |
//! | our own comments and activities, bot comments, comments outside issues | [`Inbound::Ignored`] |
//! | `OAuthApp` `revoked`, in installation mode | [`EventKind::Other`] named [`OAUTH_APP_REVOKED`], in the organization's tenant: the adapter's `resolve` deletes the installation and ignores it |
//! | any other type or action | [`Inbound::Ignored`] (`unsupported:{type}:{action}`) |
//!
//! Dedupe keys name the entity, not the delivery: `session:{id}:created`,
//! `session:{id}:activity:{activity id}`, `comment:{id}`,
//! `reaction:{id}:{create|remove}`. The event id is the
//! `Linear-Delivery` header when present, else the dedupe key.

use std::collections::HashSet;

use bytes::Bytes;
use chat_core::{
    AgentSession, AgentSessionAction, Author, Event, EventKind, Inbound, Message, OtherEvent,
    Platform, Reaction, ThreadRef, WebhookError,
};
use serde::Deserialize;

use crate::json::{ensure_object, malformed};
use crate::payload::{
    AgentSessionEventWebhookPayload, CommentEvent, ReactionEvent, UserChildWebhookPayload,
    WebhookHead,
};
use crate::read::mentions;
use crate::signature::DELIVERY_HEADER;
use crate::thread::{comment_thread, session_thread};

/// The [`OtherEvent`] name of an `OAuthApp` `revoked` webhook (installation
/// mode): the app's access to the organization was revoked.
pub const OAUTH_APP_REVOKED: &str = "OAuthApp.revoked";

/// What parsing needs to know, shared by every clone of the adapter.
#[derive(Debug)]
pub(crate) struct Config {
    /// Our app user ids (one per workspace): their comments and activities are
    /// ignored.
    pub(crate) app_user_ids: HashSet<String>,
    /// Lowercase handles whose mention in a comment makes it a mention.
    pub(crate) mention_names: Vec<String>,
    /// Whether comments written by bots and integrations are ignored.
    pub(crate) ignore_bot_comments: bool,
    /// Installation mode: `OAuthApp` `revoked` becomes an event, for
    /// `resolve` to delete the installation.
    pub(crate) lifecycle_events: bool,
}

/// Turns a verified body into an event or an ignore.
pub(crate) fn parse(
    cfg: &Config,
    parts: &http::request::Parts,
    body: &Bytes,
    now_ms: u64,
) -> Result<Inbound, WebhookError> {
    ensure_object(body)?;
    let head: WebhookHead = serde_json::from_slice(body).map_err(|e| malformed("body", &e))?;
    if head.kind.is_empty() {
        return Err(WebhookError::Malformed("body: no type".to_owned()));
    }
    let delivery = delivery_id(parts);
    match (head.kind.as_str(), head.action.as_str()) {
        ("AgentSessionEvent", _) => agent_session_event(cfg, delivery, body, now_ms),
        ("Comment", "create") => comment_created(cfg, delivery, body, now_ms),
        ("Reaction", "create" | "remove") => {
            reaction(cfg, delivery, body, now_ms, head.action == "create")
        }
        ("OAuthApp", "revoked") if cfg.lifecycle_events => {
            oauth_app_revoked(delivery, body, now_ms)
        }
        (kind, action) => Ok(ignored(format!(
            "unsupported:{}:{}",
            reason_part(kind),
            reason_part(action)
        ))),
    }
}

/// `OAuthAppWebhookPayload` with `action: revoked`: an event of the
/// organization, which the adapter's `resolve` acts on (and never admits).
fn oauth_app_revoked(
    delivery: Option<String>,
    body: &Bytes,
    now_ms: u64,
) -> Result<Inbound, WebhookError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Revoked {
        #[serde(default)]
        organization_id: String,
        #[serde(default)]
        oauth_client_id: String,
    }
    let p: Revoked = serde_json::from_slice(body).map_err(|e| malformed("OAuthApp", &e))?;
    if p.organization_id.is_empty() {
        return Err(WebhookError::Malformed(
            "OAuthApp: no organizationId".to_owned(),
        ));
    }
    let data = serde_json::from_slice(body).map_err(|e| malformed("OAuthApp", &e))?;
    let dedupe = format!("oauth-app:{}:revoked", reason_part(&p.oauth_client_id));
    Ok(event(
        delivery,
        dedupe,
        ThreadRef::new(Platform::LINEAR, p.organization_id, "", ""),
        EventKind::Other(OtherEvent::new(OAUTH_APP_REVOKED, data)),
        body,
        now_ms,
    ))
}

fn ignored(reason: impl Into<String>) -> Inbound {
    Inbound::Ignored {
        reason: reason.into(),
    }
}

/// A name from the payload, made safe for a log line.
fn reason_part(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(48)
        .collect()
}

/// The `Linear-Delivery` header, when it is a plausible id.
fn delivery_id(parts: &http::request::Parts) -> Option<String> {
    let v = parts.headers.get(DELIVERY_HEADER)?.to_str().ok()?.trim();
    (!v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| v.to_owned())
}

fn author_of(id: Option<&str>, user: Option<&UserChildWebhookPayload>) -> Author {
    let id = id
        .filter(|i| !i.is_empty())
        .or_else(|| user.map(|u| u.id.as_str()))
        .unwrap_or_default();
    let mut author = Author::new(id);
    author.name = user.and_then(|u| u.name.clone());
    author
}

fn event(
    delivery: Option<String>,
    dedupe: String,
    thread: chat_core::ThreadRef,
    kind: EventKind,
    body: &Bytes,
    now_ms: u64,
) -> Inbound {
    let id = delivery.unwrap_or_else(|| dedupe.clone());
    Inbound::Event(Box::new(
        Event::new(id, dedupe, thread, kind)
            .with_received_at_ms(now_ms)
            .with_raw(body.clone()),
    ))
}

fn agent_session_event(
    cfg: &Config,
    delivery: Option<String>,
    body: &Bytes,
    now_ms: u64,
) -> Result<Inbound, WebhookError> {
    let p = AgentSessionEventWebhookPayload::from_slice(body)?;
    let session = &p.agent_session;
    if p.organization_id.is_empty() || session.id.is_empty() {
        return Err(WebhookError::Malformed(
            "AgentSessionEvent: no organizationId or agentSession.id".to_owned(),
        ));
    }
    let is_me = |id: &str| {
        !id.is_empty() && (cfg.app_user_ids.contains(id) || p.app_user_id.as_deref() == Some(id))
    };
    let issue_id = session
        .issue_id
        .as_deref()
        .or_else(|| session.issue.as_ref().map(|i| i.id.as_str()));
    let thread = session_thread(p.organization_id.as_str(), issue_id, &session.id);
    let activity = p.agent_activity.as_ref();

    let action = match (p.action.as_str(), activity) {
        ("created" | "prompted", Some(a)) if a.is_stop() => AgentSessionAction::StopRequested,
        ("created", _) => AgentSessionAction::Created,
        ("prompted", Some(_)) => AgentSessionAction::Prompted,
        ("prompted", None) => {
            return Err(WebhookError::Malformed(
                "AgentSessionEvent: prompted without agentActivity".to_owned(),
            ));
        }
        (other, _) => {
            return Ok(ignored(format!(
                "unsupported:AgentSessionEvent:{}",
                reason_part(other)
            )));
        }
    };

    let (author, text, activity_id, dedupe) = match (action, activity) {
        (AgentSessionAction::Created, _) => {
            let author = author_of(session.creator_id.as_deref(), session.creator.as_ref());
            let text = activity
                .and_then(|a| a.body())
                .map(str::to_owned)
                .or_else(|| session.comment.as_ref().and_then(|c| c.body.clone()));
            let dedupe = format!("session:{}:created", session.id);
            (author, text, activity.map(|a| a.id.clone()), dedupe)
        }
        (_, Some(a)) => {
            let author = author_of(a.user_id.as_deref(), a.user.as_ref());
            if is_me(&author.id) {
                return Ok(ignored("own-activity"));
            }
            if a.id.is_empty() {
                return Err(WebhookError::Malformed(
                    "AgentSessionEvent: agentActivity without id".to_owned(),
                ));
            }
            let text = (action == AgentSessionAction::Prompted)
                .then(|| a.body().unwrap_or_default().to_owned());
            let dedupe = format!("session:{}:activity:{}", session.id, a.id);
            (author, text, Some(a.id.clone()), dedupe)
        }
        (_, None) => {
            return Err(WebhookError::Malformed(
                "AgentSessionEvent: no agentActivity".to_owned(),
            ));
        }
    };

    let mut agent = AgentSession::new(session.id.clone(), action, author);
    agent.text = text;
    if action == AgentSessionAction::Created {
        agent.prompt_context.clone_from(&p.prompt_context);
    }
    agent.activity_id = activity_id.filter(|a| !a.is_empty());
    let kind = EventKind::AgentSession(agent);
    Ok(event(delivery, dedupe, thread, kind, body, now_ms))
}

fn comment_created(
    cfg: &Config,
    delivery: Option<String>,
    body: &Bytes,
    now_ms: u64,
) -> Result<Inbound, WebhookError> {
    let p = CommentEvent::from_slice(body)?;
    let c = &p.data;
    if p.organization_id.is_empty() || c.id.is_empty() {
        return Err(WebhookError::Malformed(
            "Comment: no organizationId or data.id".to_owned(),
        ));
    }
    let mut author = author_of(c.user_id.as_deref(), c.user.as_ref());
    if author.id.is_empty()
        && let Some(actor) = &p.actor
    {
        author.id.clone_from(&actor.id);
        author.name.clone_from(&actor.name);
    }
    if !author.id.is_empty() && cfg.app_user_ids.contains(author.id.as_str()) {
        return Ok(ignored("own-message"));
    }
    author.is_bot = c.bot_actor.as_ref().is_some_and(|b| !b.is_null());
    if author.is_bot && cfg.ignore_bot_comments {
        return Ok(ignored("bot-message"));
    }
    let Some(issue_id) = c
        .issue_id
        .as_deref()
        .or_else(|| c.issue.as_ref().map(|i| i.id.as_str()))
        .filter(|i| !i.is_empty())
    else {
        return Ok(ignored("unsupported:Comment:not-on-an-issue"));
    };
    let root = c
        .parent_id
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(&c.id);
    let thread = comment_thread(p.organization_id.as_str(), issue_id, root);
    let is_mention = mentions(&c.body, &cfg.mention_names);
    let kind = EventKind::Message(
        message(c.id.clone(), author, &c.body, &cfg.mention_names).with_mention(is_mention),
    );
    Ok(event(
        delivery,
        format!("comment:{}", c.id),
        thread,
        kind,
        body,
        now_ms,
    ))
}

/// An emoji reaction added to (`added`) or removed from a comment: an event
/// in the comment's thread, named after the comment reacted to (the payload
/// does not say whether it is a reply), as Slack's reactions are.
fn reaction(
    cfg: &Config,
    delivery: Option<String>,
    body: &Bytes,
    now_ms: u64,
    added: bool,
) -> Result<Inbound, WebhookError> {
    let p: ReactionEvent = serde_json::from_slice(body).map_err(|e| malformed("Reaction", &e))?;
    let r = &p.data;
    if p.organization_id.is_empty() || r.id.is_empty() || r.emoji.is_empty() {
        return Err(WebhookError::Malformed(
            "Reaction: no organizationId, data.id or data.emoji".to_owned(),
        ));
    }
    let comment = r
        .comment_id
        .as_deref()
        .or_else(|| r.comment.as_ref().map(|c| c.id.as_str()))
        .filter(|c| !c.is_empty());
    let issue = r
        .comment
        .as_ref()
        .and_then(|c| c.issue_id.as_deref())
        .or(r.issue_id.as_deref())
        .filter(|i| !i.is_empty());
    let (Some(comment), Some(issue)) = (comment, issue) else {
        return Ok(ignored("reaction-on:not-a-comment"));
    };
    let user = author_of(r.user_id.as_deref(), r.user.as_ref());
    if !user.id.is_empty() && cfg.app_user_ids.contains(user.id.as_str()) {
        return Ok(ignored("own-reaction"));
    }
    let action = if added { "create" } else { "remove" };
    let thread = comment_thread(p.organization_id.as_str(), issue, comment);
    Ok(event(
        delivery,
        format!("reaction:{}:{action}", r.id),
        thread,
        EventKind::Reaction(Reaction::new(r.emoji.clone(), added, user, comment)),
        body,
        now_ms,
    ))
}

/// A comment's Markdown `body` read into the portable message: plain text,
/// mentions (`handles` are the bot's), links and uploaded files; the body
/// itself is its markup and its Markdown.
pub(crate) fn message(id: String, author: Author, body: &str, handles: &[String]) -> Message {
    let read = crate::read::read(body, handles);
    Message::new(id, author, read.text)
        .with_markup(body)
        .with_markdown(body)
        .with_mentions(read.mentions)
        .with_links(read.links)
        .with_attachments(read.attachments)
}
