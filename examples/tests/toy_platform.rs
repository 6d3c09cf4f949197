//! A third platform, written outside every chat-rs crate: "toy", whose
//! webhooks carry a shared token and JSON messages, with a platform-only
//! event (`toy.ping`), commands answered in the response, and a posting API.
//! It needs nothing of the core but its public contracts — the proof that a
//! platform joins without editing the core, the runtime or a backend. The
//! steps are CONTRIBUTING.md's "Adding a platform adapter".

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::needless_pass_by_value,
    missing_docs
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, Author, Event, EventKind, Inbound, Message, MessageRef, OtherEvent,
    OutboundMessage, Platform, PlatformAdapter, Reply, Route, SlashCommand, ThreadRef, Verdict,
    Visibility, WebhookError,
};
use chat_runtime::{Bot, BuildError, Capability, Ctx, RuntimeOptions};
use chat_state_memory::MemoryState;
use serde::Deserialize;

/// 1. The platform's name: part of every state key of its events.
const TOY: Platform = Platform::new("toy");

/// 2. The adapter: verify, parse, answer; post.
#[derive(Clone, Default)]
struct ToyAdapter {
    token: &'static str,
    posts: Arc<Mutex<Vec<(ThreadRef, String)>>>,
    statuses: Arc<Mutex<Vec<Option<String>>>>,
}

/// A toy delivery.
#[derive(Deserialize)]
struct Delivery {
    id: String,
    kind: String,
    room: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    user: String,
}

/// Constant-time equality of the presented token and ours.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl PlatformAdapter for ToyAdapter {
    fn name(&self) -> &str {
        "toy"
    }

    fn platform(&self) -> Platform {
        TOY
    }

    // The one capability toy has beyond posting.
    fn as_status(&self) -> Option<&dyn chat_core::Status> {
        Some(self)
    }
}

#[async_trait]
impl chat_core::Status for ToyAdapter {
    async fn set_status(&self, _: &ThreadRef, status: Option<&str>) -> Result<(), AdapterError> {
        self.statuses
            .lock()
            .unwrap()
            .push(status.map(str::to_owned));
        Ok(())
    }
}

impl chat_core::Webhook for ToyAdapter {
    fn verify(&self, parts: &http::request::Parts, _body: &Bytes) -> Result<(), WebhookError> {
        let presented = parts
            .headers
            .get("x-toy-token")
            .ok_or(WebhookError::MissingHeader("x-toy-token"))?;
        if same(presented.as_bytes(), self.token.as_bytes()) {
            Ok(())
        } else {
            Err(WebhookError::BadSignature)
        }
    }

    fn parse(&self, _parts: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        let d: Delivery =
            serde_json::from_slice(body).map_err(|e| WebhookError::Malformed(e.to_string()))?;
        let thread = ThreadRef::new(TOY, "workspace", d.room.as_str(), "");
        let kind = match d.kind.as_str() {
            "message" => EventKind::Message(
                Message::new(d.id.as_str(), Author::new(d.user.as_str()), d.text.as_str())
                    .with_mention(d.text.starts_with("@bot")),
            ),
            "command" => EventKind::SlashCommand(SlashCommand::new(
                "/toy",
                d.text.as_str(),
                Author::new(d.user.as_str()),
            )),
            // The platform's own event: no portable kind, a route of its own.
            "ping" => EventKind::Other(OtherEvent::new(
                "toy.ping",
                serde_json::json!({ "room": d.room }),
            )),
            other => {
                return Ok(Inbound::Ignored {
                    reason: format!("unsupported:{other}"),
                });
            }
        };
        Ok(Inbound::Event(Box::new(Event::new(
            d.id.as_str(),
            d.id.as_str(),
            thread,
            kind,
        ))))
    }

    fn respond(&self, _event: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        let (status, body) = match verdict {
            // The typed reply, in toy's own form.
            Verdict::Reply(Reply::Message {
                message,
                visibility,
                ..
            }) => {
                let to = match visibility {
                    Visibility::InChannel => "room",
                    _ => "you",
                };
                (200, format!("{to}: {}", message.text))
            }
            Verdict::Accepted | Verdict::Duplicate | Verdict::Ignored | Verdict::Reply(_) => {
                (200, String::new())
            }
            Verdict::Rejected(e) => (e.status().as_u16(), String::new()),
            _ => (503, String::new()),
        };
        let mut r = http::Response::new(Bytes::from(body));
        *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
        r
    }

    fn check_reply(&self, reply: &Reply) -> Result<(), AdapterError> {
        match reply {
            Reply::Message { .. } => Ok(()),
            _ => Err(AdapterError::Unsupported("toy answers with text only")),
        }
    }
}

#[async_trait]
impl chat_core::Messaging for ToyAdapter {
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        let mut posts = self.posts.lock().unwrap();
        posts.push((thread.clone(), message.text.clone()));
        Ok(MessageRef {
            thread: thread.clone(),
            id: format!("p{}", posts.len()),
        })
    }

    async fn edit(&self, _: &MessageRef, _: &OutboundMessage) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported("editing"))
    }

    async fn delete(&self, _: &MessageRef) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported("deleting"))
    }

    async fn react(&self, _: &MessageRef, _: &str) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported("reactions"))
    }
}

