//! Identity types: which platform, which tenant, which conversation, which event.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which chat platform an event came from and a reply goes to.
///
/// An open, `Copy` identifier: a lowercase name of 1–32 characters from `a-z`,
/// `0-9`, `-` and `_`, used in state keys, logs and outcomes. The two built-in
/// platforms have constants; an adapter for any other platform names its own with
/// [`Platform::new`] in a `const`, without touching this crate:
///
/// ```
/// use chat_core::Platform;
///
/// const DISCORD: Platform = Platform::new("discord");
/// assert_eq!(DISCORD.as_str(), "discord");
/// assert_ne!(DISCORD, Platform::SLACK);
/// assert_eq!(Platform::parse("discord"), Ok(DISCORD));
/// ```
///
/// Names read back from storage ([`Platform::parse`], `Deserialize`) are interned
/// once per distinct name, so the type stays `Copy` and compares by content.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform(&'static str);

impl Platform {
    /// Slack (Events API, slash commands, interactivity).
    pub const SLACK: Self = Self::new("slack");
    /// Linear (agent sessions, comment threads).
    pub const LINEAR: Self = Self::new("linear");

    /// The longest accepted name.
    pub const MAX_LEN: usize = 32;

    /// Names a platform. Meant for constants: an invalid name (empty, longer than
    /// [`Platform::MAX_LEN`], or with a character outside `a-z0-9-_`) fails to
    /// compile there, and panics if called at run time — use [`Platform::parse`]
    /// for names that come from input.
    pub const fn new(name: &'static str) -> Self {
        match check(name) {
            Ok(()) => Self(name),
            Err(_) => panic!("a platform name is 1-32 characters of a-z, 0-9, '-' or '_'"),
        }
    }

    /// Reads a platform name, e.g. one stored by a state backend.
    ///
    /// # Errors
    /// [`InvalidPlatform`] when the name breaks the rules of [`Platform::new`], or
    /// when this process has already interned [`MAX_INTERNED`] distinct names.
    pub fn parse(name: &str) -> Result<Self, InvalidPlatform> {
        for known in [Self::SLACK, Self::LINEAR] {
            if known.0 == name {
                return Ok(known);
            }
        }
        check(name)?;
        interned(name).map(Self)
    }

    /// The stable lowercase name, used in state keys and logs.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

/// How many distinct platform names [`Platform::parse`] keeps per process.
pub const MAX_INTERNED: usize = 256;

/// A platform name that [`Platform::parse`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidPlatform {
    /// Empty, or longer than [`Platform::MAX_LEN`].
    #[error("a platform name has 1 to 32 characters")]
    Length,
    /// A character outside `a-z`, `0-9`, `-`, `_`.
    #[error("a platform name uses only a-z, 0-9, '-' and '_'")]
    Character,
    /// [`MAX_INTERNED`] distinct names are already known to this process.
    #[error("too many distinct platform names")]
    TooMany,
}

const fn check(name: &str) -> Result<(), InvalidPlatform> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > Platform::MAX_LEN {
        return Err(InvalidPlatform::Length);
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => {}
            _ => return Err(InvalidPlatform::Character),
        }
        i += 1;
    }
    Ok(())
}

fn interned(name: &str) -> Result<&'static str, InvalidPlatform> {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};

    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&known) = names.get(name) {
        return Ok(known);
    }
    if names.len() >= MAX_INTERNED {
        return Err(InvalidPlatform::TooMany);
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    Ok(leaked)
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Platform({:?})", self.0)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::str::FromStr for Platform {
    type Err = InvalidPlatform;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Platform {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Platform {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;

        impl serde::de::Visitor<'_> for Name {
            type Value = Platform;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a platform name")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Platform, E> {
                Platform::parse(name).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(Name)
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
#[non_exhaustive]
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

    /// The tag every scope of this thread shares (platform, tenant and
    /// channel), borrowed: `thread.scope_tag() == thread.thread_scope().tag()`
    /// without building the scope.
    pub fn scope_tag(&self) -> ScopeTag<'_> {
        ScopeTag {
            platform: self.platform,
            tenant: &self.tenant,
            channel: &self.channel,
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
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    #[test]
    fn platforms_compare_by_name_and_round_trip_through_serde() -> TestResult {
        const SCRIPTED: Platform = Platform::new("scripted");
        let parsed: Platform = serde_json::from_str("\"scripted\"")?;
        assert_eq!(parsed, SCRIPTED);
        assert_eq!(serde_json::to_string(&Platform::LINEAR)?, "\"linear\"");
        assert_eq!(Platform::parse("slack"), Ok(Platform::SLACK));
        assert_eq!(Platform::parse(""), Err(InvalidPlatform::Length));
        assert_eq!(
            Platform::parse(&"a".repeat(33)),
            Err(InvalidPlatform::Length)
        );
        assert_eq!(Platform::parse("Slack"), Err(InvalidPlatform::Character));
        assert_eq!(Platform::parse("a:b"), Err(InvalidPlatform::Character));
        assert!(serde_json::from_str::<Platform>("\"a b\"").is_err());
        Ok(())
    }

    #[test]
    fn parsing_the_same_name_twice_interns_it_once() -> TestResult {
        let a = Platform::parse("interned-once")?;
        let b = Platform::parse("interned-once")?;
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        Ok(())
    }

    #[test]
    fn thread_and_channel_scopes_share_a_tag_but_differ() {
        let t = ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0");
        let thread = t.thread_scope();
        let channel = t.channel_scope();
        assert_ne!(thread, channel);
        assert_eq!(thread.tag(), channel.tag());
        assert_eq!(t.scope_tag(), thread.tag());
        assert_ne!(
            t.scope_tag(),
            ThreadRef::new(Platform::SLACK, "T1", "C2", "1.0").scope_tag()
        );
        assert_eq!(thread.to_string(), "slack:T1:C1:t:1.0");
        assert_eq!(channel.to_string(), "slack:T1:C1:c");
    }

    #[test]
    fn tenants_never_share_a_scope() {
        let a = ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0").thread_scope();
        let b = ThreadRef::new(Platform::SLACK, "T2", "C1", "1.0").thread_scope();
        assert_ne!(a, b);
        assert_ne!(a.tag(), b.tag());
    }
}
