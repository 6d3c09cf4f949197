//! The Slack Web API client: JSON bodies, a Bearer token, `ok:false` as typed
//! errors, and 429s waited out within a deadline.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chat_core::{AdapterError, PostKey};
use http::HeaderValue;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::error::BuildError;
use crate::inbound::payload::AuthTest;
use chat_http::{Answer, Attempt, HttpOptions, Proxy, RetryPolicy, Transport};

/// Slack's Web API endpoint.
pub const DEFAULT_API_BASE_URL: &str = "https://slack.com/api";

/// A Web API client bound to one bot token.
///
/// Cheap to clone (the connection pool and settings are shared), and
/// [`with_token`](Self::with_token) makes a client for another token on the
/// same pool (one per installation, in installation mode). Every call
/// sends `POST {base}/{method}` with a JSON body and `Authorization: Bearer …`.
///
/// * An answer with `"ok": false` is [`AdapterError::Api`] with Slack's error
///   code (`channel_not_found`, …).
/// * HTTP 429 is waited out for `Retry-After` seconds (the header, or
///   `retry_after` in the body when the header is missing) and retried, at most
///   [`max_retries`](SlackClientBuilder::max_retries) times, and never past the
///   deadline: with [`with_deadline`](Self::with_deadline) that deadline, else
///   the call's start plus the [`retry_budget`](SlackClientBuilder::retry_budget).
///   A wait that would pass it is [`AdapterError::RateLimited`], returned at once.
/// * Other non-2xx answers are [`AdapterError::Status`]; they are not retried,
///   because a failed `chat.postMessage` may still have posted.
///
/// Its `Debug` output never shows the token.
#[derive(Clone)]
pub struct SlackClient {
    inner: Arc<Inner>,
    /// `Bearer {token}`; `None` only for the crate's own unauthenticated
    /// calls (`oauth.v2.access`) and the template of installation mode.
    auth: Option<HeaderValue>,
    deadline: Option<Instant>,
}

struct Inner {
    web: Transport,
    base_url: String,
    http: HttpOptions,
    /// Each method's URL, parsed once (at most [`METHOD_URIS_KEPT`]).
    method_uris: Mutex<HashMap<String, http::Uri>>,
}

/// How many methods' URLs a client keeps parsed: more than the Web API
/// methods one bot calls.
const METHOD_URIS_KEPT: usize = 64;

impl Inner {
    /// `{base_url}/{method}`, parsed.
    fn method_uri(&self, method: &str) -> Result<http::Uri, AdapterError> {
        let mut uris = self
            .method_uris
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(uri) = uris.get(method) {
            return Ok(uri.clone());
        }
        let uri = http::Uri::try_from(format!("{}/{method}", self.base_url))
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        if uris.len() < METHOD_URIS_KEPT {
            uris.insert(method.to_owned(), uri.clone());
        }
        Ok(uri)
    }
}

impl fmt::Debug for SlackClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackClient")
            .field("base_url", &self.inner.base_url)
            .field("token", &self.auth.as_ref().map(|_| "<redacted>"))
            .field("http", &self.inner.http)
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// Settings of a [`SlackClient`].
#[derive(Clone)]
#[must_use]
pub struct SlackClientBuilder {
    token: String,
    base_url: String,
    http: HttpOptions,
}

impl fmt::Debug for SlackClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackClientBuilder")
            .field("token", &"<redacted>")
            .field("base_url", &self.base_url)
            .field("http", &self.http)
            .finish()
    }
}

impl SlackClientBuilder {
    /// The Web API base URL (default [`DEFAULT_API_BASE_URL`]); tests point it
    /// at a fake server.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Every outbound setting at once (retries, retry budget, request
    /// timeout, proxy); the four methods below set one each.
    pub fn http(mut self, options: HttpOptions) -> Self {
        self.http = options;
        self
    }

    /// How many times one call is retried after a 429 (default 3).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.http.max_retries = n;
        self
    }

    /// How long one call may spend waiting out 429s when it has no deadline
    /// (default 30 s).
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.http.retry_budget = budget;
        self
    }

    /// The timeout of one HTTP request (default 10 s; shortened to the deadline).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.http.request_timeout = timeout;
        self
    }

    /// Where `https` calls go through a proxy (default
    /// [`Proxy::FromEnv`]: `HTTPS_PROXY` or `ALL_PROXY`, except `NO_PROXY`).
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.http.proxy = proxy;
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<SlackClient, BuildError> {
        let auth = bearer(&self.token)?;
        let mut client = self.build_unauthenticated()?;
        client.auth = Some(auth);
        Ok(client)
    }

    /// Builds a client without a token: the shared connection pool of
    /// installation mode (each call takes its tenant's token with
    /// [`SlackClient::with_token`]), and the OAuth flow's `oauth.v2.access`.
    pub(crate) fn build_unauthenticated(self) -> Result<SlackClient, BuildError> {
        let valid = self.base_url.parse::<http::Uri>().is_ok_and(|uri| {
            matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some()
        });
        if !valid {
            return Err(BuildError::InvalidBaseUrl(self.base_url));
        }
        let web = self.http.transport("chat-slack")?;
        Ok(SlackClient {
            inner: Arc::new(Inner {
                web,
                base_url: self.base_url.trim_end_matches('/').to_owned(),
                http: self.http,
                method_uris: Mutex::default(),
            }),
            auth: None,
            deadline: None,
        })
    }
}