/// 3. The platform's own routes, constructed in its crate.
fn ping() -> Route {
    Route::other("toy.ping")
}

fn delivery(token: &str, body: serde_json::Value) -> http::Request<Bytes> {
    http::Request::post("/webhooks/toy")
        .header("x-toy-token", token)
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_third_platform_joins_through_the_public_contracts_only() {
    let toy = ToyAdapter {
        token: "toy-secret-token",
        ..ToyAdapter::default()
    };
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(toy.clone())
        .options(RuntimeOptions::default())
        .require(Capability::Status)
        .on_new_mention(|ctx: Ctx, e: Event| async move {
            ctx.thread().set_status(Some("typing")).await?;
            // What toy lacks is known before a call: no modals here.
            assert!(!ctx.thread().supports(Capability::Modals));
            ctx.thread()
                .post(format!("echo: {}", e.text().unwrap_or("")))
                .await?;
            Ok::<(), chat_runtime::BoxError>(())
        })
        .on(ping(), |ctx: Ctx, _e: Event| async move {
            ctx.thread().post("pong").await?;
            Ok::<(), chat_runtime::BoxError>(())
        })
        .on_any_slash_command(|ctx: Ctx, e: Event| async move {
            ctx.reply(Reply::message(
                OutboundMessage::text(format!("did {}", e.text().unwrap_or(""))),
                Visibility::InChannel,
            ));
            Ok::<(), chat_runtime::BoxError>(())
        })
        .build()
        .unwrap();

    // Refused before parsing: no token, a wrong one.
    let mut unsigned = delivery("x", serde_json::json!({}));
    unsigned.headers_mut().remove("x-toy-token");
    assert_eq!(bot.handle("toy", unsigned).await.status(), 401);
    let forged = delivery(
        "not-the-token",
        serde_json::json!({"id": "e0", "kind": "ping", "room": "r1"}),
    );
    assert_eq!(bot.handle("toy", forged).await.status(), 401);

    // A mention is posted to; its redelivery runs once.
    let mention = serde_json::json!({"id": "e1", "kind": "message", "room": "r1", "user": "u1", "text": "@bot hi"});
    for _ in 0..2 {
        let r = bot
            .handle("toy", delivery(toy.token, mention.clone()))
            .await;
        assert_eq!(r.status(), 200);
    }
    // The platform-only event reaches its route.
    let r = bot
        .handle(
            "toy",
            delivery(
                toy.token,
                serde_json::json!({"id": "e2", "kind": "ping", "room": "r2"}),
            ),
        )
        .await;
    assert_eq!(r.status(), 200);
    // A command is answered in the response, rendered by the adapter.
    let r = bot
        .handle(
            "toy",
            delivery(toy.token, serde_json::json!({"id": "e3", "kind": "command", "room": "r1", "user": "u1", "text": "deploy"})),
        )
        .await;
    assert_eq!(
        (r.status(), r.body().as_ref()),
        (http::StatusCode::OK, &b"room: did deploy"[..])
    );

    assert!(bot.idle(Duration::from_secs(5)).await);
    let posts: Vec<(String, String)> = toy
        .posts
        .lock()
        .unwrap()
        .iter()
        .map(|(t, text)| (t.channel.clone(), text.clone()))
        .collect();
    assert_eq!(
        posts,
        [
            ("r1".to_owned(), "echo: @bot hi".to_owned()),
            ("r2".to_owned(), "pong".to_owned())
        ]
    );
    assert_eq!(*toy.statuses.lock().unwrap(), [Some("typing".to_owned())]);
}

#[test]
fn what_a_platform_can_do_is_known_when_the_bot_is_built() {
    let toy = ToyAdapter::default();
    assert_eq!(
        toy.capabilities().iter().collect::<Vec<_>>(),
        [Capability::Status]
    );
    let built = Bot::builder()
        .state(MemoryState::new())
        .adapter(toy.clone())
        .require(Capability::Status)
        .build()
        .unwrap();
    assert_eq!(built.capabilities("toy"), Some(toy.capabilities()));
    assert_eq!(built.capabilities("slack"), None);

    let missing = Bot::builder()
        .state(MemoryState::new())
        .adapter(toy.clone())
        .require(Capability::Modals)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            &missing,
            BuildError::MissingCapability { adapter, capability: Capability::Modals } if adapter == "toy"
        ),
        "{missing}"
    );
    assert_eq!(
        missing.to_string(),
        "adapter \"toy\" has no modals capability"
    );

    let unknown = Bot::builder()
        .state(MemoryState::new())
        .adapter(toy)
        .require_on("slack", Capability::Status)
        .build()
        .unwrap_err();
    assert!(matches!(unknown, BuildError::UnknownAdapter(name) if name == "slack"));
}
