//! The scenarios and how one is run: start the store (Redis or PostgreSQL)
//! and three replicas, send, inject the fault, wait for quiescence, check
//! the ledgers and the work left in the store.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use chat_testkit::FakeSlack;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cluster::Replica;
use crate::ledger::{self, Allowances, Report};
use crate::sender::{self, Sender};
use crate::store::{Backend, Store};

/// `CHAT_MAX_CONCURRENT` of the concurrent scenarios.
const MAX_CONCURRENT: usize = 2;

/// A fault injected while events flow. `at` is ms after the first send; `ms` a
/// duration in ms.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub enum Fault {
    /// Nothing goes wrong.
    None,
    /// `CLIENT PAUSE ms WRITE` at `at` ms (Redis only).
    PauseWrites { at: u64, ms: u64 },
    /// SIGSTOP the store at `at` ms, SIGCONT `ms` later.
    StopStore { at: u64, ms: u64 },
    /// Crash the store at `at` ms; it is back `down` ms later — Redis
    /// empty, PostgreSQL with every committed transaction.
    CrashStore { at: u64, down: u64 },
    /// SIGKILL replica 0 at `at` ms.
    KillReplica { at: u64 },
    /// SIGTERM each replica in turn from `at` ms, replacing it.
    Redeploy { at: u64 },
    /// Replica 0 reaches the store through a proxy that adds `delay` ms from
    /// `at` for `ms`, past the ack timeout.
    SlowStore { at: u64, ms: u64, delay: u64 },
    /// Replica 0's proxy drops the connection right after forwarding each
    /// request, from `at` for `ms`: Redis runs it, the reply is lost.
    LoseReplies { at: u64, ms: u64 },
    /// Every request of replica 0 runs twice (a copy replayed on a second
    /// connection a moment later), all along.
    RunTwice,
}

/// One scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name.
    pub name: &'static str,
    /// The store the replicas share.
    pub backend: Backend,
    /// `CHAT_CONCURRENCY`.
    pub strategy: &'static str,
    /// `CHAT_DISPATCH`: `deferred` or `sync`.
    pub dispatch: &'static str,
    /// Send every kind of user action in turn — mentions, reactions, slash
    /// commands, clicks, modal submissions — instead of mentions only.
    pub every_kind: bool,
    /// Distinct user actions sent.
    pub events: usize,
    /// Threads they are spread over.
    pub threads: usize,
    /// Over how long they are sent (ms).
    pub spread_ms: u64,
    /// `ECHO_DELAY_MS`.
    pub delay_ms: u64,
    /// `CHAT_LOCK_TTL_MS`.
    pub lock_ttl_ms: u64,
    /// `CHAT_MAX_DETACHED` per replica.
    pub max_detached: usize,
    /// Also send the `message` twin of every post.
    pub twins: bool,
    /// Extra concurrent retries of every delivery.
    pub storm: usize,
    /// Most events come from one tenant, capped per tenant.
    pub hot_tenant: bool,
    /// The fault.
    pub fault: Fault,
}

impl Scenario {
    const fn base(name: &'static str, strategy: &'static str) -> Self {
        Self {
            name,
            backend: Backend::Redis,
            strategy,
            dispatch: "deferred",
            every_kind: false,
            events: 40,
            threads: 4,
            spread_ms: 1500,
            delay_ms: 100,
            lock_ttl_ms: 2000,
            max_detached: 64,
            twins: false,
            storm: 0,
            hot_tenant: false,
            fault: Fault::None,
        }
    }

    /// The same, under sync dispatch.
    const fn sync(self) -> Self {
        Self {
            dispatch: "sync",
            ..self
        }
    }

    /// The same, on PostgreSQL.
    const fn postgres(self) -> Self {
        Self {
            backend: Backend::Postgres,
            ..self
        }
    }

    /// The same, with every kind of user action.
    const fn every_kind(self) -> Self {
        Self {
            every_kind: true,
            ..self
        }
    }

    fn allowances(&self) -> Allowances {
        let concurrent = (self.strategy == "concurrent").then_some(MAX_CONCURRENT);
        // A killed replica's runs are in flight in the store and run again
        // elsewhere: nothing is allowed to be lost but what Redis itself
        // loses when it restarts empty.
        let (crash_lost, data_loss) = match (self.fault, self.backend) {
            (Fault::CrashStore { .. }, Backend::Redis) => (true, true),
            _ => (false, false),
        };
        Allowances {
            crash_lost,
            data_loss,
            concurrent,
        }
    }
}

