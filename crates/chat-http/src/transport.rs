//! [`Transport`]: hyper's pooled HTTP/1.1 client over rustls (ring, the
//! webpki roots), with `TCP_NODELAY`, keep-alive, a connect timeout, a
//! timeout per request, a cap on the requests in flight (and so on the
//! connections open) and a cap on the size of an answer.
//!
//! Every API call sends a body already in memory and reads its answer whole:
//! no redirects are followed (a 3xx is an answer like any other, which the
//! adapters treat as an error: a redirect could carry a token to another
//! origin), no cookies, no compression. File downloads
//! ([`Transport::download`]) stream, capped, and follow redirects, with the
//! credential only on the first origin. `https` targets go through an HTTP proxy's `CONNECT` tunnel
//! when one is configured ([`Proxy`]); plain `http` targets (local fakes) are
//! always reached directly.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use chat_core::{BoxError, Download};
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, LOCATION, USER_AGENT};
use http::uri::{Authority, Scheme};
use http::{HeaderMap, HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Body as _;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::error::{BuildError, TransportError};

/// The largest answer a [`Transport`] reads (a long Slack
/// `conversations.replies` page or a Linear issue with its comments is a few
/// hundred KB): a larger one fails the call ([`TransportError::TooLarge`])
/// instead of growing the heap. A declared length above it fails before
/// anything is read; a chunked answer fails when it passes it.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// How many requests a [`Transport`] has in flight at once unless told
/// otherwise ([`HttpOptions::max_in_flight`](crate::HttpOptions::max_in_flight)):
/// the same as Slack's own Node SDK's `maxRequestConcurrency`.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 100;

/// How many redirects [`Transport::download`] follows.
pub const MAX_REDIRECTS: usize = 5;

/// How long a TCP connect (and a proxy's `CONNECT`) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an idle pooled connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Where `https` calls go through a proxy. Its `Debug` output never shows
/// the proxy's credentials.
#[derive(Clone, Default)]
pub enum Proxy {
    /// As the environment says, like curl: `HTTPS_PROXY` (or `ALL_PROXY`),
    /// with the hosts of `NO_PROXY` reached directly. The default.
    #[default]
    FromEnv,
    /// Through this HTTP proxy (`http://[user:password@]host:port`; the
    /// credentials are sent as `Proxy-Authorization: Basic`), except the
    /// hosts of the comma-separated `no_proxy` list.
    Http {
        /// The proxy's URL.
        url: String,
        /// Hosts reached directly, in `NO_PROXY`'s syntax.
        no_proxy: String,
    },
    /// Never through a proxy.
    None,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Proxy::FromEnv => f.write_str("FromEnv"),
            Proxy::None => f.write_str("None"),
            Proxy::Http { url, no_proxy } => f
                .debug_struct("Http")
                .field("url", &redacted(url))
                .field("no_proxy", no_proxy)
                .finish(),
        }
    }
}

impl Proxy {
    fn matcher(&self) -> Result<Option<Matcher>, BuildError> {
        let matcher = match self {
            Proxy::None => return Ok(None),
            Proxy::FromEnv => Matcher::from_env(),
            Proxy::Http { url, no_proxy } => {
                let uri: Uri = url
                    .parse()
                    .map_err(|_| BuildError::InvalidProxy(redacted(url)))?;
                if uri.scheme() != Some(&Scheme::HTTP) || uri.host().is_none() {
                    return Err(BuildError::InvalidProxy(redacted(url)));
                }
                Matcher::builder()
                    .https(url.as_str())
                    .no(no_proxy.as_str())
                    .build()
            }
        };
        // The proxy an `https` call would take, if any, must be one this
        // transport can tunnel through: plain HTTP.
        let probe = Uri::from_static("https://api.invalid/");
        if let Some(proxy) = matcher.intercept(&probe)
            && proxy.uri().scheme() != Some(&Scheme::HTTP)
        {
            return Err(BuildError::InvalidProxy(redacted(&proxy.uri().to_string())));
        }
        Ok(Some(matcher))
    }
}

/// A proxy URL without its credentials, for an error message.
fn redacted(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((before, host)) => match before.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://<redacted>@{host}"),
            None => format!("<redacted>@{host}"),
        },
        None => url.to_owned(),
    }
}

/// One answer: its status, its headers, its body (read whole).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The answer's headers (`Retry-After`, rate-limit headers …).
    pub headers: HeaderMap,
    /// The body, at most [`MAX_ANSWER_BYTES`].
    pub body: Bytes,
}

