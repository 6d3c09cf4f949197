//! [`GitHubClient`]: GitHub's REST API over chat-http
//! ([Getting started](https://docs.github.com/en/rest/using-the-rest-api/getting-started-with-the-rest-api)):
//! every call sends `Accept: application/vnd.github+json`,
//! `X-GitHub-Api-Version: 2022-11-28` and a `User-Agent` (GitHub refuses a
//! call without one), and a bearer token.
//!
//! Rate limits ([Rate limits for the REST API](https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api))
//! are waited out: a call is never sent again sooner than GitHub allows: on a `403` or
//! `429` with `retry-after`, that many seconds; with
//! `x-ratelimit-remaining: 0`, until `x-ratelimit-reset`; a secondary limit
//! that says neither, at least a minute. A wait that outlasts the call's
//! deadline is [`AdapterError::RateLimited`], as is GraphQL's
//! `RATE_LIMITED` error (which comes with a 200). Any other refusal is
//! [`AdapterError::Api`] with GitHub's `message`. Each call waits on its
//! own: other calls of the process are not held back meanwhile.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::{AdapterError, Secret};
use chat_http::{Answer, Attempt, HttpOptions, RetryPolicy, Transport};
use http::{HeaderValue, Method, StatusCode};
use serde_json::Value;
use tokio::time::Instant;

/// GitHub's REST API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// The API version every call asks for.
pub const API_VERSION: &str = "2022-11-28";

/// The wait after a secondary rate limit that names no time: "at least
/// one minute".
pub const SECONDARY_WAIT: Duration = Duration::from_secs(60);

/// A REST client. Cheap to clone; the token is given per call.
#[derive(Clone)]
pub struct GitHubClient {
    inner: Arc<Shared>,
    deadline: Option<Instant>,
}

struct Shared {
    transport: Transport,
    options: HttpOptions,
    api: String,
    user_agent: HeaderValue,
}

impl std::fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubClient")
            .field("api", &self.inner.api)
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl GitHubClient {
    /// A client of the API at `api` (default [`DEFAULT_API_URL`]; a GitHub
    /// Enterprise Server's `https://HOST/api/v3`), calling itself
    /// `user_agent`.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a user agent that cannot be a header;
    /// [`AdapterError::Transport`] when the transport cannot be built.
    pub fn new(api: &str, user_agent: &str, options: HttpOptions) -> Result<Self, AdapterError> {
        let transport = options
            .transport("chat-github")
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        let user_agent = HeaderValue::try_from(user_agent).map_err(|_| {
            AdapterError::Invalid("a user agent that is not a header value".to_owned())
        })?;
        Ok(Self {
            inner: Arc::new(Shared {
                transport,
                options,
                api: api.trim_end_matches('/').to_owned(),
                user_agent,
            }),
            deadline: None,
        })
    }

    /// The same client, every call bounded by `deadline`.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// The API's base URL.
    pub fn api_url(&self) -> &str {
        &self.inner.api
    }

    /// `method path` with `token` and, when given, a JSON `body`; the
    /// answer's JSON (`null` for an empty one).
    ///
    /// # Errors
    /// See the module docs.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: &Secret,
        body: Option<&Value>,
    ) -> Result<Value, AdapterError> {
        let uri = format!("{}/{}", self.inner.api, path.trim_start_matches('/'));
        self.send(method, &uri, token, body).await
    }

    /// A GraphQL `query` (or mutation) with `variables`, at the API's
    /// GraphQL endpoint (`/graphql`; a GitHub Enterprise Server's
    /// `/api/graphql` beside `/api/v3`); its `data`.
    ///
    /// # Errors
    /// As [`call`](Self::call); GraphQL's own `errors` are
    /// [`AdapterError::Api`] with their first message.
    pub async fn graphql(
        &self,
        token: &Secret,
        query: &str,
        variables: Value,
    ) -> Result<Value, AdapterError> {
        let url = graphql_url(&self.inner.api);
        let body = serde_json::json!({ "query": query, "variables": variables });
        let mut answer = self.send(Method::POST, &url, token, Some(&body)).await?;
        if let Some(e) = answer["errors"].as_array().and_then(|e| e.first()) {
            // GraphQL answers an exhausted limit with a 200.
            if e["type"].as_str() == Some("RATE_LIMITED") {
                return Err(AdapterError::RateLimited {
                    retry_after: SECONDARY_WAIT,
                });
            }
            return Err(AdapterError::Api {
                code: format!("graphql: {}", e["message"].as_str().unwrap_or("an error")),
            });
        }
        Ok(answer["data"].take())
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        token: &Secret,
        body: Option<&Value>,
    ) -> Result<Value, AdapterError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| AdapterError::Invalid(format!("a URL that does not parse: {url}")))?;
        let payload = match body {
            Some(b) => {
                Bytes::from(serde_json::to_vec(b).map_err(|e| AdapterError::Decode(Box::new(e)))?)
            }
            None => Bytes::new(),
        };
        let mut request = http::Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::AUTHORIZATION, chat_http::bearer(token)?)
            .header(http::header::ACCEPT, "application/vnd.github+json")
            .header("x-github-api-version", API_VERSION)
            .header(http::header::USER_AGENT, self.inner.user_agent.clone());
        if body.is_some() {
            request = request.header(http::header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(payload)
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        chat_http::call(
            &self.inner.transport,
            &self.inner.options,
            self.deadline,
            &request,
            &Rest,
        )
        .await
    }
}

