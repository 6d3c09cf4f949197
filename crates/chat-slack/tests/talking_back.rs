//! The portable thread handle on Slack, end to end: a signed mention through
//! the runtime, a handler that talks back through `ctx.thread()`, and
//! chat-testkit's fake Slack answering as Slack documents.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chat_core::card::{Button, Card, Field};
use chat_runtime::{Bot, BoxError, Ctx, DispatchOptions, Event, RetentionOptions, RuntimeOptions};
use chat_slack::SlackAdapter;
use chat_state_memory::MemoryState;
use chat_testkit::FakeSlack;
use chat_testkit::signed::SlackDeliveries;
use common::{BOT_ID, BOT_USER, SECRET, TEAM};
use http_body_util::Full;
use serde_json::{Value, json};
use tower::ServiceExt;

const CHANNEL: &str = "C0TALK";
const ROOT: &str = "1700000000.000100";
const PATIENCE: Duration = Duration::from_secs(3600);

/// What the handler saw, for the test to assert on.
type Seen = Arc<Mutex<Vec<String>>>;

/// The Slack adapter of these tests, its Web API at `fake`.
fn adapter(fake: &FakeSlack) -> chat_slack::SlackAdapterBuilder {
    SlackAdapter::builder()
        .signing_secret(SECRET)
        .bot_token("xoxb-talk")
        .bot_user_id(BOT_USER)
        .bot_id(BOT_ID)
        .api_base_url(fake.base_url())
        // Paused-clock tests jump time while a call waits on its socket.
        .request_timeout(Duration::from_secs(24 * 3600))
}

/// A bot whose mention handler is `handler`, its Slack at `fake`.
fn bot<F, Fut>(fake: &FakeSlack, handler: F) -> Bot
where
    F: Fn(Ctx, Event) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let adapter = adapter(fake).build().unwrap();
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter)
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(3600))),
        )
        .on_new_mention(handler)
        .build()
        .unwrap()
}

/// Delivers a mention at `ts` in the thread `ROOT`, and waits for its run.
async fn mention(bot: &Bot, event_id: &str, ts: &str) {
    let slack = SlackDeliveries::new(SECRET)
        .team(TEAM)
        .bot_user(BOT_USER)
        .channel(CHANNEL)
        .user("U0HUMAN");
    let text = slack.mentioning("hello");
    let request = slack
        .app_mention(event_id, ts, Some(ROOT), &text)
        .map(Full::new);
    let response = bot.webhook("slack").oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(bot.idle(PATIENCE).await);
}

fn human(ts: &str, text: &str) -> Value {
    json!({ "user": "U0HUMAN", "text": text, "ts": ts, "thread_ts": ROOT })
}

#[tokio::test]
async fn a_card_is_posted_as_block_kit_with_its_fallback() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        let card = Card::new()
            .header("Deploy")
            .fields([Field::new("Version", "1.2")])
            .actions([Button::new("again", "Again").value("1.2").into()]);
        ctx.thread().post(card).await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let posts = fake.posts();
    assert_eq!(posts.len(), 1);
    let body = &posts[0].body;
    assert_eq!(body["thread_ts"], ROOT);
    assert_eq!(body["blocks"][0]["type"], "header");
    assert_eq!(body["blocks"][2]["elements"][0]["action_id"], "again");
    assert_eq!(body["text"], "Deploy\nVersion: 1.2\n[Again]");
}