/// Every scenario; `reduced` is the set CI runs.
pub fn all() -> Vec<(Scenario, bool)> {
    let s = Scenario::base;
    vec![
        (
            Scenario {
                storm: 3,
                delay_ms: 400,
                ..s("retry-storm", "queue")
            },
            false,
        ),
        (
            Scenario {
                twins: true,
                threads: 8,
                ..s("twins", "queue")
            },
            true,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("burst-drop", "drop")
            },
            false,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("burst-queue", "queue")
            },
            true,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("burst-debounce", "debounce")
            },
            true,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("burst-burst", "burst")
            },
            false,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("burst-each", "burst-each")
            },
            false,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("burst-concurrent", "concurrent")
            },
            false,
        ),
        (
            Scenario {
                events: 10,
                threads: 2,
                delay_ms: 3000,
                lock_ttl_ms: 1000,
                ..s("long-handler", "queue")
            },
            false,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::PauseWrites { at: 700, ms: 2500 },
                ..s("redis-pause", "queue")
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::StopStore { at: 700, ms: 2000 },
                ..s("redis-sigstop", "queue")
            },
            false,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::PauseWrites { at: 700, ms: 7000 },
                ..s("redis-pause-long", "queue")
            },
            false,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::StopStore { at: 700, ms: 7000 },
                ..s("redis-sigstop-long", "queue")
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 300,
                fault: Fault::CrashStore { at: 700, down: 0 },
                ..s("redis-restart-empty", "queue")
            },
            false,
        ),
        (
            Scenario {
                delay_ms: 300,
                lock_ttl_ms: 1500,
                fault: Fault::LoseReplies { at: 300, ms: 2000 },
                ..s("replies-lost", "queue")
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 300,
                lock_ttl_ms: 1500,
                fault: Fault::RunTwice,
                ..s("requests-run-twice", "queue")
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 1500,
                lock_ttl_ms: 1500,
                fault: Fault::KillReplica { at: 800 },
                ..s("replica-kill", "queue")
            },
            true,
        ),
        (
            Scenario {
                events: 60,
                spread_ms: 4000,
                delay_ms: 200,
                fault: Fault::Redeploy { at: 500 },
                ..s("redeploy", "queue")
            },
            false,
        ),
        (
            Scenario {
                events: 40,
                spread_ms: 3000,
                delay_ms: 4000,
                fault: Fault::Redeploy { at: 1000 },
                ..s("redeploy-long-handlers", "queue")
            },
            true,
        ),
        (
            Scenario {
                events: 120,
                threads: 40,
                spread_ms: 200,
                delay_ms: 300,
                max_detached: 4,
                hot_tenant: true,
                ..s("flood", "queue")
            },
            true,
        ),
        (
            Scenario {
                events: 100,
                threads: 1,
                spread_ms: 500,
                delay_ms: 0,
                ..s("finish-race", "queue")
            },
            true,
        ),
        // Sync dispatch (the runtime's default), and every kind of event:
        // runs inside their request cut by a killed replica, a redeploy whose
        // drain is shorter than the handlers, and Redis stopped past every
        // timeout — on both dispatch paths.
        (
            Scenario {
                delay_ms: 1500,
                lock_ttl_ms: 1500,
                fault: Fault::KillReplica { at: 800 },
                ..s("sync-replica-kill", "queue").sync().every_kind()
            },
            true,
        ),
        (
            Scenario {
                spread_ms: 3000,
                delay_ms: 4000,
                fault: Fault::Redeploy { at: 1000 },
                ..s("sync-redeploy-long", "queue").sync().every_kind()
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::StopStore { at: 700, ms: 7000 },
                ..s("sync-redis-stop-long", "queue").sync().every_kind()
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 1500,
                lock_ttl_ms: 1500,
                fault: Fault::KillReplica { at: 800 },
                ..s("kinds-replica-kill", "queue").every_kind()
            },
            false,
        ),
        (
            Scenario {
                spread_ms: 3000,
                delay_ms: 4000,
                fault: Fault::Redeploy { at: 1000 },
                ..s("kinds-redeploy-long", "queue").every_kind()
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::StopStore { at: 700, ms: 7000 },
                ..s("kinds-redis-stop-long", "queue").every_kind()
            },
            false,
        ),
        (
            Scenario {
                fault: Fault::SlowStore {
                    at: 300,
                    ms: 2000,
                    delay: 2500,
                },
                ..s("slow-redis", "queue")
            },
            true,
        ),
        // The same rules on PostgreSQL: a server crash and restart, the
        // server stalled past every timeout, one replica's connection
        // stalled past every timeout, its replies lost, its requests run
        // twice, a replica killed mid-handler, a redeploy — on both
        // dispatch paths and every kind of event.
        (
            Scenario {
                delay_ms: 300,
                lock_ttl_ms: 1500,
                fault: Fault::CrashStore {
                    at: 700,
                    down: 2000,
                },
                ..s("pg-restart", "queue").postgres().every_kind()
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 500,
                lock_ttl_ms: 1500,
                fault: Fault::StopStore { at: 700, ms: 7000 },
                ..s("pg-sync-stop-long", "queue")
                    .postgres()
                    .sync()
                    .every_kind()
            },
            false,
        ),
        (
            Scenario {
                fault: Fault::SlowStore {
                    at: 300,
                    ms: 2000,
                    delay: 7000,
                },
                ..s("pg-stalled-connection", "queue").postgres()
            },
            true,
        ),
        (
            Scenario {
                delay_ms: 300,
                lock_ttl_ms: 1500,
                fault: Fault::LoseReplies { at: 300, ms: 2000 },
                ..s("pg-replies-lost", "queue").postgres()
            },
            false,
        ),
        (
            Scenario {
                delay_ms: 300,
                lock_ttl_ms: 1500,
                fault: Fault::RunTwice,
                ..s("pg-requests-run-twice", "queue").postgres()
            },
            false,
        ),
        (
            Scenario {
                delay_ms: 1500,
                lock_ttl_ms: 1500,
                fault: Fault::KillReplica { at: 800 },
                ..s("pg-sync-replica-kill", "queue")
                    .postgres()
                    .sync()
                    .every_kind()
            },
            true,
        ),
        (
            Scenario {
                spread_ms: 3000,
                delay_ms: 4000,
                fault: Fault::Redeploy { at: 1000 },
                ..s("pg-redeploy-long", "queue").postgres().every_kind()
            },
            true,
        ),
        (
            Scenario {
                threads: 1,
                events: 30,
                spread_ms: 600,
                ..s("pg-burst-debounce", "debounce").postgres()
            },
            false,
        ),
    ]
}

