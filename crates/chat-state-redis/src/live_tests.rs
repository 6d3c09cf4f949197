//! Tests against a live server that need the crate's key names. They use the
//! servers of the integration tests (`REDIS_URL`, `REDIS_CLUSTER_URLS`, found by
//! `chat-test-redis`) and skip with a notice without them, except under
//! `CI=true`. Failures propagate with `?`.

// Assertions are what these tests are for; setup failures propagate with `?`.
#![allow(clippy::panic_in_result_fn)]

use std::time::Duration;

use chat_core::{AdmitRequest, Concurrency, DedupeKey, Platform, StateError};
use chat_core::{Coordination, Inspection};
use chat_test_redis::{cluster_urls, single_url, unique_prefix};
use chat_testkit::EventBuilder;

use crate::RedisState;
use crate::keys::Keys;

/// What a live test can fail with: the server's or the backend's errors.
type TestResult = Result<(), Box<dyn std::error::Error>>;

/// No CROSSSLOT on a cluster: every key one call touches — the scope's keys,
/// its bucket's fence and index, the channel scope's keys, dedupe marks and
/// subscriptions of its threads — hashes to one slot, by the server's own
/// `CLUSTER KEYSLOT`.
#[tokio::test]
async fn every_key_of_a_channel_maps_to_one_cluster_slot() -> TestResult {
    let Some(node) = cluster_urls().and_then(|urls| urls.into_iter().next()) else {
        return Ok(());
    };
    let mut conn = redis::Client::open(node)?
        .get_multiplexed_async_connection()
        .await?;
    let keys = Keys::new(&unique_prefix());
    for (tenant, channel) in [("T1", "C1"), ("E0:T9", "{odd}:chan"), ("org", "issue-7")] {
        let thread = chat_core::ThreadRef::new(Platform::SLACK, tenant, channel, "1.0");
        let tag = keys.thread(&thread);
        let mut names: Vec<Vec<u8>> = Vec::new();
        for scope in [thread.thread_scope(), thread.channel_scope()] {
            names.extend(
                keys.scope(&scope)
                    .all()
                    .iter()
                    .map(|k| k.as_bytes().to_vec()),
            );
        }
        // A mark's name, and the hourly hash the scripts keep it in.
        let mark = tag.dedupe(&DedupeKey::new("C1:1.0"));
        let mut hour = mark[..mark.len() - crate::keys::MARK_DIGEST].to_vec();
        hour.extend_from_slice(b"492113");
        names.push(mark);
        names.push(hour);
        names.push(tag.subscription("1.0").into_bytes());
        names.push(tag.subscription("2.0").into_bytes());
        let mut slots = std::collections::BTreeSet::new();
        for name in &names {
            let slot: i64 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(name)
                .query_async(&mut conn)
                .await?;
            slots.insert(slot);
        }
        assert_eq!(slots.len(), 1, "{tenant}/{channel}: {names:?} -> {slots:?}");
    }
    Ok(())
}

/// A backend on `REDIS_URL` under a fresh prefix, the prefix, and a raw
/// connection to the same server; `None` (skip) without a server.
async fn single_server() -> Result<
    Option<(RedisState, String, redis::aio::MultiplexedConnection)>,
    Box<dyn std::error::Error>,
> {
    let Some(url) = single_url() else {
        return Ok(None);
    };
    let prefix = unique_prefix();
    let state = RedisState::builder()
        .url(url.as_str())
        .prefix(prefix.as_str())
        .build()
        .await?;
    let conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    Ok(Some((state, prefix, conn)))
}

/// A script that fails on the server (here: a queue key holding a string) is a
/// typed backend error, not a panic or a wrong answer.
#[tokio::test]
async fn a_script_error_is_a_typed_backend_error() -> TestResult {
    let Some((state, prefix, mut conn)) = single_server().await? else {
        return Ok(());
    };
    let thread = chat_core::ThreadRef::new(Platform::new("test"), "T1", "C1", "1.0");
    let scope = thread.thread_scope();
    let queue_key = Keys::new(&prefix).scope(&scope).queue;
    let _: () = redis::cmd("SET")
        .arg(&queue_key)
        .arg("not a hash")
        .arg("PX")
        .arg(10_000)
        .query_async(&mut conn)
        .await?;
    let event = EventBuilder::new(thread).id("a").mention("a").build();
    let r = state
        .admit(AdmitRequest::new(event, scope, Concurrency::queue()))
        .await;
    assert!(matches!(r, Err(StateError::Backend(_))), "got {r:?}");
    let _: () = redis::cmd("DEL")
        .arg(&queue_key)
        .query_async(&mut conn)
        .await?;
    Ok(())
}

