//! The GraphQL transport: one POST per operation, Linear's errors as typed
//! [`AdapterError`]s, and rate limits waited out within a deadline.
//!
//! * A GraphQL error (`errors[]`) is [`AdapterError::Api`] with the error's
//!   `extensions.code` (or `extensions.type`) as the code; the message is not
//!   copied, since it may quote the request.
//! * Rate limits — HTTP 429, or an error whose code is `RATELIMITED` — are
//!   waited out for `Retry-After` seconds, else until
//!   `X-RateLimit-Requests-Reset` (Unix milliseconds), else a doubling backoff
//!   from 1 s, and the request is sent again with the same body (so the same
//!   client-supplied id: a retry cannot create a second activity). When the wait
//!   would pass the call's deadline, or after `max_retries` retries, the call
//!   fails with [`AdapterError::RateLimited`].
//! * Any other non-2xx answer without GraphQL errors is [`AdapterError::Status`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chat_core::{AdapterError, TenantId};
use http::HeaderValue;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::operations::Operation;
use chat_core::Clock;

/// The first wait when a rate limit says nothing about how long to wait.
const BASE_BACKOFF: Duration = Duration::from_secs(1);
/// The longest such wait.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The GraphQL client shared by every clone of the adapter.
pub(crate) struct GraphqlClient {
    pub(crate) http: reqwest::Client,
    pub(crate) endpoint: reqwest::Url,
    pub(crate) default_auth: Option<HeaderValue>,
    pub(crate) organization_auth: HashMap<TenantId, HeaderValue>,
    pub(crate) request_timeout: Duration,
    pub(crate) retry_budget: Duration,
    pub(crate) max_retries: u32,
    pub(crate) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for GraphqlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphqlClient")
            .field("endpoint", &self.endpoint.as_str())
            .field(
                "default_auth",
                &self.default_auth.as_ref().map(|_| "<redacted>"),
            )
            .field("organizations", &self.organization_auth.len())
            .field("request_timeout", &self.request_timeout)
            .field("retry_budget", &self.retry_budget)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    errors: Option<Vec<GraphqlError>>,
}

#[derive(Deserialize)]
struct GraphqlError {
    #[serde(default)]
    extensions: Option<Value>,
}

impl GraphqlError {
    fn code(&self) -> Option<&str> {
        let ext = self.extensions.as_ref()?;
        ext.get("code")
            .and_then(Value::as_str)
            .or_else(|| ext.get("type").and_then(Value::as_str))
    }

    fn is_rate_limit(&self) -> bool {
        self.code()
            .is_some_and(|c| c.eq_ignore_ascii_case("RATELIMITED"))
    }
}

/// What one attempt came to.
enum Attempt {
    Done(Result<Value, AdapterError>),
    RateLimited(Duration),
}

impl GraphqlClient {
    /// The configured credential of `tenant`, else the default one.
    pub(crate) fn configured_auth(&self, tenant: Option<&TenantId>) -> Option<&HeaderValue> {
        tenant
            .and_then(|t| self.organization_auth.get(t))
            .or(self.default_auth.as_ref())
    }

