//! The GitHub adapter from echo-bot's settings.

use std::sync::Arc;

use chat_core::PlatformAdapter;
use chat_runtime::BoxError;

use crate::config::Args;

/// The GitHub adapter, or `None` (and a log line saying why) when
/// `GITHUB_WEBHOOK_SECRET` is not set.
///
/// # Errors
/// A webhook secret without credentials (an App's id, key and slug, or a
/// token and its login); a key that does not read.
pub fn adapter(args: &Args) -> Result<Option<Arc<dyn PlatformAdapter>>, BoxError> {
    let Some(secret) = &args.github_webhook_secret else {
        tracing::warn!("GitHub is not mounted: GITHUB_WEBHOOK_SECRET is not set");
        return Ok(None);
    };
    let mut b = chat_github::GitHubAdapter::builder().webhook_secret(secret);
    match (&args.github_app_id, &args.github_token) {
        (Some(id), None) => {
            let (Some(key), Some(slug)) = (&args.github_private_key, &args.github_app_slug) else {
                return Err("GITHUB_APP_ID needs GITHUB_PRIVATE_KEY and GITHUB_APP_SLUG".into());
            };
            b = b.app(id, private_key(key)?).app_slug(slug);
        }
        (None, Some(token)) => {
            let Some(login) = &args.github_login else {
                return Err("GITHUB_TOKEN needs GITHUB_LOGIN (the token user's login)".into());
            };
            b = b.token(token).login(login);
        }
        _ => {
            return Err(
                "GITHUB_WEBHOOK_SECRET needs either GITHUB_APP_ID (an App) or GITHUB_TOKEN, not both"
                    .into(),
            );
        }
    }
    if let Some(url) = &args.github_api_url {
        b = b.api_url(url);
    }
    Ok(Some(Arc::new(b.build()?)))
}

/// The PEM itself, or the contents of the file it names.
fn private_key(value: &str) -> Result<String, BoxError> {
    if value.contains("-----BEGIN") {
        return Ok(value.to_owned());
    }
    std::fs::read_to_string(value)
        .map_err(|e| format!("GITHUB_PRIVATE_KEY is neither a PEM nor a readable file: {e}").into())
}