/// A Web API answer that says whether it is `ok`, and its error code if not.
trait Answered {
    fn verdict(&self) -> Result<(), Option<&str>>;
}

impl Answered for Value {
    fn verdict(&self) -> Result<(), Option<&str>> {
        verdict(
            self.get("ok").and_then(Value::as_bool) == Some(true),
            self.get("error").and_then(Value::as_str),
        )
    }
}

/// A 2xx answer's body as `T`; `ok: false` as [`AdapterError::Api`].
fn answered<T: serde::de::DeserializeOwned + Answered>(
    method: &str,
    bytes: &[u8],
) -> Result<T, AdapterError> {
    let answer: T = serde_json::from_slice(bytes).map_err(|e| AdapterError::Decode(Box::new(e)))?;
    match answer.verdict() {
        Ok(()) => Ok(answer),
        Err(code) => {
            let code = code.unwrap_or("unknown_error").to_owned();
            tracing::debug!(method, code = %code, "slack: api error");
            Err(AdapterError::Api { code })
        }
    }
}

/// `ok`, else the error code.
fn verdict(ok: bool, error: Option<&str>) -> Result<(), Option<&str>> {
    if ok { Ok(()) } else { Err(error) }
}

/// An answer read for its verdict alone: `ok` and `error`, every other
/// member skipped unread (no JSON tree is built).
#[derive(Deserialize)]
struct Done {
    #[serde(default)]
    ok: bool,
    error: Option<String>,
}

impl Answered for Done {
    fn verdict(&self) -> Result<(), Option<&str>> {
        verdict(self.ok, self.error.as_deref())
    }
}

/// The answer of a method that posts a message: its verdict, and where the
/// message is.
#[derive(Deserialize)]
struct Posted {
    #[serde(default)]
    ok: bool,
    error: Option<String>,
    channel: Option<String>,
    ts: Option<String>,
}

impl Answered for Posted {
    fn verdict(&self) -> Result<(), Option<&str>> {
        verdict(self.ok, self.error.as_deref())
    }
}

impl Posted {
    /// Where the message is (`channel` when the answer leaves it out).
    fn message(self, method: &str, channel: &str) -> Result<PostedMessage, AdapterError> {
        let ts = self
            .ts
            .ok_or_else(|| AdapterError::Decode(format!("{method} answer without ts").into()))?;
        Ok(PostedMessage {
            channel: self.channel.unwrap_or_else(|| channel.to_owned()),
            ts,
        })
    }
}

/// A reaction on a message (`reactions.add`, `reactions.remove`).
#[derive(serde::Serialize)]
struct Reaction<'a> {
    channel: &'a str,
    timestamp: &'a str,
    name: &'a str,
}

/// A message named by its channel and `ts` (`chat.stopStream`, `chat.delete`).
#[derive(serde::Serialize)]
struct At<'a> {
    channel: &'a str,
    ts: &'a str,
}

/// `Bearer {token}` as a sensitive header value.
fn bearer(token: &str) -> Result<HeaderValue, BuildError> {
    if token.is_empty() {
        return Err(BuildError::MissingBotToken);
    }
    let mut auth = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| BuildError::InvalidBotToken)?;
    auth.set_sensitive(true);
    Ok(auth)
}

/// Who a token belongs to, from `auth.test`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BotIdentity {
    /// The bot user id (`U…`): the `user` of the bot's messages.
    pub user_id: Option<String>,
    /// The bot id (`B…`): the `bot_id` of the bot's messages.
    pub bot_id: Option<String>,
    /// The workspace the token is installed in.
    pub team_id: Option<String>,
    /// The organization, for Enterprise Grid installs.
    pub enterprise_id: Option<String>,
}

impl BotIdentity {
    /// An identity with the given user and bot ids.
    pub fn new(user_id: Option<String>, bot_id: Option<String>) -> Self {
        Self {
            user_id,
            bot_id,
            ..Self::default()
        }
    }
}

/// The longest `markdown_text` Slack takes in one `chat.startStream` or
/// `chat.appendStream`: 12,000 characters
/// (<https://docs.slack.dev/reference/methods/chat.appendStream>), counted here
/// in UTF-16 code units, which are never fewer.
pub const STREAM_TEXT_MAX: usize = 12_000;

/// The message-metadata event type of a handler run's replies.
pub const REPLY_EVENT_TYPE: &str = "chat_rs_reply";

/// A message's content for the Web API: its `text` and, for a rich message,
/// its Block Kit `blocks` (then `text` is the notification fallback).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Content {
    /// The text (mrkdwn), or the fallback of the blocks.
    pub text: String,
    /// Block Kit blocks.
    pub blocks: Option<Vec<Value>>,
}

impl Content {
    /// Blocks, with `text` as their fallback.
    pub fn blocks(text: impl Into<String>, blocks: Vec<Value>) -> Self {
        Self {
            text: text.into(),
            blocks: Some(blocks),
        }
    }

