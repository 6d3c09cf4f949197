//! End to end through chat-runtime and the memory backend, against the fake
//! Linear API: signed deliveries in, GraphQL calls out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_linear::LinearAdapter;
use chat_runtime::{
    Bot, BoxError, CancelCause, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::FakeLinear;
use common::{ISSUE, USER, body, payloads, request};
use serde_json::Value;

#[derive(Debug, Clone)]
struct Run {
    text: Option<String>,
    cause: Option<CancelCause>,
}

type Log = Arc<Mutex<Vec<Run>>>;

/// One permit per handler run that has started.
type Started = Arc<tokio::sync::Semaphore>;

/// Text `wait` waits for cancellation (or 30 s, then answers "late"); text
/// `slow` answers after 1.5 s; anything else is answered at once.
fn handler(
    log: Log,
    started: Started,
) -> impl Fn(Ctx, Event) -> futures_like::Boxed + Send + Sync + 'static {
    move |ctx: Ctx, event: Event| {
        let log = log.clone();
        let started = started.clone();
        Box::pin(async move {
            started.add_permits(1);
            let text = event.text().map(str::to_owned);
            let answer = match text.as_deref() {
                Some(t) if t.contains("polite") => {
                    ctx.cancelled().await;
                    Some("Stopping, as you asked.".to_owned())
                }
                Some(t) if t.contains("wait") => {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(30)) => Some("late".to_owned()),
                        () = ctx.cancelled() => None,
                    }
                }
                Some(t) if t.contains("stream") => {
                    let words = ["streamed", " in", " parts"].map(str::to_owned);
                    ctx.thread()
                        .stream_every(futures_util::stream::iter(words), Duration::from_millis(10))
                        .await?;
                    None
                }
                Some(t) if t.contains("history") => {
                    let thread = ctx.thread();
                    let earlier = thread.history(100).await?;
                    let mine = earlier.iter().filter(|m| m.is_from_bot()).count();
                    let first = match earlier.first() {
                        Some(m) => thread.user(&m.author.id).await?.display_name,
                        None => String::new(),
                    };
                    thread
                        .post(format!(
                            "history: {} ({mine} mine), started by {first}",
                            earlier.len()
                        ))
                        .await?;
                    None
                }
                Some(t) if t.contains("card") => {
                    let card = chat_core::card::Card::new()
                        .header("Status")
                        .fields([chat_core::card::Field::new("Build", "green")])
                        .actions([chat_core::card::Button::new("rerun", "Rerun").into()]);
                    ctx.thread().post(card).await?;
                    None
                }
                Some(t) if t.contains("slow") => {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    Some("slow answer".to_owned())
                }
                t => Some(format!("answer to {}", t.unwrap_or("nothing"))),
            };
            log.lock().unwrap().push(Run {
                text,
                cause: ctx.cancel_cause(),
            });
            if let Some(a) = answer {
                ctx.thread().post(a).await?;
            }
            Ok::<_, BoxError>(())
        })
    }
}

mod futures_like {
    pub(crate) type Boxed = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), chat_runtime::BoxError>> + Send>,
    >;
}

struct Agent {
    fake: FakeLinear,
    bot: Bot,
    log: Log,
    started: Started,
}

async fn agent(
    configure: impl FnOnce(chat_linear::LinearAdapterBuilder) -> chat_linear::LinearAdapterBuilder,
) -> Agent {
    let fake = FakeLinear::start().await;
    let linear: LinearAdapter = configure(common::builder().endpoint(fake.endpoint()))
        .build()
        .unwrap();
    let log = Log::default();
    let started = Started::new(tokio::sync::Semaphore::new(0));
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(linear)
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
                .concurrency(Concurrency::queue()),
        )
        .on(
            chat_linear::routes::agent_session_created(),
            handler(log.clone(), started.clone()),
        )
        .on(
            chat_linear::routes::agent_session_prompted(),
            handler(log.clone(), started.clone()),
        )
        .on_new_mention(handler(log.clone(), started.clone()))
        .on_subscribed_message(handler(log.clone(), started.clone()))
        .build()
        .unwrap();
    Agent {
        fake,
        bot,
        log,
        started,
    }
}

