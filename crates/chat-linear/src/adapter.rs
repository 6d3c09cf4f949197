//! [`LinearAdapter`]: the [`PlatformAdapter`] for Linear, its builder, and the
//! platform extension (agent activities, session updates, comments).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, AgentSessionAction, BoxError, Event, EventKind, Inbound, InstallationStore,
    MessageRef, OutboundMessage, Platform, PlatformAdapter, Resolution, TenantId, ThreadRef,
    Verdict, WebhookError,
};
use http::HeaderValue;
use ring::hmac;
use serde_json::Value;
use tokio::time::Instant;

use crate::activity::{Activity, SessionUpdate};
use crate::client::GraphqlClient;
use crate::clock::{Clock, SystemClock};
use crate::error::BuildError;
use crate::first::FirstActivity;
use crate::oauth::LinearOAuth;
use crate::operations;
use crate::thread::{LinearThread, SessionTarget};
use crate::{inbound, respond, signature};

/// Linear's GraphQL endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://api.linear.app/graphql";
/// The default text of the automatic first thought.
pub const DEFAULT_FIRST_THOUGHT: &str = "Thinking…";
/// The default final activity after a stop request.
pub const DEFAULT_STOPPED: &str = "Stopped.";

/// How long the automatic first thought may take, rate-limit waits included:
/// inside Linear's 10 s first-activity rule.
const FIRST_THOUGHT_BUDGET: Duration = Duration::from_secs(8);

/// A Linear credential: a personal API key (sent as `Authorization: <key>`) or
/// an OAuth access token (sent as `Authorization: Bearer <token>`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// A personal API key.
    ApiKey(String),
    /// An OAuth access token (an agent installed with `actor=app`).
    AccessToken(String),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ApiKey(_) => f.write_str("ApiKey(<redacted>)"),
            Self::AccessToken(_) => f.write_str("AccessToken(<redacted>)"),
        }
    }
}

impl Credential {
    /// The `Authorization` header value, marked sensitive.
    fn header(&self) -> Result<HeaderValue, BuildError> {
        let value = match self {
            Self::ApiKey(key) => key.clone(),
            Self::AccessToken(token) => format!("Bearer {token}"),
        };
        let mut header =
            HeaderValue::from_str(&value).map_err(|_| BuildError::InvalidCredential)?;
        if value.trim().is_empty() || value.trim() == "Bearer" {
            return Err(BuildError::InvalidCredential);
        }
        header.set_sensitive(true);
        Ok(header)
    }
}

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

/// Installation mode's credential source: the store, and the OAuth flow
/// that refreshes tokens before they expire.
struct Installations {
    store: Arc<dyn InstallationStore>,
    refresh: Option<LinearOAuth>,
}

struct Inner {
    name: String,
    key: hmac::Key,
    tolerance: Duration,
    max_body: usize,
    clock: Arc<dyn Clock>,
    config: Config,
    first_thought: Option<String>,
    stopped: Option<String>,
    first: FirstActivity,
    client: GraphqlClient,
    installations: Option<Installations>,
}

/// The Linear [`PlatformAdapter`]: verifies and parses webhook deliveries,
/// answers them as Linear expects, and talks back through Linear's GraphQL
/// API. Cheap to clone; clones share one HTTP client.
///
/// Besides the trait's methods it has Linear's own (the platform extension):
/// agent activities ([`activity`](Self::activity), [`thought`](Self::thought),
/// [`action`](Self::action), [`elicitation`](Self::elicitation),
/// [`response`](Self::response), [`error`](Self::error)), session updates
/// ([`update_session`](Self::update_session)), comments
/// ([`comment`](Self::comment)) and the app user's id
/// ([`viewer_id`](Self::viewer_id)). Keep a clone next to the bot to call them
/// from handlers, bounded by the handler's deadline with
/// [`with_deadline`](Self::with_deadline).
#[derive(Clone)]
pub struct LinearAdapter {
    inner: Arc<Inner>,
    deadline: Option<Instant>,
    organization: Option<TenantId>,
}

impl fmt::Debug for LinearAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearAdapter")
            .field("name", &self.inner.name)
            .field("tolerance", &self.inner.tolerance)
            .field("max_body", &self.inner.max_body)
            .field("app_user_ids", &self.inner.config.app_user_ids)
            .field("first_thought", &self.inner.first_thought)
            .field("client", &self.inner.client)
            .field("installation_mode", &self.inner.installations.is_some())
            .field("deadline", &self.deadline)
            .field("organization", &self.organization)
            .finish_non_exhaustive()
    }
}

