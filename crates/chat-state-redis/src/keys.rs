//! Key names. Every key of one (platform, tenant, channel) tag carries the same
//! Redis hash tag, so every script runs on one Redis Cluster slot.
//!
//! ```text
//! {prefix}:{bbb}:{platform}:{tenant}:{channel}:{kind}[:{rest}]   a tag's keys
//! {prefix}:{bbb}:d:{digest}                                      a dedupe mark
//! {prefix}:{bbb}:fence | {prefix}:{bbb}:orphans                  the bucket's keys
//! {prefix}:{bbb}:a:{token}:{seq}                                 an acknowledgement
//! {prefix}:kv:{key}                                              the adapters' KV
//! ```
//!
//! `bbb` is the tag's bucket: FNV-1a of `platform:tenant:channel` modulo
//! [`BUCKETS`], in hex. Tenant and channel are escaped, so no two tags share a
//! key. See `docs/adr/0002-redis-keys-and-scripts.md`.

use std::fmt::Write as _;

use chat_core::{DedupeKey, Platform, ScopeKey, ScopePart, ScopeTag, TenantId, ThreadRef};

/// Hash-tag buckets. Each holds a fence counter and an orphan index, and a
/// sweep reads every bucket's index. Changing it moves every key: a store must
/// be empty (or drained) before the number changes.
pub(crate) const BUCKETS: u32 = 1024;

/// Bytes of digest naming a dedupe mark: 96 bits, unique among the marks of a
/// bucket's hour (a collision would answer a new event `duplicate`) with
/// billions of marks to spare.
pub(crate) const MARK_DIGEST: usize = 12;

/// The keys of one store, under a prefix.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    /// A key space under `prefix`. The prefix must not hold a `{` or `}` (it
    /// would change the hash tag); the builder checks.
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    /// The keys of one (platform, tenant, channel) tag.
    pub(crate) fn tag(&self, tag: ScopeTag<'_>) -> TagKeys {
        let mut id = String::new();
        id.push_str(tag.platform.as_str());
        id.push(':');
        escape_into(&mut id, tag.tenant.as_str());
        id.push(':');
        escape_into(&mut id, tag.channel);
        let bucket = bucket_of(&id);
        let bucket_base = format!("{}:{{{bucket:03x}}}", self.prefix);
        TagKeys {
            bucket: self.bucket(bucket),
            base: format!("{bucket_base}:{id}"),
            bucket_base,
            id,
        }
    }

    /// The keys of a bucket.
    pub(crate) fn bucket(&self, bucket: u32) -> BucketKeys {
        let base = format!("{}:{{{bucket:03x}}}", self.prefix);
        BucketKeys {
            fence: format!("{base}:fence"),
            orphans: format!("{base}:orphans"),
            slot_orphans: format!("{base}:slotorphans"),
        }
    }

    /// The keys of a scope.
    pub(crate) fn scope(&self, scope: &ScopeKey) -> ScopeKeys {
        self.tag(scope.tag()).scope(scope)
    }

    /// The keys of a thread's own tag (dedupe marks, subscriptions).
    pub(crate) fn thread(&self, thread: &ThreadRef) -> TagKeys {
        self.tag(thread.scope_tag())
    }

    /// The keys of every tag of one tenant, for a walk over them.
    pub(crate) fn tenant(&self, platform: Platform, tenant: &TenantId) -> TenantKeys {
        let mut escaped = String::new();
        escape_into(&mut escaped, tenant.as_str());
        let mut pattern = String::new();
        glob_escape_into(&mut pattern, &self.prefix);
        pattern.push_str(":{???}:");
        glob_escape_into(&mut pattern, platform.as_str());
        pattern.push(':');
        glob_escape_into(&mut pattern, &escaped);
        pattern.push_str(":*");
        TenantKeys {
            prefix: self.prefix.clone(),
            platform,
            escaped,
            pattern,
        }
    }

    /// An adapter KV entry. Each is one key on its own, read and written by
    /// single commands.
    pub(crate) fn kv(&self, key: &str) -> String {
        format!("{}:kv:{key}", self.prefix)
    }
}

/// The keys of one tenant (every tag of it): a `SCAN MATCH` pattern, and
/// which of the keys it matches are subscriptions.
#[derive(Debug, Clone)]
pub(crate) struct TenantKeys {
    prefix: String,
    platform: Platform,
    /// The tenant id, escaped as in keys.
    escaped: String,
    /// `SCAN MATCH` pattern of every key of the tenant.
    pub(crate) pattern: String,
}

