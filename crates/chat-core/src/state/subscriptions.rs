//! [`Subscriptions`]: which threads the bot follows.

use super::*;

/// Thread subscriptions: a subscribed thread's plain messages are admitted
/// ([`Gate::Subscribed`]). Part of every [`StateBackend`]; each method is one
/// atomic step except [`unsubscribe_tenant`](Self::unsubscribe_tenant).
#[async_trait]
pub trait Subscriptions: Send + Sync + 'static {
    /// Subscribes the bot to a thread for `ttl`: later plain messages in it are
    /// admitted. Every admission of an event of the thread while it is
    /// subscribed extends the subscription to its request's
    /// [`subscription_ttl`](AdmitRequest::subscription_ttl), so a thread stays
    /// subscribed while it is active and is forgotten after `ttl` of silence.
    /// Subscribing a thread already subscribed sets its expiry to `ttl` from
    /// now, shorter or longer than what it had.
    async fn subscribe(&self, thread: &ThreadRef, ttl: Duration) -> Result<(), StateError>;

    /// Unsubscribes; returns whether the thread was subscribed.
    async fn unsubscribe(&self, thread: &ThreadRef) -> Result<bool, StateError>;

    /// Whether the thread is subscribed.
    async fn is_subscribed(&self, thread: &ThreadRef) -> Result<bool, StateError>;

    /// Removes every subscription of one tenant of one platform — after the
    /// tenant removed the app (Slack `app_uninstalled`, Linear `OAuthApp`
    /// revoked), so an uninstalled workspace holds no state for the
    /// subscription TTL. Returns how many subscriptions it removed.
    ///
    /// Not atomic: it walks the store (every node of a cluster, never with a
    /// blocking full-keyspace command) and may run as long as the number of
    /// the tenant's keys says; the runtime calls it in the background. A
    /// subscription made while it runs may survive it. Other tenants'
    /// subscriptions, and every other record (dedupe marks expire on their
    /// own; leases and waiting work finish or expire), are untouched.
    async fn unsubscribe_tenant(
        &self,
        platform: Platform,
        tenant: &TenantId,
    ) -> Result<u64, StateError>;
}
