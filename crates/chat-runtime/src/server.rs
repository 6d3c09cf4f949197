//! [`serve`]: the webhook routes on the open internet (feature `server`).
//!
//! A bot's URL is public: anyone can open connections to it. What this server
//! adds to a plain `axum::serve`, each against one way to take a bot down:
//!
//! | setting | default | protects against |
//! |---|---|---|
//! | [`header_read_timeout`](ServerOptions::header_read_timeout) | 2 s | clients that send headers byte by byte and hold a connection (and a file descriptor) open |
//! | [`max_connections`](ServerOptions::max_connections) | 1,024 | running out of file descriptors: past it, new connections wait in the listen backlog |
//! | [`max_in_flight`](ServerOptions::max_in_flight) | 512 | a flood of requests queueing without bound: past it, requests are shed at once with 503 (platforms retry) |
//! | [`request_timeout`](ServerOptions::request_timeout) | 10 s | a request that never finishes (the runtime answers webhooks within `timeouts.ack`; this bounds everything else mounted) |
//!
//! Every request carries its client's address in its extensions, as a
//! `std::net::SocketAddr` (what limits per client read, like the install
//! flow's rate limits in `chat-installations`).
//!
//! The webhook service itself bounds the body's read time
//! ([`TimeoutOptions::body`](crate::TimeoutOptions::body)) and
//! size (the adapter's cap). Built from hyper's HTTP/1 connection with its
//! header-read timer and tower's `ConcurrencyLimit`, `LoadShed` and `Timeout`.
//!
//! ```no_run
//! # async fn f(bot: chat_runtime::Bot) -> std::io::Result<()> {
//! use chat_runtime::server::{ServerOptions, serve};
//!
//! let app = axum::Router::new().route_service("/webhooks/slack", bot.webhook("slack"));
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
//! serve(listener, app, ServerOptions::default(), chat_runtime::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

/// The limits of [`serve`]. See the [module docs](self) for what each protects
/// against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// How long a connection may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// Connections open at once; past it, new ones wait to be accepted.
    pub max_connections: usize,
    /// Requests handled at once; past it, requests are answered 503 at once.
    pub max_in_flight: usize,
    /// How long one request may take, body included (answered 503 past it).
    pub request_timeout: Duration,
    /// How long [`serve`] waits for open connections at shutdown.
    pub shutdown_grace: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(2),
            max_connections: 1024,
            max_in_flight: 512,
            request_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

impl ServerOptions {
    /// Sets [`header_read_timeout`](Self::header_read_timeout).
    #[must_use]
    pub fn header_read_timeout(mut self, d: Duration) -> Self {
        self.header_read_timeout = d;
        self
    }

    /// Sets [`max_connections`](Self::max_connections) (at least 1).
    #[must_use]
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Sets [`max_in_flight`](Self::max_in_flight) (at least 1).
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    #[must_use]
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.request_timeout = d;
        self
    }

    /// Sets [`shutdown_grace`](Self::shutdown_grace).
    #[must_use]
    pub fn shutdown_grace(mut self, d: Duration) -> Self {
        self.shutdown_grace = d;
        self
    }
}

type Body = UnsyncBoxBody<Bytes, BoxError>;

/// Serves `service` (an axum `Router`, a [`WebhookService`](crate::WebhookService),
/// any `tower::Service` of HTTP requests) on `listener` with the limits of
/// `options`, until `shutdown` resolves; then stops accepting and gives open
/// connections up to [`shutdown_grace`](ServerOptions::shutdown_grace).
///
/// Call [`Bot::shutdown`](crate::Bot::shutdown) first, then resolve
/// `shutdown` (see [`shutdown_signal`](crate::shutdown_signal)).
///
/// # Errors
/// Only when accepting fails for a reason other than a client's (the
/// listener itself is gone).
pub async fn serve<S, B>(
    listener: TcpListener,
    service: S,
    options: ServerOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    S: Service<http::Request<Incoming>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let stack = ServiceBuilder::new()
        .map_result(answer)
        .load_shed()
        .concurrency_limit(options.max_in_flight)
        .timeout(options.request_timeout)
        .service(service.map_response(boxed::<B>));
    let connections = Arc::new(Semaphore::new(options.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&connections).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_client_error(&e) => continue,
                Err(e) => {
                    // Out of descriptors and the like: wait rather than spin.
                    tracing::warn!(error = %e, "server: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(options.header_read_timeout);
        // Each request carries its client's address, for whatever limits
        // per client (the install flow's rate limits read it).
        let service = stack
            .clone()
            .map_request(move |mut r: http::Request<Incoming>| {
                r.extensions_mut().insert(peer);
                r
            });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(options.shutdown_grace, graceful.shutdown()).await;
    Ok(())
}

fn boxed<B>(r: http::Response<B>) -> http::Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    r.map(|b| b.map_err(Into::into).boxed_unsync())
}

/// Errors of one client's connection attempt: go on accepting.
fn is_client_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionRefused
    )
}

/// Load shedding and the request deadline as answers: 503, which platforms
/// retry.
fn answer(
    result: Result<http::Response<Body>, BoxError>,
) -> Result<http::Response<Body>, BoxError> {
    Ok(result.unwrap_or_else(|e| {
        let reason = if e.is::<tower::load_shed::error::Overloaded>() {
            "overloaded"
        } else if e.is::<tower::timeout::error::Elapsed>() {
            "request timed out"
        } else {
            "unavailable"
        };
        let mut r = http::Response::new(
            Full::new(Bytes::from_static(reason.as_bytes()))
                .map_err(|never| match never {})
                .boxed_unsync(),
        );
        *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
        r
    }))
}
