//! The rest of a Slack bot author's world, end to end against chat-testkit's
//! fake Slack: the event kinds that used to be parsed and dropped (assistant
//! threads, App Home, joins, shortcuts, options loads, deletes), posting
//! outside a handler (threads, channels, DMs, idempotency keys, scheduled
//! messages), and history read in either order, by id and as a transcript.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use chat_core::card::Card;
use chat_core::{
    AdapterError, EventKind, FileUpload, HistoryOrder, KvStore, Platform, SetMode, StateBackend,
    ThreadRef,
};
use chat_runtime::{Bot, BoxError, Ctx, DispatchOptions, Event, Private, Role, RuntimeOptions};
use chat_slack::events::{
    AppHomeOpened, AssistantThread, MemberJoined, Options, OptionsRequest, Shortcut,
};
use chat_slack::{Prompt, SlackAdapter, routes};
use chat_state_memory::MemoryState;
use chat_testkit::FakeSlack;
use chat_testkit::signed::SlackDeliveries;
use common::{BOT_ID, BOT_USER, SECRET, TEAM};
use serde_json::{Value, json};

const CHANNEL: &str = "C0REACH";

fn adapter(fake: &FakeSlack) -> SlackAdapter {
    SlackAdapter::builder()
        .signing_secret(SECRET)
        .bot_token("xoxb-reach")
        .bot_user_id(BOT_USER)
        .bot_id(BOT_ID)
        .api_base_url(fake.base_url())
        .build()
        .unwrap()
}

fn slack() -> SlackDeliveries {
    SlackDeliveries::new(SECRET)
        .team(TEAM)
        .bot_user(BOT_USER)
        .channel(CHANNEL)
        .user("U0HUMAN")
}

fn deferred() -> RuntimeOptions {
    RuntimeOptions::default().dispatch(DispatchOptions::deferred(Duration::from_secs(60)))
}

type Seen = Arc<Mutex<Vec<Event>>>;

/// A handler that keeps every event it runs.
fn keep(
    seen: &Seen,
) -> impl Fn(Ctx, Event) -> std::future::Ready<Result<(), BoxError>> + Clone + use<> {
    let seen = Arc::clone(seen);
    move |_ctx, e| {
        seen.lock().unwrap().push(e);
        std::future::ready(Ok(()))
    }
}

