//! `cargo xtask bench [scenario…] [--quick]`: builds echo-bot and the load
//! generator in release mode, starts a fake Slack Web API and (for the Redis
//! runs) a throwaway `redis-server` on a free loopback port, and runs each
//! scenario against a fresh echo-bot, printing one table per scenario.
//!
//! Scenarios (all of them when none is named):
//!
//! * `backends` — memory vs Redis state: closed-loop maximum rate, and open
//!   loop at half of each target rate and at one common rate.
//! * `dispatch` — sync vs deferred dispatch, on memory state.
//! * `strategies` — drop, queue and burst on overlapping threads.
//! * `flood` — 5× the capacity that `CHAT_MAX_DETACHED` and a slow handler
//!   give: memory must stay flat, the excess is answered 503, and every
//!   acknowledged delivery must end in an outcome.
//! * `redis-calls` — Redis commands per delivery, split into the ack path
//!   (the admit script's `EVALSHA`) and everything else, from `MONITOR`.
//! * `micro` — the divan micro-benchmarks (verify + parse, memory admit, Redis
//!   admit).
//!
//! `--quick` runs each load for a couple of seconds (a smoke run); the default
//! runs them long enough for stable figures. Logs, every run's JSON line and
//! the tables in Markdown go to `target/bench/<unix time>/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cmd::{cargo, is_ci, root};
use chat_test_redis::RedisServer;

use crate::redis;

const USAGE: &str = "\
usage: cargo xtask bench [scenario…] [--quick]

scenarios (default: all):
  backends     memory vs Redis state: max rate, and fixed rates
  dispatch     sync vs deferred dispatch (memory)
  strategies   drop, queue, burst on overlapping threads (memory)
  flood        5x capacity with a slow handler: flat memory, 503s, nothing lost
  redis-calls  Redis calls per delivery: ack path and total (MONITOR)
  micro        divan micro-benchmarks: verify+parse, memory admit, Redis admit

  --quick      a couple of seconds per load: a smoke run, not a measurement

environment:
  BENCH_ECHO_BOT=PATH  run this echo-bot binary instead of the one built here
                       (another commit's release build: before/after figures)";

const SCENARIOS: [&str; 6] = [
    "backends",
    "dispatch",
    "strategies",
    "flood",
    "redis-calls",
    "micro",
];

/// The signing secret and bot user shared by echo-bot and the load generator.
const SECRET: &str = "bench-signing-secret";
const BOT_USER: &str = "U0BENCHBOT";

/// Targets from the benchmark issue.
const TARGET_MEMORY_RATE: f64 = 20_000.0;
const TARGET_MEMORY_P99_MS: f64 = 5.0;
const TARGET_REDIS_RATE: f64 = 8_000.0;
const TARGET_REDIS_P99_MS: f64 = 10.0;
const TARGET_FLOOD_GROWTH_MIB: f64 = 64.0;
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

/// A process of ours, killed (by its id) when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16, String> {
    Ok(chat_test_redis::free_ports(1, false)?[0])
}

/// State backend of a run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    Memory,
    Redis,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Redis => "redis",
        }
    }
}

/// One load against a fresh echo-bot.
struct Run {
    label: String,
    backend: Backend,
    /// echo-bot settings (`CHAT_*`, `ECHO_DELAY_MS`).
    env: Vec<(&'static str, String)>,
    /// `loadgen run` arguments besides the URL and pid.
    load: Vec<String>,
    /// Longest the load may take (the watchdog's limit).
    limit: Duration,
}

/// A run's flat JSON line.
type Figures = BTreeMap<String, Json>;

struct Bench {
    quick: bool,
    out: PathBuf,
    bin: PathBuf,
    slack_url: String,
    fake_slack: Option<Owned>,
    redis: Option<RedisServer>,
    results: fs::File,
}

/// A setting's value as text.
#[allow(clippy::needless_pass_by_value)] // numbers and literals, converted once
fn s(v: impl ToString) -> String {
    v.to_string()
}

impl Bench {
    fn start(quick: bool, out: PathBuf, chosen: &[&str]) -> Result<Self, String> {
        let needs_load = chosen.iter().any(|s| *s != "micro");
        let needs_redis = chosen
            .iter()
            .any(|s| matches!(*s, "backends" | "redis-calls" | "micro"));
        let bin = target_dir().join("release");
        if needs_load {
            println!("bench: building echo-bot and loadgen (release)");
            let status = cargo()
                .args([
                    "build",
                    "--release",
                    "-p",
                    "examples",
                    "--bin",
                    "echo-bot",
                    "-p",
                    "chat-bench",
                    "--bin",
                    "loadgen",
                ])
                .status()
                .map_err(|e| format!("cargo build: {e}"))?;
            if !status.success() {
                return Err("building echo-bot and loadgen failed".to_owned());
            }
        }
        let (fake_slack, slack_url) = if needs_load {
            let (owned, url) = fake_slack(&bin)?;
            (Some(owned), url)
        } else {
            (None, String::new())
        };
        let redis = if needs_redis {
            if redis::tools_installed() {
                let r = RedisServer::start()?;
                println!("bench: redis-server on {}", r.url());
                Some(r)
            } else if is_ci() {
                return Err("redis-server is needed (apt-get install redis-server)".to_owned());
            } else {
                println!(
                    "\n!!! bench: redis-server not found: the Redis runs are SKIPPED \
                     (apt-get install redis-server redis-tools)\n"
                );
                None
            }
        } else {
            None
        };
        let results = fs::File::create(out.join("results.jsonl"))
            .map_err(|e| format!("results.jsonl: {e}"))?;
        Ok(Self {
            quick,
            out,
            bin,
            slack_url,
            fake_slack,
            redis,
            results,
        })
    }

