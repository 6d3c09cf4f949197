//! End to end: signed Slack deliveries through the runtime's webhook service,
//! a bot on the memory backend with deferred dispatch and the queue strategy,
//! and chat-testkit's fake Slack Web API recording what the bot sends.
//!
//! The tests run on tokio's paused clock, so a scripted `Retry-After` is
//! waited out on that clock, not in real time. The Web API calls still go over
//! loopback sockets to the fake server in the same runtime, and a paused clock
//! jumps to the next timer whenever the runtime has nothing to run; so the
//! tests wait with `idle`, whose 10 ms polls keep every such jump short, and
//! the adapter's request timeout is far beyond any jump.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use chat_runtime::{
    Bot, BoxError, Concurrency, Ctx, Dispatch, DispatchOptions, Event, Outcome, OutcomeRecord,
    Replied, RuntimeOptions,
};
use chat_slack::{NO_RETRY_HEADER, SlackAdapter, SlackAdapterBuilder, signature};
use chat_state_memory::MemoryState;
use chat_testkit::signed::SlackDeliveries;
use chat_testkit::{FakeSlack, RetryAfter};
use common::{BOT_ID, BOT_USER, SECRET, TEAM};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tower::ServiceExt;

const CHANNEL: &str = "C0LAN2Q65";
const ROOT_TS: &str = "1700000000.000100";
const REPLY_TS: &str = "1700000050.000200";
const TOKEN: &str = "xoxb-end-to-end";
const AT_CAPACITY: &str = "Busy right now: try again in a minute.";
/// How long any one test waits for the bot to finish.
const PATIENCE: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------- the bot

/// The Slack adapter on the system clock, its Web API at the fake.
fn adapter(fake: &FakeSlack) -> SlackAdapterBuilder {
    SlackAdapter::builder()
        .signing_secret(SECRET)
        .bot_token(TOKEN)
        .bot_user_id(BOT_USER)
        .bot_id(BOT_ID)
        .api_base_url(fake.base_url())
        .request_timeout(Duration::from_secs(3600))
        .at_capacity_text(AT_CAPACITY)
}

fn deferred() -> RuntimeOptions {
    RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
        .concurrency(Concurrency::queue())
}

/// Answers a mention in its thread.
async fn on_mention(ctx: Ctx, event: Event) -> Result<(), BoxError> {
    let text = event.text().unwrap_or_default().to_owned();
    ctx.thread().post(format!("on it: {text}")).await?;
    Ok(())
}

/// Answers `/status {text}` in the HTTP response.
async fn on_status(ctx: Ctx, event: Event) -> Result<(), BoxError> {
    let text = event.text().unwrap_or_default().to_owned();
    assert!(ctx.reply(chat_core::Reply::platform(
        json!({ "text": format!("{text} is green") })
    )));
    Ok(())
}

/// Every outcome the bot records.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<OutcomeRecord>>>);

impl Outcomes {
    fn observer(&self) -> impl Fn(&OutcomeRecord) + Send + Sync + 'static {
        let all = Arc::clone(&self.0);
        move |r: &OutcomeRecord| all.lock().unwrap().push(r.clone())
    }

    fn of(&self, outcome: Outcome) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.outcome == outcome)
            .map(|r| r.event_id.as_str().to_owned())
            .collect()
    }
}

/// A deferred bot with the queue strategy that answers mentions in the thread.
fn bot(fake: &FakeSlack, outcomes: &Outcomes) -> Bot {
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(fake).build().unwrap())
        .options(deferred())
        .observer(outcomes.observer())
        .on_new_mention(on_mention)
        .on_slash_command("/status", on_status)
        .build()
        .unwrap()
}

/// Waits (bounded, on tokio's clock) until no detached work is left: every
/// admitted run ended and gave its place back.
async fn idle(bot: &Bot) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while bot.in_flight() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {} runs in flight after {PATIENCE:?}",
            bot.in_flight()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Lets every run end on its own, then shuts down: nothing is left to cancel.
async fn finish(bot: &Bot) {
    idle(bot).await;
    let report = bot.shutdown(PATIENCE).await;
    assert!(report.finished, "{report:?}");
    assert_eq!(report.cancelled, 0, "{report:?}");
}