    fn write_into(&self, body: &mut Value) {
        body["text"] = json!(self.text);
        if let Some(blocks) = &self.blocks {
            body["blocks"] = json!(blocks);
        }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            blocks: None,
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self { text, blocks: None }
    }
}

impl From<&String> for Content {
    fn from(text: &String) -> Self {
        Self::from(text.as_str())
    }
}

/// A message `chat.postMessage` created.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostedMessage {
    /// The channel it was posted in.
    pub channel: String,
    /// Its `ts`, the message id.
    pub ts: String,
}

impl SlackClient {
    /// A builder for a client with `token` (`xoxb-…`).
    pub fn builder(token: impl Into<String>) -> SlackClientBuilder {
        SlackClientBuilder {
            token: token.into(),
            base_url: DEFAULT_API_BASE_URL.to_owned(),
            http: HttpOptions::default(),
        }
    }

    /// The same client, with every call bounded by `deadline` (a handler's
    /// deadline): no 429 wait and no request runs past it.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            auth: self.auth.clone(),
            deadline: Some(deadline),
        }
    }

    /// The same client (connection pool, base URL, retry settings and
    /// deadline) calling with another token: one installation's bot token.
    pub fn with_token(&self, token: &str) -> Result<Self, BuildError> {
        Ok(Self {
            inner: Arc::clone(&self.inner),
            auth: Some(bearer(token)?),
            deadline: self.deadline,
        })
    }

    /// Whether the client has a token.
    pub fn has_token(&self) -> bool {
        self.auth.is_some()
    }

    /// The same client, with every call bounded by `timeout` from now.
    #[must_use]
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        self.with_deadline(Instant::now() + timeout)
    }

    /// The deadline calls are bounded by, if one was set.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The base URL calls go to.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// Calls any Web API method with a JSON body and returns Slack's answer
    /// (with `"ok": true`).
    pub async fn call(&self, method: &str, body: &Value) -> Result<Value, AdapterError> {
        self.send_body(method, body).await
    }

    /// Calls a method with a form body (the read methods, such as
    /// `conversations.replies`, take their arguments as a form).
    pub async fn call_form(
        &self,
        method: &str,
        form: &[(&str, &str)],
    ) -> Result<Value, AdapterError> {
        let payload =
            serde_urlencoded::to_string(form).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        let bytes = self
            .send(
                method,
                payload.into_bytes().into(),
                HeaderValue::from_static("application/x-www-form-urlencoded"),
                self.auth.as_ref(),
            )
            .await?;
        answered(method, &bytes)
    }

    /// Calls a method with a form body and no token (`oauth.v2.access`, whose
    /// client credentials are in the form).
    pub(crate) async fn call_form_unauthenticated(
        &self,
        method: &str,
        form: &[(&str, &str)],
    ) -> Result<Value, AdapterError> {
        let payload =
            serde_urlencoded::to_string(form).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        let bytes = self
            .send(
                method,
                payload.into_bytes().into(),
                HeaderValue::from_static("application/x-www-form-urlencoded"),
                None,
            )
            .await?;
        answered(method, &bytes)
    }

    /// Sends `payload` to `method`, waiting out 429s within the deadline;
    /// the body of a 2xx answer (its `ok` not yet checked).
    async fn send(
        &self,
        method: &str,
        payload: bytes::Bytes,
        content_type: HeaderValue,
        auth: Option<&HeaderValue>,
    ) -> Result<bytes::Bytes, AdapterError> {
        let mut request = http::Request::post(self.inner.method_uri(method)?)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(payload)
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        if let Some(auth) = auth {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, auth.clone());
        }
        let policy = WebApi { method };
        chat_http::call(
            &self.inner.web,
            &self.inner.http,
            self.deadline,
            &request,
            &policy,
        )
        .await
    }

    /// Downloads a file's `url_private` (or `url_private_download`) with
    /// this client's token, streamed and capped at `limit` bytes.
    ///
    /// Only Slack's own hosts (`slack.com` and its subdomains, over `https`)
    /// and the origin of the [`base_url`](SlackClientBuilder::base_url) are
    /// given the token; any other URL is [`AdapterError::Invalid`]. A
    /// redirect is followed, the token only on the URL's origin.
    ///
    /// # Errors
    /// `Invalid` for another host, [`AdapterError::Status`] for a non-2xx
    /// answer (a file deleted, a missing `files:read` scope), the
    /// transport's error.
    pub async fn download(
        &self,
        url: &str,
        limit: u64,
    ) -> Result<chat_core::Download, AdapterError> {
        let uri = http::Uri::try_from(url)
            .map_err(|_| AdapterError::Invalid(format!("not a file URL: {url}")))?;
        if !self.may_send_token_to(&uri) {
            return Err(AdapterError::Invalid(format!(
                "not a Slack file URL: {}",
                uri.host().unwrap_or_default()
            )));
        }
        self.inner
            .web
            .download_file(
                uri,
                self.auth.as_ref(),
                limit,
                self.inner.http.request_timeout,
            )
            .await
    }

    fn may_send_token_to(&self, uri: &http::Uri) -> bool {
        let host = uri.host().unwrap_or_default().to_ascii_lowercase();
        let slack = uri.scheme() == Some(&http::uri::Scheme::HTTPS)
            && (host == "slack.com" || host.ends_with(".slack.com"));
        slack
            || http::Uri::try_from(self.inner.base_url.as_str())
                .is_ok_and(|base| chat_http::same_origin(&base, uri))
    }

    /// Sends a JSON body and reads the answer as `T`, `ok: false` as
    /// [`AdapterError::Api`].
    async fn send_json<T: serde::de::DeserializeOwned + Answered>(
        &self,
        method: &str,
        payload: Vec<u8>,
    ) -> Result<T, AdapterError> {
        let bytes = self
            .send(
                method,
                payload.into(),
                HeaderValue::from_static("application/json; charset=utf-8"),
                self.auth.as_ref(),
            )
            .await?;
        answered(method, &bytes)
    }

    /// Sends `body`, serialized from its borrowed parts, and reads the
    /// answer as `T`: the calls the runtime makes most build no JSON tree
    /// either way.
    async fn send_body<B, T>(&self, method: &str, body: &B) -> Result<T, AdapterError>
    where
        B: serde::Serialize + ?Sized,
        T: serde::de::DeserializeOwned + Answered,
    {
        let payload = serde_json::to_vec(body).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        self.send_json(method, payload).await
    }

    /// `chat.postMessage`: posts `text` in `channel`, as a reply in `thread_ts`
    /// when given.
    pub async fn post_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        content: impl Into<Content>,
    ) -> Result<PostedMessage, AdapterError> {
        self.post_with(channel, thread_ts, &content.into(), None)
            .await
    }

    /// Answers an interaction through its `response_url` (a slash command's
    /// or a button's): `body` is the message (`text`, `response_type`,
    /// `replace_original`, …). The URL carries its own authorization; Slack
    /// accepts up to five answers within 30 minutes.
    pub async fn respond_to(&self, response_url: &str, body: &Value) -> Result<(), AdapterError> {
        let payload = serde_json::to_vec(body).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        self.post_to(
            response_url,
            HeaderValue::from_static("application/json; charset=utf-8"),
            payload.into(),
        )
        .await
    }

    /// `POST`s `payload` to a URL Slack handed out (a `response_url`, an
    /// upload URL), which carries its own authorization: no token is sent.
    async fn post_to(
        &self,
        url: &str,
        content_type: HeaderValue,
        payload: bytes::Bytes,
    ) -> Result<(), AdapterError> {
        let uri = http::Uri::try_from(url).map_err(|e| AdapterError::Transport(Box::new(e)))?;
        let answer = self
            .inner
            .web
            .post(
                uri,
                content_type,
                None,
                payload,
                self.inner.http.request_timeout,
            )
            .await
            .map_err(|e| AdapterError::Transport(Box::new(e)))?;
        if answer.status.is_success() {
            Ok(())
        } else {
            Err(AdapterError::Status(answer.status))
        }
    }

    /// `chat.postMessage` of one reply of a handler run, carrying its
    /// [`PostKey`] as message metadata (event type [`REPLY_EVENT_TYPE`]), so
    /// that [`find_reply`](Self::find_reply) can find it again.
    pub async fn post_reply(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        content: impl Into<Content>,
        key: &PostKey,
    ) -> Result<PostedMessage, AdapterError> {
        self.post_with(channel, thread_ts, &content.into(), Some(key))
            .await
    }

    /// The reply `key` names, if it was posted in the thread: reads the
    /// thread with `conversations.replies` (`include_all_metadata`, following
    /// the cursor) and matches the message metadata `post_reply` wrote.
    pub async fn find_reply(
        &self,
        channel: &str,
        thread_ts: &str,
        key: &PostKey,
    ) -> Result<Option<PostedMessage>, AdapterError> {
        // A thread of 10,000 messages is read in 50 pages at most.
        self.find_reply_in("conversations.replies", channel, Some(thread_ts), key, 50)
            .await
    }

    /// The reply `key` names, if it was posted into the channel itself (not
    /// in a thread) among its latest 1,000 messages: `conversations.history`
    /// (`include_all_metadata`), matched as [`find_reply`](Self::find_reply)
    /// does. A repeated run looks there soon after its first attempt, so the
    /// reply is recent if it exists.
    pub async fn find_channel_reply(
        &self,
        channel: &str,
        key: &PostKey,
    ) -> Result<Option<PostedMessage>, AdapterError> {
        self.find_reply_in("conversations.history", channel, None, key, 5)
            .await
    }

    async fn find_reply_in(
        &self,
        method: &str,
        channel: &str,
        thread_ts: Option<&str>,
        key: &PostKey,
        pages: usize,
    ) -> Result<Option<PostedMessage>, AdapterError> {
        let mut cursor = String::new();
        for _ in 0..pages {
            let mut form = vec![
                ("channel", channel),
                ("include_all_metadata", "true"),
                ("limit", "200"),
            ];
            if let Some(ts) = thread_ts {
                form.push(("ts", ts));
            }
            if !cursor.is_empty() {
                form.push(("cursor", cursor.as_str()));
            }
            let answer = self.call_form(method, &form).await?;
            let found = answer
                .get("messages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|m| {
                    let meta = &m["metadata"];
                    meta["event_type"] == REPLY_EVENT_TYPE
                        && meta["event_payload"]["event_id"] == key.event_id.as_str()
                        && meta["event_payload"]["position"] == key.position
                });
            if let Some(ts) = found.and_then(|m| m["ts"].as_str()) {
                return Ok(Some(PostedMessage {
                    channel: channel.to_owned(),
                    ts: ts.to_owned(),
                }));
            }
            cursor = answer
                .pointer("/response_metadata/next_cursor")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if cursor.is_empty() {
                break;
            }
        }
        Ok(None)
    }

    async fn post_with(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        content: &Content,
        key: Option<&PostKey>,
    ) -> Result<PostedMessage, AdapterError> {
        // Serialized straight from borrowed parts, and the answer read into
        // the two fields it needs: the reply path builds no JSON tree.
        #[derive(serde::Serialize)]
        struct Metadata<'a> {
            event_type: &'a str,
            event_payload: Payload<'a>,
        }
        #[derive(serde::Serialize)]
        struct Payload<'a> {
            event_id: &'a str,
            position: u32,
        }
        #[derive(serde::Serialize)]
        struct Post<'a> {
            channel: &'a str,
            text: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            blocks: Option<&'a [Value]>,
            #[serde(skip_serializing_if = "Option::is_none")]
            thread_ts: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            metadata: Option<Metadata<'a>>,
        }
        let body = Post {
            channel,
            text: &content.text,
            blocks: content.blocks.as_deref(),
            thread_ts: thread_ts.filter(|t| !t.is_empty()),
            metadata: key.map(|key| Metadata {
                event_type: REPLY_EVENT_TYPE,
                event_payload: Payload {
                    event_id: key.event_id.as_str(),
                    position: key.position,
                },
            }),
        };
        let posted: Posted = self.send_body("chat.postMessage", &body).await?;
        posted.message("chat.postMessage", channel)
    }

    /// `conversations.replies`: one page of thread `ts` in `channel` (the
    /// thread's root first, then its replies, oldest first), from `cursor`.
    pub async fn replies(
        &self,
        channel: &str,
        ts: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Value, AdapterError> {
        let limit = limit.clamp(1, 1000).to_string();
        let mut form = vec![("channel", channel), ("ts", ts), ("limit", limit.as_str())];
        if let Some(cursor) = cursor.filter(|c| !c.is_empty()) {
            form.push(("cursor", cursor));
        }
        self.call_form("conversations.replies", &form).await
    }

    /// `conversations.history`: one page of `channel`'s messages, newest
    /// first, from `cursor`.
    pub async fn history(
        &self,
        channel: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Value, AdapterError> {
        let limit = limit.clamp(1, 1000).to_string();
        let mut form = vec![("channel", channel), ("limit", limit.as_str())];
        if let Some(cursor) = cursor.filter(|c| !c.is_empty()) {
            form.push(("cursor", cursor));
        }
        self.call_form("conversations.history", &form).await
    }

    /// The message `ts` of `channel` (in thread `thread_ts`, else in the
    /// channel itself), or `Value::Null` when it is not there: one
    /// `conversations.replies` / `conversations.history` call bounded to
    /// that `ts` (`oldest` = `latest` = `ts`, `inclusive`).
    pub async fn message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        ts: &str,
    ) -> Result<Value, AdapterError> {
        let mut form = vec![
            ("channel", channel),
            ("oldest", ts),
            ("latest", ts),
            ("inclusive", "true"),
            ("limit", "1"),
        ];
        let method = match thread_ts.filter(|t| !t.is_empty()) {
            Some(thread) => {
                form.push(("ts", thread));
                "conversations.replies"
            }
            None => "conversations.history",
        };
        let answer = self.call_form(method, &form).await?;
        Ok(answer
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|m| m["ts"] == ts)
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// `chat.scheduleMessage`: posts `content` in `channel` (in thread
    /// `thread_ts` when given) at `post_at` (seconds since the Unix epoch;
    /// Slack takes at most 120 days ahead). Returns the
    /// `scheduled_message_id` and the `post_at` Slack accepted.
    pub async fn schedule_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        post_at: u64,
        content: impl Into<Content>,
    ) -> Result<(String, u64), AdapterError> {
        let mut body = json!({ "channel": channel, "post_at": post_at });
        content.into().write_into(&mut body);
        if let Some(ts) = thread_ts.filter(|t| !t.is_empty()) {
            body["thread_ts"] = json!(ts);
        }
        let answer = self.call("chat.scheduleMessage", &body).await?;
        let id = answer["scheduled_message_id"].as_str().ok_or_else(|| {
            AdapterError::Decode("chat.scheduleMessage answer without scheduled_message_id".into())
        })?;
        let at = answer["post_at"]
            .as_u64()
            .or_else(|| answer["post_at"].as_str().and_then(|p| p.parse().ok()))
            .unwrap_or(post_at);
        Ok((id.to_owned(), at))
    }

    /// `chat.deleteScheduledMessage`: cancels scheduled message `id` of
    /// `channel` before it is posted.
    pub async fn delete_scheduled_message(
        &self,
        channel: &str,
        id: &str,
    ) -> Result<(), AdapterError> {
        let body = json!({ "channel": channel, "scheduled_message_id": id });
        self.call("chat.deleteScheduledMessage", &body)
            .await
            .map(drop)
    }

    /// `conversations.open`: the direct-message channel with `user` (opened
    /// if it was not; needs `im:write`). Returns its id.
    pub async fn open_conversation(&self, user: &str) -> Result<String, AdapterError> {
        let body = json!({ "users": user, "return_im": true });
        let answer = self.call("conversations.open", &body).await?;
        answer
            .pointer("/channel/id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                AdapterError::Decode("conversations.open answer without channel.id".into())
            })
    }

    /// `views.publish`: the App Home tab `view` (a `home` view) of `user`.
    pub async fn publish_view(&self, user: &str, view: &Value) -> Result<Value, AdapterError> {
        let body = json!({ "user_id": user, "view": view });
        self.call("views.publish", &body).await
    }

    /// `assistant.threads.setSuggestedPrompts`: up to four prompts
    /// (`title`, `message`) offered in an assistant thread, under an optional
    /// `title`.
    pub async fn set_suggested_prompts(
        &self,
        channel: &str,
        thread_ts: &str,
        title: Option<&str>,
        prompts: &[(String, String)],
    ) -> Result<(), AdapterError> {
        let prompts: Vec<Value> = prompts
            .iter()
            .map(|(title, message)| json!({ "title": title, "message": message }))
            .collect();
        let mut body = json!({ "channel_id": channel, "thread_ts": thread_ts, "prompts": prompts });
        if let Some(title) = title {
            body["title"] = json!(title);
        }
        self.call("assistant.threads.setSuggestedPrompts", &body)
            .await
            .map(drop)
    }

    /// `assistant.threads.setTitle`: the title of an assistant thread (shown
    /// in the app's history).
    pub async fn set_thread_title(
        &self,
        channel: &str,
        thread_ts: &str,
        title: &str,
    ) -> Result<(), AdapterError> {
        let body = json!({ "channel_id": channel, "thread_ts": thread_ts, "title": title });
        self.call("assistant.threads.setTitle", &body)
            .await
            .map(drop)
    }

    /// `chat.startStream`: opens a streaming reply in thread `thread_ts` of
    /// `channel` with `markdown_text`, for `recipient` (user, team) — Slack
    /// requires it outside direct messages. Returns the stream's message.
    pub async fn start_stream(
        &self,
        channel: &str,
        thread_ts: &str,
        markdown_text: &str,
        recipient: Option<(&str, &str)>,
    ) -> Result<PostedMessage, AdapterError> {
        #[derive(serde::Serialize)]
        struct Start<'a> {
            channel: &'a str,
            thread_ts: &'a str,
            markdown_text: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            recipient_user_id: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            recipient_team_id: Option<&'a str>,
        }
        let body = Start {
            channel,
            thread_ts,
            markdown_text,
            recipient_user_id: recipient.map(|(user, _)| user),
            recipient_team_id: recipient.map(|(_, team)| team),
        };
        let posted: Posted = self.send_body("chat.startStream", &body).await?;
        posted.message("chat.startStream", channel)
    }

    /// `chat.appendStream`: appends `markdown_text` to stream `ts`.
    pub async fn append_stream(
        &self,
        channel: &str,
        ts: &str,
        markdown_text: &str,
    ) -> Result<(), AdapterError> {
        #[derive(serde::Serialize)]
        struct Append<'a> {
            channel: &'a str,
            ts: &'a str,
            markdown_text: &'a str,
        }
        let body = Append {
            channel,
            ts,
            markdown_text,
        };
        let _: Done = self.send_body("chat.appendStream", &body).await?;
        Ok(())
    }

    /// `chat.stopStream`: ends stream `ts`.
    pub async fn stop_stream(&self, channel: &str, ts: &str) -> Result<(), AdapterError> {
        let _: Done = self
            .send_body("chat.stopStream", &At { channel, ts })
            .await?;
        Ok(())
    }

    /// Uploads a file into `channel` (and thread `thread_ts`), as Slack's
    /// external upload takes it: `files.getUploadURLExternal` for an upload
    /// URL, the bytes posted there, then `files.completeUploadExternal`
    /// shares it with `comment` as its message. Returns the file's id.
    pub async fn upload_file(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        filename: &str,
        content: bytes::Bytes,
        comment: Option<&str>,
    ) -> Result<String, AdapterError> {
        let mut ids = self
            .upload_files(channel, thread_ts, vec![(filename, content)], comment)
            .await?;
        ids.pop()
            .ok_or_else(|| AdapterError::Decode("an upload without a file id".into()))
    }

    /// Uploads several files as one message: each file's bytes to its own
    /// upload URL, then one `files.completeUploadExternal` that shares them
    /// all with `comment`. Returns their ids in order.
    pub async fn upload_files(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        files: Vec<(&str, bytes::Bytes)>,
        comment: Option<&str>,
    ) -> Result<Vec<String>, AdapterError> {
        let mut shared = Vec::with_capacity(files.len());
        let mut ids = Vec::with_capacity(files.len());
        for (filename, content) in files {
            let length = content.len().to_string();
            let answer = self
                .call_form(
                    "files.getUploadURLExternal",
                    &[("filename", filename), ("length", length.as_str())],
                )
                .await?;
            let (Some(url), Some(file_id)) =
                (answer["upload_url"].as_str(), answer["file_id"].as_str())
            else {
                return Err(AdapterError::Decode(
                    "files.getUploadURLExternal answer without upload_url or file_id".into(),
                ));
            };
            self.post_to(
                url,
                HeaderValue::from_static("application/octet-stream"),
                content,
            )
            .await?;
            shared.push(json!({ "id": file_id, "title": filename }));
            ids.push(file_id.to_owned());
        }
        let mut body = json!({
            "files": shared,
            "channel_id": channel,
        });
        if let Some(ts) = thread_ts.filter(|t| !t.is_empty()) {
            body["thread_ts"] = json!(ts);
        }
        if let Some(comment) = comment {
            body["initial_comment"] = json!(comment);
        }
        self.call("files.completeUploadExternal", &body).await?;
        Ok(ids)
    }

    /// `users.info`: the user object of `user`.
    pub async fn user_info(&self, user: &str) -> Result<Value, AdapterError> {
        let answer = self.call_form("users.info", &[("user", user)]).await?;
        Ok(answer.get("user").cloned().unwrap_or(Value::Null))
    }

    /// `chat.postEphemeral`: a message only `user` sees, in `channel` (and in
    /// `thread_ts` when given).
    pub async fn post_ephemeral(
        &self,
        channel: &str,
        user: &str,
        thread_ts: Option<&str>,
        content: impl Into<Content>,
    ) -> Result<(), AdapterError> {
        let mut body = json!({ "channel": channel, "user": user });
        content.into().write_into(&mut body);
        if let Some(ts) = thread_ts.filter(|t| !t.is_empty()) {
            body["thread_ts"] = json!(ts);
        }
        self.call("chat.postEphemeral", &body).await.map(drop)
    }

    /// `chat.update`: replaces the content of the bot's message `ts`.
    pub async fn update_message(
        &self,
        channel: &str,
        ts: &str,
        content: impl Into<Content>,
    ) -> Result<(), AdapterError> {
        let mut body = json!({ "channel": channel, "ts": ts });
        content.into().write_into(&mut body);
        self.call("chat.update", &body).await.map(drop)
    }

    /// `chat.delete`: deletes the bot's message `ts`.
    pub async fn delete_message(&self, channel: &str, ts: &str) -> Result<(), AdapterError> {
        let _: Done = self.send_body("chat.delete", &At { channel, ts }).await?;
        Ok(())
    }

    /// `reactions.add`: reacts to message `ts` with `name` (colons optional).
    /// Already having reacted is success.
    pub async fn add_reaction(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
    ) -> Result<(), AdapterError> {
        let body = Reaction {
            channel,
            timestamp: ts,
            name: emoji_name(name),
        };
        match self.send_body::<_, Done>("reactions.add", &body).await {
            Err(AdapterError::Api { code }) if code == "already_reacted" => Ok(()),
            other => other.map(drop),
        }
    }

    /// `reactions.remove`. A reaction that is not there is success.
    pub async fn remove_reaction(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
    ) -> Result<(), AdapterError> {
        let body = Reaction {
            channel,
            timestamp: ts,
            name: emoji_name(name),
        };
        match self.send_body::<_, Done>("reactions.remove", &body).await {
            Err(AdapterError::Api { code }) if code == "no_reaction" => Ok(()),
            other => other.map(drop),
        }
    }

    /// `assistant.threads.setStatus`: the "is thinking…" status of an assistant
    /// thread; an empty `status` clears it.
    pub async fn set_assistant_status(
        &self,
        channel: &str,
        thread_ts: &str,
        status: &str,
    ) -> Result<(), AdapterError> {
        #[derive(serde::Serialize)]
        struct Status<'a> {
            channel_id: &'a str,
            thread_ts: &'a str,
            status: &'a str,
        }
        let body = Status {
            channel_id: channel,
            thread_ts,
            status,
        };
        let _: Done = self.send_body("assistant.threads.setStatus", &body).await?;
        Ok(())
    }

    /// `views.open`: opens a modal with a `trigger_id` (valid for about 3 s).
    /// Returns Slack's answer (its `view` has the new view's id).
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<Value, AdapterError> {
        let body = json!({ "trigger_id": trigger_id, "view": view });
        self.call("views.open", &body).await
    }

    /// `views.update`: replaces the view `view_id`.
    pub async fn update_view(&self, view_id: &str, view: &Value) -> Result<Value, AdapterError> {
        let body = json!({ "view_id": view_id, "view": view });
        self.call("views.update", &body).await
    }

    /// `views.push`: pushes a view on top of the open modal, with a
    /// `trigger_id`.
    pub async fn push_view(&self, trigger_id: &str, view: &Value) -> Result<Value, AdapterError> {
        let body = json!({ "trigger_id": trigger_id, "view": view });
        self.call("views.push", &body).await
    }

    /// `auth.test`: who the token belongs to.
    pub async fn auth_test(&self) -> Result<BotIdentity, AdapterError> {
        let answer = self.call("auth.test", &json!({})).await?;
        let a = AuthTest::deserialize(&answer).map_err(|e| AdapterError::Decode(Box::new(e)))?;
        Ok(BotIdentity {
            user_id: a.user_id.filter(|s| !s.is_empty()),
            bot_id: a.bot_id.filter(|s| !s.is_empty()),
            team_id: a.team_id.filter(|s| !s.is_empty()),
            enterprise_id: a.enterprise_id.filter(|s| !s.is_empty()),
        })
    }
}

