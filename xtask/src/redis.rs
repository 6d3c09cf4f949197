//! Local Redis servers for the tests: one plain server, and a 3-master Redis
//! Cluster on loopback ports, each in a temporary directory of its own.
//!
//! * `cargo xtask redis-cluster up` starts a cluster in the background and
//!   prints `REDIS_CLUSTER_URLS=…`; `cargo xtask redis-cluster down` stops it.
//! * `cargo xtask ci` starts what the Redis tests need (see [`TestServers`]) and
//!   stops it when the tests are done.

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::cmd::root;

/// Masters of the local cluster.
const MASTERS: usize = 3;
/// How long a server or the cluster may take to come up.
const STARTUP: Duration = Duration::from_secs(20);

const USAGE: &str = "usage: cargo xtask redis-cluster up|down";

/// `cargo xtask redis-cluster up|down`.
pub(crate) fn cluster_command(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("up") if args.len() == 1 => cluster_up(),
        Some("down") if args.len() == 1 => cluster_down(),
        _ => Err(USAGE.to_owned()),
    }
}

/// Whether the Redis tools the tests need are installed.
pub(crate) fn tools_installed() -> bool {
    ["redis-server", "redis-cli"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Where `up` records the cluster it started, for `down`.
fn state_file() -> PathBuf {
    root()
        .join("target")
        .join("xtask")
        .join("redis-cluster.state")
}

fn cluster_up() -> Result<(), String> {
    if !tools_installed() {
        return Err("redis-server and redis-cli are needed \
                    (apt-get install redis-server redis-tools)"
            .to_owned());
    }
    if let Some((ports, _)) = read_state() {
        if ports.iter().all(|p| ping(*p)) {
            println!("redis-cluster: already up");
            println!("REDIS_CLUSTER_URLS={}", urls(&ports));
            return Ok(());
        }
        cluster_down()?;
    }
    let dir = temp_dir("cluster")?;
    let ports = free_ports(MASTERS, true)?;
    for port in &ports {
        let mut c = server_command(*port, &dir, true);
        c.args(["--daemonize", "yes"])
            .arg("--pidfile")
            .arg(dir.join(format!("redis-{port}.pid")));
        let status = c
            .status()
            .map_err(|e| format!("starting redis-server: {e}"))?;
        if !status.success() {
            return Err(format!("redis-server on port {port} did not start"));
        }
    }
    let state = format!(
        "{}\n{}\n",
        ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(","),
        dir.display()
    );
    if let Some(parent) = state_file().parent() {
        fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    fs::write(state_file(), state).map_err(|e| format!("writing the state file: {e}"))?;
    wait_until_up(&ports)?;
    create_cluster(&ports)?;
    println!("redis-cluster: up, data in {}", dir.display());
    println!("REDIS_CLUSTER_URLS={}", urls(&ports));
    Ok(())
}

fn cluster_down() -> Result<(), String> {
    let Some((ports, dir)) = read_state() else {
        println!("redis-cluster: not running (no state file)");
        return Ok(());
    };
    for port in &ports {
        // `nosave`: nothing of a test cluster is worth keeping.
        let _ = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "shutdown", "nosave"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while ports.iter().any(|p| ping(*p)) && Instant::now() < deadline {
        sleep(Duration::from_millis(100));
    }
    if dir.starts_with(std::env::temp_dir()) {
        let _ = fs::remove_dir_all(&dir);
    }
    let _ = fs::remove_file(state_file());
    println!("redis-cluster: down");
    Ok(())
}

fn read_state() -> Option<(Vec<u16>, PathBuf)> {
    let text = fs::read_to_string(state_file()).ok()?;
    let mut lines = text.lines();
    let ports = lines
        .next()?
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<u16>, _>>()
        .ok()?;
    Some((ports, PathBuf::from(lines.next()?)))
}

/// The servers `cargo xtask ci` runs the Redis tests against, stopped (and their
/// directories removed) when dropped.
pub(crate) struct TestServers {
    children: Vec<Child>,
    dirs: Vec<PathBuf>,
    /// Environment for the test step: `REDIS_URL`, `REDIS_CLUSTER_URLS`.
    pub(crate) env: Vec<(&'static str, String)>,
}

impl TestServers {
    /// Uses `REDIS_URL` / `REDIS_CLUSTER_URLS` when set; otherwise starts a
    /// server on a free port and a 3-master cluster.
    pub(crate) fn start() -> Result<Self, String> {
        let mut servers = Self {
            children: Vec::new(),
            dirs: Vec::new(),
            env: Vec::new(),
        };
        match std::env::var("REDIS_URL") {
            Ok(url) if !url.is_empty() => {
                println!("ci: Redis tests use REDIS_URL");
                servers.env.push(("REDIS_URL", url));
            }
            _ => {
                let dir = temp_dir("single")?;
                servers.dirs.push(dir.clone());
                let port = free_ports(1, false)?[0];
                servers.spawn(port, &dir, false)?;
                wait_until_up(&[port])?;
                println!("ci: started redis-server on 127.0.0.1:{port}");
                servers
                    .env
                    .push(("REDIS_URL", format!("redis://127.0.0.1:{port}")));
            }
        }
        match std::env::var("REDIS_CLUSTER_URLS") {
            Ok(urls) if !urls.is_empty() => {
                println!("ci: Redis Cluster tests use REDIS_CLUSTER_URLS");
                servers.env.push(("REDIS_CLUSTER_URLS", urls));
            }
            _ => {
                let dir = temp_dir("cluster")?;
                servers.dirs.push(dir.clone());
                let ports = free_ports(MASTERS, true)?;
                for port in &ports {
                    servers.spawn(*port, &dir, true)?;
                }
                wait_until_up(&ports)?;
                create_cluster(&ports)?;
                println!("ci: started a {MASTERS}-master Redis Cluster on {ports:?}");
                servers.env.push(("REDIS_CLUSTER_URLS", urls(&ports)));
            }
        }
        Ok(servers)
    }

    fn spawn(&mut self, port: u16, dir: &Path, cluster: bool) -> Result<(), String> {
        let child = server_command(port, dir, cluster)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting redis-server: {e}"))?;
        self.children.push(child);
        Ok(())
    }
}

impl Drop for TestServers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for dir in &self.dirs {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// A `redis-server` on a loopback port, without persistence, writing its log
/// (and a cluster's node file) into `dir`.
fn server_command(port: u16, dir: &Path, cluster: bool) -> Command {
    let mut c = Command::new("redis-server");
    c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join(format!("redis-{port}.log")));
    if cluster {
        c.args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
            .args(["--cluster-node-timeout", "5000"]);
    }
    c
}

fn create_cluster(ports: &[u16]) -> Result<(), String> {
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
        .map_err(|e| format!("running redis-cli --cluster create: {e}"))?;
    if !status.success() {
        return Err("redis-cli --cluster create failed".to_owned());
    }
    // Every node must see every slot served before the tests start.
    let deadline = Instant::now() + STARTUP;
    loop {
        if ports.iter().all(|p| cluster_ok(*p)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("the Redis Cluster did not reach cluster_state:ok".to_owned());
        }
        sleep(Duration::from_millis(100));
    }
}

fn cluster_ok(port: u16) -> bool {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "cluster", "info"])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
}

fn wait_until_up(ports: &[u16]) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP;
    for port in ports {
        while !ping(*port) {
            if Instant::now() > deadline {
                return Err(format!("redis-server on port {port} did not answer"));
            }
            sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

/// Whether a Redis server answers `PING` on a loopback port.
fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 5];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut reply).is_ok() && &reply == b"+PONG"
}

/// `n` distinct free loopback ports; for a cluster, each port's bus port
/// (port + 10000) must be free too.
fn free_ports(n: usize, cluster: bool) -> Result<Vec<u16>, String> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..200 {
        if ports.len() == n {
            break;
        }
        let listener =
            TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("finding a port: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("finding a port: {e}"))?
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
        return Err("no free loopback ports".to_owned());
    }
    Ok(ports)
}

fn temp_dir(what: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("chat-rs-redis-{what}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn urls(ports: &[u16]) -> String {
    ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",")
}
