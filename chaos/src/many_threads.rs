//! Unbounded-state attack: mentions in 100,000 distinct threads, each of which
//! subscribes the bot to its thread, sent to three replicas on one Redis. Every
//! delivery must be acknowledged within Slack's 3 s and answered; every
//! subscription must carry a TTL, so that once the threads fall silent for the
//! subscription TTL Redis holds none of them — the only keys a delivery leaves
//! behind are its dedupe mark, which expires with the dedupe TTL.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chat_testkit::FakeSlack;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::cluster::{Redis, Replica};
use crate::sender::{self, Sender};

/// Mentions in distinct threads, full run (quick: a twentieth).
const THREADS: usize = 100_000;
/// Deliveries in flight at once.
const CONCURRENCY: usize = 48;
/// The replicas' subscription TTL: longer than the flood takes (so every
/// subscription is still there when it ends), short enough for the run to see
/// them lapse. Full run; quick: [`QUICK_SUBSCRIPTION_TTL`].
const SUBSCRIPTION_TTL: Duration = Duration::from_secs(240);
/// The quick run's subscription TTL.
const QUICK_SUBSCRIPTION_TTL: Duration = Duration::from_secs(20);

/// What the run measured.
#[derive(Debug, Default)]
pub struct Figures {
    /// Mentions sent, each in its own thread.
    pub threads: usize,
    /// Acknowledged (2xx) within 3 s.
    pub acked: usize,
    /// Answered in the fake Slack.
    pub answered: usize,
    /// Ack latency p50 / p99 (ms).
    pub p50_ms: f64,
    /// p99 (ms).
    pub p99_ms: f64,
    /// Deliveries per second over the send phase.
    pub rate: f64,
    /// Redis keys before, after the sends, after the subscription TTL.
    pub keys: (u64, u64, u64),
    /// Subscription keys after the sends, and how many of them had no TTL.
    pub subscriptions: (usize, usize),
    /// Subscription keys left after the subscription TTL.
    pub subscriptions_left: usize,
    /// Redis `used_memory` (bytes) before, after the sends, after the TTL.
    pub memory: (u64, u64, u64),
    /// The keys after the sends, by kind.
    pub census_after: Vec<Kind>,
    /// The keys after the subscription TTL, by kind.
    pub census_later: Vec<Kind>,
    /// Per replica: resident memory before and after the sends (MiB).
    pub rss_mib: Vec<(f64, f64)>,
}

impl Figures {
    /// Redis bytes per delivery while the subscriptions live.
    pub fn bytes_per_delivery(&self) -> f64 {
        self.memory.1.saturating_sub(self.memory.0) as f64 / self.threads.max(1) as f64
    }

    /// Redis bytes per delivery once they lapsed (the dedupe marks).
    pub fn bytes_left_per_delivery(&self) -> f64 {
        self.memory.2.saturating_sub(self.memory.0) as f64 / self.threads.max(1) as f64
    }
}

/// Keys of the bucket itself, one each per hash-tag bucket: no TTL, bounded
/// by the number of buckets.
const FIXED_KINDS: [&str; 3] = ["fence", "orphans", "slotorphans"];

/// Keys of one kind (`sub`, `dedupe`, `acked`, …).
#[derive(Debug, Default, Clone)]
pub struct Kind {
    /// The kind: the key's segment after the channel, or the bucket key's name.
    pub kind: String,
    /// How many.
    pub keys: usize,
    /// How many of them have no TTL.
    pub immortal: usize,
}

