//! The install-flow conformance suite: a platform's
//! [`OAuthProvider`] inside chat-installations' [`OAuthFlow`], driven the way
//! a browser drives it against the platform's fake OAuth server.
//!
//! A platform crate implements [`FlowFixture`] in its tests (its provider
//! pointed at its fake) and runs every case with
//! [`install_flow_conformance!`](crate::install_flow_conformance), which
//! emits one `#[tokio::test]` per case:
//!
//! ```text
//! chat_testkit::install_flow_conformance!(async { SlackFixture::start().await });
//! ```
//!
//! Each case is a public `async fn(F)` named for the rule it checks.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{Installation, InstallationStore, TenantId};
use chat_installations::MemoryInstallations;
use chat_installations::oauth::{
    OAuthError, OAuthFlow, OAuthFlowBuilder, OAuthProvider, StateRefusal,
};
use http::StatusCode;

use crate::FlakyInstallations;

/// The state secret every case signs with.
pub const STATE_SECRET: &str = "a-state-secret-of-32-bytes-long!";
/// The redirect URI every case registers.
pub const REDIRECT: &str = "https://bot.example.com/oauth/callback";

/// A platform's side of the suite: its provider, pointed at its fake OAuth
/// server, and the fake's controls.
#[async_trait]
pub trait FlowFixture: Send + Sync + 'static {
    /// The platform's provider.
    type Provider: OAuthProvider + fmt::Debug;

    /// A provider that talks to this fixture's fake.
    fn provider(&self) -> Self::Provider;

    /// The client id and secret the fake accepts.
    fn client(&self) -> (&'static str, &'static str);

    /// The scopes an install asks for.
    fn scopes(&self) -> Vec<&'static str>;

    /// The fake's authorize page.
    fn authorize_url(&self) -> String;

    /// Adds an account (a workspace, an organization) that can approve
    /// installs: the tenant its installation is stored under.
    fn add_account(&self, name: &str) -> TenantId;

    /// The account `name` approving the install at `authorize` (the URL the
    /// install answer redirected to): the callback URL with a `code` and the
    /// `state`.
    fn approve(&self, authorize: &str, name: &str) -> Result<String, String>;

    /// How many code exchanges and refreshes the fake has seen.
    fn token_requests(&self) -> usize;

    /// Whether the platform's tokens expire and the provider refreshes them.
    fn refreshes(&self) -> bool;

    /// Tokens issued from now on live `lifetime` (platforms that refresh).
    fn set_token_lifetime(&self, lifetime: Duration);
}

/// A flow for `f` on `store`, with the suite's secrets and redirect URI.
fn builder<F: FlowFixture>(
    f: &F,
    store: Arc<dyn InstallationStore>,
) -> OAuthFlowBuilder<F::Provider> {
    let (id, secret) = f.client();
    OAuthFlow::builder(f.provider())
        .client_id(id)
        .client_secret(secret)
        .state_secret(STATE_SECRET)
        .redirect_uri(REDIRECT)
        .scopes(f.scopes())
        .authorize_url(f.authorize_url())
        .installations(store)
}

fn flow<F: FlowFixture>(f: &F, store: Arc<dyn InstallationStore>) -> OAuthFlow<F::Provider> {
    match builder(f, store).build() {
        Ok(flow) => flow,
        Err(e) => panic!("the suite's flow does not build: {e}"),
    }
}

fn header(r: &http::Response<Bytes>, name: &http::header::HeaderName) -> String {
    r.headers()
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_else(|| panic!("no {name} header"))
}

/// The `name=nonce` pair of the install answer's cookie.
fn cookie_of(r: &http::Response<Bytes>) -> String {
    let set = header(r, &http::header::SET_COOKIE);
    set.split(';').next().unwrap_or_default().to_owned()
}

/// A browser's request for the install route.
fn install_request() -> http::request::Parts {
    http::Request::new(()).into_parts().0
}