/// Builds a [`LinearAdapter`]. A signing secret and a credential are required.
pub struct LinearAdapterBuilder {
    name: String,
    signing_secret: Option<String>,
    credential: Option<Credential>,
    organization_credentials: Vec<(TenantId, Credential)>,
    installations: Option<Arc<dyn InstallationStore>>,
    token_refresh: Option<LinearOAuth>,
    app_user_ids: HashSet<String>,
    mention_names: Vec<String>,
    ignore_bot_comments: bool,
    endpoint: String,
    tolerance: Duration,
    max_body: usize,
    clock: Arc<dyn Clock>,
    first_thought: Option<String>,
    stopped: Option<String>,
    request_timeout: Duration,
    retry_budget: Duration,
    max_retries: u32,
}

impl fmt::Debug for LinearAdapterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearAdapterBuilder")
            .field("name", &self.name)
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("credential", &self.credential)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Default for LinearAdapterBuilder {
    fn default() -> Self {
        Self {
            name: "linear".to_owned(),
            signing_secret: None,
            credential: None,
            organization_credentials: Vec::new(),
            installations: None,
            token_refresh: None,
            app_user_ids: HashSet::new(),
            mention_names: Vec::new(),
            ignore_bot_comments: true,
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            tolerance: Duration::from_secs(60),
            max_body: 1024 * 1024,
            clock: Arc::new(SystemClock),
            first_thought: Some(DEFAULT_FIRST_THOUGHT.to_owned()),
            stopped: Some(DEFAULT_STOPPED.to_owned()),
            request_timeout: Duration::from_secs(10),
            retry_budget: Duration::from_secs(30),
            max_retries: 3,
        }
    }
}

impl LinearAdapterBuilder {
    /// The adapter's name, which names its webhook route (default `linear`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The webhook's signing secret (required).
    pub fn signing_secret(mut self, secret: impl Into<String>) -> Self {
        self.signing_secret = Some(secret.into());
        self
    }