    /// The report's header: machine, commit, date, mode.
    fn header(&self, chosen: &[&str]) -> String {
        let mut h = String::new();
        let _ = writeln!(
            h,
            "# cargo xtask bench {}{}\n",
            chosen.join(" "),
            if self.quick { " --quick" } else { "" }
        );
        let _ = writeln!(h, "- date (UTC): {}", utc_now());
        let _ = writeln!(h, "- machine: {}", machine());
        let _ = writeln!(h, "- commit: {}", git_rev());
        let _ = writeln!(
            h,
            "- mode: {}",
            if self.quick {
                "--quick (smoke run: a couple of seconds per load; not a measurement)"
            } else {
                "full"
            }
        );
        let _ = writeln!(
            h,
            "- echo-bot: release build, RUST_LOG=warn, fake Slack Web API on loopback; \
             load generator on the same machine\n"
        );
        print!("{h}");
        h
    }

    fn secs(&self, full: f64) -> (f64, f64) {
        if self.quick { (2.0, 0.5) } else { (full, 2.0) }
    }

    /// Load arguments: duration and warmup, and an open-loop rate if any.
    fn load(&self, rate: Option<f64>, full_secs: f64, extra: &[&str]) -> (Vec<String>, Duration) {
        let (duration, warmup) = self.secs(full_secs);
        let mut a = vec![
            "--duration".to_owned(),
            s(duration),
            "--warmup".to_owned(),
            s(warmup),
        ];
        if let Some(r) = rate {
            a.push("--rate".to_owned());
            a.push(s(r));
        }
        a.extend(extra.iter().map(|x| (*x).to_owned()));
        (a, Duration::from_secs_f64(duration + 120.0))
    }

