//! [`ScriptedAdapter`]: a [`PlatformAdapter`] for runtime tests. Its deliveries
//! are JSON-serialized [`Event`]s, its "signature" is a header, and what handlers
//! post is recorded for assertions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, Event, Inbound, MessageRef, OutboundMessage, Platform, PlatformAdapter,
    ThreadRef, Verdict, WebhookError,
};

use crate::events::EventBuilder;

/// The header a scripted delivery must carry to pass [`Webhook::verify`](chat_core::Webhook::verify).
pub const SIGNATURE_HEADER: &str = "x-scripted-signature";
const SIGNATURE: &str = "valid";

/// One recorded post.
struct Post {
    thread: ThreadRef,
    text: String,
    id: String,
    key: Option<chat_core::PostKey>,
}

/// A scripted platform. Cheap to clone; clones share their record of posts.
///
/// Like the real adapters, it keeps replies idempotent: a post whose
/// [`PostKey`](chat_core::PostKey) says it is a repeated run returns the
/// message an earlier attempt posted at the same position instead of posting
/// again.
#[derive(Clone)]
pub struct ScriptedAdapter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ScriptedAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedAdapter")
            .field("name", &self.inner.name)
            .field("posts", &self.inner.posts.lock().map_or(0, |p| p.len()))
            .finish_non_exhaustive()
    }
}

struct Inner {
    name: String,
    posts: Mutex<Vec<Post>>,
    /// Events whose session the adapter ended after a stop.
    stopped: Mutex<Vec<String>>,
    next_id: AtomicU64,
    max_body: usize,
    /// Answers sent after the response ([`Webhook::reply_later`](chat_core::Webhook::reply_later)).
    later: Mutex<Vec<chat_core::Reply>>,
    /// Edits: (message id, new text).
    edits: Mutex<Vec<(String, String)>>,
    /// How long a later answer takes to go out.
    later_latency: Mutex<std::time::Duration>,
}

impl ScriptedAdapter {
    /// The scripted platform's identifier: a platform defined outside `chat-core`,
    /// the way a third-party adapter names its own.
    pub const PLATFORM: Platform = Platform::new("scripted");

    /// An adapter named `name` (its webhook's name).
    pub fn new(name: &str) -> Self {
        Self::with_body_limit(name, 64 * 1024)
    }

