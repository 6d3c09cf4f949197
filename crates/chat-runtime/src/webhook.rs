//! The webhook endpoint: a `tower::Service` per adapter.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use bytes::{Buf, BufMut, BytesMut};
use chat_core::{BoxError, PlatformAdapter, Verdict, WebhookError};
use http_body_util::{BodyExt, Full};

use crate::shared::Shared;

/// The webhook of one adapter, from [`Bot::webhook`](crate::Bot::webhook). A
/// `tower::Service<http::Request<B>>` for any body `B`, with `Error = Infallible`;
/// mount it in axum with `route_service`, or serve it with hyper.
///
/// It reads the body up to the adapter's cap (413 past it), then runs the ack
/// path: verify, parse, admission, one state round trip, the answer.
#[derive(Clone)]
pub struct WebhookService {
    shared: Arc<Shared>,
    adapter: Option<Arc<dyn PlatformAdapter>>,
}

impl std::fmt::Debug for WebhookService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookService")
            .field("adapter", &self.adapter.as_ref().map(|a| a.name()))
            .finish_non_exhaustive()
    }
}

impl WebhookService {
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> Self {
        let adapter = shared.adapter(name);
        if adapter.is_none() {
            tracing::warn!(
                adapter = name,
                "webhook for an unknown adapter: it answers 404"
            );
        }
        Self { shared, adapter }
    }
}

pub(crate) fn not_found() -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::new());
    *r.status_mut() = http::StatusCode::NOT_FOUND;
    r
}

impl<B> tower::Service<http::Request<B>> for WebhookService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        let adapter = self.adapter.clone();
        Box::pin(async move {
            let Some(adapter) = adapter else {
                return Ok(not_found().map(Full::new));
            };
            let response = receive(&shared, adapter, request).await;
            Ok(response.map(Full::new))
        })
    }
}

async fn receive<B>(
    shared: &Arc<Shared>,
    adapter: Arc<dyn PlatformAdapter>,
    request: http::Request<B>,
) -> http::Response<Bytes>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let (parts, body) = request.into_parts();
    if !adapter.allows_method(&parts.method) {
        return adapter.respond(None, &Verdict::Rejected(WebhookError::MethodNotAllowed));
    }
    let limit = adapter.max_body_bytes();
    let too_large = Verdict::Rejected(WebhookError::TooLarge { limit });
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return adapter.respond(None, &too_large);
    }
    let capacity = declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit));
    let read = read_body(body, limit, capacity);
    let body = match tokio::time::timeout(shared.options().timeouts.body, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => return adapter.respond(None, &Verdict::Rejected(e)),
        Err(_) => {
            return adapter.respond(None, &Verdict::Rejected(WebhookError::BodyTimeout));
        }
    };
    crate::dispatch::deliver_detached(shared, adapter, parts, body).await
}

/// Reads a body into one buffer under `limit` bytes: however the client splits
/// it (a megabyte of one-byte chunks), each frame is copied in and dropped, so
/// a request holds at most `limit` bytes, never one allocation per chunk.
async fn read_body<B>(body: B, limit: usize, capacity: usize) -> Result<Bytes, WebhookError>
where
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut buf = BytesMut::with_capacity(capacity);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| WebhookError::BodyRead)?;
        if let Ok(data) = frame.into_data() {
            if data.remaining() > limit - buf.len() {
                return Err(WebhookError::TooLarge { limit });
            }
            buf.put(data);
        }
    }
    Ok(buf.freeze())
}
