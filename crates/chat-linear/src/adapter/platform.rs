//! The [`PlatformAdapter`] implementation of [`LinearAdapter`].

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, AgentSessionAction, Author, BoxError, Event, EventKind, HistoryMessage,
    HistoryPage, Inbound, MessageRef, OutboundMessage, Platform, PlatformAdapter, Resolution,
    TenantId, ThreadRef, UserInfo, Verdict, WebhookError,
};
use serde_json::Value;
use tokio::time::Instant;

use super::{FIRST_THOUGHT_BUDGET, LinearAdapter};
use crate::activity::Activity;
use crate::operations;
use crate::thread::LinearThread;
use crate::{inbound, respond, signature};

impl PlatformAdapter for LinearAdapter {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn platform(&self) -> Platform {
        Platform::LINEAR
    }

    fn as_streams(&self) -> Option<&dyn chat_core::Streams> {
        Some(self)
    }

    fn as_history(&self) -> Option<&dyn chat_core::History> {
        Some(self)
    }

    fn as_users(&self) -> Option<&dyn chat_core::Users> {
        Some(self)
    }

    fn as_status(&self) -> Option<&dyn chat_core::Status> {
        Some(self)
    }

    fn as_unreact(&self) -> Option<&dyn chat_core::Unreact> {
        Some(self)
    }

    fn as_downloads(&self) -> Option<&dyn chat_core::Downloads> {
        Some(self)
    }
}

#[async_trait]
impl chat_core::Webhook for LinearAdapter {
    /// [`DEDUPE_TTL`](super::DEDUPE_TTL): 7.5 h, past Linear's last retry.
    fn dedupe_ttl(&self) -> std::time::Duration {
        super::DEDUPE_TTL
    }

    fn max_body_bytes(&self) -> usize {
        self.inner.max_body
    }

    /// Checks `Linear-Signature` over the raw body in constant time, then the
    /// signed body's `webhookTimestamp` (a timestamp header is never read).
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError> {
        if body.len() > self.inner.max_body {
            return Err(WebhookError::TooLarge {
                limit: self.inner.max_body,
            });
        }
        signature::verify_signature(
            &self.inner.key,
            parts.headers.get(signature::SIGNATURE_HEADER),
            body,
        )?;
        signature::check_timestamp(body, self.inner.clock.now_ms(), self.inner.tolerance)
    }

    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        inbound::parse(&self.inner.config, parts, body, self.inner.clock.now_ms())
    }

    /// Installation mode: the event's installation, its app user's own
    /// comments and activities, and `OAuthApp` revocations. Otherwise
    /// nothing to do.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let Some(installations) = &self.inner.installations else {
            return Ok(Resolution::Proceed);
        };
        let store = &installations.store;
        let tenant = event.thread.tenant.clone();
        if let EventKind::Other(other) = &event.kind
            && other.name == inbound::OAUTH_APP_REVOKED
        {
            let removed = store.delete(Platform::LINEAR, &tenant).await?;
            tracing::info!(tenant = %tenant, removed, "linear: OAuth app revoked; installation deleted");
            return Ok(Resolution::Uninstalled {
                reason: "app-revoked",
            });
        }
        let Some(installation) = store.get(Platform::LINEAR, &tenant).await? else {
            tracing::info!(tenant = %tenant, event_id = %event.id, "linear: delivery for an organization without an installation");
            return Ok(Resolution::Ignored {
                reason: "unknown-installation",
            });
        };
        let own = match &event.kind {
            EventKind::Message(m) => installation.is_bot(&m.author.id),
            EventKind::AgentSession(s) => {
                s.action != AgentSessionAction::Created && installation.is_bot(&s.user.id)
            }
            _ => false,
        };
        Ok(if own {
            Resolution::Ignored {
                reason: "own-message",
            }
        } else {
            Resolution::Proceed
        })
    }

    fn respond(&self, _event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        respond::respond(verdict)
    }

    /// Ends a stopped session with the final `response` activity Linear
    /// expects, so it does not stay "working".
    async fn stopped(&self, event: &Event) {
        let Some(text) = self.inner.stopped.as_deref() else {
            return;
        };
        let Ok(LinearThread::AgentSession { session_id }) = Self::linear_thread(&event.thread)
        else {
            return;
        };
        let sent = self
            .send_activity(
                Some(&event.thread.tenant),
                Some(Instant::now() + FIRST_THOUGHT_BUDGET),
                session_id,
                &Activity::response(text),
                false,
            )
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, "linear: the final activity after a stop failed");
        }
    }

    /// For a new agent session, sends the ephemeral first thought unless the
    /// handler already posted, or already sent an activity through this
    /// adapter (or the option is off). Failures are logged, not raised.
    async fn after_ack(&self, event: &Event, posted: &(dyn Fn() -> bool + Send + Sync)) {
        let Some(text) = self.inner.first_thought.as_deref() else {
            return;
        };
        let EventKind::AgentSession(session) = &event.kind else {
            return;
        };
        if session.action != AgentSessionAction::Created
            || event.platform() != Platform::LINEAR
            || posted()
        {
            return;
        }
        let Some(claim) = self.inner.first.claim(&session.session_id) else {
            return;
        };
        if posted() {
            return;
        }
        let deadline = Instant::now() + FIRST_THOUGHT_BUDGET;
        let sent = self
            .send_activity(
                Some(&event.thread.tenant),
                Some(self.deadline.map_or(deadline, |d| d.min(deadline))),
                &session.session_id,
                &Activity::thought(text).ephemeral(),
                false,
            )
            .await;
        drop(claim);
        match sent {
            Ok(_) => {
                tracing::debug!(event_id = %event.id, "linear first thought sent");
            }
            Err(e) => {
                tracing::warn!(event_id = %event.id, error = %e, "linear first thought failed");
            }
        }
    }
}

