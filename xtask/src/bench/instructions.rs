//! `instructions`: Redis's instructions per delivery, counted under
//! callgrind. Its CPU time per delivery moves with this VM's speed from one
//! run to the next by more than most changes to the functions; the
//! instructions a server executes for the same deliveries do not (the same
//! build counted twice differs by a few hundredths of a percent). One plain
//! server and a one-master cluster (every slot on one node), so that the
//! cluster's own per-key work shows apart from its processes sharing cores.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::report::{fl, group, num};
use super::run::{Bench, Owned, free_port, loadgen_figures, run_bounded, s, wait_healthy};
use super::{BOT_USER, Figures, SECRET};

/// Deliveries counted, and the rate they are sent at: slow enough for a
/// server under valgrind (about 50× slower than native) to keep up.
const COUNTED: u64 = 1_500;
const COUNTED_QUICK: u64 = 300;
const RATE: f64 = 100.0;

impl Bench {
    pub(super) fn instructions(&mut self) -> Result<String, String> {
        let mut t = String::from(
            "## instructions: Redis's instructions per delivery, counted under callgrind (deferred, queue, the no-op handler)\n\n",
        );
        let tools = ["valgrind", "callgrind_control", "redis-server"];
        if let Some(missing) = tools.iter().find(|tool| !answers(tool)) {
            let _ = writeln!(t, "skipped: no `{missing}` on this machine\n");
            return Ok(t);
        }
        let n = if self.quick { COUNTED_QUICK } else { COUNTED };
        let _ = writeln!(
            t,
            "| server | deliveries | commands per delivery (all) | instructions per delivery |\n|---|---:|---:|---:|"
        );
        let mut counted = Vec::new();
        for cluster in [false, true] {
            let label = if cluster {
                "one-master cluster"
            } else {
                "one server"
            };
            print!("bench: {:<28} ", format!("instructions, {label}"));
            let (f, per) = self.count(cluster, n)?;
            println!("{per:>11.0} instructions per delivery");
            let _ = writeln!(
                t,
                "| {label} | {} | {} | {} |",
                num(&f, "redis_deliveries", 0),
                num(&f, "redis_cmdstat_all_per_delivery", 2),
                group(per),
            );
            counted.push(per);
        }
        if let [one, cluster] = counted[..] {
            let _ = writeln!(
                t,
                "\n- the cluster's own work (slot checks of every key of every command): {:+.1} % of a server's",
                (cluster / one - 1.0) * 100.0
            );
        }
        let _ = writeln!(
            t,
            "- counted after a warm-up of 100 deliveries, over {} deliveries at {RATE:.0}/s; `BENCH_ECHO_BOT` counts another build's functions\n",
            group(n as f64)
        );
        Ok(t)
    }

