//! The webhook side: the subscription handshake, the signature, parsing,
//! each verdict answered as Meta expects.
//!
//! Meta counts a 200 as delivered; after anything else (or no answer within
//! its timeout) it sends the delivery again, "with decreasing frequency over
//! the next 7 days". It reads nothing of the answer: a handler's reply goes
//! out as a message in the chat ([`reply_later`](chat_core::Webhook::reply_later)).

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, BoxError, DefaultLockScope, Event, Inbound, PlatformAdapter, Reply, Resolution,
    Verdict, WebhookError,
};
use http::{HeaderValue, Method};

use super::WhatsAppAdapter;
use crate::WHATSAPP;
use crate::inbound::{self, Context};
use crate::signature::{verify_handshake, verify_signature};

impl PlatformAdapter for WhatsAppAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn platform(&self) -> chat_core::Platform {
        WHATSAPP
    }

    fn as_users(&self) -> Option<&dyn chat_core::Users> {
        Some(self)
    }

    fn as_uploads(&self) -> Option<&dyn chat_core::Uploads> {
        Some(self)
    }

    fn as_downloads(&self) -> Option<&dyn chat_core::Downloads> {
        Some(self)
    }

    fn as_status(&self) -> Option<&dyn chat_core::Status> {
        Some(self)
    }

    fn as_unreact(&self) -> Option<&dyn chat_core::Unreact> {
        Some(self)
    }

    fn as_direct_messages(&self) -> Option<&dyn chat_core::DirectMessages> {
        Some(self)
    }
}

/// The longest handshake challenge echoed back.
const MAX_CHALLENGE: usize = 256;

#[async_trait]
impl chat_core::Webhook for WhatsAppAdapter {
    fn max_body_bytes(&self) -> usize {
        self.max_body
    }

    /// [`DEDUPE_TTL`](super::DEDUPE_TTL): 7 days.
    fn dedupe_ttl(&self) -> std::time::Duration {
        super::DEDUPE_TTL
    }

    /// `POST` for deliveries, `GET` for the subscription handshake.
    fn allows_method(&self, method: &Method) -> bool {
        *method == Method::POST || *method == Method::GET
    }

    /// A WhatsApp chat — one user and one business number — is one
    /// conversation.
    fn lock_scope(&self) -> DefaultLockScope {
        DefaultLockScope::Channel
    }

    /// A `GET`'s verify token; a `POST`'s `X-Hub-Signature-256` over the raw
    /// body — both in constant time, before anything is parsed.
    fn verify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError> {
        match parts.method {
            Method::GET => verify_handshake(&parts.uri, self.verify_token.expose()).map(drop),
            Method::POST => {
                if body.len() > self.max_body {
                    return Err(WebhookError::TooLarge {
                        limit: self.max_body,
                    });
                }
                verify_signature(&self.app_key, &parts.headers, body)
            }
            _ => Err(WebhookError::MethodNotAllowed),
        }
    }

    /// A handshake is answered with its challenge; a delivery is its events.
    fn parse(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        if parts.method == Method::GET {
            let handshake = verify_handshake(&parts.uri, self.verify_token.expose())?;
            if handshake.challenge.len() > MAX_CHALLENGE {
                return Err(WebhookError::Malformed(
                    "whatsapp: a handshake challenge that is too long".into(),
                ));
            }
            let mut r = http::Response::new(Bytes::from(handshake.challenge));
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain"),
            );
            return Ok(Inbound::Response(r));
        }
        let cx = Context {
            received_at_ms: chat_core::clock::millis(std::time::SystemTime::now()),
            raw: body,
            heard: std::cell::RefCell::default(),
        };
        let parsed = inbound::parse(&cx, body)?;
        let mut recent = self.recent();
        for heard in cx.heard.into_inner() {
            recent.heard(heard);
        }
        Ok(parsed)
    }

    /// The phone number must be the one configured (single-number mode) or
    /// installed.
    async fn resolve(&self, event: &mut Event) -> Result<Resolution, BoxError> {
        let tenant = &event.thread.tenant;
        match &self.installations {
            Some(store) => {
                if store.get(WHATSAPP, tenant).await?.is_none() {
                    tracing::info!(phone_number_id = %tenant, "whatsapp: delivery for a number that is not installed");
                    return Ok(Resolution::Ignored {
                        reason: "unknown-installation",
                    });
                }
            }
            None => {
                if self.phone_number_id.as_deref() != Some(tenant.as_str()) {
                    tracing::info!(phone_number_id = %tenant, "whatsapp: delivery for another phone number");
                    return Ok(Resolution::Ignored {
                        reason: "unknown-phone-number",
                    });
                }
            }
        }
        Ok(Resolution::Proceed)
    }

    fn respond(&self, _event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        chat_core::adapter::status_response(verdict)
    }

    /// Meta reads nothing of the answer.
    fn replies_in_response(&self, _event: &Event, _reply: &Reply) -> bool {
        false
    }

    /// Messages and cards within WhatsApp's limits, and a Cloud API message
    /// object of its own (`{"type": …}`); a modal's answer is unsupported.
    fn check_reply(&self, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Message { message, .. } => super::messaging::render(message).map(drop),
            Reply::Platform(v) if v.get("type").is_some() => Ok(()),
            Reply::Platform(_) => Err(AdapterError::Invalid(
                "a WhatsApp reply of its own is a message object: {\"type\": …}".to_owned(),
            )),
            _ => Err(AdapterError::Unsupported("modals")),
        }
    }

    /// A reply is a message in the chat (every WhatsApp chat is private:
    /// an ephemeral reply is an ordinary one).
    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Message { message, .. } => {
                chat_core::Messaging::post(self, &event.thread, message).await?;
                Ok(())
            }
            Reply::Platform(v) => self.send(&event.thread, v.clone()).await.map(drop),
            _ => Err(AdapterError::Unsupported("modals")),
        }
    }
}
