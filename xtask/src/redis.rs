//! Local Redis servers for the tests, from `chat-test-redis`: one plain server,
//! and a 3-master Redis Cluster on loopback ports.
//!
//! * `cargo xtask redis-cluster up` starts a cluster that outlives the command
//!   and prints `REDIS_CLUSTER_URLS=…`; `cargo xtask redis-cluster down` stops it.
//! * `cargo xtask ci` starts what the Redis tests need (see [`TestServers`]) and
//!   stops it when the tests are done.

use std::fs;
use std::path::PathBuf;

use chat_test_redis::{RedisCluster, RedisServer};

use crate::cmd::root;

pub(crate) use chat_test_redis::tools_installed;

/// Masters of the local cluster.
const MASTERS: usize = 3;

const USAGE: &str = "usage: cargo xtask redis-cluster up|down";

/// `cargo xtask redis-cluster up|down`.
pub(crate) fn cluster_command(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("up") if args.len() == 1 => cluster_up(),
        Some("down") if args.len() == 1 => cluster_down(),
        _ => Err(USAGE.to_owned()),
    }
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
        if ports.iter().all(|p| chat_test_redis::ping(*p)) {
            println!("redis-cluster: already up");
            println!("REDIS_CLUSTER_URLS={}", urls(&ports));
            return Ok(());
        }
        cluster_down()?;
    }
    let (ports, dir) = RedisCluster::start(MASTERS)?.detach();
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
    println!("redis-cluster: up, data in {}", dir.display());
    println!("REDIS_CLUSTER_URLS={}", urls(&ports));
    Ok(())
}

fn cluster_down() -> Result<(), String> {
    let Some((ports, dir)) = read_state() else {
        println!("redis-cluster: not running (no state file)");
        return Ok(());
    };
    chat_test_redis::stop_detached(&ports, &dir);
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

fn urls(ports: &[u16]) -> String {
    chat_test_redis::loopback_urls(ports).join(",")
}

/// The servers `cargo xtask ci` runs the Redis tests against, stopped when
/// dropped.
pub(crate) struct TestServers {
    _single: Option<RedisServer>,
    _cluster: Option<RedisCluster>,
    /// Environment for the test step: `REDIS_URL`, `REDIS_CLUSTER_URLS`.
    pub(crate) env: Vec<(&'static str, String)>,
}

impl TestServers {
    /// Uses `REDIS_URL` / `REDIS_CLUSTER_URLS` when set; otherwise starts a
    /// server on a free port and a 3-master cluster.
    pub(crate) fn start() -> Result<Self, String> {
        let mut env = Vec::new();
        let single = match std::env::var("REDIS_URL") {
            Ok(url) if !url.is_empty() => {
                println!("ci: Redis tests use REDIS_URL");
                env.push(("REDIS_URL", url));
                None
            }
            _ => {
                let server = RedisServer::start()?;
                println!("ci: started redis-server on {}", server.url());
                env.push(("REDIS_URL", server.url()));
                Some(server)
            }
        };
        let cluster = match std::env::var("REDIS_CLUSTER_URLS") {
            Ok(urls) if !urls.is_empty() => {
                println!("ci: Redis Cluster tests use REDIS_CLUSTER_URLS");
                env.push(("REDIS_CLUSTER_URLS", urls));
                None
            }
            _ => {
                let cluster = RedisCluster::start(MASTERS)?;
                println!(
                    "ci: started a {MASTERS}-master Redis Cluster on {:?}",
                    cluster.ports()
                );
                env.push(("REDIS_CLUSTER_URLS", cluster.urls().join(",")));
                Some(cluster)
            }
        };
        Ok(Self {
            _single: single,
            _cluster: cluster,
            env,
        })
    }
}