    /// A personal API key, sent as `Authorization: <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.credential = Some(Credential::ApiKey(key.into()));
        self
    }

    /// An OAuth access token, sent as `Authorization: Bearer <token>`.
    pub fn access_token(mut self, token: impl Into<String>) -> Self {
        self.credential = Some(Credential::AccessToken(token.into()));
        self
    }

    /// The credential for one workspace (an agent installed in several gets
    /// one OAuth token each). Calls about that organization's threads use it;
    /// others use the default credential.
    pub fn organization_credential(
        mut self,
        organization_id: impl Into<TenantId>,
        credential: Credential,
    ) -> Self {
        self.organization_credentials
            .push((organization_id.into(), credential));
        self
    }

    /// Installation mode: credentials come from the store of the
    /// organizations the agent is installed in (filled by [`LinearOAuth`]),
    /// one per `organizationId`. Each delivery is resolved to its
    /// installation — an organization without one is acknowledged and
    /// ignored, a store failure answers 500 so Linear retries — the
    /// installation's app user recognizes the agent's own comments, every
    /// outbound call uses its organization's token, and an `OAuthApp`
    /// `revoked` webhook deletes the installation. Excludes
    /// [`api_key`](Self::api_key), [`access_token`](Self::access_token) and
    /// [`organization_credential`](Self::organization_credential).
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.installations = Some(store);
        self
    }

    /// Installation mode: refresh access tokens with this flow's client
    /// credentials when they are within its
    /// [`refresh_margin`](crate::LinearOAuthBuilder::refresh_margin) of
    /// expiring. Without it, an expiring token is used as it is until Linear
    /// refuses it.
    pub fn token_refresh(mut self, oauth: LinearOAuth) -> Self {
        self.token_refresh = Some(oauth);
        self
    }

    /// Our app user's id in a workspace (`query { viewer { id } }`); may be
    /// given once per workspace. Comments and activities it authored are
    /// ignored. Agent-session events also carry it as `appUserId`.
    pub fn app_user_id(mut self, id: impl Into<String>) -> Self {
        self.app_user_ids.insert(id.into());
        self
    }

    /// A handle (the app user's username) whose mention makes a comment a
    /// mention: `@handle`, or a link to its Linear profile. May be given
    /// several times. Without one, comments are plain messages, answered only
    /// in subscribed threads. An agent installed with `app:mentionable`
    /// already gets mentions as agent sessions; a handle would answer those
    /// twice.
    pub fn mention_name(mut self, handle: impl Into<String>) -> Self {
        self.mention_names
            .push(handle.into().trim_start_matches('@').to_ascii_lowercase());
        self
    }

    /// Whether comments written by bots and integrations (`botActor` set) are
    /// ignored (default `true`).
    pub fn ignore_bot_comments(mut self, ignore: bool) -> Self {
        self.ignore_bot_comments = ignore;
        self
    }

    /// The GraphQL endpoint (default [`DEFAULT_ENDPOINT`]).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = url.into();
        self
    }

    /// How far `webhookTimestamp` may be from now, either way (default 60 s).
    pub fn timestamp_tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// The largest body accepted (default 1 MiB).
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body = max;
        self
    }

    /// The wall clock (default the system's).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether the adapter sends an ephemeral thought right after a new
    /// session is acknowledged, unless the handler already sent an activity
    /// (default on).
    pub fn first_thought(mut self, enabled: bool) -> Self {
        self.first_thought = enabled.then(|| {
            self.first_thought
                .take()
                .unwrap_or_else(|| DEFAULT_FIRST_THOUGHT.to_owned())
        });
        self
    }

    /// The text of that thought (default [`DEFAULT_FIRST_THOUGHT`]); turns it on.
    pub fn first_thought_text(mut self, text: impl Into<String>) -> Self {
        self.first_thought = Some(text.into());
        self
    }

    /// The final `response` activity that ends a session after a stop
    /// request (default [`DEFAULT_STOPPED`]), unless the stopped handler posted
    /// its own; `None` sends nothing (the session then stays "working" in
    /// Linear until something else ends it).
    pub fn stopped_text(mut self, text: Option<&str>) -> Self {
        self.stopped = text.map(str::to_owned);
        self
    }

    /// The timeout of one HTTP request (default 10 s; shortened to a deadline).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long a call without a deadline may take, rate-limit waits included
    /// (default 30 s).
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.retry_budget = budget;
        self
    }

    /// How many times a rate-limited call is sent again (default 3).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Builds the adapter.
    pub fn build(self) -> Result<LinearAdapter, BuildError> {
        let secret = self
            .signing_secret
            .filter(|s| !s.is_empty())
            .ok_or(BuildError::MissingSigningSecret)?;
        let has_credential = self.credential.is_some() || !self.organization_credentials.is_empty();
        match (has_credential, self.installations.is_some()) {
            (false, false) => return Err(BuildError::MissingCredential),
            (true, true) => return Err(BuildError::CredentialAndInstallations),
            _ => {}
        }
        if self.token_refresh.is_some() && self.installations.is_none() {
            return Err(BuildError::OAuth(
                "token_refresh needs an installation store",
            ));
        }
        if self.tolerance.is_zero() {
            return Err(BuildError::InvalidOption("timestamp_tolerance is zero"));
        }
        if self.max_body == 0 {
            return Err(BuildError::InvalidOption("max_body_bytes is zero"));
        }
        if self.request_timeout.is_zero() || self.retry_budget.is_zero() {
            return Err(BuildError::InvalidOption(
                "request_timeout or retry_budget is zero",
            ));
        }
        let endpoint = reqwest::Url::parse(&self.endpoint)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
            .ok_or_else(|| BuildError::InvalidEndpoint(self.endpoint.clone()))?;
        let default_auth = self
            .credential
            .as_ref()
            .map(Credential::header)
            .transpose()?;
        let mut organization_auth = HashMap::new();
        for (org, credential) in &self.organization_credentials {
            organization_auth.insert(org.clone(), credential.header()?);
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!(
                "chat-rs/",
                env!("CARGO_PKG_VERSION"),
                " (chat-linear)"
            ))
            .build()
            .map_err(|e| BuildError::HttpClient(Box::new(e)))?;
        Ok(LinearAdapter {
            inner: Arc::new(Inner {
                name: self.name,
                key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
                tolerance: self.tolerance,
                max_body: self.max_body,
                clock: Arc::clone(&self.clock),
                config: Config {
                    app_user_ids: self.app_user_ids,
                    mention_names: self.mention_names,
                    ignore_bot_comments: self.ignore_bot_comments,
                    lifecycle_events: self.installations.is_some(),
                },
                first_thought: self.first_thought,
                stopped: self.stopped,
                first: FirstActivity::default(),
                client: GraphqlClient {
                    http,
                    endpoint,
                    default_auth,
                    organization_auth,
                    request_timeout: self.request_timeout,
                    retry_budget: self.retry_budget,
                    max_retries: self.max_retries,
                    clock: self.clock,
                },
                installations: self.installations.map(|store| Installations {
                    store,
                    refresh: self.token_refresh,
                }),
            }),
            deadline: None,
            organization: None,
        })
    }
}