    /// An adapter with a body cap of `max_body` bytes.
    pub fn with_body_limit(name: &str, max_body: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                posts: Mutex::new(Vec::new()),
                stopped: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(0),
                max_body,
                later: Mutex::new(Vec::new()),
                edits: Mutex::new(Vec::new()),
                later_latency: Mutex::new(std::time::Duration::ZERO),
            }),
        }
    }

    /// A signed delivery of `event`.
    pub fn request(&self, event: &Event) -> http::Request<Bytes> {
        let body = serde_json::to_vec(event).unwrap_or_default();
        self.raw_request(Bytes::from(body), true)
    }

    /// A delivery of raw bytes, signed or not.
    pub fn raw_request(&self, body: Bytes, signed: bool) -> http::Request<Bytes> {
        let mut r = http::Request::new(body);
        *r.method_mut() = http::Method::POST;
        if signed {
            r.headers_mut()
                .insert(SIGNATURE_HEADER, http::HeaderValue::from_static(SIGNATURE));
        }
        r
    }

    /// A thread of this platform.
    pub fn thread(&self, tenant: &str, channel: &str, thread: &str) -> ThreadRef {
        ThreadRef::new(Self::PLATFORM, tenant, channel, thread)
    }

    /// A message mentioning the bot.
    pub fn mention(
        &self,
        tenant: &str,
        channel: &str,
        thread: &str,
        id: &str,
        text: &str,
    ) -> Event {
        EventBuilder::new(self.thread(tenant, channel, thread))
            .id(id)
            .mention(text)
            .build()
    }

    /// A plain message.
    pub fn message(
        &self,
        tenant: &str,
        channel: &str,
        thread: &str,
        id: &str,
        text: &str,
    ) -> Event {
        EventBuilder::new(self.thread(tenant, channel, thread))
            .id(id)
            .message(text)
            .build()
    }

    /// The texts posted so far, in order.
    pub fn posts(&self) -> Vec<String> {
        self.posted().into_iter().map(|(_, t)| t).collect()
    }

    /// The events [`Webhook::stopped`](chat_core::Webhook::stopped) was called for (the platform's
    /// closing word after a stop the handler did not answer), in order.
    pub fn stopped(&self) -> Vec<String> {
        self.inner
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The answers sent after the response ([`Webhook::reply_later`](chat_core::Webhook::reply_later)),
    /// in order.
    pub fn later_replies(&self) -> Vec<chat_core::Reply> {
        self.inner
            .later
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Makes every later answer take `latency` to go out (on tokio's clock).
    pub fn set_later_reply_latency(&self, latency: std::time::Duration) {
        *self
            .inner
            .later_latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = latency;
    }

    /// The edits so far, in order: (message id, new text).
    pub fn edits(&self) -> Vec<(String, String)> {
        self.inner
            .edits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The (thread, text) pairs posted so far, in order.
    pub fn posted(&self) -> Vec<(ThreadRef, String)> {
        self.inner
            .posts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|p| (p.thread.clone(), p.text.clone()))
            .collect()
    }
}

fn status(code: http::StatusCode, body: Bytes) -> http::Response<Bytes> {
    let mut r = http::Response::new(body);
    *r.status_mut() = code;
    r
}

impl PlatformAdapter for ScriptedAdapter {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn platform(&self) -> Platform {
        Self::PLATFORM
    }
}

#[async_trait]
impl chat_core::Webhook for ScriptedAdapter {
    fn max_body_bytes(&self) -> usize {
        self.inner.max_body
    }

    fn verify(&self, parts: &http::request::Parts, _body: &Bytes) -> Result<(), WebhookError> {
        match parts.headers.get(SIGNATURE_HEADER) {
            None => Err(WebhookError::MissingHeader(SIGNATURE_HEADER)),
            Some(v) if v.as_bytes() == SIGNATURE.as_bytes() => Ok(()),
            Some(_) => Err(WebhookError::BadSignature),
        }
    }

    fn parse(&self, _parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        serde_json::from_slice::<Event>(body)
            .map(|e| Inbound::Event(Box::new(e)))
            .map_err(|e| WebhookError::Malformed(e.to_string()))
    }

    fn respond(&self, _event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        match verdict {
            Verdict::AtCapacity | Verdict::Working => {
                status(http::StatusCode::SERVICE_UNAVAILABLE, Bytes::new())
            }
            Verdict::Failed => status(http::StatusCode::INTERNAL_SERVER_ERROR, Bytes::new()),
            Verdict::Rejected(e) => status(e.status(), Bytes::new()),
            // A platform body as it is; the portable replies as their JSON.
            Verdict::Reply(chat_core::Reply::Platform(body)) => {
                status(http::StatusCode::OK, Bytes::from(body.to_string()))
            }
            Verdict::Reply(r) => status(
                http::StatusCode::OK,
                Bytes::from(serde_json::to_vec(r).unwrap_or_default()),
            ),
            _ => status(http::StatusCode::OK, Bytes::new()),
        }
    }

    async fn reply_later(
        &self,
        _event: &Event,
        reply: &chat_core::Reply,
    ) -> Result<(), AdapterError> {
        let latency = *self
            .inner
            .later_latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        self.inner
            .later
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reply.clone());
        Ok(())
    }

    async fn stopped(&self, event: &Event) {
        self.inner
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.id.to_string());
    }
}

#[async_trait]
impl chat_core::Messaging for ScriptedAdapter {
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        let mut posts = self
            .inner
            .posts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = message.post_key.as_ref().filter(|k| k.attempt > 1)
            && let Some(earlier) = posts.iter().find(|p| {
                p.key
                    .as_ref()
                    .is_some_and(|k| k.event_id == key.event_id && k.position == key.position)
            })
        {
            return Ok(MessageRef {
                thread: earlier.thread.clone(),
                id: earlier.id.clone(),
            });
        }
        let id = format!("m{}", self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        posts.push(Post {
            thread: thread.clone(),
            text: message.text.clone(),
            id: id.clone(),
            key: message.post_key.clone(),
        });
        Ok(MessageRef {
            thread: thread.clone(),
            id,
        })
    }

    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        self.inner
            .edits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((message.id.clone(), content.text.clone()));
        Ok(())
    }

    async fn delete(&self, _message: &MessageRef) -> Result<(), AdapterError> {
        Ok(())
    }

    async fn react(&self, _message: &MessageRef, _emoji: &str) -> Result<(), AdapterError> {
        Ok(())
    }
}