    /// Sends `op` with the `Authorization` value `auth` and returns
    /// `data.<field>`.
    pub(crate) async fn execute(
        &self,
        auth: &HeaderValue,
        deadline: Option<Instant>,
        op: &Operation,
    ) -> Result<Value, AdapterError> {
        let deadline = deadline.unwrap_or_else(|| Instant::now() + self.retry_budget);
        let body = serde_json::to_vec(&op.body()).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        let mut retries = 0u32;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(AdapterError::DeadlineExceeded);
            }
            match self
                .attempt(
                    auth,
                    &body,
                    op,
                    remaining.min(self.request_timeout),
                    retries,
                )
                .await
            {
                // A request cut off by the call's deadline.
                Attempt::Done(Err(AdapterError::Transport(_))) if Instant::now() >= deadline => {
                    return Err(AdapterError::DeadlineExceeded);
                }
                Attempt::Done(result) => return result,
                Attempt::RateLimited(wait) => {
                    // A hostile or broken wait must not overflow the clock.
                    let outlasts = Instant::now()
                        .checked_add(wait)
                        .is_none_or(|until| until > deadline);
                    if retries >= self.max_retries || outlasts {
                        tracing::info!(operation = op.name, retry_after = ?wait, "linear rate limit outlasts the deadline");
                        return Err(AdapterError::RateLimited { retry_after: wait });
                    }
                    tracing::debug!(operation = op.name, retry_after = ?wait, "linear rate limited; waiting");
                    tokio::time::sleep(wait).await;
                    retries += 1;
                }
            }
        }
    }

    async fn attempt(
        &self,
        auth: &HeaderValue,
        body: &[u8],
        op: &Operation,
        timeout: Duration,
        retries: u32,
    ) -> Attempt {
        let sent = self
            .http
            .post(self.endpoint.clone())
            .header(http::header::AUTHORIZATION, auth.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .timeout(timeout)
            .body(body.to_vec())
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => return Attempt::Done(Err(AdapterError::Transport(Box::new(e)))),
        };
        let status = response.status();
        let wait = self.rate_limit_wait(response.headers(), retries);
        if status == http::StatusCode::TOO_MANY_REQUESTS {
            return Attempt::RateLimited(wait);
        }
        let bytes = match crate::http::read_capped(response, crate::http::MAX_ANSWER_BYTES).await {
            Ok(b) => b,
            Err(e) => return Attempt::Done(Err(e)),
        };
        let parsed: Response = match serde_json::from_slice(&bytes) {
            Ok(p) => p,
            Err(e) => {
                return Attempt::Done(Err(if status.is_success() {
                    AdapterError::Decode(Box::new(e))
                } else {
                    AdapterError::Status(status)
                }));
            }
        };
        if let Some(errors) = parsed.errors.filter(|e| !e.is_empty()) {
            if errors.iter().any(GraphqlError::is_rate_limit) {
                return Attempt::RateLimited(wait);
            }
            let code = errors
                .iter()
                .find_map(GraphqlError::code)
                .unwrap_or("GRAPHQL_ERROR")
                .to_owned();
            tracing::debug!(
                operation = op.name,
                code = code.as_str(),
                "linear graphql error"
            );
            return Attempt::Done(Err(AdapterError::Api { code }));
        }
        if !status.is_success() {
            return Attempt::Done(Err(AdapterError::Status(status)));
        }
        let field = parsed
            .data
            .and_then(|mut d| d.get_mut(op.field).map(Value::take))
            .filter(|v| !v.is_null());
        let Some(field) = field else {
            return Attempt::Done(Err(AdapterError::Decode(
                format!("the answer has no data.{}", op.field).into(),
            )));
        };
        if field.get("success").and_then(Value::as_bool) == Some(false) {
            return Attempt::Done(Err(AdapterError::Api {
                code: "UNSUCCESSFUL".to_owned(),
            }));
        }
        Attempt::Done(Ok(field))
    }

    /// How long a rate limit asks to wait: `Retry-After` (seconds), else
    /// `X-RateLimit-Requests-Reset` (Unix milliseconds), else a doubling
    /// backoff.
    fn rate_limit_wait(&self, headers: &http::HeaderMap, retries: u32) -> Duration {
        let number = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        if let Some(secs) = number("retry-after") {
            return Duration::try_from_secs_f64(secs).unwrap_or(MAX_BACKOFF);
        }
        if let Some(reset_ms) = number("x-ratelimit-requests-reset") {
            #[allow(clippy::cast_precision_loss)]
            let now_ms = self.clock.now_ms() as f64;
            let wait_ms = (reset_ms - now_ms).max(0.0);
            return Duration::try_from_secs_f64(wait_ms / 1000.0).unwrap_or(MAX_BACKOFF);
        }
        BASE_BACKOFF
            .saturating_mul(1u32.checked_shl(retries).unwrap_or(u32::MAX))
            .min(MAX_BACKOFF)
    }
}
