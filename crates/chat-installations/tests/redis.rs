//! `KvInstallations` on a real Redis: two replicas — two `RedisState`s with
//! their own connection pools on one key prefix — see one set of
//! installations, sealed at rest. Needs `REDIS_URL` (`cargo xtask ci` starts
//! a server); without it the test skips with a loud notice, and under
//! `CI=true` it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// The skip notice is the point: a skipped Redis test must be seen.
#![allow(clippy::print_stderr)]

use std::sync::Arc;

use chat_core::{Installation, InstallationStore, KvStore, Platform, Secret, TenantId};
use chat_installations::{EncryptionKey, KeyRing, KvInstallations};
use chat_state_redis::RedisState;

fn redis_url() -> Option<String> {
    match std::env::var("REDIS_URL") {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
            panic!("REDIS_URL is not set and CI=true: the Redis tests must run in CI")
        }
        _ => {
            eprintln!(
                "\n!!! SKIPPED: REDIS_URL is not set, so this Redis test did not run.\n\
                 !!! Run `cargo xtask ci` (it starts Redis itself) or set REDIS_URL.\n"
            );
            None
        }
    }
}

async fn replica(url: &str, prefix: &str) -> Arc<dyn KvStore> {
    Arc::new(
        RedisState::builder()
            .url(url)
            .prefix(prefix)
            .pool_size(2)
            .build()
            .await
            .unwrap_or_else(|e| panic!("connecting to REDIS_URL: {e}")),
    )
}

fn ring(current: (&str, u8), previous: Option<(&str, u8)>) -> KeyRing {
    let ring = KeyRing::new(EncryptionKey::new(current.0, &[current.1; 32]).unwrap());
    match previous {
        Some((id, byte)) => ring
            .with_previous(EncryptionKey::new(id, &[byte; 32]).unwrap())
            .unwrap(),
        None => ring,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_sealed_installations_through_redis() {
    let Some(url) = redis_url() else {
        return;
    };
    let prefix = format!(
        "chat-test-installations-{}-{}",
        std::process::id(),
        chat_core::LeaseToken::generate()
            .as_str()
            .get(..8)
            .unwrap_or("")
    );
    let state_a = replica(&url, &prefix).await;
    let state_b = replica(&url, &prefix).await;
    let a = KvInstallations::new(Arc::clone(&state_a), ring(("k1", 1), None));
    let b = KvInstallations::new(Arc::clone(&state_b), ring(("k1", 1), None));
    let tenant = TenantId::new("T1");
    let token = "xoxb-redis-secret-token";
    let installation = Installation::new(Platform::SLACK, "T1", Secret::new(token))
        .with_bot_user_id("UBOT")
        .with_scopes(["chat:write"]);

    a.put(&installation).await.unwrap();
    assert_eq!(
        b.get(Platform::SLACK, &tenant).await.unwrap(),
        Some(installation.clone())
    );
    let stored = state_b
        .get(&b.kv_key(Platform::SLACK, &tenant))
        .await
        .unwrap()
        .unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains(token));

    // Replica B is deployed with key 2 first; A's record still reads, and
    // B's writes are sealed with key 2, which A (still on key 1 only) cannot
    // read: it fails cleanly, naming the key.
    let b2 = KvInstallations::new(Arc::clone(&state_b), ring(("k2", 2), Some(("k1", 1))));
    assert!(b2.get(Platform::SLACK, &tenant).await.unwrap().is_some());
    b2.put(&installation).await.unwrap();
    assert_eq!(
        b2.stored_key_id(Platform::SLACK, &tenant)
            .await
            .unwrap()
            .as_deref(),
        Some("k2")
    );
    let err = a.get(Platform::SLACK, &tenant).await.unwrap_err();
    assert!(err.to_string().contains("k2"), "{err}");

    assert!(a.delete(Platform::SLACK, &tenant).await.unwrap());
    assert!(b2.get(Platform::SLACK, &tenant).await.unwrap().is_none());
}
