//! What the load generator reads off the server: echo-bot's `GET /stats`, the
//! process's resident memory from `/proc/<pid>/status`, and Redis's command
//! counts (`INFO commandstats`, and `MONITOR` for which function each `FCALL`
//! ran).

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::http::{Conn, get};

/// echo-bot's `GET /stats`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BotStats {
    /// Outcome name → count since start.
    #[serde(default)]
    pub outcomes: BTreeMap<String, u64>,
    /// Handler invocations since start.
    #[serde(default)]
    pub handler_runs: u64,
    /// Detached work in flight now.
    #[serde(default)]
    pub in_flight: u64,
}

impl BotStats {
    /// Every outcome counted.
    pub fn total(&self) -> u64 {
        self.outcomes.values().sum()
    }

    /// `self - before`, per outcome (outcomes that did not change are left out).
    pub fn since(&self, before: &Self) -> Self {
        let outcomes = self
            .outcomes
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.saturating_sub(*before.outcomes.get(k).unwrap_or(&0)),
                )
            })
            .filter(|(_, v)| *v > 0)
            .collect();
        Self {
            outcomes,
            handler_runs: self.handler_runs.saturating_sub(before.handler_runs),
            in_flight: self.in_flight,
        }
    }
}

/// Reads `GET {path}` of the bot at `addr` once.
pub async fn bot_stats(addr: SocketAddr, host: &str, path: &str) -> io::Result<BotStats> {
    let fetch = async {
        let mut conn = Conn::connect(addr).await?;
        let m = conn.roundtrip(&get(host, path)).await?;
        if m.status() != 200 {
            return Err(io::Error::other(format!(
                "GET {path}: status {}",
                m.status()
            )));
        }
        serde_json::from_slice(&m.body).map_err(io::Error::other)
    };
    tokio::time::timeout(Duration::from_secs(5), fetch)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "GET /stats timed out"))?
}

/// Polls the bot's stats until nothing is in flight and the outcome count held
/// still across two polls, or `limit` passes. Returns the last stats and whether
/// they settled.
pub async fn settle(
    addr: SocketAddr,
    host: &str,
    path: &str,
    limit: Duration,
) -> io::Result<(BotStats, bool)> {
    let deadline = Instant::now() + limit;
    let mut last = bot_stats(addr, host, path).await?;
    let mut still = 0;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = bot_stats(addr, host, path).await?;
        if now.in_flight == 0 && now.total() == last.total() {
            still += 1;
            if still >= 2 {
                return Ok((now, true));
            }
        } else {
            still = 0;
        }
        last = now;
    }
    Ok((last, false))
}

/// CPU time (user + system) a process has used so far, from
/// `/proc/<pid>/stat` (clock ticks of 10 ms, as on every Linux this runs on).
pub fn cpu_time(pid: u32) -> io::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces: fields count from after its `)`.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| io::Error::other("malformed /proc/<pid>/stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after `)`.
    Ok(Duration::from_millis((tick(11) + tick(12)) * 10))
}

/// Resident memory of a process over a run, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rss {
    /// `VmRSS` when sampling started.
    pub start_kib: u64,
    /// Largest `VmRSS` sampled.
    pub max_kib: u64,
    /// `VmRSS` when sampling stopped.
    pub end_kib: u64,
    /// `VmHWM` (the kernel's peak) when sampling stopped.
    pub hwm_kib: u64,
    /// Samples taken.
    pub samples: u64,
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
pub fn rss_of(pid: u32) -> io::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// Samples a process's `VmRSS` on a thread of its own.
#[derive(Debug)]
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Rss>,
}

