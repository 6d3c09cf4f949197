//! [`WhatsAppAdapter`]: the adapter, its typed calls (templates, read
//! receipts) and what it remembers of recent deliveries here; its settings
//! in `builder`; the webhook side in `webhook`; posting and the
//! capabilities in `messaging`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chat_core::{AdapterError, InstallationStore, MessageRef, Secret, TenantId, ThreadRef};
use ring::hmac;
use serde_json::{Value, json};

use crate::WHATSAPP;
use crate::client::{SERVICE_WINDOW, WhatsAppClient};

mod builder;
mod messaging;
mod webhook;

pub use builder::WhatsAppAdapterBuilder;
pub use messaging::MAX_DOWNLOAD;

/// How long a message's dedupe mark lives: Meta retries a delivery that was
/// not answered with a 200 "with decreasing frequency over the next 7 days"
/// (Graph API webhooks, *Event Notifications*) — the Redis backend's
/// largest dedupe TTL, which the mark fits exactly because it is set when
/// the delivery is first received, no later than the first attempt.
pub const DEDUPE_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The WhatsApp adapter: verifies, parses and answers webhook deliveries,
/// and talks back through the Cloud API — for one business phone number, or
/// for several (each a tenant, its access token in an installation store)
/// in one process.
///
/// Built with [`WhatsAppAdapter::builder`]. Its `Debug` never shows a token
/// or a secret.
pub struct WhatsAppAdapter {
    pub(crate) name: String,
    pub(crate) app_key: hmac::Key,
    pub(crate) verify_token: Secret,
    /// Single-number mode: the client with the token. Installation mode:
    /// the shared transport, given each number's token per call.
    pub(crate) client: WhatsAppClient,
    /// Single-number mode: the phone number id.
    pub(crate) phone_number_id: Option<String>,
    pub(crate) installations: Option<Arc<dyn InstallationStore>>,
    pub(crate) max_body: usize,
    pub(crate) recent: Mutex<Recent>,
}

/// What the adapter remembers of the chats that wrote lately: each chat's
/// last incoming message (a read receipt and the typing indicator are sent
/// for a message) and when it was written (the customer-service window is
/// checked before a send), and each user's profile name (WhatsApp has no
/// user lookup). Bounded: the chats heard from longest ago are forgotten.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    chats: HashMap<(String, String), Chat>,
    order: VecDeque<(String, String)>,
}

/// One chat, as last heard.
#[derive(Debug, Default)]
struct Chat {
    message: String,
    at_secs: Option<u64>,
    name: Option<String>,
}

/// How many chats the adapter remembers.
const CHATS_KEPT: usize = 4096;

impl Recent {
    /// A user's message; an older one (a redelivery) changes nothing but
    /// the name.
    pub(crate) fn heard(&mut self, heard: crate::inbound::Heard) {
        let key = (heard.phone, heard.user);
        if !self.chats.contains_key(&key) {
            self.order.push_back(key.clone());
        }
        let chat = self.chats.entry(key).or_default();
        if heard.name.is_some() {
            chat.name = heard.name;
        }
        let newer = match (chat.at_secs, heard.at_secs) {
            (Some(known), Some(at)) => at >= known,
            _ => true,
        };
        if newer {
            chat.message = heard.message;
            chat.at_secs = heard.at_secs.or(chat.at_secs);
        }
        while self.order.len() > CHATS_KEPT {
            if let Some(old) = self.order.pop_front() {
                self.chats.remove(&old);
            }
        }
    }

    fn chat(&self, tenant: &str, user: &str) -> Option<&Chat> {
        self.chats.get(&(tenant.to_owned(), user.to_owned()))
    }

    pub(crate) fn last_message(&self, tenant: &str, user: &str) -> Option<&String> {
        self.chat(tenant, user).map(|c| &c.message)
    }

    pub(crate) fn name(&self, tenant: &str, user: &str) -> Option<&String> {
        self.chat(tenant, user).and_then(|c| c.name.as_ref())
    }

    /// When the user last wrote, as far as this process heard (Unix seconds).
    pub(crate) fn last_at(&self, tenant: &str, user: &str) -> Option<u64> {
        self.chat(tenant, user).and_then(|c| c.at_secs)
    }
}

impl std::fmt::Debug for WhatsAppAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsAppAdapter")
            .field("name", &self.name)
            .field("phone_number_id", &self.phone_number_id)
            .field("client", &self.client)
            .field("installation_mode", &self.installations.is_some())
            .finish_non_exhaustive()
    }
}

/// A message template approved in WhatsApp Manager: the only message a
/// business may send once a user's 24-hour customer-service window has
/// closed ([Templates](https://developers.facebook.com/docs/whatsapp/cloud-api/guides/send-message-templates)).
///
/// ```
/// use chat_whatsapp::Template;
/// use serde_json::json;
///
/// let reminder = Template::new("order_update", "en_US").component(json!({
///     "type": "body",
///     "parameters": [{"type": "text", "text": "#1234"}],
/// }));
/// assert_eq!(reminder.to_json()["language"]["code"], "en_US");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    name: String,
    language: String,
    components: Vec<Value>,
}

