//! [`WhatsAppClient`]: the Cloud API (Graph API) over chat-http, with one
//! phone number's access token.
//!
//! Errors come back as `{"error": {"code", "message", …}}`
//! ([Error codes](https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes)):
//! `131047` — the 24-hour customer-service window has closed — is
//! [`AdapterError::WindowClosed`]; the throughput and rate limits (`4`,
//! `80007`, `130429`, `131056`, `133016`, or an HTTP 429) are waited out
//! (`Retry-After` when given, else a doubling backoff) within the deadline;
//! anything else is [`AdapterError::Api`] with `{code}: {message}`.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use chat_core::{AdapterError, Secret};
use chat_http::{Answer, Attempt, HttpOptions, RetryPolicy, Transport};
use http::HeaderValue;
use serde_json::Value;
use tokio::time::Instant;

/// The Graph API, at the version this adapter speaks.
pub const DEFAULT_API_URL: &str = "https://graph.facebook.com/v21.0";

/// How long after a user's last message a business may write to them
/// freely: the customer-service window.
pub const SERVICE_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// The error code of a message refused because the window has closed.
pub const WINDOW_CLOSED_CODE: i64 = 131_047;

/// The error codes that mean "too many, slow down".
const RATE_LIMIT_CODES: [i64; 5] = [4, 80_007, 130_429, 131_056, 133_016];

/// A Cloud API client with one access token. Cheap to clone.
#[derive(Clone)]
pub struct WhatsAppClient {
    inner: Arc<Shared>,
    token: HeaderValue,
    deadline: Option<Instant>,
}

struct Shared {
    transport: Transport,
    options: HttpOptions,
    api: String,
}