/// The GraphQL endpoint beside REST API `api`: github.com's
/// `https://api.github.com/graphql`, a GitHub Enterprise Server's
/// `https://HOST/api/graphql` beside `https://HOST/api/v3`.
fn graphql_url(api: &str) -> String {
    match api.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => format!("{api}/graphql"),
    }
}

/// How a REST answer reads (the module docs).
struct Rest;

impl RetryPolicy for Rest {
    type Output = Value;

    fn classify(&self, answer: Answer, _retries: u32) -> Attempt<Value> {
        let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
        if answer.status.is_success() {
            return match body {
                Some(body) => Attempt::Done(Ok(body)),
                None if answer.body.is_empty() => Attempt::Done(Ok(Value::Null)),
                None => Attempt::Done(Err(AdapterError::Decode(
                    "an answer that is not JSON".into(),
                ))),
            };
        }
        let message = body
            .as_ref()
            .and_then(|b| b["message"].as_str())
            .unwrap_or_default()
            .to_owned();
        if (answer.status == StatusCode::FORBIDDEN
            || answer.status == StatusCode::TOO_MANY_REQUESTS)
            && let Some(wait) = rate_limit_wait(&answer, &message, SystemTime::now())
        {
            return Attempt::RetryAfter(wait);
        }
        if message.is_empty() {
            Attempt::Done(Err(AdapterError::Status(answer.status)))
        } else {
            Attempt::Done(Err(AdapterError::Api {
                code: format!("{}: {message}", answer.status.as_u16()),
            }))
        }
    }
}

/// How long a `403`/`429` asks to wait, if it is a rate limit: its
/// `retry-after`; until `x-ratelimit-reset` when none remain; a minute for a
/// secondary limit that says neither. `None`: not a rate limit (a
/// permission refused).
pub(crate) fn rate_limit_wait(answer: &Answer, message: &str, now: SystemTime) -> Option<Duration> {
    if let Some(wait) = chat_http::retry_after(answer) {
        return Some(wait);
    }
    if answer.header("x-ratelimit-remaining") == Some("0") {
        let reset = answer
            .header("x-ratelimit-reset")
            .and_then(|r| r.trim().parse::<u64>().ok());
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        // Without a reset that reads, the secondary rule: a minute.
        return Some(reset.map_or(SECONDARY_WAIT, |reset| {
            Duration::from_secs(reset.saturating_sub(now).max(1))
        }));
    }
    let m = message.to_ascii_lowercase();
    (answer.status == StatusCode::TOO_MANY_REQUESTS || m.contains("rate limit"))
        .then_some(SECONDARY_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)]) -> Answer {
        let mut h = http::HeaderMap::new();
        for (k, v) in headers {
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                http::HeaderValue::from_str(v),
            ) {
                h.insert(name, value);
            }
        }
        Answer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            headers: h,
            body: Bytes::new(),
        }
    }

    #[test]
    fn graphql_is_beside_rest_on_github_and_on_an_enterprise_server() {
        assert_eq!(
            graphql_url("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            graphql_url("https://ghe.example.com/api/v3"),
            "https://ghe.example.com/api/graphql"
        );
    }

    #[test]
    fn a_rate_limit_is_waited_out_as_github_says_and_a_refusal_is_not() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        // retry-after first.
        let a = answer(
            403,
            &[("retry-after", "30"), ("x-ratelimit-remaining", "0")],
        );
        assert_eq!(rate_limit_wait(&a, "", now), Some(Duration::from_secs(30)));
        // The primary limit: until its reset.
        let a = answer(
            403,
            &[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1090"),
            ],
        );
        assert_eq!(
            rate_limit_wait(&a, "API rate limit exceeded", now),
            Some(Duration::from_secs(90))
        );
        // A secondary limit that names no time: a minute.
        let a = answer(403, &[("x-ratelimit-remaining", "12")]);
        assert_eq!(
            rate_limit_wait(&a, "You have exceeded a secondary rate limit", now),
            Some(SECONDARY_WAIT)
        );
        assert_eq!(
            rate_limit_wait(&answer(429, &[]), "", now),
            Some(SECONDARY_WAIT)
        );
        // A spent limit whose reset does not read: a minute.
        let a = answer(
            403,
            &[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "soon"),
            ],
        );
        assert_eq!(rate_limit_wait(&a, "", now), Some(SECONDARY_WAIT));
        // A permission refused is no rate limit.
        assert_eq!(
            rate_limit_wait(
                &answer(403, &[]),
                "Resource not accessible by integration",
                now
            ),
            None
        );
    }
}
