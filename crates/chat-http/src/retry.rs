//! [`call`]: one outbound call, sent again while its [`RetryPolicy`] says a
//! rate limit asks for it, within the call's deadline.

use std::time::Duration;

use bytes::Bytes;
use chat_core::AdapterError;
use http::Request;
use tokio::time::Instant;

use crate::options::HttpOptions;
use crate::transport::{Answer, Transport};

/// The first wait when a rate limit says nothing about how long to wait.
const BASE_BACKOFF: Duration = Duration::from_secs(1);
/// The longest such wait.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What one answer comes to, as a [`RetryPolicy`] reads it.
#[derive(Debug)]
pub enum Attempt<T> {
    /// The call is done: this is its result.
    Done(Result<T, AdapterError>),
    /// The platform asks to wait this long and send the same request again
    /// (a rate limit).
    RetryAfter(Duration),
}

/// How a call reads its answers — the part of `tower::retry::Policy` an
/// outbound call needs: it sees each attempt's answer and says whether the
/// call is done (with a result of its own type) or must be sent again, after
/// how long. The loop around it ([`call`]) owns the deadline, the retry count
/// and the waiting, the same for every platform.
pub trait RetryPolicy {
    /// What a successful call returns.
    type Output;

    /// Reads the answer to attempt number `retries` (0 for the first).
    fn classify(&self, answer: Answer, retries: u32) -> Attempt<Self::Output>;
}

/// Sends `request` through `transport` and reads each answer with `policy`:
/// a [`RetryAfter`](Attempt::RetryAfter) is waited out and the same request
/// (same body, so the same client-supplied ids) sent again, at most
/// `options.max_retries` times and never past the deadline — `deadline`, or
/// the call's start plus `options.retry_budget`. Each attempt may take
/// `options.request_timeout`, and no longer than the time left.
///
/// # Errors
///
/// * [`AdapterError::DeadlineExceeded`] when the deadline passed, or cut the
///   request off;
/// * [`AdapterError::RateLimited`] when the wait asked for would pass the
///   deadline, or after `max_retries` retries;
/// * [`AdapterError::Transport`] when no answer came for another reason
///   (connect, TLS, an answer over the cap);
/// * whatever the policy makes of an answer.
pub async fn call<P: RetryPolicy>(
    transport: &Transport,
    options: &HttpOptions,
    deadline: Option<Instant>,
    request: &Request<Bytes>,
    policy: &P,
) -> Result<P::Output, AdapterError> {
    let deadline = deadline.unwrap_or_else(|| Instant::now() + options.retry_budget);
    let mut retries = 0u32;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(AdapterError::DeadlineExceeded);
        }
        let answer = transport
            .send(copy(request)?, remaining.min(options.request_timeout))
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(_) if Instant::now() >= deadline => return Err(AdapterError::DeadlineExceeded),
            Err(e) => return Err(AdapterError::Transport(Box::new(e))),
        };
        match policy.classify(answer, retries) {
            Attempt::Done(result) => return result,
            Attempt::RetryAfter(wait) => {
                // A hostile or broken wait must not overflow the clock.
                let outlasts = Instant::now()
                    .checked_add(wait)
                    .is_none_or(|until| until > deadline);
                if retries >= options.max_retries || outlasts {
                    tracing::debug!(host = request.uri().host().unwrap_or_default(), retry_after = ?wait, "rate limited; giving up");
                    return Err(AdapterError::RateLimited { retry_after: wait });
                }
                tracing::debug!(host = request.uri().host().unwrap_or_default(), retry_after = ?wait, "rate limited; waiting");
                tokio::time::sleep(wait).await;
                retries += 1;
            }
        }
    }
}

/// The same request again: method, URI, headers and body (a cheap clone).
fn copy(request: &Request<Bytes>) -> Result<Request<Bytes>, AdapterError> {
    let mut copy = Request::builder()
        .method(request.method().clone())
        .uri(request.uri().clone())
        .version(request.version())
        .body(request.body().clone())
        .map_err(|e| AdapterError::Transport(Box::new(e)))?;
    *copy.headers_mut() = request.headers().clone();
    Ok(copy)
}

/// A number of seconds as a platform writes it in `Retry-After` or a JSON
/// field (`"30"`, `1.5`): `None` for anything else, negative or not finite.
pub fn parse_seconds(s: &str) -> Option<Duration> {
    seconds(s.trim().parse().ok()?)
}

/// `secs` as a duration, if finite and not negative.
pub fn seconds(secs: f64) -> Option<Duration> {
    if secs.is_finite() && secs >= 0.0 {
        Duration::try_from_secs_f64(secs).ok()
    } else {
        None
    }
}

/// The `Retry-After` header of an answer, in seconds (the HTTP-date form is
/// not used by the platforms chat-rs speaks to).
pub fn retry_after(answer: &Answer) -> Option<Duration> {
    answer.header("retry-after").and_then(parse_seconds)
}

/// The wait before retry number `retries + 1` when a rate limit says nothing:
/// 1 s, doubling, at most 30 s.
pub fn backoff(retries: u32) -> Duration {
    BASE_BACKOFF
        .saturating_mul(1u32.checked_shl(retries).unwrap_or(u32::MAX))
        .min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_read_as_platforms_write_them() {
        assert_eq!(parse_seconds(" 30 "), Some(Duration::from_secs(30)));
        assert_eq!(parse_seconds("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_seconds("-1"), None);
        assert_eq!(parse_seconds("NaN"), None);
        assert_eq!(parse_seconds("1e400"), None);
        assert_eq!(parse_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff(0), Duration::from_secs(1));
        assert_eq!(backoff(1), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(16));
        assert_eq!(backoff(5), Duration::from_secs(30));
        assert_eq!(backoff(40), Duration::from_secs(30));
    }
}