impl RssSampler {
    /// Starts sampling `pid` every `every`, for at most `limit`.
    pub fn start(pid: u32, every: Duration, limit: Duration) -> io::Result<Self> {
        let (first, _) = rss_of(pid)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(move || {
                let deadline = Instant::now() + limit;
                let mut rss = Rss {
                    start_kib: first,
                    max_kib: first,
                    end_kib: first,
                    hwm_kib: 0,
                    samples: 1,
                };
                while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
                    std::thread::sleep(every);
                    if let Ok((now, hwm)) = rss_of(pid) {
                        rss.max_kib = rss.max_kib.max(now);
                        rss.end_kib = now;
                        rss.hwm_kib = hwm;
                        rss.samples += 1;
                    }
                }
                rss
            })?;
        Ok(Self { stop, thread })
    }

    /// Stops and returns what was sampled, with a last sample.
    pub fn stop(self, pid: u32) -> Rss {
        self.stop.store(true, Ordering::Relaxed);
        let mut rss = self.thread.join().unwrap_or_default();
        if let Ok((now, hwm)) = rss_of(pid) {
            rss.max_kib = rss.max_kib.max(now);
            rss.end_kib = now;
            rss.hwm_kib = hwm;
        }
        rss
    }
}

/// Host and port of a `redis://host:port[/db]` URL on loopback.
pub fn redis_addr(url: &str) -> io::Result<SocketAddr> {
    let rest = url
        .strip_prefix("redis://")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "expected redis://host:port"))?;
    let host_port = rest.split('/').next().unwrap_or_default();
    let host_port = host_port.rsplit('@').next().unwrap_or_default();
    crate::loopback_addr(host_port, 6379)
}

fn resp_command(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// Reads one RESP reply as text (simple string, error, integer or bulk string).
fn resp_reply(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let line = line.trim_end();
    match line.as_bytes().first() {
        Some(b'+' | b':') => Ok(line[1..].to_owned()),
        Some(b'-') => Err(io::Error::other(format!("redis: {}", &line[1..]))),
        Some(b'$') => {
            let n: usize = line[1..]
                .parse()
                .map_err(|_| io::Error::other("redis: bad bulk length"))?;
            let mut data = vec![0u8; n + 2];
            r.read_exact(&mut data)?;
            data.truncate(n);
            String::from_utf8(data).map_err(io::Error::other)
        }
        _ => Err(io::Error::other(format!(
            "redis: unexpected reply {line:?}"
        ))),
    }
}

/// One command on a fresh connection.
fn redis_query(addr: SocketAddr, args: &[&str]) -> io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(&resp_command(args))?;
    resp_reply(&mut BufReader::new(s))
}

/// `INFO commandstats` as command → calls (commands run inside scripts
/// included).
pub fn commandstats(addr: SocketAddr) -> io::Result<BTreeMap<String, u64>> {
    let info = redis_query(addr, &["INFO", "commandstats"])?;
    Ok(info
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect())
}

/// The Redis server's CPU time so far (`INFO cpu`: `used_cpu_sys` +
/// `used_cpu_user`, the main thread and its helpers).
pub fn redis_cpu(addr: SocketAddr) -> io::Result<Duration> {
    let info = redis_query(addr, &["INFO", "cpu"])?;
    Duration::try_from_secs_f64(chat_test_redis::cpu_secs(&info))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "INFO cpu: not a duration"))
}

/// The commands clients sent to Redis while a `MONITOR` ran, by name; an
/// `FCALL` of chat-state-redis's library is named `fcall:<operation>`.
#[derive(Debug)]
pub struct Monitor {
    addr: SocketAddr,
    thread: JoinHandle<io::Result<BTreeMap<String, u64>>>,
}

/// What the monitor looks for to know it has seen everything.
const END_MARK: &str = "loadgen-monitor-end";

impl Monitor {
    /// Starts `MONITOR` on a connection of its own, for at most `limit`.
    pub fn start(addr: SocketAddr, limit: Duration) -> io::Result<Self> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_millis(500)))?;
        s.write_all(&resp_command(&["MONITOR"]))?;
        let mut reader = BufReader::new(s);
        let ok = resp_reply(&mut reader)?;
        if ok != "OK" {
            return Err(io::Error::other(format!("MONITOR answered {ok:?}")));
        }
        let thread = std::thread::Builder::new()
            .name("redis-monitor".into())
            .spawn(move || {
                let deadline = Instant::now() + limit;
                let mut counts = BTreeMap::new();
                let mut line = String::new();
                while Instant::now() < deadline {
                    line.clear();
                    match reader.read_line(&mut line) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                            ) =>
                        {
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    if line.contains(END_MARK) {
                        break;
                    }
                    if let Some(name) = client_command(&line) {
                        *counts.entry(name).or_insert(0u64) += 1;
                    }
                }
                Ok(counts)
            })?;
        Ok(Self { addr, thread })
    }

    /// Marks the end in the command stream and returns the counts up to it.
    pub fn stop(self) -> io::Result<BTreeMap<String, u64>> {
        redis_query(self.addr, &["ECHO", END_MARK])?;
        self.thread
            .join()
            .map_err(|_| io::Error::other("the monitor thread panicked"))?
    }
}

