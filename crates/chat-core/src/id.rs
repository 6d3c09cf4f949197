//! Identity types: which platform, which tenant, which conversation, which event.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A chat platform the runtime can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Platform {
    /// Slack (Events API, slash commands, interactivity).
    Slack,
    /// Linear (agent sessions, comment threads).
    Linear,
    /// A platform used only by tests (`chat-testkit`'s scripted adapter).
    Test,
}

impl Platform {
    /// The stable lowercase name, used in state keys and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Slack => "slack",
            Self::Linear => "linear",
            Self::Test => "test",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps a platform-supplied identifier.
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }
    };
}

string_id! {
    /// One installation of the bot: Slack's enterprise id for org-wide installs, else
    /// the team id; Linear's organization id. Every state key is namespaced by it.
    TenantId
}

string_id! {
    /// The platform's identifier of one delivered event (Slack `event_id`, Linear
    /// `Linear-Delivery`, …). Used in logs and outcomes; deduplication uses
    /// [`DedupeKey`].
    EventId
}

/// A conversation: the unit a handler replies into.
///
/// Slack: `(team, channel, thread_ts ?? ts)`. Linear: an agent session, or an issue's
/// comment thread. `thread` is empty for channel-level events (slash commands).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ThreadRef {
    /// The platform the conversation lives on.
    pub platform: Platform,
    /// The installation it belongs to.
    pub tenant: TenantId,
    /// The channel (Slack channel id, Linear issue id).
    pub channel: String,
    /// The thread inside the channel (Slack root `ts`, Linear session or root comment).
    pub thread: String,
}

impl ThreadRef {
    /// Builds a thread reference.
    pub fn new(
        platform: Platform,
        tenant: impl Into<TenantId>,
        channel: impl Into<String>,
        thread: impl Into<String>,
    ) -> Self {
        Self {
            platform,
            tenant: tenant.into(),
            channel: channel.into(),
            thread: thread.into(),
        }
    }

    /// The scope that serializes work on this thread alone.
    pub fn thread_scope(&self) -> ScopeKey {
        ScopeKey {
            platform: self.platform,
            tenant: self.tenant.clone(),
            channel: self.channel.clone(),
            part: ScopePart::Thread(self.thread.clone()),
        }
    }

    /// The scope that serializes work on the whole channel.
    pub fn channel_scope(&self) -> ScopeKey {
        ScopeKey {
            platform: self.platform,
            tenant: self.tenant.clone(),
            channel: self.channel.clone(),
            part: ScopePart::Channel,
        }
    }
}

impl fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.platform, self.tenant, self.channel, self.thread
        )
    }
}

/// What a lease serializes: one thread, a whole channel, or a custom part of a
/// channel. A scope never crosses a channel, so every key of one scope (lease,
/// queue, dedupe marks, subscriptions of its threads) can live together — in one
/// shard of the memory backend and in one Redis Cluster hash slot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ScopeKey {
    /// The platform.
    pub platform: Platform,
    /// The installation.
    pub tenant: TenantId,
    /// The channel every key of this scope is grouped under.
    pub channel: String,
    /// Which part of the channel is serialized.
    pub part: ScopePart,
}

impl ScopeKey {
    /// The grouping every key of this scope shares: platform, tenant and channel.
    /// Backends co-locate keys with the same tag (Redis: the `{…}` hash tag).
    pub fn tag(&self) -> ScopeTag<'_> {
        ScopeTag {
            platform: self.platform,
            tenant: &self.tenant,
            channel: &self.channel,
        }
    }
}

impl fmt::Display for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.part {
            ScopePart::Thread(t) => write!(f, "{}:t:{t}", self.tag()),
            ScopePart::Channel => write!(f, "{}:c", self.tag()),
            ScopePart::Custom(c) => write!(f, "{}:x:{c}", self.tag()),
        }
    }
}

/// The part of a channel a [`ScopeKey`] covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ScopePart {
    /// One thread (the default for Slack and Linear).
    Thread(String),
    /// The whole channel.
    Channel,
    /// A name chosen by a user-supplied lock-scope function.
    Custom(String),
}

/// Platform, tenant and channel: the co-location tag of a scope's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScopeTag<'a> {
    /// The platform.
    pub platform: Platform,
    /// The installation.
    pub tenant: &'a TenantId,
    /// The channel.
    pub channel: &'a str,
}

impl fmt::Display for ScopeTag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.platform, self.tenant, self.channel)
    }
}

/// The platform identity of the *user's action*, not of the transport delivery.
///
/// Slack message-like events are keyed on `(channel, ts)`, so the `app_mention` and
/// `message` twins of one post — which have different `event_id`s — run once; other
/// events on `event_id`. Keys are stored under the event's scope tag, so they are
/// unique per tenant and channel.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DedupeKey(String);

impl DedupeKey {
    /// Wraps an adapter-chosen key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DedupeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_and_channel_scopes_share_a_tag_but_differ() {
        let t = ThreadRef::new(Platform::Slack, "T1", "C1", "1.0");
        let thread = t.thread_scope();
        let channel = t.channel_scope();
        assert_ne!(thread, channel);
        assert_eq!(thread.tag(), channel.tag());
        assert_eq!(thread.to_string(), "slack:T1:C1:t:1.0");
        assert_eq!(channel.to_string(), "slack:T1:C1:c");
    }

    #[test]
    fn tenants_never_share_a_scope() {
        let a = ThreadRef::new(Platform::Slack, "T1", "C1", "1.0").thread_scope();
        let b = ThreadRef::new(Platform::Slack, "T2", "C1", "1.0").thread_scope();
        assert_ne!(a, b);
        assert_ne!(a.tag(), b.tag());
    }
}
