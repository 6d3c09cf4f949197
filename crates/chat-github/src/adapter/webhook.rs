//! The webhook side: the signature, parsing, each verdict answered as
//! GitHub expects.
//!
//! GitHub waits 10 seconds for a 2xx and counts anything else as a failed
//! delivery; it never resends one by itself — a failed delivery is
//! redelivered by hand or through the REST API within three days
//! ([Handling failed webhook deliveries](https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries)).
//! It reads nothing of the answer: a handler's reply is a comment
//! ([`reply_later`](chat_core::Webhook::reply_later)).

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, BoxError, DefaultLockScope, Event, EventKind, Inbound, PlatformAdapter, Reply,
    Resolution, Verdict, WebhookError,
};

use super::GitHubAdapter;
use crate::GITHUB;
use crate::inbound::{self, Delivery};
use crate::signature::verify_signature;

/// The event header.
pub const EVENT_HEADER: &str = "x-github-event";
/// The delivery id header: a redelivery carries the same.
pub const DELIVERY_HEADER: &str = "x-github-delivery";
/// The webhook's id header.
pub const HOOK_HEADER: &str = "x-github-hook-id";

/// The longest header value taken as an id.
const MAX_ID: usize = 128;

impl PlatformAdapter for GitHubAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn platform(&self) -> chat_core::Platform {
        GITHUB
    }

    fn as_history(&self) -> Option<&dyn chat_core::History> {
        Some(self)
    }

    fn as_status(&self) -> Option<&dyn chat_core::Status> {
        Some(self)
    }
}

fn header<'a>(parts: &'a http::request::Parts, name: &'static str) -> Option<&'a str> {
    parts
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= MAX_ID)
}

#[async_trait]
impl chat_core::Webhook for GitHubAdapter {
    fn max_body_bytes(&self) -> usize {
        self.max_body
    }

    /// [`DEDUPE_TTL`](super::DEDUPE_TTL): 3 days, GitHub's redelivery window.
    fn dedupe_ttl(&self) -> std::time::Duration {
        super::DEDUPE_TTL
    }

    /// An issue, a pull request, a review thread, a discussion: each is one
    /// conversation.
    fn lock_scope(&self) -> DefaultLockScope {
        DefaultLockScope::Thread
    }

    /// `X-Hub-Signature-256` over the raw body, in constant time, before
    /// anything is parsed.
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError> {
        if body.len() > self.max_body {
            return Err(WebhookError::TooLarge {
                limit: self.max_body,
            });
        }
        verify_signature(&self.webhook_key, &parts.headers, body)
    }

    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        let event = header(parts, EVENT_HEADER).ok_or(WebhookError::MissingHeader(EVENT_HEADER))?;
        let id =
            header(parts, DELIVERY_HEADER).ok_or(WebhookError::MissingHeader(DELIVERY_HEADER))?;
        let form = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        let delivery = Delivery {
            event,
            id,
            hook: header(parts, HOOK_HEADER),
            form,
            received_at_ms: chat_core::clock::millis(std::time::SystemTime::now()),
            raw: body,
        };
        inbound::parse(&delivery, &self.identity)
    }

    /// An App uninstalled: its token is forgotten and the runtime removes
    /// the tenant's subscriptions; suspended: its token is forgotten (a new
    /// one is fetched when it is back). Every other event goes on.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let EventKind::Other(other) = &event.kind else {
            return Ok(Resolution::Proceed);
        };
        let installation = event.thread.tenant.as_str().parse::<u64>().ok();
        match (other.name.as_str(), installation) {
            ("github.installation.deleted", Some(id)) => {
                self.forget_installation(id);
                tracing::info!(installation = id, "github: the App was uninstalled");
                Ok(Resolution::Uninstalled {
                    reason: "app-uninstalled",
                })
            }
            ("github.installation.suspend", Some(id)) => {
                self.forget_installation(id);
                tracing::info!(installation = id, "github: the App was suspended");
                Ok(Resolution::Ignored {
                    reason: "app-suspended",
                })
            }
            _ => Ok(Resolution::Proceed),
        }
    }

    fn respond(&self, _event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        chat_core::adapter::status_response(verdict)
    }

    /// GitHub reads nothing of the answer.
    fn replies_in_response(&self, _event: &Event, _reply: &Reply) -> bool {
        false
    }

    /// A reply is a comment in the event's conversation.
    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Message { message, .. } => {
                chat_core::Messaging::post(self, &event.thread, message).await?;
                Ok(())
            }
            _ => Err(AdapterError::Unsupported(
                "GitHub answers only with comments",
            )),
        }
    }
}
