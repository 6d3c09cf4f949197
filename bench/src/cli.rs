//! The command line: `loadgen run` and `loadgen fake-slack`.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Longest run allowed, warmup included.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);

/// Load generator for chat-rs bots: signed Slack deliveries to a URL on
/// loopback, and a fake Slack Web API for the bot to post to.
#[derive(Debug, Clone, Parser)]
#[command(name = "loadgen", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `loadgen run` or `loadgen fake-slack`.
// Parsed once per process: the size of the larger variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Send deliveries and report ack latency, throughput, outcomes and memory.
    Run(RunArgs),
    /// Serve a fake Slack Web API on loopback (every call answers ok).
    FakeSlack(FakeSlackArgs),
}

/// `loadgen run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The bot's Slack webhook (http, loopback only).
    #[arg(long, default_value = "http://127.0.0.1:3000/webhooks/slack")]
    pub url: String,
    /// The bot's signing secret.
    #[arg(
        long,
        env = "SLACK_SIGNING_SECRET",
        default_value = "bench-signing-secret",
        hide_env_values = true
    )]
    pub secret: String,
    /// The bot's Slack user id (every delivery mentions it).
    #[arg(long, env = "SLACK_BOT_USER_ID", default_value = "U0BENCHBOT")]
    pub bot_user_id: String,
    /// Offered rate, deliveries per second (open loop). Unset: as fast as the
    /// connections go (closed loop).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Connections, each with one request in flight.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// How long to send, in seconds (warmup included).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Most deliveries to send.
    #[arg(long)]
    pub count: Option<u64>,
    /// Leading seconds sent but left out of the figures.
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// Thread roots events are spread over; 0: every event in a thread of its
    /// own.
    #[arg(long, default_value_t = 256)]
    pub threads: u64,
    /// Channels the threads are spread over.
    #[arg(long, default_value_t = 8)]
    pub channels: u64,
    /// Share (0..1) of deliveries that repeat the previous one as a retry.
    #[arg(long, default_value_t = 0.0)]
    pub retry_share: f64,
    /// Share (0..1) of events sent as `message` rather than `app_mention`.
    #[arg(long, default_value_t = 0.25)]
    pub message_share: f64,
    /// Length of each message's text (the body is about 1 KB plus twice this).
    #[arg(long, default_value_t = 300)]
    pub text_bytes: usize,
    /// When not 0: each text is `stream: w1 … wN`, which echo-bot answers by
    /// streaming the N words (`ECHO_STREAM_DELAY_MS` apart) — a handler shaped
    /// like an LLM's.
    #[arg(long, default_value_t = 0)]
    pub stream_words: usize,
    /// One request's timeout, in ms.
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// Runtime threads of the load generator itself.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// The server's process id: its `VmRSS` is sampled every 100 ms and its
    /// `VmHWM` read at the end.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Do not read `GET /stats` (a server that is not echo-bot).
    #[arg(long)]
    pub no_stats: bool,
    /// Path of echo-bot's stats on the same host and port.
    #[arg(long, default_value = "/stats")]
    pub stats_path: String,
    /// After sending, how long to wait for the bot to finish (seconds).
    #[arg(long, default_value_t = 30.0)]
    pub settle: f64,
    /// The bot's Redis (loopback): `INFO commandstats` before and after.
    #[arg(long)]
    pub redis_url: Option<String>,
    /// Also run `MONITOR` on that Redis to count, per script, what clients sent
    /// (it costs Redis throughput: use it at moderate rates).
    #[arg(long)]
    pub redis_monitor: bool,
    /// A name for this run in the report.
    #[arg(long, default_value = "")]
    pub label: String,
}

/// `loadgen fake-slack`.
#[derive(Debug, Clone, Args)]
pub struct FakeSlackArgs {
    /// Address to listen on (loopback only; port 0 picks one). The first line
    /// printed is `fake-slack listening on http://ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub bind: SocketAddr,
    /// Exit after this many seconds.
    #[arg(long, default_value_t = 3600)]
    pub lifetime_secs: u64,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn the_cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::parse_from(["loadgen", "run", "--rate", "100", "--threads", "0"]);
        let Command::Run(a) = cli.command else {
            panic!("run");
        };
        assert_eq!(a.rate, Some(100.0));
        assert_eq!(a.threads, 0);
    }
}
