//! The outbound HTTP layer every chat-rs platform adapter sends through, so
//! that each gets the same rules without writing them again:
//!
//! * [`Transport`]: one pooled HTTP/1.1 client over rustls per adapter (and
//!   its clones), `https` through an HTTP proxy's `CONNECT` tunnel from
//!   `HTTPS_PROXY` / `ALL_PROXY` or a configured [`Proxy`];
//! * answers capped at [`MAX_ANSWER_BYTES`], read whole within a per-request
//!   timeout;
//! * at most [`HttpOptions::max_in_flight`] requests in flight per client
//!   ([`DEFAULT_MAX_IN_FLIGHT`]): more wait their turn within their timeout,
//!   and the connections opened stay as few;
//! * redirects never followed: a 3xx reaches the adapter as an answer, never
//!   a request to another origin with the platform's token;
//! * [`call`]: a deadline-bounded retry loop around a [`RetryPolicy`] — the
//!   adapter says what an answer means (done, or rate limited: wait this
//!   long), the loop waits, counts and gives up the same way for every
//!   platform ([`AdapterError::RateLimited`](chat_core::AdapterError::RateLimited),
//!   [`AdapterError::DeadlineExceeded`](chat_core::AdapterError::DeadlineExceeded));
//! * [`HttpOptions`]: the one options struct (retries, retry budget, request
//!   timeout, proxy, requests in flight) every adapter builder takes with
//!   `.http(options)`.
//!
//! ```no_run
//! use bytes::Bytes;
//! use chat_core::AdapterError;
//! use chat_http::{Answer, Attempt, HttpOptions, RetryPolicy};
//!
//! /// A platform that answers 429 with `Retry-After`, and JSON otherwise.
//! struct Json;
//!
//! impl RetryPolicy for Json {
//!     type Output = Bytes;
//!
//!     fn classify(&self, answer: Answer, retries: u32) -> Attempt<Bytes> {
//!         if answer.status == http::StatusCode::TOO_MANY_REQUESTS {
//!             let wait = chat_http::retry_after(&answer);
//!             return Attempt::RetryAfter(wait.unwrap_or_else(|| chat_http::backoff(retries)));
//!         }
//!         if !answer.status.is_success() {
//!             return Attempt::Done(Err(AdapterError::Status(answer.status)));
//!         }
//!         Attempt::Done(Ok(answer.body))
//!     }
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let options = HttpOptions::default();
//! let transport = options.transport("my-adapter")?;
//! let request = http::Request::post("https://api.example.com/v1/post")
//!     .header("content-type", "application/json")
//!     .body(Bytes::from_static(br#"{"text":"hi"}"#))?;
//! let body = chat_http::call(&transport, &options, None, &request, &Json).await?;
//! # let _ = body; Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod auth;
mod error;
mod options;
mod retry;
mod transport;

pub use auth::{bearer, is_base_url};
pub use error::{BuildError, TransportError};
pub use options::HttpOptions;
pub use retry::{Attempt, RetryPolicy, backoff, call, parse_seconds, retry_after, seconds};
pub use transport::{
    Answer, DEFAULT_MAX_IN_FLIGHT, MAX_ANSWER_BYTES, MAX_REDIRECTS, Proxy, Transport, same_origin,
};