    fn run_one(&mut self, run: &Run) -> Result<Figures, String> {
        let redis_url = match run.backend {
            Backend::Memory => None,
            Backend::Redis => {
                let r = self.redis.as_ref().ok_or("no redis-server")?;
                r.command(&["FLUSHALL"])?;
                Some(r.url())
            }
        };
        let port = free_port()?;
        let log_path = self.out.join(format!("{}.echo-bot.log", run.label));
        let log =
            fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        // BENCH_ECHO_BOT: another build of echo-bot (an earlier commit's), for
        // before/after figures measured in one session.
        let echo_bot = std::env::var_os("BENCH_ECHO_BOT")
            .map_or_else(|| self.bin.join("echo-bot"), PathBuf::from);
        let mut c = Command::new(echo_bot);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("BIND", format!("127.0.0.1:{port}"))
            .env("SLACK_SIGNING_SECRET", SECRET)
            .env("SLACK_BOT_TOKEN", "xoxb-bench")
            .env("SLACK_BOT_USER_ID", BOT_USER)
            .env("SLACK_API_URL", &self.slack_url)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        if let Some(url) = &redis_url {
            c.env("REDIS_URL", url);
        }
        for (k, v) in &run.env {
            c.env(k, v);
        }
        let child = Owned(c.spawn().map_err(|e| format!("starting echo-bot: {e}"))?);
        let pid = child.0.id();
        wait_healthy(port, Duration::from_secs(20))?;

        let mut l = Command::new(self.bin.join("loadgen"));
        l.arg("run")
            .args(["--url", &format!("http://127.0.0.1:{port}/webhooks/slack")])
            .args(["--pid", &pid.to_string()])
            .args(["--label", &run.label])
            .args(["--secret", SECRET, "--bot-user-id", BOT_USER])
            .args(&run.load)
            .env_remove("SLACK_SIGNING_SECRET")
            .env_remove("SLACK_BOT_USER_ID");
        if let Some(url) = &redis_url {
            l.args(["--redis-url", url]);
        }
        print!("bench: {:<28} ", run.label);
        let _ = std::io::stdout().flush();
        let fake_pid = self.fake_slack.as_ref().map(|f| f.0.id());
        let fake_before = fake_pid.and_then(cpu_secs);
        let (ok, stdout, stderr) = run_bounded(l, run.limit)?;
        let fake_cpu = match (fake_pid.and_then(cpu_secs), fake_before) {
            (Some(after), Some(before)) => Some(after - before),
            _ => None,
        };
        drop(child);
        let text_path = self.out.join(format!("{}.txt", run.label));
        let _ = fs::write(&text_path, format!("{stdout}{stderr}"));
        if !ok {
            println!("failed");
            return Err(format!(
                "loadgen failed for {}: {}",
                run.label,
                stderr.trim()
            ));
        }
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .ok_or_else(|| format!("no JSON line from loadgen for {}", run.label))?;
        let _ = writeln!(self.results, "{line}");
        let mut figures = parse_flat_json(line)?;
        // CPU per delivery of the other two processes on the machine.
        let sent = fl(&figures, "sent").max(1.0);
        if let Some(cpu) = fake_cpu {
            figures.insert(
                "fake_slack_cpu_us_per_delivery".to_owned(),
                Json::Num(cpu * 1e6 / sent),
            );
        }
        let loadgen = fl(&figures, "loadgen_cpu_s");
        figures.insert(
            "loadgen_cpu_us_per_delivery".to_owned(),
            Json::Num(loadgen * 1e6 / sent),
        );
        println!(
            "{:>9}/s  ack p99 {:>9} ms  2xx {}  503 {}",
            num(&figures, "achieved_rate", 0),
            num(&figures, "ack_p99_ms", 2),
            int(&figures, "acked"),
            int(&figures, "status_503")
        );
        Ok(figures)
    }

    fn runs(&mut self, runs: &[Run]) -> Result<Vec<(String, Backend, Figures)>, String> {
        let mut done = Vec::new();
        for r in runs {
            if r.backend == Backend::Redis && self.redis.is_none() {
                println!("bench: {:<28} SKIPPED (no redis-server)", r.label);
                continue;
            }
            done.push((r.label.clone(), r.backend, self.run_one(r)?));
        }
        Ok(done)
    }

    fn backends(&mut self) -> Result<String, String> {
        let deferred_queue = || {
            vec![
                ("CHAT_DISPATCH", s("deferred")),
                ("CHAT_CONCURRENCY", s("queue")),
                // The runtime alone: a handler that does nothing.
                ("ECHO_NOOP", s("true")),
            ]
        };
        let mut runs = Vec::new();
        for backend in [Backend::Memory, Backend::Redis] {
            let (load, limit) = self.load(None, 15.0, &["--connections", "64"]);
            runs.push(Run {
                label: format!("{}-max", backend.name()),
                backend,
                env: deferred_queue(),
                load,
                limit,
            });
        }
        for (backend, rate) in [
            (Backend::Memory, TARGET_MEMORY_RATE / 2.0),
            (Backend::Memory, COMMON_RATE),
            (Backend::Redis, COMMON_RATE),
        ] {
            let (load, limit) = self.load(Some(rate), 15.0, &["--connections", "128"]);
            runs.push(Run {
                label: format!("{}-at-{rate:.0}", backend.name()),
                backend,
                env: deferred_queue(),
                load,
                limit,
            });
        }
        let done = self.runs(&runs)?;
        let mut t = String::from(
            "## backends: memory vs Redis (deferred dispatch, queue, no-op handler)\n\n",
        );
        t.push_str(&latency_table(&done));
        let get = |label: &str| done.iter().find(|(l, _, _)| l == label).map(|(_, _, f)| f);
        let _ = writeln!(t);
        if let (Some(m), Some(r)) = (get("memory-max"), get("redis-max")) {
            let _ = writeln!(
                t,
                "- ratio redis/memory: max rate {:.2}×",
                ratio(r, m, "achieved_rate")
            );
        }
        let common_m = format!("memory-at-{COMMON_RATE:.0}");
        let common_r = format!("redis-at-{COMMON_RATE:.0}");
        if let (Some(m), Some(r)) = (get(&common_m), get(&common_r)) {
            let _ = writeln!(
                t,
                "- ratio redis/memory at {COMMON_RATE:.0}/s: ack p50 {:.2}×, p99 {:.2}×",
                ratio(r, m, "ack_p50_ms"),
                ratio(r, m, "ack_p99_ms")
            );
        }
        if let Some(f) = get("memory-max") {
            let _ = writeln!(
                t,
                "- target memory ≥ {TARGET_MEMORY_RATE:.0}/s sustained: {}",
                at_least(fl(f, "achieved_rate"), TARGET_MEMORY_RATE, "/s")
            );
        }
        if let Some(f) = get(&format!("memory-at-{:.0}", TARGET_MEMORY_RATE / 2.0)) {
            let _ = writeln!(
                t,
                "- target memory ack p99 < {TARGET_MEMORY_P99_MS} ms at {:.0}/s: {}",
                TARGET_MEMORY_RATE / 2.0,
                below(fl(f, "ack_p99_ms"), TARGET_MEMORY_P99_MS, " ms")
            );
        }
        if let Some(f) = get("redis-max") {
            let _ = writeln!(
                t,
                "- target Redis ≥ {TARGET_REDIS_RATE:.0}/s: {}",
                at_least(fl(f, "achieved_rate"), TARGET_REDIS_RATE, "/s")
            );
            let _ = writeln!(
                t,
                "- Redis EVALSHA per delivery at max rate (INFO commandstats): {}; \
                 all commands, those inside scripts included: {}; Redis CPU {} µs/delivery",
                num(f, "redis_cmdstat_evalsha_per_delivery", 2),
                num(f, "redis_cmdstat_all_per_delivery", 2),
                num(f, "redis_cpu_us_per_delivery", 1)
            );
        }
        if let Some(f) = get(&common_r) {
            let _ = writeln!(
                t,
                "- target Redis ack p99 < {TARGET_REDIS_P99_MS} ms at {:.0}/s: {}",
                TARGET_REDIS_RATE / 2.0,
                below(fl(f, "ack_p99_ms"), TARGET_REDIS_P99_MS, " ms")
            );
        }
        Ok(t)
    }

