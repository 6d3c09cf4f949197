//! # chat-bench
//!
//! The load generator behind `cargo xtask bench` (binary `loadgen`): correctly
//! signed Slack `event_callback` deliveries to a bot on loopback, and what the
//! bot made of them.
//!
//! * [`payload`]: the deliveries: unique event ids, `K` threads so events
//!   overlap, a share of duplicate retries (`X-Slack-Retry-Num: 1`).
//! * [`run`]: open loop at a fixed offered rate (latency from the due time, so
//!   no coordinated omission) or closed loop over `C` connections.
//! * [`probe`]: echo-bot's `GET /stats` before and after, the server's resident
//!   memory, Redis command counts.
//! * [`fake_slack`]: a loopback stand-in for Slack's Web API for the bot's
//!   posts.
//!
//! `loadgen run --help` lists every setting. The report is printed for people,
//! then once more as one flat JSON object on the last line, for tools.
//!
//! Traffic goes to loopback addresses only: a URL that names anything else is
//! refused.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand};
use serde_json::{Map, Value, json};

pub mod fake_slack;
pub mod http;
pub mod payload;
pub mod probe;
pub mod run;

use payload::{Deliveries, Shape};
use probe::{BotStats, Monitor, Rss, RssSampler};
use run::{Load, Measured, Plan, quantile_ms};

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
    /// chat-state-redis's Lua scripts, to name each `EVALSHA`.
    #[arg(long, default_value_os_t = default_lua_dir())]
    pub lua_dir: PathBuf,
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

fn default_lua_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../crates/chat-state-redis/src/lua"
    ))
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// `host[:port]` as a loopback socket address (`localhost` is 127.0.0.1);
/// anything else is refused.
pub fn loopback_addr(host_port: &str, default_port: u16) -> io::Result<SocketAddr> {
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') || h.starts_with('[') => (
            h,
            p.parse::<u16>()
                .map_err(|_| invalid(format!("bad port in {host_port:?}")))?,
        ),
        _ => (host_port, default_port),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse::<IpAddr>()
            .map_err(|_| invalid(format!("{host:?} is not a loopback address")))?
    };
    if !ip.is_loopback() {
        return Err(invalid(format!(
            "{ip} is not a loopback address: the load generator sends to loopback only"
        )));
    }
    Ok(SocketAddr::new(ip, port))
}

/// Where `http://host:port/path` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The loopback address.
    pub addr: SocketAddr,
    /// The `Host` header.
    pub host: String,
    /// The request path.
    pub path: String,
}

/// Parses an `http://` URL on loopback.
pub fn parse_url(url: &str) -> io::Result<Target> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| invalid("the URL must start with http://"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok(Target {
        addr: loopback_addr(host, 80)?,
        host: host.to_owned(),
        path: path.to_owned(),
    })
}

fn secs(s: f64, what: &str) -> io::Result<Duration> {
    if !s.is_finite() || s < 0.0 {
        return Err(invalid(format!("{what} must be a non-negative number")));
    }
    let d = Duration::from_secs_f64(s);
    if d > MAX_DURATION {
        return Err(invalid(format!("{what} is capped at {MAX_DURATION:?}")));
    }
    Ok(d)
}

/// What one run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The settings.
    pub args: RunArgs,
    /// The load's own figures.
    pub measured: Measured,
    /// The bot's stats difference over the run, and whether it settled.
    pub bot: Option<(BotStats, bool)>,
    /// The server's memory.
    pub rss: Option<Rss>,
    /// `INFO commandstats` difference (command → calls, script calls included).
    pub commandstats: Option<BTreeMap<String, u64>>,
    /// What clients sent, from `MONITOR` (command or `evalsha:<script>` → calls).
    pub monitor: Option<BTreeMap<String, u64>>,
    /// CPU time the server used during the load and settling.
    pub server_cpu: Option<Duration>,
    /// CPU time the bot's Redis used over the same span (`INFO cpu`).
    pub redis_cpu: Option<Duration>,
    /// CPU time the load generator itself used.
    pub loadgen_cpu: Option<Duration>,
    /// Problems that did not stop the run.
    pub notes: Vec<String>,
}

