//! One run: the load, and the probes around it.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cli::RunArgs;
use crate::payload::{Deliveries, Shape};
use crate::probe::{self, Monitor, RssSampler};
use crate::report::Report;
use crate::run::{self, Load, Plan};
use crate::target::{invalid, parse_url, secs};

/// Runs the load described by `args` and probes the server around it.
pub async fn execute(args: RunArgs) -> io::Result<Report> {
    let target = parse_url(&args.url)?;
    let duration = secs(args.duration, "--duration")?;
    let warmup = secs(args.warmup, "--warmup")?;
    let settle_for = secs(args.settle, "--settle")?;
    if warmup >= duration {
        return Err(invalid("--warmup must be shorter than --duration"));
    }
    let load = match args.rate {
        Some(r) if r.is_finite() && r > 0.0 && r <= 1_000_000.0 => Load::Rate(r),
        Some(_) => return Err(invalid("--rate must be in (0, 1000000]")),
        None => Load::Max,
    };
    if args.connections == 0 || args.connections > 10_000 {
        return Err(invalid("--connections must be in 1..=10000"));
    }
    let redis = args
        .redis_url
        .as_deref()
        .map(probe::redis_addr)
        .transpose()?;
    let mut notes = Vec::new();

    let stats_before = if args.no_stats {
        None
    } else {
        Some(probe::bot_stats(target.addr, &target.host, &args.stats_path).await?)
    };
    let monitor_limit = duration + settle_for + Duration::from_secs(60);
    let monitor = match (redis, args.redis_monitor) {
        (Some(addr), true) => Some(Monitor::start(addr, monitor_limit)?),
        _ => None,
    };
    let cmd_before = redis.map(probe::commandstats).transpose()?;
    let redis_cpu_before = redis.map(probe::redis_cpu).transpose()?;
    let sampler = match args.pid {
        Some(pid) => Some(RssSampler::start(
            pid,
            Duration::from_millis(100),
            monitor_limit,
        )?),
        None => None,
    };

    let server_cpu_before = args.pid.map(probe::cpu_time).transpose()?;
    let own_cpu_before = probe::cpu_time(std::process::id()).ok();
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let deliveries = Deliveries::new(
        Shape {
            secret: args.secret.clone(),
            bot_user: args.bot_user_id.clone(),
            threads: args.threads,
            channels: args.channels,
            retry_share: args.retry_share,
            message_share: args.message_share,
            text_bytes: args.text_bytes,
            stream_words: args.stream_words,
            ..Shape::default()
        },
        nonce,
    );
    let plan = Plan {
        addr: target.addr,
        host: target.host.clone(),
        path: target.path.clone(),
        load,
        connections: args.connections,
        duration,
        count: args.count,
        warmup,
        timeout: Duration::from_millis(args.timeout_ms.clamp(1, 600_000)),
    };
    // The most the bot has in flight at once, polled while the load runs.
    let peak = Arc::new(AtomicU64::new(0));
    let poller = (!args.no_stats).then(|| {
        let (addr, host, path) = (target.addr, target.host.clone(), args.stats_path.clone());
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                if let Ok(s) = probe::bot_stats(addr, &host, &path).await {
                    peak.fetch_max(s.in_flight, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    });
    let measured = run::run(plan, deliveries).await;
    let in_flight_max = poller.map(|p| {
        p.abort();
        peak.load(Ordering::Relaxed)
    });
    let loadgen_cpu = match (own_cpu_before, probe::cpu_time(std::process::id()).ok()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };

    let bot = match &stats_before {
        Some(before) => {
            let (after, settled) =
                probe::settle(target.addr, &target.host, &args.stats_path, settle_for).await?;
            if !settled {
                notes.push(format!(
                    "the bot had not settled {:.0} s after the load (in flight: {})",
                    settle_for.as_secs_f64(),
                    after.in_flight
                ));
            }
            Some((after.since(before), settled))
        }
        None => None,
    };
    let server_cpu = match (args.pid, server_cpu_before) {
        (Some(pid), Some(before)) => probe::cpu_time(pid).ok().map(|t| t.saturating_sub(before)),
        _ => None,
    };
    let rss = match (sampler, args.pid) {
        (Some(s), Some(pid)) => Some(s.stop(pid)),
        _ => None,
    };
    let commandstats = match (redis, cmd_before) {
        (Some(addr), Some(before)) => {
            let after = probe::commandstats(addr)?;
            Some(
                after
                    .into_iter()
                    .map(|(k, v)| {
                        let d = v.saturating_sub(*before.get(&k).unwrap_or(&0));
                        (k, d)
                    })
                    .filter(|(k, v)| *v > 0 && k != "info")
                    .collect(),
            )
        }
        _ => None,
    };
    let redis_cpu = match (redis, redis_cpu_before) {
        (Some(addr), Some(before)) => Some(probe::redis_cpu(addr)?.saturating_sub(before)),
        _ => None,
    };
    let monitor = monitor.map(Monitor::stop).transpose()?;
    Ok(Report {
        args,
        measured,
        bot,
        in_flight_max,
        rss,
        commandstats,
        monitor,
        server_cpu,
        redis_cpu,
        loadgen_cpu,
        notes,
    })
}