impl Answer {
    /// A header's value as text, if present and printable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Whether `a` and `b` have one origin: the same scheme and host (compared
/// without case) and port (the scheme's default when none is written) — the
/// test for whether a credential meant for one may go to the other.
///
/// ```
/// # use chat_http::same_origin;
/// # fn main() -> Result<(), http::uri::InvalidUri> {
/// let u = |s: &str| s.parse::<http::Uri>();
/// assert!(same_origin(&u("https://Files.Slack.com/a")?, &u("https://files.slack.com:443/b")?));
/// assert!(!same_origin(&u("https://files.slack.com/a")?, &u("http://files.slack.com/a")?));
/// assert!(!same_origin(&u("https://files.slack.com/a")?, &u("https://files.slack.com.evil/a")?));
/// # Ok(()) }
/// ```
pub fn same_origin(a: &Uri, b: &Uri) -> bool {
    let a = Origin::of(a);
    a.1.is_some() && a == Origin::of(b)
}

/// Where a request goes, as far as credentials care: scheme, host, port.
#[derive(Debug, PartialEq, Eq)]
struct Origin(Option<String>, Option<String>, Option<u16>);

impl Origin {
    fn of(uri: &Uri) -> Self {
        let scheme = uri.scheme_str().map(str::to_ascii_lowercase);
        let port = uri.port_u16().or(match scheme.as_deref() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        });
        Self(scheme, uri.host().map(str::to_ascii_lowercase), port)
    }
}

/// A `Location` against the URI it answered: absolute, or a path on the same
/// origin.
fn resolve(base: &Uri, location: &str) -> Option<Uri> {
    let uri = location.parse::<Uri>().ok()?;
    if uri.scheme().is_some() {
        return Some(uri);
    }
    if !location.starts_with('/') || location.starts_with("//") {
        return None;
    }
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(location.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// TCP, or a tunnel through the proxy the matcher names for the target.
#[derive(Clone)]
struct Connector {
    tcp: HttpConnector,
    proxy: Option<Arc<Matcher>>,
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TcpStream>, BoxError>> + Send>>;

impl tower::Service<Uri> for Connector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, target: Uri) -> Connecting {
        let mut tcp = self.tcp.clone();
        let through = self
            .proxy
            .as_ref()
            .filter(|_| target.scheme() == Some(&Scheme::HTTPS))
            .and_then(|m| m.intercept(&target));
        match through {
            Some(proxy) => {
                let mut tunnel = Tunnel::new(proxy.uri().clone(), tcp);
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                Box::pin(async move { Ok(tunnel.call(target).await?) })
            }
            None => Box::pin(async move { Ok(tcp.call(target).await?) }),
        }
    }
}

/// How many origins' `Host` headers a [`Transport`] remembers: an adapter
/// calls one API origin, and a few more for files.
const HOSTS_KEPT: usize = 8;

/// The pooled client every outbound call of an adapter (and of its clones)
/// goes through. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct Transport {
    client: Client<HttpsConnector<Connector>, Full<Bytes>>,
    user_agent: HeaderValue,
    /// The `Host` header of each origin called, made once: hyper's client
    /// would format it anew for every request.
    hosts: Arc<Mutex<Vec<(Scheme, Authority, HeaderValue)>>>,
    /// A permit per request in flight (shared by clones).
    in_flight: Arc<Semaphore>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport").finish_non_exhaustive()
    }
}

