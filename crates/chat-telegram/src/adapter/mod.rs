//! [`TelegramAdapter`]: the adapter and its identity lookups here; its
//! settings in `builder`; the webhook side in `webhook`; posting and the
//! capabilities in `messaging`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use chat_core::{AdapterError, InstallationStore, TenantId, ThreadRef};

use crate::TELEGRAM;
use crate::client::TelegramClient;
use crate::secret::Secrets;

mod builder;
mod messaging;
mod webhook;

pub use builder::TelegramAdapterBuilder;

/// How long a Telegram update's dedupe mark lives: Telegram keeps an update
/// it could not deliver for at most 24 hours ("Incoming updates are stored
/// on the server until the bot receives them either way, but they will not
/// be kept longer than 24 hours", Bot API, *Getting updates*); an hour of
/// margin.
pub const DEDUPE_TTL: std::time::Duration = std::time::Duration::from_secs(25 * 60 * 60);

/// The Telegram adapter: verifies, parses and answers webhook deliveries,
/// and talks back through the Bot API — for one bot, or for several bots
/// (each a tenant, its token in an installation store) in one process.
///
/// Built with [`TelegramAdapter::builder`]. Its `Debug` never shows a token
/// or a secret.
pub struct TelegramAdapter {
    pub(crate) name: String,
    pub(crate) secrets: Secrets,
    /// Single-bot mode: the client with the token. Installation mode: the
    /// shared transport, completed with each bot's token per call.
    pub(crate) client: TelegramClient,
    pub(crate) installations: Option<Arc<dyn InstallationStore>>,
    /// The bots' usernames, as configured or learned from `getMe`.
    pub(crate) usernames: Mutex<HashMap<String, String>>,
    pub(crate) max_body: usize,
    /// A native stream's text so far, and the message it ended in, by draft.
    pub(crate) drafts: Mutex<Drafts>,
}

/// Native streams (`sendMessageDraft`): each draft's text so far, and the
/// message a finished draft became (so an edit of the stream's message
/// edits it). Bounded: the oldest are forgotten.
#[derive(Debug, Default)]
pub(crate) struct Drafts {
    pub(crate) text: HashMap<String, String>,
    started: std::collections::VecDeque<String>,
    pub(crate) done: HashMap<String, String>,
    order: std::collections::VecDeque<String>,
}

/// How many drafts, open and finished, the adapter remembers of each.
const DRAFTS_KEPT: usize = 1024;

impl Drafts {
    /// A draft opened with `text` (one never finished is forgotten among
    /// the oldest).
    pub(crate) fn started(&mut self, draft: &str, text: &str) {
        self.text.insert(draft.to_owned(), text.to_owned());
        self.started.push_back(draft.to_owned());
        while self.started.len() > DRAFTS_KEPT {
            if let Some(old) = self.started.pop_front() {
                self.text.remove(&old);
            }
        }
    }

    pub(crate) fn finished(&mut self, draft: &str, message_id: String) {
        self.text.remove(draft);
        self.done.insert(draft.to_owned(), message_id);
        self.order.push_back(draft.to_owned());
        while self.order.len() > DRAFTS_KEPT {
            if let Some(old) = self.order.pop_front() {
                self.done.remove(&old);
            }
        }
    }
}

impl std::fmt::Debug for TelegramAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramAdapter")
            .field("name", &self.name)
            .field("secrets", &self.secrets)
            .field("client", &self.client)
            .field("installation_mode", &self.installations.is_some())
            .finish_non_exhaustive()
    }
}

impl TelegramAdapter {
    /// A builder with the defaults.
    pub fn builder() -> TelegramAdapterBuilder {
        TelegramAdapterBuilder::default()
    }

    /// The secret token bot `bot_id` is to be given with `setWebhook`: the
    /// configured one, or (installation mode) the one derived from the
    /// webhook secret. [`set_webhook`](Self::set_webhook) passes it.
    pub fn secret_token_for(&self, bot_id: &str) -> String {
        self.secrets.token_for(bot_id)
    }

    /// The Bot API client of bot `tenant` (its id): the one client in
    /// single-bot mode, else with the token from the installation store.
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] when the bot is not installed;
    /// [`AdapterError::Transport`] when the store cannot answer.
    pub async fn client_for(&self, tenant: &TenantId) -> Result<TelegramClient, AdapterError> {
        let Some(store) = &self.installations else {
            return Ok(self.client.clone());
        };
        let installation = store
            .get(TELEGRAM, tenant)
            .await
            .map_err(|e| AdapterError::Transport(Box::new(e)))?
            .ok_or(AdapterError::Unsupported("this bot is not installed"))?;
        Ok(self.client.with_token(installation.access_token))
    }

    /// Points bot `tenant`'s webhook at `url` (`setWebhook`), with its
    /// secret token and the updates the adapter reads (`message`,
    /// `edited_message`, `channel_post`, `edited_channel_post`,
    /// `callback_query`, `message_reaction`).
    ///
    /// # Errors
    /// The Bot API's refusal; as [`client_for`](Self::client_for).
    pub async fn set_webhook(&self, tenant: &TenantId, url: &str) -> Result<(), AdapterError> {
        let secret = self.secrets.token_for(tenant.as_str());
        let body = serde_json::json!({
            "url": url,
            "secret_token": secret,
            "allowed_updates": [
                "message", "edited_message", "channel_post", "edited_channel_post",
                "callback_query", "message_reaction",
            ],
        });
        self.client_for(tenant)
            .await?
            .call("setWebhook", &body)
            .await
            .map(drop)
    }

    /// Bot `bot_id`'s username: configured, learned, or asked of `getMe`
    /// once (`None` when it cannot be learned now: mentions by username are
    /// then not recognized, replies and text mentions still are).
    pub(crate) async fn username(&self, bot_id: &str) -> Option<String> {
        if let Some(known) = self
            .usernames
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(bot_id)
        {
            return Some(known.clone());
        }
        let client = self.client_for(&TenantId::new(bot_id)).await.ok()?;
        match client.call("getMe", &serde_json::json!({})).await {
            Ok(me) => {
                let name = me["username"].as_str()?.to_owned();
                self.usernames
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(bot_id.to_owned(), name.clone());
                Some(name)
            }
            Err(e) => {
                tracing::warn!(error = %e, "telegram: getMe failed; mentions by username are not recognized yet");
                None
            }
        }
    }
}

/// A thread's chat id and forum topic, as the Bot API takes them.
pub(crate) fn chat_of(thread: &ThreadRef) -> Result<(i64, Option<i64>), AdapterError> {
    let chat = thread
        .channel
        .parse::<i64>()
        .map_err(|_| AdapterError::Unsupported("not a Telegram chat"))?;
    let topic = if thread.thread.is_empty() {
        None
    } else {
        Some(
            thread
                .thread
                .parse::<i64>()
                .map_err(|_| AdapterError::Unsupported("not a Telegram forum topic"))?,
        )
    };
    Ok((chat, topic))
}
