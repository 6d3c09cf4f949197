//! [`SlackAdapter`]: the Slack [`PlatformAdapter`] — the adapter and its
//! identity lookup here; its settings in [`builder`]; the webhook side
//! (verify, parse, resolve, respond) in `webhook`; posting in `messaging`;
//! the capabilities Slack has (modals, streams, history, users, uploads,
//! ephemeral messages, the assistant status, removing a reaction) in
//! `capabilities`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, Author, BoxError, Event, EventKind, HistoryMessage, HistoryOrder, HistoryPage,
    Inbound, Installation, InstallationStore, MessageRef, OutboundMessage, Platform,
    PlatformAdapter, Resolution, TenantId, ThreadRef, UserInfo, Verdict, WebhookError,
};
use serde_json::Value;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::client::{BotIdentity, DEFAULT_API_BASE_URL, SlackClient};
use crate::error::BuildError;
use crate::inbound::{self, Context, mentions_user};
use crate::render::render;
use crate::respond::{self, Texts};
use crate::signature::Verifier;
use chat_core::{Clock, SystemClock};
use chat_http::{HttpOptions, Proxy};

mod builder;
mod capabilities;
mod messaging;
mod surfaces;
mod webhook;

pub use self::builder::{DEFAULT_RESPONSE_URL_HOSTS, SlackAdapterBuilder};
pub use self::surfaces::{MAX_SUGGESTED_PROMPTS, Prompt};

/// How long after a failed `auth.test` the adapter waits before trying again.
const LEARN_RETRY: Duration = Duration::from_secs(60);

/// How long a Slack event's dedupe mark lives: Slack retries a failed
/// delivery three times within minutes and does not deliver an event more
/// than two hours late (without Delayed Events); an hour of margin.
pub const DEDUPE_TTL: Duration = Duration::from_secs(3 * 60 * 60);

/// How long it lives with Delayed Events on: Slack retries hourly for 24
/// hours; an hour of margin.
pub const DELAYED_EVENTS_DEDUPE_TTL: Duration = Duration::from_secs(25 * 60 * 60);

/// The Slack adapter: verifies, parses and answers webhook deliveries, and
/// posts through the Web API — with one bot token, or with each workspace's
/// own from an installation store.
///
/// Built with [`SlackAdapter::builder`]. Its `Debug` output never shows the
/// signing secret or a token.
///
/// **Two modes, exactly one per adapter.**
///
/// * *Single-token mode* ([`bot_token`](SlackAdapterBuilder::bot_token)): one
///   workspace, one `xoxb-` token.
/// * *Installation mode* ([`installations`](SlackAdapterBuilder::installations)):
///   a bot distributed to many workspaces. Each delivery, once its signature
///   is checked, is resolved to its installation — `authorizations[0]`'s
///   enterprise id for an org-wide install, else its team id — in the
///   runtime's [`resolve`](chat_core::Webhook::resolve) step: a workspace with no
///   installation is acknowledged and recorded as ignored; a store that
///   cannot answer makes the delivery fail with a 500, so Slack retries it.
///   The installation's bot user and bot id recognize the bot's own messages,
///   and every outbound call about a thread uses the token of the thread's
///   tenant. `app_uninstalled`, and `tokens_revoked` naming the bot's token,
///   delete the installation. [`SlackOAuth`](crate::SlackOAuth) is the
///   install flow that fills the store.
///
/// **Which messages are "ours".** Our own messages are always ignored, and
/// other bots' by default ([`SlackAdapterBuilder::ignore_other_bots`]). The
/// bot is recognized by its user id and bot id: the configured ones
/// ([`bot_user_id`](SlackAdapterBuilder::bot_user_id),
/// [`bot_id`](SlackAdapterBuilder::bot_id)), else those `auth.test` returns —
/// learned by [`identity`](Self::identity), and on the first
/// [`post`](chat_core::Messaging::post) (the bot has no messages to recognize
/// before it posts) — and in every Events API delivery the bot user of the
/// installation it is for (`authorizations[0].user_id`).
pub struct SlackAdapter {
    name: String,
    verifier: Verifier,
    /// Single-token mode: the client with the token. Installation mode: the
    /// shared pool without a token, which each call completes with its
    /// tenant's token.
    client: SlackClient,
    installations: Option<Arc<dyn InstallationStore>>,
    configured: BotIdentity,
    learned: OnceCell<BotIdentity>,
    last_learn_attempt: Mutex<Option<Instant>>,
    ignore_other_bots: bool,
    max_body_bytes: usize,
    clock: Arc<dyn Clock>,
    texts: Texts,
    delayed_events: bool,
    /// Where a `response_url` may point: these https hosts, and the Web API's
    /// own origin.
    response_hosts: Vec<String>,
}