/// The browser coming back to the callback at `url`, with `cookie`.
fn callback_request(url: &str, cookie: Option<&str>) -> http::request::Parts {
    let path = url.strip_prefix("https://bot.example.com").unwrap_or(url);
    let mut request = http::Request::get(path);
    if let Some(c) = cookie {
        request = request.header(http::header::COOKIE, format!("theme=dark; {c}"));
    }
    match request.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => panic!("callback request: {e}"),
    }
}

fn query(url: &str) -> HashMap<String, String> {
    let q = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
    serde_urlencoded::from_str(q).unwrap_or_default()
}

/// An install started in one browser: the install answer's cookie and the
/// callback URL the account's approval leads to.
struct Started {
    cookie: String,
    authorize: String,
    back: String,
}

fn start<F: FlowFixture>(f: &F, flow: &OAuthFlow<F::Provider>, account: &str) -> Started {
    let answer = flow.install(&install_request());
    assert_eq!(answer.status(), StatusCode::FOUND);
    let authorize = header(&answer, &http::header::LOCATION);
    let back = f
        .approve(&authorize, account)
        .unwrap_or_else(|e| panic!("the fake refused the authorize request: {e}"));
    Started {
        cookie: cookie_of(&answer),
        authorize,
        back,
    }
}

async fn stored<F: FlowFixture>(
    f: &F,
    store: &dyn InstallationStore,
    tenant: &TenantId,
) -> Option<Installation> {
    match store.get(f.provider().platform(), tenant).await {
        Ok(i) => i,
        Err(e) => panic!("store: {e}"),
    }
}

fn memory() -> Arc<dyn InstallationStore> {
    Arc::new(MemoryInstallations::new())
}

/// `install` answers `302` to the platform's authorize page with the client
/// id, the scopes, the redirect URI and a `state` whose nonce the browser
/// keeps in an `HttpOnly; Secure; SameSite=Lax` cookie; nothing is cached.
pub async fn install_redirects_with_a_browser_bound_state<F: FlowFixture>(f: F) {
    let flow = flow(&f, memory());
    let answer = flow.install(&install_request());
    assert_eq!(answer.status(), StatusCode::FOUND);
    assert_eq!(header(&answer, &http::header::CACHE_CONTROL), "no-store");
    let location = header(&answer, &http::header::LOCATION);
    assert!(location.starts_with(&f.authorize_url()), "{location}");
    let q = query(&location);
    assert_eq!(q.get("client_id").map(String::as_str), Some(f.client().0));
    assert_eq!(q.get("redirect_uri").map(String::as_str), Some(REDIRECT));
    assert_eq!(q.get("scope"), Some(&f.scopes().join(",")));
    let set = header(&answer, &http::header::SET_COOKIE);
    for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    let nonce = cookie_of(&answer)
        .split_once('=')
        .map(|(_, n)| n.to_owned())
        .unwrap_or_default();
    assert!(nonce.len() >= 32, "{nonce}");
    assert!(q.get("state").is_some_and(|s| s.contains(&nonce)));
    // Every install gets its own state.
    assert_ne!(
        cookie_of(&flow.install(&install_request())),
        cookie_of(&answer)
    );
}