impl LinearAdapter {
    /// A builder with the defaults.
    pub fn builder() -> LinearAdapterBuilder {
        LinearAdapterBuilder::default()
    }

    /// The same adapter, with every outbound call bounded by `deadline` (a
    /// handler's deadline): no request and no rate-limit wait runs past it.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// The same adapter, with every outbound call bounded by `timeout` from now.
    #[must_use]
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        self.with_deadline(Instant::now() + timeout)
    }

    /// The same adapter, calling with `organization_id`'s credential when a
    /// call names no thread (a bare session or issue id).
    #[must_use]
    pub fn for_organization(&self, organization_id: impl Into<TenantId>) -> Self {
        Self {
            organization: Some(organization_id.into()),
            ..self.clone()
        }
    }

    /// The deadline outbound calls are bounded by, if one was set.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The text of the automatic first thought, when it is on.
    pub fn first_thought_text(&self) -> Option<&str> {
        self.inner.first_thought.as_deref()
    }

    fn tenant<'a>(&'a self, target: Option<&'a TenantId>) -> Option<&'a TenantId> {
        target.or(self.organization.as_ref())
    }

    async fn execute(
        &self,
        tenant: Option<&TenantId>,
        op: &operations::Operation,
    ) -> Result<Value, AdapterError> {
        let auth = self.auth(tenant).await?;
        self.inner.client.execute(&auth, self.deadline, op).await
    }

    /// The `Authorization` value for a call about `tenant`: its
    /// installation's token (refreshed first when about to expire) in
    /// installation mode, else the configured credential.
    async fn auth(&self, tenant: Option<&TenantId>) -> Result<HeaderValue, AdapterError> {
        let tenant = self.tenant(tenant);
        let Some(installations) = &self.inner.installations else {
            return self.inner.client.configured_auth(tenant).cloned().ok_or(
                AdapterError::Unsupported("no Linear credential for this organization"),
            );
        };
        let tenant = tenant.ok_or(AdapterError::Unsupported(
            "in installation mode a call names its organization (for_organization)",
        ))?;
        let installation = match &installations.refresh {
            Some(oauth) => oauth
                .fresh_installation(tenant, self.inner.clock.now_ms())
                .await
                .map_err(|e| AdapterError::Transport(Box::new(e)))?,
            None => installations
                .store
                .get(Platform::Linear, tenant)
                .await
                .map_err(|e| AdapterError::Transport(Box::new(e)))?,
        }
        .ok_or(AdapterError::Unsupported(
            "the agent is not installed in this organization",
        ))?;
        Credential::AccessToken(installation.access_token.expose().to_owned())
            .header()
            .map_err(|e| AdapterError::Transport(Box::new(e)))
    }

    /// The installation store, in installation mode.
    pub fn installations(&self) -> Option<&Arc<dyn InstallationStore>> {
        self.inner.installations.as_ref().map(|i| &i.store)
    }

    /// Sends an activity; `gated` activities first wait for the automatic
    /// thought of their session, so they land after it.
    async fn send_activity(
        &self,
        tenant: Option<&TenantId>,
        deadline: Option<Instant>,
        session_id: &str,
        activity: &Activity,
        gated: bool,
    ) -> Result<String, AdapterError> {
        if activity.ephemeral && !activity.content.may_be_ephemeral() {
            return Err(AdapterError::Unsupported(
                "only thoughts and actions can be ephemeral",
            ));
        }
        let id = activity
            .id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        if gated {
            self.inner.first.before_activity(session_id).await;
        }
        let op = operations::agent_activity_create(session_id, activity, &id);
        let auth = self.auth(tenant).await?;
        let data = self
            .inner
            .client
            .execute(&auth, deadline.or(self.deadline), &op)
            .await?;
        Ok(data
            .pointer("/agentActivity/id")
            .and_then(Value::as_str)
            .unwrap_or(&id)
            .to_owned())
    }

    /// Sends an agent activity into a session; returns the activity's id.
    ///
    /// ```no_run
    /// # async fn f(linear: chat_linear::LinearAdapter, event: chat_core::Event) -> Result<(), chat_core::AdapterError> {
    /// use chat_linear::Activity;
    /// linear.activity(&event, &Activity::action("Reading", "src/lib.rs").ephemeral()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn activity(
        &self,
        session: &(impl SessionTarget + ?Sized),
        activity: &Activity,
    ) -> Result<String, AdapterError> {
        let id = session.session_id()?;
        self.send_activity(session.tenant(), None, id, activity, true)
            .await
    }

    /// Sends a `thought`.
    pub async fn thought(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::thought(body)).await
    }

    /// Sends an `action`, with its result when known.
    pub async fn action(
        &self,
        session: &(impl SessionTarget + ?Sized),
        action: &str,
        parameter: &str,
        result: Option<&str>,
    ) -> Result<String, AdapterError> {
        let mut a = Activity::action(action, parameter);
        if let Some(r) = result {
            a = a.with_result(r);
        }
        self.activity(session, &a).await
    }

    /// Sends an `elicitation`: asks the user, and the session waits for input.
    pub async fn elicitation(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::elicitation(body)).await
    }

    /// Sends a `response`: the answer, which completes the session.
    pub async fn response(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::response(body)).await
    }

    /// Sends an `error`.
    pub async fn error(
        &self,
        session: &(impl SessionTarget + ?Sized),
        body: &str,
    ) -> Result<String, AdapterError> {
        self.activity(session, &Activity::error(body)).await
    }

    /// Updates a session: its external URLs, external link or plan. Setting
    /// an external URL also keeps a new session from being shown unresponsive.
    pub async fn update_session(
        &self,
        session: &(impl SessionTarget + ?Sized),
        update: &SessionUpdate,
    ) -> Result<(), AdapterError> {
        let id = session.session_id()?;
        if update.is_empty() {
            return Ok(());
        }
        self.execute(
            session.tenant(),
            &operations::agent_session_update(id, update),
        )
        .await
        .map(drop)
    }

    /// Creates a comment on an issue, as a reply to `parent_id` when given;
    /// returns the comment's id. Uses the credential of
    /// [`for_organization`](Self::for_organization), else the default one.
    pub async fn comment(
        &self,
        issue_id: &str,
        parent_id: Option<&str>,
        body: &str,
    ) -> Result<String, AdapterError> {
        self.create_comment(None, issue_id, parent_id, body, None)
            .await
    }

    async fn create_comment(
        &self,
        tenant: Option<&TenantId>,
        issue_id: &str,
        parent_id: Option<&str>,
        body: &str,
        id: Option<String>,
    ) -> Result<String, AdapterError> {
        let id = id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let op = operations::comment_create(issue_id, parent_id, body, &id);
        let data = self.execute(tenant, &op).await?;
        Ok(data
            .pointer("/comment/id")
            .and_then(Value::as_str)
            .unwrap_or(&id)
            .to_owned())
    }

    /// The id of the user the credential acts as: the app user, for an agent
    /// installed with `actor=app`.
    pub async fn viewer_id(&self) -> Result<String, AdapterError> {
        let data = self.execute(None, &operations::viewer()).await?;
        data.get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Decode("the viewer has no id".into()))
    }

    fn linear_thread(thread: &ThreadRef) -> Result<LinearThread<'_>, AdapterError> {
        LinearThread::of(thread).ok_or(AdapterError::Unsupported(
            "not a Linear agent session or comment thread",
        ))
    }
}

#[async_trait]
impl PlatformAdapter for LinearAdapter {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn platform(&self) -> Platform {
        Platform::Linear
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
            let removed = store.delete(Platform::Linear, &tenant).await?;
            tracing::info!(tenant = %tenant, removed, "linear: OAuth app revoked; installation deleted");
            return Ok(Resolution::Ignored {
                reason: "app-revoked",
            });
        }
        let Some(installation) = store.get(Platform::Linear, &tenant).await? else {
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

    /// In an agent session: a `response` activity. In a comment thread: a
    /// reply to the thread's root comment.
    ///
    /// A reply of a handler run ([`ReplyKey`](chat_core::ReplyKey)) gets an id
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
            .reply_key
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
                let mut activity = Activity::response(message.text.as_str());
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
                    &message.text,
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
                    &operations::comment_update(&message.id, &content.text),
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
            || event.platform() != Platform::Linear
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

/// The id of a handler run's reply: a UUID in v4 format (what Linear accepts
/// as a client-supplied id) derived from the thread, the event and the reply's
/// position, so a repeated run reuses it.
fn reply_id(thread: &ThreadRef, key: &chat_core::ReplyKey) -> String {
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
