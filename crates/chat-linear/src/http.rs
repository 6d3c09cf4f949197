//! The outbound HTTP policy of every Linear call (the GraphQL API, the OAuth
//! token endpoint), the same as the Slack Web API's: redirects are not
//! followed (a 3xx is an error: a redirect could carry the token elsewhere),
//! and an answer is read up to [`MAX_ANSWER_BYTES`], no further.

use bytes::{Bytes, BytesMut};
use chat_core::AdapterError;

use crate::error::BuildError;

/// The largest answer read from Linear: 16 MiB. A declared length above it
/// fails before anything is read; a chunked answer fails when it passes it.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The client every Linear call goes through.
pub(crate) fn client() -> Result<reqwest::Client, BuildError> {
    reqwest::Client::builder()
        .user_agent(concat!(
            "chat-rs/",
            env!("CARGO_PKG_VERSION"),
            " (chat-linear)"
        ))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| BuildError::HttpClient(Box::new(e)))
}

/// The answer's body, at most `cap` bytes of it.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Bytes, AdapterError> {
    let too_large = || AdapterError::Transport(format!("an answer over {cap} bytes").into());
    if response
        .content_length()
        .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > cap))
    {
        return Err(too_large());
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| AdapterError::Transport(Box::new(e)))?
    {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