    /// Starts `redis-server` under callgrind and echo-bot on it, sends a
    /// warm-up, then counts the server's instructions over `n` deliveries.
    fn count(&self, cluster: bool, n: u64) -> Result<(Figures, f64), String> {
        let dir = self.out.join(if cluster {
            "callgrind-cluster"
        } else {
            "callgrind"
        });
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let ports = chat_test_redis::free_ports(1, cluster)?;
        let port = ports[0];
        let server = chat_test_redis::server_command(port, &dir, cluster);
        let mut c = Command::new("valgrind");
        c.arg("--tool=callgrind")
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join("callgrind.%p").display()
            ))
            .arg(server.get_program())
            .args(server.get_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let valgrind = Owned(c.spawn().map_err(|e| format!("starting valgrind: {e}"))?);
        let pid = valgrind.0.id().to_string();
        wait_for(Duration::from_secs(60), || chat_test_redis::ping(port))
            .map_err(|()| format!("redis-server under valgrind on port {port} did not answer"))?;
        let url = format!("redis://127.0.0.1:{port}");
        if cluster {
            chat_test_redis::command(port, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"])?;
            wait_for(Duration::from_secs(60), || {
                chat_test_redis::command(port, &["CLUSTER", "INFO"])
                    .is_ok_and(|i| i.contains("cluster_state:ok"))
            })
            .map_err(|()| "the one-master cluster did not come up".to_owned())?;
        }

        let bot_port = free_port()?;
        let log = fs::File::create(dir.join("echo-bot.log")).map_err(|e| e.to_string())?;
        let mut c = Command::new(self.echo_bot());
        self.bot_env(&mut c, bot_port)
            .env(
                if cluster {
                    "REDIS_CLUSTER_URLS"
                } else {
                    "REDIS_URL"
                },
                &url,
            )
            .env("CHAT_DISPATCH", "deferred")
            .env("CHAT_CONCURRENCY", "queue")
            .env("ECHO_NOOP", "true")
            .stdin(Stdio::null())
            .stderr(log.try_clone().map_err(|e| e.to_string())?)
            .stdout(log);
        let _bot = Owned(c.spawn().map_err(|e| format!("starting echo-bot: {e}"))?);
        wait_healthy(bot_port, Duration::from_secs(60))?;

        let load = |count: u64, connections: u32, redis: bool| {
            let mut l = Command::new(self.bin.join("loadgen"));
            l.arg("run")
                .args([
                    "--url",
                    &format!("http://127.0.0.1:{bot_port}/webhooks/slack"),
                ])
                .args(["--secret", SECRET, "--bot-user-id", BOT_USER])
                .args(["--rate", &s(RATE), "--count", &s(count)])
                .args(["--connections", &s(connections)])
                .args(["--duration", &s(count / RATE as u64 + 10)]);
            if redis {
                // The counted load's commands per delivery (`INFO
                // commandstats`).
                l.args(["--redis-url", &url]);
            }
            let limit = Duration::from_secs(count / RATE as u64 + 120);
            let (ok, stdout, stderr) = run_bounded(l, limit)?;
            if !ok {
                return Err(format!("loadgen failed: {}", stderr.trim()));
            }
            Ok(loadgen_figures(&stdout, "instructions")?.1)
        };
        load(100, 8, false)?;
        control(&pid, "-z")?;
        let f = load(n, 16, true)?;
        control(&pid, "-d")?;
        let dump = dir.join(format!("callgrind.{pid}.1"));
        wait_for(Duration::from_secs(30), || dump_total(&dump).is_some())
            .map_err(|()| format!("no callgrind dump at {}", dump.display()))?;
        let total = dump_total(&dump).unwrap_or(0.0);
        let delivered = fl(&f, "acked").max(1.0);
        Ok((f, total / delivered))
    }
}

/// Whether a program is there to run.
fn answers(program: &str) -> bool {
    let arg = if program == "callgrind_control" {
        "-h"
    } else {
        "--version"
    };
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `callgrind_control <what> <pid>`: `-z` zeroes the counters, `-d` dumps them.
fn control(pid: &str, what: &str) -> Result<(), String> {
    let status = Command::new("callgrind_control")
        .args([what, pid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("callgrind_control: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("callgrind_control {what} {pid}: {status}"))
    }
}

/// The instructions a finished callgrind dump counted (its `summary:` or
/// `totals:` line).
fn dump_total(path: &Path) -> Option<f64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Polls `ready` every 100 ms until it holds or `limit` passes.
fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> Result<(), ()> {
    let deadline = Instant::now() + limit;
    while !ready() {
        if Instant::now() > deadline {
            return Err(());
        }
        sleep(Duration::from_millis(100));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::dump_total;

    #[test]
    fn a_dump_total_is_read_from_its_summary_or_totals_line() {
        let dir = std::env::temp_dir().join(format!("chat-rs-callgrind-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let summary = dir.join("summary");
        std::fs::write(
            &summary,
            "events: Ir\nfn=(1) main\n0 5\nsummary: 665432644\n",
        )
        .unwrap();
        assert_eq!(dump_total(&summary), Some(665_432_644.0));
        let totals = dir.join("totals");
        std::fs::write(&totals, "events: Ir\ntotals: 42\n").unwrap();
        assert_eq!(dump_total(&totals), Some(42.0));
        let unfinished = dir.join("unfinished");
        std::fs::write(&unfinished, "events: Ir\nfn=(1) main\n").unwrap();
        assert_eq!(dump_total(&unfinished), None);
        assert_eq!(dump_total(&dir.join("absent")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
