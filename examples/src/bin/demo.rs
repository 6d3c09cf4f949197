//! `cargo xtask demo`: fake Slack and Linear APIs, echo-bot as a child
//! process, and a scripted conversation of signed webhooks, printed as a
//! timeline. Exits 0 when everything the strategy promises happened.

#![forbid(unsafe_code)]
// A command-line tool: its output is its interface.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use examples::config::ConcurrencyArg;
use examples::demo::{self, DemoState, Options};

/// Plays a scripted conversation of signed Slack and Linear webhooks against
/// echo-bot, with fake Slack and Linear APIs in-process, and prints what
/// arrived, what the runtime decided and what was posted where.
#[derive(Debug, Parser)]
#[command(name = "demo")]
struct Cli {
    /// The concurrency strategy echo-bot runs with.
    #[arg(long, value_enum, default_value_t = ConcurrencyArg::Queue)]
    strategy: ConcurrencyArg,
    /// Run echo-bot on Redis at this URL instead of in-memory state (before
    /// DATABASE_URL).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Run echo-bot on PostgreSQL at this URL (`postgres://…`) instead of
    /// in-memory state.
    #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// echo-bot's simulated work per turn, in milliseconds.
    #[arg(long, default_value_t = 400)]
    delay_ms: u64,
    /// The echo-bot binary; by default the one next to this program.
    #[arg(long, value_name = "PATH")]
    echo_bot: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let echo_bot = match cli.echo_bot.clone().or_else(beside_this_program) {
        Some(path) => path,
        None => {
            eprintln!("demo: cannot tell where this program is; pass --echo-bot PATH");
            return ExitCode::FAILURE;
        }
    };
    if !echo_bot.is_file() {
        eprintln!(
            "demo: echo-bot not found at {}; build it with `cargo build -p examples --bins` \
             (or run `cargo xtask demo`, which does)",
            echo_bot.display()
        );
        return ExitCode::FAILURE;
    }
    let options = Options {
        strategy: cli.strategy,
        state: match (cli.redis, cli.database_url) {
            (Some(url), _) => DemoState::Redis(url),
            (None, Some(url)) => DemoState::Postgres(url),
            (None, None) => DemoState::Memory,
        },
        delay: Duration::from_millis(cli.delay_ms),
        ..Options::new(echo_bot)
    };
    let mut out = std::io::stdout();
    match demo::run(&options, &mut out).await {
        Ok(report) if report.succeeded() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `echo-bot` in the directory of this program, where cargo builds both.
fn beside_this_program() -> Option<PathBuf> {
    let me = std::env::current_exe().ok()?;
    Some(
        me.parent()?
            .join(format!("echo-bot{}", std::env::consts::EXE_SUFFIX)),
    )
}
