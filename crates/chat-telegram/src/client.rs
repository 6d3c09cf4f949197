//! [`TelegramClient`]: the Bot API over chat-http — `POST
//! {api}/bot{token}/{method}` with a JSON body (or `multipart/form-data` for
//! a file), `{"ok": true, "result": …}` read back, `ok: false` as
//! [`AdapterError::Api`], and a 429 waited out for the `retry_after` it
//! names ([Responses](https://core.telegram.org/bots/api#making-requests)).
//!
//! The token is part of every URL: the client never logs a URL, and its
//! `Debug` shows neither.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use chat_core::{AdapterError, Secret};
use chat_http::{Answer, Attempt, HttpOptions, RetryPolicy, Transport};
use http::HeaderValue;
use serde_json::Value;
use tokio::time::Instant;

/// Telegram's Bot API.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// The most bytes of a file `getFile` lets a bot download (20 MB).
pub const MAX_DOWNLOAD: u64 = 20 * 1024 * 1024;

/// A Bot API client for one bot token. Cheap to clone; clones share one
/// HTTP transport.
#[derive(Clone)]
pub struct TelegramClient {
    inner: Arc<Shared>,
    token: Secret,
    deadline: Option<Instant>,
}

struct Shared {
    transport: Transport,
    options: HttpOptions,
    api: String,
}

impl std::fmt::Debug for TelegramClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramClient")
            .field("api", &self.inner.api)
            .field("token", &"<redacted>")
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// What the Bot API answered `ok: false` with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: http::StatusCode,
    pub(crate) description: String,
}

/// The code of an [`AdapterError::Api`] from a refusal: the status and
/// Telegram's description (`400: Bad Request: message is not modified`).
fn api_error(r: &Refusal) -> AdapterError {
    AdapterError::Api {
        code: format!("{}: {}", r.status.as_u16(), r.description),
    }
}

impl TelegramClient {
    /// A client of the bot with `token`, at `api` (default
    /// [`DEFAULT_API_URL`]).
    ///
    /// # Errors
    /// [`chat_http::BuildError`] when the HTTP transport cannot be built.
    pub fn new(
        api: &str,
        token: Secret,
        options: HttpOptions,
    ) -> Result<Self, chat_http::BuildError> {
        let transport = options.transport("chat-telegram")?;
        Ok(Self {
            inner: Arc::new(Shared {
                transport,
                options,
                api: api.trim_end_matches('/').to_owned(),
            }),
            token,
            deadline: None,
        })
    }

