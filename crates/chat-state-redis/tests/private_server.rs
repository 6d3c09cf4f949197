//! Tests that need a Redis server to themselves: command counts (`INFO
//! commandstats` is server-wide), and a server that stops and comes back.
//!
//! Each starts its own `redis-server` on a free loopback port
//! (`chat-test-redis`). Without the binary they skip with a notice, except
//! under `CI=true`.

use chat_core::Coordination;
use std::collections::HashMap;
use std::time::Duration;

use chat_core::{
    AdmitRequest, BurstOptions, Concurrency, ConcurrentOptions, DebounceOptions, Decision, Handoff,
    Inspection, Renewal, StateBackend, StateError,
};
use chat_state_redis::RedisState;
use chat_test_redis::RedisServer;
use chat_testkit::EventBuilder;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

fn client(server: &RedisServer) -> redis::Client {
    redis::Client::open(server.url()).unwrap_or_else(|e| panic!("client: {e}"))
}

/// A server of the test's own, a backend on it with one connection, and a
/// connection of the test's to look at the server with.
async fn private_server() -> Option<(RedisServer, RedisState, redis::aio::MultiplexedConnection)> {
    let server = RedisServer::start_or_skip()?;
    let state = RedisState::builder()
        .url(server.url())
        .pool_size(1)
        .build()
        .await
        .unwrap_or_else(|e| panic!("backend: {e}"));
    let conn = client(&server)
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("connection: {e}"));
    Some((server, state, conn))
}

/// `INFO commandstats` as command → calls.
async fn command_calls(conn: &mut redis::aio::MultiplexedConnection) -> HashMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("INFO: {e}"));
    info.lines()
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
        .collect()
}

fn strategies() -> [Concurrency; 5] {
    let ms = Duration::from_millis;
    [
        Concurrency::Drop,
        Concurrency::queue(),
        Concurrency::Debounce(DebounceOptions::default().interval(ms(500))),
        Concurrency::Burst(BurstOptions::default().window(ms(500))),
        Concurrency::Concurrent(ConcurrentOptions::default().max(2)),
    ]
}

fn request(thread: &str, id: &str, concurrency: Concurrency) -> AdmitRequest {
    let t = chat_core::ThreadRef::new(chat_core::Platform::new("test"), "T1", "C1", thread);
    let event = EventBuilder::new(t.clone()).id(id).mention(id).build();
    AdmitRequest::new(event, t.thread_scope(), concurrency)
}

/// One `admit` is one round trip, one `FCALL`, for every strategy and every
/// verdict (granted, queued, pending, dropped, duplicate, waiting).
#[tokio::test]
async fn every_admit_is_exactly_one_fcall() {
    let Some((server, state, mut stats)) = private_server().await else {
        return;
    };
    // Warm up: the pool's connection exists and the library is loaded.
    state
        .admit(request("warm", "warm", Concurrency::Drop))
        .await
        .unwrap();

    // MONITOR shows every command the server runs, with its source: a client's
    // address, or `lua` for the calls inside a script.
    let mut monitor = Command::new("redis-cli")
        .args(["-p", &server.port().to_string(), "monitor"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(monitor.stdout.take().unwrap()).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("OK"));

    const ROUNDS: usize = 6;
    let before = command_calls(&mut stats).await;
    let mut admits = 0;
    for (s, c) in strategies().into_iter().enumerate() {
        for i in 0..ROUNDS {
            // Every strategy gets a busy scope after its first event, and the
            // last round repeats an event: a duplicate.
            let id = if i + 1 == ROUNDS { 0 } else { i };
            state
                .admit(request(&format!("s{s}"), &format!("e{id}"), c))
                .await
                .unwrap();
            admits += 1;
        }
    }
    let after = command_calls(&mut stats).await;
    let _: String = redis::cmd("ECHO")
        .arg("end-of-admits")
        .query_async(&mut stats)
        .await
        .unwrap();

    // commandstats: exactly one FCALL per admit, and nothing a client sends
    // besides functions (no PING, FUNCTION LOAD, EVAL, MULTI, …).
    let delta = |name: &str| after.get(name).unwrap_or(&0) - before.get(name).unwrap_or(&0);
    assert_eq!(delta("fcall"), admits, "FCALL calls for {admits} admits");
    for name in [
        "eval",
        "evalsha",
        "ping",
        "function|load",
        "multi",
        "exec",
        "unwatch",
    ] {
        assert_eq!(delta(name), 0, "{name} was sent");
    }

    // MONITOR: the only commands clients sent between the two INFOs are the
    // FCALLs (everything else ran inside them).
    let mut sent = Vec::new();
    let mut counting = false;
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("\"end-of-admits\"") {
            break;
        }
        if line.contains("\"INFO\"") || line.contains("\"info\"") {
            counting = !counting;
            continue;
        }
        if counting && !line.contains(" lua] ") {
            let command = line.split('"').nth(1).unwrap_or("").to_ascii_lowercase();
            sent.push(command);
        }
    }
    monitor.kill().await.unwrap();
    assert_eq!(sent.len() as u64, admits, "client commands: {sent:?}");
    assert!(
        sent.iter().all(|c| c == "fcall"),
        "client commands: {sent:?}"
    );
}

