//! [`OAuthFlow`]: the install flow over any [`OAuthProvider`], and its
//! builder.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use chat_core::{
    Clock, Installation, InstallationStore, KvStore, Secret, SetMode, SystemClock, TenantId,
};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Response, StatusCode};
use serde::Deserialize;
use url::Url;

use super::error::{OAuthBuildError, OAuthError, safe_code};
use super::limit::{Limiter, RateLimit, Spend, SpentInMemory};
use super::provider::{OAuthClient, OAuthProvider};
use super::state::{self, StateRefusal, StateSigner};

/// The shortest state secret accepted, in bytes.
const MIN_STATE_SECRET: usize = 16;

/// The OAuth install flow of an app distributed to many workspaces
/// (organizations) of one platform: two framework-agnostic handlers to mount
/// on your HTTP server, and the refresh of the tokens it stored. Cheap to
/// clone.
///
/// * [`install`](Self::install) (mount at e.g. `GET /slack/install`, the
///   link of an "Add to …" button) answers `302` to the platform's authorize
///   page with the client id, the scopes, the redirect URI and a fresh
///   `state`: signed with HMAC-SHA256 under the state secret, expiring after
///   [`state_ttl`](OAuthFlowBuilder::state_ttl), and bound to the browser by
///   an `HttpOnly; Secure; SameSite=Lax` cookie carrying its nonce.
/// * [`callback`](Self::callback) (mount at the redirect URI) checks the
///   `state` (signature, expiry, cookie), has the provider exchange the
///   `code` for an [`Installation`], and puts it into the store. It answers
///   `302` to the [`success_url`](OAuthFlowBuilder::success_url) (or a plain
///   `200`), or an error status with a short text ([`OAuthError::status`]).
///   [`complete`](Self::complete) is the same without the HTTP answer.
/// * [`fresh_installation`](Self::fresh_installation) reads a tenant's
///   installation, refreshing its token first when it is about to expire
///   (platforms whose tokens expire).
///
/// Its `Debug` never shows the client secret or the state secret.
pub struct OAuthFlow<P> {
    inner: Arc<Inner<P>>,
}

impl<P> Clone for OAuthFlow<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<P> {
    provider: P,
    client: OAuthClient,
    authorize_url: Url,
    success_url: Option<String>,
    installed_text: &'static str,
    signer: StateSigner,
    cookie: Option<String>,
    store: Arc<dyn InstallationStore>,
    clock: Arc<dyn Clock>,
    refresh_margin: Duration,
    /// States already brought back, each good for one callback.
    spent: SpentStates,
    /// Install links handed out, per client.
    install_limit: Limiter,
    /// Callbacks, per client; code exchanges, overall.
    callback_limit: Limiter,
    client_address: ClientAddress,
    /// One refresh at a time per tenant in this process.
    refreshing: Mutex<HashMap<TenantId, Arc<tokio::sync::Mutex<()>>>>,
}

impl<P: fmt::Debug> fmt::Debug for OAuthFlow<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        f.debug_struct("OAuthFlow")
            .field("provider", &i.provider)
            .field("client", &i.client)
            .field("authorize_url", &i.authorize_url.as_str())
            .field("success_url", &i.success_url)
            .field("signer", &i.signer)
            .field("cookie", &i.cookie)
            .field("refresh_margin", &i.refresh_margin)
            .finish_non_exhaustive()
    }
}

/// Settings of an [`OAuthFlow`]: the client id and secret, a state secret and
/// an installation store are required, and the scopes and redirect URI when
/// the platform has no default for them.
#[must_use]
pub struct OAuthFlowBuilder<P> {
    provider: P,
    client_id: Option<String>,
    client_secret: Option<String>,
    state_secret: Option<String>,
    scopes: Option<Vec<String>>,
    redirect_uri: Option<String>,
    authorize_url: Option<String>,
    success_url: Option<String>,
    state_ttl: Duration,
    refresh_margin: Duration,
    cookie: Option<Option<String>>,
    store: Option<Arc<dyn InstallationStore>>,
    spent: Option<Arc<dyn KvStore>>,
    clock: Arc<dyn Clock>,
    install_limit: Option<RateLimit>,
    callback_limit: Option<RateLimit>,
    exchange_limit: Option<RateLimit>,
    client_address: ClientAddress,
}

