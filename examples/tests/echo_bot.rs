//! The built echo-bot binary, driven over HTTP as Slack and Linear drive it:
//! signed webhooks in, calls to a `FakeSlack` at `SLACK_API_URL` and a
//! `FakeLinear` at `LINEAR_API_URL` out, `GET /stats`, and SIGTERM. Each test
//! starts its own echo-bot on a free port with in-memory state.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use chat_testkit::{FakeLinear, FakeSlack, FakeSlackOAuth, SlackWorkspace};
use examples::drive::{self, Delivery, EchoBot, EchoBotCommand, linear, oauth, slack};
use examples::ledger;
use serde_json::{Value, json};

/// How long any one wait may take: generous, for a loaded CI machine.
const PATIENCE: Duration = Duration::from_secs(20);
/// The thread's root message.
const ROOT_TS: &str = "1700000000.000100";
/// A reply in that thread.
const REPLY_TS: &str = "1700000050.000200";
const SESSION: &str = "d3f1a2b4-6c8e-4f0a-9b1c-2e3d4f5a6b7c";

/// echo-bot with its log in this test's own file, and `env` set.
fn echo_bot(test: &str) -> EchoBotCommand {
    EchoBotCommand::new(env!("CARGO_BIN_EXE_echo-bot")).log_to(scratch(test, "log"))
}

fn scratch(test: &str, ext: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("echo-bot-{test}.{ext}"))
}

/// Stops echo-bot with SIGTERM and checks it exits 0.
async fn stop(mut bot: EchoBot) {
    let stopped = bot.terminate(PATIENCE).await.unwrap();
    assert!(
        stopped.status.success(),
        "exited with {}{}",
        stopped.status,
        bot.log_tail(20)
    );
}

/// Waits until `GET /stats` shows exactly `expected` outcome counts and no
/// work in flight; returns the stats.
async fn wait_for_stats(bot: &EchoBot, expected: &Value) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let stats = bot.stats().await.unwrap();
        if &stats["outcomes"] == expected && stats["in_flight"] == 0 {
            return stats;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "stats never became {expected}: {stats}{}",
            bot.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_signed_app_mention_gets_200_and_exactly_one_post_in_its_thread() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("app-mention")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();

    let body = slack::app_mention(
        "Ev01",
        REPLY_TS,
        Some(ROOT_TS),
        &slack::mentioning("is the deploy done?"),
    );
    let answer = bot.deliver(&Delivery::slack_event(&body)).await.unwrap();
    assert_eq!(answer.status, 200);
    assert!(answer.body.is_empty(), "an event is acknowledged empty");

    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    // The handler has returned: whatever it was going to post, it has.
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    let posts = fake.calls_of("chat.postMessage");
    assert_eq!(posts.len(), 1, "exactly one post: {posts:?}");
    let post = &posts[0];
    assert!(post.ok);
    assert_eq!(post.body["channel"], slack::CHANNEL);
    assert_eq!(post.body["thread_ts"], ROOT_TS);
    assert_eq!(post.body["text"], "echo: is the deploy done?");
    assert_eq!(
        post.authorization.as_deref(),
        Some(format!("Bearer {}", drive::SLACK_BOT_TOKEN).as_str())
    );
    stop(bot).await;
}

/// echo-bot answers every slash command, whatever its name: `echo: <text>`,
/// ephemeral, in the HTTP response.
#[tokio::test]
async fn every_slash_command_is_echoed_ephemerally() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("slash")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    for (command, trigger) in [("/echo", "1.1.a"), ("/deploy", "1.1.b"), ("/ask", "1.1.c")] {
        let form = slack::slash_command(command, "status please", trigger);
        let answer = bot.deliver(&Delivery::slack_command(&form)).await.unwrap();
        assert_eq!(answer.status, 200, "{command}");
        let json: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"response_type": "ephemeral", "text": "echo: status please"}),
            "{command}"
        );
    }
    stop(bot).await;
}

#[tokio::test]
async fn a_url_verification_gets_its_challenge() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("url-verification")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
    let body = slack::url_verification(challenge);
    let answer = bot.deliver(&Delivery::slack_event(&body)).await.unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, challenge);

    // Only when signed with the app's secret.
    let forged = Delivery::slack_signed(
        "not-the-signing-secret",
        drive::now_secs(),
        "application/json",
        body.to_string().into_bytes(),
    );
    let answer = bot.deliver(&forged).await.unwrap();
    assert_eq!(answer.status, 401);
    assert!(!answer.body.contains(challenge));
    assert!(fake.calls().is_empty());
    stop(bot).await;
}

#[tokio::test]
async fn a_linear_agent_session_gets_a_thought_then_a_response_activity() {
    let fake = FakeLinear::start().await;
    // A slow handler: the adapter's first thought goes out before the answer.
    let bot = echo_bot("linear-session")
        .linear(fake.endpoint())
        .env("ECHO_DELAY_MS", "500")
        .spawn()
        .await
        .unwrap();
    let comment = "@echo-bot why is the checkout test flaky?";
    let body = linear::session_created(SESSION, comment);
    let delivery = "4f1c2d3e-0000-4000-8000-000000000001";
    let answer = bot
        .deliver(&Delivery::linear(&body, delivery))
        .await
        .unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);

    let sent = fake
        .wait_for_calls("AgentActivityCreate", 2, PATIENCE)
        .await;
    assert_eq!(sent.len(), 2, "{sent:?}{}", bot.log_tail(20));
    assert_eq!(sent[0].activity_type(), Some("thought"));
    assert_eq!(sent[0].input()["ephemeral"], true);
    assert_eq!(sent[1].activity_type(), Some("response"));
    assert_eq!(
        sent[1].activity_body(),
        Some(format!("echo: {comment}").as_str())
    );
    assert!(sent[0].at < sent[1].at);
    for activity in &sent {
        assert!(activity.ok);
        assert_eq!(activity.input()["agentSessionId"], SESSION);
        assert_eq!(
            activity.authorization.as_deref(),
            Some(format!("Bearer {}", drive::LINEAR_ACCESS_TOKEN).as_str())
        );
    }
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    assert_eq!(fake.calls().len(), 2, "nothing else: {:?}", fake.calls());

    // Linear's retry of the same delivery runs nothing more.
    let answer = bot
        .deliver(&Delivery::linear(&body, delivery))
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    wait_for_stats(&bot, &json!({"handler-ran": 1, "message-duplicate": 1})).await;
    assert_eq!(fake.calls().len(), 2);
    stop(bot).await;
}

