//! The inspector: a `tower::Service` serving the page, the login form, the
//! force-release form and `scopes.json`, behind a token.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use chat_core::{ForceRelease, Platform, ScopeFilter, TenantId};
use chat_runtime::Bot;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use ring::hmac;

use crate::page::{self, Flash, Snapshot};
use crate::session::{Attempt, LoginGuard, Sessions};

/// The session cookie's name.
const COOKIE: &str = "chat_inspect";
/// Largest form body accepted (a login, a release).
const MAX_FORM: usize = 16 * 1024;
/// Busy scopes shown at most.
const MAX_SCOPES: usize = 500;

/// Why an [`Inspector`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InspectorError {
    /// The token is shorter than 16 characters.
    WeakToken,
    /// The base path does not start with `/` (or ends with one).
    BadBasePath,
}

impl std::fmt::Display for InspectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WeakToken => f.write_str("the inspector token must be at least 16 characters"),
            Self::BadBasePath => f.write_str("the base path must start with / and not end with /"),
        }
    }
}

impl std::error::Error for InspectorError {}

/// Settings of an [`Inspector`].
#[must_use]
pub struct InspectorBuilder {
    bot: Bot,
    token: String,
    base_path: String,
    refresh: Duration,
    expiring: Duration,
    session_ttl: Duration,
    secure_cookie: Option<bool>,
    max_failed_logins: u64,
}

impl std::fmt::Debug for InspectorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InspectorBuilder")
            .field("token", &"<redacted>")
            .field("base_path", &self.base_path)
            .field("refresh", &self.refresh)
            .field("expiring", &self.expiring)
            .finish_non_exhaustive()
    }
}

impl InspectorBuilder {
    /// Where the service is mounted (default `/inspect`): its forms and
    /// redirects point there, and the cookie is scoped to it.
    pub fn base_path(mut self, path: impl Into<String>) -> Self {
        self.base_path = path.into();
        self
    }

    /// How often the page reloads itself (default 5 s).
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// Leases with less time left than this are listed as about to expire
    /// (default 10 s).
    pub fn expiring_within(mut self, within: Duration) -> Self {
        self.expiring = within;
        self
    }

    /// How long a login lasts (default 8 hours); logging out ends it sooner.
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl;
        self
    }

    /// Whether the session cookie is `Secure` (sent over https only).
    /// Default `None`: when the request came over https, or through a proxy
    /// that says so (`X-Forwarded-Proto: https`).
    pub fn secure_cookie(mut self, secure: Option<bool>) -> Self {
        self.secure_cookie = secure;
        self
    }

    /// Wrong tokens accepted per minute (default 10); past it, logins are
    /// refused with `429` until the minute ends, and one log line says how
    /// many there were.
    pub fn max_failed_logins(mut self, per_minute: u64) -> Self {
        self.max_failed_logins = per_minute;
        self
    }

    /// Builds the service.
    pub fn build(self) -> Result<Inspector, InspectorError> {
        if self.token.chars().count() < 16 {
            return Err(InspectorError::WeakToken);
        }
        if !self.base_path.starts_with('/') || self.base_path.ends_with('/') {
            return Err(InspectorError::BadBasePath);
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, self.token.as_bytes());
        let kv: Arc<dyn chat_core::KvStore> = self.bot.state().clone();
        Ok(Inspector {
            inner: Arc::new(Inner {
                token_tag: hmac::sign(&key, self.token.as_bytes()),
                sessions: Sessions::new(kv, self.session_ttl, key.clone()),
                logins: LoginGuard::new(self.max_failed_logins),
                secure_cookie: self.secure_cookie,
                key,
                bot: self.bot,
                base: self.base_path,
                refresh: self.refresh,
                expiring: self.expiring,
            }),
        })
    }
}

/// The inspector page of one bot (see the [crate docs](crate)).
#[derive(Clone)]
pub struct Inspector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector")
            .field("base_path", &self.inner.base)
            .finish_non_exhaustive()
    }
}

struct Inner {
    bot: Bot,
    /// HMAC keyed by the token: compares presented tokens.
    key: hmac::Key,
    /// The token's own tag: a presented bearer token is compared by its tag,
    /// in constant time.
    token_tag: hmac::Tag,
    sessions: Sessions,
    logins: LoginGuard,
    secure_cookie: Option<bool>,
    base: String,
    refresh: Duration,
    expiring: Duration,
}