/// `thumbsup` from `:thumbsup:` or `thumbsup`.
fn emoji_name(name: &str) -> &str {
    name.trim().trim_matches(':')
}

/// Seconds as Slack gives them (`30`, `1.5`); `None` for anything else.
/// How a Web API answer reads: a 429 waits `Retry-After` seconds (the
/// header, else `retry_after` in the body, else 1 s); another non-2xx is
/// [`AdapterError::Status`], never retried (a failed `chat.postMessage` may
/// still have posted); a 2xx is the body, its `ok` checked by the caller.
struct WebApi<'a> {
    method: &'a str,
}

impl RetryPolicy for WebApi<'_> {
    type Output = bytes::Bytes;

    fn classify(&self, answer: Answer, _retries: u32) -> Attempt<bytes::Bytes> {
        if answer.status == http::StatusCode::TOO_MANY_REQUESTS {
            let wait = chat_http::retry_after(&answer)
                .or_else(|| body_retry_after(&answer.body))
                .unwrap_or(Duration::from_secs(1));
            tracing::debug!(method = self.method, retry_after = ?wait, "slack: rate limited");
            return Attempt::RetryAfter(wait);
        }
        if !answer.status.is_success() {
            return Attempt::Done(Err(AdapterError::Status(answer.status)));
        }
        Attempt::Done(Ok(answer.body))
    }
}