/// How the flow learns a request's client address.
type ClientAddress = Arc<dyn Fn(&http::request::Parts) -> Option<IpAddr> + Send + Sync>;

/// The client address a server put into the request's extensions as a
/// `SocketAddr` (`chat_runtime::server` does).
fn peer_address(parts: &http::request::Parts) -> Option<IpAddr> {
    parts.extensions.get::<SocketAddr>().map(SocketAddr::ip)
}

/// Install links per client address: 20 at once, then one a second.
pub const DEFAULT_INSTALL_LIMIT: RateLimit = RateLimit {
    burst: 20,
    every: Duration::from_secs(1),
};

/// Callbacks per client address: 10 at once, then one every 6 seconds.
pub const DEFAULT_CALLBACK_LIMIT: RateLimit = RateLimit {
    burst: 10,
    every: Duration::from_secs(6),
};

/// Code exchanges with the platform, over all clients: 30 at once, then one
/// a second.
pub const DEFAULT_EXCHANGE_LIMIT: RateLimit = RateLimit {
    burst: 30,
    every: Duration::from_secs(1),
};

/// The most spent states the default (in-memory) store holds: past it, a
/// callback is refused until some expire.
const MAX_SPENT_IN_MEMORY: usize = 100_000;

impl<P: fmt::Debug> fmt::Debug for OAuthFlowBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthFlowBuilder")
            .field("provider", &self.provider)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "state_secret",
                &self.state_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl<P: OAuthProvider> OAuthFlowBuilder<P> {
    /// The app's client id. Required.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The app's client secret. Required; sent only to the platform's token
    /// endpoint.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The key that signs `state` values (HMAC-SHA256), at least 16 bytes;
    /// e.g. `openssl rand -hex 32`. Required. Every replica needs the same
    /// one, since an install may start on one and come back to another.
    pub fn state_secret(mut self, secret: impl Into<String>) -> Self {
        self.state_secret = Some(secret.into());
        self
    }

    /// The scopes to request (default: the platform's; required when it has
    /// none).
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The redirect URI registered with the platform, sent with the authorize
    /// request and the code exchange (required when the platform says so).
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }

    /// The authorize page (default: the platform's).
    pub fn authorize_url(mut self, url: impl Into<String>) -> Self {
        self.authorize_url = Some(url.into());
        self
    }

    /// Where the browser goes after a successful install (default: a plain
    /// `200` page).
    pub fn success_url(mut self, url: impl Into<String>) -> Self {
        self.success_url = Some(url.into());
        self
    }

    /// How long an install link's `state` is valid (default 10 minutes).
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// How long before its expiry an access token is refreshed (default 5
    /// minutes).
    pub fn refresh_margin(mut self, margin: Duration) -> Self {
        self.refresh_margin = margin;
        self
    }

    /// The name of the cookie binding the `state` to the browser (default:
    /// the platform's), or `None` to check signature and expiry only (for
    /// installs started outside a browser, e.g. a link sent by email).
    pub fn state_cookie(mut self, name: Option<&str>) -> Self {
        self.cookie = Some(name.map(str::to_owned));
        self
    }

    /// Where installations go. Required: give the adapter the same store.
    pub fn installations(mut self, store: Arc<dyn InstallationStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where spent `state`s are remembered (for the state's lifetime), so each
    /// is good for one callback on every replica: with several replicas, the
    /// shared state backend (a `RedisState`). Default: this process's memory,
    /// which makes a state single-use on the replica that sees it.
    pub fn spent_states(mut self, kv: Arc<dyn KvStore>) -> Self {
        self.spent = Some(kv);
        self
    }

    /// How often one client (by address) may fetch an install link, or
    /// `None` for no limit. Default [`DEFAULT_INSTALL_LIMIT`]; past it the
    /// install route answers `429`.
    pub fn install_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.install_limit = limit;
        self
    }

    /// How often one client (by address) may come back to the callback, or
    /// `None` for no limit. Default [`DEFAULT_CALLBACK_LIMIT`]; past it the
    /// callback answers `429` before looking at its `state`.
    pub fn callback_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.callback_limit = limit;
        self
    }

    /// How often this process exchanges a code with the platform, over all
    /// clients, or `None` for no limit. Default [`DEFAULT_EXCHANGE_LIMIT`]:
    /// it bounds the calls (each carrying the client secret) a flood of
    /// valid `state`s can make the bot send to the platform's token
    /// endpoint, whose rate limit real installs share. A callback past it
    /// answers `429` without spending its `state`, so the user can retry.
    pub fn exchange_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.exchange_limit = limit;
        self
    }

    /// How the flow learns a request's client address for the per-client
    /// limits. Default: a `std::net::SocketAddr` in the request's
    /// extensions, which `chat_runtime::server::serve` puts there. With axum
    /// served on its own, read `ConnectInfo<SocketAddr>`; behind a proxy,
    /// the header it sets (only if the proxy overwrites it: a client can send
    /// any `X-Forwarded-For`). `None` from it: only the overall exchange
    /// limit applies.
    pub fn client_address(
        mut self,
        f: impl Fn(&http::request::Parts) -> Option<IpAddr> + Send + Sync + 'static,
    ) -> Self {
        self.client_address = Arc::new(f);
        self
    }

    /// The clock for `state` expiry, `installed_at` and token expiry
    /// (default: the system clock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Builds the flow; the error names a missing or invalid setting.
    pub fn build(self) -> Result<OAuthFlow<P>, OAuthBuildError> {
        let defaults = self.provider.defaults();
        let id = self
            .client_id
            .filter(|s| !s.is_empty())
            .ok_or(OAuthBuildError("client_id is required"))?;
        let secret = self
            .client_secret
            .filter(|s| !s.is_empty())
            .ok_or(OAuthBuildError("client_secret is required"))?;
        let state_secret = self
            .state_secret
            .ok_or(OAuthBuildError("state_secret is required"))?;
        if state_secret.len() < MIN_STATE_SECRET {
            return Err(OAuthBuildError("state_secret must be at least 16 bytes"));
        }
        let scopes = self
            .scopes
            .unwrap_or_else(|| defaults.scopes.iter().map(|s| (*s).to_owned()).collect());
        if scopes.is_empty() {
            return Err(OAuthBuildError("at least one scope is required"));
        }
        let redirect_uri = self.redirect_uri.filter(|u| !u.is_empty());
        if defaults.redirect_uri_required && redirect_uri.is_none() {
            return Err(OAuthBuildError("redirect_uri is required"));
        }
        if self.state_ttl.is_zero() {
            return Err(OAuthBuildError("state_ttl is zero"));
        }
        let store = self
            .store
            .ok_or(OAuthBuildError("an installation store is required"))?;
        let authorize_url = http_url(
            self.authorize_url
                .as_deref()
                .unwrap_or(defaults.authorize_url),
        )
        .ok_or(OAuthBuildError("authorize_url is not an http(s) URL"))?;
        let client = OAuthClient {
            id,
            secret: Secret::new(secret),
            redirect_uri,
            scopes,
        };
        self.provider.check(&client).map_err(OAuthBuildError)?;
        let platform = self.provider.platform();
        let cookie = self
            .cookie
            .unwrap_or_else(|| Some(defaults.state_cookie.to_owned()))
            .filter(|c| !c.is_empty());
        Ok(OAuthFlow {
            inner: Arc::new(Inner {
                signer: StateSigner::new(
                    state_secret.as_bytes(),
                    self.state_ttl,
                    platform.as_str(),
                ),
                provider: self.provider,
                client,
                authorize_url,
                success_url: self.success_url,
                installed_text: defaults.installed_text,
                cookie,
                store,
                clock: self.clock,
                refresh_margin: self.refresh_margin,
                spent: match self.spent {
                    Some(kv) => SpentStates::Kv(kv, format!("oauth-state:{platform}")),
                    None => SpentStates::Memory(SpentInMemory::new(MAX_SPENT_IN_MEMORY)),
                },
                install_limit: Limiter::new(self.install_limit, None),
                callback_limit: Limiter::new(self.callback_limit, self.exchange_limit),
                client_address: self.client_address,
                refreshing: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// `s` as an absolute `http(s)` URL.
fn http_url(s: &str) -> Option<Url> {
    Url::parse(s)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
}

impl<P: OAuthProvider> OAuthFlow<P> {
    /// A builder for a flow with `provider`, with the defaults.
    pub fn builder(provider: P) -> OAuthFlowBuilder<P> {
        OAuthFlowBuilder {
            provider,
            client_id: None,
            client_secret: None,
            state_secret: None,
            scopes: None,
            redirect_uri: None,
            authorize_url: None,
            success_url: None,
            state_ttl: Duration::from_secs(600),
            refresh_margin: Duration::from_secs(300),
            cookie: None,
            store: None,
            spent: None,
            clock: Arc::new(SystemClock),
            install_limit: Some(DEFAULT_INSTALL_LIMIT),
            callback_limit: Some(DEFAULT_CALLBACK_LIMIT),
            exchange_limit: Some(DEFAULT_EXCHANGE_LIMIT),
            client_address: Arc::new(peer_address),
        }
    }

    /// The installation store the flow writes to.
    pub fn installations(&self) -> &Arc<dyn InstallationStore> {
        &self.inner.store
    }

    /// The platform's part of the flow.
    pub fn provider(&self) -> &P {
        &self.inner.provider
    }

    /// How long before its expiry an access token is refreshed.
    pub fn refresh_margin(&self) -> Duration {
        self.inner.refresh_margin
    }

    /// A fresh authorize URL and the nonce to bind it to a browser with the
    /// state cookie. [`install`](Self::install) is this as an HTTP answer; use
    /// this one to render your own "Add to …" page.
    pub fn authorize(&self) -> Result<(String, String), OAuthError> {
        let i = &self.inner;
        let issued = i
            .signer
            .issue(i.clock.now())
            .ok_or(OAuthError::Internal("no random state"))?;
        let mut url = i.authorize_url.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("client_id", &i.client.id);
            q.append_pair("scope", &i.client.scopes.join(","));
            if let Some(uri) = &i.client.redirect_uri {
                q.append_pair("redirect_uri", uri);
            }
            for (name, value) in i.provider.authorize_params() {
                q.append_pair(name, &value);
            }
            q.append_pair("state", &issued.state);
        }
        Ok((url.into(), issued.nonce))
    }

    /// The install route: `302` to the platform's authorize page with a new
    /// `state`, and the cookie binding it to this browser; `429` to a client
    /// past its [`install_limit`](OAuthFlowBuilder::install_limit).
    pub fn install(&self, parts: &http::request::Parts) -> Response<Bytes> {
        let client = (self.inner.client_address)(parts);
        if !self
            .inner
            .install_limit
            .client(client, self.inner.clock.now_ms())
        {
            return too_many();
        }
        let (url, nonce) = match self.authorize() {
            Ok(pair) => pair,
            Err(e) => return text(e.status(), &e.to_string()),
        };
        let Ok(location) = HeaderValue::from_str(&url) else {
            return text(StatusCode::INTERNAL_SERVER_ERROR, "invalid authorize URL");
        };
        let mut r = empty(StatusCode::FOUND);
        r.headers_mut().insert(LOCATION, location);
        if let Some(name) = &self.inner.cookie
            && let Ok(cookie) = HeaderValue::from_str(&state::set_cookie(
                name,
                Some(&nonce),
                self.inner.signer.ttl(),
            ))
        {
            r.headers_mut().insert(SET_COOKIE, cookie);
        }
        r
    }

    /// The callback route: completes the install ([`complete`](Self::complete))
    /// and answers the browser — `302` to the success URL (or `200`), or the
    /// error's status with a short text. The state cookie is cleared either
    /// way.
    pub async fn callback(&self, parts: &http::request::Parts) -> Response<Bytes> {
        let platform = self.inner.provider.platform();
        let mut r = match self.complete(parts).await {
            Ok(installation) => {
                tracing::info!(platform = %platform, tenant = %installation.tenant, "installed");
                match self
                    .inner
                    .success_url
                    .as_deref()
                    .and_then(|u| HeaderValue::from_str(u).ok())
                {
                    Some(location) => {
                        let mut r = empty(StatusCode::FOUND);
                        r.headers_mut().insert(LOCATION, location);
                        r
                    }
                    None => text(StatusCode::OK, self.inner.installed_text),
                }
            }
            // A flood is answered, not logged line by line.
            Err(OAuthError::TooManyRequests) => too_many(),
            Err(e) => {
                tracing::warn!(platform = %platform, error = %e, "install callback refused");
                text(e.status(), &e.to_string())
            }
        };
        if let Some(name) = &self.inner.cookie
            && let Ok(clear) = HeaderValue::from_str(&state::set_cookie(name, None, Duration::ZERO))
        {
            r.headers_mut().insert(SET_COOKIE, clear);
        }
        r
    }

    /// Completes an install from the callback request: checks the `state`
    /// (signature, expiry, and the browser's cookie), has the provider
    /// exchange the `code`, and stores the installation, which it returns.
    pub async fn complete(&self, parts: &http::request::Parts) -> Result<Installation, OAuthError> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Query {
            code: Option<String>,
            state: Option<String>,
            error: Option<String>,
        }
        let i = &self.inner;
        if !i
            .callback_limit
            .client((i.client_address)(parts), i.clock.now_ms())
        {
            return Err(OAuthError::TooManyRequests);
        }
        let query: Query = serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
            .map_err(|_| OAuthError::State(StateRefusal::Invalid))?;
        // The state first: nothing of the callback is acted on (not even its
        // `error`) before it is known to be ours, this browser's, and unused.
        let cookie = i
            .cookie
            .as_deref()
            .map(|name| state::cookie(&parts.headers, name));
        let nonce = i
            .signer
            .check(query.state.as_deref(), i.clock.now(), cookie)?;
        // A state of ours: the exchange it leads to is counted before the
        // state is spent, so a callback turned away keeps its state.
        if !i.callback_limit.overall(i.clock.now_ms()) {
            return Err(OAuthError::TooManyRequests);
        }
        if !i
            .spent
            .spend(&nonce, i.signer.ttl(), i.clock.now_ms())
            .await?
        {
            return Err(OAuthError::State(StateRefusal::Used));
        }
        if let Some(error) = query.error.filter(|e| !e.is_empty()) {
            return Err(OAuthError::Denied(safe_code(&error)));
        }
        let code = query
            .code
            .filter(|c| !c.is_empty())
            .ok_or(OAuthError::MissingCode)?;
        let installation = i
            .provider
            .exchange(&i.client, &code, i.clock.now_ms())
            .await?;
        i.store
            .put(&installation)
            .await
            .map_err(OAuthError::Store)?;
        Ok(installation)
    }

    /// Renews `installation`'s access token with its refresh token through the
    /// provider, stores the result and returns it.
    pub async fn refresh(&self, installation: &Installation) -> Result<Installation, OAuthError> {
        let i = &self.inner;
        let renewed = i
            .provider
            .refresh(&i.client, installation, i.clock.now_ms())
            .await?;
        i.store.put(&renewed).await.map_err(OAuthError::Store)?;
        Ok(renewed)
    }

    /// The installation of `tenant` with an access token that is not about to
    /// expire: refreshed first when it expires within the refresh margin of
    /// `now_ms`. One refresh at a time per tenant in this process; a refresh
    /// another replica made first is picked up from the store. A refresh that
    /// fails while the token is still valid is logged, and the current token
    /// used until it expires.
    pub async fn fresh_installation(
        &self,
        tenant: &TenantId,
        now_ms: u64,
    ) -> Result<Option<Installation>, OAuthError> {
        let i = &self.inner;
        let platform = i.provider.platform();
        let margin = u64::try_from(i.refresh_margin.as_millis()).unwrap_or(u64::MAX);
        let read = || async {
            i.store
                .get(platform, tenant)
                .await
                .map_err(OAuthError::Store)
        };
        let Some(current) = read().await? else {
            return Ok(None);
        };
        if !current.expires_within(now_ms, margin) || current.refresh_token.is_none() {
            return Ok(Some(current));
        }
        let lock = {
            let mut map = i.refreshing.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(map.entry(tenant.clone()).or_default())
        };
        let _one_at_a_time = lock.lock().await;
        // Another task (or replica) may have refreshed while we waited.
        let Some(current) = read().await? else {
            return Ok(None);
        };
        if !current.expires_within(now_ms, margin) {
            return Ok(Some(current));
        }
        let failed = match self.refresh(&current).await {
            Ok(renewed) => return Ok(Some(renewed)),
            Err(OAuthError::Refused(code)) => {
                // A replica that refreshed first may have rotated the refresh
                // token under us: its result is in the store.
                match read().await? {
                    Some(l) if l.access_token != current.access_token => return Ok(Some(l)),
                    _ => OAuthError::Refused(code),
                }
            }
            Err(e) => e,
        };
        if current.expires_within(now_ms, 0) {
            return Err(failed);
        }
        tracing::warn!(platform = %platform, tenant = %tenant, error = %failed, "token refresh failed; using the current token until it expires");
        Ok(Some(current))
    }
}

fn empty(status: StatusCode) -> Response<Bytes> {
    let mut r = Response::new(Bytes::new());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A `429` with how long to wait.
fn too_many() -> Response<Bytes> {
    let mut r = text(
        StatusCode::TOO_MANY_REQUESTS,
        &OAuthError::TooManyRequests.to_string(),
    );
    r.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("10"));
    r
}

fn text(status: StatusCode, body: &str) -> Response<Bytes> {
    let mut r = empty(status);
    *r.body_mut() = Bytes::copy_from_slice(body.as_bytes());
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The states already brought back.
enum SpentStates {
    /// In this process, bounded.
    Memory(SpentInMemory),
    /// In a shared store, under a key prefix (entries expire with their
    /// state).
    Kv(Arc<dyn KvStore>, String),
}

impl SpentStates {
    /// Records `nonce` as spent for `ttl`; `false` when it already was.
    async fn spend(&self, nonce: &str, ttl: Duration, now_ms: u64) -> Result<bool, OAuthError> {
        match self {
            Self::Memory(spent) => {
                let expires =
                    now_ms.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
                match spent.spend(nonce, expires, now_ms) {
                    Spend::Fresh => Ok(true),
                    Spend::Used => Ok(false),
                    Spend::Full => Err(OAuthError::TooManyRequests),
                }
            }
            Self::Kv(kv, prefix) => kv
                .set(
                    &format!("{prefix}:{nonce}"),
                    Bytes::from_static(b"1"),
                    Some(ttl),
                    SetMode::IfAbsent,
                )
                .await
                .map_err(|e| OAuthError::Store(e.into())),
        }
    }
}