    fn dispatch(&mut self) -> Result<String, String> {
        let mut runs = Vec::new();
        for dispatch in ["sync", "deferred"] {
            let env = vec![
                ("CHAT_DISPATCH", s(dispatch)),
                ("ECHO_NOOP", s("true")),
                ("CHAT_CONCURRENCY", s("queue")),
            ];
            let (load, limit) = self.load(None, 15.0, &["--connections", "64"]);
            runs.push(Run {
                label: format!("{dispatch}-max"),
                backend: Backend::Memory,
                env: env.clone(),
                load,
                limit,
            });
            let (load, limit) = self.load(Some(COMMON_RATE), 15.0, &["--connections", "128"]);
            runs.push(Run {
                label: format!("{dispatch}-at-{COMMON_RATE:.0}"),
                backend: Backend::Memory,
                env,
                load,
                limit,
            });
        }
        let done = self.runs(&runs)?;
        let mut t =
            String::from("## dispatch: sync vs deferred (memory, queue, no-op handler)\n\n");
        t.push_str(&latency_table(&done));
        let get = |label: &str| done.iter().find(|(l, _, _)| l == label).map(|(_, _, f)| f);
        if let (Some(sy), Some(de)) = (get("sync-max"), get("deferred-max")) {
            let _ = writeln!(
                t,
                "\n- ratio sync/deferred: max rate {:.2}×",
                ratio(sy, de, "achieved_rate")
            );
        }
        let (a, b) = (
            format!("sync-at-{COMMON_RATE:.0}"),
            format!("deferred-at-{COMMON_RATE:.0}"),
        );
        if let (Some(sy), Some(de)) = (get(&a), get(&b)) {
            let _ = writeln!(
                t,
                "- ratio sync/deferred at {COMMON_RATE:.0}/s: ack p50 {:.2}×, p99 {:.2}×",
                ratio(sy, de, "ack_p50_ms"),
                ratio(sy, de, "ack_p99_ms")
            );
        }
        Ok(t)
    }

    fn strategies(&mut self) -> Result<String, String> {
        let mut runs = Vec::new();
        for strategy in ["drop", "queue", "burst"] {
            let mut env = vec![
                ("CHAT_DISPATCH", s("deferred")),
                ("CHAT_CONCURRENCY", s(strategy)),
            ];
            if strategy == "burst" {
                env.push(("CHAT_BURST_WINDOW_MS", s(200)));
            }
            let (load, limit) = self.load(
                Some(COMMON_RATE),
                15.0,
                &[
                    "--connections",
                    "128",
                    "--threads",
                    "64",
                    "--retry-share",
                    "0.02",
                ],
            );
            runs.push(Run {
                label: format!("{strategy}-at-{COMMON_RATE:.0}"),
                backend: Backend::Memory,
                env,
                load,
                limit,
            });
        }
        let done = self.runs(&runs)?;
        let mut t = format!(
            "## strategies: drop, queue, burst (memory, deferred, {COMMON_RATE:.0}/s over 64 threads, 2% retries; burst window 200 ms)\n\n"
        );
        t.push_str(&latency_table(&done));
        t.push('\n');
        t.push_str(&outcome_table(&done));
        Ok(t)
    }