#[tokio::test]
async fn a_card_beyond_slacks_limits_fails_before_any_call() {
    let fake = FakeSlack::start().await;
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let bot = bot(&fake, move |ctx: Ctx, _e: Event| {
        let log = Arc::clone(&log);
        async move {
            let mut card = Card::new();
            for _ in 0..51 {
                card = card.divider();
            }
            let err = ctx.thread().post(card).await.unwrap_err();
            log.lock().unwrap().push(err.to_string());
            Ok(())
        }
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains("51 blocks"), "{seen:?}");
    assert!(fake.calls_of("chat.postMessage").is_empty());
}

#[tokio::test]
async fn the_fake_refuses_raw_blocks_beyond_the_limits_as_slack_does() {
    let fake = FakeSlack::start().await;
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let bot = bot(&fake, move |ctx: Ctx, _e: Event| {
        let log = Arc::clone(&log);
        async move {
            // A raw block the renderer passes through: Slack's own check.
            let raw = json!({ "type": "header", "text": { "type": "plain_text", "text": "x".repeat(151) } });
            let card = Card::new().raw(chat_core::Platform::SLACK, raw, "");
            let err = ctx.thread().post(card).await.unwrap_err();
            log.lock().unwrap().push(err.to_string());
            Ok(())
        }
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    assert!(seen.lock().unwrap()[0].contains("invalid_blocks"));
}

#[tokio::test]
async fn a_sent_message_is_edited_reacted_to_and_deleted() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        let sent = ctx.thread().post("first").await?;
        sent.edit("second").await?;
        sent.react("eyes").await?;
        sent.unreact("eyes").await?;
        let gone = ctx.thread().post("to delete").await?;
        gone.delete().await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let update = &fake.calls_of("chat.update")[0].body;
    assert_eq!(update["text"], "second");
    assert_eq!(fake.calls_of("reactions.add")[0].body["name"], "eyes");
    let remove = &fake.calls_of("reactions.remove")[0].body;
    assert_eq!(remove["name"], "eyes");
    assert_eq!(remove["timestamp"], update["ts"]);
    assert_eq!(fake.calls_of("chat.delete").len(), 1);
    let thread: Vec<String> = fake
        .thread(CHANNEL, ROOT)
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(thread, ["second"]);
}

#[tokio::test]
async fn an_ephemeral_message_goes_to_one_user_in_the_thread() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, e: Event| async move {
        let author = e.message().map(|m| m.author.id.clone()).unwrap_or_default();
        ctx.thread()
            .post_ephemeral(&author, Card::new().section("only you"))
            .await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let calls = fake.calls_of("chat.postEphemeral");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["user"], "U0HUMAN");
    assert_eq!(calls[0].body["thread_ts"], ROOT);
    assert_eq!(calls[0].body["blocks"][0]["text"]["text"], "only you");
}

#[tokio::test]
async fn history_reads_every_page_and_knows_the_bots_messages() {
    let fake = FakeSlack::start().await;
    fake.add_message(
        CHANNEL,
        json!({ "user": "U0HUMAN", "text": "root", "ts": ROOT }),
    );
    for n in 1..=450 {
        fake.add_message(
            CHANNEL,
            human(&format!("1700000000.{:06}", 100 + n), &format!("m{n}")),
        );
    }
    fake.add_message(
        CHANNEL,
        json!({ "user": BOT_USER, "bot_id": BOT_ID, "text": "mine", "ts": "1700000001.000000", "thread_ts": ROOT }),
    );
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let bot = bot(&fake, move |ctx: Ctx, _e: Event| {
        let log = Arc::clone(&log);
        async move {
            let all = ctx.thread().history(1000).await?;
            let first_ten = ctx.thread().history(10).await?;
            let mut log = log.lock().unwrap();
            log.push(all.len().to_string());
            log.push(all[0].text.clone());
            log.push(
                all.iter()
                    .filter(|m| m.is_from_bot())
                    .map(|m| m.text.clone())
                    .collect(),
            );
            log.push(first_ten.len().to_string());
            log.push(all[1].at_ms.to_string());
            Ok(())
        }
    });
    mention(&bot, "Ev1", "1700000002.000001").await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["452", "root", "mine", "10", "1700000000000"]);
    // 452 messages in pages of 200, then the 10-message read in one call.
    let pages = fake.calls_of("conversations.replies");
    assert_eq!(pages.len(), 4);
    assert_eq!(pages[1].body["cursor"], "200");
}

#[tokio::test]
async fn a_user_lookup_is_cached_in_the_state_backend() {
    let fake = FakeSlack::start().await;
    fake.add_user(json!({
        "id": "U0HUMAN", "name": "ana", "real_name": "Ana Lima", "is_bot": false,
        "profile": { "display_name": "ana.l", "real_name": "Ana Lima", "email": "ana@example.com" }
    }));
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let bot = bot(&fake, move |ctx: Ctx, _e: Event| {
        let log = Arc::clone(&log);
        async move {
            let first = ctx.thread().user("U0HUMAN").await?;
            let again = ctx.thread().user("U0HUMAN").await?;
            assert_eq!(first, again);
            let missing = ctx.thread().user("U0NOBODY").await.unwrap_err();
            let mut log = log.lock().unwrap();
            log.push(first.display_name);
            log.push(first.real_name.unwrap_or_default());
            log.push(first.email.unwrap_or_default());
            log.push(first.is_bot.to_string());
            log.push(missing.to_string());
            Ok(())
        }
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "ana.l",
            "Ana Lima",
            "ana@example.com",
            "false",
            "platform error: user_not_found"
        ]
    );
    assert_eq!(
        fake.calls_of("users.info").len(),
        2,
        "one per user: the second read is cached"
    );
}

#[tokio::test]
async fn a_handler_reaches_the_slack_client_through_the_typed_way_down() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, e: Event| async move {
        let slack = ctx.adapter::<SlackAdapter>().expect("a Slack event");
        assert!(ctx.adapter::<chat_testkit::ScriptedAdapter>().is_none());
        let client = slack.client_for(e.tenant()).await?;
        client
            .call(
                "pins.add",
                &json!({ "channel": CHANNEL, "timestamp": ROOT }),
            )
            .await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let pins = fake.calls_of("pins.add");
    assert_eq!(pins.len(), 1);
    assert_eq!(pins[0].authorization.as_deref(), Some("Bearer xoxb-talk"));
}

