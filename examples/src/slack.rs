//! The Slack adapter from echo-bot's settings: one bot token, or installation
//! mode with the OAuth install flow.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::request::Parts;
use axum::routing::get;
use chat_core::{InstallationStore, KvStore};
use chat_installations::{KeyRing, KvInstallations};
use chat_runtime::BoxError;
use chat_slack::{SlackAdapter, SlackOAuth, SlackOAuthProvider};

use crate::config::Args;

/// The install route.
pub const INSTALL_PATH: &str = "/slack/install";
/// The OAuth callback route.
pub const CALLBACK_PATH: &str = "/slack/oauth/callback";

/// Slack as the settings describe it.
#[derive(Debug)]
pub struct Slack {
    /// The adapter.
    pub adapter: SlackAdapter,
    /// In installation mode with a client id and secret: the install flow,
    /// to mount with [`oauth_routes`].
    pub oauth: Option<Arc<SlackOAuth>>,
}

/// The Slack adapter, or `None` (and a log line saying why) when
/// `SLACK_SIGNING_SECRET` is not set, or `SLACK_BOT_TOKEN` outside
/// installation mode. In installation mode (`--installations`) the
/// installations are kept with [`KvInstallations`] on `kv` under
/// `INSTALLATION_KEYS`; an `Err` names a missing or invalid setting.
pub fn adapter(args: &Args, kv: &Arc<dyn KvStore>) -> Result<Option<Slack>, BoxError> {
    let Some(secret) = &args.slack_signing_secret else {
        tracing::warn!("Slack is not mounted: SLACK_SIGNING_SECRET is not set");
        return Ok(None);
    };
    let mut b = SlackAdapter::builder().signing_secret(secret);
    if let Some(url) = &args.slack_api_url {
        b = b.api_base_url(url);
    }
    if !args.installations {
        if args.slack_client_id.is_some() || args.slack_client_secret.is_some() {
            return Err(
                "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET mount the install flow of installation mode: set ECHO_INSTALLATIONS=true (--installations)"
                    .into(),
            );
        }
        let Some(token) = &args.slack_bot_token else {
            tracing::warn!(
                "Slack is not mounted: SLACK_BOT_TOKEN is not set (or use --installations)"
            );
            return Ok(None);
        };
        b = b.bot_token(token);
        if let Some(id) = &args.slack_bot_user_id {
            b = b.bot_user_id(id);
        }
        return Ok(Some(Slack {
            adapter: b.build()?,
            oauth: None,
        }));
    }

    let spec = args.installation_keys.as_deref().ok_or(
        "installation mode needs INSTALLATION_KEYS (--installation-keys): comma-separated `id:<64 hex>` keys, the current one first; make one with `openssl rand -hex 32`",
    )?;
    let keys = KeyRing::parse(spec).map_err(|e| format!("INSTALLATION_KEYS: {e}"))?;
    if args.slack_bot_token.is_some() {
        tracing::warn!("installation mode: SLACK_BOT_TOKEN is not used");
    }
    if args.slack_bot_user_id.is_some() {
        tracing::warn!("installation mode: SLACK_BOT_USER_ID is not used");
    }
    let store: Arc<dyn InstallationStore> = Arc::new(KvInstallations::new(Arc::clone(kv), keys));
    let adapter = b.installations(Arc::clone(&store)).build()?;
    let oauth = match (&args.slack_client_id, &args.slack_client_secret) {
        (Some(id), Some(client_secret)) => {
            Some(Arc::new(oauth(args, id, client_secret, store, kv)?))
        }
        (None, None) => {
            tracing::warn!(
                "installation mode without the install flow: set SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_STATE_SECRET to mount {INSTALL_PATH}"
            );
            None
        }
        (Some(_), None) => {
            return Err("SLACK_CLIENT_ID is set but SLACK_CLIENT_SECRET is not".into());
        }
        (None, Some(_)) => {
            return Err("SLACK_CLIENT_SECRET is set but SLACK_CLIENT_ID is not".into());
        }
    };
    Ok(Some(Slack { adapter, oauth }))
}

fn oauth(
    args: &Args,
    client_id: &str,
    client_secret: &str,
    store: Arc<dyn InstallationStore>,
    kv: &Arc<dyn KvStore>,
) -> Result<SlackOAuth, BoxError> {
    let state_secret = args.slack_state_secret.as_deref().ok_or(
        "the install flow needs SLACK_STATE_SECRET (--slack-state-secret), at least 16 bytes, e.g. `openssl rand -hex 32`",
    )?;
    let base = args.slack_oauth_url.trim_end_matches('/');
    let provider = SlackOAuthProvider::builder()
        .api_base_url(format!("{base}/api"))
        .build()?;
    let mut b = SlackOAuth::builder(provider)
        .client_id(client_id)
        .client_secret(client_secret)
        .state_secret(state_secret)
        .scopes(
            args.slack_scopes
                .iter()
                .map(|s| s.trim())
                .filter(|s| !s.is_empty()),
        )
        .authorize_url(format!("{base}/oauth/v2/authorize"))
        .installations(store)
        .spent_states(Arc::clone(kv));
    if let Some(uri) = &args.slack_redirect_uri {
        b = b.redirect_uri(uri);
    }
    Ok(b.build()?)
}

/// `GET /slack/install` and `GET /slack/oauth/callback` on `oauth`.
pub fn oauth_routes<S>(oauth: &Arc<SlackOAuth>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let install = Arc::clone(oauth);
    let callback = Arc::clone(oauth);
    Router::new()
        .route(
            INSTALL_PATH,
            get(move |parts: Parts| {
                let oauth = Arc::clone(&install);
                async move { oauth.install(&parts).map(Body::from) }
            }),
        )
        .route(
            CALLBACK_PATH,
            get(move |parts: Parts| {
                let oauth = Arc::clone(&callback);
                async move { oauth.callback(&parts).await.map(Body::from) }
            }),
        )
}