    fn flood(&mut self) -> Result<String, String> {
        let capacity = f64::from(FLOOD_MAX_DETACHED) * 1000.0 / f64::from(FLOOD_DELAY_MS);
        let rate = 5.0 * capacity;
        let duration = if self.quick { 3.0 } else { 60.0 };
        let run = Run {
            label: "flood".to_owned(),
            backend: Backend::Memory,
            env: vec![
                ("CHAT_DISPATCH", s("deferred")),
                ("CHAT_CONCURRENCY", s("queue")),
                ("CHAT_MAX_DETACHED", s(FLOOD_MAX_DETACHED)),
                ("ECHO_DELAY_MS", s(FLOOD_DELAY_MS)),
            ],
            load: vec![
                "--rate".to_owned(),
                s(rate),
                "--duration".to_owned(),
                s(duration),
                "--connections".to_owned(),
                s(128),
                "--threads".to_owned(),
                s(0),
            ],
            limit: Duration::from_secs_f64(duration + 180.0),
        };
        let done = self.runs(std::slice::from_ref(&run))?;
        let mut t = format!(
            "## flood: {rate:.0}/s for {duration:.0} s = 5× capacity (CHAT_MAX_DETACHED={FLOOD_MAX_DETACHED}, ECHO_DELAY_MS={FLOOD_DELAY_MS}, every event its own thread; memory)\n\n"
        );
        t.push_str(&latency_table(&done));
        t.push('\n');
        t.push_str(&outcome_table(&done));
        if let Some((_, _, f)) = done.first() {
            let growth = fl(f, "rss_growth_mib");
            let _ = writeln!(
                t,
                "\n| RSS start MiB | RSS max MiB | RSS end MiB | VmHWM MiB | growth MiB | 2xx | 503 | acknowledged without an outcome |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                num(f, "rss_start_mib", 1),
                num(f, "rss_max_mib", 1),
                num(f, "rss_end_mib", 1),
                num(f, "rss_hwm_mib", 1),
                num(f, "rss_growth_mib", 1),
                int(f, "acked"),
                int(f, "status_503"),
                int(f, "acked_without_outcome")
            );
            let _ = writeln!(
                t,
                "- target RSS growth < {TARGET_FLOOD_GROWTH_MIB} MiB: {}",
                below(growth, TARGET_FLOOD_GROWTH_MIB, " MiB")
            );
            let lost = fl(f, "acked_without_outcome");
            let _ = writeln!(
                t,
                "- acknowledged and lost (2xx without an outcome after settling): {} ({})",
                int(f, "acked_without_outcome"),
                if lost == 0.0 && f.get("settled") == Some(&Json::Bool(true)) {
                    "met"
                } else {
                    "MISSED"
                }
            );
            let answered = fl(f, "completed").max(1.0);
            let _ = writeln!(
                t,
                "- answered 503: {:.1}% (the excess over capacity is {:.0}%)",
                100.0 * fl(f, "status_503") / answered,
                100.0 * (1.0 - 1.0 / 5.0)
            );
        }
        Ok(t)
    }