/// A refused connection is a typed error, not a panic.
#[tokio::test]
async fn a_refused_connection_is_unavailable() {
    let r = RedisState::builder()
        .url(format!(
            "redis://127.0.0.1:{}",
            chat_test_redis::free_ports(1, false).unwrap()[0]
        ))
        .timeout(Duration::from_secs(2))
        .build()
        .await;
    assert!(
        matches!(r, Err(StateError::Unavailable(_) | StateError::Timeout(_))),
        "got {r:?}"
    );
}

/// A malformed URL or prefix is refused when building.
#[tokio::test]
async fn bad_configuration_is_an_invalid_request() {
    for b in [
        RedisState::builder(),
        RedisState::builder().url("not a url"),
        RedisState::builder()
            .url("redis://127.0.0.1:1")
            .prefix("a{b}"),
        RedisState::builder()
            .url("redis://127.0.0.1:1")
            .pool_size(0),
    ] {
        let r = b.build().await;
        assert!(matches!(r, Err(StateError::InvalidRequest(_))), "got {r:?}");
    }
}

/// The server goes away: calls fail with typed errors. It comes back empty
/// (no functions): the backend reconnects and loads its library again
/// (`Function not found` recovery).
#[tokio::test]
async fn a_restarted_server_is_recovered_from() {
    let Some(mut server) = RedisServer::start_or_skip() else {
        return;
    };
    let state = RedisState::builder()
        .url(server.url())
        .pool_size(1)
        .timeout(Duration::from_secs(2))
        .ack_timeout(Duration::from_secs(1))
        .build()
        .await
        .unwrap();
    state
        .admit(request("1", "a", Concurrency::Drop))
        .await
        .unwrap();
    server.kill();

    let r = state.admit(request("1", "b", Concurrency::Drop)).await;
    assert!(
        matches!(r, Err(StateError::Unavailable(_) | StateError::Timeout(_))),
        "got {r:?}"
    );
    assert!(state.health().await.is_err());

    server.restart_empty().unwrap();
    let mut last = None;
    for _ in 0..3 {
        match state.admit(request("1", "c", Concurrency::queue())).await {
            Ok(a) => {
                assert!(matches!(a.decision, Decision::Run(_)), "{:?}", a.decision);
                return;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no recovery after the restart: {last:?}");
}

/// The libraries a server holds, by name (`FUNCTION LIST`).
fn libraries(listing: &str) -> Vec<String> {
    // redis-cli prints each library as `library_name` then its name.
    let lines: Vec<&str> = listing.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "library_name")
        .map(|w| w[1].to_owned())
        .collect()
}

/// A server that lost the library while the backend stayed connected
/// (`FUNCTION FLUSH`, as an operator might, or a failover to a node that never
/// had it): the next call loads it once and answers, without an error.
#[tokio::test]
async fn a_server_that_lost_its_functions_gets_them_again() {
    let Some((server, state, mut stats)) = private_server().await else {
        return;
    };
    state
        .admit(request("lost", "a", Concurrency::Drop))
        .await
        .unwrap();
    let loaded = libraries(&server.command(&["FUNCTION", "LIST"]).unwrap());
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert!(loaded[0].starts_with("chatrs_"), "{loaded:?}");

    server.command(&["FUNCTION", "FLUSH"]).unwrap();
    let before = command_calls(&mut stats).await;
    let a = state
        .admit(request("lost", "b", Concurrency::queue()))
        .await
        .unwrap();
    assert!(
        matches!(a.decision, Decision::Queued { .. }),
        "{:?}",
        a.decision
    );
    let after = command_calls(&mut stats).await;
    let delta = |name: &str| after.get(name).unwrap_or(&0) - before.get(name).unwrap_or(&0);
    assert_eq!(delta("function|load"), 1, "one load");
    // The call that found no function, and its retry.
    assert_eq!(delta("fcall"), 2, "one retried call");
    assert_eq!(
        libraries(&server.command(&["FUNCTION", "LIST"]).unwrap()),
        loaded
    );
}

/// Every call in flight when the library went missing finds it missing; the
/// server compiles it once for all of them, not once per call.
#[tokio::test]
async fn calls_that_find_the_functions_missing_together_load_them_once() {
    let Some((server, state, mut stats)) = private_server().await else {
        return;
    };
    state
        .admit(request("herd", "warm", Concurrency::Drop))
        .await
        .unwrap();
    server.command(&["FUNCTION", "FLUSH"]).unwrap();
    let before = command_calls(&mut stats).await;
    let admits = (0..32).map(|i| {
        state.admit(request(
            &format!("h{i}"),
            &format!("e{i}"),
            Concurrency::Drop,
        ))
    });
    for a in futures_util::future::join_all(admits).await {
        let a = a.unwrap();
        assert!(matches!(a.decision, Decision::Run(_)), "{:?}", a.decision);
    }
    let after = command_calls(&mut stats).await;
    let delta = |name: &str| after.get(name).unwrap_or(&0) - before.get(name).unwrap_or(&0);
    assert_eq!(delta("function|load"), 1, "one load for 32 calls");
}

/// A server out of memory (`maxmemory` reached, `noeviction`) refuses new
/// work, and what was admitted still drains: the holder renews and finishes,
/// and the scope can be inspected.
#[tokio::test]
async fn a_full_server_refuses_new_work_and_lets_admitted_work_finish() {
    let Some((server, state, _stats)) = private_server().await else {
        return;
    };
    let a = state
        .admit(request("full", "a", Concurrency::queue()))
        .await
        .unwrap();
    let Decision::Run(lease) = a.decision else {
        panic!("{:?}", a.decision);
    };
    server
        .command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .unwrap();
    server
        .command(&["CONFIG", "SET", "maxmemory", "1"])
        .unwrap();

    let refused = state
        .admit(request("full", "b", Concurrency::queue()))
        .await;
    assert!(
        matches!(&refused, Err(StateError::Backend(e)) if e.to_string().contains("OOM")),
        "{refused:?}"
    );
    let renewed = state.renew(&lease, Duration::from_secs(30)).await.unwrap();
    assert!(matches!(renewed, Renewal::Renewed { .. }), "{renewed:?}");
    let view = state.inspect_scope(lease.scope()).await.unwrap();
    assert!(view.is_some_and(|v| v.holder.is_some()));
    let done = state.finish(&lease).await.unwrap();
    assert!(matches!(done, Handoff::Released), "{done:?}");
    server
        .command(&["CONFIG", "SET", "maxmemory", "0"])
        .unwrap();
}

/// On a cluster, the library is on every master from the start, and a master
/// that lost it gets it again at the first call routed there.
#[tokio::test]
async fn every_cluster_master_serves_the_functions() {
    if RedisServer::start_or_skip().is_none() {
        return;
    }
    let cluster = chat_test_redis::RedisCluster::start(3).unwrap_or_else(|e| panic!("{e}"));
    let state = RedisState::builder()
        .cluster(cluster.urls())
        .build()
        .await
        .unwrap_or_else(|e| panic!("backend: {e}"));
    let listing =
        |port: u16| libraries(&chat_test_redis::command(port, &["FUNCTION", "LIST"]).unwrap());
    let first = listing(cluster.ports()[0]);
    assert_eq!(first.len(), 1, "{first:?}");
    for port in cluster.ports() {
        assert_eq!(listing(*port), first, "master {port}");
        chat_test_redis::command(*port, &["FUNCTION", "FLUSH"]).unwrap();
    }
    // Threads hash to slots all over the cluster: each master answers calls,
    // each the first time.
    for i in 0..24 {
        let a = state
            .admit(request(
                &format!("t{i}"),
                &format!("e{i}"),
                Concurrency::Drop,
            ))
            .await
            .unwrap();
        assert!(matches!(a.decision, Decision::Run(_)), "{:?}", a.decision);
    }
    for port in cluster.ports() {
        assert_eq!(listing(*port), first, "master {port}");
    }
}

/// The hour hashes that hold the dedupe marks, each with its `PTTL` (ms).
async fn mark_hashes(conn: &mut redis::aio::MultiplexedConnection) -> Vec<(String, i64)> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*:d:*")
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("KEYS: {e}"));
    let mut out = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap_or_else(|e| panic!("PTTL: {e}"));
        out.push((key, ttl));
    }
    out
}

