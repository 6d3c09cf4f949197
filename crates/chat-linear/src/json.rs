//! JSON decoding errors of inbound payloads, named without quoting them.

use chat_core::WebhookError;

/// A [`WebhookError::Malformed`] naming where parsing failed, without quoting
/// the payload.
pub(crate) fn malformed(what: &str, e: &serde_json::Error) -> WebhookError {
    let category = match e.classify() {
        serde_json::error::Category::Io => "io",
        serde_json::error::Category::Syntax => "syntax",
        serde_json::error::Category::Data => "data",
        serde_json::error::Category::Eof => "eof",
    };
    WebhookError::Malformed(format!(
        "{what}: {category} error at line {} column {}",
        e.line(),
        e.column()
    ))
}

/// Refuses a body that is not a JSON object (serde would read a struct from an
/// array too).
pub(crate) fn ensure_object(body: &[u8]) -> Result<(), WebhookError> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Ok(()),
        _ => Err(WebhookError::Malformed(
            "body: not a JSON object".to_owned(),
        )),
    }
}