impl Inspector {
    /// An inspector of `bot`, opened by `token` (at least 16 characters).
    pub fn builder(bot: Bot, token: impl Into<String>) -> InspectorBuilder {
        InspectorBuilder {
            bot,
            token: token.into(),
            base_path: "/inspect".to_owned(),
            refresh: Duration::from_secs(5),
            expiring: Duration::from_secs(10),
            session_ttl: Duration::from_secs(8 * 60 * 60),
            secure_cookie: None,
            max_failed_logins: 10,
        }
    }
}

/// How a request proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Auth {
    None,
    /// `Authorization: Bearer`: a tool; no CSRF check.
    Bearer,
    /// A session cookie (its session id): a browser; forms carry the
    /// session's CSRF value.
    Cookie(String),
}

fn now_ms() -> u64 {
    chat_core::clock::millis(std::time::SystemTime::now())
}

impl Inner {
    /// The session cookie for `value` (empty: cleared), `Secure` when the
    /// request came over https.
    fn cookie(&self, parts: &http::request::Parts, value: &str, max_age: Duration) -> String {
        let https = parts.uri.scheme_str() == Some("https")
            || parts
                .headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("https"));
        let secure = if self.secure_cookie.unwrap_or(https) {
            "; Secure"
        } else {
            ""
        };
        format!(
            "{COOKIE}={value}; HttpOnly; SameSite=Strict; Path={}; Max-Age={}{secure}",
            self.base,
            max_age.as_secs()
        )
    }

    async fn auth(&self, parts: &http::request::Parts) -> Auth {
        if let Some(bearer) = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            && self.is_token(bearer)
        {
            return Auth::Bearer;
        }
        let cookies = parts
            .headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='));
        for value in cookies {
            if self.sessions.is_open(value).await {
                return Auth::Cookie(value.to_owned());
            }
        }
        Auth::None
    }

    /// Whether `presented` is the token, compared by HMAC tag in constant
    /// time.
    fn is_token(&self, presented: &str) -> bool {
        hmac::verify(&self.key, presented.as_bytes(), self.token_tag.as_ref()).is_ok()
    }

    async fn snapshot(&self, filter: &ScopeFilter) -> Snapshot {
        let scopes = self
            .bot
            .state()
            .busy_scopes(filter, MAX_SCOPES)
            .await
            .map_err(|e| e.to_string());
        Snapshot {
            scopes,
            runs: self.bot.runs(),
            outcomes: self.bot.recent_outcomes(),
            expiring: self.expiring,
        }
    }

    async fn call(&self, request: Request<Full<Bytes>>) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().trim_end_matches('/');
        let query = parts.uri.query().unwrap_or("");
        let auth = self.auth(&parts).await;
        let csrf = match &auth {
            Auth::Cookie(id) => self.sessions.csrf(id),
            _ => String::new(),
        };
        match (&parts.method, path) {
            (&Method::POST, "/login") => {
                if self.logins.attempt(now_ms()) == Attempt::Refused {
                    return text(
                        StatusCode::TOO_MANY_REQUESTS,
                        "too many wrong tokens; try again in a minute",
                    );
                }
                let form = form(body).await;
                if form.iter().any(|(k, v)| k == "token" && self.is_token(v)) {
                    return match self.sessions.open().await {
                        Ok(id) => {
                            let cookie = self.cookie(&parts, &id, self.sessions.ttl());
                            redirect(&self.base, Some(&cookie))
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "inspector: a session could not be stored");
                            text(
                                StatusCode::SERVICE_UNAVAILABLE,
                                "the state backend did not answer",
                            )
                        }
                    };
                }
                self.logins.failed(now_ms());
                html(
                    StatusCode::UNAUTHORIZED,
                    page::login(&self.base, Some("That token is not the one.")),
                )
            }
            (&Method::POST, "/logout") => {
                let form = form(body).await;
                if let Auth::Cookie(id) = &auth
                    && form.iter().any(|(k, v)| k == "csrf" && *v == csrf)
                {
                    self.sessions.close(id).await;
                }
                let cleared = self.cookie(&parts, "", Duration::ZERO);
                redirect(&self.base, Some(&cleared))
            }
            (_, _) if auth == Auth::None => {
                if parts.method == Method::GET && path.is_empty() {
                    html(StatusCode::OK, page::login(&self.base, None))
                } else {
                    text(StatusCode::UNAUTHORIZED, "unauthorized")
                }
            }
            (&Method::GET, "") => {
                let filter = filter(query);
                let snapshot = self.snapshot(&filter).await;
                let flash = flash(query);
                html(
                    StatusCode::OK,
                    page::inspector(&self.base, &csrf, self.refresh, &snapshot, flash),
                )
            }
            (&Method::GET, "/scopes.json") => {
                let views = self
                    .bot
                    .state()
                    .busy_scopes(&filter(query), MAX_SCOPES)
                    .await;
                match views {
                    Ok(views) => json(
                        StatusCode::OK,
                        &serde_json::Value::Array(views.iter().map(crate::view_json).collect()),
                    ),
                    Err(e) => text(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
                }
            }
            (&Method::POST, "/release") => {
                let form = form(body).await;
                let field = |name: &str| {
                    form.iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.as_str())
                };
                if matches!(auth, Auth::Cookie(_)) && field("csrf") != Some(csrf.as_str()) {
                    return text(StatusCode::FORBIDDEN, "a form from elsewhere");
                }
                let (Some(scope), Some(fence)) = (
                    field("scope").and_then(|s| crate::parse_scope(s).ok()),
                    field("fence").and_then(|f| f.parse::<u64>().ok()),
                ) else {
                    return text(StatusCode::BAD_REQUEST, "a scope and a fence, please");
                };
                let outcome = match self.bot.force_release(&scope, fence).await {
                    Ok(ForceRelease::Released) => "released",
                    Ok(_) => "stale",
                    Err(e) => {
                        tracing::warn!(error = %e, "inspector: force-release failed");
                        "failed"
                    }
                };
                if auth == Auth::Bearer {
                    let status = match outcome {
                        "released" => StatusCode::OK,
                        "stale" => StatusCode::CONFLICT,
                        _ => StatusCode::SERVICE_UNAVAILABLE,
                    };
                    return text(status, outcome);
                }
                let to = format!(
                    "{}?{}",
                    self.base,
                    serde_urlencoded::to_string([
                        ("flash", outcome),
                        ("scope", &crate::scope_text(&scope)),
                        ("fence", &fence.to_string()),
                    ])
                    .unwrap_or_default()
                );
                redirect(&to, None)
            }
            _ => text(StatusCode::NOT_FOUND, "not found"),
        }
    }
}

