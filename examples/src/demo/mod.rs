//! The scripted conversation behind `cargo xtask demo`.
//!
//! [`run`] starts a [`FakeSlack`], a [`FakeLinear`], a [`FakeTelegram`], a
//! [`FakeWhatsApp`] and a [`FakeGitHub`] in-process and the
//! echo-bot binary as a child process on a free port (deferred dispatch, the
//! chosen strategy, in-memory state or Redis, a small simulated delay, and its
//! outcome ledger in a temporary file). Then it plays signed webhooks:
//!
//! 1. a mention, which echo-bot echoes in a new thread it subscribes;
//! 2. Slack's retry of it (`X-Slack-Retry-Num: 1`, the same `event_id`);
//! 3. the `app_mention` and `message` twins of one post;
//! 4. a burst of follow-ups in the thread while the bot is busy;
//! 5. a slash command, answered ephemerally in the HTTP response;
//! 6. a Linear agent session, where the adapter's first thought lands before
//!    the slow handler's response;
//! 7. two workspaces side by side: a second echo-bot in installation mode
//!    (`--installations`, installations sealed in its state backend) is
//!    installed in two workspaces through its OAuth routes against a
//!    [`FakeSlackOAuth`](chat_testkit::FakeSlackOAuth); a mention from each, in the same channel and
//!    thread ids, is answered in its own workspace with its own token, and a
//!    mention from a third, uninstalled workspace is acknowledged and
//!    ignored;
//! 8. a third echo-bot on Telegram and WhatsApp (fakes of both APIs) under
//!    the debounce strategy, where a chat is one conversation (channel
//!    scope): "hey", "quick question" and the real question in one WhatsApp
//!    chat get one answer, and two users writing in one Telegram group join
//!    one conversation;
//! 9. a fourth echo-bot on GitHub under the queue strategy: a mention in an
//!    issue is answered in a comment, and two comments that arrive while it
//!    works wait, then get one answer with both in it.
//!
//! It prints a timeline of what arrived (with the status echo-bot answered),
//! what the runtime decided (outcome names, from the ledger) and what was
//! posted where (from the fakes), checks each step against what the strategy
//! promises, and always stops echo-bot with SIGTERM.

mod chats;
mod checks;
mod github;
mod records;
mod script;
mod timeline;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chat_runtime::BoxError;
use chat_testkit::{FakeGitHub, FakeLinear, FakeSlack, FakeTelegram, FakeWhatsApp};
use clap::ValueEnum;
use tokio::time::Instant;

use crate::config::ConcurrencyArg;
use crate::drive::{self, EchoBot, EchoBotCommand};

use records::Mark;
use timeline::Entry;

/// Where the demo's echo-bots keep their state.
#[derive(Debug, Clone, Default)]
pub enum DemoState {
    /// In memory (the default).
    #[default]
    Memory,
    /// Redis at this URL.
    Redis(String),
    /// PostgreSQL at this URL.
    Postgres(String),
}

impl DemoState {
    /// `command` with the settings that put echo-bot's state here, under a
    /// key prefix or namespace of this run's own (`label`, this process,
    /// now), and the state in words.
    pub fn configure(&self, command: EchoBotCommand, label: &str) -> (EchoBotCommand, String) {
        let own = format!("{label}-{}-{}", std::process::id(), drive::now_ms());
        match self {
            Self::Memory => (command, "in memory".to_owned()),
            Self::Redis(url) => (
                command
                    .env("REDIS_URL", url.clone())
                    .env("REDIS_PREFIX", own),
                "Redis".to_owned(),
            ),
            Self::Postgres(url) => (
                command
                    .env("DATABASE_URL", url.clone())
                    .env("DATABASE_NAMESPACE", own),
                "PostgreSQL".to_owned(),
            ),
        }
    }
}

/// How the demo runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The echo-bot binary.
    pub echo_bot: PathBuf,
    /// The concurrency strategy echo-bot runs with.
    pub strategy: ConcurrencyArg,
    /// Where echo-bot keeps its state.
    pub state: DemoState,
    /// echo-bot's simulated work per turn (`ECHO_DELAY_MS`): long enough for
    /// the follow-ups to overlap it.
    pub delay: Duration,
    /// The debounce interval and the burst window (`CHAT_DEBOUNCE_MS`,
    /// `CHAT_BURST_WINDOW_MS`): long enough for the follow-ups to fall in it.
    pub window: Duration,
    /// How long one step may take before it counts as failed.
    pub patience: Duration,
}

impl Options {
    /// The queue strategy on in-memory state with a 400 ms handler and a
    /// 300 ms debounce interval and burst window.
    pub fn new(echo_bot: impl Into<PathBuf>) -> Self {
        Self {
            echo_bot: echo_bot.into(),
            strategy: ConcurrencyArg::Queue,
            state: DemoState::Memory,
            delay: Duration::from_millis(400),
            window: Duration::from_millis(300),
            patience: Duration::from_secs(15),
        }
    }
}

/// How the demo went.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Checks that held.
    pub passed: usize,
    /// Checks that did not, each with what was seen instead.
    pub failures: Vec<String>,
}

impl Report {
    /// Whether every check held.
    pub fn succeeded(&self) -> bool {
        self.failures.is_empty() && self.passed > 0
    }
}

/// The name of a strategy, as `--strategy` and `CHAT_CONCURRENCY` spell it.
pub fn strategy_name(strategy: ConcurrencyArg) -> String {
    strategy
        .to_possible_value()
        .map_or_else(|| format!("{strategy:?}"), |v| v.get_name().to_owned())
}

