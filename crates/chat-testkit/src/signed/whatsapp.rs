//! WhatsApp deliveries: the Cloud API's webhook notifications
//! (`object: whatsapp_business_account`), signed with the app secret in
//! `X-Hub-Signature-256`, and the subscription handshake (`GET`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::{form_encode, hmac_hex, post};

/// The header Meta signs deliveries in.
const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// Builds WhatsApp deliveries for one business number and user.
///
/// Defaults: path `/webhooks/whatsapp`, business account `102290129340398`,
/// phone number id `106540352242922` (display `15550783881`), user
/// `16505551234` "Ada". Each builder takes the message's id (`wamid`).
///
/// ```
/// use chat_testkit::signed::WhatsAppDeliveries;
///
/// let whatsapp = WhatsAppDeliveries::new("app-secret");
/// let request = whatsapp.text("wamid.1", "hey");
/// assert!(request.headers()["x-hub-signature-256"].to_str().is_ok_and(|s| s.starts_with("sha256=")));
/// let handshake = whatsapp.handshake("verify-me", "1158201444");
/// assert_eq!(handshake.method(), http::Method::GET);
/// ```
#[derive(Debug, Clone)]
pub struct WhatsAppDeliveries {
    secret: String,
    path: String,
    account: String,
    phone_number_id: String,
    user: String,
    user_name: String,
    /// When the user wrote (Unix seconds); `None`: now.
    sent_at: Option<u64>,
}

impl WhatsAppDeliveries {
    /// Deliveries signed with `app_secret`.
    pub fn new(app_secret: impl Into<String>) -> Self {
        Self {
            secret: app_secret.into(),
            path: "/webhooks/whatsapp".to_owned(),
            account: "102290129340398".to_owned(),
            phone_number_id: "106540352242922".to_owned(),
            user: "16505551234".to_owned(),
            user_name: "Ada".to_owned(),
            sent_at: None,
        }
    }

    /// When the user wrote the messages (Unix seconds), default the moment
    /// each is built: a message older than 24 hours closed the window.
    #[must_use]
    pub fn sent_at(mut self, unix_secs: u64) -> Self {
        self.sent_at = Some(unix_secs);
        self
    }

    /// The request path.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The business phone number id the messages arrive at.
    #[must_use]
    pub fn phone_number_id(mut self, id: impl Into<String>) -> Self {
        self.phone_number_id = id.into();
        self
    }

    /// The user who writes: WhatsApp id and profile name.
    #[must_use]
    pub fn user(mut self, wa_id: impl Into<String>, name: impl Into<String>) -> Self {
        self.user = wa_id.into();
        self.user_name = name.into();
        self
    }

    /// The phone number id.
    pub fn phone(&self) -> &str {
        &self.phone_number_id
    }

    /// The user's WhatsApp id.
    pub fn user_id(&self) -> &str {
        &self.user
    }

    /// `notification` signed.
    pub fn notification(&self, notification: &Value) -> http::Request<Bytes> {
        self.signed_with(notification, &self.secret)
    }

    /// `notification` signed with another secret (a forged delivery).
    pub fn signed_with(&self, notification: &Value, secret: &str) -> http::Request<Bytes> {
        let body = notification.to_string().into_bytes();
        let signature = format!("sha256={}", hmac_hex(secret, &[&body]));
        post(
            &self.path,
            &[
                ("content-type", "application/json"),
                (SIGNATURE_HEADER, &signature),
            ],
            body,
        )
    }

    /// The subscription handshake Meta sends when the callback URL is
    /// saved: a `GET` with `hub.mode=subscribe`, `hub.verify_token` and
    /// `hub.challenge`.
    pub fn handshake(&self, verify_token: &str, challenge: &str) -> http::Request<Bytes> {
        let uri = format!(
            "{}?hub.mode=subscribe&hub.verify_token={}&hub.challenge={}",
            self.path,
            form_encode(verify_token),
            form_encode(challenge)
        );
        let mut request = http::Request::new(Bytes::new());
        *request.method_mut() = http::Method::GET;
        *request.uri_mut() = http::Uri::try_from(uri).unwrap_or_default();
        request
    }

