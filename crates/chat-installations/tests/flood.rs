//! A flood of install links and callbacks: the flow answers it without
//! sending the platform more code exchanges than its rate allows, and its
//! store of spent states stays bounded.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use chat_core::{Installation, Platform, Secret};
use chat_installations::MemoryInstallations;
use chat_installations::oauth::{
    DEFAULT_EXCHANGE_LIMIT, OAuthClient, OAuthError, OAuthFlow, OAuthProvider, ProviderDefaults,
    RateLimit,
};
use http::StatusCode;

const TOY: Platform = Platform::new("toy");

/// A token endpoint that counts the exchanges it is sent.
#[derive(Debug, Default)]
struct Counting {
    exchanges: AtomicUsize,
}

#[async_trait]
impl OAuthProvider for Counting {
    fn platform(&self) -> Platform {
        TOY
    }
    fn defaults(&self) -> ProviderDefaults {
        ProviderDefaults::new("https://toy.example/authorize", "toy_oauth").scopes(&["read"])
    }
    async fn exchange(
        &self,
        _: &OAuthClient,
        code: &str,
        now_ms: u64,
    ) -> Result<Installation, OAuthError> {
        self.exchanges.fetch_add(1, Ordering::SeqCst);
        Ok(Installation::new(TOY, code, Secret::new("xoxb")).with_installed_at_ms(now_ms))
    }
}

/// A wall clock the test moves.
#[derive(Clone, Default)]
struct Manual(Arc<AtomicU64>);

impl Manual {
    fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + self.0.load(Ordering::SeqCst))
    }
}

fn flow(clock: &Manual) -> OAuthFlow<Counting> {
    let clock = clock.clone();
    OAuthFlow::builder(Counting::default())
        .client_id("client-1")
        .client_secret("client-secret")
        .state_secret("a-state-secret-of-32-bytes-long!")
        .state_cookie(None)
        .installations(Arc::new(MemoryInstallations::new()))
        .clock(move || clock.now())
        .build()
        .unwrap()
}

/// A request from `client`, as `chat_runtime::server` hands it on.
fn from(client: IpAddr, uri: &str) -> http::request::Parts {
    let mut parts = http::Request::get(uri).body(()).unwrap().into_parts().0;
    parts.extensions.insert(SocketAddr::new(client, 40_000));
    parts
}

fn state_of(url: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap()
}

/// 100,000 callbacks, each with a valid state of its own, from 100,000
/// addresses (no per-client limit holds them), over 100 s: the platform is
/// sent at most the exchange limit's burst plus one a second; every other
/// callback is answered 429 with its state left unspent, so the user can
/// retry it.
#[tokio::test]
async fn a_flood_of_valid_callbacks_sends_a_bounded_number_of_exchanges() {
    let clock = Manual::default();
    let flow = flow(&clock);
    let mut answers = std::collections::HashMap::<StatusCode, usize>::new();
    let mut refused_state = None;
    for i in 0..100_000u32 {
        let (url, _) = flow.authorize().unwrap();
        let state = state_of(&url);
        let client = IpAddr::from((i + 1).to_be_bytes());
        let callback = format!("/callback?code=c{i}&state={state}");
        let answer = flow.callback(&from(client, &callback)).await;
        *answers.entry(answer.status()).or_default() += 1;
        if answer.status() == StatusCode::TOO_MANY_REQUESTS {
            assert!(answer.headers().contains_key(http::header::RETRY_AFTER));
            refused_state.get_or_insert(callback);
        }
        clock.advance(1);
    }
    let sent = flow.provider().exchanges.load(Ordering::SeqCst);
    let bound = DEFAULT_EXCHANGE_LIMIT.burst as usize + 100 + 1;
    assert!(
        sent <= bound,
        "{sent} exchanges sent, above {bound}: {answers:?}"
    );
    assert_eq!(answers.get(&StatusCode::OK).copied(), Some(sent));
    assert_eq!(answers[&StatusCode::TOO_MANY_REQUESTS], 100_000 - sent);
    // A callback turned away kept its state: once the rate allows, it
    // installs.
    clock.advance(2_000);
    let retry = refused_state.unwrap();
    let answer = flow
        .callback(&from(IpAddr::from([10, 0, 0, 1]), &retry))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
}

/// One client fetching install links and coming back to the callback over
/// and over is held to its own limits, while another client installs.
#[tokio::test]
async fn one_client_is_held_to_its_limits_and_others_are_not() {
    let clock = Manual::default();
    let flow = flow(&clock);
    let (hot, other): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
    let links: Vec<StatusCode> = (0..25)
        .map(|_| flow.install(&from(hot, "/install")).status())
        .collect();
    assert_eq!(
        links.iter().filter(|s| **s == StatusCode::FOUND).count(),
        20
    );
    assert_eq!(
        links
            .iter()
            .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
            .count(),
        5
    );
    assert_eq!(
        flow.install(&from(other, "/install")).status(),
        StatusCode::FOUND
    );
    // Forged callbacks from the hot client use up its callback limit only.
    for _ in 0..10 {
        let answer = flow
            .callback(&from(hot, "/callback?code=x&state=forged"))
            .await;
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    }
    let (url, _) = flow.authorize().unwrap();
    let callback = format!("/callback?code=c&state={}", state_of(&url));
    assert_eq!(
        flow.callback(&from(hot, &callback)).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        flow.callback(&from(other, &callback)).await.status(),
        StatusCode::OK
    );
    assert_eq!(flow.provider().exchanges.load(Ordering::SeqCst), 1);
}

/// The limits are settings: `None` turns one off.
#[tokio::test]
async fn limits_can_be_set_and_turned_off() {
    let clock = Manual::default();
    let c = clock.clone();
    let flow = OAuthFlow::builder(Counting::default())
        .client_id("client-1")
        .client_secret("client-secret")
        .state_secret("a-state-secret-of-32-bytes-long!")
        .state_cookie(None)
        .installations(Arc::new(MemoryInstallations::new()))
        .clock(move || c.now())
        .install_limit(Some(RateLimit::new(1, Duration::from_secs(60))))
        .callback_limit(None)
        .exchange_limit(None)
        .build()
        .unwrap();
    let client = IpAddr::from([192, 0, 2, 9]);
    assert_eq!(flow.install(&from(client, "/")).status(), StatusCode::FOUND);
    assert_eq!(
        flow.install(&from(client, "/")).status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    for i in 0..100 {
        let (url, _) = flow.authorize().unwrap();
        let callback = format!("/callback?code=c{i}&state={}", state_of(&url));
        assert_eq!(
            flow.callback(&from(client, &callback)).await.status(),
            StatusCode::OK
        );
    }
}