/// Counts the keys under `prefix` by kind, and those without a TTL, in one
/// script on the server (a scan; the harness's own Redis).
const CENSUS: &str = r#"
local counts, immortal, order = {}, {}, {}
local cursor = "0"
repeat
  local page = redis.call("SCAN", cursor, "MATCH", ARGV[1] .. ":*", "COUNT", 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local parts = {}
    for part in string.gmatch(key, "[^:]+") do parts[#parts + 1] = part end
    local kind = parts[6] or parts[3] or "?"
    if counts[kind] == nil then counts[kind] = 0; immortal[kind] = 0; order[#order + 1] = kind end
    counts[kind] = counts[kind] + 1
    if redis.call("PTTL", key) == -1 then immortal[kind] = immortal[kind] + 1 end
  end
until cursor == "0"
local out = {}
for _, kind in ipairs(order) do
  out[#out + 1] = kind; out[#out + 1] = counts[kind]; out[#out + 1] = immortal[kind]
end
return out
"#;

fn census(redis: &Redis, prefix: &str) -> Result<Vec<Kind>, String> {
    let reply = redis
        .command(&["EVAL", CENSUS, "0", prefix])
        .map_err(|e| e.to_string())?;
    let lines: Vec<&str> = reply.lines().collect();
    Ok(lines
        .chunks(3)
        .filter_map(|c| match c {
            [kind, keys, immortal] => Some(Kind {
                kind: (*kind).to_owned(),
                keys: keys.parse().ok()?,
                immortal: immortal.parse().ok()?,
            }),
            _ => None,
        })
        .collect())
}

/// Runs the scenario; `Ok((breaches, figures))`, `Err` for a harness failure.
pub async fn run(bin: &Path, quick: bool) -> Result<(Vec<String>, Figures), String> {
    let (threads, ttl) = if quick {
        (THREADS / 20, QUICK_SUBSCRIPTION_TTL)
    } else {
        (THREADS, SUBSCRIPTION_TTL)
    };
    let redis = Redis::start().map_err(|e| format!("redis: {e}"))?;
    let fake = FakeSlack::try_start()
        .await
        .map_err(|e| format!("fake slack: {e}"))?;
    let prefix = "chaos-many-threads";
    let mut replicas = Vec::new();
    for i in 0..3 {
        let mut env = crate::cluster::door_env(&redis.url(), prefix);
        env.retain(|(k, _)| k != "SLACK_API_URL");
        env.push(("SLACK_API_URL".into(), fake.base_url().to_owned()));
        env.push((
            "CHAT_SUBSCRIPTION_TTL_MS".into(),
            ttl.as_millis().to_string(),
        ));
        replicas.push(
            Replica::start(bin, &format!("r{i}"), &env)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let mut figures = Figures {
        threads,
        ..Figures::default()
    };
    let rss_before: Vec<u64> = replicas
        .iter()
        .filter_map(|r| r.usage().map(|u| u.1))
        .collect();
    figures.keys.0 = redis.dbsize().unwrap_or(0);
    figures.memory.0 = redis.info("memory", "used_memory").unwrap_or(0);

    // The flood: one mention per thread, spread over the replicas.
    let sender = Arc::new(Sender::new(
        replicas.iter().map(Replica::base).collect(),
        Vec::new(),
    ));
    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let mut sends = JoinSet::new();
    let started = Instant::now();
    for n in 0..threads {
        let permit = gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let sender = sender.clone();
        sends.spawn(async move {
            let root = format!("{}.{:06}", 1_700_000_000 + n / 1_000_000, n % 1_000_000);
            let d = sender::mention(&format!("EvMany{n}"), "T1", "C1", &root, &root, "hi", false);
            let t = Instant::now();
            let (status, _) = sender.attempt(&d, n, 0).await;
            drop(permit);
            ((200..300).contains(&status), t.elapsed())
        });
    }
    let mut latencies = Vec::with_capacity(threads);
    while let Some(done) = sends.join_next().await {
        let (acked, took) = done.map_err(|e| e.to_string())?;
        if acked && took < Duration::from_secs(3) {
            figures.acked += 1;
        }
        latencies.push(took);
    }
    figures.rate = threads as f64 / started.elapsed().as_secs_f64();
    latencies.sort();
    let q = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    figures.p50_ms = q(0.50);
    figures.p99_ms = q(0.99);

    // Every mention answered (deferred: the answers trail the acks).
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        figures.answered = fake.replies_per_event().len();
        if figures.answered >= threads || Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // The last subscription was made by now.
    let flooded = Instant::now();
    figures.rss_mib = rss_before
        .iter()
        .zip(&replicas)
        .map(|(b, r)| {
            let after = r.usage().map_or(0, |u| u.1);
            (*b as f64 / 1024.0, after as f64 / 1024.0)
        })
        .collect();

    // What the flood left in Redis: every subscription has a TTL.
    figures.keys.1 = redis.dbsize().unwrap_or(0);
    figures.memory.1 = redis.info("memory", "used_memory").unwrap_or(0);
    let after = census(&redis, prefix)?;
    let subs = after.iter().find(|k| k.kind == "sub");
    figures.subscriptions = subs.map_or((0, 0), |k| (k.keys, k.immortal));
    figures.census_after = after;

    // Silence for the subscription TTL: they lapse.
    tokio::time::sleep_until((flooded + ttl + Duration::from_secs(2)).into()).await;
    // Redis expires lazily and by sampling; a scan touches (and expires) each.
    let later = census(&redis, prefix)?;
    figures.subscriptions_left = later.iter().find(|k| k.kind == "sub").map_or(0, |k| k.keys);
    figures.census_later = later;
    figures.keys.2 = redis.dbsize().unwrap_or(0);
    figures.memory.2 = redis.info("memory", "used_memory").unwrap_or(0);

    let mut breaches = Vec::new();
    if figures.acked < threads {
        breaches.push(format!(
            "{} of {threads} mentions acknowledged within 3 s",
            figures.acked
        ));
    }
    if figures.answered < threads {
        breaches.push(format!(
            "{} of {threads} mentions answered",
            figures.answered
        ));
    }
    if flooded.duration_since(started) < ttl && figures.subscriptions.0 < threads {
        breaches.push(format!(
            "{} subscriptions for {threads} mentioned threads",
            figures.subscriptions.0
        ));
    }
    if figures.subscriptions_left > 0 {
        breaches.push(format!(
            "{} subscriptions outlived their TTL",
            figures.subscriptions_left
        ));
    }
    // Nothing a delivery leaves behind is kept for good: every key without a
    // TTL is one of the fixed per-bucket keys (fence counters, indexes).
    for k in figures.census_after.iter().chain(&figures.census_later) {
        if k.immortal > 0 && !FIXED_KINDS.contains(&k.kind.as_str()) {
            breaches.push(format!("{} `{}` keys have no TTL", k.immortal, k.kind));
        }
    }
    for (i, r) in replicas.iter().enumerate() {
        if !r.alive() || r.usage().is_none() {
            breaches.push(format!("replica r{i} is gone"));
        }
    }
    for r in &mut replicas {
        r.terminate(Duration::from_secs(5)).await;
    }
    drop(redis);
    Ok((breaches, figures))
}
