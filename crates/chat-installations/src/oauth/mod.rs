//! The OAuth install flow of an app distributed to many workspaces, for any
//! platform: [`OAuthFlow`] over an [`OAuthProvider`] (chat-slack and
//! chat-linear each supply one; a third platform writes its own).
//!
//! The flow owns what is the same on every platform and security-sensitive:
//! the `state` parameter (HMAC-signed, expiring, bound to the browser by a
//! cookie: [`state`]), the callback's checks and answers, storing the
//! installation, and refreshing tokens one at a time per tenant. A provider
//! owns what differs: its authorize parameters, the code exchange, and the
//! refresh.
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use chat_core::{Installation, Platform, Secret};
//! use chat_installations::MemoryInstallations;
//! use chat_installations::oauth::{OAuthClient, OAuthError, OAuthFlow, OAuthProvider, ProviderDefaults};
//!
//! /// A platform whose token endpoint answers every code with one token.
//! #[derive(Debug)]
//! struct Example;
//!
//! const EXAMPLE: Platform = Platform::new("example");
//!
//! #[async_trait]
//! impl OAuthProvider for Example {
//!     fn platform(&self) -> Platform {
//!         EXAMPLE
//!     }
//!     fn defaults(&self) -> ProviderDefaults {
//!         ProviderDefaults::new("https://example.com/oauth/authorize", "example_oauth")
//!             .scopes(&["read", "write"])
//!     }
//!     async fn exchange(&self, _: &OAuthClient, code: &str, now_ms: u64) -> Result<Installation, OAuthError> {
//!         Ok(Installation::new(EXAMPLE, "team-1", Secret::new(format!("token-for-{code}")))
//!             .with_installed_at_ms(now_ms))
//!     }
//! }
//!
//! let flow = OAuthFlow::builder(Example)
//!     .client_id("client-1")
//!     .client_secret("client-secret")
//!     .state_secret("a-state-secret-of-32-bytes-long!")
//!     .installations(Arc::new(MemoryInstallations::new()))
//!     .build()?;
//! let (url, _nonce) = flow.authorize()?;
//! assert!(url.starts_with("https://example.com/oauth/authorize?client_id=client-1&scope=read%2Cwrite&state="));
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

mod error;
mod flow;
mod limit;
mod provider;
pub mod state;

pub use error::{OAuthBuildError, OAuthError, safe_code};
pub use flow::{
    DEFAULT_CALLBACK_LIMIT, DEFAULT_EXCHANGE_LIMIT, DEFAULT_INSTALL_LIMIT, OAuthFlow,
    OAuthFlowBuilder,
};
pub use limit::RateLimit;
pub use provider::{OAuthClient, OAuthProvider, ProviderDefaults};
pub use state::StateRefusal;
