//! echo-bot as a child process on a free loopback port.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use chat_runtime::BoxError;
use chat_testkit::FakeSlackOAuth;
use clap::CommandFactory;
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use super::Delivery;

/// Every environment variable echo-bot reads a setting from (`--help`
/// lists them). The child gets none of them from this process: only what the
/// command sets.
fn settings() -> Vec<OsString> {
    crate::config::Args::command()
        .get_arguments()
        .filter_map(|a| a.get_env().map(OsStr::to_owned))
        .chain([OsString::from("RUST_LOG")])
        .collect()
}

/// How many free ports are tried when another process takes the one picked.
const ATTEMPTS: usize = 4;

/// How to start echo-bot: its binary, its environment, where its log goes.
#[derive(Debug, Clone)]
pub struct EchoBotCommand {
    exe: PathBuf,
    env: BTreeMap<String, String>,
    /// Variables set to a URL of echo-bot itself: variable → path.
    own_urls: BTreeMap<String, String>,
    log: Option<PathBuf>,
    ready_within: Duration,
}

impl EchoBotCommand {
    /// echo-bot at `exe` with no adapter, `RUST_LOG=info`, and nothing else
    /// from this process's environment.
    pub fn new(exe: impl Into<PathBuf>) -> Self {
        let mut env = BTreeMap::new();
        env.insert("RUST_LOG".to_owned(), "info".to_owned());
        env.insert("NO_COLOR".to_owned(), "1".to_owned());
        // The fakes listen on loopback: never through a proxy.
        env.insert("NO_PROXY".to_owned(), "127.0.0.1,localhost".to_owned());
        env.insert("no_proxy".to_owned(), "127.0.0.1,localhost".to_owned());
        Self {
            exe: exe.into(),
            env,
            own_urls: BTreeMap::new(),
            log: None,
            ready_within: Duration::from_secs(20),
        }
    }