/// Marks of one bucket and hour share a hash, which must live as long as its
/// longest mark: the first mark gives the new hash an expiry, a later mark with
/// a shorter TTL does not shorten it, one with a longer TTL extends it.
#[tokio::test]
async fn a_hash_of_marks_lives_as_long_as_its_longest_mark() {
    let Some((_server, state, mut conn)) = private_server().await else {
        return;
    };
    let hour = Duration::from_secs(3600);
    let admit = |id: &str, ttl: Duration| request("marks", id, Concurrency::Drop).dedupe_ttl(ttl);

    state.admit(admit("two-hours", 2 * hour)).await.unwrap();
    let first = mark_hashes(&mut conn).await;
    assert_eq!(first.len(), 1, "{first:?}");
    let (key, ttl) = first[0].clone();
    assert!(
        ttl > (2 * hour - Duration::from_secs(60)).as_millis() as i64,
        "a new hash took the first mark's expiry: {ttl} ms"
    );

    // Each step checks the hash it shares with the first mark; should the hour
    // turn between admissions, the new hour's hash must have an expiry.
    let steps = [
        ("one-minute", Duration::from_secs(60), 2 * hour),
        ("three-hours", 3 * hour, 3 * hour),
    ];
    for (id, ttl, lives) in steps {
        state.admit(admit(id, ttl)).await.unwrap();
        let hashes = mark_hashes(&mut conn).await;
        assert!(hashes.iter().all(|(_, ttl)| *ttl > 0), "{hashes:?}");
        if let [(same, ttl)] = hashes.as_slice() {
            assert_eq!(same, &key);
            assert!(
                *ttl > (lives - Duration::from_secs(60)).as_millis() as i64,
                "after the {id} mark the hash lives {ttl} ms, not about {lives:?}"
            );
        }
    }
}