#[tokio::test]
async fn stats_count_every_outcome() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("stats")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let before = bot.stats().await.unwrap();
    assert_eq!(
        before,
        json!({"outcomes": {}, "handler_runs": 0, "in_flight": 0})
    );

    let text = slack::mentioning("count me");
    let mention = slack::app_mention("Ev01", REPLY_TS, Some(ROOT_TS), &text);
    let twin = slack::message("Ev02", REPLY_TS, Some(ROOT_TS), &text);
    for delivery in [
        Delivery::slack_event(&mention),
        Delivery::slack_retry(&mention, 1, "http_timeout"),
        Delivery::slack_event(&twin),
    ] {
        assert_eq!(bot.deliver(&delivery).await.unwrap().status, 200);
    }
    let stats = wait_for_stats(&bot, &json!({"handler-ran": 1, "message-duplicate": 2})).await;
    assert_eq!(stats["handler_runs"], 1);
    assert_eq!(fake.posts().len(), 1);
    stop(bot).await;
}

#[tokio::test]
async fn an_adapter_without_its_secret_answers_404() {
    let slack_api = FakeSlack::start().await;
    let linear_api = FakeLinear::start().await;
    let session = linear::session_created(SESSION, "@echo-bot hello");
    let mention = slack::app_mention("Ev01", ROOT_TS, None, &slack::mentioning("hello"));

    // Slack only: the Linear route is not mounted.
    let slack_only = echo_bot("slack-only")
        .slack(slack_api.base_url())
        .spawn()
        .await
        .unwrap();
    let answer = slack_only
        .deliver(&Delivery::linear(&session, "d-1"))
        .await
        .unwrap();
    assert_eq!(answer.status, 404);
    assert_eq!(slack_only.get("/healthz").await.unwrap().status, 200);

    // Linear only: the Slack route is not mounted.
    let linear_only = echo_bot("linear-only")
        .linear(linear_api.endpoint())
        .spawn()
        .await
        .unwrap();
    let answer = linear_only
        .deliver(&Delivery::slack_event(&mention))
        .await
        .unwrap();
    assert_eq!(answer.status, 404);

    // Each mounted route still answers.
    let answer = slack_only
        .deliver(&Delivery::slack_event(&mention))
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    let answer = linear_only
        .deliver(&Delivery::linear(&session, "d-2"))
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    slack_only
        .wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    linear_only
        .wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    assert_eq!(slack_api.posts().len(), 1);
    assert!(!linear_api.activities().is_empty());
    stop(slack_only).await;
    stop(linear_only).await;
}

#[tokio::test]
async fn sigterm_during_a_slow_handler_exits_cleanly_within_the_deadline() {
    let fake = FakeSlack::start().await;
    let deadline = Duration::from_millis(500);
    let margin = Duration::from_secs(2);
    let ledger_path = scratch("sigterm", "jsonl");
    let _ = std::fs::remove_file(&ledger_path);
    let mut bot = echo_bot("sigterm")
        .slack(fake.base_url())
        .env("ECHO_DELAY_MS", "60000")
        .env("SHUTDOWN_DEADLINE_MS", deadline.as_millis().to_string())
        .env("ECHO_LEDGER", ledger_path.display().to_string())
        .spawn()
        .await
        .unwrap();
    let body = slack::app_mention("Ev01", ROOT_TS, None, &slack::mentioning("take your time"));
    assert_eq!(
        bot.deliver(&Delivery::slack_event(&body))
            .await
            .unwrap()
            .status,
        200
    );
    // The handler is running (deferred: it was admitted before the 200).
    assert_eq!(bot.stats().await.unwrap()["in_flight"], 1);

    let stopped = bot.terminate(deadline + margin).await.unwrap();
    assert!(
        stopped.status.success(),
        "exited with {}{}",
        stopped.status,
        bot.log_tail(20)
    );
    assert!(
        stopped.after < deadline + margin,
        "took {:?}",
        stopped.after
    );
    assert!(
        fake.posts().is_empty(),
        "the cancelled handler posted nothing"
    );
    let lines = ledger::read(&ledger_path);
    let outcomes: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l.event_id.as_str(), l.outcome.as_str()))
        .collect();
    assert_eq!(outcomes, [("Ev01", "message-cancelled")]);
}

/// Under burst, follow-ups typed in the thread inside the window — plain
/// messages in a thread nobody subscribed yet — join the mention's batch: one
/// reply with all four.
#[tokio::test]
async fn follow_ups_inside_a_burst_window_are_answered_in_the_one_reply() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("burst-follow-ups")
        .slack(fake.base_url())
        .env("CHAT_CONCURRENCY", "burst")
        .env("CHAT_BURST_WINDOW_MS", "1000")
        .spawn()
        .await
        .unwrap();
    let mention = slack::app_mention("Ev01", ROOT_TS, None, &slack::mentioning("A"));
    assert_eq!(
        bot.deliver(&Delivery::slack_event(&mention))
            .await
            .unwrap()
            .status,
        200
    );
    for (id, ts, text) in [
        ("Ev02", "1700000000.000200", "B"),
        ("Ev03", "1700000000.000300", "C"),
        ("Ev04", "1700000000.000400", "D"),
    ] {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let follow_up = slack::message(id, ts, Some(ROOT_TS), text);
        let answer = bot
            .deliver(&Delivery::slack_event(&follow_up))
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    let posts = fake.calls_of("chat.postMessage");
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].body["text"], "echo: A | B | C | D");
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
    stop(bot).await;
}