    fn redis_calls(&mut self) -> Result<String, String> {
        let rate = if self.quick { 500.0 } else { 1000.0 };
        let (load, limit) = self.load(
            Some(rate),
            15.0,
            &["--connections", "32", "--threads", "0", "--redis-monitor"],
        );
        let run = Run {
            label: "redis-calls".to_owned(),
            backend: Backend::Redis,
            env: vec![
                ("CHAT_DISPATCH", s("deferred")),
                ("CHAT_CONCURRENCY", s("queue")),
            ],
            load,
            limit,
        };
        let done = self.runs(std::slice::from_ref(&run))?;
        let mut t = format!(
            "## redis-calls: Redis commands per delivery (deferred, queue, {rate:.0}/s, every event its own thread: one handler run per delivery)\n\n"
        );
        let Some((_, _, f)) = done.first() else {
            t.push_str("skipped: no redis-server\n");
            return Ok(t);
        };
        let n = fl(f, "redis_deliveries").max(1.0);
        let _ = writeln!(
            t,
            "| sent by echo-bot (MONITOR) | calls | per delivery |\n|---|---:|---:|"
        );
        for (k, v) in f {
            if let (Some(cmd), Json::Num(x)) = (k.strip_prefix("redis_sent_"), v) {
                let _ = writeln!(t, "| `{cmd}` | {} | {:.3} |", group(*x), x / n);
            }
        }
        let _ = writeln!(
            t,
            "| **ack path** (admit `EVALSHA`) | {} | {} |\n| **total** | {} | {} |\n",
            int(f, "redis_ack_path_calls"),
            num(f, "redis_ack_path_per_delivery", 3),
            int(f, "redis_total_calls"),
            num(f, "redis_total_per_delivery", 3)
        );
        let _ = writeln!(
            t,
            "- deliveries: {}; INFO commandstats: EVALSHA {}/delivery, all commands (inside scripts included) {}/delivery",
            int(f, "redis_deliveries"),
            num(f, "redis_cmdstat_evalsha_per_delivery", 3),
            num(f, "redis_cmdstat_all_per_delivery", 3)
        );
        let ack = fl(f, "redis_ack_path_per_delivery");
        let total = fl(f, "redis_total_per_delivery");
        let _ = writeln!(
            t,
            "- target exactly 1 call on the ack path: {}",
            if (ack - 1.0).abs() < 0.005 {
                format!("{ack:.3} (met)")
            } else {
                format!("{ack:.3} (MISSED)")
            }
        );
        let _ = writeln!(
            t,
            "- target ≤ 3 calls per delivery in total: {}",
            if total <= 3.0 {
                format!("{total:.3} (met)")
            } else {
                format!("{total:.3} (MISSED by {:.0}%)", 100.0 * (total / 3.0 - 1.0))
            }
        );
        Ok(t)
    }

    fn micro(&mut self) -> Result<String, String> {
        let mut t = String::from("## micro: divan micro-benchmarks\n\n");
        let mut verify_parse_median = None;
        let benches = [
            ("chat-slack", "verify_parse"),
            ("chat-state-memory", "admit"),
            ("chat-state-redis", "admit"),
        ];
        for (package, bench) in benches {
            let mut c = cargo();
            c.args(["bench", "-p", package, "--bench", bench, "--"]);
            if self.quick {
                c.args(["--sample-count", "100", "--max-time", "1"]);
            } else {
                c.args(["--sample-count", "1000"]);
            }
            c.env_remove("REDIS_URL");
            if package == "chat-state-redis" {
                match &self.redis {
                    Some(r) => {
                        r.command(&["FLUSHALL"])?;
                        c.env("REDIS_URL", r.url());
                    }
                    None => {
                        println!("bench: {package}/{bench} SKIPPED (no redis-server)");
                        let _ = writeln!(t, "{package} `{bench}`: skipped (no redis-server)\n");
                        continue;
                    }
                }
            }
            println!("bench: cargo bench -p {package} --bench {bench}");
            let output = c
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| format!("cargo bench: {e}"))?;
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            print!("{text}");
            if !output.status.success() {
                return Err(format!("cargo bench -p {package} --bench {bench} failed"));
            }
            if bench == "verify_parse" {
                verify_parse_median = divan_median_us(&text, "verify_and_parse");
            }
            let _ = writeln!(t, "{package} `{bench}`:\n\n```text\n{}```\n", text);
        }
        let _ = writeln!(
            t,
            "- target verify + parse of a 2 KB payload < 10 µs: {}",
            match verify_parse_median {
                Some(us) => below(us, 10.0, " µs median"),
                None => "not measured".to_owned(),
            }
        );
        Ok(t)
    }
}

/// The median (µs) of benchmark `name` in divan's table output.
fn divan_median_us(output: &str, name: &str) -> Option<f64> {
    let line = output
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == name))?;
    // `├─ name  fastest │ slowest │ median │ mean │ samples │ iters`
    let median = line.split('│').nth(2)?.trim();
    let (value, unit) = median.split_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let scale = match unit.trim() {
        "ns" => 0.001,
        "µs" | "us" => 1.0,
        "ms" => 1000.0,
        "s" => 1_000_000.0,
        _ => return None,
    };
    Some(value * scale)
}

/// Starts the fake Slack Web API; returns it and its base URL.
fn fake_slack(bin: &Path) -> Result<(Owned, String), String> {
    let mut child = Command::new(bin.join("loadgen"))
        .args([
            "fake-slack",
            "--bind",
            "127.0.0.1:0",
            "--lifetime-secs",
            "7200",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the fake Slack API: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout from fake-slack")?;
    let owned = Owned(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| format!("reading fake-slack's address: {e}"))?;
    let base = line
        .trim()
        .strip_prefix("fake-slack listening on ")
        .ok_or_else(|| format!("unexpected fake-slack output {line:?}"))?;
    Ok((owned, format!("{base}/api")))
}

/// CPU time (user + system, seconds) a process has used, from
/// `/proc/<pid>/stat` (10 ms clock ticks).
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Waits until echo-bot answers `GET /healthz` with 200.
fn wait_healthy(port: u16, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut head = [0u8; 12];
            if s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200") {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(format!("echo-bot on port {port} did not become healthy"));
        }
        sleep(Duration::from_millis(50));
    }
}