#[tokio::test]
async fn every_parsed_kind_reaches_a_handler_of_its_own_type() {
    let fake = FakeSlack::start().await;
    let seen = Seen::default();
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake))
        .options(deferred())
        .on(routes::assistant_thread_started(), keep(&seen))
        .on(routes::assistant_thread_context_changed(), keep(&seen))
        .on(routes::app_home_opened(), keep(&seen))
        .on(routes::member_joined_channel(), keep(&seen))
        .on(routes::shortcut_with("new-ticket"), keep(&seen))
        .on(routes::message_action_with("summarize"), keep(&seen))
        .on(chat_core::Route::message_deleted(), keep(&seen))
        .build()
        .unwrap();
    let s = slack();
    for request in [
        s.assistant_thread_started("Ev1", "1700000001.000100"),
        s.assistant_thread_context_changed("Ev2", "1700000001.000100"),
        s.app_home_opened("Ev3"),
        s.member_joined_channel("Ev4"),
        s.shortcut("new-ticket"),
        s.message_shortcut("summarize", "1700000002.000100", "please sum up"),
        s.message_deleted("Ev7", "1700000003.000100", None, "oops"),
        // A shortcut no route names is ignored.
        s.shortcut("other"),
    ] {
        assert_eq!(bot.handle("slack", request).await.status(), 200);
    }
    assert!(bot.idle(Duration::from_secs(10)).await);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 7, "{seen:#?}");
    let find = |pred: &dyn Fn(&Event) -> bool| seen.iter().find(|e| pred(e)).unwrap().clone();

    let started = find(&|e| AssistantThread::of(e).is_some_and(|a| a.started));
    let a = AssistantThread::of(&started).unwrap();
    assert_eq!(
        (
            a.user_id.as_str(),
            a.channel_id.as_str(),
            a.thread_ts.as_str()
        ),
        ("U0HUMAN", "DU0HUMAN", "1700000001.000100")
    );
    assert_eq!(a.context.channel_id.as_deref(), Some(CHANNEL));
    assert_eq!(
        started.thread,
        ThreadRef::new(Platform::SLACK, TEAM, "DU0HUMAN", "1700000001.000100")
    );
    assert!(
        AssistantThread::of(&find(
            &|e| AssistantThread::of(e).is_some_and(|a| !a.started)
        ))
        .is_some()
    );

    let home = AppHomeOpened::of(&find(&|e| AppHomeOpened::of(e).is_some())).unwrap();
    assert_eq!(
        (home.user_id.as_str(), home.tab.as_str()),
        ("U0HUMAN", "home")
    );
    let joined = MemberJoined::of(&find(&|e| MemberJoined::of(e).is_some())).unwrap();
    assert_eq!(
        (joined.user_id.as_str(), joined.channel_id.as_str()),
        ("U0HUMAN", CHANNEL)
    );
    assert_eq!(joined.inviter.as_deref(), Some(BOT_USER));

    let global = Shortcut::of(&find(&|e| {
        Shortcut::of(e).is_some_and(|s| s.message.is_none())
    }))
    .unwrap();
    assert_eq!(global.callback_id, "new-ticket");
    assert!(global.trigger.is_some());
    let on_message = Shortcut::of(&find(&|e| {
        Shortcut::of(e).is_some_and(|s| s.message.is_some())
    }))
    .unwrap();
    let m = on_message.message.unwrap();
    assert_eq!(
        (m.channel_id.as_str(), m.ts.as_str(), m.text.as_str()),
        (CHANNEL, "1700000002.000100", "please sum up")
    );

    let deleted = find(
        &|e| matches!(&e.kind, EventKind::Message(m) if m.change == chat_core::MessageChange::Deleted),
    );
    assert_eq!(deleted.message().unwrap().id, "1700000003.000100");
}

#[tokio::test(start_paused = true)]
async fn an_options_load_is_answered_inline_even_under_deferred_dispatch() {
    let fake = FakeSlack::start().await;
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter(&fake))
        .options(deferred())
        .on(
            routes::options_load(Some("assignee")),
            |ctx: Ctx, e: Event| async move {
                let asked = OptionsRequest::of(&e).ok_or("an options request")?;
                let options = ["ada", "alan", "grace"]
                    .into_iter()
                    .filter(|n| n.starts_with(&asked.value))
                    .fold(Options::new(), |o, n| o.option(n, format!("U-{n}")));
                ctx.reply(options);
                Ok::<_, BoxError>(())
            },
        )
        .on(
            routes::options_load(Some("slow")),
            |_ctx: Ctx, _e: Event| async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<_, BoxError>(())
            },
        )
        .build()
        .unwrap();
    let answer = bot
        .handle(
            "slack",
            slack().block_suggestion("assignee", "a", "1700000009.000100"),
        )
        .await;
    assert_eq!(answer.status(), 200);
    let body: Value = serde_json::from_slice(answer.body()).unwrap();
    let values: Vec<&str> = body["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["U-ada", "U-alan"]);
    // The same text typed again asks again.
    let again = bot
        .handle(
            "slack",
            slack().block_suggestion("assignee", "a", "1700000009.000100"),
        )
        .await;
    let again: Value = serde_json::from_slice(again.body()).unwrap();
    assert_eq!(again["options"].as_array().map(Vec::len), Some(2));
    // Past the ack deadline: no options, a 200 (Slack never retries it).
    let late = bot
        .handle(
            "slack",
            slack().block_suggestion("slow", "x", "1700000009.000100"),
        )
        .await;
    assert_eq!(late.status(), 200);
    assert_eq!(
        serde_json::from_slice::<Value>(late.body()).unwrap(),
        json!({ "options": [] })
    );
}