impl TenantKeys {
    /// Whether `key`, matched by [`pattern`](Self::pattern), is a subscription.
    pub(crate) fn is_subscription(&self, key: &str) -> bool {
        // {prefix}:{bbb}:{platform}:{tenant}:{channel}:sub:{thread}
        let Some(rest) = key
            .strip_prefix(self.prefix.as_str())
            .and_then(|r| r.strip_prefix(":{"))
            .and_then(|r| r.get(3..))
            .and_then(|r| r.strip_prefix("}:"))
            .and_then(|r| r.strip_prefix(self.platform.as_str()))
            .and_then(|r| r.strip_prefix(':'))
            .and_then(|r| r.strip_prefix(self.escaped.as_str()))
            .and_then(|r| r.strip_prefix(':'))
        else {
            return false;
        };
        // The channel is escaped: its end is the first `:`.
        rest.split_once(':')
            .is_some_and(|(_, kind)| kind.starts_with("sub:"))
    }
}

/// The keys of one bucket: the fence counter and the orphan index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BucketKeys {
    /// The fencing counter (string, no TTL).
    pub(crate) fence: String,
    /// Scopes with work that needs a holder (waiting, in flight or reported),
    /// scored by their lease's expiry (ms).
    pub(crate) orphans: String,
    /// Scopes with slot runs, scored by the earliest time one of them may lose
    /// its holder (ms).
    pub(crate) slot_orphans: String,
}

/// The keys of one (platform, tenant, channel) tag.
#[derive(Debug, Clone)]
pub(crate) struct TagKeys {
    bucket: BucketKeys,
    /// `{prefix}:{bbb}`: the bucket's own keys, dedupe marks among them.
    bucket_base: String,
    /// `platform:tenant:channel`, escaped.
    id: String,
    base: String,
}

impl TagKeys {
    /// The name of a key's dedupe mark: `{prefix}:{bbb}:d:` and 12 bytes (96
    /// bits of SHA-256 over the tag and the dedupe key), in the tag's hash
    /// slot. The scripts keep the mark as a field of an hourly hash of the
    /// bucket (`common.lua`), so a delivery costs a field, not a key.
    pub(crate) fn dedupe(&self, key: &DedupeKey) -> Vec<u8> {
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        digest.update(self.id.as_bytes());
        digest.update(&[0]);
        digest.update(key.as_str().as_bytes());
        let digest = digest.finish();
        let mut name = format!("{}:d:", self.bucket_base).into_bytes();
        name.extend_from_slice(digest.as_ref().get(..MARK_DIGEST).unwrap_or_default());
        name
    }

    /// The subscription of a thread of this tag (string, PX subscription TTL).
    pub(crate) fn subscription(&self, thread: &str) -> String {
        format!("{}:sub:{thread}", self.base)
    }

    /// The keys of a scope of this tag.
    pub(crate) fn scope(&self, scope: &ScopeKey) -> ScopeKeys {
        let part = match &scope.part {
            ScopePart::Thread(t) => format!("t:{t}"),
            ScopePart::Channel => "c".to_owned(),
            ScopePart::Custom(c) => format!("x:{c}"),
            // A part added later: its serialized form is unique too.
            other => format!("o:{}", serde_json::to_string(other).unwrap_or_default()),
        };
        let key = |kind: &str| format!("{}:{kind}:{part}", self.base);
        ScopeKeys {
            lease: key("lease"),
            run: key("run"),
            run_items: key("runitems"),
            outbox: key("outbox"),
            acked: format!("{}:a", self.bucket_base),
            waiting_threads: key("wthreads"),
            queue: key("queue"),
            pending: key("pending"),
            burst: key("burst"),
            burst_meta: key("burstmeta"),
            slots: key("slots"),
            slot_cancels: key("slotcancel"),
            slot_waiters: key("slotwait"),
            slot_runs: key("slotruns"),
            fence: self.bucket.fence.clone(),
            orphans: self.bucket.orphans.clone(),
            slot_orphans: self.bucket.slot_orphans.clone(),
            member: member(scope),
        }
    }
}

