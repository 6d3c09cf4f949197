//! What a platform unlike Slack needs of the runtime, through the public
//! contracts only: deliveries that batch several events (WhatsApp), a lock
//! scope chosen per event (Telegram: a chat, or a forum topic), and a
//! platform that cannot edit a message (a streamed answer is posted whole).
//! Memory backend, paused clock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chat_core::{
    AdapterError, DefaultLockScope, Event, Inbound, MessageRef, Messaging, OutboundMessage,
    Platform, PlatformAdapter, Reply, ThreadRef, Verdict, Webhook, WebhookError,
};
use chat_runtime::{Bot, BoxError, Concurrency, Ctx, DispatchOptions, RuntimeOptions};
use chat_state_memory::MemoryState;
use chat_testkit::{EventBuilder, ScriptedAdapter};

const BATCHY: Platform = Platform::new("batchy");

/// A platform whose deliveries are JSON arrays of events; a thread whose
/// name starts with `topic-` is locked on its own, anything else on its
/// channel; it cannot edit. Posting is the scripted adapter's.
#[derive(Clone)]
struct Batchy {
    posts: ScriptedAdapter,
    /// The replies sent after the response: (event id, text).
    later: Arc<Mutex<Vec<(String, String)>>>,
}

impl PlatformAdapter for Batchy {
    fn name(&self) -> &str {
        "batchy"
    }

    fn platform(&self) -> Platform {
        BATCHY
    }
}

#[async_trait]
impl Webhook for Batchy {
    fn verify(&self, _: &http::request::Parts, _: &Bytes) -> Result<(), WebhookError> {
        Ok(())
    }

    fn parse(&self, _: &http::request::Parts, body: &Bytes) -> Result<Inbound, WebhookError> {
        let events: Vec<Event> =
            serde_json::from_slice(body).map_err(|e| WebhookError::Malformed(e.to_string()))?;
        Ok(Inbound::Events(events))
    }

    fn lock_scope(&self) -> DefaultLockScope {
        DefaultLockScope::Channel
    }

    fn lock_scope_of(&self, event: &Event) -> DefaultLockScope {
        if event.thread.thread.starts_with("topic-") {
            DefaultLockScope::Thread
        } else {
            self.lock_scope()
        }
    }

    async fn reply_later(&self, event: &Event, reply: &Reply) -> Result<(), AdapterError> {
        let Reply::Message { message, .. } = reply else {
            return Err(AdapterError::Unsupported("modals"));
        };
        self.later
            .lock()
            .unwrap()
            .push((event.id.to_string(), message.text.clone()));
        Ok(())
    }

    fn respond(&self, _: Option<&Event>, verdict: &Verdict) -> http::Response<Bytes> {
        let mut r = http::Response::new(Bytes::from(verdict.name()));
        *r.status_mut() = match verdict {
            Verdict::Failed | Verdict::AtCapacity | Verdict::Working => {
                http::StatusCode::SERVICE_UNAVAILABLE
            }
            _ => http::StatusCode::OK,
        };
        r
    }
}

#[async_trait]
impl Messaging for Batchy {
    async fn post(&self, t: &ThreadRef, m: &OutboundMessage) -> Result<MessageRef, AdapterError> {
        self.posts.post(t, m).await
    }
    async fn edit(&self, _: &MessageRef, _: &OutboundMessage) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported("editing"))
    }
    async fn delete(&self, _: &MessageRef) -> Result<(), AdapterError> {
        Err(AdapterError::Unsupported("deleting"))
    }
    async fn react(&self, m: &MessageRef, e: &str) -> Result<(), AdapterError> {
        self.posts.react(m, e).await
    }
    fn can_edit(&self) -> bool {
        false
    }
}

type Ran = Arc<Mutex<Vec<(String, Vec<String>)>>>;