// ---------------------------------------------------------------- deliveries

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Deliveries as Slack signs them, in the test workspace and channel.
fn slack() -> SlackDeliveries {
    SlackDeliveries::new(SECRET)
        .team(TEAM)
        .bot_user(BOT_USER)
        .channel(CHANNEL)
        .user("U0HUMAN")
}

/// Adds `extra` headers and makes the body a `Full`.
fn with_headers(
    request: http::Request<Bytes>,
    extra: &[(&str, &str)],
) -> http::Request<Full<Bytes>> {
    let mut request = request.map(Full::new);
    for (k, v) in extra {
        request.headers_mut().insert(
            http::HeaderName::try_from(*k).unwrap(),
            http::HeaderValue::try_from(*v).unwrap(),
        );
    }
    request
}

/// A POST to the webhook signed with `secret` at `timestamp`.
fn request_signed(
    secret: &str,
    timestamp: u64,
    content_type: &str,
    body: &[u8],
    extra: &[(&str, &str)],
) -> http::Request<Full<Bytes>> {
    let request = SlackDeliveries::new(secret).signed_at(timestamp, content_type, body.to_vec());
    with_headers(request, extra)
}

/// An Events API delivery, signed now.
fn event_request(body: &Value, extra: &[(&str, &str)]) -> http::Request<Full<Bytes>> {
    with_headers(slack().event(body), extra)
}

/// A slash command (form body), signed now.
fn command_request(command: &str, text: &str) -> http::Request<Full<Bytes>> {
    command_request_to(command, text, "https://hooks.slack.com/commands/T0001/1/x")
}

/// A slash command whose `response_url` is `response_url`; one trigger per
/// command (a command's retry has the same one).
fn command_request_to(command: &str, text: &str, response_url: &str) -> http::Request<Full<Bytes>> {
    let trigger = format!(
        "13345224609.738474920.8088930838d88f008e0{}",
        command.trim_start_matches('/')
    );
    slack()
        .slash_command_with(command, text, &trigger, response_url)
        .map(Full::new)
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

async fn deliver(bot: &Bot, request: http::Request<Full<Bytes>>) -> Answer {
    let response = bot.webhook("slack").oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

// ---------------------------------------------------------------- payloads

/// A user's post mentioning the bot, as `app_mention` (`thread_ts` for a reply
/// in a thread).
fn app_mention(event_id: &str, ts: &str, thread_ts: Option<&str>) -> Value {
    slack().app_mention_body(
        event_id,
        ts,
        thread_ts,
        &format!("<@{BOT_USER}> is the deploy done?"),
    )
}

/// The same post as its `message` twin (another event id, same channel + ts).
fn message_twin(event_id: &str, ts: &str, thread_ts: Option<&str>) -> Value {
    let mut body = app_mention(event_id, ts, thread_ts);
    body["event"]["type"] = json!("message");
    body["event"]["channel_type"] = json!("channel");
    body
}

// ---------------------------------------------------------------- mentions

#[tokio::test(start_paused = true)]
async fn a_signed_app_mention_posts_once_in_its_thread() {
    let fake = FakeSlack::start().await;
    let outcomes = Outcomes::default();
    let bot = bot(&fake, &outcomes);

    let answer = deliver(
        &bot,
        event_request(&app_mention("Ev01", REPLY_TS, Some(ROOT_TS)), &[]),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.body.is_empty(), "an event is acknowledged empty");
    finish(&bot).await;

    let calls = fake.calls();
    assert_eq!(calls.len(), 1, "one post and nothing else: {calls:?}");
    let post = &calls[0];
    assert_eq!(post.method, "chat.postMessage");
    assert!(post.ok);
    assert_eq!(
        post.authorization.as_deref(),
        Some("Bearer xoxb-end-to-end")
    );
    assert_eq!(post.body["channel"], CHANNEL);
    assert_eq!(
        post.body["thread_ts"], ROOT_TS,
        "a reply goes in the thread"
    );
    assert_eq!(
        post.body["text"],
        format!("on it: @{BOT_USER} is the deploy done?")
    );
    assert_eq!(outcomes.of(Outcome::Ran), ["Ev01"]);
}

#[tokio::test(start_paused = true)]
async fn a_top_level_mention_is_answered_in_a_thread_under_it() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, &Outcomes::default());
    let answer = deliver(
        &bot,
        event_request(&app_mention("Ev01", ROOT_TS, None), &[]),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    finish(&bot).await;
    let posts = fake.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].body["channel"], CHANNEL);
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
}

