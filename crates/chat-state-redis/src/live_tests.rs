//! Tests against a live server that need the crate's key names. They use the
//! servers of the integration tests (`REDIS_URL`, `REDIS_CLUSTER_URLS`, found by
//! `chat-test-redis`) and skip with a notice without them, except under
//! `CI=true`. Failures propagate with `?`.

// Assertions are what these tests are for; setup failures propagate with `?`.
#![allow(clippy::panic_in_result_fn)]

use chat_core::{AdmitRequest, Concurrency, DedupeKey, Platform, StateBackend, StateError};
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
        let mut names: Vec<String> = Vec::new();
        for scope in [thread.thread_scope(), thread.channel_scope()] {
            names.extend(keys.scope(&scope).all().iter().map(|k| (*k).to_owned()));
        }
        names.push(tag.dedupe(&DedupeKey::new("C1:1.0")));
        names.push(tag.subscription("1.0"));
        names.push(tag.subscription("2.0"));
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

/// A script that fails on the server (here: a queue key holding a string) is a
/// typed backend error, not a panic or a wrong answer.
#[tokio::test]
async fn a_script_error_is_a_typed_backend_error() -> TestResult {
    let Some(url) = single_url() else {
        return Ok(());
    };
    let prefix = unique_prefix();
    let state = RedisState::builder()
        .url(url.as_str())
        .prefix(prefix.as_str())
        .build()
        .await?;
    let thread = chat_core::ThreadRef::new(Platform::new("test"), "T1", "C1", "1.0");
    let scope = thread.thread_scope();
    let queue_key = Keys::new(&prefix).scope(&scope).queue;
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
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
    let Some(url) = single_url() else {
        return Ok(());
    };
    let prefix = unique_prefix();
    let state = RedisState::builder()
        .url(url.as_str())
        .prefix(prefix.as_str())
        .build()
        .await?;
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
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
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