fn bot(options: RuntimeOptions, ran: &Ran) -> (Bot, Batchy) {
    let adapter = Batchy {
        posts: ScriptedAdapter::new("posts"),
        later: Arc::default(),
    };
    let ran = Arc::clone(ran);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(options)
        .on_new_mention(move |ctx: Ctx, e: Event| {
            let ran = Arc::clone(&ran);
            async move {
                if e.text() == Some("slow") {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
                if e.text() == Some("reply") {
                    ctx.reply(Reply::ephemeral(format!("reply to {}", e.id)));
                }
                if e.text() == Some("fail") {
                    return Err("this one fails".into());
                }
                if e.text() == Some("stream") {
                    let pieces = futures_util::stream::iter(["one", " two", " three"]);
                    ctx.thread().stream(pieces).await?;
                }
                let skipped = ctx.skipped().iter().map(|s| s.id.to_string()).collect();
                ran.lock().unwrap().push((e.id.to_string(), skipped));
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    (bot, adapter)
}

fn mention(id: &str, channel: &str, thread: &str, text: &str) -> Event {
    EventBuilder::new(ThreadRef::new(BATCHY, "T1", channel, thread))
        .id(id)
        .mention(text)
        .build()
}

async fn send(bot: &Bot, events: &[Event]) -> http::Response<Bytes> {
    let body = Bytes::from(serde_json::to_vec(events).unwrap());
    bot.handle("batchy", http::Request::post("/").body(body).unwrap())
        .await
}

#[tokio::test(start_paused = true)]
async fn every_event_of_a_batch_runs_once_and_a_retried_batch_is_duplicates() {
    let ran = Ran::default();
    let (bot, _) = bot(RuntimeOptions::default(), &ran);
    let batch = [
        mention("a", "C1", "1", "one"),
        mention("b", "C2", "2", "two"),
        mention("c", "C3", "3", "three"),
    ];
    let answer = send(&bot, &batch).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.body(), "accepted");
    let again = send(&bot, &batch).await;
    assert_eq!(
        (again.status(), again.body().as_ref()),
        (http::StatusCode::OK, b"duplicate".as_ref())
    );
    assert!(bot.idle(Duration::from_secs(10)).await);
    let ids: Vec<String> = ran
        .lock()
        .unwrap()
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn a_batch_with_a_refused_event_is_retried_and_only_that_one_runs_again() {
    let ran = Ran::default();
    let options = RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
        .admission(chat_runtime::AdmissionOptions::default().max_detached(1));
    let (bot, _) = bot(options, &ran);
    let batch = [
        mention("a", "C1", "1", "slow"),
        mention("b", "C2", "2", "two"),
    ];
    let answer = send(&bot, &batch).await;
    // `b` found no place: the platform is told to send the batch again.
    assert_eq!(answer.status(), 503);
    assert_eq!(answer.body(), "at-capacity");
    assert!(bot.idle(Duration::from_secs(10)).await);
    let retried = send(&bot, &batch).await;
    assert_eq!(retried.status(), 200);
    assert!(bot.idle(Duration::from_secs(10)).await);
    let ids: Vec<String> = ran
        .lock()
        .unwrap()
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(ids, ["a", "b"], "each ran once");
}

#[tokio::test(start_paused = true)]
async fn the_lock_scope_is_chosen_per_event() {
    let ran = Ran::default();
    let options = RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
        .concurrency(Concurrency::queue());
    let (bot, _) = bot(options, &ran);
    // A group: two threads of one channel are one conversation.
    send(&bot, &[mention("g1", "G", "x", "slow")]).await;
    send(&bot, &[mention("g2", "G", "y", "second")]).await;
    send(&bot, &[mention("g3", "G", "z", "third")]).await;
    // Forum topics: each its own.
    send(&bot, &[mention("t1", "F", "topic-1", "slow")]).await;
    send(&bot, &[mention("t2", "F", "topic-2", "other topic")]).await;
    assert!(bot.idle(Duration::from_secs(30)).await);
    let ran = ran.lock().unwrap().clone();
    let find = |id: &str| ran.iter().find(|(r, _)| r == id).cloned();
    // g2 waited behind g1 and was superseded by g3, which ran with it skipped.
    assert!(find("g2").is_none());
    assert_eq!(find("g3").unwrap().1, ["g2"]);
    // t2 did not wait for t1: it ran first.
    let order: Vec<&str> = ran.iter().map(|(id, _)| id.as_str()).collect();
    let at = |id: &str| order.iter().position(|x| *x == id).unwrap();
    assert!(at("t2") < at("t1"), "{order:?}");
}

#[tokio::test(start_paused = true)]
async fn a_platform_that_cannot_edit_gets_a_streamed_answer_whole() {
    let ran = Ran::default();
    let (bot, adapter) = bot(RuntimeOptions::default(), &ran);
    send(&bot, &[mention("s", "C1", "1", "stream")]).await;
    assert!(bot.idle(Duration::from_secs(10)).await);
    assert_eq!(adapter.posts.posts(), ["one two three"]);
}

#[tokio::test(start_paused = true)]
async fn a_reply_in_a_batch_goes_out_even_when_a_later_event_fails() {
    let ran = Ran::default();
    let (bot, adapter) = bot(RuntimeOptions::default(), &ran);
    let answer = send(
        &bot,
        &[
            mention("r", "C1", "1", "reply"),
            mention("f", "C2", "2", "fail"),
        ],
    )
    .await;
    assert_eq!(answer.body(), "failed", "the failed event is sent again");
    assert!(bot.idle(Duration::from_secs(10)).await);
    assert_eq!(
        adapter.later.lock().unwrap().clone(),
        [("r".to_owned(), "reply to r".to_owned())],
        "the first event's reply was not dropped with the batch's answer"
    );
}
