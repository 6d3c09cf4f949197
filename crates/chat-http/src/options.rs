//! [`HttpOptions`]: the outbound settings every adapter builder takes.

use std::time::Duration;

use crate::error::BuildError;
use crate::transport::{DEFAULT_MAX_IN_FLIGHT, Proxy, Transport};

/// How an adapter's outbound calls are sent: the same settings for every
/// platform, given to an adapter's builder with `.http(options)`.
///
/// ```
/// use std::time::Duration;
/// use chat_http::{HttpOptions, Proxy};
///
/// let options = HttpOptions::default()
///     .max_retries(5)
///     .retry_budget(Duration::from_secs(20))
///     .request_timeout(Duration::from_secs(5))
///     .proxy(Proxy::None)
///     .max_in_flight(32);
/// assert_eq!(options.max_retries, 5);
/// assert_eq!(options.max_in_flight, 32);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// How many times a rate-limited call is sent again (default 3). The
    /// call's deadline bounds the waits too.
    pub max_retries: u32,
    /// How long a call without a deadline of its own may take, rate-limit
    /// waits included (default 30 s). A handler's call runs within its run's
    /// budget instead.
    pub retry_budget: Duration,
    /// How long one request may take, connect to last byte (default 10 s).
    pub request_timeout: Duration,
    /// Where `https` calls go through a proxy (default: the environment's).
    pub proxy: Proxy,
    /// How many requests an adapter's client has in flight at once
    /// ([`DEFAULT_MAX_IN_FLIGHT`], 100, by default; 0 counts as 1). More
    /// wait their turn, in order, within their own timeout. This also
    /// bounds the connections the client opens: the pool opens one for every
    /// request that finds no idle connection (ADR 0033).
    pub max_in_flight: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_retries: 3,
            retry_budget: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            proxy: Proxy::FromEnv,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

impl HttpOptions {
    /// Sets [`max_retries`](Self::max_retries).
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets [`retry_budget`](Self::retry_budget).
    #[must_use]
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.retry_budget = budget;
        self
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`proxy`](Self::proxy).
    #[must_use]
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// Sets [`max_in_flight`](Self::max_in_flight).
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n;
        self
    }

    /// A [`Transport`] with these options' proxy and cap on requests in
    /// flight, sending `User-Agent: chat-rs/<version> (<product>)`.
    ///
    /// # Errors
    /// As [`Transport::new`].
    pub fn transport(&self, product: &str) -> Result<Transport, BuildError> {
        Ok(Transport::new(&self.proxy, product)?.max_in_flight(self.max_in_flight))
    }
}