#[tokio::test(start_paused = true)]
async fn a_retried_delivery_and_the_message_twin_still_post_once() {
    let fake = FakeSlack::start().await;
    let outcomes = Outcomes::default();
    let bot = bot(&fake, &outcomes);
    let mention = app_mention("Ev01", REPLY_TS, Some(ROOT_TS));

    assert_eq!(
        deliver(&bot, event_request(&mention, &[])).await.status,
        StatusCode::OK
    );
    idle(&bot).await;
    assert_eq!(fake.posts().len(), 1, "the first delivery ran");

    // Slack retries the same event (its first answer was, say, late) ...
    let retry = deliver(
        &bot,
        event_request(
            &mention,
            &[
                ("x-slack-retry-num", "1"),
                ("x-slack-retry-reason", "http_timeout"),
            ],
        ),
    )
    .await;
    assert_eq!(retry.status, StatusCode::OK);
    assert!(retry.body.is_empty());
    // ... and delivers the post's `message` twin under another event id.
    let twin = deliver(
        &bot,
        event_request(&message_twin("Ev02", REPLY_TS, Some(ROOT_TS)), &[]),
    )
    .await;
    assert_eq!(twin.status, StatusCode::OK);
    finish(&bot).await;

    assert_eq!(fake.calls_of("chat.postMessage").len(), 1, "still one post");
    assert_eq!(outcomes.of(Outcome::Ran), ["Ev01"]);
    assert_eq!(outcomes.of(Outcome::Duplicate), ["Ev01", "Ev02"]);
}

#[tokio::test(start_paused = true)]
async fn twins_arriving_together_post_once_whichever_comes_first() {
    let fake = FakeSlack::start().await;
    let outcomes = Outcomes::default();
    let bot = bot(&fake, &outcomes);
    // The `message` twin first, the `app_mention` right behind it while the
    // first run may still be posting, then a retry of the twin.
    for (body, extra) in [
        (message_twin("Ev02", REPLY_TS, Some(ROOT_TS)), &[][..]),
        (app_mention("Ev01", REPLY_TS, Some(ROOT_TS)), &[][..]),
        (
            message_twin("Ev02", REPLY_TS, Some(ROOT_TS)),
            &[("x-slack-retry-num", "1")][..],
        ),
    ] {
        assert_eq!(
            deliver(&bot, event_request(&body, extra)).await.status,
            StatusCode::OK
        );
    }
    finish(&bot).await;
    let posts = fake.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
    assert_eq!(outcomes.of(Outcome::Ran), ["Ev02"]);
    assert_eq!(outcomes.of(Outcome::Duplicate), ["Ev01", "Ev02"]);
}

// ---------------------------------------------------------------- rate limits

async fn rate_limited_once(retry_after: RetryAfter) {
    let fake = FakeSlack::start().await;
    fake.rate_limit("chat.postMessage", retry_after, 1);
    let outcomes = Outcomes::default();
    let bot = bot(&fake, &outcomes);

    let answer = deliver(
        &bot,
        event_request(&app_mention("Ev01", REPLY_TS, Some(ROOT_TS)), &[]),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "acknowledged before posting");
    finish(&bot).await;

    let calls = fake.calls_of("chat.postMessage");
    assert_eq!(calls.len(), 2, "the 429, then the post: {calls:?}");
    assert_eq!(calls[0].status, StatusCode::TOO_MANY_REQUESTS);
    assert!(calls[1].ok);
    assert_eq!(calls[1].body, calls[0].body, "the same post, sent again");
    assert_eq!(calls[1].body["thread_ts"], ROOT_TS);
    assert!(
        calls[1].at - calls[0].at >= Duration::from_secs(1),
        "sent again only after Retry-After: {:?}",
        calls[1].at - calls[0].at
    );
    assert_eq!(fake.posts().len(), 1, "exactly one post");
    assert_eq!(outcomes.of(Outcome::Ran), ["Ev01"]);
}