#[tokio::test]
async fn app_home_and_the_assistant_panel_go_through_the_adapter() {
    let fake = FakeSlack::start().await;
    let slack_adapter = adapter(&fake);
    let tenant = chat_core::TenantId::new(TEAM);
    slack_adapter
        .publish_home(
            &tenant,
            "U0HUMAN",
            &Card::new().header("Home").section("Answered 3"),
        )
        .await
        .unwrap();
    let published = fake.calls_of("views.publish");
    assert_eq!(published[0].body["user_id"], "U0HUMAN");
    assert_eq!(published[0].body["view"]["type"], "home");
    assert!(published[0].ok);

    let thread = ThreadRef::new(Platform::SLACK, TEAM, "DU0HUMAN", "1700000001.000100");
    let prompts = [
        Prompt::new("Echo", "echo: hello"),
        Prompt::new("Card", "card: Hi"),
    ];
    slack_adapter
        .set_suggested_prompts(&thread, Some("Try"), &prompts)
        .await
        .unwrap();
    slack_adapter.set_title(&thread, "Echoing").await.unwrap();
    let set = fake.calls_of("assistant.threads.setSuggestedPrompts");
    assert_eq!(set[0].body["channel_id"], "DU0HUMAN");
    assert_eq!(set[0].body["thread_ts"], "1700000001.000100");
    assert_eq!(
        set[0].body["prompts"][1],
        json!({ "title": "Card", "message": "card: Hi" })
    );
    assert_eq!(
        fake.calls_of("assistant.threads.setTitle")[0].body["title"],
        "Echoing"
    );
    // Slack's limit, checked before any call.
    let five = vec![Prompt::new("a", "b"); 5];
    assert!(matches!(
        slack_adapter
            .set_suggested_prompts(&thread, None, &five)
            .await,
        Err(AdapterError::Invalid(_))
    ));
    assert_eq!(
        fake.calls_of("assistant.threads.setSuggestedPrompts").len(),
        1
    );
}

