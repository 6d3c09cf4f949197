//! The `InstallationStore` contract, run on both stores, and what only the KV
//! store promises: tokens sealed at rest, and key rotation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use chat_core::{
    Installation, InstallationError, InstallationStore, KvStore, Platform, Secret, SetMode,
    TenantId,
};
use chat_installations::{EncryptionKey, KeyRing, KvInstallations, MemoryInstallations};
use chat_state_memory::MemoryState;

const TOKEN: &str = "xoxb-1111-2222-SuperSecretToken";
const REFRESH: &str = "xoxe-1-RefreshSecret";

fn key(id: &str, byte: u8) -> EncryptionKey {
    EncryptionKey::new(id, &[byte; 32]).unwrap()
}

fn installation(tenant: &str) -> Installation {
    Installation::new(
        Platform::SLACK,
        tenant,
        Secret::new(format!("{TOKEN}-{tenant}")),
    )
    .with_bot_user_id(format!("U-{tenant}"))
    .with_bot_id(format!("B-{tenant}"))
    .with_refresh(Some(Secret::new(REFRESH)), Some(1_900_000_000_000))
    .with_scopes(["app_mentions:read", "chat:write"])
    .with_installed_at_ms(1_700_000_000_000)
}

/// The contract every store keeps.
async fn contract(store: &dyn InstallationStore) {
    let t1 = TenantId::new("T1");
    assert_eq!(store.get(Platform::SLACK, &t1).await.unwrap(), None);
    assert!(!store.delete(Platform::SLACK, &t1).await.unwrap());

    let first = installation("T1");
    store.put(&first).await.unwrap();
    assert_eq!(
        store.get(Platform::SLACK, &t1).await.unwrap().as_ref(),
        Some(&first)
    );

    // The same tenant id on another platform is another installation.
    assert_eq!(store.get(Platform::LINEAR, &t1).await.unwrap(), None);
    let linear = Installation::new(Platform::LINEAR, "T1", Secret::new("lin_oauth"));
    store.put(&linear).await.unwrap();
    assert_eq!(
        store.get(Platform::SLACK, &t1).await.unwrap().as_ref(),
        Some(&first)
    );

    // Last write wins (a re-install).
    let again = installation("T1").with_bot_user_id("U-reinstalled");
    store.put(&again).await.unwrap();
    assert_eq!(
        store.get(Platform::SLACK, &t1).await.unwrap().as_ref(),
        Some(&again)
    );

    // Delete is idempotent.
    assert!(store.delete(Platform::SLACK, &t1).await.unwrap());
    assert!(!store.delete(Platform::SLACK, &t1).await.unwrap());
    assert_eq!(store.get(Platform::SLACK, &t1).await.unwrap(), None);
    assert!(store.get(Platform::LINEAR, &t1).await.unwrap().is_some());

    // Nothing unusable is stored.
    let empty_token = Installation::new(Platform::SLACK, "T2", Secret::new(""));
    assert!(matches!(
        store.put(&empty_token).await,
        Err(InstallationError::Invalid(_))
    ));
    let empty_tenant = Installation::new(Platform::SLACK, "", Secret::new("xoxb"));
    assert!(matches!(
        store.put(&empty_tenant).await,
        Err(InstallationError::Invalid(_))
    ));
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    let store = MemoryInstallations::new();
    contract(&store).await;
    assert_eq!(store.len(), 1);
    assert!(!format!("{store:?}").contains("lin_oauth"));
}

#[tokio::test]
async fn the_kv_store_keeps_the_contract() {
    let store = KvInstallations::new(Arc::new(MemoryState::new()), KeyRing::new(key("k1", 1)));
    contract(&store).await;
}