    /// The `value` of one change carrying `messages` and `statuses`.
    pub fn value(&self, messages: &[Value], statuses: &[Value]) -> Value {
        let mut value = json!({
            "messaging_product": "whatsapp",
            "metadata": { "display_phone_number": "15550783881",
                          "phone_number_id": self.phone_number_id },
        });
        if !messages.is_empty() {
            value["contacts"] =
                json!([{ "profile": { "name": self.user_name }, "wa_id": self.user }]);
            value["messages"] = json!(messages);
        }
        if !statuses.is_empty() {
            value["statuses"] = json!(statuses);
        }
        value
    }

    /// A notification of changes `values` (each a [`value`](Self::value)).
    pub fn wrap(&self, values: &[Value]) -> Value {
        let changes: Vec<Value> = values
            .iter()
            .map(|v| json!({ "field": "messages", "value": v }))
            .collect();
        json!({
            "object": "whatsapp_business_account",
            "entry": [{ "id": self.account, "changes": changes }],
        })
    }

    /// The message object of type `kind` with `object` as its content.
    pub fn message_object(&self, wamid: &str, kind: &str, object: &Value) -> Value {
        let at = self.sent_at.unwrap_or_else(|| super::now_ms() / 1000);
        let mut m = json!({
            "from": self.user, "id": wamid, "timestamp": at.to_string(), "type": kind,
        });
        m[kind] = object.clone();
        m
    }

    /// Several messages in one delivery.
    pub fn messages(&self, messages: &[Value]) -> http::Request<Bytes> {
        self.notification(&self.wrap(&[self.value(messages, &[])]))
    }

    /// A text message.
    pub fn text(&self, wamid: &str, text: &str) -> http::Request<Bytes> {
        self.messages(&[self.message_object(wamid, "text", &json!({ "body": text }))])
    }

    /// A click on reply button `id` (titled `title`) of the bot's message.
    pub fn button_reply(&self, wamid: &str, id: &str, title: &str) -> http::Request<Bytes> {
        self.messages(&[self.message_object(
            wamid,
            "interactive",
            &json!({ "type": "button_reply", "button_reply": { "id": id, "title": title } }),
        )])
    }

    /// A choice of list row `id` (titled `title`).
    pub fn list_reply(&self, wamid: &str, id: &str, title: &str) -> http::Request<Bytes> {
        self.messages(&[self.message_object(
            wamid,
            "interactive",
            &json!({ "type": "list_reply", "list_reply": { "id": id, "title": title } }),
        )])
    }

    /// A reaction with `emoji` to message `to` (an empty emoji takes it
    /// back).
    pub fn reaction(&self, wamid: &str, to: &str, emoji: &str) -> http::Request<Bytes> {
        self.messages(&[self.message_object(
            wamid,
            "reaction",
            &json!({ "message_id": to, "emoji": emoji }),
        )])
    }

    /// A document `media_id` named `name`, captioned `caption`.
    pub fn document(
        &self,
        wamid: &str,
        media_id: &str,
        name: &str,
        caption: &str,
    ) -> http::Request<Bytes> {
        self.messages(&[self.message_object(
            wamid,
            "document",
            &json!({ "id": media_id, "filename": name, "caption": caption,
                     "mime_type": "application/pdf", "sha256": "" }),
        )])
    }

    /// Status objects (as `FakeWhatsApp::failed_statuses` gives them) in
    /// one delivery.
    pub fn statuses(&self, statuses: &[Value]) -> http::Request<Bytes> {
        self.notification(&self.wrap(&[self.value(&[], statuses)]))
    }

    /// A status (`sent`, `delivered`, `read`, `failed`) of the bot's
    /// message `wamid`.
    pub fn status(&self, wamid: &str, status: &str) -> http::Request<Bytes> {
        let s = json!({
            "id": wamid, "status": status, "timestamp": "1749416400",
            "recipient_id": self.user,
        });
        self.notification(&self.wrap(&[self.value(&[], &[s])]))
    }
}
