//! echo-bot's `/webhooks/github` as a built binary against the fake GitHub
//! API: a comment that mentions it is echoed in a comment, a redelivery
//! runs once, a follow-up in a thread it answered is echoed too, a wrong
//! signature is refused, its own comments are ignored.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use chat_testkit::FakeGitHub;
use common::{PATIENCE, echo_bot, stop};
use examples::drive;

/// The comments on octo/hello#42 once `count` were created.
async fn comments(fake: &FakeGitHub, count: usize) -> Vec<String> {
    fake.wait_for_calls("create_comment", count, PATIENCE).await;
    fake.comments("octo/hello", 42)
}

#[tokio::test]
async fn a_mention_is_echoed_once_however_often_it_is_redelivered() {
    let fake = FakeGitHub::start(drive::GITHUB_LOGIN).await;
    let bot = echo_bot("github-echo")
        .github(&fake.api_url())
        .spawn()
        .await
        .unwrap();
    let secret = drive::GITHUB_WEBHOOK_SECRET;

    let forged = drive::github_comment("d-forged", 1, "ada", "@echo-bot forged", "not-the-secret");
    assert_eq!(bot.deliver(&forged).await.unwrap().status, 401);

    for _ in 0..3 {
        let answer = bot
            .deliver(&drive::github_comment(
                "d-1",
                100,
                "ada",
                "@echo-bot hello",
                secret,
            ))
            .await
            .unwrap();
        assert_eq!(answer.status, 200);
    }
    bot.wait_for_outcomes("handler-ran", 1, PATIENCE)
        .await
        .unwrap();
    bot.wait_for_outcomes("message-duplicate", 2, PATIENCE)
        .await
        .unwrap();
    let posted = comments(&fake, 1).await;
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert!(posted[0].starts_with("echo: hello"), "{posted:?}");
    assert_eq!(
        fake.calls_of("create_comment")[0].token,
        drive::GITHUB_TOKEN
    );

    // The thread is subscribed: a follow-up without a mention is echoed.
    bot.deliver(&drive::github_comment(
        "d-2",
        101,
        "ada",
        "and again",
        secret,
    ))
    .await
    .unwrap();
    let posted = comments(&fake, 2).await;
    assert!(
        posted.iter().any(|c| c.starts_with("echo: and again")),
        "{posted:?}"
    );

    // Its own comment is ignored, never echoed.
    bot.deliver(&drive::github_comment(
        "d-3",
        102,
        drive::GITHUB_LOGIN,
        "echo: hello",
        secret,
    ))
    .await
    .unwrap();
    bot.wait_for_outcomes("message-ignored", 1, PATIENCE)
        .await
        .unwrap();
    assert_eq!(fake.calls_of("create_comment").len(), 2);
    stop(bot).await;
}

/// Queue, the default: two comments that arrive while the agent works on
/// the issue wait, and one answer goes to the latest with both in it.
#[tokio::test]
async fn follow_ups_during_a_run_are_answered_once_under_queue() {
    let fake = FakeGitHub::start(drive::GITHUB_LOGIN).await;
    let bot = echo_bot("github-queue")
        .github(&fake.api_url())
        .env("CHAT_CONCURRENCY", "queue")
        .env("ECHO_DELAY_MS", "800")
        .spawn()
        .await
        .unwrap();
    let secret = drive::GITHUB_WEBHOOK_SECRET;
    bot.deliver(&drive::github_comment(
        "q-1",
        200,
        "ada",
        "@echo-bot first",
        secret,
    ))
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    bot.deliver(&drive::github_comment("q-2", 201, "ada", "second", secret))
        .await
        .unwrap();
    bot.deliver(&drive::github_comment("q-3", 202, "bo", "third", secret))
        .await
        .unwrap();
    bot.wait_for_outcomes("handler-ran", 2, PATIENCE)
        .await
        .unwrap();
    bot.wait_for_outcomes("message-superseded", 1, PATIENCE)
        .await
        .unwrap();
    let posted = comments(&fake, 2).await;
    assert_eq!(posted.len(), 2, "{posted:?}");
    assert!(posted[0].starts_with("echo: first"), "{posted:?}");
    assert!(posted[1].starts_with("echo: second | third"), "{posted:?}");
    stop(bot).await;
}
