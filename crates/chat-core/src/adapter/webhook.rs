//! The webhook side of a platform: a delivery verified, parsed, resolved and
//! answered ([`Webhook`]), and the values that pass between it and the
//! runtime ([`Inbound`], [`Resolution`], [`Verdict`]).

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::{AdapterError, BoxError, WebhookError};
use crate::event::Event;
use crate::id::{ScopeKey, ThreadRef};
use crate::reply::Reply;

/// What [`Webhook::parse`] made of a verified delivery.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inbound {
    /// An event for the runtime to admit and dispatch.
    Event(Box<Event>),
    /// Several events in one delivery (a platform that batches, as
    /// WhatsApp's webhooks do): each resolved, routed, admitted and run as
    /// if it had come alone, in order. The delivery is answered as its
    /// worst verdict — failed, then at capacity, then still running, then
    /// accepted — so a platform retries a batch any of whose events it must
    /// send again, and deduplication makes the rest of the retry duplicates.
    Events(Vec<Event>),
    /// A delivery that needs no handler and has a fixed answer
    /// (Slack `url_verification`, `ssl_check`).
    Response(http::Response<Bytes>),
    /// A delivery the bot does not act on (its own messages, unknown event kinds):
    /// acknowledged and recorded as ignored.
    Ignored {
        /// A stable reason for logs (`own-message`, `unsupported:app_rate_limited`).
        reason: String,
    },
}

/// What [`Webhook::resolve`] made of a parsed event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resolution {
    /// Go on: route, admit and dispatch the event (which `resolve` may have
    /// completed, for example by marking the bot's own message).
    Proceed,
    /// Acknowledge the delivery and record it as ignored: an event from a
    /// tenant the bot is not installed in, the installation's own message, or
    /// a lifecycle event (uninstall) the adapter handled itself.
    Ignored {
        /// A stable reason for logs and outcome observers
        /// (`unknown-installation`, `own-message`, `user-tokens-revoked`).
        reason: &'static str,
    },
    /// The event's tenant removed the app (an uninstall, a revoked bot
    /// token): the adapter deleted the installation. The runtime
    /// acknowledges, records the delivery as ignored with `reason`, and
    /// removes the tenant's subscriptions in the background
    /// ([`Subscriptions::unsubscribe_tenant`](crate::Subscriptions::unsubscribe_tenant)).
    Uninstalled {
        /// A stable reason (`app-uninstalled`, `tokens-revoked`,
        /// `app-revoked`).
        reason: &'static str,
    },
}

/// What the runtime decided about a delivery; the adapter says it to its platform
/// ([`Webhook::respond`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// Admitted: running, queued, pending, or acknowledged and dropped by the
    /// strategy. Slack: empty 200. Linear: exactly 200.
    Accepted,
    /// Seen before: acknowledged so the platform stops retrying.
    Duplicate,
    /// No handler wants it: acknowledged.
    Ignored,
    /// Refused before the acknowledgement because the runtime is at capacity (or
    /// shutting down, or a bound said so). Nothing was marked: a retry is new.
    AtCapacity,
    /// Failed before the acknowledgement (state backend error, sync handler
    /// error); the dedupe key was unmarked so the platform's retry runs.
    Failed,
    /// The delivery was refused at the door.
    Rejected(WebhookError),
    /// The handler answered the delivery itself (a slash command's text, a
    /// modal submission's errors): the adapter renders the [`Reply`] in its
    /// platform's form.
    Reply(Reply),
    /// Accepted, and its handler is still running at the acknowledgement
    /// deadline (an inline slash command, a slow sync handler). A delivery the
    /// platform would retry is told to retry, like [`AtCapacity`](Self::AtCapacity)
    /// (the retry is a duplicate of the work in progress); one it never
    /// retries (a Slack slash command) is answered that the answer will follow,
    /// and the handler's reply goes out later ([`Webhook::reply_later`]).
    Working,
}

impl Verdict {
    /// A stable name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Duplicate => "duplicate",
            Self::Ignored => "ignored",
            Self::AtCapacity => "at-capacity",
            Self::Failed => "failed",
            Self::Rejected(_) => "rejected",
            Self::Reply(_) => "reply",
            Self::Working => "working",
        }
    }
}

/// How an adapter's events are serialized by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DefaultLockScope {
    /// One lease per thread (Slack, Linear).
    #[default]
    Thread,
    /// One lease per channel (platforms where conversations are channel-level).
    Channel,
}