#[tokio::test]
async fn a_burst_during_a_slow_handler_is_echoed_in_join_order_under_the_queue_strategy() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("queue-burst")
        .slack(fake.base_url())
        .env("CHAT_CONCURRENCY", "queue")
        .env("ECHO_DELAY_MS", "1000")
        .spawn()
        .await
        .unwrap();
    // A mention subscribes the thread.
    let start = slack::app_mention("Ev01", ROOT_TS, None, &slack::mentioning("start"));
    assert_eq!(
        bot.deliver(&Delivery::slack_event(&start))
            .await
            .unwrap()
            .status,
        200
    );
    assert_eq!(
        fake.wait_for_calls("chat.postMessage", 1, PATIENCE)
            .await
            .len(),
        1
    );
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();

    // A message in the thread starts a slow turn; three more arrive during it.
    let messages = [
        ("Ev02", "1700000001.000100", "one"),
        ("Ev03", "1700000002.000100", "a"),
        ("Ev04", "1700000003.000100", "b"),
        ("Ev05", "1700000004.000100", "c"),
    ];
    for (id, ts, text) in messages {
        let body = slack::message(id, ts, Some(ROOT_TS), text);
        let answer = bot.deliver(&Delivery::slack_event(&body)).await.unwrap();
        assert_eq!(answer.status, 200);
    }
    assert_eq!(
        fake.calls_of("chat.postMessage").len(),
        1,
        "the slow turn was still running when the burst arrived"
    );

    let posts = fake.wait_for_calls("chat.postMessage", 3, PATIENCE).await;
    let texts: Vec<&str> = posts
        .iter()
        .map(|p| p.body["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["echo: start", "echo: one", "echo: a | b | c"]);
    assert!(posts.iter().all(|p| p.body["thread_ts"] == ROOT_TS));
    wait_for_stats(&bot, &json!({"handler-ran": 3, "message-superseded": 2})).await;
    assert_eq!(fake.posts().len(), 3);
    // One hand-over: the three that waited behind "one" started when it
    // ended, without waiting for anything else (a second's handler delay).
    let text = bot.get("/metrics").await.unwrap().body;
    let slack = "platform=\"slack\"";
    assert_eq!(
        series(&text, "chat_handoff_duration_seconds_count", &[slack]),
        Some(1.0),
        "{text}"
    );
    let took = series(&text, "chat_handoff_duration_seconds_sum", &[slack]).unwrap();
    assert!(took < 0.5, "the hand-over took {took} s");
    stop(bot).await;
}

#[tokio::test]
async fn installation_mode_answers_each_installed_workspace_with_its_own_token() {
    let api = FakeSlack::start().await;
    let accounts = FakeSlackOAuth::start().await;
    for team in ["T1", "T2"] {
        accounts.add_workspace(SlackWorkspace::new(team, &slack::workspace_token(team)));
    }
    let ledger_path = scratch("installations", "jsonl");
    let _ = std::fs::remove_file(&ledger_path);
    let bot = echo_bot("installations")
        .slack_installations(api.base_url(), &accounts)
        // Not used in installation mode.
        .env("SLACK_BOT_TOKEN", drive::SLACK_BOT_TOKEN)
        .env("ECHO_LEDGER", ledger_path.display().to_string())
        .spawn()
        .await
        .unwrap();

    for team in ["T1", "T2"] {
        let install = oauth::install_slack(&bot, &accounts, team).await.unwrap();
        assert_eq!(install.install.status, 302);
        assert!(
            install.authorize_url.starts_with(&accounts.authorize_url()),
            "{}",
            install.authorize_url
        );
        assert!(install.cookie.is_some(), "the state is bound by a cookie");
        assert!(
            install
                .callback_url
                .starts_with(&bot.url("/slack/oauth/callback?"))
        );
        assert_eq!(
            install.callback.status,
            200,
            "{}{}",
            install.callback.body,
            bot.log_tail(20)
        );
    }
    let exchanged: Vec<Option<String>> = accounts
        .token_requests()
        .into_iter()
        .map(|r| r.tenant)
        .collect();
    assert_eq!(exchanged, [Some("T1".to_owned()), Some("T2".to_owned())]);

    // A callback replayed without the browser's cookie is refused.
    let again = oauth::install_slack(&bot, &accounts, "T1").await.unwrap();
    let replay = bot.get_url(&again.callback_url, &[]).await.unwrap();
    assert_eq!(replay.status, 400, "{}", replay.body);

    // The same channel and thread in each workspace, and a third, uninstalled one.
    for (team, id) in [("T1", "EvT1"), ("T2", "EvT2"), ("T3", "EvT3")] {
        let body = slack::app_mention_in(team, id, ROOT_TS, &format!("hello from {team}"));
        let answer = bot.deliver(&Delivery::slack_event(&body)).await.unwrap();
        assert_eq!(answer.status, 200, "{team}: {}", answer.body);
    }
    let posts = api.wait_for_calls("chat.postMessage", 2, PATIENCE).await;
    assert_eq!(posts.len(), 2, "{posts:?}{}", bot.log_tail(20));
    wait_for_stats(&bot, &json!({"handler-ran": 2, "message-ignored": 1})).await;
    for team in ["T1", "T2"] {
        let text = format!("echo: hello from {team}");
        let post = api
            .posts()
            .into_iter()
            .find(|p| p.body["text"] == text.as_str())
            .unwrap_or_else(|| panic!("no {text:?} in {:?}", api.calls()));
        assert_eq!(post.body["channel"], slack::CHANNEL);
        assert_eq!(post.body["thread_ts"], ROOT_TS);
        assert_eq!(
            post.authorization.as_deref(),
            Some(format!("Bearer {}", slack::workspace_token(team)).as_str())
        );
    }
    assert!(
        api.calls().iter().all(|c| c.authorization.as_deref()
            != Some(format!("Bearer {}", drive::SLACK_BOT_TOKEN).as_str())),
        "SLACK_BOT_TOKEN is never used: {:?}",
        api.calls()
    );
    let ignored: Vec<(String, String)> = ledger::read(&ledger_path)
        .into_iter()
        .filter(|l| l.outcome == "message-ignored")
        .map(|l| (l.event_id, l.reason))
        .collect();
    assert_eq!(
        ignored,
        [("EvT3".to_owned(), "unknown-installation".to_owned())]
    );
    stop(bot).await;
}

#[tokio::test]
async fn installation_mode_refuses_to_start_without_its_keys_or_state_secret() {
    let api = FakeSlack::start().await;
    let accounts = FakeSlackOAuth::start().await;
    let err = echo_bot("installations-no-keys")
        .slack_installations(api.base_url(), &accounts)
        .env_remove("INSTALLATION_KEYS")
        .ready_within(PATIENCE)
        .spawn()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("INSTALLATION_KEYS"), "{err}");

    let err = echo_bot("installations-no-state-secret")
        .slack_installations(api.base_url(), &accounts)
        .env_remove("SLACK_STATE_SECRET")
        .spawn()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("SLACK_STATE_SECRET"), "{err}");
}

