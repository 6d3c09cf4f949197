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

use bytes::Bytes;
use chat_core::{AdapterError, TenantId};
use chat_http::{Answer, Attempt, HttpOptions, RetryPolicy, Transport};
use http::HeaderValue;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::operations::Operation;
use chat_core::Clock;

/// The longest wait a reset time in the past or far future comes to.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// The GraphQL client shared by every clone of the adapter.
pub(crate) struct GraphqlClient {
    pub(crate) transport: Transport,
    pub(crate) options: HttpOptions,
    pub(crate) endpoint: http::Uri,
    pub(crate) default_auth: Option<HeaderValue>,
    pub(crate) organization_auth: HashMap<TenantId, HeaderValue>,
    pub(crate) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for GraphqlClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphqlClient")
            .field("endpoint", &self.endpoint.to_string())
            .field(
                "default_auth",
                &self.default_auth.as_ref().map(|_| "<redacted>"),
            )
            .field("organizations", &self.organization_auth.len())
            .field("options", &self.options)
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
        let body = serde_json::to_vec(&op.body()).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        let request = http::Request::post(self.endpoint.clone())
            .header(http::header::AUTHORIZATION, auth.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Bytes::from(body))
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        let policy = Graphql {
            op,
            clock: self.clock.as_ref(),
        };
        chat_http::call(&self.transport, &self.options, deadline, &request, &policy).await
    }
}

/// How a GraphQL answer reads (see the module docs): a rate limit — HTTP 429
/// or a `RATELIMITED` error — waits; anything else is the call's result.
struct Graphql<'a> {
    op: &'a Operation,
    clock: &'a dyn Clock,
}

impl RetryPolicy for Graphql<'_> {
    type Output = Value;

    fn classify(&self, answer: Answer, retries: u32) -> Attempt<Value> {
        let op = self.op;
        let status = answer.status;
        let wait = self.rate_limit_wait(&answer, retries);
        if status == http::StatusCode::TOO_MANY_REQUESTS {
            return Attempt::RetryAfter(wait);
        }
        let parsed: Response = match serde_json::from_slice(&answer.body) {
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
                return Attempt::RetryAfter(wait);
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
}

impl Graphql<'_> {
    /// How long a rate limit asks to wait: `Retry-After` (seconds), else
    /// `X-RateLimit-Requests-Reset` (Unix milliseconds), else a doubling
    /// backoff.
    fn rate_limit_wait(&self, answer: &Answer, retries: u32) -> Duration {
        if let Some(wait) = chat_http::retry_after(answer) {
            return wait;
        }
        let reset_ms = answer
            .header("x-ratelimit-requests-reset")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0);
        if let Some(reset_ms) = reset_ms {
            #[allow(clippy::cast_precision_loss)]
            let now_ms = self.clock.now_ms() as f64;
            let wait_ms = (reset_ms - now_ms).max(0.0);
            return Duration::try_from_secs_f64(wait_ms / 1000.0).unwrap_or(MAX_WAIT);
        }
        chat_http::backoff(retries)
    }
}
