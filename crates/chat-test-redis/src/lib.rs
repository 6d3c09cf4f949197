//! # chat-test-redis
//!
//! The one place chat-rs's tests, benchmarks and chaos runs get their Redis
//! servers from. Blocking and dependency-light (std and `redis`), so `xtask`
//! can use it as well as async tests.
//!
//! * **Find** the servers the environment names ([`single_url`],
//!   [`cluster_urls`]): `REDIS_URL` and `REDIS_CLUSTER_URLS`. Without them a
//!   test skips with a loud notice, except under `CI=true`, where it fails.
//! * **Start** throwaway ones on free loopback ports, without persistence, each
//!   in a temporary directory of its own: [`RedisServer`] (which a chaos run can
//!   pause, stop, resume and restart empty) and [`RedisCluster`] (masters only).
//!   Both stop and clean up when dropped.
//! * Give each test a key prefix of its own ([`unique_prefix`]): nothing is ever
//!   flushed on a server the caller did not start.
//!
//! ```no_run
//! # fn main() -> Result<(), chat_test_redis::Error> {
//! let server = chat_test_redis::RedisServer::start()?;
//! assert_eq!(server.command(&["PING"])?, "PONG");
//! println!("REDIS_URL={}", server.url());
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]
// The skip notice is the point: a skipped Redis test must be seen.
#![allow(clippy::print_stderr)]

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a server or a cluster may take to come up.
const STARTUP: Duration = Duration::from_secs(20);

/// What went wrong starting or talking to a server.
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<Error> for String {
    fn from(e: Error) -> Self {
        e.0
    }
}

fn err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error(format!("{what}: {e}"))
}

/// Whether `CI` is `true` or `1`: a missing server is then a failure.
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Whether `redis-server` and `redis-cli` are installed.
pub fn tools_installed() -> bool {
    ["redis-server", "redis-cli"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The value of `var`, or `None` after a loud notice (a panic under CI).
///
/// # Panics
/// When `var` is unset and [`is_ci`].
pub fn server_env(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ if is_ci() => panic!("{var} is not set and CI=true: the Redis tests must run in CI"),
        _ => {
            eprintln!(
                "\n!!! SKIPPED: {var} is not set, so this Redis test did not run.\n\
                 !!! Run `cargo xtask ci` (it starts Redis itself) or set {var}.\n"
            );
            None
        }
    }
}

/// `REDIS_URL`: one server (see [`server_env`]).
pub fn single_url() -> Option<String> {
    server_env("REDIS_URL")
}

/// `REDIS_CLUSTER_URLS`: comma-separated nodes of a Redis Cluster (see
/// [`server_env`]).
pub fn cluster_urls() -> Option<Vec<String>> {
    Some(split_urls(&server_env("REDIS_CLUSTER_URLS")?))
}

/// A Redis deployment the environment names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deployment {
    /// One server (`REDIS_URL`).
    Single(String),
    /// A Redis Cluster, through these nodes (`REDIS_CLUSTER_URLS`).
    Cluster(Vec<String>),
}

impl Deployment {
    /// `REDIS_URL`, or `None` after the skip notice (see [`server_env`]).
    pub fn single() -> Option<Self> {
        single_url().map(Self::Single)
    }

    /// `REDIS_CLUSTER_URLS`, or `None` after the skip notice.
    pub fn cluster() -> Option<Self> {
        cluster_urls().map(Self::Cluster)
    }

    /// The variable it came from, for messages.
    pub fn var(&self) -> &'static str {
        match self {
            Self::Single(_) => "REDIS_URL",
            Self::Cluster(_) => "REDIS_CLUSTER_URLS",
        }
    }
}

/// The URLs of a comma-separated list.
pub fn split_urls(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A key prefix no other test, case or run uses: process id, a counter and a
/// random part.
pub fn unique_prefix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "chat-test-{}-{}-{:08x}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        RandomState::new().build_hasher().finish() as u32
    )
}

/// `redis://127.0.0.1:PORT` for each port.
pub fn loopback_urls(ports: &[u16]) -> Vec<String> {
    ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect()
}