/// `--help` shows where each setting comes from, never a secret's value — a
/// Redis URL carries its password.
#[test]
fn help_never_prints_a_secret_from_the_environment() {
    let secret_env = [
        ("REDIS_URL", "redis://:redis-s3cret@redis.internal:6379"),
        ("DATABASE_URL", "postgres://bot:pg-s3cret@db.internal/bot"),
        ("GITHUB_WEBHOOK_SECRET", "github-s3cret"),
        ("GITHUB_TOKEN", "github_pat_s3cret"),
        (
            "GITHUB_PRIVATE_KEY",
            "-----BEGIN RSA PRIVATE KEY-----s3cret",
        ),
        (
            "REDIS_CLUSTER_URLS",
            "redis://:cluster-s3cret@a:7000,redis://:cluster-s3cret@b:7000",
        ),
        ("SLACK_SIGNING_SECRET", "signing-s3cret"),
        ("SLACK_BOT_TOKEN", "xoxb-token-s3cret"),
        ("SLACK_CLIENT_SECRET", "client-s3cret"),
        ("SLACK_STATE_SECRET", "state-s3cret"),
        ("INSTALLATION_KEYS", "k1:keys-s3cret"),
        ("LINEAR_WEBHOOK_SECRET", "linear-s3cret"),
        ("LINEAR_API_KEY", "lin-api-s3cret"),
        ("LINEAR_ACCESS_TOKEN", "lin-token-s3cret"),
        ("INSPECT_TOKEN", "inspect-token-s3cret"),
        ("NOTIFY_TOKEN", "notify-token-s3cret"),
        ("TELEGRAM_BOT_TOKEN", "123:telegram-s3cret"),
        ("TELEGRAM_SECRET_TOKEN", "telegram-secret-s3cret"),
        ("WHATSAPP_APP_SECRET", "app-s3cret"),
        ("WHATSAPP_VERIFY_TOKEN", "verify-s3cret"),
        ("WHATSAPP_ACCESS_TOKEN", "EAAG-s3cret"),
    ];
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_echo-bot"))
        .arg("--help")
        .envs(secret_env)
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("REDIS_URL"), "{help}");
    assert!(!help.contains("s3cret"), "{help}");
}

/// Slow clients on the open internet: connections that never finish their
/// headers, and one that sends half a body and stalls, do not keep a real
/// signed delivery from being answered inside Slack's deadline, and are cut
/// off at their deadlines.
#[tokio::test]
async fn slow_clients_are_cut_off_and_real_deliveries_still_answered() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let fake = FakeSlack::start().await;
    let bot = echo_bot("slow-clients")
        .slack(fake.base_url())
        .env("SERVER_HEADER_TIMEOUT_MS", "300")
        .env("CHAT_BODY_TIMEOUT_MS", "300")
        .spawn()
        .await
        .unwrap();
    let addr = bot.addr();
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /webhooks/slack HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        slow.push(s);
    }
    let mut half = tokio::net::TcpStream::connect(addr).await.unwrap();
    half.write_all(b"POST /webhooks/slack HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"type\":")
        .await
        .unwrap();

    let started = std::time::Instant::now();
    let mention = slack::app_mention("EvSlow1", ROOT_TS, None, &slack::mentioning("hi"));
    let answer = bot.deliver(&Delivery::slack_event(&mention)).await.unwrap();
    assert_eq!(answer.status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let mut half_answer = String::new();
    tokio::time::timeout(PATIENCE, half.read_to_string(&mut half_answer))
        .await
        .expect("the stalled body was never answered")
        .unwrap();
    assert!(half_answer.starts_with("HTTP/1.1 408"), "{half_answer}");
    for mut s in slow {
        let mut rest = Vec::new();
        tokio::time::timeout(PATIENCE, s.read_to_end(&mut rest))
            .await
            .expect("a slow-header connection stayed open")
            .unwrap_or_default();
    }
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1);
    stop(bot).await;
}

/// A fresh echo-bot on `fake` (with `env`), sent a mention of `text` in the
/// thread `ROOT_TS`, acknowledged.
async fn mentioned(test: &str, fake: &FakeSlack, env: &[(&str, &str)], text: &str) -> EchoBot {
    let mut command = echo_bot(test).slack(fake.base_url());
    for (key, value) in env {
        command = command.env(key, *value);
    }
    let bot = command.spawn().await.unwrap();
    let event_id = format!("Ev{test}");
    let body = slack::app_mention(&event_id, REPLY_TS, Some(ROOT_TS), &slack::mentioning(text));
    let answer = bot.deliver(&Delivery::slack_event(&body)).await.unwrap();
    assert_eq!(answer.status, 200);
    bot
}

/// `card: <title>`: a card with the title, the author's display name from
/// `users.info`, and an `echo-again` button; its click posts `again: <title>`
/// in the same thread.
#[tokio::test]
async fn a_card_command_posts_a_card_whose_button_echoes_again() {
    let fake = FakeSlack::start().await;
    fake.add_user(json!({
        "id": slack::USER, "name": "ana", "is_bot": false,
        "profile": { "display_name": "Ana", "real_name": "Ana Lima" }
    }));
    let bot = mentioned("card", &fake, &[], "card: Hello").await;
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    let blocks = &posts[0].body["blocks"];
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
    assert_eq!(blocks[0]["type"], "header");
    assert_eq!(blocks[0]["text"]["text"], "Hello");
    assert_eq!(blocks[1]["text"]["text"], "Ana");
    assert_eq!(blocks[2]["elements"][0]["action_id"], "echo-again");
    assert_eq!(blocks[2]["elements"][0]["value"], "Hello");
    let card_ts = fake.posts()[0].body["ts"].as_str().map(str::to_owned);
    let card_ts = card_ts.unwrap_or_else(|| "1700000100.000100".to_owned());

    let click = slack::deliveries().block_actions("echo-again", "Hello", &card_ts, Some(ROOT_TS));
    assert_eq!(
        bot.deliver(&Delivery::from(click)).await.unwrap().status,
        200
    );
    let posts = fake.wait_for_calls("chat.postMessage", 2, PATIENCE).await;
    assert_eq!(posts.len(), 2, "{}", bot.log_tail(20));
    assert_eq!(posts[1].body["text"], "again: Hello");
    assert_eq!(posts[1].body["thread_ts"], ROOT_TS);
    stop(bot).await;
}

