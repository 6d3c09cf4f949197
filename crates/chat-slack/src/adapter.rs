//! [`SlackAdapter`]: the Slack [`PlatformAdapter`].

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, Author, BoxError, Event, EventKind, HistoryMessage, HistoryPage, Inbound,
    Installation, InstallationStore, MessageRef, OutboundMessage, Platform, PlatformAdapter,
    Resolution, TenantId, ThreadRef, UserInfo, Verdict, WebhookError,
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
use crate::transport::Proxy;
use chat_core::{Clock, SystemClock};

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
///   runtime's [`resolve`](PlatformAdapter::resolve) step: a workspace with no
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
/// [`post`](PlatformAdapter::post) (the bot has no messages to recognize
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

/// Settings of a [`SlackAdapter`]. A signing secret is required, and exactly
/// one of a bot token and an installation store; everything else has a
/// default.
#[must_use]
pub struct SlackAdapterBuilder {
    name: String,
    signing_secret: Option<String>,
    bot_token: Option<String>,
    installations: Option<Arc<dyn InstallationStore>>,
    bot_user_id: Option<String>,
    bot_id: Option<String>,
    api_base_url: String,
    timestamp_tolerance: Duration,
    max_body_bytes: usize,
    clock: Arc<dyn Clock>,
    ignore_other_bots: bool,
    texts: Texts,
    delayed_events: bool,
    max_retries: u32,
    retry_budget: Duration,
    request_timeout: Duration,
    proxy: Proxy,
    response_hosts: Vec<String>,
}

/// The hosts of the `response_url`s Slack hands out: `hooks.slack.com`.
pub const DEFAULT_RESPONSE_URL_HOSTS: &[&str] = &["hooks.slack.com"];

impl fmt::Debug for SlackAdapterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackAdapterBuilder")
            .field("name", &self.name)
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("bot_token", &self.bot_token.as_ref().map(|_| "<redacted>"))
            .field("installations", &self.installations.is_some())
            .field("bot_user_id", &self.bot_user_id)
            .field("bot_id", &self.bot_id)
            .field("api_base_url", &self.api_base_url)
            .field("timestamp_tolerance", &self.timestamp_tolerance)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for SlackAdapterBuilder {
    fn default() -> Self {
        Self {
            name: "slack".to_owned(),
            signing_secret: None,
            bot_token: None,
            installations: None,
            bot_user_id: None,
            bot_id: None,
            api_base_url: DEFAULT_API_BASE_URL.to_owned(),
            timestamp_tolerance: Duration::from_secs(300),
            max_body_bytes: 1024 * 1024,
            clock: Arc::new(SystemClock),
            ignore_other_bots: true,
            texts: Texts::default(),
            delayed_events: false,
            max_retries: 3,
            retry_budget: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            proxy: Proxy::default(),
            response_hosts: DEFAULT_RESPONSE_URL_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
        }
    }
}

impl SlackAdapterBuilder {
    /// The adapter's name, which names its webhook route (default `slack`).
    /// Give each Slack app of one bot its own.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The app's signing secret (Basic Information → App Credentials).
    /// Required.
    pub fn signing_secret(mut self, secret: impl Into<String>) -> Self {
        self.signing_secret = Some(secret.into());
        self
    }

    /// Single-token mode: the bot token (`xoxb-…`) for Web API calls.
    /// Exactly one of this and [`installations`](Self::installations) is
    /// required.
    pub fn bot_token(mut self, token: impl Into<String>) -> Self {
        self.bot_token = Some(token.into());
        self
    }