/// The CPU time a server has used, in seconds, from the text of its `INFO
/// cpu`: `used_cpu_sys` + `used_cpu_user` (the main thread and its helpers).
pub fn cpu_secs(info_cpu: &str) -> f64 {
    info_cpu
        .lines()
        .filter_map(|line| {
            let (name, value) = line.trim().split_once(':')?;
            matches!(name, "used_cpu_sys" | "used_cpu_user")
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

/// Whether a Redis server answers `PING` on a loopback port.
pub fn ping(port: u16) -> bool {
    command(port, &["PING"]).is_ok_and(|r| r == "PONG")
}

/// One command to the server on a loopback port; a status, string or number
/// reply as text, an array's elements one per line.
pub fn command(port: u16, args: &[&str]) -> Result<String, Error> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .map_err(|e| err("redis client", e))?;
    let mut conn = client
        .get_connection_with_timeout(Duration::from_secs(2))
        .map_err(|e| err(format_args!("connecting to port {port}"), e))?;
    let Some((name, rest)) = args.split_first() else {
        return Err(Error("no command".to_owned()));
    };
    let mut cmd = redis::cmd(name);
    for a in rest {
        cmd.arg(*a);
    }
    let value: redis::Value = cmd
        .query(&mut conn)
        .map_err(|e| err(format_args!("{name} on port {port}"), e))?;
    Ok(text(&value))
}

fn text(value: &redis::Value) -> String {
    use redis::Value as V;
    match value {
        V::Nil => String::new(),
        V::Int(n) => n.to_string(),
        V::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        V::SimpleString(s) => s.clone(),
        V::Okay => "OK".to_owned(),
        V::Array(items) | V::Set(items) => items.iter().map(text).collect::<Vec<_>>().join("\n"),
        V::VerbatimString { text, .. } => text.clone(),
        V::Double(d) => d.to_string(),
        V::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// `n` distinct free loopback ports; for a cluster, each port's bus port
/// (port + 10000) must be free too.
pub fn free_ports(n: usize, cluster: bool) -> Result<Vec<u16>, Error> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..200 {
        if ports.len() == n {
            break;
        }
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(|e| err("finding a port", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| err("finding a port", e))?
            .port();
        if cluster {
            let Some(bus) = port.checked_add(10000) else {
                continue;
            };
            let Ok(bus_listener) = TcpListener::bind(("127.0.0.1", bus)) else {
                continue;
            };
            held.push(bus_listener);
        }
        held.push(listener);
        ports.push(port);
    }
    if ports.len() < n {
        return Err(Error("no free loopback ports".to_owned()));
    }
    Ok(ports)
}

/// A fresh temporary directory named for `what` and this process.
pub fn temp_dir(what: &str) -> Result<PathBuf, Error> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "chat-rs-redis-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| err(dir.display(), e))?;
    Ok(dir)
}

/// The `redis-server` command line of a loopback server on `port`, without
/// persistence and with `noeviction`, writing its log (and a cluster's node
/// file) into `dir`.
pub fn server_command(port: u16, dir: &Path, cluster: bool) -> Command {
    let mut c = Command::new("redis-server");
    c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--maxmemory-policy", "noeviction"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join(format!("redis-{port}.log")));
    if cluster {
        c.args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
            .args(["--cluster-node-timeout", "5000"]);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Waits until every port answers `PING`.
pub fn wait_until_up(ports: &[u16]) -> Result<(), Error> {
    let deadline = Instant::now() + STARTUP;
    for port in ports {
        while !ping(*port) {
            if Instant::now() > deadline {
                return Err(Error(format!("redis-server on port {port} did not answer")));
            }
            sleep(Duration::from_millis(25));
        }
    }
    Ok(())
}

fn spawn(port: u16, dir: &Path, cluster: bool) -> Result<Child, Error> {
    server_command(port, dir, cluster)
        .spawn()
        .map_err(|e| err("starting redis-server", e))
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A throwaway `redis-server` on a free loopback port, in a temporary
/// directory of its own; killed, and its directory removed, when dropped.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts one and waits until it answers.
    pub fn start() -> Result<Self, Error> {
        let port = free_ports(1, false)?[0];
        let dir = temp_dir("server")?;
        let mut server = Self {
            port,
            dir,
            child: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// Starts one, or `None` after a notice when `redis-server` is not
    /// installed (a panic under CI).
    ///
    /// # Panics
    /// Under [`is_ci`] when the server cannot start.
    pub fn start_or_skip() -> Option<Self> {
        if !tools_installed() {
            assert!(
                !is_ci(),
                "redis-server is not installed and CI=true: the Redis tests must run in CI"
            );
            eprintln!("\n!!! SKIPPED: redis-server is not installed, so this test did not run.\n");
            return None;
        }
        match Self::start() {
            Ok(s) => Some(s),
            Err(e) => panic!("{e}"),
        }
    }

    fn spawn(&mut self) -> Result<(), Error> {
        self.child = Some(spawn(self.port, &self.dir, false)?);
        wait_until_up(&[self.port])
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// One command (see [`command`]).
    pub fn command(&self, args: &[&str]) -> Result<String, Error> {
        command(self.port, args)
    }

    /// A numeric field of `INFO {section}` (`used_memory` of `memory`, say).
    pub fn info(&self, section: &str, field: &str) -> Result<u64, Error> {
        let info = self.command(&["INFO", section])?;
        info.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| Error(format!("INFO {section} has no numeric {field}")))
    }

    /// `DBSIZE`: how many keys the server holds.
    pub fn dbsize(&self) -> Result<u64, Error> {
        let n = self.command(&["DBSIZE"])?;
        n.trim()
            .parse()
            .map_err(|_| Error(format!("DBSIZE answered {n:?}")))
    }

    /// `CLIENT PAUSE ms WRITE`: writes (and key expiry) stall for `ms`.
    pub fn pause_writes(&self, ms: u64) -> Result<(), Error> {
        self.command(&["CLIENT", "PAUSE", &ms.to_string(), "WRITE"])
            .map(drop)
    }

    /// Keys matching `pattern`, by `SCAN`.
    pub fn keys(&self, pattern: &str) -> Result<Vec<String>, Error> {
        let mut keys = Vec::new();
        let mut cursor = "0".to_owned();
        loop {
            let reply = self.command(&["SCAN", &cursor, "MATCH", pattern, "COUNT", "1000"])?;
            let mut lines = reply.lines();
            cursor = lines.next().unwrap_or("0").to_owned();
            keys.extend(lines.map(str::to_owned));
            if cursor == "0" {
                return Ok(keys);
            }
        }
    }

    fn signal(&self, sig: &str) -> Result<(), Error> {
        if let Some(pid) = self.pid() {
            Command::new("kill")
                .args([sig, &pid.to_string()])
                .status()
                .map_err(|e| err("kill", e))?;
        }
        Ok(())
    }

    /// SIGSTOP: the server stops answering (connections stay open).
    pub fn stop(&self) -> Result<(), Error> {
        self.signal("-STOP")
    }

    /// SIGCONT after [`stop`](Self::stop).
    pub fn resume(&self) -> Result<(), Error> {
        self.signal("-CONT")
    }

    /// SIGKILL: every key is gone; the port stays this server's.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop(&mut c);
        }
    }

    /// SIGKILL, then a fresh empty server on the same port.
    pub fn restart_empty(&mut self) -> Result<(), Error> {
        self.kill();
        self.spawn()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of masters only, on free loopback ports; stopped, and its
/// directory removed, when dropped.
#[derive(Debug)]
pub struct RedisCluster {
    ports: Vec<u16>,
    dir: PathBuf,
    children: Vec<Child>,
    detached: bool,
}

impl RedisCluster {
    /// Starts `masters` servers, joins them into a cluster and waits until
    /// every node serves every slot.
    pub fn start(masters: usize) -> Result<Self, Error> {
        let ports = free_ports(masters, true)?;
        let dir = temp_dir("cluster")?;
        let mut cluster = Self {
            ports,
            dir,
            children: Vec::new(),
            detached: false,
        };
        for port in cluster.ports.clone() {
            cluster.children.push(spawn(port, &cluster.dir, true)?);
        }
        wait_until_up(&cluster.ports)?;
        create_cluster(&cluster.ports)?;
        Ok(cluster)
    }

    /// The nodes' URLs.
    pub fn urls(&self) -> Vec<String> {
        loopback_urls(&self.ports)
    }

    /// The nodes' ports.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// Leaves the servers running after this value is gone (for a cluster
    /// that outlives the command that started it); returns the ports and the
    /// directory, for [`stop_detached`].
    pub fn detach(mut self) -> (Vec<u16>, PathBuf) {
        self.detached = true;
        (self.ports.clone(), self.dir.clone())
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        for child in &mut self.children {
            stop(child);
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Stops the servers of a [detached](RedisCluster::detach) cluster (`SHUTDOWN
/// NOSAVE`) and removes its directory.
pub fn stop_detached(ports: &[u16], dir: &Path) {
    for port in ports {
        let _ = command(*port, &["SHUTDOWN", "NOSAVE"]);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while ports.iter().any(|p| ping(*p)) && Instant::now() < deadline {
        sleep(Duration::from_millis(100));
    }
    if dir.starts_with(std::env::temp_dir()) {
        let _ = fs::remove_dir_all(dir);
    }
}

fn create_cluster(ports: &[u16]) -> Result<(), Error> {
    let mut c = Command::new("redis-cli");
    c.arg("--cluster").arg("create");
    for port in ports {
        c.arg(format!("127.0.0.1:{port}"));
    }
    c.args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let status = c
        .status()
        .map_err(|e| err("running redis-cli --cluster create", e))?;
    if !status.success() {
        return Err(Error("redis-cli --cluster create failed".to_owned()));
    }
    let deadline = Instant::now() + STARTUP;
    loop {
        if ports.iter().all(|p| {
            command(*p, &["CLUSTER", "INFO"]).is_ok_and(|i| i.contains("cluster_state:ok"))
        }) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error(
                "the Redis Cluster did not reach cluster_state:ok".to_owned(),
            ));
        }
        sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_is_system_plus_user() {
        let info = "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.0\r\n";
        assert!((super::cpu_secs(info) - 3.75).abs() < 1e-9);
    }
}
