//! Running one load: echo-bot, the fake Slack Web API and the load generator
//! as processes of ours, and the figures a run reports.

use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use chat_test_postgres::PostgresServer;
use chat_test_redis::{RedisCluster, RedisServer};
use serde_json::Value;

use super::report::{fl, git_rev, int, machine, num, utc_now};
use super::{BOT_USER, Backend, Figures, SECRET, target_dir};
use crate::cmd::{cargo, is_ci};
use crate::redis;

/// A process of ours, killed (by its id) when dropped.
pub(super) struct Owned(pub(super) Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn free_port() -> Result<u16, String> {
    Ok(chat_test_redis::free_ports(1, false)?[0])
}

/// One load against a fresh echo-bot.
pub(super) struct Run {
    pub(super) label: String,
    pub(super) backend: Backend,
    /// echo-bot settings (`CHAT_*`, `ECHO_DELAY_MS`).
    pub(super) env: Vec<(&'static str, String)>,
    /// `loadgen run` arguments besides the URL and pid.
    pub(super) load: Vec<String>,
    /// Longest the load may take (the watchdog's limit).
    pub(super) limit: Duration,
    /// Another server in echo-bot's place (program and arguments), given the
    /// same environment: the TypeScript SDK's bot of the `reply` scenario.
    pub(super) server: Option<Vec<String>>,
    /// The bot on core 1, and the load generator and the fake Slack Web API on
    /// core 0 (`taskset`), when the machine has two cores and `taskset`;
    /// otherwise unpinned, and the report says so.
    pub(super) pinned: bool,
}

/// Finished loads: label, backend and figures of each.
pub(super) type Done = Vec<(String, Backend, Figures)>;

impl Run {
    /// A load of echo-bot's own with `env`, unpinned.
    pub(super) fn bot(
        label: &str,
        backend: Backend,
        env: Vec<(&'static str, String)>,
        (load, limit): (Vec<String>, Duration),
    ) -> Self {
        Self {
            label: label.to_owned(),
            backend,
            env,
            load,
            limit,
            server: None,
            pinned: false,
        }
    }
}

/// While it lives, a running process's threads share core 0 with the load
/// generator (`taskset -a -p`): for a pinned run, the fake Slack Web API
/// that the bot's replies go to. On drop its threads may run on every core
/// again.
struct PinnedAside(u32);

impl PinnedAside {
    fn new(pid: u32) -> Option<Self> {
        set_affinity(pid, "0").then_some(Self(pid))
    }
}

impl Drop for PinnedAside {
    fn drop(&mut self) {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        set_affinity(self.0, &format!("0-{}", cores.saturating_sub(1)));
    }
}

/// `taskset -a -p -c <cores> <pid>`: every thread of `pid` on `cores`.
fn set_affinity(pid: u32, cores: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", cores, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `taskset -c <core>` when a run is pinned and pinning is possible.
fn pin(pinned: bool, core: u32) -> Option<Vec<String>> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let taskset = Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (pinned && cores >= 2 && taskset)
        .then(|| vec!["taskset".to_owned(), "-c".to_owned(), core.to_string()])
}

pub(super) struct Bench {
    pub(super) quick: bool,
    pub(super) out: PathBuf,
    pub(super) bin: PathBuf,
    pub(super) slack_url: String,
    pub(super) fake_slack: Option<Owned>,
    pub(super) redis: Option<RedisServer>,
    pub(super) cluster: Option<RedisCluster>,
    pub(super) postgres: Option<PostgresServer>,
    pub(super) results: fs::File,
}

/// A setting's value as text.
#[allow(clippy::needless_pass_by_value)] // numbers and literals, converted once
pub(super) fn s(v: impl ToString) -> String {
    v.to_string()
}

impl Bench {
    pub(super) fn start(quick: bool, out: PathBuf, chosen: &[&str]) -> Result<Self, String> {
        let needs_load = chosen
            .iter()
            .any(|s| !matches!(*s, "micro" | "state-bytes"));
        let needs_redis = chosen
            .iter()
            .any(|s| matches!(*s, "backends" | "redis-calls" | "micro" | "ai"));
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
        // A cluster of three masters for the backends scenario's cluster run.
        let cluster = if chosen.contains(&"backends") && redis.is_some() {
            let c = RedisCluster::start(CLUSTER_MASTERS)?;
            println!("bench: Redis Cluster on ports {:?}", c.ports());
            Some(c)
        } else {
            None
        };
        let postgres = if chosen.contains(&"backends") {
            if chat_test_postgres::tools_installed() {
                let p = PostgresServer::start()?;
                // Per-function call counts: the ack path's statements.
                p.psql("ALTER SYSTEM SET track_functions = 'pl'")?;
                p.psql("SELECT pg_reload_conf()")?;
                println!("bench: PostgreSQL on {}", p.url());
                Some(p)
            } else if is_ci() {
                return Err("PostgreSQL is needed (apt-get install postgresql)".to_owned());
            } else {
                println!(
                    "\n!!! bench: initdb/pg_ctl not found: the PostgreSQL runs are SKIPPED \
                     (apt-get install postgresql)\n"
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
            cluster,
            postgres,
            results,
        })
    }

    /// The report's header: machine, commit, date, mode.
    pub(super) fn header(&self, chosen: &[&str]) -> String {
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

    pub(super) fn secs(&self, full: f64) -> (f64, f64) {
        if self.quick { (2.0, 0.5) } else { (full, 2.0) }
    }

    /// Load arguments: duration and warmup, and an open-loop rate if any.
    pub(super) fn load(
        &self,
        rate: Option<f64>,
        full_secs: f64,
        extra: &[&str],
    ) -> (Vec<String>, Duration) {
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

    pub(super) fn run_one(&mut self, run: &Run) -> Result<Figures, String> {
        let redis_url = match run.backend {
            Backend::Memory | Backend::Postgres | Backend::RedisCluster => None,
            Backend::Redis => {
                let r = self.redis.as_ref().ok_or("no redis-server")?;
                r.command(&["FLUSHALL"])?;
                Some(r.url())
            }
        };
        let cluster = match run.backend {
            Backend::RedisCluster => {
                let c = self.cluster.as_ref().ok_or("no Redis Cluster")?;
                for port in c.ports() {
                    chat_test_redis::command(*port, &["FLUSHALL"])?;
                }
                Some(c)
            }
            _ => None,
        };
        // PostgreSQL: a schema of the run's own, so what it holds after the
        // run is this run's; statistics from zero.
        let schema = format!(
            "bench_{}",
            run.label
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                })
                .collect::<String>()
        );
        let postgres = match run.backend {
            Backend::Postgres => {
                let p = self.postgres.as_ref().ok_or("no PostgreSQL")?;
                p.psql("SELECT pg_stat_reset()")?;
                Some(p)
            }
            _ => None,
        };
        let port = free_port()?;
        let log_path = self.out.join(format!("{}.echo-bot.log", run.label));
        let log =
            fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        // BENCH_ECHO_BOT: another build of echo-bot (an earlier commit's), for
        // before/after figures measured in one session.
        let echo_bot = self.echo_bot();
        let bot_pin = pin(run.pinned, 1);
        let mut c = match (run.server.as_deref(), &bot_pin) {
            (Some([program, args @ ..]), _) => {
                let mut c = Command::new(program);
                c.args(args);
                c
            }
            (_, Some(taskset)) => {
                let mut c = Command::new(&taskset[0]);
                c.args(&taskset[1..]).arg(echo_bot);
                c
            }
            _ => Command::new(echo_bot),
        };
        self.bot_env(&mut c, port)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        if let Some(url) = &redis_url {
            c.env("REDIS_URL", url);
        }
        if let Some(cluster) = cluster {
            c.env("REDIS_CLUSTER_URLS", cluster.urls().join(","));
        }
        if let Some(p) = postgres {
            c.env("DATABASE_URL", p.url())
                .env("DATABASE_SCHEMA", &schema);
        }
        for (k, v) in &run.env {
            c.env(k, v);
        }
        let child = Owned(c.spawn().map_err(|e| format!("starting echo-bot: {e}"))?);
        let pid = child.0.id();
        wait_healthy(port, Duration::from_secs(20))?;
        // The empty schema's size (migrated at start), and the server's CPU.
        let redis_bytes = |b: Backend| match (b, self.redis.as_ref()) {
            (Backend::Redis, Some(r)) => r.info("memory", "used_memory").ok().map(|v| v as f64),
            _ => None,
        };
        let redis_before = redis_bytes(run.backend);
        let pg_before = match postgres {
            Some(p) => Some((schema_bytes(p, &schema)?, pg_cpu_secs(p))),
            None => None,
        };

        // BENCH_LOADGEN: another build of the load generator, likewise.
        let loadgen = std::env::var_os("BENCH_LOADGEN")
            .map_or_else(|| self.bin.join("loadgen"), PathBuf::from);
        let mut l = match pin(run.pinned, 0) {
            Some(taskset) => {
                let mut l = Command::new(&taskset[0]);
                l.args(&taskset[1..]).arg(loadgen);
                l
            }
            None => Command::new(loadgen),
        };
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
        // A pinned run gives the bot a core of its own: the fake Slack, which
        // its replies wake, runs beside the load generator.
        let _fake_aside = fake_pid
            .filter(|_| bot_pin.is_some())
            .and_then(PinnedAside::new);
        let fake_before = fake_pid.and_then(cpu_secs);
        let nodes_before = cluster.map(|c| node_cpu_secs(c.ports()));
        let (ok, stdout, stderr) = run_bounded(l, run.limit)?;
        let nodes_cpu = match (cluster, nodes_before) {
            (Some(c), Some(before)) => Some(
                node_cpu_secs(c.ports())
                    .iter()
                    .zip(before)
                    .map(|(after, before)| after - before)
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        };
        let fake_cpu = match (fake_pid.and_then(cpu_secs), fake_before) {
            (Some(after), Some(before)) => Some(after - before),
            _ => None,
        };
        // The bot's own view of its ack latency, before it stops: what it
        // spent, apart from the time a request waited to be read.
        let metrics = run.server.is_none().then(|| scrape(port)).flatten();
        let server_ack = metrics
            .as_deref()
            .and_then(|text| histogram_quantile(text, "chat_ack_duration_seconds", 0.99));
        // Hand-overs (what waited behind a running handler) and lease renewals.
        let mut from_metrics = Vec::new();
        if let Some(text) = metrics.as_deref() {
            for (key, q) in [("handoff_p50_s_le", 0.5), ("handoff_p99_s_le", 0.99)] {
                if let Some(v) = histogram_quantile(text, "chat_handoff_duration_seconds", q) {
                    from_metrics.push((key, v));
                }
            }
            for (key, name) in [
                ("handoffs", "chat_handoff_duration_seconds_count{"),
                (
                    "renewals",
                    "chat_state_call_duration_seconds_count{op=\"renew\"",
                ),
            ] {
                let n: f64 = text
                    .lines()
                    .filter(|l| l.starts_with(name))
                    .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
                    .fold(0.0, |a, b| a + b);
                from_metrics.push((key, n));
            }
        }
        let pg_cpu = postgres.map(pg_cpu_secs);
        let redis_after = redis_bytes(run.backend);
        drop(child);
        // Its connections closed, each server process has flushed its
        // statistics on exit.
        let pg_after = match postgres {
            Some(p) => {
                std::thread::sleep(Duration::from_millis(500));
                let calls = pg_calls(p, &schema)?;
                let on_disk = schema_bytes(p, &schema)?;
                // What the live rows take, without the dead versions that
                // vacuum reclaims for reuse.
                let tables = p.psql(&format!(
                    "SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') \
                     FROM pg_tables WHERE schemaname = '{schema}'"
                ))?;
                p.psql(&format!("VACUUM FULL {tables}"))?;
                Some((on_disk, schema_bytes(p, &schema)?, calls))
            }
            None => None,
        };
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
        let (line, mut figures) = loadgen_figures(&stdout, &run.label)?;
        let _ = writeln!(self.results, "{line}");
        figures.insert("pinned".to_owned(), Value::Bool(bot_pin.is_some()));
        for (key, v) in from_metrics {
            figures.insert(key.to_owned(), Value::from(v));
        }
        // CPU per delivery of the other two processes on the machine.
        let sent = fl(&figures, "sent").max(1.0);
        if let Some(cpu) = fake_cpu {
            figures.insert(
                "fake_slack_cpu_us_per_delivery".to_owned(),
                Value::from(cpu * 1e6 / sent),
            );
        }
        if let (Some((bytes_before, cpu_before)), Some((on_disk, live, calls)), Some(cpu_after)) =
            (pg_before, pg_after, pg_cpu)
        {
            figures.insert(
                "pg_disk_bytes_per_delivery".to_owned(),
                Value::from((on_disk - bytes_before) / sent),
            );
            figures.insert(
                "store_cpu_us_per_delivery".to_owned(),
                Value::from((cpu_after - cpu_before) * 1e6 / sent),
            );
            figures.insert(
                "store_bytes_per_delivery".to_owned(),
                Value::from((live - bytes_before) / sent),
            );
            let (admit, functions, transactions) = calls;
            figures.insert(
                "pg_admit_per_delivery".to_owned(),
                Value::from(admit / sent),
            );
            figures.insert(
                "pg_functions_per_delivery".to_owned(),
                Value::from(functions / sent),
            );
            figures.insert(
                "pg_transactions_per_delivery".to_owned(),
                Value::from(transactions / sent),
            );
        }
        if let (Some(before), Some(after)) = (redis_before, redis_after) {
            figures.insert(
                "store_bytes_per_delivery".to_owned(),
                Value::from((after - before) / sent),
            );
        }
        if let Some(cpu) = nodes_cpu {
            // Each master's CPU over the whole load's deliveries: their sum is
            // the cluster's cost of a delivery, the largest the busiest
            // master's share of it.
            let per = |secs: f64| secs * 1e6 / sent;
            let total: f64 = cpu.iter().sum();
            let busiest = cpu.iter().copied().fold(0.0, f64::max);
            figures.insert(
                "cluster_cpu_us_per_delivery".to_owned(),
                Value::from(per(total)),
            );
            figures.insert(
                "cluster_busiest_node_cpu_us_per_delivery".to_owned(),
                Value::from(per(busiest)),
            );
            figures.insert(
                "cluster_node_cpu_us_per_delivery".to_owned(),
                Value::from(cpu.iter().map(|c| per(*c)).collect::<Vec<_>>()),
            );
            figures.insert(
                "store_cpu_us_per_delivery".to_owned(),
                Value::from(per(total)),
            );
        }
        if let Some(cpu) = figures.get("redis_cpu_us_per_delivery").cloned() {
            figures.insert("store_cpu_us_per_delivery".to_owned(), cpu);
        }
        if let Some(p99) = server_ack {
            figures.insert("server_ack_p99_ms_le".to_owned(), Value::from(p99 * 1e3));
        }
        let loadgen = fl(&figures, "loadgen_cpu_s");
        figures.insert(
            "loadgen_cpu_us_per_delivery".to_owned(),
            Value::from(loadgen * 1e6 / sent),
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

    /// echo-bot's environment in every run: its address, the bench's Slack
    /// app and fake Web API, warnings only; nothing inherited but `PATH`.
    pub(super) fn bot_env<'c>(&self, c: &'c mut Command, port: u16) -> &'c mut Command {
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("BIND", format!("127.0.0.1:{port}"))
            .env("SLACK_SIGNING_SECRET", SECRET)
            .env("SLACK_BOT_TOKEN", "xoxb-bench")
            .env("SLACK_BOT_USER_ID", BOT_USER)
            .env("SLACK_API_URL", &self.slack_url)
            .env("RUST_LOG", "warn")
    }

    /// The echo-bot binary: this build's, or `BENCH_ECHO_BOT`'s.
    pub(super) fn echo_bot(&self) -> PathBuf {
        std::env::var_os("BENCH_ECHO_BOT").map_or_else(|| self.bin.join("echo-bot"), PathBuf::from)
    }

    /// One load, or `None` with the section `t` saying it was skipped (its
    /// backend's server is missing).
    pub(super) fn single(
        &mut self,
        run: &Run,
        t: &mut String,
    ) -> Result<Option<(Done, Figures)>, String> {
        let done = self.runs(std::slice::from_ref(run))?;
        match done.first().map(|(_, _, f)| f.clone()) {
            Some(f) => Ok(Some((done, f))),
            None => {
                t.push_str("skipped: no redis-server\n");
                Ok(None)
            }
        }
    }

    pub(super) fn runs(&mut self, runs: &[Run]) -> Result<Done, String> {
        let mut done = Vec::new();
        for r in runs {
            if r.backend == Backend::Redis && self.redis.is_none() {
                println!("bench: {:<28} SKIPPED (no redis-server)", r.label);
                continue;
            }
            if r.backend == Backend::RedisCluster && self.cluster.is_none() {
                println!("bench: {:<28} SKIPPED (no redis-server)", r.label);
                continue;
            }
            if r.backend == Backend::Postgres && self.postgres.is_none() {
                println!("bench: {:<28} SKIPPED (no PostgreSQL)", r.label);
                continue;
            }
            done.push((r.label.clone(), r.backend, self.run_one(r)?));
        }
        Ok(done)
    }
}

/// Masters of the bench's Redis Cluster.
const CLUSTER_MASTERS: usize = 3;

/// Each node's CPU time so far (`INFO cpu`, user + system), in seconds; 0 for
/// a node that does not answer.
fn node_cpu_secs(ports: &[u16]) -> Vec<f64> {
    ports
        .iter()
        .map(|port| {
            chat_test_redis::command(*port, &["INFO", "cpu"])
                .map_or(0.0, |info| chat_test_redis::cpu_secs(&info))
        })
        .collect()
}

/// The bytes `schema`'s tables hold, indexes and TOAST included.
fn schema_bytes(p: &PostgresServer, schema: &str) -> Result<f64, String> {
    let text = p.psql(&format!(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = '{schema}' AND c.relkind = 'r'"
    ))?;
    text.parse().map_err(|e| format!("{text:?}: {e}"))
}

/// CPU seconds of every process of the server.
fn pg_cpu_secs(p: &PostgresServer) -> f64 {
    p.pids()
        .unwrap_or_default()
        .into_iter()
        .filter_map(cpu_secs)
        .sum()
}

/// Since the statistics were reset: calls of `schema.admit` (the ack
/// path), of every public function of `schema` (the helpers, named `_…`,
/// and `now_ms` left out), and transactions committed in the database
/// (one per statement the bot sent).
fn pg_calls(p: &PostgresServer, schema: &str) -> Result<(f64, f64, f64), String> {
    let text = p.psql(&format!(
        "SELECT coalesce(sum(calls) FILTER (WHERE funcname = 'admit'), 0), \
         coalesce(sum(calls) FILTER (WHERE funcname NOT LIKE '\\_%' AND funcname <> 'now_ms'), 0), \
         (SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres') \
         FROM pg_stat_user_functions WHERE schemaname = '{schema}'"
    ))?;
    let v: Vec<f64> = text
        .split('|')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    match v[..] {
        [a, f, t] => Ok((a, f, t)),
        _ => Err(format!("pg_stat_user_functions: {text:?}")),
    }
}

/// Starts the fake Slack Web API; returns it and its base URL.
pub(super) fn fake_slack(bin: &Path) -> Result<(Owned, String), String> {
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
pub(super) fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Waits until echo-bot answers `GET /healthz` with 200.
/// `GET /metrics` of the bot on `port`, as text.
fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}

/// The upper bound of the bucket holding quantile `q` of a Prometheus
/// histogram (`name_bucket{…,le="…"} count` lines, summed over labels):
/// "at most this many seconds".
pub(super) fn histogram_quantile(text: &str, name: &str, q: f64) -> Option<f64> {
    let prefix = format!("{name}_bucket{{");
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    for line in text.lines().filter(|l| l.starts_with(&prefix)) {
        let (key, count) = line.rsplit_once(' ')?;
        let le = key.split("le=\"").nth(1)?.split('"').next()?;
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().ok()?
        };
        let count: f64 = count.parse().ok()?;
        match buckets.iter_mut().find(|(b, _)| *b == le) {
            Some((_, c)) => *c += count,
            None => buckets.push((le, count)),
        }
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    buckets
        .into_iter()
        .find(|(_, c)| *c >= q * total && total > 0.0)
        .map(|(le, _)| le)
}

pub(super) fn wait_healthy(port: u16, limit: Duration) -> Result<(), String> {
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

/// The figures of a load: the last JSON line loadgen printed, and its parse.
pub(super) fn loadgen_figures<'a>(
    stdout: &'a str,
    label: &str,
) -> Result<(&'a str, Figures), String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("no JSON line from loadgen for {label}"))?;
    let figures =
        serde_json::from_str(line).map_err(|e| format!("loadgen's JSON line for {label}: {e}"))?;
    Ok((line, figures))
}

/// Runs a command with its output captured, killing it past `limit`.
pub(super) fn run_bounded(
    mut c: Command,
    limit: Duration,
) -> Result<(bool, String, String), String> {
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

#[cfg(test)]
mod tests {
    use super::histogram_quantile;

    #[test]
    fn a_quantile_is_the_bound_of_the_bucket_that_reaches_it() {
        let text = "\
# TYPE chat_ack_duration_seconds histogram
chat_ack_duration_seconds_bucket{platform=\"slack\",le=\"0.001\"} 90
chat_ack_duration_seconds_bucket{platform=\"slack\",le=\"0.005\"} 99
chat_ack_duration_seconds_bucket{platform=\"slack\",le=\"0.01\"} 100
chat_ack_duration_seconds_bucket{platform=\"slack\",le=\"+Inf\"} 100
chat_ack_duration_seconds_count{platform=\"slack\"} 100
";
        let q = |q| histogram_quantile(text, "chat_ack_duration_seconds", q);
        assert_eq!(q(0.5), Some(0.001));
        assert_eq!(q(0.99), Some(0.005));
        assert_eq!(q(1.0), Some(0.01));
        assert_eq!(histogram_quantile(text, "other", 0.99), None);
    }
}