/// The keys of one scope, and its member in the bucket's orphan index.
#[derive(Debug, Clone)]
pub(crate) struct ScopeKeys {
    pub(crate) lease: String,
    pub(crate) run: String,
    pub(crate) run_items: String,
    pub(crate) outbox: String,
    pub(crate) acked: String,
    pub(crate) waiting_threads: String,
    pub(crate) queue: String,
    pub(crate) pending: String,
    pub(crate) burst: String,
    pub(crate) burst_meta: String,
    pub(crate) slots: String,
    pub(crate) slot_cancels: String,
    pub(crate) slot_waiters: String,
    pub(crate) slot_runs: String,
    pub(crate) fence: String,
    pub(crate) orphans: String,
    pub(crate) slot_orphans: String,
    pub(crate) member: String,
}

impl ScopeKeys {
    /// The acknowledgement of batch `seq` of the lease `token` (string, PX):
    /// a key of the bucket, since the token (a request id) is unique. Only
    /// the holder that wrote it reads it (its own repeated `finish` or
    /// `release`), so its name is free to change between versions.
    pub(crate) fn ack(&self, token: &str, seq: u64) -> String {
        format!("{}:{token}:{seq}", self.acked)
    }

    /// Every key of the scope, for tests that check they share a slot.
    #[cfg(test)]
    pub(crate) fn all(&self) -> [&str; 17] {
        [
            &self.lease,
            &self.run,
            &self.run_items,
            &self.outbox,
            &self.acked,
            &self.waiting_threads,
            &self.queue,
            &self.pending,
            &self.burst,
            &self.burst_meta,
            &self.slots,
            &self.slot_cancels,
            &self.slot_waiters,
            &self.slot_runs,
            &self.fence,
            &self.orphans,
            &self.slot_orphans,
        ]
    }
}

/// A scope's member in the orphan index: the scope itself, serialized, so a
/// sweep can rebuild its keys and its lease.
pub(crate) fn member(scope: &ScopeKey) -> String {
    serde_json::to_string(scope).unwrap_or_default()
}

/// The bucket of a tag id: FNV-1a (32 bit) modulo [`BUCKETS`]. Stable across
/// processes, versions and platforms, unlike the standard library's hasher.
fn bucket_of(id: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in id.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % BUCKETS
}