    /// The same client with another bot's token (installation mode).
    #[must_use]
    pub fn with_token(&self, token: Secret) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            token,
            deadline: self.deadline,
        }
    }

    /// The same client, every call bounded by `deadline`.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// The bot's id: the part of its token before the `:`.
    pub fn bot_id(&self) -> &str {
        bot_id_of(self.token.expose())
    }

    fn url(&self, path: &str) -> Result<http::Uri, AdapterError> {
        format!("{}/bot{}/{path}", self.inner.api, self.token.expose())
            .parse()
            .map_err(|_| AdapterError::Invalid("the Bot API URL does not parse".to_owned()))
    }

    /// Calls `method` with a JSON `body`; the answer's `result`.
    ///
    /// # Errors
    /// [`AdapterError::Api`] for `ok: false` (its status and description),
    /// [`AdapterError::RateLimited`] for a 429 whose wait would pass the
    /// deadline, the transport's errors.
    pub async fn call(&self, method: &str, body: &Value) -> Result<Value, AdapterError> {
        let payload = serde_json::to_vec(body).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        self.send(
            method,
            HeaderValue::from_static("application/json"),
            Bytes::from(payload),
        )
        .await
        .and_then(|r| r.map_err(|refusal| api_error(&refusal)))
    }

    /// [`call`](Self::call), with Telegram's refusal kept apart from the
    /// other errors (to tell "message is not modified" from a failure).
    pub(crate) async fn try_call(
        &self,
        method: &str,
        body: &Value,
    ) -> Result<Result<Value, Refusal>, AdapterError> {
        let payload = serde_json::to_vec(body).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        self.send(
            method,
            HeaderValue::from_static("application/json"),
            Bytes::from(payload),
        )
        .await
    }

    /// Calls `method` with `fields` and one file (`field`, its `name`,
    /// its bytes) as `multipart/form-data` (`sendDocument`).
    ///
    /// # Errors
    /// As [`call`](Self::call).
    pub async fn call_with_file(
        &self,
        method: &str,
        fields: &[(&str, String)],
        file: (&str, &str, Bytes),
    ) -> Result<Value, AdapterError> {
        let boundary = format!("chat-rs-{:016x}", rand::random::<u64>());
        let mut body = BytesMut::new();
        for (name, value) in fields {
            body.put_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                )
                .as_bytes(),
            );
        }
        let (field, name, bytes) = file;
        let name = name.replace(['"', '\r', '\n'], "_");
        body.put_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.put_slice(&bytes);
        body.put_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let content_type =
            HeaderValue::try_from(format!("multipart/form-data; boundary={boundary}"))
                .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        self.send(method, content_type, body.freeze())
            .await
            .and_then(|r| r.map_err(|refusal| api_error(&refusal)))
    }

    async fn send(
        &self,
        method: &str,
        content_type: HeaderValue,
        body: Bytes,
    ) -> Result<Result<Value, Refusal>, AdapterError> {
        let request = http::Request::post(self.url(method)?)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(body)
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        chat_http::call(
            &self.inner.transport,
            &self.inner.options,
            self.deadline,
            &request,
            &BotApi,
        )
        .await
    }

    /// Starts downloading the file `file_id` (`getFile`, then its
    /// `file_path` under `{api}/file/bot{token}/`), capped at `limit` bytes
    /// (Telegram serves bots files of at most 20 MB).
    ///
    /// # Errors
    /// The Bot API's refusal of `getFile`; [`AdapterError::TooLarge`] as
    /// the bytes arrive past `limit`; [`AdapterError::Status`] for a
    /// non-2xx answer.
    pub async fn download(
        &self,
        file_id: &str,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        let file = self
            .call("getFile", &serde_json::json!({ "file_id": file_id }))
            .await?;
        let path = file["file_path"]
            .as_str()
            .filter(|p| !p.is_empty() && !p.contains(".."))
            .ok_or_else(|| AdapterError::Decode("getFile answered no file_path".into()))?;
        if file["file_size"].as_u64().is_some_and(|s| s > limit) {
            return Err(AdapterError::TooLarge { limit });
        }
        let uri = format!("{}/file/bot{}/{path}", self.inner.api, self.token.expose())
            .parse::<http::Uri>()
            .map_err(|_| AdapterError::Invalid("a file path that does not parse".to_owned()))?;
        self.inner
            .transport
            .download_file(uri, None, limit, self.inner.options.request_timeout)
            .await
    }
}

/// The bot id of a token (`123456:ABC…` → `123456`).
pub(crate) fn bot_id_of(token: &str) -> &str {
    token.split_once(':').map_or("", |(id, _)| id)
}

/// How a Bot API answer reads: a 429 waits its `parameters.retry_after`
/// (else `Retry-After`, else a doubling backoff); a JSON body is its `ok`;
/// anything else is [`AdapterError::Status`].
struct BotApi;

impl RetryPolicy for BotApi {
    type Output = Result<Value, Refusal>;

    fn classify(&self, answer: Answer, retries: u32) -> Attempt<Self::Output> {
        let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
        if answer.status == http::StatusCode::TOO_MANY_REQUESTS {
            let wait = body
                .as_ref()
                .and_then(|b| b.pointer("/parameters/retry_after"))
                .and_then(Value::as_f64)
                .and_then(chat_http::seconds)
                .or_else(|| chat_http::retry_after(&answer))
                .unwrap_or_else(|| chat_http::backoff(retries));
            return Attempt::RetryAfter(wait.max(Duration::from_millis(1)));
        }
        let Some(body) = body else {
            return Attempt::Done(Err(AdapterError::Status(answer.status)));
        };
        if body["ok"] == true {
            return Attempt::Done(Ok(Ok(body.get("result").cloned().unwrap_or(Value::Null))));
        }
        let description = body["description"]
            .as_str()
            .unwrap_or("no description")
            .to_owned();
        Attempt::Done(Ok(Err(Refusal {
            status: answer.status,
            description,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bot_id_is_the_tokens_head() {
        assert_eq!(bot_id_of("123456:ABC-DEF"), "123456");
        assert_eq!(bot_id_of("no-colon"), "");
    }

    #[test]
    fn debug_never_shows_the_token() {
        let c = TelegramClient::new(
            DEFAULT_API_URL,
            Secret::new("123:secret-part"),
            HttpOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(!format!("{c:?}").contains("secret-part"));
    }
}