impl Transport {
    /// A transport through `proxy`, sending `User-Agent: chat-rs/<version>
    /// (<product>)` (`product` names the adapter: `"chat-slack"`).
    pub fn new(proxy: &Proxy, product: &str) -> Result<Self, BuildError> {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let connector = Connector {
            tcp,
            proxy: proxy.matcher()?.map(Arc::new),
        };
        let https = HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| BuildError::Tls(Box::new(e)))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .build(https);
        Ok(Self {
            client,
            user_agent: HeaderValue::try_from(format!(
                "chat-rs/{} ({product})",
                env!("CARGO_PKG_VERSION")
            ))
            .map_err(|_| BuildError::InvalidUserAgent(product.to_owned()))?,
            hosts: Arc::default(),
            in_flight: Arc::new(Semaphore::new(DEFAULT_MAX_IN_FLIGHT)),
        })
    }

    /// At most `n` requests in flight at once through this transport and its
    /// clones (0 counts as 1; [`DEFAULT_MAX_IN_FLIGHT`] unless set): more
    /// wait their turn, first come first served, and the wait counts against
    /// the request's timeout. Connections are opened only for requests in
    /// flight, so this bounds them too. A download counts while its answer's
    /// head is awaited; its body streams outside the count.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.in_flight = Arc::new(Semaphore::new(n.clamp(1, Semaphore::MAX_PERMITS)));
        self
    }

    /// Waits for a turn among the requests in flight.
    async fn permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>, TransportError> {
        self.in_flight
            .acquire()
            .await
            .map_err(|e| TransportError::Failed(Box::new(e)))
    }

    /// Sets the headers every request carries: the transport's
    /// `User-Agent`, and `Host` as hyper's client would write it (the
    /// target's host, with its port when it is not the scheme's default),
    /// from the origins already seen when it is one of them.
    fn stamp(&self, headers: &mut HeaderMap, uri: &Uri) {
        headers.insert(USER_AGENT, self.user_agent.clone());
        if headers.contains_key(HOST) {
            return;
        }
        if let Some(host) = self.host(uri) {
            headers.insert(HOST, host);
        }
    }

    /// `uri`'s `Host` header (`None` without an authority: hyper refuses
    /// such a request).
    fn host(&self, uri: &Uri) -> Option<HeaderValue> {
        let (scheme, authority) = (uri.scheme()?, uri.authority()?);
        let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, _, host)) = hosts.iter().find(|(s, a, _)| s == scheme && a == authority) {
            return Some(host.clone());
        }
        let name = authority.host();
        let default_port = match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        };
        let host = match authority.port_u16() {
            Some(port) if Some(port) != default_port => {
                HeaderValue::try_from(format!("{name}:{port}")).ok()?
            }
            _ => HeaderValue::from_str(name).ok()?,
        };
        if hosts.len() < HOSTS_KEPT {
            hosts.push((scheme.clone(), authority.clone(), host.clone()));
        }
        Some(host)
    }

    /// `POST uri` with `body` (and `Authorization: auth`); the answer read
    /// whole, all within `timeout`.
    pub async fn post(
        &self,
        uri: Uri,
        content_type: HeaderValue,
        auth: Option<&HeaderValue>,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Answer, TransportError> {
        let mut request = Request::post(uri)
            .body(body)
            .map_err(|e| TransportError::Failed(Box::new(e)))?;
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, content_type);
        if let Some(auth) = auth {
            headers.insert(AUTHORIZATION, auth.clone());
        }
        self.send(request, timeout).await
    }

    /// `GET uri` of a file, its body streamed into a [`Download`] capped at
    /// `limit` bytes; each step (the answer's head, every chunk after it)
    /// within `timeout`.
    ///
    /// Redirects (301, 302, 303, 307, 308) are followed up to
    /// [`MAX_REDIRECTS`] times; `auth` is sent only while the target has the
    /// origin (scheme, host, port) of `uri`, never to another one. The
    /// status is the last answer's: a caller treats anything but a 2xx as
    /// an error (its body is not read).
    pub async fn download(
        &self,
        uri: Uri,
        auth: Option<&HeaderValue>,
        limit: u64,
        timeout: Duration,
    ) -> Result<(StatusCode, Download), TransportError> {
        self.follow(uri, auth, limit, timeout).await
    }

    /// [`download`](Self::download) as an adapter's `Downloads` answers it:
    /// a 2xx is the download, any other status
    /// [`AdapterError::Status`](chat_core::AdapterError::Status) (a file
    /// deleted, a scope missing), a transport failure its adapter error.
    pub async fn download_file(
        &self,
        uri: Uri,
        auth: Option<&HeaderValue>,
        limit: u64,
        timeout: Duration,
    ) -> Result<Download, chat_core::AdapterError> {
        let (status, download) = self
            .follow(uri, auth, limit, timeout)
            .await
            .map_err(TransportError::into_adapter)?;
        if status.is_success() {
            Ok(download)
        } else {
            Err(chat_core::AdapterError::Status(status))
        }
    }

    async fn follow(
        &self,
        uri: Uri,
        auth: Option<&HeaderValue>,
        limit: u64,
        timeout: Duration,
    ) -> Result<(StatusCode, Download), TransportError> {
        let origin = Origin::of(&uri);
        let mut target = uri;
        for _ in 0..=MAX_REDIRECTS {
            let mut request = Request::get(target.clone())
                .body(Full::new(Bytes::new()))
                .map_err(|e| TransportError::Failed(Box::new(e)))?;
            let headers = request.headers_mut();
            headers.insert(USER_AGENT, self.user_agent.clone());
            if let Some(auth) = auth
                && Origin::of(&target) == origin
            {
                headers.insert(AUTHORIZATION, auth.clone());
            }
            let head = async {
                let _permit = self.permit().await?;
                self.client
                    .request(request)
                    .await
                    .map_err(|e| TransportError::Failed(Box::new(e)))
            };
            let response = tokio::time::timeout(timeout, head)
                .await
                .map_err(|_| TransportError::TimedOut)??;
            let status = response.status();
            if status.is_redirection()
                && let Some(next) = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| resolve(&target, l))
            {
                target = next;
                continue;
            }
            let header = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v: &HeaderValue| v.to_str().ok())
                    .map(str::to_owned)
            };
            let content_type = header(CONTENT_TYPE);
            let length = header(CONTENT_LENGTH).and_then(|l| l.parse::<u64>().ok());
            let body = response.into_body();
            let chunks = futures_util::stream::unfold(body, move |mut body| async move {
                loop {
                    let frame = match tokio::time::timeout(timeout, body.frame()).await {
                        Err(_) => {
                            return Some((Err(TransportError::TimedOut.into_adapter()), body));
                        }
                        Ok(None) => return None,
                        Ok(Some(Err(e))) => {
                            let failed = TransportError::Failed(Box::new(e));
                            return Some((Err(failed.into_adapter()), body));
                        }
                        Ok(Some(Ok(frame))) => frame,
                    };
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data), body));
                    }
                }
            });
            let download = Download::new(content_type, length, Box::pin(chunks), limit);
            return Ok((status, download));
        }
        Err(TransportError::TooManyRedirects)
    }

    /// Sends `request` (its `User-Agent` set to the transport's); the answer
    /// read whole, all within `timeout`.
    pub async fn send(
        &self,
        request: Request<Bytes>,
        timeout: Duration,
    ) -> Result<Answer, TransportError> {
        let (mut parts, body) = request.into_parts();
        self.stamp(&mut parts.headers, &parts.uri);
        let request = Request::from_parts(parts, Full::new(body));
        let exchange = async {
            let _permit = self.permit().await?;
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| TransportError::Failed(Box::new(e)))?;
            let (parts, body) = response.into_parts();
            if body.size_hint().lower() > MAX_ANSWER_BYTES as u64 {
                return Err(TransportError::TooLarge);
            }
            let body = Limited::new(body, MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<LengthLimitError>() {
                        TransportError::TooLarge
                    } else {
                        TransportError::Failed(e)
                    }
                })?
                .to_bytes();
            Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| TransportError::TimedOut)?
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

    fn host(t: &Transport, uri: &str) -> Result<Option<String>> {
        match t.host(&Uri::try_from(uri)?) {
            Some(h) => Ok(Some(h.to_str()?.to_owned())),
            None => Ok(None),
        }
    }

    fn kept(t: &Transport) -> usize {
        t.hosts.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    #[test]
    fn the_host_header_is_written_as_hyper_writes_it_and_kept_per_origin() -> Result<()> {
        let t = Transport::new(&Proxy::None, "test")?;
        // The port only when it is not the scheme's default; credentials in
        // the authority never reach the header.
        let cases = [
            ("https://slack.com/api/chat.postMessage", "slack.com"),
            ("https://slack.com:443/api", "slack.com"),
            ("http://slack.com:443/api", "slack.com:443"),
            ("http://127.0.0.1:8080/x", "127.0.0.1:8080"),
            ("http://[::1]:80/x", "[::1]"),
            ("https://user:pw@example.com/", "example.com"),
        ];
        for _ in 0..2 {
            for (uri, expected) in cases {
                assert_eq!(host(&t, uri)?.as_deref(), Some(expected), "{uri}");
            }
            assert_eq!(host(&t, "/no/authority")?, None);
        }
        // The second round was answered from what the first one kept.
        assert_eq!(kept(&t), 6);
        // Past the bound, a new origin is still answered, and not kept.
        for port in 9000..9020 {
            let uri = format!("http://example.org:{port}/");
            assert_eq!(host(&t, &uri)?, Some(format!("example.org:{port}")));
        }
        assert_eq!(kept(&t), HOSTS_KEPT);
        Ok(())
    }
}
