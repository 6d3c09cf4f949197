//! # chat-installations
//!
//! Where a bot installed in many Slack workspaces and Linear organizations
//! keeps each one's credentials: implementations of chat-core's
//! [`InstallationStore`](chat_core::InstallationStore).
//!
//! * [`MemoryInstallations`]: in process memory, for tests and single
//!   processes.
//! * [`KvInstallations`]: on any [`KvStore`](chat_core::KvStore) — with
//!   `chat-state-redis`,
//!   shared by every replica. Installations are encrypted at rest with
//!   AES-256-GCM under keys from configuration, with rotation through a
//!   [`KeyRing`]: the current key writes, every key of the ring reads.
//!
//! The adapters take the store as an `Arc<dyn InstallationStore>`
//! (`SlackAdapter::builder().installations(..)`,
//! `LinearAdapter::builder().installations(..)`), and so do their OAuth
//! install flows, which put what a workspace's install returns.
//!
//! ```
//! use std::sync::Arc;
//! use chat_core::{Installation, InstallationStore, KvStore, Platform, Secret, TenantId};
//! use chat_installations::{EncryptionKey, KeyRing, KvInstallations};
//! use chat_state_memory::MemoryState;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! // In production: KeyRing::parse(&std::env::var("INSTALLATION_KEYS")?)
//! // with keys from `openssl rand -hex 32`, and a RedisState.
//! let keys = KeyRing::new(EncryptionKey::from_hex("2024-07", &"5e".repeat(32))?);
//! let kv: Arc<dyn KvStore> = Arc::new(MemoryState::new());
//! let store = KvInstallations::new(Arc::clone(&kv), keys);
//!
//! let installation = Installation::new(Platform::SLACK, "T061EG9R6", Secret::new("xoxb-17-19-pdFZ"))
//!     .with_bot_user_id("U0KRQLJ9H")
//!     .with_scopes(["app_mentions:read", "chat:write"]);
//! store.put(&installation).await?;
//!
//! let tenant = TenantId::new("T061EG9R6");
//! assert_eq!(store.get(Platform::SLACK, &tenant).await?, Some(installation));
//!
//! // What the backend holds is sealed: the token is not in it.
//! let stored = kv.get(&store.kv_key(Platform::SLACK, &tenant)).await?.unwrap_or_default();
//! assert!(!String::from_utf8_lossy(&stored).contains("xoxb-17-19-pdFZ"));
//!
//! assert!(store.delete(Platform::SLACK, &tenant).await?);
//! assert_eq!(store.get(Platform::SLACK, &tenant).await?, None);
//! # Ok::<_, Box<dyn std::error::Error>>(()) })
//! # }
//! ```
//!
//! ## Rotating keys
//!
//! 1. Generate a key (`openssl rand -hex 32`) and put it **first** in the
//!    ring's configuration, keeping the old one after it:
//!    `INSTALLATION_KEYS=2024-07:<new hex>,2024-01:<old hex>`. Deploy:
//!    new and refreshed installations are sealed with the new key, old ones
//!    still open with the old key.
//! 2. Rewrite the old records (`get` then `put` each tenant, or let
//!    re-installs and token refreshes do it);
//!    [`KvInstallations::stored_key_id`] tells which key a record is under.
//! 3. Remove the old key from the ring. A record still under it now fails
//!    with [`InstallationError::MissingKey`](chat_core::InstallationError::MissingKey),
//!    naming the key id, rather than being read wrongly.

#![forbid(unsafe_code)]

mod keys;
mod kv;
mod memory;
pub mod oauth;
mod sealed;

pub use keys::{EncryptionKey, KEY_LEN, KeyError, KeyRing};
pub use kv::{DEFAULT_KEY_PREFIX, KvInstallations};
pub use memory::MemoryInstallations;
