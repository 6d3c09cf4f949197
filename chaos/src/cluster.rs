//! The processes of a scenario: a throwaway Redis (from `chat-test-redis`) it
//! may pause, stop, kill and restart, and echo-bot replicas it may SIGTERM or
//! SIGKILL.

use std::path::Path;
use std::time::Duration;

use examples::drive::{EchoBot, EchoBotCommand};

/// A free loopback port (best effort: bound and released).
pub fn free_port() -> std::io::Result<u16> {
    chat_test_redis::free_ports(1, false)
        .map(|p| p[0])
        .map_err(std::io::Error::other)
}

/// The scenario's own throwaway Redis, which it may pause, stop, kill and
/// restart. Its calls block briefly; the harness runs on a multi-threaded runtime.
pub use chat_test_redis::RedisServer as Redis;

/// The environment of a replica that answers signed Slack deliveries on Redis
/// at `redis_url` under `prefix`, with deferred dispatch and a Web API that
/// does not answer (the scenarios that use it look at acknowledgements only).
pub fn door_env(redis_url: &str, prefix: &str) -> Vec<(String, String)> {
    [
        ("SLACK_SIGNING_SECRET", crate::sender::SECRET),
        ("SLACK_BOT_TOKEN", "xoxb-chaos"),
        ("SLACK_BOT_USER_ID", crate::sender::BOT),
        ("SLACK_API_URL", "http://127.0.0.1:9/api"),
        ("REDIS_URL", redis_url),
        ("REDIS_PREFIX", prefix),
        ("CHAT_DISPATCH", "deferred"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// One echo-bot replica, started and stopped by `examples`'s process driver.
#[derive(Debug)]
pub struct Replica {
    /// Its name in the ledger.
    pub name: String,
    /// Its port.
    pub port: u16,
    bot: Option<EchoBot>,
}

impl Replica {
    /// Starts echo-bot with `env`, and waits until `GET /healthz` answers.
    pub async fn start(bin: &Path, name: &str, env: &[(String, String)]) -> std::io::Result<Self> {
        let mut command = EchoBotCommand::new(bin)
            .env("REPLICA", name)
            .env("RUST_LOG", "warn")
            .ready_within(Duration::from_secs(10));
        for (key, value) in env {
            command = command.env(key, value.as_str());
        }
        let bot = command
            .spawn()
            .await
            .map_err(|e| std::io::Error::other(format!("replica {name}: {e}")))?;
        Ok(Self {
            name: name.to_owned(),
            port: bot.addr().port(),
            bot: Some(bot),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL: in-flight work is lost.
    pub async fn kill(&mut self) {
        if let Some(mut bot) = self.bot.take() {
            bot.kill().await;
        }
    }

    /// SIGTERM, and waits for a clean exit (bounded); whether it exited cleanly.
    pub async fn terminate(&mut self, within: Duration) -> bool {
        let Some(mut bot) = self.bot.take() else {
            return true;
        };
        bot.terminate(within)
            .await
            .is_ok_and(|stopped| stopped.status.success())
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.bot.as_ref().map(EchoBot::pid)
    }

    /// Open file descriptors and resident memory (KiB), from `/proc`.
    pub fn usage(&self) -> Option<(usize, u64)> {
        let pid = self.pid()?;
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())?;
        Some((fds, rss))
    }

    /// Whether the process is running.
    pub fn alive(&self) -> bool {
        self.bot.is_some()
    }
}
