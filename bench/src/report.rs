//! What a run found, for people (a table) and for tools (one flat JSON line).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::cli::RunArgs;
use crate::probe::{BotStats, Rss};
use crate::run::{Measured, quantile_ms};

/// What one run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The settings.
    pub args: RunArgs,
    /// The load's own figures.
    pub measured: Measured,
    /// The bot's stats difference over the run, and whether it settled.
    pub bot: Option<(BotStats, bool)>,
    /// The most work the bot had in flight at once (its `/stats`, read every
    /// 500 ms while the load ran).
    pub in_flight_max: Option<u64>,
    /// The server's memory.
    pub rss: Option<Rss>,
    /// `INFO commandstats` difference (command → calls, script calls included).
    pub commandstats: Option<BTreeMap<String, u64>>,
    /// What clients sent, from `MONITOR` (command or `fcall:<operation>` → calls).
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
            .filter(|(k, _)| k.starts_with("fcall:admit_"))
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
        if let Some(n) = self.in_flight_max {
            put("in_flight_max", json!(n));
        }
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
            let fcall = cs.get("fcall").copied().unwrap_or(0);
            let all: u64 = cs.values().sum();
            put("redis_deliveries", json!(n));
            put("redis_cmdstat_fcall", json!(fcall));
            put("redis_cmdstat_fcall_per_delivery", per(fcall));
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