#[async_trait]
impl chat_core::Messaging for LinearAdapter {
    /// In an agent session: a `response` activity. In a comment thread: a
    /// reply to the thread's root comment.
    ///
    /// A reply of a handler run ([`PostKey`](chat_core::PostKey)) gets an id
    /// derived from its event and position, so the same reply of a repeated run
    /// has the same id: on a repeat (attempt above 1) the adapter first asks
    /// whether that activity or comment exists and returns it instead of
    /// creating it again.
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        let target = Self::linear_thread(thread)?;
        let keyed = message
            .post_key
            .as_ref()
            .map(|key| (reply_id(thread, key), key.attempt > 1));
        if let Some((id, true)) = &keyed {
            let op = match target {
                LinearThread::AgentSession { .. } => operations::agent_activity(id),
                LinearThread::Comment { .. } => operations::comment(id),
            };
            if self.execute(Some(&thread.tenant), &op).await.is_ok() {
                return Ok(MessageRef {
                    thread: thread.clone(),
                    id: id.clone(),
                });
            }
        }
        let id = keyed.map(|(id, _)| id);
        let id = match target {
            LinearThread::AgentSession { session_id } => {
                let mut activity = Activity::response(body(message).as_str());
                if let Some(id) = id {
                    activity = activity.id(id);
                }
                self.send_activity(Some(&thread.tenant), None, session_id, &activity, true)
                    .await?
            }
            LinearThread::Comment {
                issue_id,
                root_comment_id,
            } => {
                self.create_comment(
                    Some(&thread.tenant),
                    issue_id,
                    Some(root_comment_id),
                    &body(message),
                    id,
                )
                .await?
            }
        };
        Ok(MessageRef {
            thread: thread.clone(),
            id,
        })
    }

    /// Comments only: agent activities cannot be edited.
    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        match Self::linear_thread(&message.thread)? {
            LinearThread::Comment { .. } => self
                .execute(
                    Some(&message.thread.tenant),
                    &operations::comment_update(&message.id, &body(content)),
                )
                .await
                .map(drop),
            _ => Err(AdapterError::Unsupported(
                "Linear agent activities cannot be edited",
            )),
        }
    }

    /// Comments only: agent activities cannot be deleted.
    async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        match Self::linear_thread(&message.thread)? {
            LinearThread::Comment { .. } => self
                .execute(
                    Some(&message.thread.tenant),
                    &operations::comment_delete(&message.id),
                )
                .await
                .map(drop),
            _ => Err(AdapterError::Unsupported(
                "Linear agent activities cannot be deleted",
            )),
        }
    }

    /// Comments only (`reactionCreate` on the comment).
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        match Self::linear_thread(&message.thread)? {
            LinearThread::Comment { .. } => self
                .execute(
                    Some(&message.thread.tenant),
                    &operations::reaction_create(&message.id, emoji.trim_matches(':')),
                )
                .await
                .map(drop),
            _ => Err(AdapterError::Unsupported(
                "Linear agent activities take no reactions",
            )),
        }
    }
}