/// An approved install is exchanged once, stored under its tenant with the
/// platform's token, and the browser sees the installed page with the state
/// cookie cleared.
pub async fn an_approved_install_is_stored_under_its_tenant<F: FlowFixture>(f: F) {
    let store = memory();
    let tenant = f.add_account("acme");
    let flow = flow(&f, Arc::clone(&store));
    let s = start(&f, &flow, "acme");
    let answer = flow
        .callback(&callback_request(&s.back, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::OK, "{:?}", answer.body());
    assert!(header(&answer, &http::header::SET_COOKIE).contains("Max-Age=0"));
    assert_eq!(f.token_requests(), 1);
    let installation = stored(&f, store.as_ref(), &tenant)
        .await
        .unwrap_or_else(|| panic!("nothing stored under {tenant}"));
    assert_eq!(installation.platform, f.provider().platform());
    assert_eq!(installation.tenant, tenant);
    assert!(!installation.access_token.expose().is_empty());
    assert!(installation.installed_at_ms > 0);
}

/// With a success URL, the browser is sent there.
pub async fn a_success_url_receives_the_browser<F: FlowFixture>(f: F) {
    f.add_account("acme");
    let flow = builder(&f, memory())
        .success_url("https://bot.example.com/installed")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let s = start(&f, &flow, "acme");
    let answer = flow
        .callback(&callback_request(&s.back, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::FOUND);
    assert_eq!(
        header(&answer, &http::header::LOCATION),
        "https://bot.example.com/installed"
    );
}

/// A `state` with a changed signature is refused before the code is
/// exchanged; nothing is stored.
pub async fn a_tampered_state_is_refused<F: FlowFixture>(f: F) {
    let store = memory();
    let tenant = f.add_account("acme");
    let flow = flow(&f, Arc::clone(&store));
    let s = start(&f, &flow, "acme");
    let state = query(&s.back).remove("state").unwrap_or_default();
    let last = state.chars().last().unwrap_or('0');
    let changed = format!(
        "{}{}",
        &state[..state.len().saturating_sub(1)],
        if last == '0' { '1' } else { '0' }
    );
    let tampered = s.back.replace(&state, &changed);
    let answer = flow
        .callback(&callback_request(&tampered, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(&answer.body()[..], b"refused state: the state is invalid");
    assert_eq!(f.token_requests(), 0);
    assert!(stored(&f, store.as_ref(), &tenant).await.is_none());
}

/// A `state` brought back by another browser — no install cookie, or another
/// install's — is refused.
pub async fn a_state_from_another_browser_is_refused<F: FlowFixture>(f: F) {
    let store = memory();
    let tenant = f.add_account("acme");
    let flow = flow(&f, Arc::clone(&store));
    let s = start(&f, &flow, "acme");
    let answer = flow.callback(&callback_request(&s.back, None)).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let other = cookie_of(&flow.install(&install_request()));
    let answer = flow
        .callback(&callback_request(&s.back, Some(&other)))
        .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        &answer.body()[..],
        b"refused state: the state does not belong to this browser"
    );
    assert_eq!(f.token_requests(), 0);
    assert!(stored(&f, store.as_ref(), &tenant).await.is_none());
    // The right browser still completes it.
    let answer = flow
        .callback(&callback_request(&s.back, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
}

/// A `state` past its TTL is refused.
pub async fn an_expired_state_is_refused<F: FlowFixture>(f: F) {
    let store = memory();
    f.add_account("acme");
    let flow = flow(&f, Arc::clone(&store));
    let s = start(&f, &flow, "acme");
    let later = builder(&f, store)
        .clock(|| SystemTime::now() + Duration::from_secs(11 * 60))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let answer = later
        .callback(&callback_request(&s.back, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(&answer.body()[..], b"refused state: the state expired");
    assert_eq!(f.token_requests(), 0);
}

/// A user who declines comes back with `error=access_denied`: `403`, and
/// nothing exchanged; a callback without a code is a `400`.
pub async fn a_declined_install_and_a_missing_code_are_refused<F: FlowFixture>(f: F) {
    f.add_account("acme");
    let flow = flow(&f, memory());
    let s = start(&f, &flow, "acme");
    let state = query(&s.authorize).remove("state").unwrap_or_default();
    let s2 = start(&f, &flow, "acme");
    let state2 = query(&s2.authorize).remove("state").unwrap_or_default();
    let denied = format!(
        "{REDIRECT}?{}",
        serde_urlencoded::to_string([("error", "access_denied"), ("state", &state)])
            .unwrap_or_default()
    );
    let answer = flow
        .callback(&callback_request(&denied, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let no_code = format!(
        "{REDIRECT}?{}",
        serde_urlencoded::to_string([("state", &state2)]).unwrap_or_default()
    );
    let answer = flow
        .callback(&callback_request(&no_code, Some(&s2.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(&answer.body()[..], b"the callback has no code");
    assert_eq!(f.token_requests(), 0);
}

/// A state is single-use: the callback brought back twice is refused the
/// second time before the code is exchanged again (a replay would spend a
/// token exchange with the client secret).
pub async fn a_state_works_once<F: FlowFixture>(f: F) {
    f.add_account("acme");
    let flow = flow(&f, memory());
    let s = start(&f, &flow, "acme");
    let request = callback_request(&s.back, Some(&s.cookie));
    assert_eq!(flow.callback(&request).await.status(), StatusCode::OK);
    let again = flow.complete(&request).await;
    assert!(
        matches!(again, Err(OAuthError::State(StateRefusal::Used))),
        "{again:?}"
    );
    assert_eq!(
        flow.callback(&request).await.status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(f.token_requests(), 1);
}

/// The state is checked before anything else of the callback: an `error=`
/// with a forged or missing state is a refused state (400), not a declined
/// install.
pub async fn the_state_is_checked_before_the_error<F: FlowFixture>(f: F) {
    f.add_account("acme");
    let flow = flow(&f, memory());
    let s = start(&f, &flow, "acme");
    for state in [None, Some("999.forged.state")] {
        let mut fields = vec![("error", "access_denied")];
        if let Some(st) = state {
            fields.push(("state", st));
        }
        let url = format!(
            "{REDIRECT}?{}",
            serde_urlencoded::to_string(&fields).unwrap_or_default()
        );
        let answer = flow
            .complete(&callback_request(&url, Some(&s.cookie)))
            .await;
        assert!(
            matches!(answer, Err(OAuthError::State(_))),
            "{state:?}: {answer:?}"
        );
    }
    assert_eq!(f.token_requests(), 0);
}

/// A store that cannot take the installation makes the callback a `503`.
pub async fn a_store_failure_answers_503<F: FlowFixture>(f: F) {
    let store = Arc::new(FlakyInstallations::new(memory()));
    store.set_down(true);
    let tenant = f.add_account("acme");
    let flow = flow(&f, Arc::clone(&store) as Arc<dyn InstallationStore>);
    let s = start(&f, &flow, "acme");
    let answer = flow
        .callback(&callback_request(&s.back, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    store.set_down(false);
    assert!(stored(&f, store.as_ref(), &tenant).await.is_none());
}

/// Without browser binding (`state_cookie(None)`), no cookie is set or
/// needed, and the signature and expiry still hold.
pub async fn without_browser_binding_the_signature_still_holds<F: FlowFixture>(f: F) {
    f.add_account("acme");
    let flow = builder(&f, memory())
        .state_cookie(None)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let answer = flow.install(&install_request());
    assert!(answer.headers().get(http::header::SET_COOKIE).is_none());
    let authorize = header(&answer, &http::header::LOCATION);
    let back = f
        .approve(&authorize, "acme")
        .unwrap_or_else(|e| panic!("{e}"));
    let forged = back.replace("state=", "state=9");
    let answer = flow.callback(&callback_request(&forged, None)).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let answer = flow.callback(&callback_request(&back, None)).await;
    assert_eq!(answer.status(), StatusCode::OK);
}

/// The builder names what is missing or invalid, and neither the builder's
/// nor the flow's `Debug` shows a secret.
pub async fn the_builder_names_what_is_missing_and_hides_secrets<F: FlowFixture>(f: F) {
    let (id, secret) = f.client();
    let base = || {
        OAuthFlow::builder(f.provider())
            .redirect_uri(REDIRECT)
            .scopes(f.scopes())
            .installations(memory())
    };
    let cases = [
        (
            base()
                .client_secret(secret)
                .state_secret(STATE_SECRET)
                .build(),
            "client_id",
        ),
        (
            base().client_id(id).state_secret(STATE_SECRET).build(),
            "client_secret",
        ),
        (
            base().client_id(id).client_secret(secret).build(),
            "state_secret",
        ),
        (
            base()
                .client_id(id)
                .client_secret(secret)
                .state_secret("short")
                .build(),
            "state_secret",
        ),
        (
            base()
                .client_id(id)
                .client_secret(secret)
                .state_secret(STATE_SECRET)
                .scopes(Vec::<String>::new())
                .build(),
            "scope",
        ),
        (
            OAuthFlow::builder(f.provider())
                .client_id(id)
                .client_secret(secret)
                .state_secret(STATE_SECRET)
                .redirect_uri(REDIRECT)
                .scopes(f.scopes())
                .build(),
            "store",
        ),
        (
            base()
                .client_id(id)
                .client_secret(secret)
                .state_secret(STATE_SECRET)
                .authorize_url("not a url")
                .build(),
            "authorize_url",
        ),
    ];
    for (built, names) in cases {
        match built {
            Ok(_) => panic!("built without a valid {names}"),
            Err(e) => assert!(e.to_string().contains(names), "{e} should name {names}"),
        }
    }
    let b = builder(&f, memory());
    let shown = format!("{b:?}");
    assert!(
        !shown.contains(secret) && !shown.contains(STATE_SECRET),
        "{shown}"
    );
    let shown = format!("{:?}", flow(&f, memory()));
    assert!(
        !shown.contains(secret) && !shown.contains(STATE_SECRET),
        "{shown}"
    );
}

/// Tokens about to expire are refreshed once, through the provider, and the
/// result stored; a token far from expiry is used as it is. A platform
/// whose tokens do not expire says so (`RefreshUnsupported`).
pub async fn tokens_are_refreshed_once_before_they_expire<F: FlowFixture>(f: F) {
    let store = memory();
    let tenant = f.add_account("acme");
    if f.refreshes() {
        f.set_token_lifetime(Duration::from_secs(60));
    }
    let flow = builder(&f, Arc::clone(&store))
        .refresh_margin(Duration::from_secs(30))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let s = start(&f, &flow, "acme");
    let answer = flow
        .callback(&callback_request(&s.back, Some(&s.cookie)))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let first = stored(&f, store.as_ref(), &tenant)
        .await
        .unwrap_or_else(|| panic!("not stored"));
    let now = chat_core::clock::millis(SystemTime::now());
    let fresh = flow.fresh_installation(&tenant, now).await;
    let fresh = fresh
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("gone"));
    assert_eq!(
        fresh.access_token, first.access_token,
        "refreshed too early"
    );
    if !f.refreshes() {
        let r = flow.refresh(&first).await;
        assert!(matches!(r, Err(OAuthError::RefreshUnsupported)), "{r:?}");
        return;
    }
    f.set_token_lifetime(Duration::from_secs(3600));
    let requests = f.token_requests();
    // 45 s later the token is within the 30 s margin: refreshed, once, even
    // by callers at the same time.
    let later = now + 45_000;
    let (a, b) = tokio::join!(
        flow.fresh_installation(&tenant, later),
        flow.fresh_installation(&tenant, later)
    );
    let (a, b) = (
        a.unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("gone")),
        b.unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("gone")),
    );
    assert_ne!(a.access_token, first.access_token);
    assert_eq!(a.access_token, b.access_token);
    assert_eq!(f.token_requests(), requests + 1);
    let kept = stored(&f, store.as_ref(), &tenant)
        .await
        .unwrap_or_else(|| panic!("gone"));
    assert_eq!(kept.access_token, a.access_token);
    assert!(kept.expires_at_ms > first.expires_at_ms);
}

/// Emits one `#[tokio::test]` per case of the install-flow suite, each with
/// the fixture `$make` (an `async` block) makes.
#[macro_export]
macro_rules! install_flow_conformance {
    ($make:expr) => {
        $crate::__install_flow_tests!($make ;
            install_redirects_with_a_browser_bound_state,
            an_approved_install_is_stored_under_its_tenant,
            a_success_url_receives_the_browser,
            a_tampered_state_is_refused,
            a_state_from_another_browser_is_refused,
            an_expired_state_is_refused,
            a_declined_install_and_a_missing_code_are_refused,
            a_state_works_once,
            the_state_is_checked_before_the_error,
            a_store_failure_answers_503,
            without_browser_binding_the_signature_still_holds,
            the_builder_names_what_is_missing_and_hides_secrets,
            tokens_are_refreshed_once_before_they_expire,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __install_flow_tests {
    ($make:expr ; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::install_flow::$case($make.await).await;
            }
        )*
    };
}