impl Agent {
    /// Waits until a handler run has started (one run per call).
    async fn handler_started(&self) {
        let permit = tokio::time::timeout(Duration::from_secs(10), self.started.acquire())
            .await
            .expect("no handler started within 10 s")
            .unwrap();
        permit.forget();
    }

    async fn send(&self, payload: &Value, delivery: &str) -> u16 {
        let b = body(payload);
        self.bot
            .handle("linear", request(&b, delivery))
            .await
            .status()
            .as_u16()
    }

    /// Waits for admitted work to end, then shuts down (which waits for the
    /// adapter's after-ack work too).
    async fn finish(&self) {
        for _ in 0..1000 {
            if self.bot.in_flight() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let report = self.bot.shutdown(Duration::from_secs(10)).await;
        assert!(report.finished);
    }

    fn activities(&self) -> Vec<(String, String)> {
        self.fake
            .calls_of("AgentActivityCreate")
            .iter()
            .map(|r| {
                let c = &r.input()["content"];
                (
                    c["type"].as_str().unwrap().to_owned(),
                    c["body"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    async fn wait_runs(&self, n: usize) -> Vec<Run> {
        for _ in 0..500 {
            let runs = self.log.lock().unwrap().clone();
            if runs.len() >= n {
                return runs;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.log.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_is_answered_with_a_response() {
    let a = agent(|b| b.first_thought(false)).await;
    assert_eq!(a.send(&payloads::session_created(), "d-1").await, 200);
    a.finish().await;
    let runs = a.log.lock().unwrap().clone();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        a.activities(),
        [(
            "response".to_owned(),
            "answer to @helper can you find out why this is flaky?".to_owned()
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_is_answered_in_its_session() {
    let a = agent(|b| b.first_thought(false)).await;
    assert_eq!(
        a.send(
            &payloads::session_prompted("act-1", "check the retries"),
            "d-2"
        )
        .await,
        200
    );
    a.finish().await;
    assert_eq!(
        a.activities(),
        [(
            "response".to_owned(),
            "answer to check the retries".to_owned()
        )]
    );
    let sent = a.fake.calls_of("AgentActivityCreate");
    assert_eq!(sent[0].input()["agentSessionId"], common::SESSION);
}

/// A stop cancels the running handler, which posts no answer; the session is
/// then ended with exactly one final `response` activity (Linear shows it as
/// "working" otherwise), schema-valid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_cancels_the_running_handler_and_ends_the_session_once() {
    let a = agent(|b| b.first_thought(false)).await;
    assert_eq!(
        a.send(
            &payloads::session_prompted("act-1", "please wait here"),
            "d-3"
        )
        .await,
        200
    );
    a.handler_started().await;
    assert_eq!(
        a.send(&payloads::session_stop("act-stop"), "d-4").await,
        200
    );
    let runs = a.wait_runs(1).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].text.as_deref(), Some("please wait here"));
    assert_eq!(runs[0].cause, Some(CancelCause::StopRequested));
    a.finish().await;
    // The stop started no handler, and the cancelled one posted nothing: the
    // one activity is the adapter's closing response.
    assert_eq!(a.log.lock().unwrap().len(), 1);
    let sent = a.fake.calls_of("AgentActivityCreate");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].input()["agentSessionId"], common::SESSION);
    assert_eq!(sent[0].input()["content"]["type"], "response");
    assert_eq!(
        sent[0].input()["content"]["body"],
        chat_linear::DEFAULT_STOPPED
    );
}

/// A handler that answers the stop itself says the last word: the adapter's
/// closing activity is not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_answers_a_stop_says_the_last_word() {
    let a = agent(|b| b.first_thought(false)).await;
    a.send(&payloads::session_prompted("act-p", "be polite"), "d-11")
        .await;
    a.handler_started().await;
    a.send(&payloads::session_stop("act-stop-p"), "d-12").await;
    a.wait_runs(1).await;
    a.finish().await;
    assert_eq!(
        a.activities(),
        [("response".to_owned(), "Stopping, as you asked.".to_owned())]
    );
}

/// A stop with nothing running ends the session too; a configured text is
/// used; `None` turns it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_with_nothing_running_still_ends_the_session() {
    let a = agent(|b| {
        b.first_thought(false)
            .stopped_text(Some("Halted as asked."))
    })
    .await;
    assert_eq!(
        a.send(&payloads::session_stop("act-stop-2"), "d-9").await,
        200
    );
    a.finish().await;
    let sent = a.fake.calls_of("AgentActivityCreate");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].input()["content"]["body"], "Halted as asked.");

    let quiet = agent(|b| b.first_thought(false).stopped_text(None)).await;
    quiet
        .send(&payloads::session_stop("act-stop-3"), "d-10")
        .await;
    quiet.finish().await;
    assert!(quiet.fake.calls_of("AgentActivityCreate").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_mention_is_answered_in_its_thread() {
    let a = agent(|b| b.mention_name("helper")).await;
    let reply =
        payloads::comment_created("c-reply", Some("c-root"), USER, "@helper is this flaky?");
    assert_eq!(a.send(&reply, "d-5").await, 200);
    a.finish().await;
    let sent = a.fake.calls_of("CommentCreate");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].input()["parentId"], "c-root");
    assert_eq!(sent[0].input()["issueId"], ISSUE);
    assert_eq!(sent[0].input()["body"], "answer to @helper is this flaky?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_comment_in_an_unsubscribed_thread_is_acknowledged_and_left() {
    let a = agent(|b| b).await;
    let plain = payloads::comment_created("c-1", None, USER, "just a note");
    assert_eq!(a.send(&plain, "d-6").await, 200);
    a.finish().await;
    assert!(a.fake.calls().is_empty());
    assert!(a.log.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_runs_once_whatever_its_delivery_id() {
    let a = agent(|b| b.first_thought(false)).await;
    let prompt = payloads::session_prompted("act-7", "once please");
    assert_eq!(a.send(&prompt, "d-7").await, 200);
    assert_eq!(a.send(&prompt, "d-7-retry").await, 200);
    a.finish().await;
    assert_eq!(a.log.lock().unwrap().len(), 1);
    assert_eq!(a.activities().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_deliveries_get_their_statuses() {
    let a = agent(|b| b).await;
    let b = body(&payloads::session_created());
    let forged = {
        let mut r = request(&b, "d-8");
        r.headers_mut().insert(
            chat_linear::signature::SIGNATURE_HEADER,
            "00".repeat(32).parse().unwrap(),
        );
        r
    };
    assert_eq!(a.bot.handle("linear", forged).await.status(), 401);
    let mut stale = payloads::session_created();
    stale["webhookTimestamp"] = (common::NOW_MS - 120_000).into();
    assert_eq!(a.send(&stale, "d-9").await, 401);
    let issue = payloads::entity("Issue", "create", serde_json::json!({"id": ISSUE}));
    assert_eq!(a.send(&issue, "d-10").await, 200);
    let own = payloads::comment_created("c-own", None, common::APP_USER, "@helper hi");
    assert_eq!(a.send(&own, "d-11").await, 200);
    let malformed = serde_json::json!({"type": "Comment", "action": "create",
        "webhookTimestamp": common::NOW_MS, "organizationId": "o", "data": {"body": "no id"}});
    assert_eq!(a.send(&malformed, "d-12").await, 400);
    a.finish().await;
    assert!(a.fake.calls().is_empty());
    assert!(a.log.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_still_shows_a_thought_within_ten_seconds() {
    let a = agent(|b| b).await;
    let mut created = payloads::session_created();
    created["agentSession"]["comment"]["body"] = "@helper slow please".into();
    let sent_at = tokio::time::Instant::now();
    assert_eq!(a.send(&created, "d-13").await, 200);
    let first = a.fake.wait_for_requests(1, Duration::from_secs(10)).await;
    assert!(!first.is_empty(), "no activity at all");
    assert!(first[0].at - sent_at < Duration::from_secs(10));
    assert_eq!(first[0].input()["content"]["type"], "thought");
    assert_eq!(first[0].input()["ephemeral"], true);
    a.finish().await;
    let kinds: Vec<String> = a.activities().into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["thought", "response"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_answer_is_never_followed_by_the_first_thought() {
    for i in 0..5 {
        let a = agent(|b| b).await;
        let created = payloads::session_created_for(&format!("s-fast-{i}"));
        assert_eq!(a.send(&created, &format!("d-fast-{i}")).await, 200);
        a.finish().await;
        let kinds: Vec<String> = a.activities().into_iter().map(|(k, _)| k).collect();
        assert!(
            kinds == ["response"] || kinds == ["thought", "response"],
            "{kinds:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_in_a_session_is_thoughts_then_one_response() {
    let a = agent(|b| b.first_thought(false)).await;
    let prompt = payloads::session_prompted("act-1", "stream it");
    assert_eq!(a.send(&prompt, "d-s").await, 200);
    a.finish().await;
    let sent = a.fake.calls_of("AgentActivityCreate");
    let kinds: Vec<(String, bool)> = sent
        .iter()
        .map(|c| {
            (
                c.input()["content"]["type"].as_str().unwrap().to_owned(),
                c.input()["ephemeral"] == true,
            )
        })
        .collect();
    let last = kinds.last().unwrap().clone();
    assert_eq!(last, ("response".to_owned(), false));
    assert!(
        kinds[..kinds.len() - 1]
            .iter()
            .all(|k| *k == ("thought".to_owned(), true))
    );
    assert!(kinds.len() >= 2, "{kinds:?}");
    assert_eq!(a.activities().last().unwrap().1, "streamed in parts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_in_a_comment_thread_edits_one_comment_in_place() {
    let a = agent(|b| b.mention_name("helper")).await;
    let reply = payloads::comment_created("c-reply", Some("c-root"), USER, "@helper stream it");
    assert_eq!(a.send(&reply, "d-c").await, 200);
    a.finish().await;
    let created = a.fake.calls_of("CommentCreate");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].input()["body"], "streamed");
    let updates = a.fake.calls_of("CommentUpdate");
    assert!(!updates.is_empty());
    assert_eq!(updates.last().unwrap().input()["body"], "streamed in parts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_in_a_session_is_a_markdown_response() {
    let a = agent(|b| b.first_thought(false)).await;
    let prompt = payloads::session_prompted("act-1", "show the card");
    assert_eq!(a.send(&prompt, "d-k").await, 200);
    a.finish().await;
    assert_eq!(
        a.activities(),
        [(
            "response".to_owned(),
            "### Status\n\n**Build:** green\n\n_Not shown on Linear: Rerun_".to_owned()
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_threads_history_and_its_authors_are_read_through_the_thread() {
    let a = agent(|b| b.mention_name("helper")).await;
    let human =
        serde_json::json!({ "id": USER, "displayName": "ana", "app": false, "isMe": false });
    a.fake.add_user(serde_json::json!({ "id": USER, "name": "Ana Lima", "displayName": "ana", "email": "ana@example.com", "app": false }));
    a.fake.add_comment(serde_json::json!({
        "id": "c-root", "body": "Why is this flaky?", "createdAt": "2026-12-01T09:00:00.000Z", "user": human,
    }));
    a.fake.add_comment(serde_json::json!({
        "id": "c-1", "body": "Still failing", "createdAt": "2026-12-01T09:05:00.000Z", "user": human, "parentId": "c-root",
    }));
    let reply = payloads::comment_created("c-2", Some("c-root"), USER, "@helper history please");
    assert_eq!(a.send(&reply, "d-h").await, 200);
    a.finish().await;
    let sent = a.fake.calls_of("CommentCreate");
    assert_eq!(sent.len(), 1, "{:?}", a.fake.calls());
    assert_eq!(
        sent[0].input()["body"],
        "history: 2 (0 mine), started by ana"
    );
    assert_eq!(a.fake.calls_of("User").len(), 1);
}