/// The scope filter of a query (`platform`, `tenant`, `channel`).
fn filter(query: &str) -> ScopeFilter {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let mut filter = ScopeFilter::all();
    filter.platform = get("platform").and_then(|p| Platform::parse(&p).ok());
    filter.tenant = get("tenant").map(TenantId::new);
    filter.channel = get("channel");
    filter
}

/// The message a release left for the page (`flash`, `scope`, `fence`).
fn flash(query: &str) -> Option<Flash> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    Some(Flash {
        outcome: get("flash")?,
        scope: get("scope").unwrap_or_default(),
        fence: get("fence").unwrap_or_default(),
    })
}

async fn form(body: Full<Bytes>) -> Vec<(String, String)> {
    match Limited::new(body, MAX_FORM).collect().await {
        Ok(b) => serde_urlencoded::from_bytes(&b.to_bytes()).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn response(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    h.insert(
        header::HeaderName::from_static("x-frame-options"),
        header::HeaderValue::from_static("DENY"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    r
}

fn html(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    response(status, "text/html; charset=utf-8", Bytes::from(body))
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    response(
        status,
        "text/plain; charset=utf-8",
        Bytes::from(body.to_owned()),
    )
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response<Full<Bytes>> {
    response(status, "application/json", Bytes::from(value.to_string()))
}

fn redirect(to: &str, cookie: Option<&str>) -> Response<Full<Bytes>> {
    let mut r = response(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        Bytes::new(),
    );
    if let Ok(v) = header::HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    if let Some(c) = cookie.and_then(|c| header::HeaderValue::from_str(c).ok()) {
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    r
}

impl<B> tower::Service<Request<B>> for Inspector
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            // Only forms have bodies here: read at most MAX_FORM of it.
            let body = match Limited::new(body, MAX_FORM).collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => return Ok(text(StatusCode::PAYLOAD_TOO_LARGE, "too large")),
            };
            Ok(inner
                .call(Request::from_parts(parts, Full::new(body)))
                .await)
        })
    }
}
