//! The Linear adapter from echo-bot's settings (mounted once the Linear crate is
//! in the workspace's examples).

use std::sync::Arc;

use chat_core::PlatformAdapter;
use chat_runtime::BoxError;

use crate::config::Args;

/// The Linear adapter, or `None` when `LINEAR_WEBHOOK_SECRET` is not set.
pub fn adapter(args: &Args) -> Result<Option<Arc<dyn PlatformAdapter>>, BoxError> {
    if args.linear_webhook_secret.is_none() {
        tracing::warn!("Linear is not mounted: LINEAR_WEBHOOK_SECRET is not set");
        return Ok(None);
    }
    Err("the Linear adapter is not available in this build".into())
}