/// Runs a command with its output captured, killing it past `limit`.
fn run_bounded(mut c: Command, limit: Duration) -> Result<(bool, String, String), String> {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {c:?}: {e}"))?;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let mut err = child.stderr.take().ok_or("no stderr")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let mut stderr = err_reader.join().unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!("\nkilled after {limit:?}\n"));
    }
    Ok((status.is_some_and(|s| s.success()), stdout, stderr))
}

/// A value of a flat JSON object.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Num(f64),
    Str(String),
    Bool(bool),
    Null,
}

/// Parses one flat JSON object (no nested objects or arrays), as loadgen
/// prints it.
fn parse_flat_json(text: &str) -> Result<Figures, String> {
    let mut p = text.trim().char_indices().peekable();
    let bad = |what: &str| format!("loadgen's JSON line: {what}");
    let mut out = BTreeMap::new();
    let skip_ws = |p: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while p.peek().is_some_and(|(_, c)| c.is_whitespace()) {
            p.next();
        }
    };
    let string =
        |p: &mut std::iter::Peekable<std::str::CharIndices<'_>>| -> Result<String, String> {
            if p.next().map(|(_, c)| c) != Some('"') {
                return Err(bad("expected a string"));
            }
            let mut s = String::new();
            loop {
                match p.next().map(|(_, c)| c) {
                    Some('"') => return Ok(s),
                    Some('\\') => match p.next().map(|(_, c)| c) {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some('u') => {
                            let hex: String =
                                (0..4).filter_map(|_| p.next().map(|(_, c)| c)).collect();
                            let c = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .unwrap_or('?');
                            s.push(c);
                        }
                        Some(c) => s.push(c),
                        None => return Err(bad("unterminated escape")),
                    },
                    Some(c) => s.push(c),
                    None => return Err(bad("unterminated string")),
                }
            }
        };
    skip_ws(&mut p);
    if p.next().map(|(_, c)| c) != Some('{') {
        return Err(bad("expected an object"));
    }
    loop {
        skip_ws(&mut p);
        if p.peek().map(|(_, c)| *c) == Some('}') {
            break;
        }
        let key = string(&mut p)?;
        skip_ws(&mut p);
        if p.next().map(|(_, c)| c) != Some(':') {
            return Err(bad("expected ':'"));
        }
        skip_ws(&mut p);
        let value = match p.peek().map(|(_, c)| *c) {
            Some('"') => Json::Str(string(&mut p)?),
            Some(_) => {
                let mut raw = String::new();
                while let Some((_, c)) = p.peek() {
                    if *c == ',' || *c == '}' || c.is_whitespace() {
                        break;
                    }
                    raw.push(*c);
                    p.next();
                }
                match raw.as_str() {
                    "true" => Json::Bool(true),
                    "false" => Json::Bool(false),
                    "null" => Json::Null,
                    n => Json::Num(n.parse().map_err(|_| bad("bad number"))?),
                }
            }
            None => return Err(bad("unexpected end")),
        };
        out.insert(key, value);
        skip_ws(&mut p);
        match p.next().map(|(_, c)| c) {
            Some(',') => {}
            Some('}') => break,
            _ => return Err(bad("expected ',' or '}'")),
        }
    }
    Ok(out)
}

fn fl(f: &Figures, key: &str) -> f64 {
    match f.get(key) {
        Some(Json::Num(x)) => *x,
        _ => 0.0,
    }
}

fn int(f: &Figures, key: &str) -> String {
    group(fl(f, key).round())
}

fn num(f: &Figures, key: &str, places: usize) -> String {
    match f.get(key) {
        Some(Json::Num(x)) if places == 0 => group(x.round()),
        Some(Json::Num(x)) => format!("{x:.places$}"),
        _ => "–".to_owned(),
    }
}

