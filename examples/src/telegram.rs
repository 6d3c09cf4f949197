//! The Telegram adapter from echo-bot's settings.

use std::sync::Arc;

use chat_core::PlatformAdapter;
use chat_runtime::BoxError;

use crate::config::Args;

/// The Telegram adapter, or `None` (and a log line saying why) when
/// `TELEGRAM_BOT_TOKEN` is not set.
///
/// # Errors
/// A token without its `TELEGRAM_SECRET_TOKEN`, or a malformed setting.
pub fn adapter(args: &Args) -> Result<Option<Arc<dyn PlatformAdapter>>, BoxError> {
    let Some(token) = &args.telegram_bot_token else {
        tracing::warn!("Telegram is not mounted: TELEGRAM_BOT_TOKEN is not set");
        return Ok(None);
    };
    let Some(secret) = &args.telegram_secret_token else {
        return Err("TELEGRAM_BOT_TOKEN needs TELEGRAM_SECRET_TOKEN, the secret_token its webhook was set with".into());
    };
    let mut b = chat_telegram::TelegramAdapter::builder()
        .bot_token(token)
        .secret_token(secret);
    if let Some(url) = &args.telegram_api_url {
        b = b.api_url(url);
    }
    Ok(Some(Arc::new(b.build()?)))
}
