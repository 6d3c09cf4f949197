//! [`LinearAdapterBuilder`]: the settings of a [`LinearAdapter`], checked
//! when it is built.

use chat_http::HttpOptions;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chat_core::{InstallationStore, TenantId};
use ring::hmac;

use super::{
    Credential, DEFAULT_ENDPOINT, DEFAULT_FIRST_THOUGHT, DEFAULT_STOPPED, Inner, Installations,
    LinearAdapter,
};
use crate::client::GraphqlClient;
use crate::error::BuildError;
use crate::first::FirstActivity;
use crate::inbound::Config;
use crate::oauth::LinearOAuth;
use chat_core::{Clock, SystemClock};

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
    http: HttpOptions,
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
            http: HttpOptions::default(),
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

    /// Every setting of the GraphQL calls at once (retries, retry budget,
    /// request timeout, proxy: [`HttpOptions`]); the three methods below set
    /// one each.
    pub fn http(mut self, options: HttpOptions) -> Self {
        self.http = options;
        self
    }

    /// The timeout of one HTTP request (default 10 s; shortened to a deadline).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.http.request_timeout = timeout;
        self
    }

    /// How long a call without a deadline may take, rate-limit waits included
    /// (default 30 s).
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.http.retry_budget = budget;
        self
    }

    /// How many times a rate-limited call is sent again (default 3).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.http.max_retries = retries;
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
        if self.http.request_timeout.is_zero() || self.http.retry_budget.is_zero() {
            return Err(BuildError::InvalidOption(
                "request_timeout or retry_budget is zero",
            ));
        }
        let endpoint = self
            .endpoint
            .parse::<http::Uri>()
            .ok()
            .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some())
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
        let transport = self.http.transport("chat-linear")?;
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
                    transport,
                    options: self.http,
                    endpoint,
                    default_auth,
                    organization_auth,
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