/// `retry_after` in a 429's JSON body (number or numeric string).
fn body_retry_after(body: &[u8]) -> Option<Duration> {
    let v: Value = serde_json::from_slice(body).ok()?;
    match v.get("retry_after")? {
        Value::Number(n) => chat_http::seconds(n.as_f64()?),
        Value::String(s) => chat_http::parse_seconds(s),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    #[test]
    fn a_method_url_is_parsed_once_and_a_bad_method_is_refused() -> Result<(), BuildError> {
        let client = SlackClient::builder("xoxb-1")
            .base_url("https://slack.example/api/")
            .build()?;
        let inner = &client.inner;
        for _ in 0..2 {
            let uri = inner.method_uri("chat.postMessage").ok();
            assert_eq!(
                uri.map(|u| u.to_string()).as_deref(),
                Some("https://slack.example/api/chat.postMessage")
            );
        }
        assert_eq!(inner.method_uris.lock().map(|m| m.len()).ok(), Some(1));
        assert!(matches!(
            inner.method_uri("chat post"),
            Err(AdapterError::Transport(_))
        ));
        // Past the bound a method is still called, and not kept.
        for i in 0..100 {
            let uri = inner.method_uri(&format!("m{i}")).ok();
            assert_eq!(uri.map(|u| u.path().to_owned()), Some(format!("/api/m{i}")));
        }
        assert_eq!(
            inner.method_uris.lock().map(|m| m.len()).ok(),
            Some(METHOD_URIS_KEPT)
        );
        Ok(())
    }

    #[test]
    fn retry_after_in_a_body_parses_or_is_refused() {
        assert_eq!(
            body_retry_after(br#"{"ok":false,"error":"ratelimited","retry_after":7}"#),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            body_retry_after(br#"{"retry_after":"2"}"#),
            Some(Duration::from_secs(2))
        );
        assert_eq!(body_retry_after(br#"{"retry_after":null}"#), None);
        assert_eq!(body_retry_after(b"not json"), None);
    }

    #[test]
    fn emoji_names_lose_their_colons() {
        assert_eq!(emoji_name(":thumbsup:"), "thumbsup");
        assert_eq!(emoji_name("eyes"), "eyes");
    }

    #[test]
    fn the_builder_refuses_bad_settings() {
        assert!(matches!(
            SlackClient::builder("").build(),
            Err(BuildError::MissingBotToken)
        ));
        assert!(matches!(
            SlackClient::builder("xoxb-1\n2").build(),
            Err(BuildError::InvalidBotToken)
        ));
        assert!(matches!(
            SlackClient::builder("xoxb-1").base_url("not a url").build(),
            Err(BuildError::InvalidBaseUrl(_))
        ));
        assert!(matches!(
            SlackClient::builder("xoxb-1")
                .base_url("ftp://example.com")
                .build(),
            Err(BuildError::InvalidBaseUrl(_))
        ));
    }

    #[test]
    fn debug_never_shows_the_token() -> Result<(), BuildError> {
        let client = SlackClient::builder("xoxb-secret-token").build()?;
        let shown = format!("{client:?} {:?}", SlackClient::builder("xoxb-secret-token"));
        assert!(!shown.contains("xoxb-secret-token"));
        Ok(())
    }
}
