//! The load generator against a real Slack bot on loopback: its deliveries
//! verify and parse, every one ends in exactly one outcome, retries are
//! duplicates, and the report adds up.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Json;
use axum::routing::get;
use chat_bench::fake_slack::FakeSlack;
use chat_bench::{Cli, Command, execute};
use chat_runtime::{Bot, BoxError, Ctx, Event, OutcomeRecord, RuntimeOptions};
use chat_slack::SlackAdapter;
use chat_state_memory::MemoryState;
use clap::Parser;

type Counts = Arc<Mutex<(BTreeMap<String, u64>, u64)>>;

async fn no_op(_ctx: Ctx, _event: Event) -> Result<(), BoxError> {
    Ok(())
}

fn ok<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A Slack bot with a `GET /stats` like echo-bot's; returns its address.
async fn bot() -> SocketAddr {
    let fake = ok(
        FakeSlack::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await,
        "fake Slack",
    );
    let api = format!("http://{}/api", ok(fake.local_addr(), "fake Slack address"));
    tokio::spawn(fake.serve_for(Duration::from_secs(60)));
    let counts: Counts = Arc::default();
    let observed = Arc::clone(&counts);
    let slack = ok(
        SlackAdapter::builder()
            .signing_secret("bench-signing-secret")
            .bot_token("xoxb-bench")
            .bot_user_id("U0BENCHBOT")
            .api_base_url(api)
            .build(),
        "adapter",
    );
    let bot = ok(
        Bot::builder()
            .state(MemoryState::new())
            .adapter(slack)
            .options(RuntimeOptions::default())
            .observer(move |r: &OutcomeRecord| {
                let mut c = observed.lock().unwrap_or_else(PoisonError::into_inner);
                *c.0.entry(r.outcome.name().to_owned()).or_default() += 1;
                if r.ran_for.is_some() {
                    c.1 += 1;
                }
            })
            .on_new_mention(no_op)
            .on_subscribed_message(no_op)
            .build(),
        "bot",
    );
    let stats_bot = bot.clone();
    let app = axum::Router::new()
        .route_service("/webhooks/slack", bot.webhook("slack"))
        .route(
            "/stats",
            get(move || {
                let (outcomes, runs) = counts
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let in_flight = stats_bot.in_flight();
                async move {
                    Json(serde_json::json!({
                        "outcomes": outcomes, "handler_runs": runs, "in_flight": in_flight
                    }))
                }
            }),
        );
    let listener = ok(tokio::net::TcpListener::bind("127.0.0.1:0").await, "bind");
    let addr = ok(listener.local_addr(), "address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// `loadgen run` with `args` against the bot at `addr`; its report.
async fn loadgen_run(addr: SocketAddr, args: &[&str]) -> chat_bench::Report {
    let url = format!("http://{addr}/webhooks/slack");
    let cli = Cli::parse_from(["loadgen", "run", "--url", &url].iter().chain(args));
    let Command::Run(args) = cli.command else {
        panic!("run");
    };
    ok(execute(args).await, "loadgen run")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_delivery_is_verified_parsed_and_accounted_for() {
    let pid = std::process::id().to_string();
    let report = loadgen_run(
        bot().await,
        &[
            "--rate",
            "1000",
            "--duration",
            "0.6",
            "--threads",
            "8",
            "--retry-share",
            "0.1",
            "--connections",
            "8",
            "--pid",
            &pid,
        ],
    )
    .await;
    let m = &report.measured;
    assert_eq!(m.sent, 600);
    assert_eq!(m.statuses.get(&200), Some(&600), "{:?}", m.statuses);
    assert_eq!(m.not_sent + m.errors + m.timeouts, 0);
    let (bot, settled) = report.bot.clone().unwrap();
    assert!(settled);
    assert_eq!(bot.total(), 600, "{:?}", bot.outcomes);
    let duplicates = bot.outcomes.get("message-duplicate").copied().unwrap_or(0);
    assert!((20..=100).contains(&duplicates), "{duplicates} duplicates");
    assert_eq!(duplicates, m.retries, "every retry is a duplicate");
    assert!(bot.handler_runs > 0);
    assert!(
        !bot.outcomes.contains_key("message-ignored"),
        "{:?}",
        bot.outcomes
    );
    let json = report.json();
    assert_eq!(json["acked_without_outcome"], 0);
    assert!(json["rss_max_mib"].as_f64().unwrap() > 0.0);
    assert!(report.human().contains("ack latency"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_loop_keeps_to_its_schedule_instead_of_sending_as_fast_as_it_can() {
    let addr = bot().await;
    let started = std::time::Instant::now();
    let report = loadgen_run(
        addr,
        &[
            "--rate",
            "200",
            "--duration",
            "0.5",
            "--connections",
            "16",
            "--no-stats",
        ],
    )
    .await;
    let m = &report.measured;
    assert_eq!(m.sent, 100);
    assert_eq!(m.statuses.get(&200), Some(&100), "{:?}", m.statuses);
    // The last of 100 slots at 200/s falls due 495 ms after the start, and a
    // slot's timer never fires more than half a millisecond early: sixteen idle
    // connections that sent as fast as they could would be done in a few ms.
    assert!(
        started.elapsed() >= Duration::from_millis(494),
        "done after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_url_off_loopback_is_refused_before_anything_is_sent() {
    let cli = Cli::parse_from([
        "loadgen",
        "run",
        "--url",
        "http://10.0.0.1:3000/x",
        "--no-stats",
    ]);
    let Command::Run(args) = cli.command else {
        panic!("run");
    };
    assert!(execute(args).await.is_err());
}