/// `12345` as `12,345`.
fn group(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

fn ratio(a: &Figures, b: &Figures, key: &str) -> f64 {
    let d = fl(b, key);
    if d == 0.0 { 0.0 } else { fl(a, key) / d }
}

fn at_least(got: f64, target: f64, unit: &str) -> String {
    if got >= target {
        format!("{}{unit} (met)", group(got))
    } else {
        format!(
            "{}{unit} (MISSED by {:.0}%)",
            group(got),
            100.0 * (1.0 - got / target)
        )
    }
}

fn below(got: f64, target: f64, unit: &str) -> String {
    if got < target {
        format!("{got:.2}{unit} (met)")
    } else {
        format!("{got:.2}{unit} (MISSED: {:.1}× the target)", got / target)
    }
}

fn latency_table(done: &[(String, Backend, Figures)]) -> String {
    let mut t = String::from(
        "| run | state | offered/s | achieved/s | ack p50 ms | p90 | p99 | p99.9 | max | 2xx | 503 | errors | handler runs | peak RSS MiB | CPU µs/delivery: bot | Redis | fake Slack | loadgen |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (label, backend, f) in done {
        let offered = match f.get("offered_rate") {
            Some(Json::Num(r)) => group(*r),
            _ => format!("max ({} conns)", int(f, "connections")),
        };
        let _ = writeln!(
            t,
            "| {label} | {} | {offered} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            backend.name(),
            num(f, "achieved_rate", 0),
            num(f, "ack_p50_ms", 2),
            num(f, "ack_p90_ms", 2),
            num(f, "ack_p99_ms", 2),
            num(f, "ack_p999_ms", 2),
            num(f, "ack_max_ms", 2),
            int(f, "acked"),
            int(f, "status_503"),
            group(fl(f, "errors") + fl(f, "timeouts")),
            int(f, "handler_runs"),
            num(f, "rss_max_mib", 1),
            num(f, "server_cpu_us_per_delivery", 0),
            num(f, "redis_cpu_us_per_delivery", 0),
            num(f, "fake_slack_cpu_us_per_delivery", 0),
            num(f, "loadgen_cpu_us_per_delivery", 0),
        );
    }
    t
}

fn outcome_table(done: &[(String, Backend, Figures)]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (_, _, f) in done {
        for k in f.keys() {
            if let Some(n) = k.strip_prefix("outcome_")
                && !names.contains(&n)
            {
                names.push(n);
            }
        }
    }
    names.sort_unstable();
    let mut t = String::from("| run |");
    for n in &names {
        let _ = write!(t, " {n} |");
    }
    t.push_str(" retries sent | acknowledged | acknowledged without an outcome |\n|---|");
    for _ in &names {
        t.push_str("---:|");
    }
    t.push_str("---:|---:|---:|\n");
    for (label, _, f) in done {
        let _ = write!(t, "| {label} |");
        for n in &names {
            let _ = write!(t, " {} |", int(f, &format!("outcome_{n}")));
        }
        let _ = writeln!(
            t,
            " {} | {} | {} |",
            int(f, "retries_sent"),
            int(f, "acked"),
            int(f, "acked_without_outcome")
        );
    }
    t
}

fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn git_rev() -> String {
    let rev = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(root())
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    if dirty {
        format!("{rev} (with local changes)")
    } else {
        rev
    }
}

/// CPU model, logical CPUs and memory, from /proc.
fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let mem_kib: u64 = fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}, {cpus} CPUs, {:.1} GiB memory, Linux {}",
        mem_kib as f64 / 1024.0 / 1024.0,
        kernel.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_json_lines_parse() {
        let f = parse_flat_json(
            r#"{"a":1.5,"b":"x\"y","c":null,"d":true,"outcome_handler-ran":3,"e":-2e3}"#,
        )
        .unwrap();
        assert_eq!(f["a"], Json::Num(1.5));
        assert_eq!(f["b"], Json::Str("x\"y".to_owned()));
        assert_eq!(f["c"], Json::Null);
        assert_eq!(f["d"], Json::Bool(true));
        assert_eq!(f["outcome_handler-ran"], Json::Num(3.0));
        assert_eq!(f["e"], Json::Num(-2000.0));
        assert!(parse_flat_json("{\"a\":").is_err());
        assert!(parse_flat_json("[1]").is_err());
    }

    #[test]
    fn divan_medians_are_read() {
        let out = "verify_parse         fastest       │ slowest       │ median        │ mean\n\
                   ├─ parse             5.908 µs      │ 45.42 µs      │ 6.048 µs      │ 6.582 µs\n\
                   ╰─ verify_and_parse  8.532 µs      │ 97.45 µs      │ 8.712 µs      │ 9.844 µs\n";
        assert_eq!(divan_median_us(out, "verify_and_parse"), Some(8.712));
        assert_eq!(divan_median_us(out, "parse"), Some(6.048));
        assert_eq!(divan_median_us(out, "missing"), None);
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(group(0.0), "0");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1234567.0), "1,234,567");
        assert_eq!(group(-20000.0), "-20,000");
    }
}