fn outside(fake: &FakeSlack, state: Arc<dyn StateBackend>) -> Bot {
    Bot::builder()
        .state_arc(state)
        .adapter(adapter(fake))
        .on_new_mention(|_ctx: Ctx, _e: Event| async { Ok::<_, BoxError>(()) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_job_posts_once_per_key_on_any_replica() {
    let fake = FakeSlack::start().await;
    let state: Arc<dyn StateBackend> = Arc::new(MemoryState::new());
    // Two replicas of one bot, sharing the state backend.
    let (one, two) = (
        outside(&fake, Arc::clone(&state)),
        outside(&fake, Arc::clone(&state)),
    );
    let channel = ThreadRef::new(Platform::SLACK, TEAM, CHANNEL, "");
    let a = one.thread(&channel).unwrap();
    let b = two.thread(&channel).unwrap();
    let (first, second) = tokio::join!(
        a.post_once("nightly-42", "The nightly build passed."),
        b.post_once("nightly-42", "The nightly build passed."),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first.id(), second.id());
    assert_eq!(fake.posts().len(), 1);
    // A retry later, on either: the same message, nothing posted.
    let retried = b
        .post_once("nightly-42", "The nightly build passed.")
        .await
        .unwrap();
    assert_eq!(retried.id(), first.id());
    assert_eq!(fake.posts().len(), 1);
    // Another key posts.
    a.post_once("nightly-43", "Again.").await.unwrap();
    assert_eq!(fake.posts().len(), 2);
    // The handle serializes as its thread, and comes back on any replica.
    let stored = serde_json::to_string(&a).unwrap();
    let back: ThreadRef = serde_json::from_str(&stored).unwrap();
    assert_eq!(back, channel);
    two.thread(&back).unwrap().post("later").await.unwrap();
    assert_eq!(fake.posts().len(), 3);
}

#[tokio::test]
async fn a_post_whose_poster_died_is_found_not_posted_again() {
    let fake = FakeSlack::start().await;
    let state: Arc<dyn StateBackend> = Arc::new(MemoryState::new());
    let bot = outside(&fake, Arc::clone(&state));
    let channel = bot.channel(Platform::SLACK, TEAM, CHANNEL).unwrap();
    let first = channel.post_once("deploy-7", "Deployed.").await.unwrap();
    assert_eq!(fake.posts().len(), 1);
    // The poster died after posting, before it recorded the post: its claim
    // is all that is left, lapsed.
    let key = format!("post-once:slack:{TEAM}:{CHANNEL}::deploy-7");
    let lapsed = json!({ "state": "claimed", "attempt": 1, "until_ms": 0 });
    let kv: &dyn KvStore = state.as_ref();
    kv.set(
        &key,
        serde_json::to_vec(&lapsed).unwrap().into(),
        None,
        SetMode::Always,
    )
    .await
    .unwrap();
    let again = channel.post_once("deploy-7", "Deployed.").await.unwrap();
    assert_eq!(fake.posts().len(), 1, "found by its key, not posted again");
    assert_eq!(again.id(), first.id());
    // It looked, as a second attempt, for the post by its key.
    assert!(!fake.calls_of("conversations.history").is_empty());
    // A live claim of someone else's makes a caller wait for its result.
    let live = json!({ "state": "claimed", "attempt": 1, "until_ms": u64::MAX });
    kv.set(
        "post-once:slack:T:C::busy",
        serde_json::to_vec(&live).unwrap().into(),
        None,
        SetMode::Always,
    )
    .await
    .unwrap();
    let busy = bot.channel(Platform::SLACK, "T", "C").unwrap();
    let waited =
        tokio::time::timeout(Duration::from_millis(300), busy.post_once("busy", "x")).await;
    assert!(waited.is_err(), "it waits for the live claim");
    assert_eq!(fake.posts().len(), 1);
}

#[tokio::test]
async fn dms_schedules_and_private_answers() {
    let fake = FakeSlack::start().await;
    let bot = outside(&fake, Arc::new(MemoryState::new()));
    let dm = bot.open_dm(Platform::SLACK, TEAM, "U0HUMAN").await.unwrap();
    assert_eq!(dm.id().channel, "DU0HUMAN");
    dm.post("just you").await.unwrap();
    assert_eq!(fake.posts()[0].body["channel"], "DU0HUMAN");

    let channel = bot.channel(Platform::SLACK, TEAM, CHANNEL).unwrap();
    let at = SystemTime::now() + Duration::from_secs(90);
    let scheduled = channel
        .schedule(at, "in a minute and a half")
        .await
        .unwrap();
    let queued = fake.scheduled();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0]["text"], "in a minute and a half");
    assert_eq!(queued[0]["post_at"].as_u64(), Some(scheduled.post_at));
    channel.cancel_scheduled(&scheduled).await.unwrap();
    assert!(fake.scheduled().is_empty());
    let past = channel
        .schedule(SystemTime::now() - Duration::from_secs(60), "too late")
        .await;
    assert!(matches!(past, Err(AdapterError::Api { code }) if code == "time_in_past"));

    // Slack has ephemeral messages: no DM needed.
    let private = channel
        .post_ephemeral_or_dm("U0HUMAN", "psst")
        .await
        .unwrap();
    assert!(matches!(private, Private::Ephemeral));
    assert_eq!(fake.calls_of("chat.postEphemeral").len(), 1);
    assert_eq!(channel.mention("U0HUMAN").await, "<@U0HUMAN>");
}

#[tokio::test]
async fn history_both_ways_by_id_and_as_a_transcript() {
    let fake = FakeSlack::start().await;
    let root = "1700000000.000100";
    let message = |ts: &str, user: &str, text: &str| json!({ "user": user, "text": text, "ts": ts, "thread_ts": root });
    fake.add_message(
        CHANNEL,
        json!({ "user": "U0HUMAN", "text": "<@ULEARNED> start", "ts": root }),
    );
    fake.add_message(
        CHANNEL,
        message("1700000000.000200", BOT_USER, "echo: start"),
    );
    fake.add_message(
        CHANNEL,
        message(
            "1700000000.000300",
            "U0HUMAN",
            "and <https://x.example|this>",
        ),
    );
    let bot = outside(&fake, Arc::new(MemoryState::new()));
    let thread = bot
        .thread(&ThreadRef::new(Platform::SLACK, TEAM, CHANNEL, root))
        .unwrap();
    let oldest: Vec<String> = thread
        .history(10)
        .await
        .unwrap()
        .iter()
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(oldest, [root, "1700000000.000200", "1700000000.000300"]);
    let newest = thread.history_newest(2).await.unwrap();
    assert_eq!(newest[0].id, "1700000000.000300");
    assert_eq!(newest[0].text, "and this");
    assert_eq!(newest[0].links[0].url, "https://x.example");
    assert_eq!(newest.len(), 2);
    let one = thread.message("1700000000.000200").await.unwrap().unwrap();
    assert!(one.is_from_bot());
    assert!(thread.message("1700000000.000999").await.unwrap().is_none());
    let turns = thread.transcript(10).await.unwrap();
    let roles: Vec<Role> = turns.iter().map(|t| t.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    assert_eq!(turns[1].text, "echo: start");
    // The channel itself: newest first, natively; oldest first, turned around.
    let top = thread.channel_history(10).await.unwrap();
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].id, root);
    let turned = thread
        .in_channel()
        .history_in(HistoryOrder::OldestFirst, 10)
        .await
        .unwrap();
    assert_eq!(turned.len(), 1);
}