impl DefaultLockScope {
    /// The scope of `thread` under this default.
    pub fn scope_of(self, thread: &ThreadRef) -> ScopeKey {
        match self {
            Self::Thread => thread.thread_scope(),
            Self::Channel => thread.channel_scope(),
        }
    }
}

/// The webhook side of a platform: verify → parse → resolve → respond, and
/// the duties around the HTTP response.
///
/// # Contract
///
/// * [`verify`](Self::verify) runs first, over the **raw** body bytes exactly as
///   received, with a constant-time comparison and the platform's timestamp
///   window. Nothing is parsed before it passes.
/// * [`parse`](Self::parse) never panics on any input; malformed input is
///   [`WebhookError::Malformed`].
/// * [`resolve`](Self::resolve) runs after `parse` and before anything else
///   on the ack path; it may complete the event or turn it into an ignore,
///   and a failure of it is answered so the platform retries.
/// * [`respond`](Self::respond) decides how each [`Verdict`] is said to this
///   platform for this delivery kind (a Slack slash command at capacity is a 200
///   with a visible message; a Slack event at capacity is a 503).
/// * A delivery that does not come over HTTP (a socket feed) skips `verify`
///   and `parse`: its reader hands the runtime the [`Event`] itself.
#[async_trait]
pub trait Webhook: Send + Sync + 'static {
    /// The largest body accepted, checked before it is read in full. Default 1 MiB.
    fn max_body_bytes(&self) -> usize {
        1024 * 1024
    }

    /// How long an event's dedupe mark must live to catch every redelivery of
    /// it: the platform's documented retry horizon, with a margin. The
    /// runtime's `dedupe_ttl` option overrides it. Default
    /// [`DEFAULT_DEDUPE_TTL`](crate::state::DEFAULT_DEDUPE_TTL) (24 h).
    fn dedupe_ttl(&self) -> std::time::Duration {
        crate::state::DEFAULT_DEDUPE_TTL
    }

    /// Whether the platform's webhook uses HTTP `method`: the runtime
    /// answers any other with 405 before reading the body. Default: `POST`
    /// only (Meta's verification handshake is a `GET`).
    fn allows_method(&self, method: &http::Method) -> bool {
        *method == http::Method::POST
    }

    /// The default lock scope for this platform's events.
    fn lock_scope(&self) -> DefaultLockScope {
        DefaultLockScope::Thread
    }

    /// The default lock scope of one event, for a platform whose
    /// conversations are channels in some places and threads in others
    /// (Telegram: a private chat or group is one conversation, a forum
    /// topic another). The runtime asks it when its `leases.scope` option
    /// leaves the choice to the adapter. Default: [`lock_scope`](Self::lock_scope).
    fn lock_scope_of(&self, event: &Event) -> DefaultLockScope {
        let _ = event;
        self.lock_scope()
    }

    /// Checks the delivery's signature over the raw body.
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError>;

    /// Turns a verified delivery into an event, a fixed response, or an ignore.
    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError>;

    /// The asynchronous step of the ack path, between [`parse`](Self::parse)
    /// and admission: the runtime calls it once per parsed event, before it
    /// routes the event or touches any state. Adapters in installation mode
    /// look up the event's tenant here (an unknown tenant is
    /// [`Resolution::Ignored`]), apply the installation's own-message filter,
    /// and handle lifecycle events (an uninstall deletes the installation).
    ///
    /// An `Err` means the event could not be resolved *now* (the installation
    /// store is unreachable): the runtime answers [`Verdict::Failed`], so the
    /// platform retries the delivery, and nothing is marked. The error is
    /// logged; it must not carry secrets.
    ///
    /// Default: [`Resolution::Proceed`], with nothing looked up.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let _ = event;
        Ok(Resolution::Proceed)
    }

    /// The HTTP response for a verdict. `event` is `None` when the delivery was
    /// refused before it was parsed.
    fn respond(&self, event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes>;

    /// Whether this adapter can render `reply` (a view within the platform's
    /// limits, a kind of reply it has), checked before the handler gives it:
    /// [`AdapterError::Invalid`] or [`AdapterError::Unsupported`] say why
    /// not. Default: every reply but a modal's answer.
    fn check_reply(&self, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Modal(_) => Err(AdapterError::Unsupported("modals")),
            _ => Ok(()),
        }
    }

    /// Whether a handler's `reply` to `event` can go in the delivery's HTTP
    /// response. When not — the platform reads nothing of the answer
    /// (WhatsApp), or says nothing of how a call in it went and the reply
    /// must not be lost unseen (Telegram, but for a click's toast) — a reply
    /// given while the response is still open goes through
    /// [`reply_later`](Self::reply_later) instead. Default: `true`.
    fn replies_in_response(&self, event: &Event, reply: &Reply) -> bool {
        let _ = (event, reply);
        true
    }

    /// Answers `event` after its HTTP response went out: a handler's
    /// [`Reply`] that could not go inline (its run outlasted the
    /// acknowledgement deadline, or ran detached), through the interaction's
    /// follow-up [`Handle`](crate::Handle) (Slack posts to it). Default:
    /// [`AdapterError::Unsupported`].
    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        let _ = (event, reply);
        Err(AdapterError::Unsupported(
            "answering a delivery after its response",
        ))
    }

    /// Called by the runtime right after an event was acknowledged as accepted
    /// under deferred dispatch, before its handler may have posted anything: the
    /// place for a platform's first-response duty (Linear's first activity within
    /// 10 s). `posted` tells whether the handler already posted into the thread.
    /// Default: nothing to do.
    async fn after_ack(&self, event: &Event, posted: &(dyn Fn() -> bool + Send + Sync)) {
        let _ = (event, posted);
    }

    /// Called by the runtime when a stop request ended a turn (the running
    /// handler was cancelled with `StopRequested` and did not post anything
    /// after it), or arrived while nothing ran: `event` is the stopped turn's
    /// event, or the stop request itself. The place for a platform's closing
    /// duty (Linear ends the session with a final activity, or it stays
    /// "working"). Failures are the adapter's to log. Default: nothing to do.
    async fn stopped(&self, event: &Event) {
        let _ = event;
    }
}