    /// Sets an environment variable of the child.
    #[must_use]
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.insert(key.to_owned(), value.into());
        self
    }

    /// Sets `key` to the URL of `path` on the echo-bot being started
    /// (`http://127.0.0.1:{port}{path}`), known only once its port is picked:
    /// e.g. `SLACK_REDIRECT_URI`.
    #[must_use]
    pub fn env_own_url(mut self, key: &str, path: &str) -> Self {
        self.own_urls.insert(key.to_owned(), path.to_owned());
        self
    }

    /// Removes an environment variable set earlier.
    #[must_use]
    pub fn env_remove(mut self, key: &str) -> Self {
        self.env.remove(key);
        self.own_urls.remove(key);
        self
    }

    /// Mounts Slack: [`SLACK_SIGNING_SECRET`](super::SLACK_SIGNING_SECRET),
    /// [`SLACK_BOT_TOKEN`](super::SLACK_BOT_TOKEN), the bot user
    /// [`slack::BOT_USER`](super::slack::BOT_USER), and the Web API at
    /// `api_url` (a `FakeSlack`'s base URL).
    #[must_use]
    pub fn slack(self, api_url: &str) -> Self {
        self.env("SLACK_SIGNING_SECRET", super::SLACK_SIGNING_SECRET)
            .env("SLACK_BOT_TOKEN", super::SLACK_BOT_TOKEN)
            .env("SLACK_BOT_USER_ID", super::slack::BOT_USER)
            .env("SLACK_API_URL", api_url)
    }

    /// Mounts Slack in installation mode (`ECHO_INSTALLATIONS`) with the
    /// install flow against `oauth`: the signing secret, the Web API at
    /// `api_url` (a `FakeSlack`'s base URL),
    /// [`INSTALLATION_KEYS`](super::INSTALLATION_KEYS), the fake app's client
    /// id and secret, [`SLACK_STATE_SECRET`](super::SLACK_STATE_SECRET), the
    /// fake's authorize page and `oauth.v2.access` (`SLACK_OAUTH_URL`), and
    /// echo-bot's own callback URL as `SLACK_REDIRECT_URI`.
    #[must_use]
    pub fn slack_installations(self, api_url: &str, oauth: &FakeSlackOAuth) -> Self {
        let api = oauth.api_base_url();
        let base = api.strip_suffix("/api").unwrap_or(&api).to_owned();
        self.env("SLACK_SIGNING_SECRET", super::SLACK_SIGNING_SECRET)
            .env("SLACK_API_URL", api_url)
            .env("ECHO_INSTALLATIONS", "true")
            .env("INSTALLATION_KEYS", super::INSTALLATION_KEYS)
            .env("SLACK_CLIENT_ID", FakeSlackOAuth::CLIENT_ID)
            .env("SLACK_CLIENT_SECRET", FakeSlackOAuth::CLIENT_SECRET)
            .env("SLACK_STATE_SECRET", super::SLACK_STATE_SECRET)
            .env("SLACK_OAUTH_URL", base)
            .env_own_url("SLACK_REDIRECT_URI", crate::slack::CALLBACK_PATH)
    }

    /// Mounts Linear: [`LINEAR_WEBHOOK_SECRET`](super::LINEAR_WEBHOOK_SECRET),
    /// [`LINEAR_ACCESS_TOKEN`](super::LINEAR_ACCESS_TOKEN), the app user
    /// [`linear::APP_USER`](super::linear::APP_USER), and the GraphQL API at
    /// `endpoint` (a `FakeLinear`'s endpoint).
    #[must_use]
    pub fn linear(self, endpoint: &str) -> Self {
        self.env("LINEAR_WEBHOOK_SECRET", super::LINEAR_WEBHOOK_SECRET)
            .env("LINEAR_ACCESS_TOKEN", super::LINEAR_ACCESS_TOKEN)
            .env("LINEAR_APP_USER_ID", super::linear::APP_USER)
            .env("LINEAR_API_URL", endpoint)
    }

    /// Mounts Telegram: [`TELEGRAM_BOT_TOKEN`](super::TELEGRAM_BOT_TOKEN),
    /// [`TELEGRAM_SECRET_TOKEN`](super::TELEGRAM_SECRET_TOKEN) and the Bot
    /// API at `api_url` (a `FakeTelegram`'s).
    #[must_use]
    pub fn telegram(self, api_url: &str) -> Self {
        self.env("TELEGRAM_BOT_TOKEN", super::TELEGRAM_BOT_TOKEN)
            .env("TELEGRAM_SECRET_TOKEN", super::TELEGRAM_SECRET_TOKEN)
            .env("TELEGRAM_API_URL", api_url)
    }

    /// Mounts WhatsApp: [`WHATSAPP_APP_SECRET`](super::WHATSAPP_APP_SECRET),
    /// [`WHATSAPP_VERIFY_TOKEN`](super::WHATSAPP_VERIFY_TOKEN),
    /// [`WHATSAPP_ACCESS_TOKEN`](super::WHATSAPP_ACCESS_TOKEN),
    /// [`WHATSAPP_PHONE_NUMBER_ID`](super::WHATSAPP_PHONE_NUMBER_ID) and the
    /// Graph API at `api_url` (a `FakeWhatsApp`'s).
    #[must_use]
    pub fn whatsapp(self, api_url: &str) -> Self {
        self.env("WHATSAPP_APP_SECRET", super::WHATSAPP_APP_SECRET)
            .env("WHATSAPP_VERIFY_TOKEN", super::WHATSAPP_VERIFY_TOKEN)
            .env("WHATSAPP_ACCESS_TOKEN", super::WHATSAPP_ACCESS_TOKEN)
            .env("WHATSAPP_PHONE_NUMBER_ID", super::WHATSAPP_PHONE_NUMBER_ID)
            .env("WHATSAPP_API_URL", api_url)
    }

    /// GitHub with a personal token ([`GITHUB_TOKEN`](super::GITHUB_TOKEN),
    /// login [`GITHUB_LOGIN`](super::GITHUB_LOGIN)) against the REST API at
    /// `api_url`.
    #[must_use]
    pub fn github(self, api_url: &str) -> Self {
        self.env("GITHUB_WEBHOOK_SECRET", super::GITHUB_WEBHOOK_SECRET)
            .env("GITHUB_TOKEN", super::GITHUB_TOKEN)
            .env("GITHUB_LOGIN", super::GITHUB_LOGIN)
            .env("GITHUB_API_URL", api_url)
    }

    /// Writes the child's stdout and stderr (its log) to `path`; by default
    /// they are discarded.
    #[must_use]
    pub fn log_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// How long [`spawn`](Self::spawn) waits for `GET /healthz` to answer 200
    /// (default 20 s).
    #[must_use]
    pub fn ready_within(mut self, timeout: Duration) -> Self {
        self.ready_within = timeout;
        self
    }

    /// Starts echo-bot on `127.0.0.1` and a free port and waits until
    /// `GET /healthz` answers 200. The child is killed if the [`EchoBot`] is
    /// dropped without [`terminate`](EchoBot::terminate).
    pub async fn spawn(self) -> Result<EchoBot, BoxError> {
        if !self.exe.is_file() {
            return Err(format!("echo-bot not found at {}", self.exe.display()).into());
        }
        let http = reqwest::Client::builder()
            .no_proxy()
            // Redirects (the install flow's) are answers to look at.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            // echo-bot closes a kept-alive connection that sends nothing for
            // its header read timeout (2 s; 300 ms in the slow-client test);
            // a connection reused just as it closes fails mid-request, so
            // idle ones are dropped well before.
            .pool_idle_timeout(Duration::from_millis(100))
            .build()?;
        let mut last_error = String::new();
        for _ in 0..ATTEMPTS {
            let addr = free_port()?;
            let child = self
                .command(addr)?
                .spawn()
                .map_err(|e| format!("cannot start echo-bot at {}: {e}", self.exe.display()))?;
            let pid = child.id().unwrap_or_default();
            let mut bot = EchoBot {
                child,
                pid,
                addr,
                http: http.clone(),
                log: self.log.clone(),
            };
            match bot.wait_ready(self.ready_within).await {
                Ok(()) => return Ok(bot),
                Err(Early::Exited(status)) => {
                    let tail = bot.log_tail(20);
                    last_error = format!("echo-bot exited with {status} before it was ready{tail}");
                    // Another process may have taken the port: try another.
                    if !tail.contains("in use") {
                        break;
                    }
                }
                Err(Early::TimedOut) => {
                    bot.kill().await;
                    return Err(format!(
                        "echo-bot did not answer GET /healthz within {:?}{}",
                        self.ready_within,
                        bot.log_tail(20)
                    )
                    .into());
                }
            }
        }
        Err(last_error.into())
    }

    fn command(&self, addr: SocketAddr) -> Result<Command, BoxError> {
        let mut c = Command::new(&self.exe);
        for key in settings() {
            c.env_remove(key);
        }
        c.envs(&self.env)
            .envs(
                self.own_urls
                    .iter()
                    .map(|(key, path)| (key, format!("http://{addr}{path}"))),
            )
            .env("BIND", addr.to_string())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        match &self.log {
            Some(path) => {
                let file = File::create(path)
                    .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                c.stdout(file.try_clone()?).stderr(file);
            }
            None => {
                c.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        Ok(c)
    }
}

enum Early {
    Exited(ExitStatus),
    TimedOut,
}

/// A free port on `127.0.0.1` (free when asked; echo-bot binds it next).
fn free_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()
}