/// One stored entry that cannot be decoded (written by another version, or
/// damaged) does not take its batch down: it is reported `Undecodable`, by the
/// id its ref carries, and the other entries are handed over.
#[tokio::test]
async fn an_undecodable_entry_is_reported_and_the_rest_run() -> TestResult {
    let Some((state, prefix, mut conn)) = single_server().await? else {
        return Ok(());
    };
    let thread = chat_core::ThreadRef::new(Platform::new("test"), "T1", "C1", "1.0");
    let scope = thread.thread_scope();
    let admit = |id: &str| {
        let e = EventBuilder::new(thread.clone()).id(id).mention(id).build();
        AdmitRequest::new(e, scope.clone(), Concurrency::queue())
    };
    let chat_core::Decision::Run(lease) = state.admit(admit("a")).await?.decision else {
        return Err("a did not get the lease".into());
    };
    state.admit(admit("b")).await?;
    state.admit(admit("c")).await?;
    let queue_key = Keys::new(&prefix).scope(&scope).queue;
    let _: () = redis::cmd("LSET")
        .arg(&queue_key)
        .arg(0)
        .arg("1|2|b|1.0\n{\"not\": \"an event\"}")
        .query_async(&mut conn)
        .await?;
    let chat_core::Handoff::Run(batch) = state.finish(&lease).await? else {
        return Err("nothing handed over".into());
    };
    let ids: Vec<&str> = batch.entries.iter().map(|w| w.event.id.as_str()).collect();
    assert_eq!(ids, ["c"]);
    assert_eq!(batch.reports.len(), 1);
    assert_eq!(batch.reports[0].event_id.as_str(), "b");
    assert_eq!(batch.reports[0].fate, chat_core::Fate::Undecodable);
    assert_eq!(batch.reports[0].thread.as_ref(), Some(&thread));
    Ok(())
}

/// A mark lives as a field of the hourly hash of the hour it was set; a lookup
/// reads every hour its dedupe TTL spans, and honours the mark's own expiry.
/// Here a mark is planted two hours back: a 3 h TTL finds it (duplicate), a
/// 1 h TTL does not look that far (runs), and once its own expiry has passed it
/// no longer counts although its hash is still there.
#[tokio::test]
async fn a_mark_is_found_in_every_hour_its_ttl_spans_and_only_until_it_expires() -> TestResult {
    let Some((state, prefix, mut conn)) = single_server().await? else {
        return Ok(());
    };
    let (secs, _): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await?;
    let now_ms = secs * 1000;
    let keys = Keys::new(&prefix);
    // Plants a mark of another request, set two hours ago, expiring at `until`.
    let plant = |thread: &chat_core::ThreadRef, key: &str, until: u64| {
        let name = keys.thread(thread).dedupe(&DedupeKey::new(key));
        let (base, field) = name.split_at(name.len() - crate::keys::MARK_DIGEST);
        let mut hour = base.to_vec();
        hour.extend_from_slice((now_ms / 3_600_000 - 2).to_string().as_bytes());
        let mut value = b"r".to_vec();
        value.extend_from_slice(&until.to_be_bytes()[2..]);
        value.extend_from_slice(b"\x01\x02\x03\x04");
        (hour, field.to_vec(), value)
    };
    let admit = |thread: &chat_core::ThreadRef, key: &str, ttl_h: u64| {
        let event = EventBuilder::new(thread.clone())
            .id(key)
            .dedupe(key)
            .mention("m")
            .build();
        AdmitRequest::new(event, thread.thread_scope(), Concurrency::Drop)
            .dedupe_ttl(std::time::Duration::from_secs(ttl_h * 3600))
    };
    for (n, (until, ttl_h, duplicate)) in [
        (now_ms + 600_000, 3, true),
        (now_ms + 600_000, 1, false),
        (now_ms - 1, 3, false),
    ]
    .into_iter()
    .enumerate()
    {
        let thread = chat_core::ThreadRef::new(Platform::SLACK, "T1", "C1", format!("{n}.0"));
        let key = format!("k{n}");
        let (hour, field, value) = plant(&thread, &key, until);
        let _: () = redis::cmd("HSET")
            .arg(&hour)
            .arg(&field)
            .arg(&value)
            .query_async(&mut conn)
            .await?;
        let _: () = redis::cmd("PEXPIRE")
            .arg(&hour)
            .arg(60_000)
            .query_async(&mut conn)
            .await?;
        let admission = state.admit(admit(&thread, &key, ttl_h)).await?;
        assert_eq!(
            matches!(admission.decision, chat_core::Decision::Duplicate),
            duplicate,
            "case {n}: {:?}",
            admission.decision
        );
    }
    // A TTL beyond what unmark looks back over is refused, not silently kept.
    let thread = chat_core::ThreadRef::new(Platform::SLACK, "T1", "C1", "9.0");
    let too_long = admit(&thread, "k9", 24 * 8);
    assert!(matches!(
        state.admit(too_long).await,
        Err(StateError::InvalidRequest(_))
    ));
    Ok(())
}