#[tokio::test(start_paused = true)]
async fn a_429_then_success_posts_once_after_the_retry_after_header() {
    rate_limited_once(RetryAfter::Header(1)).await;
}

#[tokio::test(start_paused = true)]
async fn a_429_then_success_posts_once_after_the_retry_after_in_the_body() {
    rate_limited_once(RetryAfter::Body(1)).await;
}

// ---------------------------------------------------------------- at the door

#[tokio::test(start_paused = true)]
async fn url_verification_answers_the_challenge() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, &Outcomes::default());
    let challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
    let body = json!({
        "token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
        "challenge": challenge,
        "type": "url_verification",
    });
    let answer = deliver(&bot, event_request(&body, &[])).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, challenge.as_bytes());

    // Only after verification: an unsigned challenge is refused.
    let bytes = serde_json::to_vec(&body).unwrap();
    let forged = request_signed("not-the-secret", now(), "application/json", &bytes, &[]);
    assert_eq!(deliver(&bot, forged).await.status, StatusCode::UNAUTHORIZED);
    finish(&bot).await;
    assert!(fake.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_bad_signature_is_401_and_nothing_runs() {
    let fake = FakeSlack::start().await;
    let outcomes = Outcomes::default();
    let bot = bot(&fake, &outcomes);
    let body = serde_json::to_vec(&app_mention("Ev01", REPLY_TS, Some(ROOT_TS))).unwrap();

    let wrong_secret = request_signed("not-the-secret", now(), "application/json", &body, &[]);
    let stale = request_signed(SECRET, now() - 301, "application/json", &body, &[]);
    let mut tampered = request_signed(SECRET, now(), "application/json", &body, &[]);
    *tampered.body_mut() = Full::new(Bytes::from(
        String::from_utf8(body.clone())
            .unwrap()
            .replace("deploy", "DEPLOY"),
    ));
    let mut unsigned = request_signed(SECRET, now(), "application/json", &body, &[]);
    unsigned.headers_mut().remove(signature::SIGNATURE_HEADER);

    for request in [wrong_secret, stale, tampered, unsigned] {
        let answer = deliver(&bot, request).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        let shown = String::from_utf8_lossy(&answer.body);
        assert!(!shown.contains(SECRET) && !shown.contains("v0="), "{shown}");
    }
    finish(&bot).await;
    assert!(fake.calls().is_empty());
    assert!(outcomes.of(Outcome::Ran).is_empty());
}

// ---------------------------------------------------------------- slash commands

#[tokio::test(start_paused = true)]
async fn a_slash_command_answers_with_the_handlers_reply() {
    // Under sync dispatch, and under deferred dispatch, where commands still
    // run before the acknowledgement so that they can answer in it.
    for dispatch in [Dispatch::Sync, Dispatch::Deferred] {
        let fake = FakeSlack::start().await;
        let bot = Bot::builder()
            .state(MemoryState::new())
            .adapter(adapter(&fake).build().unwrap())
            .options({
                let mut options = deferred();
                options.dispatch.mode = dispatch;
                options
            })
            .on_slash_command("/status", on_status)
            .build()
            .unwrap();
        let answer = deliver(&bot, command_request("/status", "the deploy")).await;
        assert_eq!(answer.status, StatusCode::OK, "{dispatch:?}");
        assert_eq!(
            answer.headers["content-type"],
            "application/json; charset=utf-8"
        );
        assert_eq!(
            answer.json(),
            json!({"text": "the deploy is green"}),
            "{dispatch:?}"
        );
        finish(&bot).await;
        assert!(fake.calls().is_empty(), "answered in the response only");
    }
}

/// A slash command whose inline handler is still running at the ack deadline
/// is answered 200 with the visible "working" text (Slack never retries a
/// command), and the handler's reply follows through the `response_url`.
#[tokio::test(start_paused = true)]
async fn a_slow_slash_command_is_answered_working_and_replies_later() {
    let fake = FakeSlack::start().await;
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake).build().unwrap())
        .options({
            let mut options = deferred();
            options.timeouts.ack = Duration::from_secs(2);
            options
        })
        .on_any_slash_command(|ctx: Ctx, event: Event| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            on_status(ctx, event).await
        })
        .build()
        .unwrap();
    let url = fake.response_url("commands/T0001/1/x");
    let answer = deliver(&bot, command_request_to("/deploy", "prod", &url)).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["response_type"], "ephemeral");
    assert!(
        answer.json()["text"]
            .as_str()
            .unwrap()
            .contains("Working on it"),
        "{}",
        answer.json()
    );
    let later = fake
        .wait_for_calls("response_url", 1, Duration::from_secs(10))
        .await;
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].body, json!({"text": "prod is green"}));
    finish(&bot).await;
}

