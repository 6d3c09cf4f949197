//! [`SlackAdapterBuilder`]: a Slack adapter's settings, checked when it is built.

use super::*;

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
    http: HttpOptions,
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
            http: HttpOptions::default(),
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

    /// Every setting of the Web API calls at once (retries, retry budget,
    /// request timeout, proxy: [`HttpOptions`]); the four methods below set
    /// one each.
    pub fn http(mut self, options: HttpOptions) -> Self {
        self.http = options;
        self
    }

    /// How many times a Web API call is retried after a 429 (default 3).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.http.max_retries = n;
        self
    }

    /// How long one Web API call may wait out 429s when it has no deadline
    /// (default 30 s). See [`SlackClient`].
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.http.retry_budget = budget;
        self
    }

    /// The timeout of one Web API request (default 10 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.http.request_timeout = timeout;
        self
    }

    /// Where Web API calls go through an HTTP proxy (default
    /// [`Proxy::FromEnv`]: `HTTPS_PROXY` or `ALL_PROXY`, except `NO_PROXY`).
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.http.proxy = proxy;
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
                .http(self.http.clone())
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