    /// Installation mode: the store of the workspaces the app is installed
    /// in (filled by [`SlackOAuth`](crate::SlackOAuth)). Each delivery is
    /// resolved to its installation and each outbound call uses its tenant's
    /// token. Exactly one of this and [`bot_token`](Self::bot_token) is
    /// required.
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.installations = Some(store);
        self
    }

    /// Single-token mode: the bot's user id (`U…`), if known; else learned
    /// from `auth.test`.
    pub fn bot_user_id(mut self, id: impl Into<String>) -> Self {
        self.bot_user_id = Some(id.into());
        self
    }

    /// Single-token mode: the bot's bot id (`B…`), if known; else learned
    /// from `auth.test`.
    pub fn bot_id(mut self, id: impl Into<String>) -> Self {
        self.bot_id = Some(id.into());
        self
    }

    /// The hosts a `response_url` may name (default
    /// [`DEFAULT_RESPONSE_URL_HOSTS`]), over https; a `response_url` on the
    /// [Web API's own origin](Self::api_base_url) is accepted too (tests, a
    /// proxy). Any other is refused before the reply is sent: a delivery's
    /// `response_url` is a place the bot posts to, so only Slack's may be one.
    pub fn response_url_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.response_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The Web API base URL (default `https://slack.com/api`).
    pub fn api_base_url(mut self, url: impl Into<String>) -> Self {
        self.api_base_url = url.into();
        self
    }

    /// Whether the app has Slack's *Delayed Events* on (default off). Without
    /// it Slack retries a failed delivery three times within minutes and
    /// drops events more than two hours late, so dedupe marks live
    /// [`DEDUPE_TTL`] (3 h); with it Slack retries hourly for 24 hours, and
    /// marks live [`DELAYED_EVENTS_DEDUPE_TTL`] (25 h).
    pub fn delayed_events(mut self, on: bool) -> Self {
        self.delayed_events = on;
        self
    }

    /// How far the signed timestamp may be from now, either way (default 300 s).
    pub fn timestamp_tolerance(mut self, tolerance: Duration) -> Self {
        self.timestamp_tolerance = tolerance;
        self
    }

    /// The largest body accepted (default 1 MiB).
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// The clock for the signature window and `received_at_ms` (default: the
    /// system clock). Any `Fn() -> SystemTime` works.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether messages from other bots are ignored too (default `true`,
    /// which prevents bot-to-bot loops). The bot's own messages are always
    /// ignored.
    pub fn ignore_other_bots(mut self, ignore: bool) -> Self {
        self.ignore_other_bots = ignore;
        self
    }

    /// The ephemeral text a slash command gets when the bot is at capacity.
    pub fn at_capacity_text(mut self, text: impl Into<String>) -> Self {
        self.texts.at_capacity = text.into();
        self
    }

    /// The ephemeral text a slash command gets when its handler is still
    /// running at the acknowledgement deadline (its reply follows through the
    /// command's `response_url`).
    pub fn working_text(mut self, text: impl Into<String>) -> Self {
        self.texts.working = text.into();
        self
    }

    /// The ephemeral text a slash command gets when it failed before the ack.
    pub fn failure_text(mut self, text: impl Into<String>) -> Self {
        self.texts.failed = text.into();
        self
    }

    /// How many times a Web API call is retried after a 429 (default 3).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// How long one Web API call may wait out 429s when it has no deadline
    /// (default 30 s). See [`SlackClient`].
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.retry_budget = budget;
        self
    }

    /// The timeout of one Web API request (default 10 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Where Web API calls go through an HTTP proxy (default
    /// [`Proxy::FromEnv`]: `HTTPS_PROXY` or `ALL_PROXY`, except `NO_PROXY`).
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// Builds the adapter. A [`BuildError`] when the signing secret is
    /// missing, when both or neither of a bot token and an installation
    /// store are given, or when a bot identity is configured in installation
    /// mode.
    pub fn build(self) -> Result<SlackAdapter, BuildError> {
        let secret = self
            .signing_secret
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::MissingSigningSecret)?;
        let builder = |token: String| {
            SlackClient::builder(token)
                .base_url(self.api_base_url.clone())
                .max_retries(self.max_retries)
                .retry_budget(self.retry_budget)
                .request_timeout(self.request_timeout)
                .proxy(self.proxy.clone())
        };
        let client = match (self.bot_token, &self.installations) {
            (Some(_), Some(_)) => return Err(BuildError::TokenAndInstallations),
            (None, None) => return Err(BuildError::MissingBotToken),
            (Some(token), None) => builder(token).build()?,
            (None, Some(_)) => {
                if self.bot_user_id.is_some() || self.bot_id.is_some() {
                    return Err(BuildError::IdentityWithInstallations);
                }
                builder(String::new()).build_unauthenticated()?
            }
        };
        Ok(SlackAdapter {
            name: self.name,
            verifier: Verifier::new(&secret, self.timestamp_tolerance),
            client,
            installations: self.installations,
            configured: BotIdentity::new(
                self.bot_user_id.filter(|s| !s.is_empty()),
                self.bot_id.filter(|s| !s.is_empty()),
            ),
            learned: OnceCell::new(),
            last_learn_attempt: Mutex::new(None),
            ignore_other_bots: self.ignore_other_bots,
            max_body_bytes: self.max_body_bytes,
            clock: self.clock,
            texts: self.texts,
            delayed_events: self.delayed_events,
            response_hosts: self
                .response_hosts
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
        })
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