/// A `MONITOR` line's command when a client (not a script) sent it, leaving out
/// the probes' own `INFO` and `ECHO`.
fn client_command(line: &str) -> Option<String> {
    // `1700000000.123456 [0 127.0.0.1:54321] "FCALL" "chatrs_…_admit_queue" "12" …`
    let open = line.find('[')?;
    let close = open + line[open..].find(']')?;
    let source = &line[open + 1..close];
    if source.ends_with(" lua") {
        return None;
    }
    let mut quoted = line[close..].split('"').skip(1).step_by(2);
    let command = quoted.next()?.to_ascii_lowercase();
    match command.as_str() {
        "info" | "echo" | "monitor" => None,
        "fcall" => {
            let function = quoted.next().unwrap_or_default();
            Some(format!("fcall:{}", operation(function)))
        }
        _ => Some(command),
    }
}

/// The operation of a chat-state-redis function, `chatrs_<12 hex digits>_<op>`
/// (the digits name the library's version); any other function as it is.
fn operation(function: &str) -> &str {
    function
        .strip_prefix("chatrs_")
        .and_then(|rest| rest.get(12..))
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or(function)
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    #[test]
    fn monitor_lines_are_named_by_operation() {
        let line = r#"1700000000.1 [0 127.0.0.1:5000] "FCALL" "chatrs_0123456789ab_admit_queue" "2" "k1" "k2""#;
        assert_eq!(client_command(line).as_deref(), Some("fcall:admit_queue"));
        let line = r#"1700000000.1 [0 lua] "SET" "k" "v""#;
        assert_eq!(client_command(line), None);
        let line = r#"1700000000.1 [0 127.0.0.1:5000] "fcall" "someone_else" "0""#;
        assert_eq!(client_command(line).as_deref(), Some("fcall:someone_else"));
        let line = r#"1700000000.1 [0 127.0.0.1:5000] "info" "commandstats""#;
        assert_eq!(client_command(line), None);
        let line = r#"1700000000.1 [0 127.0.0.1:5000] "PING""#;
        assert_eq!(client_command(line).as_deref(), Some("ping"));
    }

    #[test]
    fn stats_differences() {
        let mut before = BotStats::default();
        before.outcomes.insert("handler-ran".into(), 5);
        before.handler_runs = 5;
        let mut after = before.clone();
        after.outcomes.insert("handler-ran".into(), 9);
        after.outcomes.insert("message-duplicate".into(), 2);
        after.handler_runs = 9;
        let d = after.since(&before);
        assert_eq!(d.total(), 6);
        assert_eq!(d.handler_runs, 4);
    }

    #[test]
    fn redis_urls_must_be_loopback() {
        assert!(redis_addr("redis://127.0.0.1:6390").is_ok());
        assert!(redis_addr("redis://localhost:6390/0").is_ok());
        assert!(redis_addr("redis://10.1.2.3:6379").is_err());
        assert!(redis_addr("http://127.0.0.1:6379").is_err());
    }

    #[test]
    fn own_cpu_time_is_readable() -> TestResult {
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(cpu_time(std::process::id())? >= Duration::from_millis(20));
        Ok(())
    }

    #[test]
    fn own_rss_is_readable() -> TestResult {
        let (rss, hwm) = rss_of(std::process::id())?;
        assert!(rss > 0 && hwm >= rss);
        Ok(())
    }
}
