//! The webhook side: verify, parse, resolve and respond.

use super::*;

impl PlatformAdapter for SlackAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn platform(&self) -> Platform {
        Platform::SLACK
    }

    fn as_modals(&self) -> Option<&dyn chat_core::Modals> {
        Some(self)
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

    fn as_uploads(&self) -> Option<&dyn chat_core::Uploads> {
        Some(self)
    }

    fn as_ephemeral(&self) -> Option<&dyn chat_core::Ephemeral> {
        Some(self)
    }

    fn as_status(&self) -> Option<&dyn chat_core::Status> {
        Some(self)
    }

    fn as_unreact(&self) -> Option<&dyn chat_core::Unreact> {
        Some(self)
    }

    fn as_direct_messages(&self) -> Option<&dyn chat_core::DirectMessages> {
        Some(self)
    }

    fn as_scheduling(&self) -> Option<&dyn chat_core::Scheduling> {
        Some(self)
    }

    fn as_downloads(&self) -> Option<&dyn chat_core::Downloads> {
        Some(self)
    }
}

#[async_trait]
impl chat_core::Webhook for SlackAdapter {
    fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// Checks the `v0` signature over the raw body and the timestamp window.
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError> {
        if parts.method != http::Method::POST {
            return Err(WebhookError::MethodNotAllowed);
        }
        self.check_size(body)?;
        let now: SystemTime = self.clock.now();
        self.verifier.verify(&parts.headers, body, now)
    }

    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        self.check_size(body)?;
        let (attempt, retry_reason) = Context::delivery_headers(&parts.headers);
        let learned = self.merged(self.learned.get());
        let cx = Context {
            own_user_ids: learned.user_id.into_iter().collect(),
            own_bot_ids: learned.bot_id.into_iter().collect(),
            ignore_bots: self.ignore_other_bots,
            lifecycle_events: self.installations.is_some(),
            received_at_ms: self.now_ms(),
            attempt,
            retry_reason,
            raw: body.clone(),
        };
        inbound::parse(&cx, body)
    }

    /// Installation mode: the event's installation, its own-message filter,
    /// and uninstalls. Single-token mode: nothing to do.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let Some(store) = &self.installations else {
            return Ok(Resolution::Proceed);
        };
        let tenant = event.thread.tenant.clone();
        if let EventKind::Other(other) = &event.kind {
            match other.name.as_str() {
                "app_uninstalled" => {
                    let removed = store.delete(Platform::SLACK, &tenant).await?;
                    tracing::info!(tenant = %tenant, removed, "slack: app uninstalled; installation deleted");
                    return Ok(Resolution::Uninstalled {
                        reason: "app-uninstalled",
                    });
                }
                "tokens_revoked" if revokes_bot_token(&other.data) => {
                    let removed = store.delete(Platform::SLACK, &tenant).await?;
                    tracing::info!(tenant = %tenant, removed, "slack: bot token revoked; installation deleted");
                    return Ok(Resolution::Uninstalled {
                        reason: "tokens-revoked",
                    });
                }
                "tokens_revoked" => {
                    return Ok(Resolution::Ignored {
                        reason: "user-tokens-revoked",
                    });
                }
                _ => {}
            }
        }
        let Some(installation) = store.get(Platform::SLACK, &tenant).await? else {
            tracing::info!(tenant = %tenant, event_id = %event.id, "slack: delivery for a workspace without an installation");
            return Ok(Resolution::Ignored {
                reason: "unknown-installation",
            });
        };
        Ok(apply_installation(&installation, event))
    }

    fn respond(&self, event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        respond::respond(&self.texts, event, verdict)
    }

    /// [`DEDUPE_TTL`] (3 h), or [`DELAYED_EVENTS_DEDUPE_TTL`] (25 h) with
    /// [`delayed_events`](SlackAdapterBuilder::delayed_events).
    fn dedupe_ttl(&self) -> Duration {
        if self.delayed_events {
            DELAYED_EVENTS_DEDUPE_TTL
        } else {
            DEDUPE_TTL
        }
    }

    /// Every reply renders but a view beyond Slack's limits
    /// ([`views::answer`](crate::views::answer)) or a card whose blocks do
    /// not.
    fn check_reply(&self, reply: &chat_core::Reply) -> Result<(), AdapterError> {
        crate::respond::reply_body(reply).map(|_| ())
    }

    /// A slash command's or an action's reply that could not go in the HTTP
    /// response: posted to the interaction's `response_url` (its follow-up
    /// handle), rendered as in the response.
    async fn reply_later(
        &self,
        event: &Event,
        reply: &chat_core::Reply,
    ) -> Result<(), AdapterError> {
        let url = match &event.kind {
            EventKind::SlashCommand(c) => c.follow_up.as_ref(),
            EventKind::Action(a) => a.follow_up.as_ref(),
            _ => None,
        }
        .map(chat_core::Handle::as_str)
        .ok_or(AdapterError::Unsupported(
            "this delivery has no response_url to answer later",
        ))?;
        if !self.is_response_url(url) {
            return Err(AdapterError::Invalid(
                "a response_url outside Slack's hosts".into(),
            ));
        }
        let body = crate::respond::reply_body(reply)?;
        self.client_for(&event.thread.tenant)
            .await?
            .respond_to(url, &body)
            .await
    }
}