impl fmt::Debug for SlackAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackAdapter")
            .field("name", &self.name)
            .field("verifier", &self.verifier)
            .field("client", &self.client)
            .field("installation_mode", &self.installations.is_some())
            .field("configured", &self.configured)
            .field("learned", &self.learned.get())
            .field("ignore_other_bots", &self.ignore_other_bots)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl SlackAdapter {
    /// A builder with the defaults.
    pub fn builder() -> SlackAdapterBuilder {
        SlackAdapterBuilder::default()
    }

    /// The Web API client, for what the [`PlatformAdapter`] methods do not
    /// cover (ephemeral messages, modals, reactions removal, any method via
    /// [`SlackClient::call`]). In installation mode it has no token: use
    /// [`client_for`](Self::client_for).
    pub fn client(&self) -> &SlackClient {
        &self.client
    }

    /// The Web API client for `tenant` (an event's
    /// [`tenant()`](chat_core::Event::tenant)): in installation mode with
    /// that installation's token; in single-token mode the one client.
    ///
    /// Errors: [`AdapterError::Unsupported`] when the bot is not installed
    /// in the tenant, [`AdapterError::Transport`] (with the store's error as
    /// its source) when the store cannot answer.
    pub async fn client_for(&self, tenant: &TenantId) -> Result<SlackClient, AdapterError> {
        let Some(store) = &self.installations else {
            return Ok(self.client.clone());
        };
        let installation = store
            .get(Platform::SLACK, tenant)
            .await
            .map_err(|e| AdapterError::Transport(Box::new(e)))?
            .ok_or(AdapterError::Unsupported(
                "the bot is not installed in this workspace",
            ))?;
        self.client
            .with_token(installation.access_token.expose())
            .map_err(|e| AdapterError::Transport(Box::new(e)))
    }

    /// The bot's identity in `tenant`: its installation's in installation
    /// mode, else [`identity`](Self::identity) (empty when it cannot be
    /// learned: then no message is recognized as the bot's).
    async fn identity_of(&self, tenant: &TenantId) -> Result<BotIdentity, AdapterError> {
        match &self.installations {
            Some(store) => {
                let installation = store
                    .get(Platform::SLACK, tenant)
                    .await
                    .map_err(|e| AdapterError::Transport(Box::new(e)))?;
                Ok(installation.map_or_else(
                    || BotIdentity::new(None, None),
                    |i| BotIdentity::new(i.bot_user_id, i.bot_id),
                ))
            }
            None => Ok(self
                .identity()
                .await
                .unwrap_or_else(|_| self.configured.clone())),
        }
    }

    /// The installation store, in installation mode.
    pub fn installations(&self) -> Option<&Arc<dyn InstallationStore>> {
        self.installations.as_ref()
    }

    /// The bot's identity: the configured ids, completed by one `auth.test`
    /// call whose answer is cached. Single-token mode only: in installation
    /// mode every installation has its own
    /// ([`Installation::bot_user_id`], [`Installation::bot_id`]), and this is
    /// [`AdapterError::Unsupported`].
    pub async fn identity(&self) -> Result<BotIdentity, AdapterError> {
        if self.installations.is_some() {
            return Err(AdapterError::Unsupported(
                "in installation mode each installation has its own identity",
            ));
        }
        if self.configured.user_id.is_some() && self.configured.bot_id.is_some() {
            return Ok(self.configured.clone());
        }
        let learned = self
            .learned
            .get_or_try_init(|| self.client.auth_test())
            .await?;
        Ok(self.merged(Some(learned)))
    }

    fn merged(&self, learned: Option<&BotIdentity>) -> BotIdentity {
        let mut id = self.configured.clone();
        if let Some(l) = learned {
            id.user_id = id.user_id.or_else(|| l.user_id.clone());
            id.bot_id = id.bot_id.or_else(|| l.bot_id.clone());
            id.team_id = id.team_id.or_else(|| l.team_id.clone());
            id.enterprise_id = id.enterprise_id.or_else(|| l.enterprise_id.clone());
        }
        id
    }

    /// Learns the identity once, at most one attempt per minute; failures only
    /// log (the installation's bot user in each delivery still identifies us).
    async fn learn_identity(&self) {
        let complete = self.configured.user_id.is_some() && self.configured.bot_id.is_some();
        if complete || self.learned.initialized() || self.installations.is_some() {
            return;
        }
        {
            let mut last = self
                .last_learn_attempt
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|t| t.elapsed() < LEARN_RETRY) {
                return;
            }
            *last = Some(Instant::now());
        }
        if let Err(e) = self.identity().await {
            tracing::warn!(error = %e, "slack: auth.test failed; recognizing own messages by authorizations only");
        }
    }

    fn now_ms(&self) -> u64 {
        self.clock
            .now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    fn check_size(&self, body: &Bytes) -> Result<(), WebhookError> {
        if body.len() > self.max_body_bytes {
            Err(WebhookError::TooLarge {
                limit: self.max_body_bytes,
            })
        } else {
            Ok(())
        }
    }
}