/// A running echo-bot.
#[derive(Debug)]
pub struct EchoBot {
    child: Child,
    pid: u32,
    addr: SocketAddr,
    http: reqwest::Client,
    log: Option<PathBuf>,
}

/// One HTTP answer of echo-bot.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body, as text.
    pub body: String,
    /// Every header, names in lower case, in order.
    pub headers: Vec<(String, String)>,
}

impl Answer {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }
}

/// How echo-bot stopped.
#[derive(Debug, Clone, Copy)]
pub struct Stopped {
    /// Its exit status.
    pub status: ExitStatus,
    /// How long after the signal it exited.
    pub after: Duration,
}

impl EchoBot {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `http://{addr}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Where its log goes, if anywhere.
    pub fn log_path(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    async fn wait_ready(&mut self, timeout: Duration) -> Result<(), Early> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Early::Exited(status));
            }
            if self
                .get("/healthz")
                .await
                .is_ok_and(|answer| answer.status == 200)
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Early::TimedOut);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// POSTs a delivery and reads the whole answer.
    pub async fn deliver(&self, delivery: &Delivery) -> Result<Answer, BoxError> {
        let mut request = self.http.post(self.url(&delivery.path));
        for (name, value) in &delivery.headers {
            request = request.header(name, value);
        }
        answer(request.body(delivery.body.clone()).send().await?).await
    }

    /// A GET of `path`. Redirects are not followed: a `302` is the answer.
    pub async fn get(&self, path: &str) -> Result<Answer, BoxError> {
        self.get_url(&self.url(path), &[]).await
    }

    /// A GET of a full `url` with `headers` (a cookie, say), not following
    /// redirects.
    pub async fn get_url(&self, url: &str, headers: &[(&str, &str)]) -> Result<Answer, BoxError> {
        let mut request = self.http.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        answer(request.send().await?).await
    }

    /// `GET /stats`, as JSON.
    pub async fn stats(&self) -> Result<Value, BoxError> {
        let answer = self.get("/stats").await?;
        if answer.status != 200 {
            return Err(format!("GET /stats answered {}", answer.status).into());
        }
        answer
            .json()
            .ok_or_else(|| format!("GET /stats is not JSON: {}", answer.body).into())
    }

    /// Waits (bounded) until `GET /stats` shows at least `count` outcomes of
    /// `outcome` and no detached work in flight; returns the last stats read.
    pub async fn wait_for_outcomes(
        &self,
        outcome: &str,
        count: u64,
        timeout: Duration,
    ) -> Result<Value, BoxError> {
        let deadline = Instant::now() + timeout;
        loop {
            let stats = self.stats().await?;
            let seen = stats["outcomes"][outcome].as_u64().unwrap_or(0);
            if seen >= count && stats["in_flight"].as_u64() == Some(0) {
                return Ok(stats);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "after {timeout:?}, {seen} of {count} {outcome} outcomes; stats: {stats}"
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM (on Unix, with `kill -TERM`; elsewhere it is killed).
    pub async fn signal_terminate(&mut self) -> Result<(), BoxError> {
        #[cfg(unix)]
        {
            let status = Command::new("kill")
                .arg("-TERM")
                .arg(self.pid.to_string())
                .stdin(Stdio::null())
                .status()
                .await?;
            if !status.success() {
                return Err(format!("kill -TERM {} failed: {status}", self.pid).into());
            }
        }
        #[cfg(not(unix))]
        self.child.start_kill()?;
        Ok(())
    }

    /// Waits up to `timeout` for it to exit.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Sends SIGTERM and waits up to `within` for it to exit; kills it and
    /// fails when it does not.
    pub async fn terminate(&mut self, within: Duration) -> Result<Stopped, BoxError> {
        if let Some(status) = self.exited() {
            return Err(format!("echo-bot had already exited with {status}").into());
        }
        let signalled = Instant::now();
        self.signal_terminate().await?;
        match self.wait_exit(within).await {
            Some(status) => Ok(Stopped {
                status,
                after: signalled.elapsed(),
            }),
            None => {
                self.kill().await;
                Err(format!("echo-bot did not exit within {within:?} of SIGTERM").into())
            }
        }
    }

    /// Kills it (SIGKILL) and reaps it.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// The last `lines` lines of its log, indented, after a newline; empty
    /// when there is no log.
    pub fn log_tail(&self, lines: usize) -> String {
        let Some(text) = self
            .log
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
        else {
            return String::new();
        };
        let all: Vec<&str> = text.lines().collect();
        let tail = &all[all.len().saturating_sub(lines)..];
        if tail.is_empty() {
            return String::new();
        }
        let mut out = String::from("\n  echo-bot log (last lines):");
        for line in tail {
            out.push_str("\n    ");
            out.push_str(line);
        }
        out
    }
}

async fn answer(response: reqwest::Response) -> Result<Answer, BoxError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let headers = response
        .headers()
        .iter()
        .filter_map(|(name, value)| {
            value
                .to_str()
                .ok()
                .map(|v| (name.as_str().to_owned(), v.to_owned()))
        })
        .collect();
    let body = response.text().await?;
    Ok(Answer {
        status,
        content_type,
        body,
        headers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_setting_is_inherited() {
        let names = settings();
        for var in [
            "BIND",
            "REDIS_URL",
            "CHAT_CONCURRENCY",
            "ECHO_DELAY_MS",
            "RUST_LOG",
        ] {
            assert!(names.iter().any(|n| n == var), "{var}");
        }
    }
}