/// A failover can lose the last writes of the bucket's fence counter. The
/// fences granted after it still grow: every fence is at least the server's
/// time in microseconds, so a grant on a server whose counter went back (here:
/// deleted) is above the grants it lost, as long as the server's clock has
/// moved on since them.
#[tokio::test]
async fn fences_keep_growing_when_the_fence_counter_is_lost() {
    let Some((_server, state, mut conn)) = private_server().await else {
        return;
    };
    let first = match state
        .admit(request("f1", "a", Concurrency::Drop))
        .await
        .unwrap()
        .decision
    {
        Decision::Run(lease) => lease,
        other => panic!("{other:?}"),
    };
    let counters: Vec<String> = redis::cmd("KEYS")
        .arg("*:fence")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!counters.is_empty());
    for key in counters {
        let _: i64 = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    // Another thread of the same channel: the same bucket, its counter gone.
    let second = match state
        .admit(request("f2", "b", Concurrency::Drop))
        .await
        .unwrap()
        .decision
    {
        Decision::Run(lease) => lease,
        other => panic!("{other:?}"),
    };
    assert!(
        second.fence() > first.fence(),
        "{} after {}",
        second.fence(),
        first.fence()
    );
}

/// Concurrent calls go out on the shared connection: 64 admits at once open
/// no connection beyond the one the backend made when it was built.
#[tokio::test]
async fn concurrent_calls_share_one_connection() {
    let Some((server, state, _conn)) = private_server().await else {
        return;
    };
    let connections = || {
        server
            .info("stats", "total_connections_received")
            .unwrap_or_else(|e| panic!("INFO: {e}"))
    };
    let before = connections();
    let admits = (0..64).map(|i| {
        state.admit(request(
            &format!("t{i}"),
            &format!("e{i}"),
            Concurrency::queue(),
        ))
    });
    for a in futures_util::future::join_all(admits).await {
        let a = a.unwrap_or_else(|e| panic!("admit: {e}"));
        assert!(matches!(a.decision, Decision::Run(_)), "{:?}", a.decision);
    }
    // Each INFO is a connection of its own.
    assert_eq!(
        connections(),
        before + 1,
        "the admits opened connections of their own"
    );
}

/// A connection on which nothing is answered until a call's timeout is
/// stalled: it is replaced, and calls work again once the server does.
#[tokio::test]
async fn a_stalled_connection_is_replaced() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let state = RedisState::builder()
        .url(server.url())
        .timeout(Duration::from_millis(300))
        .ack_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap_or_else(|e| panic!("backend: {e}"));
    state
        .admit(request("1", "a", Concurrency::queue()))
        .await
        .unwrap_or_else(|e| panic!("admit: {e}"));
    let connections = || {
        server
            .info("stats", "total_connections_received")
            .unwrap_or_else(|e| panic!("INFO: {e}"))
    };
    let before = connections();

    server.stop().unwrap_or_else(|e| panic!("SIGSTOP: {e}"));
    let r = state.admit(request("2", "b", Concurrency::queue())).await;
    server.resume().unwrap_or_else(|e| panic!("SIGCONT: {e}"));
    assert!(matches!(r, Err(StateError::Timeout(_))), "got {r:?}");

    let a = state
        .admit(request("3", "c", Concurrency::queue()))
        .await
        .unwrap_or_else(|e| panic!("admit after the stall: {e}"));
    assert!(matches!(a.decision, Decision::Run(_)), "{:?}", a.decision);
    // Each INFO is a connection of its own; the backend made one more.
    assert_eq!(connections(), before + 2, "the stalled connection was kept");
}