/// `reply_in_channel` answers in the HTTP response while it is open, and says
/// so.
#[tokio::test(start_paused = true)]
async fn reply_in_channel_answers_in_the_response() {
    let fake = FakeSlack::start().await;
    let replied = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&replied);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake).build().unwrap())
        .options(deferred())
        .on_slash_command("/deploy", move |ctx: Ctx, event: Event| {
            let seen = Arc::clone(&seen);
            async move {
                let how = ctx
                    .reply_in_channel(format!("deploying {}", event.text().unwrap_or("")))
                    .await?;
                *seen.lock().unwrap() = Some(how);
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    let answer = deliver(&bot, command_request("/deploy", "prod")).await;
    assert_eq!(
        answer.json(),
        json!({"response_type": "in_channel", "text": "deploying prod"})
    );
    finish(&bot).await;
    assert_eq!(*replied.lock().unwrap(), Some(Replied::InResponse));
    assert!(fake.calls().is_empty(), "answered in the response only");
}

/// Past the acknowledgement, `reply_ephemeral` goes through the command's
/// `response_url`, awaited: the handler learns it went `Later`.
#[tokio::test(start_paused = true)]
async fn reply_ephemeral_after_the_response_goes_to_the_response_url() {
    let fake = FakeSlack::start().await;
    let replied = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&replied);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake).build().unwrap())
        .options({
            let mut options = deferred();
            options.timeouts.ack = Duration::from_secs(2);
            options
        })
        .on_any_slash_command(move |ctx: Ctx, _event: Event| {
            let seen = Arc::clone(&seen);
            async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let how = ctx.reply_ephemeral("done").await?;
                *seen.lock().unwrap() = Some(how);
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();
    let url = fake.response_url("commands/T0001/2/y");
    let answer = deliver(&bot, command_request_to("/deploy", "prod", &url)).await;
    assert!(
        answer.json()["text"]
            .as_str()
            .unwrap()
            .contains("Working on it")
    );
    let later = fake
        .wait_for_calls("response_url", 1, Duration::from_secs(10))
        .await;
    assert_eq!(
        later[0].body,
        json!({"response_type": "ephemeral", "text": "done"})
    );
    finish(&bot).await;
    assert_eq!(*replied.lock().unwrap(), Some(Replied::Later));
}

/// Any slash command reaches `on_any_slash_command` when no handler names it.
#[tokio::test(start_paused = true)]
async fn any_slash_command_reaches_the_catch_all_handler() {
    let fake = FakeSlack::start().await;
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake).build().unwrap())
        .options(deferred())
        .on_any_slash_command(on_status)
        .build()
        .unwrap();
    for command in ["/status", "/whatever"] {
        let answer = deliver(&bot, command_request(command, "x")).await;
        assert_eq!(answer.json(), json!({"text": "x is green"}), "{command}");
    }
    finish(&bot).await;
}

// ---------------------------------------------------------------- capacity