/// Runs one scenario; `Err` for a harness failure (not an invariant breach).
pub async fn run(sc: &Scenario, bin: &Path, seed: u64, work: &Path) -> Result<Report, String> {
    let dir = work.join(sc.name);
    let ledger_dir = dir.join("ledger");
    std::fs::create_dir_all(&ledger_dir).map_err(|e| e.to_string())?;
    let mut store = Store::start(sc.backend)?;
    let fake = FakeSlack::try_start()
        .await
        .map_err(|e| format!("fake slack: {e}"))?;
    let prefix = format!("chaos-{}-{seed}", sc.name);
    let env = |replica: &str| -> Vec<(String, String)> {
        let mut v: Vec<(&str, String)> = vec![
            ("SLACK_SIGNING_SECRET", sender::SECRET.into()),
            ("SLACK_BOT_TOKEN", "xoxb-chaos".into()),
            ("SLACK_BOT_USER_ID", sender::BOT.into()),
            ("SLACK_API_URL", fake.base_url().to_owned()),
            ("CHAT_DISPATCH", sc.dispatch.into()),
            ("CHAT_CONCURRENCY", sc.strategy.into()),
            ("CHAT_DETACH_TIMEOUT_MS", "30000".into()),
            ("CHAT_MAX_DETACHED", sc.max_detached.to_string()),
            ("CHAT_LOCK_TTL_MS", sc.lock_ttl_ms.to_string()),
            ("CHAT_DEBOUNCE_MS", "200".into()),
            ("CHAT_BURST_WINDOW_MS", "200".into()),
            ("CHAT_MAX_CONCURRENT", MAX_CONCURRENT.to_string()),
            ("CHAT_SWEEP_INTERVAL_MS", "500".into()),
            ("CHAT_ACK_TIMEOUT_MS", "2000".into()),
            ("SHUTDOWN_DEADLINE_MS", "3000".into()),
            ("ECHO_DELAY_MS", sc.delay_ms.to_string()),
            (
                "ECHO_LEDGER",
                ledger_dir
                    .join(format!("{replica}.jsonl"))
                    .display()
                    .to_string(),
            ),
        ];
        if sc.hot_tenant {
            v.push(("CHAT_MAX_DETACHED_PER_TENANT", "3".into()));
        }
        v.into_iter()
            .map(|(k, val)| (k.to_owned(), val))
            .chain(store.env(store.port(), &prefix))
            .collect()
    };
    let proxy = crate::proxy::Proxy::start(store.port())
        .await
        .map_err(|e| format!("proxy: {e}"))?;
    proxy.mirror(matches!(sc.fault, Fault::RunTwice));
    let proxied = matches!(
        sc.fault,
        Fault::SlowStore { .. } | Fault::LoseReplies { .. } | Fault::RunTwice
    );
    let mut replicas = Vec::new();
    for i in 0..3 {
        let name = format!("r{i}");
        let mut vars = env(&name);
        if i == 0 && proxied {
            vars.extend(store.env(proxy.port, &prefix));
        }
        replicas.push(
            Replica::start(bin, &name, &vars)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let schedule: Vec<Duration> = [100, 200, 400, 800, 1000, 1500, 2000, 2000, 3000, 3000]
        .into_iter()
        .map(Duration::from_millis)
        .collect();
    let sender = Sender::new(replicas.iter().map(Replica::base).collect(), schedule);
    let mut rng = StdRng::seed_from_u64(seed);
    let started = tokio::time::Instant::now();

    // The sends.
    let mut tasks = Vec::new();
    let mut actions_ids = Vec::new();
    let mut kinds = Vec::new();
    let mut answers = Vec::new();
    let hooks = fake.response_url("commands").replace("/commands", "");
    for i in 0..sc.events {
        let at = sc.spread_ms * i as u64 / sc.events.max(1) as u64 + rng.random_range(0..20);
        let k = rng.random_range(0..sc.threads);
        let team = if sc.hot_tenant && rng.random_range(0..10) < 8 {
            "THOT".to_owned()
        } else {
            format!("T{}", k % 3)
        };
        let root = format!("{}.000000", 1_700_000_000 + k);
        let ts = format!("1700001000.{i:06}");
        let id = format!("Ev{}{i:05}", sc.name.replace('-', ""));
        let kind = if sc.every_kind {
            sender::Kind::ALL[i % sender::Kind::ALL.len()]
        } else {
            sender::Kind::Mention
        };
        let main = sender::of_kind(kind, &id, &team, "C1", &root, &ts, &format!("m{i}"), &hooks);
        answers.push((id.clone(), main.answer.clone()));
        let mut deliveries = vec![main.clone()];
        let mut ids = vec![id.clone()];
        if sc.twins && kind == sender::Kind::Mention {
            let twin_id = format!("{id}m");
            deliveries.push(sender::mention(
                &twin_id,
                &team,
                "C1",
                &root,
                &ts,
                &format!("m{i}"),
                true,
            ));
            ids.push(twin_id);
        }
        for _ in 0..sc.storm {
            deliveries.push(main.clone());
        }
        actions_ids.push(ids);
        kinds.push(kind);
        let picks: Vec<usize> = (0..deliveries.len())
            .map(|_| rng.random_range(0..1000))
            .collect();
        let sender = sender.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            let sends = deliveries.iter().zip(picks).map(|(d, p)| {
                let sender = sender.clone();
                let d = d.clone();
                async move { sender.deliver(&d, |retry| p + retry).await }
            });
            let mut out = Vec::new();
            for h in sends.map(tokio::spawn).collect::<Vec<_>>() {
                if let Ok(s) = h.await {
                    out.push(s);
                }
            }
            out
        }));
    }

    // The fault.
    let mut unclean = Vec::new();
    match sc.fault {
        Fault::None => {}
        Fault::PauseWrites { at, ms } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            store.pause_writes(ms)?;
        }
        Fault::StopStore { at, ms } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            store.stop()?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            store.resume()?;
        }
        Fault::CrashStore { at, down } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            store.crash_and_restart(down).await?;
        }
        Fault::KillReplica { at } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            let dead = replicas[0].base();
            sender
                .targets
                .lock()
                .map_err(|e| e.to_string())?
                .retain(|t| *t != dead);
            replicas[0].kill().await;
        }
        Fault::SlowStore { at, ms, delay } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            proxy.set_delay(delay);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            proxy.set_delay(0);
        }
        Fault::LoseReplies { at, ms } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            proxy.drop_replies(true);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            proxy.drop_replies(false);
        }
        Fault::RunTwice => {}
        Fault::Redeploy { at } => {
            tokio::time::sleep_until(started + Duration::from_millis(at)).await;
            for replica in &mut replicas {
                let old = replica.base();
                sender
                    .targets
                    .lock()
                    .map_err(|e| e.to_string())?
                    .retain(|t| *t != old);
                if !replica.terminate(Duration::from_secs(5)).await {
                    unclean.push(replica.name.clone());
                }
                let name = replica.name.clone();
                let fresh = Replica::start(bin, &name, &env(&name))
                    .await
                    .map_err(|e| e.to_string())?;
                sender
                    .targets
                    .lock()
                    .map_err(|e| e.to_string())?
                    .push(fresh.base());
                *replica = fresh;
            }
        }
    }

    let mut actions = Vec::new();
    let mut inline: HashMap<String, usize> = HashMap::new();
    let mut commands: HashSet<String> = HashSet::new();
    for ((task, ids), kind) in tasks.into_iter().zip(actions_ids).zip(kinds) {
        if kind == sender::Kind::SlashCommand {
            commands.extend(ids.iter().cloned());
        }
        let sends = task.await.map_err(|e| e.to_string())?;
        let answered: usize = sends.iter().map(|s| s.inline_answers.len()).sum();
        if answered > 0 {
            *inline.entry(ids[0].clone()).or_default() += answered;
        }
        actions.push(sender::action(ids, kind, &sends));
    }

    // Quiescence: nothing in flight anywhere, then leases of dead owners expire
    // and the sweep runs what they left.
    let settle = Duration::from_millis(sc.lock_ttl_ms + 1500);
    quiesce(&replicas, Duration::from_millis(sc.delay_ms * 4 + 15_000)).await;
    tokio::time::sleep(settle).await;
    quiesce(&replicas, Duration::from_millis(sc.delay_ms * 4 + 15_000)).await;
    let leftover = store.leftover(&prefix).await?;
    for r in &mut replicas {
        if r.alive() && !r.terminate(Duration::from_secs(5)).await {
            unclean.push(r.name.clone());
        }
    }
    let lines = ledger::load(&ledger_dir).map_err(|e| e.to_string())?;
    let max_detached = sc.max_detached;
    let mut report = ledger::check(&lines, &actions, sc.allowances(), max_detached);
    // A store outage longer than the lease cuts runs after their reply went
    // out; a slash command's rerun answers at its `response_url` again,
    // which Slack does not deduplicate (ADR 0014). Posts are deduplicated
    // by their reply keys, so every other kind must still answer once.
    let outage = matches!(
        sc.fault,
        Fault::StopStore { .. } | Fault::CrashStore { .. } | Fault::PauseWrites { .. }
    );
    let again = if outage { commands } else { HashSet::new() };
    ledger::check_replies(
        &lines,
        &replies(&fake, &answers, &inline),
        &again,
        &mut report,
    );
    if !leftover.is_empty() {
        report.breaches.push(format!(
            "lock or queue keys left after quiescence: {leftover:?}"
        ));
    }
    if !unclean.is_empty() {
        report.breaches.push(format!(
            "replicas did not exit cleanly on SIGTERM: {unclean:?}"
        ));
    }
    Ok(report)
}