#[async_trait]
impl chat_core::Streams for LinearAdapter {
    /// Agent sessions: every chunk an ephemeral `thought` (each replaces the
    /// one before), then [`stop_stream`](chat_core::Streams::stop_stream) sends the whole
    /// text as the session's `response`. Comment threads:
    /// [`AdapterError::Unsupported`], so the runtime edits one comment in
    /// place.
    async fn start_stream(
        &self,
        thread: &ThreadRef,
        text: &str,
        _recipient: Option<&str>,
    ) -> Result<MessageRef, AdapterError> {
        match Self::linear_thread(thread)? {
            LinearThread::AgentSession { session_id } => {
                let thought = Activity::thought(text).ephemeral();
                let id = self
                    .send_activity(Some(&thread.tenant), None, session_id, &thought, true)
                    .await?;
                Ok(MessageRef {
                    thread: thread.clone(),
                    id,
                })
            }
            _ => Err(AdapterError::Unsupported(
                "Linear streams natively only in agent sessions",
            )),
        }
    }

    /// An ephemeral `thought` with the chunk.
    async fn append_stream(&self, stream: &MessageRef, text: &str) -> Result<(), AdapterError> {
        let LinearThread::AgentSession { session_id } = Self::linear_thread(&stream.thread)? else {
            return Err(AdapterError::Unsupported(
                "Linear streams natively only in agent sessions",
            ));
        };
        let thought = Activity::thought(text).ephemeral();
        self.send_activity(
            Some(&stream.thread.tenant),
            None,
            session_id,
            &thought,
            true,
        )
        .await
        .map(drop)
    }

    /// The session's `response`: the whole text.
    async fn stop_stream(&self, stream: &MessageRef, full_text: &str) -> Result<(), AdapterError> {
        let LinearThread::AgentSession { session_id } = Self::linear_thread(&stream.thread)? else {
            return Err(AdapterError::Unsupported(
                "Linear streams natively only in agent sessions",
            ));
        };
        let response = Activity::response(full_text);
        self.send_activity(
            Some(&stream.thread.tenant),
            None,
            session_id,
            &response,
            true,
        )
        .await
        .map(drop)
    }
}