#[async_trait]
impl PlatformAdapter for SlackAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn platform(&self) -> Platform {
        Platform::SLACK
    }

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

    /// `chat.postMessage` in the thread (`thread_ts`), or as a new message
    /// when the thread part is empty (then the returned reference's thread is
    /// the new message).
    ///
    /// A reply of a handler run ([`ReplyKey`](chat_core::ReplyKey)) carries
    /// message metadata (`chat_rs_reply`: the event id and the reply's
    /// position). On a repeated run (attempt above 1) the adapter first reads
    /// the thread (`conversations.replies` with `include_all_metadata`, which
    /// needs the history scopes; for a post into the channel itself, its
    /// latest 1,000 messages with `conversations.history`) and returns the
    /// reply an earlier attempt posted instead of posting it again; if it
    /// cannot be read, it posts (at least once).
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        require_channel(&thread.channel)?;
        let content = render(message)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        let client = self.client_for(&thread.tenant).await?;
        if let Some(key) = message.reply_key.as_ref().filter(|k| k.attempt > 1) {
            let earlier = match thread_ts {
                Some(ts) => client.find_reply(&thread.channel, ts, key).await,
                None => client.find_channel_reply(&thread.channel, key).await,
            };
            match earlier {
                Ok(Some(earlier)) => {
                    let mut thread = thread.clone();
                    if thread.thread.is_empty() {
                        thread.thread.clone_from(&earlier.ts);
                    }
                    return Ok(MessageRef {
                        thread,
                        id: earlier.ts,
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "slack: could not read the thread for an earlier reply; posting");
                }
            }
        }
        let post = async {
            match &message.reply_key {
                Some(key) => {
                    client
                        .post_reply(&thread.channel, thread_ts, content.clone(), key)
                        .await
                }
                None => {
                    client
                        .post_message(&thread.channel, thread_ts, content.clone())
                        .await
                }
            }
        };
        let ((), posted) = tokio::join!(self.learn_identity(), post);
        let posted = posted?;
        let mut thread = thread.clone();
        if thread.thread.is_empty() {
            thread.thread.clone_from(&posted.ts);
        }
        Ok(MessageRef {
            thread,
            id: posted.ts,
        })
    }

    /// `chat.update`.
    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .update_message(&message.thread.channel, &message.id, render(content)?)
            .await
    }

    /// `chat.delete`.
    async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .delete_message(&message.thread.channel, &message.id)
            .await
    }

    /// `reactions.add`; already having reacted is success.
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .add_reaction(&message.thread.channel, &message.id, emoji)
            .await
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

    /// `reactions.remove`; a reaction that is not there is success.
    async fn unreact(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        require_channel(&message.thread.channel)?;
        self.client_for(&message.thread.tenant)
            .await?
            .remove_reaction(&message.thread.channel, &message.id, emoji)
            .await
    }

    /// `chat.postEphemeral` in the thread (a card as Block Kit).
    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &str,
        message: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        require_channel(&thread.channel)?;
        let content = render(message)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        self.client_for(&thread.tenant)
            .await?
            .post_ephemeral(&thread.channel, user, thread_ts, content)
            .await
    }

    /// `conversations.replies` (needs the `*:history` scope of the
    /// conversation's type), following Slack's cursor; a message is the bot's
    /// when its `user` or `bot_id` is the bot's.
    async fn history(
        &self,
        thread: &ThreadRef,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        require_channel(&thread.channel)?;
        if thread.thread.is_empty() {
            return Ok(HistoryPage::default());
        }
        let (client, me) = tokio::try_join!(
            self.client_for(&thread.tenant),
            self.identity_of(&thread.tenant)
        )?;
        let answer = client
            .replies(&thread.channel, &thread.thread, cursor, limit)
            .await?;
        let messages = answer
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| history_message(m, &me))
            .collect();
        let next = answer
            .pointer("/response_metadata/next_cursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Ok(HistoryPage::new(messages, next))
    }

    /// `views.open`.
    async fn open_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &chat_core::view::View,
    ) -> Result<String, AdapterError> {
        let view = crate::views::render(view)?;
        let answer = self
            .client_for(tenant)
            .await?
            .open_view(trigger, &view)
            .await?;
        view_id(&answer)
    }

    /// `views.update`.
    async fn update_modal(
        &self,
        tenant: &TenantId,
        view_id: &str,
        view: &chat_core::view::View,
    ) -> Result<(), AdapterError> {
        let view = crate::views::render(view)?;
        self.client_for(tenant)
            .await?
            .update_view(view_id, &view)
            .await
            .map(drop)
    }

    /// `views.push`.
    async fn push_modal(
        &self,
        tenant: &TenantId,
        trigger: &str,
        view: &chat_core::view::View,
    ) -> Result<String, AdapterError> {
        let view = crate::views::render(view)?;
        let answer = self
            .client_for(tenant)
            .await?
            .push_view(trigger, &view)
            .await?;
        view_id(&answer)
    }

    /// Every reply renders but a view beyond Slack's limits
    /// ([`views::answer`](crate::views::answer)) or a card whose blocks do
    /// not.
    fn check_reply(&self, reply: &chat_core::Reply) -> Result<(), AdapterError> {
        crate::respond::reply_body(reply).map(|_| ())
    }

    /// Slack's external upload (`files.getUploadURLExternal`, the bytes,
    /// `files.completeUploadExternal`) into the thread; needs `files:write`.
    async fn upload(
        &self,
        thread: &ThreadRef,
        name: &str,
        content: Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        require_channel(&thread.channel)?;
        let thread_ts = Some(thread.thread.as_str()).filter(|t| !t.is_empty());
        self.client_for(&thread.tenant)
            .await?
            .upload_file(&thread.channel, thread_ts, name, content, comment)
            .await
    }

    /// `chat.startStream` in the thread (a thread is required: a message
    /// outside one is [`AdapterError::Unsupported`], and the runtime falls
    /// back to a post and edits), for `recipient` in the thread's workspace.
    async fn start_stream(
        &self,
        thread: &ThreadRef,
        text: &str,
        recipient: Option<&str>,
    ) -> Result<MessageRef, AdapterError> {
        require_channel(&thread.channel)?;
        if thread.thread.is_empty() {
            return Err(AdapterError::Unsupported(
                "Slack streams only into a thread",
            ));
        }
        let recipient = recipient
            .filter(|u| !u.is_empty())
            .map(|user| (user, thread.tenant.as_str()));
        let posted = self
            .client_for(&thread.tenant)
            .await?
            .start_stream(&thread.channel, &thread.thread, text, recipient)
            .await?;
        Ok(MessageRef {
            thread: thread.clone(),
            id: posted.ts,
        })
    }

    /// `chat.appendStream`.
    async fn append_stream(&self, stream: &MessageRef, text: &str) -> Result<(), AdapterError> {
        self.client_for(&stream.thread.tenant)
            .await?
            .append_stream(&stream.thread.channel, &stream.id, text)
            .await
    }

    /// `chat.stopStream` (what was appended is the message).
    async fn stop_stream(&self, stream: &MessageRef, full_text: &str) -> Result<(), AdapterError> {
        let _ = full_text;
        self.client_for(&stream.thread.tenant)
            .await?
            .stop_stream(&stream.thread.channel, &stream.id)
            .await
    }

    /// Four minutes: Slack ends a stream after about five.
    fn stream_lifetime(&self) -> Option<Duration> {
        Some(Duration::from_secs(4 * 60))
    }

    /// `users.info` (needs `users:read`; the email needs `users:read.email`).
    async fn user(&self, tenant: &TenantId, id: &str) -> Result<UserInfo, AdapterError> {
        let user = self.client_for(tenant).await?.user_info(id).await?;
        let profile = &user["profile"];
        let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let real_name = text(&profile["real_name"]).or_else(|| text(&user["real_name"]));
        let display_name = text(&profile["display_name"])
            .or_else(|| real_name.clone())
            .or_else(|| text(&user["name"]))
            .unwrap_or_else(|| id.to_owned());
        let mut info = UserInfo::new(id, display_name)
            .with_bot(user["is_bot"].as_bool().unwrap_or(false) || id == "USLACKBOT");
        if let Some(real) = real_name {
            info = info.with_real_name(real);
        }
        if let Some(email) = text(&profile["email"]) {
            info = info.with_email(email);
        }
        Ok(info)
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

    /// `assistant.threads.setStatus` (assistant threads only); `None` clears
    /// it. A channel-level thread has no status: nothing is sent.
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        if thread.channel.is_empty() || thread.thread.is_empty() {
            return Ok(());
        }
        self.client_for(&thread.tenant)
            .await?
            .set_assistant_status(&thread.channel, &thread.thread, status.unwrap_or(""))
            .await
    }
}

