//! The installation-mode conformance suite: a platform adapter serving many
//! tenants from an [`InstallationStore`], each installed through the
//! platform's OAuth flow, driven with signed deliveries through a bot.
//!
//! The rules every platform keeps, whatever its events look like:
//!
//! * each tenant's installation is stored sealed (no token readable in the
//!   state backend) and its events are answered with its own token;
//! * an event of a tenant that never installed is acknowledged and ignored;
//! * an installation store that cannot answer fails the delivery (a 5xx) so
//!   the platform retries, and nothing was marked: the retry runs;
//! * an uninstall (Slack's `app_uninstalled`, Linear's revoked app) deletes
//!   the installation and, in the background, the tenant's subscriptions;
//!   later events of that tenant are ignored; a store that cannot delete
//!   fails the uninstall so it is retried;
//! * a message the installation's own bot user wrote is ignored;
//! * an adapter cannot be built with both a static credential and
//!   installations, nor with neither.
//!
//! A platform crate implements [`InstallModeFixture`] in its tests (its
//! adapter in installation mode, its fake OAuth server and API, a bot whose
//! handler answers a mention by posting a text that names the tenant) and
//! runs every case with
//! [`install_mode_conformance!`](crate::install_mode_conformance), which
//! emits one `#[tokio::test]` per case:
//!
//! ```text
//! chat_testkit::install_mode_conformance!(world());
//! ```
//!
//! A platform whose tokens are provisioned, not installed through OAuth
//! (Telegram, WhatsApp), runs the cases that apply with
//! [`token_store_conformance!`](crate::token_store_conformance): its
//! fixture's `install` puts the installation in the store.
//!
//! Each case is a public `async fn(F)` named for the rule it checks.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chat_core::{InstallationStore, Platform, StateBackend, TenantId, ThreadRef};
use http::StatusCode;

use crate::FlakyInstallations;

/// The outcome name and reason of a tenant that never installed.
pub const UNKNOWN_INSTALLATION: (&str, &str) = ("message-ignored", "unknown-installation");
/// The outcome name and reason of a delivery whose installation could not be
/// read.
pub const RESOLVE_FAILED: (&str, &str) = ("message-rejected", "resolve-failed");
/// The outcome name and reason of the installation's own message.
pub const OWN_MESSAGE: (&str, &str) = ("message-ignored", "own-message");

/// How long a case waits for the bot to finish.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// One answer the platform's fake API received from the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// What was posted.
    pub text: String,
    /// The `Authorization` header it was sent with.
    pub authorization: Option<String>,
}

/// A platform's side of the suite: its adapter in installation mode inside a
/// bot, its fake OAuth server (whose accounts approve installs) and its fake
/// API.
///
/// Accounts are named by the tenant id their installation is stored under.
/// The bot's handler answers [`deliver_mention`](Self::deliver_mention) by
/// posting one text that contains the tenant id.
#[async_trait]
pub trait InstallModeFixture: Send + Sync + 'static {
    /// The platform.
    fn platform(&self) -> Platform;

    /// Two accounts that approve installs, and a third the fake does not
    /// know (it never installs).
    fn accounts(&self) -> [&'static str; 3];

    /// Installs the app in `account` through the platform's OAuth flow (the
    /// install route, the fake's approval, the callback); the callback's
    /// status.
    async fn install(&self, account: &str) -> StatusCode;

    /// The store the adapter reads installations from, which can be taken
    /// down.
    fn installations(&self) -> &FlakyInstallations;

    /// The installation record of `tenant` as the state backend holds it.
    async fn stored_bytes(&self, tenant: &TenantId) -> Option<Vec<u8>>;

    /// The secrets `account`'s install was given (its access token, its
    /// refresh token): none may be readable in [`stored_bytes`](Self::stored_bytes).
    fn secrets(&self, account: &str) -> Vec<String>;

    /// The `Authorization` header the platform's API must see on calls made
    /// for `account`.
    fn authorization(&self, account: &str) -> String;

    /// Delivers, signed, an event of `account` that the bot answers (a
    /// mention, an agent session): in the same conversation id for every
    /// account; `id` is the delivery's identity (a retry reuses it).
    async fn deliver_mention(&self, account: &str, id: &str) -> StatusCode;

    /// Delivers, signed, a message written by `account`'s installed bot user
    /// that mentions or follows up with the bot (so only the installation's
    /// identity tells it is the bot's own).
    async fn deliver_own_message(&self, account: &str, id: &str) -> StatusCode;

    /// Delivers, signed, the platform's uninstall of the app from `account`.
    async fn deliver_uninstall(&self, account: &str, id: &str) -> StatusCode;

    /// Waits, up to [`PATIENCE`], for the bot to finish all work.
    async fn idle(&self) -> bool;

    /// The bot's answers the fake API accepted, in order.
    fn answers(&self) -> Vec<Answer>;

    /// How many calls the fake API received.
    fn api_calls(&self) -> usize;

    /// Every outcome the bot recorded: its name and reason.
    fn outcomes(&self) -> Vec<(&'static str, &'static str)>;

    /// The bot's state backend.
    fn state(&self) -> Arc<dyn StateBackend>;

    /// A conversation in `tenant`.
    fn thread(&self, tenant: &str) -> ThreadRef;

    /// Builds the adapter with both a static credential and an installation
    /// store.
    fn build_with_credential_and_installations(&self) -> Result<(), String>;

    /// Builds the adapter with neither a static credential nor an
    /// installation store.
    fn build_without_credentials(&self) -> Result<(), String>;
}