#[tokio::test]
async fn stored_bytes_never_contain_a_token() {
    let state: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let store = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 1)));
    store.put(&installation("T1")).await.unwrap();
    let stored = state
        .get(&store.kv_key(Platform::SLACK, &"T1".into()))
        .await
        .unwrap()
        .expect("a record");
    let text = String::from_utf8_lossy(&stored);
    assert!(!text.contains(TOKEN), "{text}");
    assert!(!text.contains(REFRESH), "{text}");
    assert!(!text.contains("SuperSecret"), "{text}");
    assert!(text.contains(r#""kid":"k1""#), "{text}");
    assert!(!format!("{store:?}").contains("SuperSecret"));
}

#[tokio::test]
async fn installations_written_under_key_1_are_read_after_switching_to_key_2() {
    let state: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let t1 = TenantId::new("T1");
    let before = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 1)));
    before.put(&installation("T1")).await.unwrap();

    // Deploy key 2 as the current key, keeping key 1 to read.
    let ring = KeyRing::new(key("k2", 2))
        .with_previous(key("k1", 1))
        .unwrap();
    let after = KvInstallations::new(Arc::clone(&state), ring);
    assert_eq!(
        after.get(Platform::SLACK, &t1).await.unwrap(),
        Some(installation("T1"))
    );
    assert_eq!(
        after
            .stored_key_id(Platform::SLACK, &t1)
            .await
            .unwrap()
            .as_deref(),
        Some("k1")
    );

    // New writes use key 2; rewriting the old record moves it to key 2.
    after.put(&installation("T2")).await.unwrap();
    assert_eq!(
        after
            .stored_key_id(Platform::SLACK, &"T2".into())
            .await
            .unwrap()
            .as_deref(),
        Some("k2")
    );
    let old = after.get(Platform::SLACK, &t1).await.unwrap().unwrap();
    after.put(&old).await.unwrap();
    assert_eq!(
        after
            .stored_key_id(Platform::SLACK, &t1)
            .await
            .unwrap()
            .as_deref(),
        Some("k2")
    );

    // With key 1 retired, everything still reads.
    let only_two = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k2", 2)));
    assert!(only_two.get(Platform::SLACK, &t1).await.unwrap().is_some());
    assert!(
        only_two
            .get(Platform::SLACK, &"T2".into())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_record_under_a_retired_key_fails_cleanly() {
    let state: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let t1 = TenantId::new("T1");
    KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 1)))
        .put(&installation("T1"))
        .await
        .unwrap();

    let only_two = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k2", 2)));
    match only_two.get(Platform::SLACK, &t1).await {
        Err(InstallationError::MissingKey { key_id }) => assert_eq!(key_id, "k1"),
        other => panic!("expected MissingKey, got {other:?}"),
    }
    // A wrong key under the right id is refused too, not read as garbage.
    let impostor = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 9)));
    let err = impostor.get(Platform::SLACK, &t1).await.unwrap_err();
    assert!(matches!(err, InstallationError::Corrupt(_)), "{err:?}");
    assert!(!err.to_string().contains(TOKEN));
    // Deleting still works without the key.
    assert!(only_two.delete(Platform::SLACK, &t1).await.unwrap());
}

#[tokio::test]
async fn a_record_moved_to_another_tenant_does_not_open() {
    let state: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let store = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 1)));
    store.put(&installation("T1")).await.unwrap();
    let stored = state
        .get(&store.kv_key(Platform::SLACK, &"T1".into()))
        .await
        .unwrap()
        .unwrap();
    // An attacker with write access to the KV copies T1's record to T2.
    state
        .set(
            &store.kv_key(Platform::SLACK, &"T2".into()),
            stored.clone(),
            None,
            SetMode::Always,
        )
        .await
        .unwrap();
    assert!(matches!(
        store.get(Platform::SLACK, &"T2".into()).await,
        Err(InstallationError::Corrupt(_))
    ));
    // Or flips one byte of the ciphertext.
    let mut tampered = String::from_utf8(stored.to_vec()).unwrap();
    let at = tampered.rfind('"').unwrap() - 1;
    let flipped = if &tampered[at..=at] == "0" { "1" } else { "0" };
    tampered.replace_range(at..=at, flipped);
    state
        .set(
            &store.kv_key(Platform::SLACK, &"T1".into()),
            tampered.into(),
            None,
            SetMode::Always,
        )
        .await
        .unwrap();
    assert!(matches!(
        store.get(Platform::SLACK, &"T1".into()).await,
        Err(InstallationError::Corrupt(_))
    ));
}

#[tokio::test]
async fn a_store_shared_through_one_backend_is_seen_by_every_replica() {
    let state: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let ring = || KeyRing::new(key("k1", 1));
    let a = KvInstallations::new(Arc::clone(&state), ring());
    let b = KvInstallations::new(Arc::clone(&state), ring());
    a.put(&installation("T1")).await.unwrap();
    assert!(
        b.get(Platform::SLACK, &"T1".into())
            .await
            .unwrap()
            .is_some()
    );
    assert!(b.delete(Platform::SLACK, &"T1".into()).await.unwrap());
    assert!(
        a.get(Platform::SLACK, &"T1".into())
            .await
            .unwrap()
            .is_none()
    );
}