impl std::fmt::Debug for WhatsAppClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsAppClient")
            .field("api", &self.inner.api)
            .field("token", &"<redacted>")
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl WhatsAppClient {
    /// A client at `api` (default [`DEFAULT_API_URL`]) with `token`.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a token that cannot be a header;
    /// [`AdapterError::Transport`] when the transport cannot be built.
    pub fn new(api: &str, token: &Secret, options: HttpOptions) -> Result<Self, AdapterError> {
        let transport = options
            .transport("chat-whatsapp")
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        Ok(Self {
            inner: Arc::new(Shared {
                transport,
                options,
                api: api.trim_end_matches('/').to_owned(),
            }),
            token: chat_http::bearer(token)?,
            deadline: None,
        })
    }

    /// The same client with another token (another phone number).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_token(&self, token: &Secret) -> Result<Self, AdapterError> {
        Ok(Self {
            inner: Arc::clone(&self.inner),
            token: chat_http::bearer(token)?,
            deadline: self.deadline,
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

    fn uri(&self, path: &str) -> Result<http::Uri, AdapterError> {
        format!("{}/{}", self.inner.api, path.trim_start_matches('/'))
            .parse()
            .map_err(|_| {
                AdapterError::Invalid(format!("a Graph API path that does not parse: {path}"))
            })
    }

    async fn send(&self, request: http::Request<Bytes>) -> Result<Value, AdapterError> {
        chat_http::call(
            &self.inner.transport,
            &self.inner.options,
            self.deadline,
            &request,
            &Graph,
        )
        .await
    }

    /// `POST {path}` with a JSON `body`; the answer.
    ///
    /// # Errors
    /// See the module docs.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, AdapterError> {
        let payload = serde_json::to_vec(body).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        let request = http::Request::post(self.uri(path)?)
            .header(http::header::AUTHORIZATION, self.token.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Bytes::from(payload))
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        self.send(request).await
    }

    /// `GET {path}`; the answer.
    ///
    /// # Errors
    /// See the module docs.
    pub async fn get(&self, path: &str) -> Result<Value, AdapterError> {
        let request = http::Request::get(self.uri(path)?)
            .header(http::header::AUTHORIZATION, self.token.clone())
            .body(Bytes::new())
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        self.send(request).await
    }

    /// Uploads a file for phone number `phone_number_id`
    /// (`POST /{phone-number-id}/media`, multipart); the media id.
    ///
    /// # Errors
    /// See the module docs.
    pub async fn upload(
        &self,
        phone_number_id: &str,
        name: &str,
        mime: &str,
        content: Bytes,
    ) -> Result<String, AdapterError> {
        let boundary = format!("chat-rs-{:016x}", rand::random::<u64>());
        let mut body = BytesMut::new();
        for (field, value) in [("messaging_product", "whatsapp"), ("type", mime)] {
            body.put_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        let name = name.replace(['"', '\r', '\n'], "_");
        body.put_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.put_slice(&content);
        body.put_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let request = http::Request::post(self.uri(&format!("{phone_number_id}/media"))?)
            .header(http::header::AUTHORIZATION, self.token.clone())
            .header(
                http::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body.freeze())
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        let answer = self.send(request).await?;
        answer["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Decode("a media upload answered no id".into()))
    }

    /// Starts downloading media `media_id`: `GET /{media-id}` for its URL,
    /// then the URL with the token — sent only to Meta's media hosts
    /// (`*.fbsbx.com`, `*.whatsapp.net`, `*.facebook.com` over https) or the
    /// API's own origin; any other URL is [`AdapterError::Invalid`].
    ///
    /// # Errors
    /// See the module docs; [`AdapterError::TooLarge`] past `limit`.
    pub async fn download(
        &self,
        media_id: &str,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        let media = self.get(media_id).await?;
        if media["file_size"].as_u64().is_some_and(|s| s > limit) {
            return Err(AdapterError::TooLarge { limit });
        }
        let url = media["url"]
            .as_str()
            .ok_or_else(|| AdapterError::Decode("a media answer without url".into()))?;
        let uri: http::Uri = url
            .parse()
            .map_err(|_| AdapterError::Invalid("a media URL that does not parse".to_owned()))?;
        if !self.may_send_token_to(&uri) {
            return Err(AdapterError::Invalid(format!(
                "not a WhatsApp media URL: {}",
                uri.host().unwrap_or_default()
            )));
        }
        self.inner
            .transport
            .download_file(
                uri,
                Some(&self.token),
                limit,
                self.inner.options.request_timeout,
            )
            .await
    }

    fn may_send_token_to(&self, uri: &http::Uri) -> bool {
        let host = uri.host().unwrap_or_default().to_ascii_lowercase();
        let meta = uri.scheme() == Some(&http::uri::Scheme::HTTPS)
            && ["fbsbx.com", "whatsapp.net", "facebook.com"]
                .iter()
                .any(|d| host == *d || host.ends_with(&format!(".{d}")));
        meta || self
            .inner
            .api
            .parse::<http::Uri>()
            .is_ok_and(|api| chat_http::same_origin(&api, uri))
    }
}

/// How a Graph API answer reads (the module docs).
struct Graph;

impl RetryPolicy for Graph {
    type Output = Value;

    fn classify(&self, answer: Answer, retries: u32) -> Attempt<Value> {
        let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
        let error = body.as_ref().and_then(|b| b.get("error"));
        let code = error.and_then(|e| e["code"].as_i64());
        let wait =
            || chat_http::retry_after(&answer).unwrap_or_else(|| chat_http::backoff(retries));
        if answer.status == http::StatusCode::TOO_MANY_REQUESTS
            || code.is_some_and(|c| RATE_LIMIT_CODES.contains(&c))
        {
            return Attempt::RetryAfter(wait());
        }
        if code == Some(WINDOW_CLOSED_CODE) {
            return Attempt::Done(Err(AdapterError::WindowClosed {
                window: SERVICE_WINDOW,
            }));
        }
        if let Some(e) = error {
            let message = e["message"].as_str().unwrap_or("no message");
            return Attempt::Done(Err(AdapterError::Api {
                code: format!("{}: {message}", code.unwrap_or(0)),
            }));
        }
        match body {
            Some(body) if answer.status.is_success() => Attempt::Done(Ok(body)),
            _ => Attempt::Done(Err(AdapterError::Status(answer.status))),
        }
    }
}
