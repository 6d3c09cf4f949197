//! The [`KvStore`](chat_core::KvStore) conformance cases, run with
//! [`kv_store_conformance!`](crate::kv_store_conformance).

use crate::harness::{KvHarness, ok};

/// set, get, overwrite, delete.
pub async fn kv_set_get_delete(h: KvHarness) {
    let b = h.kv();
    let key = h.key("k");
    assert_eq!(ok("get", b.get(&key).await), None);
    assert!(ok(
        "set",
        b.set(&key, "v1".into(), None, Default::default()).await
    ));
    assert_eq!(ok("get", b.get(&key).await).as_deref(), Some(&b"v1"[..]));
    assert!(ok(
        "set",
        b.set(&key, "v2".into(), None, Default::default()).await
    ));
    assert_eq!(ok("get", b.get(&key).await).as_deref(), Some(&b"v2"[..]));
    assert!(ok("delete", b.delete(&key).await));
    assert!(!ok("delete", b.delete(&key).await));
    assert_eq!(ok("get", b.get(&key).await), None);
}

/// an entry with a TTL is gone after it.
pub async fn kv_entries_expire(h: KvHarness) {
    let b = h.kv();
    let key = h.key("ttl");
    ok(
        "set",
        b.set(&key, "v".into(), Some(h.t(2)), Default::default())
            .await,
    );
    h.advance(h.t(1)).await;
    assert!(ok("get", b.get(&key).await).is_some());
    h.advance(h.t(2)).await;
    assert_eq!(ok("get", b.get(&key).await), None);
}

/// `IfAbsent` writes only when the key is absent (or expired).
pub async fn kv_set_if_absent(h: KvHarness) {
    let b = h.kv();
    let key = h.key("nx");
    let nx = chat_core::SetMode::IfAbsent;
    assert!(ok(
        "set",
        b.set(&key, "first".into(), Some(h.t(2)), nx.clone()).await
    ));
    assert!(!ok(
        "set",
        b.set(&key, "second".into(), None, nx.clone()).await
    ));
    assert_eq!(ok("get", b.get(&key).await).as_deref(), Some(&b"first"[..]));
    h.advance(h.t(3)).await;
    assert!(ok("set", b.set(&key, "third".into(), None, nx).await));
}

/// `IfEquals` writes only over exactly the value it names: a compare-and-set
/// that a concurrent writer's value fails, and an absent or expired entry
/// never passes.
pub async fn kv_set_if_equals(h: KvHarness) {
    use chat_core::SetMode::IfEquals;
    let b = h.kv();
    let key = h.key("cas");
    let cas = |expected: &'static str| IfEquals(bytes::Bytes::from_static(expected.as_bytes()));
    assert!(!ok("set", b.set(&key, "v1".into(), None, cas("")).await));
    assert_eq!(ok("get", b.get(&key).await), None);
    ok(
        "set",
        b.set(&key, "v1".into(), Some(h.t(2)), Default::default())
            .await,
    );
    assert!(!ok("set", b.set(&key, "v2".into(), None, cas("v0")).await));
    assert_eq!(ok("get", b.get(&key).await).as_deref(), Some(&b"v1"[..]));
    assert!(ok(
        "set",
        b.set(&key, "v2".into(), Some(h.t(2)), cas("v1")).await
    ));
    assert_eq!(ok("get", b.get(&key).await).as_deref(), Some(&b"v2"[..]));
    // The write's TTL applies.
    h.advance(h.t(3)).await;
    assert_eq!(ok("get", b.get(&key).await), None);
    assert!(!ok("set", b.set(&key, "v3".into(), None, cas("v2")).await));
}