async fn installed<F: InstallModeFixture>(f: &F, account: &str) {
    assert_eq!(
        f.install(account).await,
        StatusCode::OK,
        "installing {account}"
    );
}

async fn stored<F: InstallModeFixture>(f: &F, account: &str) -> bool {
    match f
        .installations()
        .get(f.platform(), &TenantId::new(account))
        .await
    {
        Ok(found) => found.is_some(),
        Err(e) => panic!("the store is up: {e}"),
    }
}

/// Each tenant installs, is stored sealed, and the same conversation id in
/// both is answered with each one's own token.
pub async fn each_tenant_installs_sealed_and_is_answered_with_its_own_token<
    F: InstallModeFixture,
>(
    f: F,
) {
    let [a, b, _] = f.accounts();
    for account in [a, b] {
        installed(&f, account).await;
    }
    for account in [a, b] {
        let tenant = TenantId::new(account);
        let installation = match f.installations().get(f.platform(), &tenant).await {
            Ok(Some(i)) => i,
            other => panic!("{account} is installed: {other:?}"),
        };
        assert_eq!(installation.tenant, tenant);
        let bytes = f
            .stored_bytes(&tenant)
            .await
            .unwrap_or_else(|| panic!("{account}'s record is in the state backend"));
        let text = String::from_utf8_lossy(&bytes);
        let secrets = f.secrets(account);
        assert!(!secrets.is_empty(), "{account}'s install was given a token");
        for secret in secrets {
            assert!(!text.contains(&secret), "the token is sealed: {text}");
        }
    }

    for account in [a, b] {
        let status = f
            .deliver_mention(account, &format!("mention-{account}"))
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    assert!(f.idle().await);
    let answers = f.answers();
    assert_eq!(answers.len(), 2, "{answers:?} {:?}", f.outcomes());
    for account in [a, b] {
        let mine: Vec<_> = answers
            .iter()
            .filter(|x| x.text.contains(account))
            .collect();
        assert_eq!(mine.len(), 1, "one answer for {account}: {answers:?}");
        assert_eq!(
            mine[0].authorization.as_deref(),
            Some(f.authorization(account).as_str()),
            "{account} is answered with its own token"
        );
    }
}

/// An event of a tenant that never installed is acknowledged, ignored, and
/// costs no API call.
pub async fn an_unknown_tenant_is_acknowledged_and_ignored<F: InstallModeFixture>(f: F) {
    let [a, _, unknown] = f.accounts();
    installed(&f, a).await;
    let status = f.deliver_mention(unknown, "mention-unknown").await;
    assert_eq!(status, StatusCode::OK);
    assert!(f.idle().await);
    assert_eq!(f.api_calls(), 0);
    assert_eq!(f.outcomes(), [UNKNOWN_INSTALLATION]);
}

/// A store that cannot answer fails the delivery with a 5xx; nothing was
/// marked, so the platform's retry runs once the store is back.
pub async fn a_store_failure_answers_500_and_the_retry_runs<F: InstallModeFixture>(f: F) {
    let [a, _, _] = f.accounts();
    installed(&f, a).await;
    f.installations().set_down(true);
    let status = f.deliver_mention(a, "mention-down").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(f.outcomes(), [RESOLVE_FAILED]);

    f.installations().set_down(false);
    let retry = f.deliver_mention(a, "mention-down").await;
    assert_eq!(retry, StatusCode::OK);
    assert!(f.idle().await);
    assert_eq!(f.answers().len(), 1, "{:?}", f.outcomes());
}

/// An uninstall deletes the tenant's installation (a retry of it is
/// harmless) and its subscriptions, leaves other tenants alone, and later
/// events of the tenant are ignored; a store that cannot delete fails the
/// uninstall so it is retried.
pub async fn an_uninstall_deletes_the_installation_and_its_subscriptions<F: InstallModeFixture>(
    f: F,
) {
    let [a, b, unknown] = f.accounts();
    installed(&f, a).await;
    installed(&f, b).await;
    let state = f.state();
    for tenant in [a, b, unknown] {
        if let Err(e) = state
            .subscribe(&f.thread(tenant), Duration::from_secs(3600))
            .await
        {
            panic!("subscribe: {e}");
        }
    }
    let subscribed = |tenant: &str| {
        let state = Arc::clone(&state);
        let thread = f.thread(tenant);
        async move {
            state
                .is_subscribed(&thread)
                .await
                .unwrap_or_else(|e| panic!("is_subscribed: {e}"))
        }
    };

    assert_eq!(f.deliver_uninstall(b, "uninstall-1").await, StatusCode::OK);
    assert_eq!(
        f.deliver_uninstall(b, "uninstall-1").await,
        StatusCode::OK,
        "the platform's retry of the uninstall is harmless"
    );
    assert!(!stored(&f, b).await);
    assert!(stored(&f, a).await);
    assert!(f.idle().await);
    assert!(!subscribed(b).await, "the tenant's subscriptions go");
    assert!(subscribed(a).await);
    assert!(subscribed(unknown).await);

    assert_eq!(f.deliver_mention(b, "mention-after").await, StatusCode::OK);
    assert!(f.idle().await);
    assert_eq!(f.api_calls(), 0);
    assert_eq!(f.outcomes().last(), Some(&UNKNOWN_INSTALLATION));

    installed(&f, b).await;
    f.installations().set_down(true);
    let status = f.deliver_uninstall(b, "uninstall-2").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    f.installations().set_down(false);
    assert!(stored(&f, b).await, "nothing was deleted");
}

/// A message the installation's own bot user wrote is ignored.
pub async fn the_installations_own_messages_are_ignored<F: InstallModeFixture>(f: F) {
    let [a, _, _] = f.accounts();
    installed(&f, a).await;
    assert_eq!(f.deliver_own_message(a, "own-1").await, StatusCode::OK);
    assert!(f.idle().await);
    assert!(f.answers().is_empty(), "{:?}", f.answers());
    assert_eq!(f.outcomes(), [OWN_MESSAGE]);
}

/// A static credential and installations together, or neither, do not
/// build, and the error says which.
pub async fn the_builder_wants_exactly_one_credential_source<F: InstallModeFixture>(f: F) {
    let Err(both) = f.build_with_credential_and_installations() else {
        panic!("a credential and installations do not build");
    };
    assert!(
        both.contains("installation store"),
        "names the conflict: {both}"
    );
    let Err(neither) = f.build_without_credentials() else {
        panic!("no credential source does not build");
    };
    assert!(
        neither.contains("required"),
        "names what is missing: {neither}"
    );
}

/// Emits one `#[tokio::test]` per case of the installation-mode suite, each
/// with the fixture `$make` (an `async` block) makes.
#[macro_export]
macro_rules! install_mode_conformance {
    ($make:expr) => {
        $crate::__install_mode_tests!($make ;
            each_tenant_installs_sealed_and_is_answered_with_its_own_token,
            an_unknown_tenant_is_acknowledged_and_ignored,
            a_store_failure_answers_500_and_the_retry_runs,
            an_uninstall_deletes_the_installation_and_its_subscriptions,
            the_installations_own_messages_are_ignored,
            the_builder_wants_exactly_one_credential_source,
        );
    };
}

/// Emits one `#[tokio::test]` per case that applies to a platform whose
/// installations are provisioned rather than installed through OAuth
/// (Telegram's bot tokens, WhatsApp's system-user tokens): the fixture's
/// [`install`](InstallModeFixture::install) puts the installation in the
/// store itself, and the platform has neither an uninstall event nor its
/// own messages delivered back, so those two cases are left out.
#[macro_export]
macro_rules! token_store_conformance {
    ($make:expr) => {
        $crate::__install_mode_tests!($make ;
            each_tenant_installs_sealed_and_is_answered_with_its_own_token,
            an_unknown_tenant_is_acknowledged_and_ignored,
            a_store_failure_answers_500_and_the_retry_runs,
            the_builder_wants_exactly_one_credential_source,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __install_mode_tests {
    ($make:expr ; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::install_mode::$case($make.await).await;
            }
        )*
    };
}