/// A URL's scheme, host (lowercased) and port (the scheme's default when
/// none is given), parsed.
fn origin(url: &str) -> Option<(String, String, u16)> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().or(match scheme.as_str() {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    })?;
    Some((scheme, host, port))
}

impl SlackAdapter {
    /// Whether `url` may be posted a reply to: an https URL on one of the
    /// configured hosts (default port), or on the Web API's own origin.
    fn is_response_url(&self, url: &str) -> bool {
        let Some((scheme, host, port)) = origin(url) else {
            return false;
        };
        let slack = scheme == "https" && port == 443 && self.response_hosts.contains(&host);
        slack || origin(self.client.base_url()) == Some((scheme, host, port))
    }
}

/// A message of `conversations.replies` as a history entry (`None` for an
/// entry without a `ts`).
fn history_message(m: &Value, me: &BotIdentity) -> Option<HistoryMessage> {
    let ts = m.get("ts")?.as_str()?;
    let user = m["user"].as_str().unwrap_or_default();
    let bot_id = m["bot_id"].as_str();
    let is_me = (!user.is_empty() && me.user_id.as_deref() == Some(user))
        || (bot_id.is_some() && me.bot_id.as_deref() == bot_id);
    let mut author = Author::new(if user.is_empty() {
        bot_id.unwrap_or_default()
    } else {
        user
    });
    author.is_bot = bot_id.is_some() || m["subtype"] == "bot_message";
    author.is_me = is_me;
    if let Some(name) = m["username"].as_str() {
        author.name = Some(name.to_owned());
    }
    let text = m["text"].as_str().unwrap_or_default();
    Some(HistoryMessage::new(ts, author, text, ts_millis(ts)))
}

/// A Slack `ts` (`seconds.micros`) in milliseconds since the epoch.
fn ts_millis(ts: &str) -> u64 {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let secs: u64 = secs.parse().unwrap_or(0);
    let millis: u64 = frac.get(..3).and_then(|f| f.parse().ok()).unwrap_or(0);
    secs.saturating_mul(1000).saturating_add(millis)
}

/// The id of the view a `views.*` call answered.
fn view_id(answer: &Value) -> Result<String, AdapterError> {
    answer
        .pointer("/view/id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| AdapterError::Decode("a views answer without view.id".into()))
}