impl Template {
    /// Template `name` in `language` (its code, `en_US`).
    pub fn new(name: impl Into<String>, language: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            language: language.into(),
            components: Vec::new(),
        }
    }

    /// A component with its parameters (`header`, `body`, `button`), as the
    /// Cloud API takes it.
    #[must_use]
    pub fn component(mut self, component: Value) -> Self {
        self.components.push(component);
        self
    }

    /// The message's `template` object.
    pub fn to_json(&self) -> Value {
        let mut t = json!({ "name": self.name, "language": { "code": self.language } });
        if !self.components.is_empty() {
            t["components"] = json!(self.components);
        }
        t
    }
}

impl WhatsAppAdapter {
    /// A builder with the defaults.
    pub fn builder() -> WhatsAppAdapterBuilder {
        WhatsAppAdapterBuilder::default()
    }

    /// The Cloud API client of phone number `tenant` (its id): the one
    /// client in single-number mode, else with the token from the
    /// installation store.
    ///
    /// # Errors
    /// [`AdapterError::Unsupported`] for a phone number that is not
    /// configured or installed; [`AdapterError::Transport`] when the store
    /// cannot answer.
    pub async fn client_for(&self, tenant: &TenantId) -> Result<WhatsAppClient, AdapterError> {
        let Some(store) = &self.installations else {
            if self.phone_number_id.as_deref() != Some(tenant.as_str()) {
                return Err(AdapterError::Unsupported(
                    "this phone number is not the one configured",
                ));
            }
            return Ok(self.client.clone());
        };
        let installation = store
            .get(WHATSAPP, tenant)
            .await
            .map_err(|e| AdapterError::Transport(Box::new(e)))?
            .ok_or(AdapterError::Unsupported(
                "this phone number is not installed",
            ))?;
        self.client.with_token(&installation.access_token)
    }

    /// `POST /{phone-number-id}/messages` to the thread's user with the
    /// message object `message` (`type` and its object); the sent message.
    /// Anything but a template to a user whose last message this process
    /// heard more than 24 hours ago is [`AdapterError::WindowClosed`] before
    /// the call (the Cloud API would accept it, and report error 131047 in
    /// a `failed` status later).
    pub(crate) async fn send(
        &self,
        thread: &ThreadRef,
        mut message: Value,
    ) -> Result<MessageRef, AdapterError> {
        let to = user_of(thread)?;
        if message["type"] != "template" {
            let last = self.recent().last_at(thread.tenant.as_str(), to);
            let now = chat_core::clock::millis(std::time::SystemTime::now()) / 1000;
            if last.is_some_and(|at| now.saturating_sub(at) >= SERVICE_WINDOW.as_secs()) {
                return Err(AdapterError::WindowClosed {
                    window: SERVICE_WINDOW,
                });
            }
        }
        message["messaging_product"] = json!("whatsapp");
        message["recipient_type"] = json!("individual");
        message["to"] = json!(to);
        let sent = self
            .client_for(&thread.tenant)
            .await?
            .post(&format!("{}/messages", thread.tenant.as_str()), &message)
            .await?;
        let id = sent
            .pointer("/messages/0/id")
            .and_then(Value::as_str)
            .ok_or_else(|| AdapterError::Decode("a send answered no message id".into()))?;
        Ok(MessageRef {
            thread: thread.clone(),
            id: id.to_owned(),
        })
    }

    /// Sends template `template` to the thread's user: the message that may
    /// go after the customer-service window closed (and the one that opens a
    /// conversation the business starts).
    ///
    /// # Errors
    /// The Cloud API's refusal (an unknown or unapproved template); as
    /// [`client_for`](Self::client_for).
    pub async fn send_template(
        &self,
        thread: &ThreadRef,
        template: &Template,
    ) -> Result<MessageRef, AdapterError> {
        self.send(
            thread,
            json!({ "type": "template", "template": template.to_json() }),
        )
        .await
    }

    /// Marks incoming message `message_id` of phone number `tenant` as read
    /// (the user sees two blue ticks), showing the typing indicator as well
    /// when `typing` (for up to 25 seconds, or until the next message).
    ///
    /// # Errors
    /// The Cloud API's refusal; as [`client_for`](Self::client_for).
    pub async fn mark_read(
        &self,
        tenant: &TenantId,
        message_id: &str,
        typing: bool,
    ) -> Result<(), AdapterError> {
        let mut body = json!({
            "messaging_product": "whatsapp", "status": "read", "message_id": message_id,
        });
        if typing {
            body["typing_indicator"] = json!({ "type": "text" });
        }
        self.client_for(tenant)
            .await?
            .post(&format!("{}/messages", tenant.as_str()), &body)
            .await
            .map(drop)
    }

    pub(crate) fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The thread's user: their WhatsApp id (digits).
pub(crate) fn user_of(thread: &ThreadRef) -> Result<&str, AdapterError> {
    let user = thread.channel.as_str();
    if user.is_empty() || !user.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AdapterError::Unsupported("not a WhatsApp chat"));
    }
    Ok(user)
}