/// The thread everything in Slack happens in: the mention's `ts`.
const THREAD: &str = "1700000000.000100";
/// echo-bot's shutdown deadline.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(2);

/// Runs the demo, writing the timeline to `out`. An `Err` is a failure to
/// run at all (echo-bot missing, no free port); a run whose checks fail is an
/// `Ok` report that did not [`succeed`](Report::succeeded).
pub async fn run(options: &Options, out: &mut dyn Write) -> Result<Report, BoxError> {
    let dir = scratch_dir()?;
    let result = run_in(options, &dir, out).await;
    match &result {
        Ok(report) if report.succeeded() => {
            let _ = std::fs::remove_dir_all(&dir);
        }
        _ => writeln!(out, "echo-bot's log and ledger are in {}", dir.display())?,
    }
    result
}

async fn run_in(options: &Options, dir: &Path, out: &mut dyn Write) -> Result<Report, BoxError> {
    let slack = FakeSlack::try_start().await?;
    // The person who talks to echo-bot, for its user lookups.
    slack.add_user(serde_json::json!({
        "id": crate::drive::slack::USER, "name": "ada", "is_bot": false,
        "profile": { "display_name": "Ada", "real_name": "Ada Lovelace" },
    }));
    let linear = FakeLinear::try_start().await?;
    let telegram = FakeTelegram::try_start().await?;
    let whatsapp = FakeWhatsApp::try_start().await?;
    let github = FakeGitHub::try_start(crate::drive::GITHUB_LOGIN).await?;
    let ledger = dir.join("ledger.jsonl");
    let strategy = strategy_name(options.strategy);
    let delay_ms = options.delay.as_millis();
    // A token for this run's inspector page, printed below.
    let inspect_token = chat_core::LeaseToken::generate().as_str().to_owned();
    let command = EchoBotCommand::new(&options.echo_bot)
        .slack(slack.base_url())
        .linear(linear.endpoint())
        .env("CHAT_DISPATCH", "deferred")
        .env("CHAT_CONCURRENCY", strategy.clone())
        .env("CHAT_DEBOUNCE_MS", options.window.as_millis().to_string())
        .env(
            "CHAT_BURST_WINDOW_MS",
            options.window.as_millis().to_string(),
        )
        .env("ECHO_DELAY_MS", delay_ms.to_string())
        .env("ECHO_LEDGER", ledger.display().to_string())
        .env("INSPECT_TOKEN", inspect_token.clone())
        .env(
            "SHUTDOWN_DEADLINE_MS",
            SHUTDOWN_DEADLINE.as_millis().to_string(),
        )
        .log_to(dir.join("echo-bot.log"));
    let (command, state) = options.state.configure(command, "chat-demo");
    let bot = command.spawn().await?;
    writeln!(
        out,
        "chat-rs demo: echo-bot (pid {}) on http://{}",
        bot.pid(),
        bot.addr()
    )?;
    writeln!(
        out,
        "  state {state}, deferred dispatch, strategy {strategy}, handler delay {delay_ms} ms"
    )?;
    writeln!(
        out,
        "  inspector            http://{}/inspect  (token {inspect_token})",
        bot.addr()
    )?;
    writeln!(out, "  metrics              http://{}/metrics", bot.addr())?;
    writeln!(out, "  fake Slack Web API   {}", slack.base_url())?;
    writeln!(out, "  fake Linear GraphQL  {}", linear.endpoint())?;

    let mut demo = Demo {
        out,
        bot,
        slack,
        linear,
        telegram,
        whatsapp,
        github,
        ledger,
        t0: Instant::now(),
        wall0_ms: drive::now_ms(),
        shown: Mark::default(),
        sent: Vec::new(),
        labels: HashMap::new(),
        delivered: HashMap::new(),
        report: Report::default(),
        patience: options.patience,
        strategy: options.strategy,
        show_tokens: false,
    };
    let played = demo.conversation().await;
    let stopped = demo.stop().await;
    played?;
    stopped?;
    demo.workspaces(options, dir).await?;
    demo.chats(options, dir).await?;
    demo.github_issue(options, dir).await?;
    let Demo { out, report, .. } = demo;
    writeln!(out)?;
    if report.succeeded() {
        writeln!(
            out,
            "demo ok: all {} checks passed (strategy {strategy})",
            report.passed
        )?;
    } else {
        writeln!(
            out,
            "demo FAILED: {} of {} checks failed (strategy {strategy}):",
            report.failures.len(),
            report.failures.len() + report.passed
        )?;
        for f in &report.failures {
            writeln!(out, "  - {f}")?;
        }
    }
    Ok(report)
}

/// A fresh directory for echo-bot's log and ledger.
fn scratch_dir() -> Result<PathBuf, BoxError> {
    let dir = std::env::temp_dir().join(format!(
        "chat-rs-demo-{}-{}",
        std::process::id(),
        drive::now_ms()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

struct Demo<'o> {
    out: &'o mut dyn Write,
    bot: EchoBot,
    slack: FakeSlack,
    linear: FakeLinear,
    telegram: FakeTelegram,
    whatsapp: FakeWhatsApp,
    github: FakeGitHub,
    ledger: PathBuf,
    t0: Instant,
    wall0_ms: u64,
    /// What the timeline has shown so far.
    shown: Mark,
    /// Deliveries not shown yet.
    sent: Vec<Entry>,
    /// Short names of event ids.
    labels: HashMap<String, String>,
    /// When each event was last delivered.
    delivered: HashMap<String, Duration>,
    report: Report,
    patience: Duration,
    strategy: ConcurrencyArg,
    /// Whether Slack calls show the token they carried.
    show_tokens: bool,
}
