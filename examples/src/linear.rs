//! The Linear adapter from echo-bot's settings.

use std::sync::Arc;

use chat_core::PlatformAdapter;
use chat_runtime::BoxError;

use crate::config::Args;

/// The Linear adapter, or `None` (and a log line saying why) when
/// `LINEAR_WEBHOOK_SECRET` is not set.
pub fn adapter(args: &Args) -> Result<Option<Arc<dyn PlatformAdapter>>, BoxError> {
    let Some(secret) = &args.linear_webhook_secret else {
        tracing::warn!("Linear is not mounted: LINEAR_WEBHOOK_SECRET is not set");
        return Ok(None);
    };
    let mut b = chat_linear::LinearAdapter::builder().signing_secret(secret);
    match (&args.linear_access_token, &args.linear_api_key) {
        (Some(token), _) => b = b.access_token(token),
        (None, Some(key)) => b = b.api_key(key),
        (None, None) => {
            tracing::warn!("Linear is not mounted: set LINEAR_API_KEY or LINEAR_ACCESS_TOKEN");
            return Ok(None);
        }
    }
    if let Some(id) = &args.linear_app_user_id {
        b = b.app_user_id(id);
    }
    if let Some(url) = &args.linear_api_url {
        b = b.endpoint(url);
    }
    Ok(Some(Arc::new(b.build()?)))
}