/// A record rolled back to an earlier sealed copy of the same tenant (by
/// someone with write access to the KV) is refused by a process that has seen
/// the newer one; every write is a newer revision than the one it replaces.
#[tokio::test]
async fn a_record_rolled_back_to_an_older_copy_is_refused() {
    let state: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let store = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 1)));
    let replica = KvInstallations::new(Arc::clone(&state), KeyRing::new(key("k1", 1)));
    let kv_key = store.kv_key(Platform::SLACK, &"T1".into());
    store.put(&installation("T1")).await.unwrap();
    let old = state.get(&kv_key).await.unwrap().unwrap();
    let refreshed = installation("T1").with_bot_user_id("U0NEW");
    store.put(&refreshed).await.unwrap();
    assert_eq!(
        replica.get(Platform::SLACK, &"T1".into()).await.unwrap(),
        Some(refreshed.clone())
    );
    // The older sealed copy is put back.
    state
        .set(&kv_key, old, None, SetMode::Always)
        .await
        .unwrap();
    for seen_newer in [&store, &replica] {
        let err = seen_newer
            .get(Platform::SLACK, &"T1".into())
            .await
            .unwrap_err();
        assert!(matches!(err, InstallationError::Corrupt(_)), "{err:?}");
        assert!(
            err.to_string().contains("rolled back") || format!("{err:?}").contains("RolledBack"),
            "{err:?}"
        );
    }
    // A fresh write goes past it again.
    store.put(&refreshed).await.unwrap();
    assert_eq!(
        replica.get(Platform::SLACK, &"T1".into()).await.unwrap(),
        Some(refreshed)
    );
}

/// A KV whose next `set` waits until the test lets it go: a writer that read
/// the record, then lost the race to another replica.
struct HeldSet {
    inner: Arc<dyn KvStore>,
    hold: std::sync::atomic::AtomicBool,
    reached: tokio::sync::Notify,
    go: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl KvStore for HeldSet {
    async fn get(&self, key: &str) -> Result<Option<bytes::Bytes>, chat_core::StateError> {
        self.inner.get(key).await
    }
    async fn set(
        &self,
        key: &str,
        value: bytes::Bytes,
        ttl: Option<std::time::Duration>,
        mode: SetMode,
    ) -> Result<bool, chat_core::StateError> {
        if self.hold.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.reached.notify_one();
            self.go.notified().await;
        }
        self.inner.set(key, value, ttl, mode).await
    }
    async fn delete(&self, key: &str) -> Result<bool, chat_core::StateError> {
        self.inner.delete(key).await
    }
}

/// Two replicas refresh one tenant's token at once: replica B reads the
/// record, replica A writes it twice, then B writes. B's write is a
/// compare-and-set that fails on A's record: B reads again and writes above
/// it. Revisions only grow, so neither replica sees its record rolled back,
/// and the last write wins.
#[tokio::test]
async fn two_replicas_racing_a_refresh_never_roll_each_other_back() {
    let kv: Arc<dyn KvStore> = Arc::new(MemoryState::new());
    let ring = || KeyRing::new(key("k1", 1));
    let a = KvInstallations::new(Arc::clone(&kv), ring());
    let held = Arc::new(HeldSet {
        inner: Arc::clone(&kv),
        hold: std::sync::atomic::AtomicBool::new(false),
        reached: tokio::sync::Notify::new(),
        go: tokio::sync::Notify::new(),
    });
    let b = KvInstallations::new(held.clone(), ring());
    let t1 = TenantId::new("T1");
    a.put(&installation("T1")).await.unwrap();
    assert!(b.get(Platform::SLACK, &t1).await.unwrap().is_some());

    held.hold.store(true, std::sync::atomic::Ordering::SeqCst);
    let from_b = installation("T1").with_bot_user_id("U-from-b");
    let b_put = tokio::spawn({
        let b = b.clone();
        async move { b.put(&from_b).await }
    });
    held.reached.notified().await;
    for n in 0..2 {
        let from_a = installation("T1").with_bot_user_id(format!("U-from-a-{n}"));
        a.put(&from_a).await.unwrap();
        assert!(a.get(Platform::SLACK, &t1).await.unwrap().is_some());
    }
    held.go.notify_one();
    b_put.await.unwrap().unwrap();

    for (name, store) in [("a", &a), ("b", &b)] {
        let read = store.get(Platform::SLACK, &t1).await;
        let read = read.unwrap_or_else(|e| panic!("replica {name}: {e}"));
        assert_eq!(
            read.and_then(|i| i.bot_user_id).as_deref(),
            Some("U-from-b"),
            "replica {name}"
        );
    }
}
