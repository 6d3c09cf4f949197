//! The Lua scripts, loaded once per [`RedisState`](crate::RedisState) and called
//! by SHA (`EVALSHA`); `redis::Script` loads a script again when a server
//! answers `NOSCRIPT` (after a restart or a failover).
//!
//! Each script is `common.lua` (shared helpers) followed by the operation's own
//! file, whose header lists its KEYS and ARGV and says what is atomic.

use redis::Script;

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("lua/common.lua"),
            include_str!(concat!("lua/", $file))
        ))
    };
}

/// Every script, compiled into the binary and hashed once.
pub(crate) struct Scripts {
    pub(crate) admit_drop: Script,
    pub(crate) admit_queue: Script,
    pub(crate) admit_debounce: Script,
    pub(crate) admit_burst: Script,
    pub(crate) admit_concurrent: Script,
    pub(crate) renew: Script,
    pub(crate) finish: Script,
    pub(crate) release: Script,
    pub(crate) claim: Script,
    pub(crate) acquire_slot: Script,
    pub(crate) renew_slot: Script,
    pub(crate) release_slot: Script,
    pub(crate) request_cancel: Script,
    pub(crate) unmark: Script,
    pub(crate) inspect: Script,
    pub(crate) force_release: Script,
    pub(crate) kv_set_if_equals: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Self {
            admit_drop: script!("admit_drop.lua"),
            admit_queue: script!("admit_queue.lua"),
            admit_debounce: script!("admit_debounce.lua"),
            admit_burst: script!("admit_burst.lua"),
            admit_concurrent: script!("admit_concurrent.lua"),
            renew: script!("renew.lua"),
            finish: script!("finish.lua"),
            release: script!("release.lua"),
            claim: script!("claim.lua"),
            acquire_slot: script!("acquire_slot.lua"),
            renew_slot: script!("renew_slot.lua"),
            release_slot: script!("release_slot.lua"),
            request_cancel: script!("request_cancel.lua"),
            unmark: script!("unmark.lua"),
            inspect: script!("inspect.lua"),
            force_release: script!("force_release.lua"),
            // One key of the KV, no scope: none of the shared helpers.
            kv_set_if_equals: Script::new(include_str!("lua/kv_set_if_equals.lua")),
        }
    }

    /// Every script, for loading them ahead of the first call.
    pub(crate) fn all(&self) -> [&Script; 17] {
        [
            &self.admit_drop,
            &self.admit_queue,
            &self.admit_debounce,
            &self.admit_burst,
            &self.admit_concurrent,
            &self.renew,
            &self.finish,
            &self.release,
            &self.claim,
            &self.acquire_slot,
            &self.renew_slot,
            &self.release_slot,
            &self.request_cancel,
            &self.unmark,
            &self.inspect,
            &self.force_release,
            &self.kv_set_if_equals,
        ]
    }
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts").finish_non_exhaustive()
    }
}
