//! [`HttpOptions`]: the outbound settings every adapter builder takes.

use std::time::Duration;

use crate::transport::Proxy;

/// How an adapter's outbound calls are sent: the same four settings for
/// every platform, given to an adapter's builder with `.http(options)`.
///
/// ```
/// use std::time::Duration;
/// use chat_http::{HttpOptions, Proxy};
///
/// let options = HttpOptions::default()
///     .max_retries(5)
///     .retry_budget(Duration::from_secs(20))
///     .request_timeout(Duration::from_secs(5))
///     .proxy(Proxy::None);
/// assert_eq!(options.max_retries, 5);
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
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_retries: 3,
            retry_budget: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            proxy: Proxy::FromEnv,
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
}