/// `stream: <words…>`: the words streamed one by one into `echo: <words…>`.
#[tokio::test]
async fn a_stream_command_streams_the_words_into_the_echo() {
    let fake = FakeSlack::start().await;
    let bot = mentioned(
        "stream",
        &fake,
        &[("ECHO_STREAM_DELAY_MS", "20")],
        "stream: one two three",
    )
    .await;
    fake.wait_for_calls("chat.stopStream", 1, PATIENCE).await;
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    let starts = fake.calls_of("chat.startStream");
    assert_eq!(starts.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(starts[0].body["markdown_text"], "echo:");
    let appended: Vec<Value> = fake
        .calls_of("chat.appendStream")
        .iter()
        .map(|c| c.body["markdown_text"].clone())
        .collect();
    assert_eq!(appended, [json!(" one"), json!(" two"), json!(" three")]);
    let thread = fake.thread(slack::CHANNEL, ROOT_TS);
    assert_eq!(thread.last().unwrap()["text"], "echo: one two three");
    stop(bot).await;
}

/// `history:`: `history: N`, the number of messages before it in the thread.
#[tokio::test]
async fn a_history_command_counts_the_earlier_messages() {
    let fake = FakeSlack::start().await;
    let human = |ts: &str, text: &str| json!({ "user": slack::USER, "text": text, "ts": ts, "thread_ts": ROOT_TS });
    fake.add_message(
        slack::CHANNEL,
        json!({ "user": slack::USER, "text": "root", "ts": ROOT_TS }),
    );
    fake.add_message(slack::CHANNEL, human("1700000010.000100", "one"));
    fake.add_message(slack::CHANNEL, human("1700000020.000100", "two"));
    fake.add_message(slack::CHANNEL, human(REPLY_TS, "history:"));
    let bot = mentioned("history", &fake, &[], "history:").await;
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(posts[0].body["text"], "history: 3");
    stop(bot).await;
}

/// `file: <text>`: `echo.txt` holding the text, uploaded into the thread.
#[tokio::test]
async fn a_file_command_uploads_echo_txt_into_the_thread() {
    let fake = FakeSlack::start().await;
    let bot = mentioned("file", &fake, &[], "file: hello there").await;
    let done = fake
        .wait_for_calls("files.completeUploadExternal", 1, PATIENCE)
        .await;
    assert_eq!(done.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(done[0].body["channel_id"], slack::CHANNEL);
    assert_eq!(done[0].body["thread_ts"], ROOT_TS);
    let id = done[0].body["files"][0]["id"].as_str().unwrap();
    let (name, bytes) = fake.file(id).expect("the file was uploaded and shared");
    assert_eq!(name, "echo.txt");
    assert_eq!(&bytes[..], b"hello there");
    stop(bot).await;
}

/// `/echo-form` opens a modal with one text input; its submission posts
/// `form: <value>` in the channel the command came from, and an empty one
/// keeps the modal open with a field error.
#[tokio::test]
async fn the_echo_form_opens_a_modal_whose_submission_is_posted_to_the_channel() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("form")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let form = slack::slash_command("/echo-form", "", "13345224609.1.form");
    let answer = bot.deliver(&Delivery::slack_command(&form)).await.unwrap();
    assert_eq!(answer.status, 200);
    let opened = fake.wait_for_calls("views.open", 1, PATIENCE).await;
    assert_eq!(opened.len(), 1, "{}", bot.log_tail(20));
    let view = &opened[0].body["view"];
    assert_eq!(opened[0].body["trigger_id"], "13345224609.1.form");
    assert_eq!(view["callback_id"], "echo-form");
    assert_eq!(view["private_metadata"], slack::CHANNEL);
    let inputs = view["blocks"].as_array().unwrap();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0]["element"]["type"], "plain_text_input");
    let (block, action) = (
        inputs[0]["block_id"].as_str().unwrap(),
        inputs[0]["element"]["action_id"].as_str().unwrap(),
    );
    let submit = |value: &str| {
        let mut values = json!({});
        values[block][action] = json!({ "type": "plain_text_input", "value": value });
        Delivery::from(slack::deliveries().view_submission_with_metadata(
            "echo-form",
            "V0FORM",
            &values,
            slack::CHANNEL,
        ))
    };
    let empty = bot.deliver(&submit("  ")).await.unwrap();
    assert_eq!(empty.status, 200);
    let json: Value = serde_json::from_str(&empty.body).unwrap();
    assert_eq!(json["response_action"], "errors");
    assert!(json["errors"][block].is_string());

    let sent = bot.deliver(&submit("hello form")).await.unwrap();
    assert_eq!(sent.status, 200);
    assert!(sent.body.is_empty(), "an empty answer closes the modal");
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(posts[0].body["channel"], slack::CHANNEL);
    assert_eq!(posts[0].body["text"], "form: hello form");
    assert!(posts[0].body.get("thread_ts").is_none());
    stop(bot).await;
}

/// On Linear, `stream:` is ephemeral thoughts then one final response, and
/// `card:` a Markdown response.
#[tokio::test]
async fn on_linear_a_stream_is_thoughts_then_a_response_and_a_card_is_markdown() {
    let fake = FakeLinear::start().await;
    let bot = echo_bot("linear-rich")
        .linear(fake.endpoint())
        .env("ECHO_STREAM_DELAY_MS", "10")
        .spawn()
        .await
        .unwrap();
    let streamed = linear::session_created(SESSION, "@echo-bot stream: alpha beta");
    let delivery = "4f1c2d3e-0000-4000-8000-0000000000a1";
    assert_eq!(
        bot.deliver(&Delivery::linear(&streamed, delivery))
            .await
            .unwrap()
            .status,
        200
    );
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    let sent = fake.calls_of("AgentActivityCreate");
    let last = sent.last().unwrap();
    assert_eq!(last.activity_type(), Some("response"), "{sent:?}");
    assert_eq!(last.activity_body(), Some("echo: alpha beta"));
    let thoughts: Vec<&str> = sent[..sent.len() - 1]
        .iter()
        .filter(|a| a.input()["ephemeral"] == true)
        .filter_map(|a| a.activity_body())
        .collect();
    assert!(
        thoughts.ends_with(&["echo:", " alpha", " beta"]),
        "{thoughts:?}"
    );

    let session = "e7a1b2c3-0000-4000-8000-0000000000c4";
    let card = linear::session_created(session, "@echo-bot card: Deploy");
    let delivery = "4f1c2d3e-0000-4000-8000-0000000000a2";
    assert_eq!(
        bot.deliver(&Delivery::linear(&card, delivery))
            .await
            .unwrap()
            .status,
        200
    );
    bot.wait_for_outcomes("handler-ran", 2, PATIENCE)
        .await
        .unwrap();
    let responses: Vec<String> = fake
        .calls_of("AgentActivityCreate")
        .iter()
        .filter(|a| a.input()["agentSessionId"] == session && a.activity_type() == Some("response"))
        .filter_map(|a| a.activity_body().map(str::to_owned))
        .collect();
    assert_eq!(responses.len(), 1, "{}", bot.log_tail(20));
    assert!(
        responses[0].starts_with("### Deploy\n\n"),
        "{}",
        responses[0]
    );
    assert!(
        responses[0].contains("_Not shown on Linear: Again_"),
        "{}",
        responses[0]
    );
    stop(bot).await;
}

