//! The scripted conversation of `cargo xtask demo`, under every strategy, and
//! the demo binary as the xtask runs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use examples::config::ConcurrencyArg;
use examples::demo::{self, DemoState, Options};

/// The demo with a slower handler and a longer window than by default, so
/// that the overlaps it shows still overlap on a loaded CI machine.
async fn conversation(strategy: ConcurrencyArg) {
    conversation_on(strategy, DemoState::Memory).await;
}

/// The demo's conversation on `state`; what it printed.
async fn conversation_on(strategy: ConcurrencyArg, state: DemoState) -> String {
    let options = Options {
        strategy,
        state,
        delay: Duration::from_millis(800),
        window: Duration::from_millis(600),
        patience: Duration::from_secs(30),
        ..Options::new(env!("CARGO_BIN_EXE_echo-bot"))
    };
    let mut out = Vec::new();
    let report = demo::run(&options, &mut out).await;
    let shown = String::from_utf8_lossy(&out);
    let report = report.unwrap_or_else(|e| panic!("{e}\n{shown}"));
    assert!(report.succeeded(), "{:?}\n{shown}", report.failures);
    assert!(shown.contains("demo ok"), "{shown}");
    // Step 7, two workspaces side by side, ran and held under this strategy too.
    for step in [
        "7. Two workspaces",
        "ok    Acme (T1) is answered \"echo: hello from Acme\" in its thread with its own token",
        "ok    Globex (T2) is answered \"echo: hello from Globex\" in its thread with its own token",
        "is acknowledged and ignored: unknown-installation",
        "9. GitHub",
        "ok    one answer to the mention, then one to the latest comment with the other in it",
    ] {
        assert!(shown.contains(step), "no {step:?} in:\n{shown}");
    }
    shown.into_owned()
}

#[tokio::test]
async fn the_demo_conversation_succeeds_under_queue() {
    conversation(ConcurrencyArg::Queue).await;
}

#[tokio::test]
async fn the_demo_conversation_succeeds_under_drop() {
    conversation(ConcurrencyArg::Drop).await;
}

#[tokio::test]
async fn the_demo_conversation_succeeds_under_debounce() {
    conversation(ConcurrencyArg::Debounce).await;
}

#[tokio::test]
async fn the_demo_conversation_succeeds_under_burst() {
    conversation(ConcurrencyArg::Burst).await;
}

#[tokio::test]
async fn the_demo_conversation_succeeds_under_burst_each() {
    conversation(ConcurrencyArg::BurstEach).await;
}

#[tokio::test]
async fn the_demo_conversation_succeeds_under_concurrent() {
    conversation(ConcurrencyArg::Concurrent).await;
}

/// The whole conversation with echo-bot's state in PostgreSQL
/// (`DATABASE_URL`, which `cargo xtask ci` sets; skipped without it,
/// failed under `CI=true`).
#[tokio::test]
async fn the_demo_conversation_succeeds_on_postgres() {
    let Some(url) = chat_test_postgres::database_url() else {
        return;
    };
    let shown = conversation_on(ConcurrencyArg::Queue, DemoState::Postgres(url)).await;
    assert!(shown.contains("state PostgreSQL"), "{shown}");
}

/// The binary finds echo-bot next to itself, prints the timeline, and exits 0.
#[test]
fn the_demo_binary_exits_0_and_prints_the_timeline() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(["--delay-ms", "800"])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for shown in [
        "state in memory",
        "strategy queue",
        "app_mention",
        "message-duplicate",
        "\"echo: two | three | four\"",
        "/echo",
        "thought (ephemeral)",
        "GET /stats",
        "7. Two workspaces",
        "GET /slack/oauth/callback (state, cookie) -> 200",
        "\"echo: hello from Acme\" [xoxb-T1-echo-bot]",
        "\"echo: hello from Globex\" [xoxb-T2-echo-bot]",
        "message-ignored      T3    unknown-installation",
        "Bearer xoxb-T1-echo-bot",
        "gh out     create_comment",
        "demo ok",
    ] {
        assert!(stdout.contains(shown), "no {shown:?} in:\n{stdout}");
    }
}

#[test]
fn the_demo_binary_refuses_an_unknown_strategy() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(["--strategy", "fastest"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("burst-each"), "{stderr}");
}