/// An event that runs at once is stored as the admit received it, so its
/// bytes pass through the script once: `Drop` and `Queue` alike. One that
/// waits is stored with the server's admission time and its expiry. The
/// operator's view dates the running one from its batch's hand-out, and the
/// holder reads it as an event that waited nothing.
#[tokio::test]
async fn an_event_run_at_once_is_stored_as_sent_and_one_that_waits_with_its_times() -> TestResult {
    let Some((state, prefix, mut conn)) = single_server().await? else {
        return Ok(());
    };
    let keys = Keys::new(&prefix);
    for (n, concurrency) in [Concurrency::Drop, Concurrency::queue()]
        .into_iter()
        .enumerate()
    {
        let thread = chat_core::ThreadRef::new(Platform::new("test"), "T1", "C1", format!("{n}.0"));
        let scope = thread.thread_scope();
        let scope_keys = keys.scope(&scope);
        let a = EventBuilder::new(thread.clone())
            .id(&format!("a{n}"))
            .mention("a")
            .build();
        let request = AdmitRequest::new(a.clone(), scope.clone(), concurrency);
        let chat_core::Decision::Run(lease) = state.admit(request).await?.decision else {
            return Err(format!("{}: a did not run", concurrency.name()).into());
        };
        let in_flight: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&scope_keys.run_items)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        assert_eq!(
            in_flight,
            [crate::reply::encode_run_first(&a)?],
            "{}",
            concurrency.name()
        );

        // Dated five seconds back by its batch: the view says so.
        let (now_s, _): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
        let _: () = redis::cmd("HSET")
            .arg(&scope_keys.run)
            .arg("t")
            .arg(now_s * 1000 - 5_000)
            .query_async(&mut conn)
            .await?;
        let view = state
            .inspect_scope(&scope)
            .await?
            .ok_or("no view of a busy scope")?;
        assert_eq!(view.in_flight.len(), 1);
        assert_eq!(view.in_flight[0].event_id, a.id);
        let age = view.in_flight[0].age;
        assert!(
            age >= Duration::from_secs(4) && age < Duration::from_secs(60),
            "{age:?}"
        );

        if let Concurrency::Queue(q) = &concurrency {
            let b = EventBuilder::new(thread.clone())
                .id(&format!("b{n}"))
                .mention("b")
                .build();
            state
                .admit(AdmitRequest::new(b.clone(), scope.clone(), concurrency))
                .await?;
            let queued: Vec<String> = redis::cmd("LRANGE")
                .arg(&scope_keys.queue)
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await?;
            assert_eq!(queued.len(), 1);
            let mut header = queued[0].split('\n').next().unwrap_or_default().split('|');
            let (Some(at), Some(expires)) = (header.next(), header.next()) else {
                return Err(format!("a queued entry without its times: {}", queued[0]).into());
            };
            let (at, expires): (i64, i64) = (at.parse()?, expires.parse()?);
            assert!(
                (at - now_s * 1000).abs() < 60_000,
                "admitted {at}, server {now_s} s"
            );
            assert_eq!(expires - at, i64::try_from(q.entry_ttl.as_millis())?);
            assert_eq!(
                header.collect::<Vec<_>>(),
                [b.id.as_str(), thread.thread.as_str()]
            );
            let chat_core::Handoff::Run(batch) = state.finish(&lease).await? else {
                return Err("the queued event was not handed over".into());
            };
            assert_eq!(batch.entries.len(), 1);
            assert_eq!(batch.entries[0].event.id, b.id);
            assert!(!batch.entries[0].expired);
            assert!(batch.entries[0].waited < Duration::from_secs(60));
        }
    }
    Ok(())
}
