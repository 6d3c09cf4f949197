//! `cargo xtask bench [scenario…] [--quick]`: builds echo-bot and the load
//! generator in release mode, starts a fake Slack Web API and (for the Redis
//! runs) a throwaway `redis-server` on a free loopback port, and runs each
//! scenario against a fresh echo-bot, printing one table per scenario.
//!
//! Scenarios (all of them when none is named):
//!
//! * `backends` — memory vs Redis vs PostgreSQL state: closed-loop maximum
//!   rate, and open loop at half of each saturated rate and at one common
//!   rate; the store's CPU, bytes held and round trips per delivery.
//! * `dispatch` — sync vs deferred dispatch, on memory state.
//! * `strategies` — drop, queue and burst on overlapping threads.
//! * `flood` — 5× the capacity that `CHAT_MAX_DETACHED` and a slow handler
//!   give: memory must stay flat, the excess is answered 503, and every
//!   acknowledged delivery must end in an outcome.
//! * `redis-calls` — Redis commands per delivery, split into the ack path
//!   (the admit function's `FCALL`) and everything else, from `MONITOR`.
//! * `micro` — the divan micro-benchmarks (verify + parse, memory admit, Redis
//!   admit).
//! * `instructions` — Redis's instructions per delivery, counted with
//!   `redis-server` under callgrind (valgrind): a figure that stays the same
//!   however fast the machine is that day, for before/after comparisons of
//!   the functions (`BENCH_ECHO_BOT`).
//!
//! `--quick` runs each load for a couple of seconds (a smoke run); the default
//! runs them long enough for stable figures. Logs, every run's JSON line and
//! the tables in Markdown go to `target/bench/<unix time>/`.

mod instructions;
mod report;
mod run;
mod scenarios;

use std::fs;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::cmd::root;

use run::Bench;

/// State backend of a run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    Memory,
    Redis,
    /// A 3-master Redis Cluster on this machine.
    RedisCluster,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redis => "redis",
            Self::RedisCluster => "redis-cluster",
            Self::Postgres => "postgres",
        }
    }
}

/// A run's figures: loadgen's JSON line, plus what the harness measured.
type Figures = std::collections::BTreeMap<String, serde_json::Value>;

const USAGE: &str = "\
usage: cargo xtask bench [scenario…] [--quick]

scenarios (default: all):
  backends     memory vs Redis state: max rate, and fixed rates
  dispatch     sync vs deferred dispatch (memory)
  strategies   drop, queue, burst on overlapping threads (memory)
  flood        5x capacity with a slow handler: flat memory, 503s, nothing lost
  redis-calls  Redis calls per delivery: ack path and total (MONITOR)
  micro        divan micro-benchmarks: verify+parse, memory admit, Redis admit
  state-bytes  what each delivery leaves in Redis and in the memory backend
  reply        the reply path: the echo handler posting one reply, vs the no-op
  ai           2,000 conversations streaming 40 words over ~4 s each, follow-ups
               queued behind them (Redis, deferred): ack p99, RSS and CPU per
               conversation, renewals, hand-over latency
  instructions Redis's instructions per delivery under callgrind (valgrind):
               one server and a one-master cluster, the same count however
               fast the machine is that day

  --quick      a couple of seconds per load: a smoke run, not a measurement

environment:
  BENCH_ECHO_BOT=PATH  run this echo-bot binary instead of the one built here
                       (another commit's release build: before/after figures)
  BENCH_LOADGEN=PATH   likewise, another load generator binary";

const SCENARIOS: [&str; 10] = [
    "backends",
    "dispatch",
    "strategies",
    "flood",
    "redis-calls",
    "micro",
    "state-bytes",
    "reply",
    "ai",
    "instructions",
];

/// The signing secret and bot user shared by echo-bot and the load generator.
const SECRET: &str = "bench-signing-secret";
const BOT_USER: &str = "U0BENCHBOT";

/// Targets from the benchmark issue.
const TARGET_MEMORY_RATE: f64 = 20_000.0;
const TARGET_MEMORY_P99_MS: f64 = 5.0;
const TARGET_REDIS_RATE: f64 = 8_000.0;
const TARGET_REDIS_P99_MS: f64 = 10.0;
/// Redis's own CPU per delivery (`INFO cpu`).
const TARGET_REDIS_CPU_US: f64 = 60.0;
const TARGET_FLOOD_GROWTH_MIB: f64 = 64.0;
/// The reply path: bot CPU with one reply per event over the no-op's, and
/// deliveries/s over the TypeScript Chat SDK's on the same load.
const TARGET_REPLY_CPU_RATIO: f64 = 1.8;
const TARGET_SDK_RATIO: f64 = 30.0;
/// The AI-shaped load: conversations open at once, words streamed per answer
/// (`ECHO_STREAM_DELAY_MS` apart), and its targets.
const AI_CONVERSATIONS: u64 = 2_000;
const AI_WORDS: u64 = 40;
const AI_WORD_MS: u64 = 100;
const TARGET_AI_P99_MS: f64 = 50.0;
const TARGET_AI_RSS_KIB: f64 = 64.0;
/// One rate both backends are compared at.
const COMMON_RATE: f64 = 4_000.0;

/// Flood: detached cap and handler time; offered load is 5× what they allow.
const FLOOD_MAX_DETACHED: u32 = 256;
const FLOOD_DELAY_MS: u32 = 1000;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut quick = false;
    let mut chosen: Vec<&str> = Vec::new();
    for a in args {
        match a.as_str() {
            "--quick" => quick = true,
            "-h" | "--help" | "help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "all" => chosen.extend(SCENARIOS),
            s if SCENARIOS.contains(&s) => {
                if !chosen.contains(&s) {
                    chosen.push(s);
                }
            }
            other => return Err(format!("unknown scenario `{other}`\n\n{USAGE}")),
        }
    }
    if chosen.is_empty() || chosen.len() > SCENARIOS.len() {
        chosen = SCENARIOS.to_vec();
    }

    let out = out_dir()?;
    println!("bench: logs and results in {}", out.display());
    let mut bench = Bench::start(quick, out, &chosen)?;
    let mut report = bench.header(&chosen);
    let mut failed = Vec::new();
    for s in &chosen {
        let started = Instant::now();
        println!(
            "\nbench: scenario {s}{}",
            if quick { " (quick)" } else { "" }
        );
        let result = match *s {
            "backends" => bench.backends(),
            "dispatch" => bench.dispatch(),
            "strategies" => bench.strategies(),
            "flood" => bench.flood(),
            "redis-calls" => bench.redis_calls(),
            "micro" => bench.micro(),
            "state-bytes" => bench.state_bytes(),
            "reply" => bench.reply(),
            "ai" => bench.ai(),
            "instructions" => bench.instructions(),
            _ => Err(format!("unknown scenario {s}")),
        };
        match result {
            Ok(section) => {
                println!("\n{section}");
                report.push_str(&section);
                report.push('\n');
            }
            Err(e) => {
                eprintln!("bench: {s} failed: {e}");
                failed.push(*s);
            }
        }
        println!("bench: {s} took {:.0} s", started.elapsed().as_secs_f64());
    }
    let path = bench.out.join("report.md");
    fs::write(&path, &report).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("\nbench: tables written to {}", path.display());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("bench: failed: {}", failed.join(", ")))
    }
}

fn out_dir() -> Result<PathBuf, String> {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let dir = target_dir().join("bench").join(stamp.to_string());
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let p = PathBuf::from(d);
            if p.is_absolute() { p } else { root().join(p) }
        }
        _ => root().join("target"),
    }
}