#[tokio::test]
async fn several_files_go_out_as_one_message_and_users_have_faces() {
    let fake = FakeSlack::start().await;
    fake.add_user(json!({
        "id": "U0HUMAN", "name": "ada", "real_name": "Ada Lovelace", "is_bot": false,
        "profile": { "display_name": "Ada", "image_192": "https://avatars.example/ada.png" },
    }));
    let bot = outside(&fake, Arc::new(MemoryState::new()));
    let thread = bot
        .thread(&ThreadRef::new(
            Platform::SLACK,
            TEAM,
            CHANNEL,
            "1700000000.000100",
        ))
        .unwrap();
    let ids = thread
        .upload_files(
            vec![
                FileUpload::new("a.txt", "alpha"),
                FileUpload::new("b.txt", "beta"),
            ],
            Some("two files"),
        )
        .await
        .unwrap();
    assert_eq!(ids.len(), 2);
    let completed = fake.calls_of("files.completeUploadExternal");
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0].body["files"].as_array().map(Vec::len), Some(2));
    let user = thread.user("U0HUMAN").await.unwrap();
    assert_eq!(user.handle.as_deref(), Some("ada"));
    assert_eq!(
        user.avatar_url.as_deref(),
        Some("https://avatars.example/ada.png")
    );
    assert_eq!(user.mention(), "<@U0HUMAN>");
}

#[tokio::test]
async fn mentions_are_resolved_to_names_where_the_user_is_known() {
    let fake = FakeSlack::start().await;
    fake.add_user(json!({
        "id": "U0HUMAN", "name": "ada", "profile": { "display_name": "Ada" },
    }));
    let bot = outside(&fake, Arc::new(MemoryState::new()));
    let thread = bot
        .thread(&ThreadRef::new(
            Platform::SLACK,
            TEAM,
            CHANNEL,
            "1700000000.000100",
        ))
        .unwrap();
    let message = chat_core::Message::new(
        "1700000000.000200",
        chat_core::Author::new("U0OTHER"),
        "@U0HUMAN meet @U0GONE, not @U0HUMANS",
    )
    .with_markdown("**@U0HUMAN** meet @U0GONE")
    .with_mentions(vec![
        chat_core::Mention::new("U0HUMAN"),
        chat_core::Mention::new("U0GONE"),
    ]);
    let named = thread.resolve_mentions(&message).await;
    assert_eq!(named.text, "@Ada meet @U0GONE, not @U0HUMANS");
    assert_eq!(named.markdown, "**@Ada** meet @U0GONE");
    assert_eq!(named.mentions[0].name.as_deref(), Some("Ada"));
    assert_eq!(named.mentions[1].name, None);
    // Looked up once; the second time comes from the cache.
    thread.resolve_mentions(&message).await;
    assert_eq!(
        fake.calls_of("users.info")
            .iter()
            .filter(|c| c.body["user"] == "U0HUMAN")
            .count(),
        1
    );
}
