//! The processes of a scenario: a throwaway Redis it may pause, stop, kill and
//! restart, and echo-bot replicas it may SIGTERM or SIGKILL.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A free loopback port (best effort: bound and released).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Runs `redis-cli -p PORT args…`, returning its output.
pub async fn redis_cli(port: u16, args: &[&str]) -> std::io::Result<String> {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .await?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A redis-server of the scenario's own.
pub struct Redis {
    /// Its port.
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Redis {
    /// Starts one on a free port, keeping nothing on disk.
    pub async fn start(dir: &Path) -> std::io::Result<Self> {
        let mut r = Self {
            port: free_port()?,
            dir: dir.to_path_buf(),
            child: None,
        };
        r.spawn().await?;
        Ok(r)
    }

    async fn spawn(&mut self) -> std::io::Result<()> {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--maxmemory-policy", "noeviction"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        self.child = Some(child);
        for _ in 0..100 {
            if redis_cli(self.port, &["PING"]).await?.trim() == "PONG" {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(std::io::Error::other("redis-server did not answer"))
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `CLIENT PAUSE ms WRITE`: writes (and key expiry) stall.
    pub async fn pause_writes(&self, ms: u64) -> std::io::Result<()> {
        redis_cli(self.port, &["CLIENT", "PAUSE", &ms.to_string(), "WRITE"])
            .await
            .map(drop)
    }

    fn signal(&self, sig: &str) -> std::io::Result<()> {
        if let Some(pid) = self.child.as_ref().and_then(Child::id) {
            std::process::Command::new("kill")
                .args([sig, &pid.to_string()])
                .status()?;
        }
        Ok(())
    }

    /// SIGSTOP: the server stops answering.
    pub fn stop(&self) -> std::io::Result<()> {
        self.signal("-STOP")
    }

    /// SIGCONT.
    pub fn resume(&self) -> std::io::Result<()> {
        self.signal("-CONT")
    }

    /// SIGKILL, then a fresh empty server on the same port.
    pub async fn restart_empty(&mut self) -> std::io::Result<()> {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
        self.spawn().await
    }

    /// Keys matching `pattern`.
    pub async fn keys(&self, pattern: &str) -> std::io::Result<Vec<String>> {
        Ok(redis_cli(self.port, &["--scan", "--pattern", pattern])
            .await?
            .lines()
            .map(str::to_owned)
            .collect())
    }
}

/// One echo-bot process.
pub struct Replica {
    /// Its name in the ledger.
    pub name: String,
    /// Its port.
    pub port: u16,
    child: Option<Child>,
}

impl Replica {
    /// Starts echo-bot with `env`, and waits until `GET /healthz` answers.
    pub async fn start(bin: &Path, name: &str, env: &[(String, String)]) -> std::io::Result<Self> {
        let port = free_port()?;
        let child = Command::new(bin)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("BIND", format!("127.0.0.1:{port}"))
            .env("REPLICA", name)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let r = Self {
            name: name.to_owned(),
            port,
            child: Some(child),
        };
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(resp) = client.get(format!("{}/healthz", r.base())).send().await
                && resp.status().is_success()
            {
                return Ok(r);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(std::io::Error::other(format!(
            "replica {name} did not come up"
        )))
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL: in-flight work is lost.
    pub async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
    }

    /// SIGTERM, and waits for a clean exit (bounded).
    pub async fn terminate(&mut self, within: Duration) -> bool {
        let Some(mut c) = self.child.take() else {
            return true;
        };
        if let Some(pid) = c.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        match tokio::time::timeout(within, c.wait()).await {
            Ok(Ok(status)) => status.success(),
            _ => {
                let _ = c.kill().await;
                false
            }
        }
    }

    /// Whether the process is running.
    pub fn alive(&self) -> bool {
        self.child.is_some()
    }
}