/// The tag of a signature header of the form `<prefix><hex>` (GitHub's and
/// Meta's `X-Hub-Signature-256: sha256=<hex>`), decoded from hex in either
/// case, for the adapter to check against its own MAC in constant time. A
/// missing header is [`WebhookError::MissingHeader`]; one that does not
/// read is [`WebhookError::BadSignature`], which never says why.
///
/// ```
/// use chat_core::adapter::signature_tag;
/// let mut headers = http::HeaderMap::new();
/// headers.insert("x-hub-signature-256", http::HeaderValue::from_static("sha256=0aff"));
/// assert_eq!(signature_tag(&headers, "x-hub-signature-256", "sha256=").ok(), Some(vec![0x0a, 0xff]));
/// assert!(signature_tag(&headers, "x-hub-signature-256", "sha1=").is_err());
/// ```
pub fn signature_tag(
    headers: &http::HeaderMap,
    name: &'static str,
    prefix: &str,
) -> Result<Vec<u8>, WebhookError> {
    let value = headers
        .get(name)
        .ok_or(WebhookError::MissingHeader(name))?
        .to_str()
        .map_err(|_| WebhookError::BadSignature)?;
    let hex_tag = value
        .strip_prefix(prefix)
        .ok_or(WebhookError::BadSignature)?;
    hex::decode(hex_tag).map_err(|_| WebhookError::BadSignature)
}

/// The answer of a platform that reads nothing of it but its status
/// (GitHub, WhatsApp): a verdict that must be sent again is `503` (at
/// capacity) or `500` (failed); a refused delivery its error's status and
/// text (`unauthorized` for a bad signature, which never says why); any
/// other an empty `200`.
pub fn status_response(verdict: &Verdict) -> http::Response<Bytes> {
    let (status, body) = match verdict {
        Verdict::AtCapacity => (http::StatusCode::SERVICE_UNAVAILABLE, Bytes::new()),
        Verdict::Failed => (http::StatusCode::INTERNAL_SERVER_ERROR, Bytes::new()),
        Verdict::Rejected(e) => (
            e.status(),
            Bytes::from(if e.is_unauthorized() {
                "unauthorized".to_owned()
            } else {
                e.to_string()
            }),
        ),
        _ => (http::StatusCode::OK, Bytes::new()),
    };
    let mut r = http::Response::new(body);
    *r.status_mut() = status;
    r
}
