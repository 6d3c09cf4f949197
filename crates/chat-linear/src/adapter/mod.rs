//! [`LinearAdapter`]: the [`PlatformAdapter`](chat_core::PlatformAdapter)
//! for Linear, in parts: the adapter and its shared state (here), its
//! [`builder`], its [`credentials`], Linear's own API on it ([`activities`]),
//! and the trait's implementation ([`platform`]).

mod activities;
mod builder;
mod credentials;
mod platform;

pub use builder::LinearAdapterBuilder;
pub use credentials::Credential;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chat_core::{AdapterError, InstallationStore, TenantId, ThreadRef};
use ring::hmac;
use serde_json::Value;
use tokio::time::Instant;

use crate::client::GraphqlClient;
use crate::first::FirstActivity;
use crate::inbound::Config;
use crate::oauth::LinearOAuth;
use crate::operations;
use crate::thread::LinearThread;
use chat_core::Clock;

/// Linear's GraphQL endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://api.linear.app/graphql";
/// The default text of the automatic first thought.
pub const DEFAULT_FIRST_THOUGHT: &str = "Thinking…";
/// The default final activity after a stop request.
pub const DEFAULT_STOPPED: &str = "Stopped.";

/// How long a Linear delivery's dedupe mark lives: Linear retries a failed
/// delivery after one minute, one hour and six hours; half an hour of margin
/// past the last.
pub const DEDUPE_TTL: Duration = Duration::from_secs(7 * 60 * 60 + 30 * 60);

/// How long the automatic first thought may take, rate-limit waits included:
/// inside Linear's 10 s first-activity rule.
const FIRST_THOUGHT_BUDGET: Duration = Duration::from_secs(8);

/// Installation mode's credential source: the store, and the OAuth flow
/// that refreshes tokens before they expire.
struct Installations {
    store: Arc<dyn InstallationStore>,
    refresh: Option<LinearOAuth>,
}

struct Inner {
    name: String,
    key: hmac::Key,
    tolerance: Duration,
    max_body: usize,
    clock: Arc<dyn Clock>,
    config: Config,
    first_thought: Option<String>,
    stopped: Option<String>,
    first: FirstActivity,
    client: GraphqlClient,
    installations: Option<Installations>,
}

/// The Linear [`PlatformAdapter`](chat_core::PlatformAdapter): verifies and parses webhook deliveries,
/// answers them as Linear expects, and talks back through Linear's GraphQL
/// API. Cheap to clone; clones share one HTTP client.
///
/// Besides the trait's methods it has Linear's own (the platform extension):
/// agent activities ([`activity`](Self::activity), [`thought`](Self::thought),
/// [`action`](Self::action), [`elicitation`](Self::elicitation),
/// [`response`](Self::response), [`error`](Self::error)), session updates
/// ([`update_session`](Self::update_session)), comments
/// ([`comment`](Self::comment)) and the app user's id
/// ([`viewer_id`](Self::viewer_id)). Keep a clone next to the bot to call them
/// from handlers, bounded by the handler's deadline with
/// [`with_deadline`](Self::with_deadline).
#[derive(Clone)]
pub struct LinearAdapter {
    inner: Arc<Inner>,
    deadline: Option<Instant>,
    organization: Option<TenantId>,
}

impl fmt::Debug for LinearAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearAdapter")
            .field("name", &self.inner.name)
            .field("tolerance", &self.inner.tolerance)
            .field("max_body", &self.inner.max_body)
            .field("app_user_ids", &self.inner.config.app_user_ids)
            .field("first_thought", &self.inner.first_thought)
            .field("client", &self.inner.client)
            .field("installation_mode", &self.inner.installations.is_some())
            .field("deadline", &self.deadline)
            .field("organization", &self.organization)
            .finish_non_exhaustive()
    }
}

impl LinearAdapter {
    /// A builder with the defaults.
    pub fn builder() -> LinearAdapterBuilder {
        LinearAdapterBuilder::default()
    }

    /// The same adapter, with every outbound call bounded by `deadline` (a
    /// handler's deadline): no request and no rate-limit wait runs past it.
    #[must_use]
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        Self {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// The same adapter, with every outbound call bounded by `timeout` from now.
    #[must_use]
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        self.with_deadline(Instant::now() + timeout)
    }

    /// The same adapter, calling with `organization_id`'s credential when a
    /// call names no thread (a bare session or issue id).
    #[must_use]
    pub fn for_organization(&self, organization_id: impl Into<TenantId>) -> Self {
        Self {
            organization: Some(organization_id.into()),
            ..self.clone()
        }
    }

    /// The deadline outbound calls are bounded by, if one was set.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The text of the automatic first thought, when it is on.
    pub fn first_thought_text(&self) -> Option<&str> {
        self.inner.first_thought.as_deref()
    }

    fn tenant<'a>(&'a self, target: Option<&'a TenantId>) -> Option<&'a TenantId> {
        target.or(self.organization.as_ref())
    }

    async fn execute(
        &self,
        tenant: Option<&TenantId>,
        op: &operations::Operation,
    ) -> Result<Value, AdapterError> {
        let auth = self.auth(tenant).await?;
        self.inner.client.execute(&auth, self.deadline, op).await
    }

    fn linear_thread(thread: &ThreadRef) -> Result<LinearThread<'_>, AdapterError> {
        LinearThread::of(thread).ok_or(AdapterError::Unsupported(
            "not a Linear agent session or comment thread",
        ))
    }
}