#[async_trait]
impl chat_core::History for LinearAdapter {
    /// Agent sessions: the session's activities (`agentSession.activities`,
    /// by creation); comment threads: the root comment, then its replies
    /// (`comment.children`), following Linear's cursor. A message is the
    /// bot's when its author is the token's own user (`isMe`).
    async fn history(
        &self,
        thread: &ThreadRef,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        let first = limit.clamp(1, 250);
        let handles = &self.inner.config.mention_names;
        let (data, connection, root) = match Self::linear_thread(thread)? {
            LinearThread::AgentSession { session_id } => {
                let op = operations::session_activities(session_id, first, cursor);
                let data = self.execute(Some(&thread.tenant), &op).await?;
                (data, "activities", None)
            }
            LinearThread::Comment {
                root_comment_id, ..
            } => {
                let op = operations::comment_thread(root_comment_id, first, cursor);
                let data = self.execute(Some(&thread.tenant), &op).await?;
                let root = cursor
                    .is_none()
                    .then(|| history_entry(&data, handles))
                    .flatten();
                (data, "children", root)
            }
        };
        let page = &data[connection];
        let mut messages: Vec<HistoryMessage> = root.into_iter().collect();
        messages.extend(
            page["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|node| history_entry(node, handles)),
        );
        let next = (page["pageInfo"]["hasNextPage"] == true)
            .then(|| page["pageInfo"]["endCursor"].as_str().map(str::to_owned))
            .flatten();
        Ok(HistoryPage::new(messages, next))
    }
}

#[async_trait]
impl chat_core::Users for LinearAdapter {
    /// The `user` query (display name, name, email, avatar, app user or
    /// not); the handle is the display name, the mention the profile URL
    /// (how Linear's Markdown writes one).
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError> {
        let user = self.execute(Some(tenant), &operations::user(id)).await?;
        let text = |k: &str| {
            user[k]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let name = text("name");
        let handle = text("displayName");
        let display = handle
            .clone()
            .or_else(|| name.clone())
            .unwrap_or_else(|| id.to_owned());
        let mut info = UserInfo::new(text("id").unwrap_or_else(|| id.to_owned()), display)
            .with_bot(user["app"] == true);
        if let Some(name) = name {
            info = info.with_real_name(name);
        }
        if let Some(handle) = handle {
            info = info.with_handle(handle);
        }
        if let Some(email) = text("email") {
            info = info.with_email(email);
        }
        if let Some(avatar) = text("avatarUrl") {
            info = info.with_avatar_url(avatar);
        }
        if let Some(url) = text("url") {
            info = info.with_mention(url);
        }
        Ok(info)
    }
}

#[async_trait]
impl chat_core::Unreact for LinearAdapter {
    /// Comments only: the bot's own reaction with that emoji
    /// (`comment.reactions`), deleted with `reactionDelete`; none there is
    /// success.
    async fn unreact(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        let LinearThread::Comment { .. } = Self::linear_thread(&message.thread)? else {
            return Err(AdapterError::Unsupported(
                "Linear agent activities take no reactions",
            ));
        };
        let tenant = Some(&message.thread.tenant);
        let comment = self
            .execute(tenant, &operations::comment_reactions(&message.id))
            .await?;
        let emoji = emoji.trim_matches(':');
        let mine = comment["reactions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["emoji"] == emoji && r["user"]["isMe"] == true)
            .filter_map(|r| r["id"].as_str());
        for id in mine {
            self.execute(tenant, &operations::reaction_delete(id))
                .await?;
        }
        Ok(())
    }
}

#[async_trait]
impl chat_core::Downloads for LinearAdapter {
    /// A file uploaded into a comment (`https://uploads.linear.app/…`),
    /// read with the workspace's token, streamed and capped. The token goes
    /// only to Linear's uploads host (or the configured endpoint's origin);
    /// another URL is [`AdapterError::Invalid`].
    async fn download(
        &self,
        tenant: &TenantId,
        file: &chat_core::Attachment,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        let uri = http::Uri::try_from(file.source.as_str())
            .map_err(|_| AdapterError::Invalid("not a file URL".to_owned()))?;
        let uploads = uri.scheme() == Some(&http::uri::Scheme::HTTPS)
            && uri
                .host()
                .is_some_and(|h| h.eq_ignore_ascii_case(crate::read::UPLOADS_HOST));
        if !uploads && !chat_http::same_origin(&self.inner.client.endpoint, &uri) {
            return Err(AdapterError::Invalid(format!(
                "not a Linear upload: {}",
                uri.host().unwrap_or_default()
            )));
        }
        let auth = self.auth(Some(tenant)).await?;
        let client = &self.inner.client;
        client
            .transport
            .download_file(uri, Some(&auth), limit, client.options.request_timeout)
            .await
    }
}

#[async_trait]
impl chat_core::Status for LinearAdapter {
    /// In an agent session, a status is an ephemeral thought (it disappears
    /// with the next activity); clearing it sends nothing. Comment threads
    /// have no status.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        match (Self::linear_thread(thread)?, status) {
            (LinearThread::AgentSession { session_id }, Some(text)) if !text.is_empty() => self
                .send_activity(
                    Some(&thread.tenant),
                    None,
                    session_id,
                    &Activity::thought(text).ephemeral(),
                    true,
                )
                .await
                .map(drop),
            _ => Ok(()),
        }
    }
}

/// The id of a handler run's reply: a UUID in v4 format (what Linear accepts
/// as a client-supplied id) derived from the thread, the event and the reply's
/// position, so a repeated run reuses it.
fn reply_id(thread: &ThreadRef, key: &chat_core::PostKey) -> String {
    let name = format!(
        "chat-rs-reply\0{}\0{}\0{}\0{}\0{}",
        thread.tenant, thread.channel, thread.thread, key.event_id, key.position
    );
    let digest = ring::digest::digest(&ring::digest::SHA256, name.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// The Markdown body of a message: a card rendered as Markdown, else the text
/// (Linear reads plain text as Markdown too).
fn body(message: &OutboundMessage) -> String {
    match &message.card {
        Some(card) => crate::markdown::render(card),
        None => message.text.clone(),
    }
}

/// A comment or an agent activity as a history entry, its Markdown read
/// as a delivered comment's is (`handles` are the bot's).
fn history_entry(node: &Value, handles: &[String]) -> Option<HistoryMessage> {
    let id = node["id"].as_str()?;
    let user = &node["user"];
    let bot = &node["botActor"];
    let mut author = Author::new(
        user["id"]
            .as_str()
            .or_else(|| bot["id"].as_str())
            .unwrap_or_default(),
    );
    author.name = user["displayName"]
        .as_str()
        .or_else(|| bot["name"].as_str())
        .map(str::to_owned);
    author.is_bot = user["app"] == true || bot.is_object();
    author.is_me = user["isMe"] == true;
    let content = &node["content"];
    let text = node["body"]
        .as_str()
        .or_else(|| content["body"].as_str())
        .map(str::to_owned)
        .or_else(|| {
            content["action"]
                .as_str()
                .map(|a| format!("{a} {}", content["parameter"].as_str().unwrap_or_default()))
        })
        .unwrap_or_default();
    let at_ms = node["createdAt"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .and_then(|t| u64::try_from(t.as_millisecond()).ok())
        .unwrap_or(0);
    let message = crate::inbound::message(id.to_owned(), author, &text, handles);
    Some(HistoryMessage::from_message(message, at_ms))
}
