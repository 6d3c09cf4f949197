//! The `chat-ops` binary against a real Redis (`REDIS_URL`, found by
//! `chat-test-redis`; skipped with a notice without one, except under
//! `CI=true`): a held scope with a queued event is listed, shown, counted,
//! refused a stale release and released with its fence.

// Assertions are what these tests are for; setup failures propagate with `?`.
#![allow(clippy::panic_in_result_fn)]

use chat_core::{Coordination, Inspection};
use std::process::Command;

use chat_core::{AdmitRequest, Concurrency, Decision};
use chat_state_redis::RedisState;
use chat_test_redis::{single_url, unique_prefix};
use chat_testkit::ScriptedAdapter;
use serde_json::Value;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn chat_ops(
    url: &str,
    prefix: &str,
    args: &[&str],
) -> Result<(bool, String), Box<dyn std::error::Error>> {
    let out = Command::new(env!("CARGO_BIN_EXE_chat-ops"))
        .env_remove("REDIS_CLUSTER_URLS")
        .env("REDIS_URL", url)
        .env("REDIS_PREFIX", prefix)
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
async fn the_cli_lists_shows_counts_and_releases_with_the_fence() -> TestResult {
    let Some(url) = single_url() else {
        return Ok(());
    };
    let prefix = unique_prefix();
    let state = RedisState::builder()
        .url(url.as_str())
        .prefix(prefix.as_str())
        .build()
        .await?;
    let adapter = ScriptedAdapter::new("scripted");
    let tenant = format!("T{}", &prefix[prefix.len() - 6..]);
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

    let (ok, listed) = chat_ops(
        &url,
        &prefix,
        &[&["scopes", "--json"][..], &filter[..]].concat(),
    )?;
    assert!(ok, "{listed}");
    let listed: Value = serde_json::from_str(&listed)?;
    assert_eq!(listed[0]["scope"], key.as_str());
    assert_eq!(listed[0]["holder"]["fence"], lease.fence());
    assert_eq!(listed[0]["queued"][0]["event_id"], "second");

    let (ok, shown) = chat_ops(&url, &prefix, &["scope", &key])?;
    assert!(
        ok && shown.contains("queued    second") && shown.contains(&lease.fence().to_string()),
        "{shown}"
    );
    let (ok, depth) = chat_ops(&url, &prefix, &[&["queue-depth"][..], &filter[..]].concat())?;
    assert!(ok && depth.contains("1  total"), "{depth}");

    let stale = (lease.fence() + 1).to_string();
    let (ok, refused) = chat_ops(&url, &prefix, &["release", &key, "--fence", &stale])?;
    assert!(!ok && refused.contains("not released"), "{refused}");
    let fence = lease.fence().to_string();
    let (ok, released) = chat_ops(&url, &prefix, &["release", &key, "--fence", &fence])?;
    assert!(ok && released.contains("released"), "{released}");
    let view = state
        .inspect_scope(&scope)
        .await?
        .ok_or("the work is gone")?;
    assert!(view.holder.is_none());
    assert_eq!(view.queued.len(), 1);
    Ok(())
}