/// The value of the Prometheus series `name` whose labels include every one
/// of `labels` (`key="value"`), from `GET /metrics` text; `None` if absent.
fn series(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            let (metric, rest) = key.split_once('{').unwrap_or((key, ""));
            (metric == name && labels.iter().all(|l| rest.contains(l)))
                .then(|| value.parse().ok())
                .flatten()
        })
}

/// A scripted conversation, then a scrape: one delivery accepted (its slow
/// handler holds the only detached place), a mention in another thread
/// refused at capacity meanwhile, then the first's platform retry a duplicate. `/metrics` counts each
/// verdict and outcome once, the ack histogram saw every delivery, the
/// handler histogram the one run, and the gauges are back at rest.
#[tokio::test]
async fn metrics_after_a_scripted_conversation_match_its_outcomes() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("metrics")
        .slack(fake.base_url())
        .env("CHAT_DISPATCH", "deferred")
        .env("CHAT_MAX_DETACHED", "1")
        .env("ECHO_DELAY_MS", "1500")
        .spawn()
        .await
        .unwrap();
    let first = slack::app_mention("Ev01", REPLY_TS, Some(ROOT_TS), &slack::mentioning("one"));
    let other = slack::app_mention(
        "Ev02",
        "1700000060.000300",
        Some("1700000060.000300"),
        &slack::mentioning("two"),
    );
    let answers = [
        bot.deliver(&Delivery::slack_event(&first))
            .await
            .unwrap()
            .status,
        bot.deliver(&Delivery::slack_event(&other))
            .await
            .unwrap()
            .status,
    ];
    assert_eq!(answers, [200, 503], "{}", bot.log_tail(20));
    wait_for_stats(&bot, &json!({"handler-ran": 1, "message-rejected": 1})).await;
    // Once the place is free again, the platform's retry of the first.
    let retry = bot
        .deliver(&Delivery::slack_retry(&first, 1, "http_timeout"))
        .await
        .unwrap();
    assert_eq!(retry.status, 200);
    wait_for_stats(
        &bot,
        &json!({"handler-ran": 1, "message-duplicate": 1, "message-rejected": 1}),
    )
    .await;

    let scrape = bot.get("/metrics").await.unwrap();
    assert_eq!(scrape.status, 200);
    assert_eq!(
        scrape.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = scrape.body;
    let slack = "platform=\"slack\"";
    let get = |name: &str, labels: &[&str]| series(&text, name, labels);
    for (verdict, n) in [("accepted", 1.0), ("duplicate", 1.0), ("at-capacity", 1.0)] {
        let label = format!("verdict=\"{verdict}\"");
        assert_eq!(
            get("chat_deliveries_total", &[slack, &label]),
            Some(n),
            "{verdict}:\n{text}"
        );
    }
    assert_eq!(
        get("chat_ack_duration_seconds_count", &[slack]),
        Some(3.0),
        "{text}"
    );
    for (outcome, reason) in [
        ("handler-ran", ""),
        ("message-duplicate", ""),
        ("message-rejected", "reason=\"at-capacity\""),
    ] {
        let label = format!("outcome=\"{outcome}\"");
        assert_eq!(
            get("chat_outcomes_total", &[slack, &label, reason]),
            Some(1.0),
            "{outcome}:\n{text}"
        );
    }
    assert_eq!(
        get(
            "chat_handler_duration_seconds_count",
            &[slack, "outcome=\"handler-ran\""]
        ),
        Some(1.0)
    );
    // The run waited for nothing; it ran for the handler's 1.5 s delay.
    let ran_for = get(
        "chat_handler_duration_seconds_sum",
        &[slack, "outcome=\"handler-ran\""],
    )
    .unwrap();
    assert!((1.5..15.0).contains(&ran_for), "{ran_for}");
    assert_eq!(get("chat_wait_duration_seconds_count", &[slack]), Some(1.0));
    assert!(get("chat_state_call_duration_seconds_count", &["op=\"admit\""]).unwrap() >= 2.0);
    assert_eq!(get("chat_detached_runs_max", &[]), Some(1.0));
    assert_eq!(get("chat_detached_runs", &[]), Some(0.0));
    assert_eq!(get("chat_leases_held", &[]), Some(0.0));
    stop(bot).await;
}

/// A reaction added to a message is answered `reaction: <emoji>` in that
/// message's thread.
#[tokio::test]
async fn a_reaction_is_answered_in_its_messages_thread() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("reaction")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let reaction = slack::deliveries().reaction_added("EvReact", "tada", ROOT_TS);
    assert_eq!(
        bot.deliver(&Delivery::from(reaction)).await.unwrap().status,
        200
    );
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(posts[0].body["text"], "reaction: tada");
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
    assert_eq!(posts[0].body["channel"], slack::CHANNEL);
    stop(bot).await;
}

