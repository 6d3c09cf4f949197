//! The WhatsApp adapter from echo-bot's settings.

use std::sync::Arc;

use chat_core::PlatformAdapter;
use chat_runtime::BoxError;

use crate::config::Args;

/// The WhatsApp adapter, or `None` (and a log line saying why) when
/// `WHATSAPP_APP_SECRET` is not set.
///
/// # Errors
/// An app secret without the verify token, access token or phone number
/// id; a malformed setting.
pub fn adapter(args: &Args) -> Result<Option<Arc<dyn PlatformAdapter>>, BoxError> {
    let Some(secret) = &args.whatsapp_app_secret else {
        tracing::warn!("WhatsApp is not mounted: WHATSAPP_APP_SECRET is not set");
        return Ok(None);
    };
    let (Some(verify), Some(token), Some(phone)) = (
        &args.whatsapp_verify_token,
        &args.whatsapp_access_token,
        &args.whatsapp_phone_number_id,
    ) else {
        return Err("WHATSAPP_APP_SECRET needs WHATSAPP_VERIFY_TOKEN, WHATSAPP_ACCESS_TOKEN and WHATSAPP_PHONE_NUMBER_ID".into());
    };
    let mut b = chat_whatsapp::WhatsAppAdapter::builder()
        .app_secret(secret)
        .verify_token(verify)
        .access_token(token)
        .phone_number_id(phone);
    if let Some(url) = &args.whatsapp_api_url {
        b = b.api_url(url);
    }
    Ok(Some(Arc::new(b.build()?)))
}