/// Runs the load described by `args` and probes the server around it.
pub async fn execute(args: RunArgs) -> io::Result<Report> {
    let target = parse_url(&args.url)?;
    let duration = secs(args.duration, "--duration")?;
    let warmup = secs(args.warmup, "--warmup")?;
    let settle_for = secs(args.settle, "--settle")?;
    if warmup >= duration {
        return Err(invalid("--warmup must be shorter than --duration"));
    }
    let load = match args.rate {
        Some(r) if r.is_finite() && r > 0.0 && r <= 1_000_000.0 => Load::Rate(r),
        Some(_) => return Err(invalid("--rate must be in (0, 1000000]")),
        None => Load::Max,
    };
    if args.connections == 0 || args.connections > 10_000 {
        return Err(invalid("--connections must be in 1..=10000"));
    }
    let redis = args
        .redis_url
        .as_deref()
        .map(probe::redis_addr)
        .transpose()?;
    let mut notes = Vec::new();

    let stats_before = if args.no_stats {
        None
    } else {
        Some(probe::bot_stats(target.addr, &target.host, &args.stats_path).await?)
    };
    let names = if args.redis_monitor {
        match probe::script_names(&args.lua_dir) {
            Ok(n) => n,
            Err(e) => {
                notes.push(format!(
                    "scripts in {} not read ({e}): EVALSHAs are named by SHA",
                    args.lua_dir.display()
                ));
                BTreeMap::new()
            }
        }
    } else {
        BTreeMap::new()
    };
    let monitor_limit = duration + settle_for + Duration::from_secs(60);
    let monitor = match (redis, args.redis_monitor) {
        (Some(addr), true) => Some(Monitor::start(addr, names, monitor_limit)?),
        _ => None,
    };
    let cmd_before = redis.map(probe::commandstats).transpose()?;
    let redis_cpu_before = redis.map(probe::redis_cpu).transpose()?;
    let sampler = match args.pid {
        Some(pid) => Some(RssSampler::start(
            pid,
            Duration::from_millis(100),
            monitor_limit,
        )?),
        None => None,
    };

    let server_cpu_before = args.pid.map(probe::cpu_time).transpose()?;
    let own_cpu_before = probe::cpu_time(std::process::id()).ok();
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let deliveries = Deliveries::new(
        Shape {
            secret: args.secret.clone(),
            bot_user: args.bot_user_id.clone(),
            threads: args.threads,
            channels: args.channels,
            retry_share: args.retry_share,
            message_share: args.message_share,
            text_bytes: args.text_bytes,
            ..Shape::default()
        },
        nonce,
    );
    let plan = Plan {
        addr: target.addr,
        host: target.host.clone(),
        path: target.path.clone(),
        load,
        connections: args.connections,
        duration,
        count: args.count,
        warmup,
        timeout: Duration::from_millis(args.timeout_ms.clamp(1, 600_000)),
    };
    let measured = run::run(plan, deliveries).await;
    let loadgen_cpu = match (own_cpu_before, probe::cpu_time(std::process::id()).ok()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };

    let bot = match &stats_before {
        Some(before) => {
            let (after, settled) =
                probe::settle(target.addr, &target.host, &args.stats_path, settle_for).await?;
            if !settled {
                notes.push(format!(
                    "the bot had not settled {:.0} s after the load (in flight: {})",
                    settle_for.as_secs_f64(),
                    after.in_flight
                ));
            }
            Some((after.since(before), settled))
        }
        None => None,
    };
    let server_cpu = match (args.pid, server_cpu_before) {
        (Some(pid), Some(before)) => probe::cpu_time(pid).ok().map(|t| t.saturating_sub(before)),
        _ => None,
    };
    let rss = match (sampler, args.pid) {
        (Some(s), Some(pid)) => Some(s.stop(pid)),
        _ => None,
    };
    let commandstats = match (redis, cmd_before) {
        (Some(addr), Some(before)) => {
            let after = probe::commandstats(addr)?;
            Some(
                after
                    .into_iter()
                    .map(|(k, v)| {
                        let d = v.saturating_sub(*before.get(&k).unwrap_or(&0));
                        (k, d)
                    })
                    .filter(|(k, v)| *v > 0 && k != "info")
                    .collect(),
            )
        }
        _ => None,
    };
    let redis_cpu = match (redis, redis_cpu_before) {
        (Some(addr), Some(before)) => Some(probe::redis_cpu(addr)?.saturating_sub(before)),
        _ => None,
    };
    let monitor = monitor.map(Monitor::stop).transpose()?;
    Ok(Report {
        args,
        measured,
        bot,
        rss,
        commandstats,
        monitor,
        server_cpu,
        redis_cpu,
        loadgen_cpu,
        notes,
    })
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

impl Report {
    /// Deliveries that reached the state backend: every 2xx answer.
    fn deliveries_admitted(&self) -> u64 {
        self.measured.acknowledged()
    }

    /// `(ack-path calls, all calls)` clients sent to Redis, from `MONITOR`.
    pub fn redis_calls(&self) -> Option<(u64, u64)> {
        let m = self.monitor.as_ref()?;
        let ack = m
            .iter()
            .filter(|(k, _)| k.starts_with("evalsha:admit_"))
            .map(|(_, v)| v)
            .sum();
        Some((ack, m.values().sum()))
    }

    /// The report as one flat JSON object.
    pub fn json(&self) -> Value {
        let m = &self.measured;
        let mut o = Map::new();
        let mut put = |k: &str, v: Value| {
            o.insert(k.to_owned(), v);
        };
        put("label", json!(self.args.label));
        put(
            "mode",
            json!(if self.args.rate.is_some() {
                "rate"
            } else {
                "max"
            }),
        );
        put("offered_rate", json!(self.args.rate));
        put("connections", json!(self.args.connections));
        put("duration_s", json!(self.args.duration));
        put("warmup_s", json!(self.args.warmup));
        put("threads", json!(self.args.threads));
        put("retry_share", json!(self.args.retry_share));
        put("sent", json!(m.sent));
        put("retries_sent", json!(m.retries));
        put("completed", json!(m.completed));
        put("errors", json!(m.errors));
        put("timeouts", json!(m.timeouts));
        put("not_sent", json!(m.not_sent));
        put("measured", json!(m.ack_us.len()));
        put("achieved_rate", json!(round(m.achieved_rate(), 1)));
        for (name, p) in [
            ("p50", 0.5),
            ("p90", 0.9),
            ("p99", 0.99),
            ("p999", 0.999),
            ("max", 1.0),
        ] {
            put(&format!("ack_{name}_ms"), json!(quantile_ms(&m.ack_us, p)));
            put(
                &format!("svc_{name}_ms"),
                json!(quantile_ms(&m.service_us, p)),
            );
        }
        put(
            "body_bytes_avg",
            json!(m.body_bytes.checked_div(m.sent).unwrap_or(0)),
        );
        for (s, n) in &m.statuses {
            put(&format!("status_{s}"), json!(n));
        }
        put("acked", json!(m.acknowledged()));
        if let Some((bot, settled)) = &self.bot {
            put("handler_runs", json!(bot.handler_runs));
            put("outcomes_total", json!(bot.total()));
            for (k, v) in &bot.outcomes {
                put(&format!("outcome_{k}"), json!(v));
            }
            let rejected = bot.outcomes.get("message-rejected").copied().unwrap_or(0);
            let kept = bot.total().saturating_sub(rejected);
            put(
                "acked_without_outcome",
                json!(m.acknowledged().saturating_sub(kept)),
            );
            put(
                "outcomes_beyond_acked",
                json!(kept.saturating_sub(m.acknowledged())),
            );
            put("settled", json!(settled));
        }
        if let Some(cpu) = self.server_cpu {
            put("server_cpu_s", json!(round(cpu.as_secs_f64(), 2)));
            if m.sent > 0 {
                put(
                    "server_cpu_us_per_delivery",
                    json!(round(cpu.as_secs_f64() * 1e6 / m.sent as f64, 1)),
                );
            }
        }
        if let Some(cpu) = self.redis_cpu {
            put("redis_cpu_s", json!(round(cpu.as_secs_f64(), 2)));
            if m.sent > 0 {
                put(
                    "redis_cpu_us_per_delivery",
                    json!(round(cpu.as_secs_f64() * 1e6 / m.sent as f64, 1)),
                );
            }
        }
        if let Some(cpu) = self.loadgen_cpu {
            put("loadgen_cpu_s", json!(round(cpu.as_secs_f64(), 2)));
        }
        if let Some(r) = &self.rss {
            put("rss_start_mib", json!(round(mib(r.start_kib), 1)));
            put("rss_max_mib", json!(round(mib(r.max_kib), 1)));
            put("rss_end_mib", json!(round(mib(r.end_kib), 1)));
            put("rss_hwm_mib", json!(round(mib(r.hwm_kib), 1)));
            put(
                "rss_growth_mib",
                json!(round(mib(r.max_kib.saturating_sub(r.start_kib)), 1)),
            );
        }
        let n = self.deliveries_admitted();
        let per = |calls: u64| {
            if n == 0 {
                Value::Null
            } else {
                json!(round(calls as f64 / n as f64, 3))
            }
        };
        if let Some(cs) = &self.commandstats {
            let evalsha = cs.get("evalsha").copied().unwrap_or(0);
            let all: u64 = cs.values().sum();
            put("redis_deliveries", json!(n));
            put("redis_cmdstat_evalsha", json!(evalsha));
            put("redis_cmdstat_evalsha_per_delivery", per(evalsha));
            put("redis_cmdstat_all", json!(all));
            put("redis_cmdstat_all_per_delivery", per(all));
        }
        if let (Some(mon), Some((ack, total))) = (&self.monitor, self.redis_calls()) {
            put("redis_deliveries", json!(n));
            for (k, v) in mon {
                put(&format!("redis_sent_{k}"), json!(v));
            }
            put("redis_ack_path_calls", json!(ack));
            put("redis_total_calls", json!(total));
            put("redis_ack_path_per_delivery", per(ack));
            put("redis_other_per_delivery", per(total - ack));
            put("redis_total_per_delivery", per(total));
        }
        put("notes", json!(self.notes.join("; ")));
        Value::Object(o)
    }

    /// The report for people.
    pub fn human(&self) -> String {
        use std::fmt::Write as _;
        let m = &self.measured;
        let mut s = String::new();
        let a = &self.args;
        let load = match a.rate {
            Some(r) => format!("open loop at {r:.0}/s"),
            None => "closed loop (max rate)".to_owned(),
        };
        let _ = writeln!(
            s,
            "loadgen {}: {load}, {} connections, {:.1} s (warmup {:.1} s), {} threads, retry share {}",
            if a.label.is_empty() { "run" } else { &a.label },
            a.connections,
            a.duration,
            a.warmup,
            a.threads,
            a.retry_share
        );
        let _ = writeln!(
            s,
            "  sent {} ({} retries)  answered {}  errors {}  timeouts {}  not sent {}  avg body {} B",
            m.sent,
            m.retries,
            m.completed,
            m.errors,
            m.timeouts,
            m.not_sent,
            m.body_bytes.checked_div(m.sent).unwrap_or(0)
        );
        let statuses: Vec<String> = m
            .statuses
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(s, "  status  {}", statuses.join("  "));
        let _ = writeln!(
            s,
            "  achieved {:.0} deliveries/s over {:.2} s ({} measured)",
            m.achieved_rate(),
            m.window.as_secs_f64(),
            m.ack_us.len()
        );
        for (name, v) in [("ack latency", &m.ack_us), ("service time", &m.service_us)] {
            let _ = writeln!(
                s,
                "  {name:<12} ms  p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
                quantile_ms(v, 0.5),
                quantile_ms(v, 0.9),
                quantile_ms(v, 0.99),
                quantile_ms(v, 0.999),
                quantile_ms(v, 1.0)
            );
        }
        if let Some((bot, settled)) = &self.bot {
            let outcomes: Vec<String> = bot
                .outcomes
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            let _ = writeln!(
                s,
                "  bot     handler runs {}  outcomes {}{}",
                bot.handler_runs,
                bot.total(),
                if *settled { "" } else { " (not settled)" }
            );
            let _ = writeln!(s, "          {}", outcomes.join("  "));
            let j = self.json();
            let _ = writeln!(
                s,
                "          acknowledged {}  acknowledged without an outcome {}",
                m.acknowledged(),
                j["acked_without_outcome"]
            );
        }
        if let (Some(server), Some(own)) = (self.server_cpu, self.loadgen_cpu) {
            let _ = writeln!(
                s,
                "  cpu     server {:.2} s ({:.1} µs per delivery sent)  load generator {:.2} s",
                server.as_secs_f64(),
                server.as_secs_f64() * 1e6 / m.sent.max(1) as f64,
                own.as_secs_f64()
            );
        }
        if let Some(cpu) = self.redis_cpu {
            let _ = writeln!(
                s,
                "  cpu     redis {:.2} s ({:.1} µs per delivery sent)",
                cpu.as_secs_f64(),
                cpu.as_secs_f64() * 1e6 / m.sent.max(1) as f64,
            );
        }
        if let Some(r) = &self.rss {
            let _ = writeln!(
                s,
                "  rss     start {:.1} MiB  max {:.1} MiB  end {:.1} MiB  peak (VmHWM) {:.1} MiB  ({} samples)",
                mib(r.start_kib),
                mib(r.max_kib),
                mib(r.end_kib),
                mib(r.hwm_kib),
                r.samples
            );
        }
        let n = self.deliveries_admitted();
        if let Some(cs) = &self.commandstats {
            let list: Vec<String> = cs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            let _ = writeln!(
                s,
                "  redis   INFO commandstats over {n} deliveries (calls inside scripts included): {}",
                list.join("  ")
            );
        }
        if let (Some(mon), Some((ack, total))) = (&self.monitor, self.redis_calls()) {
            let nf = n.max(1) as f64;
            let _ = writeln!(s, "  redis   sent by clients (MONITOR), per delivery:");
            for (k, v) in mon {
                let _ = writeln!(s, "          {k:<28} {v:>9}  {:.3}", *v as f64 / nf);
            }
            let _ = writeln!(
                s,
                "          ack path (admit) {:.3}/delivery  total {:.3}/delivery",
                ack as f64 / nf,
                total as f64 / nf
            );
        }
        for note in &self.notes {
            let _ = writeln!(s, "  note: {note}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls() {
        let t = parse_url("http://127.0.0.1:3000/webhooks/slack").unwrap();
        assert_eq!(t.addr, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(t.path, "/webhooks/slack");
        assert_eq!(
            parse_url("http://localhost:8080").unwrap().addr.port(),
            8080
        );
        assert!(parse_url("http://[::1]:3000/x").is_ok());
        for bad in [
            "http://10.0.0.1:3000/x",
            "http://192.168.1.1/x",
            "http://example.com/x",
            "https://127.0.0.1/x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

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