/// `ECHO_DELAY_MS` delays every kind of handler, not only conversation
/// turns: a slash command outlasts the acknowledgement deadline (answered
/// "working on it", its echo sent later to its `response_url`), and a
/// click's, a reaction's and a form submission's answers come no sooner than
/// the delay after their delivery.
#[tokio::test]
async fn echo_delay_ms_delays_every_kind_of_handler() {
    const DELAY: Duration = Duration::from_millis(1500);
    let fake = FakeSlack::start().await;
    let bot = echo_bot("delay-every-kind")
        .slack(fake.base_url())
        .env("ECHO_DELAY_MS", "1500")
        .env("CHAT_ACK_TIMEOUT_MS", "500")
        .spawn()
        .await
        .unwrap();
    let hooks = fake.response_url("commands/delay");
    let form = slack::deliveries().slash_command_form("/echo", "later", "1.1.delay", &hooks);
    let answer = bot.deliver(&Delivery::slack_command(&form)).await.unwrap();
    assert_eq!(answer.status, 200);
    assert!(
        answer.body.contains("the answer will follow"),
        "{}",
        answer.body
    );
    let later = fake.wait_for_calls("response_url", 1, PATIENCE).await;
    assert_eq!(later.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(later[0].body["text"], "echo: later");

    let mut values = json!({});
    values["form"]["value"] = json!({ "type": "plain_text_input", "value": "late form" });
    let deliveries: [(&str, Delivery); 3] = [
        (
            "again: title",
            Delivery::from(slack::deliveries().block_actions(
                "echo-again",
                "title",
                REPLY_TS,
                Some(ROOT_TS),
            )),
        ),
        (
            "reaction: eyes",
            Delivery::from(slack::deliveries().reaction_added("EvDelay", "eyes", ROOT_TS)),
        ),
        (
            "form: late form",
            Delivery::from(slack::deliveries().view_submission_with_metadata(
                "echo-form",
                "V0DELAY",
                &values,
                slack::CHANNEL,
            )),
        ),
    ];
    for (n, (text, delivery)) in deliveries.iter().enumerate() {
        let sent = tokio::time::Instant::now();
        assert_eq!(bot.deliver(delivery).await.unwrap().status, 200, "{text}");
        let posts = fake
            .wait_for_calls("chat.postMessage", n + 1, PATIENCE)
            .await;
        assert_eq!(posts.len(), n + 1, "{text}: {}", bot.log_tail(20));
        assert_eq!(posts[n].body["text"], *text);
        assert!(sent.elapsed() >= DELAY, "{text} answered before the delay");
    }
    // Slack's own surfaces too: App Home, the assistant panel, /echo-later.
    let surfaces: [(&str, Delivery); 3] = [
        (
            "views.publish",
            Delivery::from(slack::deliveries().app_home_opened("EvDelayHome")),
        ),
        (
            "assistant.threads.setSuggestedPrompts",
            Delivery::from(
                slack::deliveries().assistant_thread_started("EvDelayAsst", "1700000090.000100"),
            ),
        ),
        (
            "chat.scheduleMessage",
            Delivery::slack_command(&slack::slash_command("/echo-later", "60 later", "1.1.dl")),
        ),
    ];
    for (method, delivery) in &surfaces {
        let sent = tokio::time::Instant::now();
        assert_eq!(bot.deliver(delivery).await.unwrap().status, 200, "{method}");
        let calls = fake.wait_for_calls(method, 1, PATIENCE).await;
        assert_eq!(calls.len(), 1, "{method}: {}", bot.log_tail(20));
        assert!(sent.elapsed() >= DELAY, "{method} called before the delay");
    }
    stop(bot).await;
}

/// `attach:` with a file attached: the file downloaded from its private URL
/// with the bot token, answered `attach: <name> <size> <sha256>`.
#[tokio::test]
async fn an_attach_command_downloads_the_file_and_answers_its_digest() {
    let fake = FakeSlack::start().await;
    let bytes = b"a screenshot, or near enough".to_vec();
    let file = fake.add_file("F0SHOT", "shot.png", "image/png", bytes.clone());
    let bot = echo_bot("attach")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let mention = slack::deliveries().app_mention_with_files(
        "EvAttach",
        ROOT_TS,
        &slack::mentioning("attach:"),
        &[file],
    );
    assert_eq!(
        bot.deliver(&Delivery::from(mention)).await.unwrap().status,
        200
    );
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    let sha = ring::digest::digest(&ring::digest::SHA256, &bytes);
    assert_eq!(
        posts[0].body["text"],
        format!(
            "attach: shot.png {} {}",
            bytes.len(),
            hex::encode(sha.as_ref())
        )
    );
    let downloads = fake.calls_of("file");
    assert_eq!(downloads.len(), 1);
    assert!(
        downloads[0]
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Bearer xoxb-")),
        "downloaded with the bot token: {:?}",
        downloads[0].authorization
    );
    stop(bot).await;
}

/// An edit of a message that mentions the bot: `edited: <new text>` in its
/// thread; an edit of a message that does not is not answered.
#[tokio::test]
async fn an_edited_mention_is_answered_with_its_new_text() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("edited")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let deliveries = slack::deliveries();
    let unrelated = deliveries.message_changed("EvEdit0", "1700000001.000100", None, "hi", "hello");
    assert_eq!(
        bot.deliver(&Delivery::from(unrelated))
            .await
            .unwrap()
            .status,
        200
    );
    let edit = deliveries.message_changed(
        "EvEdit1",
        REPLY_TS,
        Some(ROOT_TS),
        &slack::mentioning("helo"),
        &slack::mentioning("hello, fixed"),
    );
    assert_eq!(
        bot.deliver(&Delivery::from(edit)).await.unwrap().status,
        200
    );
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(posts[0].body["text"], "edited: hello, fixed");
    assert_eq!(posts[0].body["thread_ts"], ROOT_TS);
    stop(bot).await;
}

/// In a Slack assistant thread: suggested prompts when it opens, and what
/// the user asks there (a direct message in the thread) echoed into it.
#[tokio::test]
async fn an_assistant_thread_gets_suggested_prompts_and_answers() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("assistant")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let deliveries = slack::deliveries();
    let thread_ts = "1700000070.000100";
    let opened = deliveries.assistant_thread_started("EvAsst1", thread_ts);
    assert_eq!(
        bot.deliver(&Delivery::from(opened)).await.unwrap().status,
        200
    );
    let prompts = fake
        .wait_for_calls("assistant.threads.setSuggestedPrompts", 1, PATIENCE)
        .await;
    assert_eq!(prompts.len(), 1, "{}", bot.log_tail(20));
    assert!(prompts[0].ok, "{:?}", prompts[0].body);
    assert_eq!(prompts[0].body["channel_id"], deliveries.dm_channel());
    assert_eq!(prompts[0].body["thread_ts"], thread_ts);
    let titles: Vec<&str> = prompts[0].body["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Echo", "Card", "Stream"]);

    let asked = deliveries.assistant_message("EvAsst2", "1700000071.000100", thread_ts, "hello");
    assert_eq!(
        bot.deliver(&Delivery::from(asked)).await.unwrap().status,
        200
    );
    let posts = fake.wait_for_calls("chat.postMessage", 1, PATIENCE).await;
    assert_eq!(posts.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(posts[0].body["text"], "echo: hello");
    assert_eq!(posts[0].body["channel"], deliveries.dm_channel());
    assert_eq!(posts[0].body["thread_ts"], thread_ts);
    stop(bot).await;
}