/// Percent-escapes the characters that separate key parts or delimit a hash
/// tag, so `a:b` + `c` and `a` + `b:c` never meet.
fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '%' | ':' | '{' | '}' => {
                let _ = write!(out, "%{:02X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// Escapes the characters `SCAN MATCH` reads as a pattern.
fn glob_escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The hash tag of a key: what Redis Cluster hashes (the text between the first
/// `{` and the next `}`, when not empty).
pub(crate) fn hash_tag(key: &str) -> &str {
    if let Some(open) = key.find('{')
        && let Some(len) = key[open + 1..].find('}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use chat_core::{Platform, ThreadRef};

    use super::*;

    /// A mark's name without its digest bytes: the text part.
    fn named(mark: &[u8]) -> &str {
        std::str::from_utf8(&mark[..mark.len() - MARK_DIGEST]).unwrap_or("not UTF-8")
    }

    fn thread(tenant: &str, channel: &str, thread: &str) -> ThreadRef {
        ThreadRef::new(Platform::SLACK, tenant, channel, thread)
    }

    #[test]
    fn dedupe_marks_are_short_fixed_and_in_their_tags_slot() {
        let keys = Keys::new("chat");
        let long = thread("T0BENCH01", "C00000001", "1796133502.023881");
        let tag = keys.thread(&long);
        let key = DedupeKey::new("C00000001:1796133502.023881");
        let mark = tag.dedupe(&key);
        // chat:{bbb}:d: and 12 bytes (96 bits).
        assert_eq!(mark.len(), "chat:{000}:d:".len() + 12, "{mark:?}");
        assert_eq!(hash_tag(named(&mark)), hash_tag(&tag.subscription("x")));
        assert_eq!(mark, tag.dedupe(&key), "stable");
        assert_ne!(
            mark,
            tag.dedupe(&DedupeKey::new("C00000001:1796133502.023882"))
        );
        // The same dedupe key in another tenant is another mark.
        let other = keys.thread(&thread("T0BENCH02", "C00000001", "1796133502.023881"));
        assert_ne!(mark, other.dedupe(&key));
    }

    #[test]
    fn a_tenants_subscriptions_are_told_from_its_other_keys() {
        let keys = Keys::new("p");
        let tenant = keys.tenant(Platform::SLACK, &TenantId::new("T1"));
        let t = thread("T1", "C:1", "1.2");
        let tag = keys.thread(&t);
        let sub = tag.subscription(&t.thread);
        assert!(tenant.is_subscription(&sub));
        // Another kind of the same tenant, even one whose rest reads `:sub:`.
        let odd = thread("T1", "C1", "x:sub:y");
        let queue = keys.scope(&odd.thread_scope()).queue;
        assert!(!tenant.is_subscription(&queue));
        let mark = tag.dedupe(&chat_core::DedupeKey::new("e:sub:1"));
        assert!(!tenant.is_subscription(named(&mark)));
        // A tenant whose id starts with this one's, and another platform.
        let longer = thread("T10", "C1", "1.2");
        let other = keys.thread(&longer).subscription(&longer.thread);
        assert!(!tenant.is_subscription(&other));
        let linear = keys.tenant(Platform::LINEAR, &TenantId::new("T1"));
        assert!(!linear.is_subscription(&sub));
    }

    #[test]
    fn the_tenant_pattern_escapes_glob_characters() {
        let keys = Keys::new("p*");
        let pattern = keys
            .tenant(Platform::SLACK, &TenantId::new("T[1]:?"))
            .pattern;
        assert_eq!(pattern, "p\\*:{???}:slack:T\\[1\\]%3A\\?:*");
    }

    #[test]
    fn every_key_of_a_scope_shares_one_hash_tag() {
        let keys = Keys::new("chat");
        let t = thread("T1", "C1", "1.0");
        let scope = keys.scope(&t.thread_scope());
        let tag = hash_tag(&scope.lease).to_owned();
        assert_eq!(tag.len(), 3, "{tag}");
        for k in scope.all() {
            assert_eq!(hash_tag(k), tag, "{k}");
        }
        let channel = keys.scope(&t.channel_scope());
        assert_eq!(hash_tag(&channel.lease), tag);
        let tk = keys.thread(&t);
        assert_eq!(hash_tag(named(&tk.dedupe(&DedupeKey::new("e1")))), tag);
        assert_eq!(hash_tag(&tk.subscription("1.0")), tag);
    }

    #[test]
    fn keys_read_as_documented() {
        let keys = Keys::new("chat");
        let t = thread("T1", "C1", "1.0");
        let scope = keys.scope(&t.thread_scope());
        let b = hash_tag(&scope.lease).to_owned();
        assert_eq!(scope.lease, format!("chat:{{{b}}}:slack:T1:C1:lease:t:1.0"));
        assert_eq!(scope.fence, format!("chat:{{{b}}}:fence"));
        assert_eq!(scope.orphans, format!("chat:{{{b}}}:orphans"));
        assert_eq!(
            keys.scope(&t.channel_scope()).queue,
            format!("chat:{{{b}}}:slack:T1:C1:queue:c")
        );
        assert_eq!(keys.kv("x"), "chat:kv:x");
    }

    #[test]
    fn separators_and_braces_are_escaped() {
        let keys = Keys::new("p");
        let a = keys.scope(&thread("a:b", "c", "1").thread_scope());
        let b = keys.scope(&thread("a", "b:c", "1").thread_scope());
        assert_ne!(a.lease, b.lease);
        let braces = keys.scope(&thread("{x}", "}{", "1").thread_scope());
        assert!(braces.lease.contains("%7Bx%7D:%7D%7B"), "{}", braces.lease);
        assert_eq!(hash_tag(&braces.lease).len(), 3);
    }

    #[test]
    fn tenants_and_channels_get_their_own_keys() {
        let keys = Keys::new("p");
        let a = keys.scope(&thread("T1", "C1", "1").thread_scope());
        let b = keys.scope(&thread("T2", "C1", "1").thread_scope());
        let c = keys.scope(&thread("T1", "C2", "1").thread_scope());
        assert_ne!(a.lease, b.lease);
        assert_ne!(a.lease, c.lease);
    }

    #[test]
    fn buckets_are_stable_and_spread() {
        // A fixed value: keys written by one version are found by the next.
        assert_eq!(bucket_of("slack:T1:C1"), bucket_of("slack:T1:C1"));
        assert_eq!(bucket_of(""), 0x811c_9dc5 % BUCKETS);
        let used: std::collections::HashSet<u32> = (0..4096)
            .map(|i| bucket_of(&format!("slack:T1:C{i}")))
            .collect();
        assert!(used.len() > 900, "only {} buckets used", used.len());
    }

    #[test]
    fn the_member_round_trips_to_the_scope() -> Result<(), serde_json::Error> {
        let scope = thread("T1", "C1", "1.0").thread_scope();
        let back: ScopeKey = serde_json::from_str(&member(&scope))?;
        assert_eq!(back, scope);
        Ok(())
    }
}