#[tokio::test(start_paused = true)]
async fn at_capacity_events_get_503_and_slash_commands_a_visible_text() {
    let fake = FakeSlack::start().await;
    let outcomes = Outcomes::default();
    let release = Arc::new(Semaphore::new(0));
    let gate = Arc::clone(&release);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake).build().unwrap())
        .options({
            let mut options = deferred();
            options.admission.max_detached = 1;
            options
        })
        .observer(outcomes.observer())
        .on_new_mention(move |ctx: Ctx, event: Event| {
            let gate = Arc::clone(&gate);
            async move {
                // Held until the test lets it go (or the bot shuts down).
                tokio::select! {
                    permit = gate.acquire() => permit?.forget(),
                    () = ctx.cancelled() => return Ok(()),
                }
                on_mention(ctx, event).await
            }
        })
        .on_slash_command("/status", on_status)
        .build()
        .unwrap();

    // The one place is taken by a run that blocks.
    let first = app_mention("Ev01", ROOT_TS, None);
    assert_eq!(
        deliver(&bot, event_request(&first, &[])).await.status,
        StatusCode::OK
    );
    assert_eq!(bot.in_flight(), 1);

    // An event in another thread: 503, so Slack retries it; not "no retry".
    let other_ts = "1700000070.000300";
    let second = app_mention("Ev02", other_ts, None);
    let refused = deliver(&bot, event_request(&second, &[])).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers.get(NO_RETRY_HEADER).is_none());

    // A slash command: a 200 the user sees.
    let command = deliver(&bot, command_request("/status", "the deploy")).await;
    assert_eq!(command.status, StatusCode::OK);
    assert_eq!(
        command.json(),
        json!({"response_type": "ephemeral", "text": AT_CAPACITY})
    );
    assert_eq!(outcomes.of(Outcome::Rejected).len(), 2);

    // Once the place is free, Slack's retry of the refused event runs: it was
    // never marked as seen.
    release.add_permits(1);
    idle(&bot).await;
    assert_eq!(fake.posts().len(), 1);
    release.add_permits(1);
    let retried = deliver(
        &bot,
        event_request(
            &second,
            &[
                ("x-slack-retry-num", "1"),
                ("x-slack-retry-reason", "http_error"),
            ],
        ),
    )
    .await;
    assert_eq!(retried.status, StatusCode::OK);
    finish(&bot).await;

    let threads: Vec<Value> = fake
        .posts()
        .iter()
        .map(|c| c.body["thread_ts"].clone())
        .collect();
    assert_eq!(threads, [json!(ROOT_TS), json!(other_ts)]);
    assert_eq!(outcomes.of(Outcome::Ran), ["Ev01", "Ev02"]);
}

// ---------------------------------------------------------------- over a socket

/// On real time: here the test itself talks over a socket, with no poll running.
#[tokio::test]
async fn serves_slack_through_axum_over_a_socket() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, &Outcomes::default());
    let app = axum::Router::new().route_service("/webhooks/slack", bot.webhook("slack"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let request = event_request(&app_mention("Ev01", REPLY_TS, Some(ROOT_TS)), &[]);
    let (parts, body) = request.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/webhooks/slack"))
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);

    finish(&bot).await;
    let posts = fake.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
    server.abort();
}

// ------------------------------------------------------------ deadlines

/// A 429 wait never sleeps past the handler's deadline: `Thread` bounds every
/// platform call by the run's budget, so with a 2 s budget and `Retry-After: 10`
/// the post is abandoned at the deadline instead of going out at 10 s.
#[tokio::test(start_paused = true)]
async fn a_429_wait_never_outlasts_the_handlers_deadline() {
    let fake = FakeSlack::start().await;
    fake.rate_limit("chat.postMessage", RetryAfter::Header(10), 1);
    let result = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&result);
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake).build().unwrap())
        .options({
            let mut options = deferred();
            options.dispatch.detach_timeout = Duration::from_secs(2);
            options
        })
        .on_new_mention(move |ctx: Ctx, _event: Event| {
            let seen = Arc::clone(&seen);
            async move {
                let posted = ctx.thread().post("on it").await;
                *seen.lock().unwrap() = Some(posted.map(|_| ()));
                Ok::<(), BoxError>(())
            }
        })
        .build()
        .unwrap();
    let answer = deliver(
        &bot,
        event_request(&app_mention("Ev01", ROOT_TS, None), &[]),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    idle(&bot).await;

    let calls = fake.calls_of("chat.postMessage");
    assert_eq!(calls.len(), 1, "no retry after the budget: {calls:?}");
    let posted = result.lock().unwrap().take().unwrap();
    assert!(
        matches!(
            posted,
            Err(chat_core::AdapterError::RateLimited { .. }
                | chat_core::AdapterError::DeadlineExceeded)
        ),
        "{posted:?}"
    );
}
