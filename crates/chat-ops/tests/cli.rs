//! The `chat-ops` binary against a real Redis (`REDIS_URL`, found by
//! `chat-test-redis`) and a real PostgreSQL (`DATABASE_URL`, which `cargo
//! xtask ci` sets); each skipped with a notice without its server, except
//! under `CI=true`: a held scope with a queued event is listed, shown,
//! counted, refused a stale release and released with its fence.

// Assertions are what these tests are for; setup failures propagate with `?`.
#![allow(clippy::panic_in_result_fn)]

use std::process::Command;

use chat_core::{AdmitRequest, Concurrency, Decision, StateBackend};
use chat_state_postgres::PostgresState;
use chat_state_redis::RedisState;
use chat_test_redis::{single_url, unique_prefix};
use chat_testkit::ScriptedAdapter;
use serde_json::Value;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `chat-ops` with `env` (its store) and nothing of this process's
/// store settings; whether it succeeded, and what it printed.
fn chat_ops(
    env: &[(&str, &str)],
    args: &[&str],
) -> Result<(bool, String), Box<dyn std::error::Error>> {
    let out = Command::new(env!("CARGO_BIN_EXE_chat-ops"))
        .env_remove("REDIS_URL")
        .env_remove("REDIS_CLUSTER_URLS")
        .env_remove("DATABASE_URL")
        .envs(env.iter().copied())
        .args(args)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8(out.stdout)?,
        String::from_utf8(out.stderr)?
    );
    Ok((out.status.success(), text))
}

#[tokio::test]
async fn the_cli_lists_shows_counts_and_releases_with_the_fence_on_redis() -> TestResult {
    let Some(url) = single_url() else {
        return Ok(());
    };
    let prefix = unique_prefix();
    let state = RedisState::builder()
        .url(url.as_str())
        .prefix(prefix.as_str())
        .build()
        .await?;
    let env = [
        ("REDIS_URL", url.as_str()),
        ("REDIS_PREFIX", prefix.as_str()),
    ];
    list_show_count_release(&state, &env, &prefix).await
}

#[tokio::test]
async fn the_cli_lists_shows_counts_and_releases_with_the_fence_on_postgres() -> TestResult {
    let Some(url) = chat_test_postgres::database_url() else {
        return Ok(());
    };
    let namespace = chat_test_postgres::unique_schema();
    let schema = "chat_ops_cli";
    let state = PostgresState::builder()
        .url(url.as_str())
        .schema(schema)
        .namespace(namespace.as_str())
        .pool_size(2)
        .build()
        .await?;
    let env = [
        ("DATABASE_URL", url.as_str()),
        ("DATABASE_SCHEMA", schema),
        ("DATABASE_NAMESPACE", namespace.as_str()),
    ];
    list_show_count_release(&state, &env, &namespace).await
}

/// A held scope with a queued event in `state`, which `chat-ops` with
/// `env` lists, shows, counts and releases; `unique` tells this run's
/// tenant apart.
async fn list_show_count_release(
    state: &dyn StateBackend,
    env: &[(&str, &str)],
    unique: &str,
) -> TestResult {
    let adapter = ScriptedAdapter::new("scripted");
    let tenant = format!("T{}", &unique[unique.len() - 6..]);
    let first = adapter.mention(&tenant, "C1", "9.1", "first", "hi");
    let scope = first.thread.thread_scope();
    let Decision::Run(lease) = state
        .admit(AdmitRequest::new(
            first,
            scope.clone(),
            Concurrency::queue(),
        ))
        .await?
        .decision
    else {
        return Err("the first event did not get the lease".into());
    };
    let second = adapter.mention(&tenant, "C1", "9.1", "second", "there");
    state
        .admit(AdmitRequest::new(
            second,
            scope.clone(),
            Concurrency::queue(),
        ))
        .await?;
    let key = scope.to_string();
    let filter = ["--platform", "scripted", "--tenant", tenant.as_str()];

    let (ok, listed) = chat_ops(env, &[&["scopes", "--json"][..], &filter[..]].concat())?;
    assert!(ok, "{listed}");
    let listed: Value = serde_json::from_str(&listed)?;
    assert_eq!(listed[0]["scope"], key.as_str());
    assert_eq!(listed[0]["holder"]["fence"], lease.fence());
    assert_eq!(listed[0]["queued"][0]["event_id"], "second");

    let (ok, shown) = chat_ops(env, &["scope", &key])?;
    assert!(
        ok && shown.contains("queued    second") && shown.contains(&lease.fence().to_string()),
        "{shown}"
    );
    let (ok, depth) = chat_ops(env, &[&["queue-depth"][..], &filter[..]].concat())?;
    assert!(ok && depth.contains("1  total"), "{depth}");

    let stale = (lease.fence() + 1).to_string();
    let (ok, refused) = chat_ops(env, &["release", &key, "--fence", &stale])?;
    assert!(!ok && refused.contains("not released"), "{refused}");
    let fence = lease.fence().to_string();
    let (ok, released) = chat_ops(env, &["release", &key, "--fence", &fence])?;
    assert!(ok && released.contains("released"), "{released}");
    let view = state
        .inspect_scope(&scope)
        .await?
        .ok_or("the work is gone")?;
    assert!(view.holder.is_none());
    assert_eq!(view.queued.len(), 1);
    Ok(())
}
