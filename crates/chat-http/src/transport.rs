//! [`Transport`]: hyper's pooled HTTP/1.1 client over rustls (ring, the
//! webpki roots), with `TCP_NODELAY`, keep-alive, a connect timeout, a
//! timeout per request and a cap on the size of an answer.
//!
//! Every call sends a body already in memory and reads its answer whole, so
//! the transport is one function and nothing else: no redirects are followed
//! (a 3xx is an answer like any other, which the adapters treat as an error:
//! a redirect could carry a token to another origin), no cookies, no
//! compression. `https` targets go through an HTTP proxy's `CONNECT` tunnel
//! when one is configured ([`Proxy`]); plain `http` targets (local fakes) are
//! always reached directly.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use chat_core::BoxError;
use http::header::{AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::uri::Scheme;
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

use crate::error::{BuildError, TransportError};

/// The largest answer a [`Transport`] reads (a long Slack
/// `conversations.replies` page or a Linear issue with its comments is a few
/// hundred KB): a larger one fails the call ([`TransportError::TooLarge`])
/// instead of growing the heap. A declared length above it fails before
/// anything is read; a chunked answer fails when it passes it.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

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

/// The pooled client every outbound call of an adapter (and of its clones)
/// goes through. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct Transport {
    client: Client<HttpsConnector<Connector>, Full<Bytes>>,
    user_agent: HeaderValue,
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
        })
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

    /// Sends `request` (its `User-Agent` set to the transport's); the answer
    /// read whole, all within `timeout`.
    pub async fn send(
        &self,
        request: Request<Bytes>,
        timeout: Duration,
    ) -> Result<Answer, TransportError> {
        let (mut parts, body) = request.into_parts();
        parts.headers.insert(USER_AGENT, self.user_agent.clone());
        let request = Request::from_parts(parts, Full::new(body));
        let exchange = async {
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