/// App Home: a Home view that counts the messages echo-bot answered.
#[tokio::test]
async fn app_home_shows_how_many_messages_were_answered() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("app-home")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let deliveries = slack::deliveries();
    let home = |id: &str| Delivery::from(deliveries.app_home_opened(id));
    let shown = |n: usize| {
        let fake = fake.clone();
        async move {
            let views = fake.wait_for_calls("views.publish", n, PATIENCE).await;
            assert_eq!(views.len(), n);
            let view = &views[n - 1].body;
            assert_eq!(view["user_id"], "U0ADA");
            assert_eq!(view["view"]["type"], "home");
            view["view"]["blocks"].to_string()
        }
    };
    assert_eq!(bot.deliver(&home("EvHome1")).await.unwrap().status, 200);
    assert!(shown(1).await.contains("Messages answered: 0"));
    for (i, ts) in ["1700000080.000100", "1700000081.000100"]
        .iter()
        .enumerate()
    {
        let body = slack::app_mention(&format!("EvHomeM{i}"), ts, None, &slack::mentioning("hi"));
        bot.deliver(&Delivery::slack_event(&body)).await.unwrap();
    }
    fake.wait_for_calls("chat.postMessage", 2, PATIENCE).await;
    bot.wait_for_outcomes("handler-ran", 3, PATIENCE)
        .await
        .unwrap();
    assert_eq!(bot.deliver(&home("EvHome2")).await.unwrap().status, 200);
    let blocks = shown(2).await;
    assert!(blocks.contains("Messages answered: 2"), "{blocks}");
    stop(bot).await;
}

/// `/echo-later <seconds> <text>`: scheduled with `chat.scheduleMessage` in
/// the command's channel, and said so; bad arguments get the usage.
#[tokio::test]
async fn echo_later_schedules_a_message() {
    let fake = FakeSlack::start().await;
    let bot = echo_bot("echo-later")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let before = drive::now_secs();
    let form = slack::slash_command("/echo-later", "30 stand-up time", "1.1.later");
    let answer = bot.deliver(&Delivery::slack_command(&form)).await.unwrap();
    assert_eq!(answer.status, 200);
    let json: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(json["text"], "scheduled: stand-up time in 30s");
    assert_eq!(json["response_type"], "ephemeral");
    let scheduled = fake.scheduled();
    assert_eq!(scheduled.len(), 1, "{}", bot.log_tail(20));
    assert_eq!(scheduled[0]["text"], "stand-up time");
    assert_eq!(scheduled[0]["channel"], slack::CHANNEL);
    let at = scheduled[0]["post_at"].as_u64().unwrap();
    assert!((before + 30..=drive::now_secs() + 30).contains(&at), "{at}");

    let bad = slack::slash_command("/echo-later", "soon please", "1.1.bad");
    let answer = bot.deliver(&Delivery::slack_command(&bad)).await.unwrap();
    let json: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(json["text"], "usage: /echo-later <seconds> <text>");
    assert_eq!(fake.scheduled().len(), 1);
    stop(bot).await;
}

/// `POST /notify`: behind NOTIFY_TOKEN, posts proactively, once per key.
#[tokio::test]
async fn notify_posts_proactively_once_per_key() {
    const TOKEN: &str = "notify-token-0123456789";
    let fake = FakeSlack::start().await;
    let bot = echo_bot("notify")
        .slack(fake.base_url())
        .env("NOTIFY_TOKEN", TOKEN)
        .spawn()
        .await
        .unwrap();
    let notify = |auth: Option<&str>, body: &Value, key: Option<&str>| {
        let mut d =
            Delivery::unsigned("/notify", "application/json", body.to_string().into_bytes());
        if let Some(auth) = auth {
            d = d.header("authorization", auth);
        }
        if let Some(key) = key {
            d = d.header("idempotency-key", key);
        }
        d
    };
    let body = json!({
        "platform": "slack", "tenant": "T0001", "channel": slack::CHANNEL,
        "text": "the nightly build passed", "key": "nightly-2026-12-06",
    });
    for auth in [None, Some("Bearer wrong-token-xxxxxxxxxx"), Some(TOKEN)] {
        let answer = bot.deliver(&notify(auth, &body, None)).await.unwrap();
        assert_eq!(answer.status, 401, "{auth:?}");
    }
    let bearer = format!("Bearer {TOKEN}");
    let first = bot
        .deliver(&notify(Some(&bearer), &body, None))
        .await
        .unwrap();
    assert_eq!(first.status, 200, "{}", first.body);
    let first: Value = serde_json::from_str(&first.body).unwrap();
    let again = bot
        .deliver(&notify(Some(&bearer), &body, None))
        .await
        .unwrap();
    let again: Value = serde_json::from_str(&again.body).unwrap();
    assert_eq!(first["id"], again["id"]);
    let posts = fake.calls_of("chat.postMessage");
    assert_eq!(posts.len(), 1, "one post per key: {posts:?}");
    assert_eq!(posts[0].body["channel"], slack::CHANNEL);
    assert_eq!(posts[0].body["text"], "the nightly build passed");
    assert!(posts[0].body.get("thread_ts").is_none());
    // The key in a header, and another key: another post.
    let mut headed = body.clone();
    headed.as_object_mut().unwrap().remove("key");
    for _ in 0..2 {
        let answer = bot
            .deliver(&notify(Some(&bearer), &headed, Some("deploy-7")))
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    assert_eq!(fake.calls_of("chat.postMessage").len(), 2);
    // Not a notification.
    let bad = bot
        .deliver(&notify(Some(&bearer), &json!({"platform": "slack"}), None))
        .await
        .unwrap();
    assert_eq!(bad.status, 400);
    stop(bot).await;

    // Without NOTIFY_TOKEN there is no /notify.
    let plain = echo_bot("notify-off")
        .slack(fake.base_url())
        .spawn()
        .await
        .unwrap();
    let answer = plain
        .deliver(&notify(Some(&bearer), &body, None))
        .await
        .unwrap();
    assert_eq!(answer.status, 404);
    stop(plain).await;
}