/// How many times each event was answered: posts carrying its reply
/// metadata, plus — for slash commands — the echo in its HTTP response and
/// what was posted to its `response_url` later.
fn replies(
    fake: &FakeSlack,
    answers: &[(String, String)],
    inline: &HashMap<String, usize>,
) -> HashMap<String, usize> {
    let mut counts = fake.replies_per_event();
    let later: Vec<String> = fake
        .calls_of("response_url")
        .iter()
        .filter_map(|c| c.body["text"].as_str().map(str::to_owned))
        .collect();
    for (id, answer) in answers {
        let n =
            inline.get(id).copied().unwrap_or(0) + later.iter().filter(|t| *t == answer).count();
        if n > 0 {
            *counts.entry(id.clone()).or_default() += n;
        }
    }
    counts
}

async fn quiesce(replicas: &[Replica], within: Duration) {
    let client = reqwest::Client::new();
    let until = tokio::time::Instant::now() + within;
    let mut calm = 0;
    while tokio::time::Instant::now() < until && calm < 3 {
        let mut busy = false;
        for r in replicas.iter().filter(|r| r.alive()) {
            let stats: Option<serde_json::Value> =
                match client.get(format!("{}/stats", r.base())).send().await {
                    Ok(resp) => resp.json().await.ok(),
                    Err(_) => None,
                };
            busy |= stats.is_none_or(|s| s["in_flight"].as_u64() != Some(0));
        }
        calm = if busy { 0 } else { calm + 1 };
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