/// Whether a `tokens_revoked` event names bot tokens (`tokens.bot`), which
/// ends the installation; revoked user tokens leave the bot working.
fn revokes_bot_token(data: &serde_json::Value) -> bool {
    data.pointer("/tokens/bot")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|bots| !bots.is_empty())
}

/// The installation's part of parsing: its bot's own messages and reactions
/// are ignored, and a message naming its bot user is a mention.
fn apply_installation(installation: &Installation, event: &mut Event) -> Resolution {
    match &mut event.kind {
        EventKind::Message(m) => {
            if installation.is_bot(&m.author.id) {
                return Resolution::Ignored {
                    reason: "own-message",
                };
            }
            if !m.is_mention
                && let Some(user) = installation.bot_user_id.as_deref()
            {
                m.is_mention = mentions_user(&m.text, user);
            }
        }
        EventKind::Reaction(r) if installation.is_bot(&r.user.id) => {
            return Resolution::Ignored {
                reason: "own-reaction",
            };
        }
        _ => {}
    }
    Resolution::Proceed
}

fn require_channel(channel: &str) -> Result<(), AdapterError> {
    if channel.is_empty() {
        Err(AdapterError::Unsupported(
            "this thread has no channel (a modal); post with SlackClient instead",
        ))
    } else {
        Ok(())
    }
}

impl SlackAdapter {
    /// Whether `url` may be posted a reply to: an https URL on one of the
    /// configured hosts (default port), or on the Web API's own origin.
    fn is_response_url(&self, url: &str) -> bool {
        let Ok(uri) = url.parse::<http::Uri>() else {
            return false;
        };
        let host = uri.host().unwrap_or_default().to_ascii_lowercase();
        let slack = uri.scheme() == Some(&http::uri::Scheme::HTTPS)
            && uri.port_u16().is_none_or(|p| p == 443)
            && self.response_hosts.contains(&host);
        slack
            || self
                .client
                .base_url()
                .parse::<http::Uri>()
                .is_ok_and(|base| chat_http::same_origin(&base, &uri))
    }
}