/// `words` one after another, `gap` apart on tokio's clock.
fn words(words: &[&str], gap: Duration) -> impl futures_util::Stream<Item = String> + Send + use<> {
    let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    futures_util::stream::unfold(words.into_iter(), move |mut rest| async move {
        let word = rest.next()?;
        tokio::time::sleep(gap).await;
        Some((word, rest))
    })
}

fn texts(fake: &FakeSlack) -> Vec<String> {
    fake.thread(CHANNEL, ROOT)
        .iter()
        .map(|m| m["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_stream_goes_out_natively_in_the_thread() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        let sent = ctx
            .thread()
            .stream(words(&["Hello", " wor", "ld"], Duration::from_millis(50)))
            .await?;
        assert!(!sent.id().is_empty());
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let start = fake.calls_of("chat.startStream");
    assert_eq!(start.len(), 1);
    assert_eq!(start[0].body["thread_ts"], ROOT);
    assert_eq!(start[0].body["markdown_text"], "Hello");
    assert_eq!(start[0].body["recipient_user_id"], "U0HUMAN");
    assert_eq!(start[0].body["recipient_team_id"], TEAM);
    assert_eq!(fake.calls_of("chat.appendStream").len(), 2);
    assert_eq!(fake.calls_of("chat.stopStream").len(), 1);
    assert!(fake.calls_of("chat.postMessage").is_empty());
    assert_eq!(texts(&fake), ["Hello world"]);
}

/// Slack takes at most 12,000 characters in one stream call (the fake
/// refuses more): a longer piece, first or later, goes out in several.
#[tokio::test(start_paused = true)]
async fn a_piece_longer_than_slack_takes_in_one_stream_call_goes_out_in_several() {
    let fake = FakeSlack::start().await;
    let line = |n: usize| format!("line {n:05} of a long answer.\n");
    let first: String = (0..1_000).map(line).collect();
    let later: String = (1_000..1_500).map(line).collect();
    let (a, b) = (first.clone(), later.clone());
    let bot = bot(&fake, move |ctx: Ctx, _e: Event| {
        let (a, b) = (a.clone(), b.clone());
        async move {
            ctx.thread()
                .stream(words(&[&a, &b], Duration::from_millis(50)))
                .await?;
            Ok(())
        }
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let starts = fake.calls_of("chat.startStream");
    let appends = fake.calls_of("chat.appendStream");
    let sent: Vec<&str> = starts
        .iter()
        .chain(&appends)
        .map(|c| c.body["markdown_text"].as_str().unwrap())
        .collect();
    assert_eq!(starts.len(), 1);
    assert!(
        sent.len() >= 4,
        "{} calls for {} + {} characters",
        sent.len(),
        first.len(),
        later.len()
    );
    for text in &sent {
        assert!(text.chars().count() <= chat_slack::STREAM_TEXT_MAX);
        assert!(text.ends_with('\n'), "cut at a line end");
    }
    assert!(starts.iter().chain(&appends).all(|c| c.ok));
    assert!(fake.posts().is_empty(), "no fallback");
    assert_eq!(sent.concat(), format!("{first}{later}"));
    assert_eq!(texts(&fake), [format!("{first}{later}")]);
}

#[tokio::test(start_paused = true)]
async fn a_refused_stream_falls_back_to_a_post_and_throttled_edits() {
    let fake = FakeSlack::start().await;
    fake.fail("chat.startStream", "not_allowed", 1);
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        let chunks: Vec<String> = (0..20).map(|n| format!("w{n} ")).collect();
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        ctx.thread()
            .stream(words(&refs, Duration::from_millis(100)))
            .await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let full: String = (0..20).map(|n| format!("w{n} ")).collect();
    assert_eq!(fake.posts().len(), 1);
    assert_eq!(
        fake.posts()[0].body["text"],
        "w0",
        "Markdown, sent as mrkdwn"
    );
    let edits = fake.calls_of("chat.update");
    // 2 s of chunks, an edit at most every 500 ms, and the final one.
    assert!((2..=6).contains(&edits.len()), "{} edits", edits.len());
    for pair in edits.windows(2) {
        assert!(pair[1].at - pair[0].at >= Duration::from_millis(500));
    }
    assert_eq!(edits.last().unwrap().body["text"], full.trim_end());
    assert_eq!(texts(&fake), [full.trim_end()]);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_mid_stream_is_waited_out() {
    let fake = FakeSlack::start().await;
    fake.enqueue(
        "chat.appendStream",
        chat_testkit::SlackReply::json(&json!({ "ok": true })),
    );
    fake.rate_limit("chat.appendStream", chat_testkit::RetryAfter::Header(2), 1);
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        ctx.thread()
            .stream(words(&["a", "b", "c"], Duration::from_millis(10)))
            .await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let appends = fake.calls_of("chat.appendStream");
    assert_eq!(
        appends.len(),
        3,
        "b, then c refused with a 429, then c again"
    );
    assert_eq!(appends[1].status, 429);
    assert!(appends[2].at - appends[1].at >= Duration::from_secs(2));
    assert_eq!(appends[2].body["markdown_text"], "c");
    // The first append was scripted: the fake's message saw only the retry.
    assert_eq!(texts(&fake), ["ac"]);
}

#[tokio::test(start_paused = true)]
async fn a_long_stream_is_rotated_before_slack_expires_it() {
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        // One word a minute for six minutes.
        ctx.thread()
            .stream(words(
                &["1 ", "2 ", "3 ", "4 ", "5 ", "6"],
                Duration::from_secs(60),
            ))
            .await?;
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let starts = fake.calls_of("chat.startStream");
    assert_eq!(starts.len(), 2);
    assert_eq!(fake.calls_of("chat.stopStream").len(), 2);
    assert!(starts[1].at - starts[0].at <= Duration::from_secs(5 * 60));
    assert_eq!(texts(&fake).concat(), "1 2 3 4 5 6");
}

#[tokio::test]
async fn modals_are_opened_pushed_and_updated_as_rendered_views() {
    use chat_core::view::{Input, View};
    let fake = FakeSlack::start().await;
    let bot = bot(&fake, |ctx: Ctx, _e: Event| async move {
        let thread = ctx.thread();
        let first = View::new("first", "First").input(Input::text("a", "b", "Say"));
        let id = thread.open_modal("trigger.1", &first).await?;
        thread
            .push_modal("trigger.2", &View::new("second", "Second"))
            .await?;
        thread
            .update_modal(&id, &View::new("first", "Changed").close("Done"))
            .await?;
        let too_long = View::new("x", "a title longer than slack allows");
        assert!(matches!(
            thread.open_modal("trigger.3", &too_long).await,
            Err(chat_core::AdapterError::Invalid(_))
        ));
        Ok(())
    });
    mention(&bot, "Ev1", "1700000001.000001").await;
    let opened = fake.calls_of("views.open");
    assert_eq!(opened.len(), 1, "the invalid view was never sent");
    assert_eq!(opened[0].body["trigger_id"], "trigger.1");
    assert_eq!(opened[0].body["view"]["blocks"][0]["type"], "input");
    assert_eq!(
        fake.calls_of("views.push")[0].body["view"]["callback_id"],
        "second"
    );
    let updated = &fake.calls_of("views.update")[0].body;
    assert!(
        updated["view_id"]
            .as_str()
            .is_some_and(|v| v.starts_with('V'))
    );
    assert_eq!(updated["view"]["title"]["text"], "Changed");
    assert_eq!(updated["view"]["close"]["text"], "Done");
}

/// A redelivery of an event is a duplicate for Slack's retry horizon — 3 h,
/// or 25 h with Delayed Events — unless the runtime's option says otherwise.
#[tokio::test(start_paused = true)]
async fn a_slack_dedupe_mark_lives_for_slacks_retry_horizon() {
    async fn posts_after(delayed: bool, over: Option<Duration>, wait: Duration) -> usize {
        let fake = FakeSlack::start().await;
        let adapter = adapter(&fake).delayed_events(delayed).build().unwrap();
        let bot = Bot::builder()
            .state(MemoryState::new())
            .adapter(adapter)
            .options(
                RuntimeOptions::default()
                    .dispatch(DispatchOptions::deferred(Duration::from_secs(3600)))
                    .retention(RetentionOptions::default().dedupe_ttl(over)),
            )
            .on_new_mention(|ctx: Ctx, _e: Event| async move {
                ctx.thread().post("hi").await?;
                Ok::<_, BoxError>(())
            })
            .build()
            .unwrap();
        mention(&bot, "EvSame", "1700000001.000001").await;
        tokio::time::advance(wait).await;
        mention(&bot, "EvSame", "1700000001.000001").await;
        fake.posts().len()
    }
    let minute = Duration::from_secs(60);
    let hour = 60 * minute;
    assert_eq!(posts_after(false, None, 3 * hour - minute).await, 1);
    assert_eq!(posts_after(false, None, 3 * hour + minute).await, 2);
    assert_eq!(posts_after(true, None, 24 * hour).await, 1);
    assert_eq!(posts_after(true, None, 25 * hour + minute).await, 2);
    assert_eq!(
        posts_after(false, Some(hour), hour + minute).await,
        2,
        "the option overrides"
    );
    assert_eq!(chat_slack::DEDUPE_TTL, 3 * hour);
}
