//! The Lua scripts, as one Redis function library: loaded once per server
//! (`FUNCTION LOAD`, on every master of a cluster) and called by name
//! (`FCALL`). A server that answers `Function not found` (it restarted empty,
//! or is a new master) gets the library again and the call is retried once.
//!
//! The library is `common.lua` (shared helpers, defined once when the library
//! loads) followed by one function per operation, whose body is the
//! operation's own file: its header lists its KEYS and ARGV and says what is
//! atomic. Library and function names carry a digest of the code, so servers
//! shared by replicas of different versions hold each version's library side
//! by side, and loading one never replaces another's.

use std::sync::atomic::{AtomicU64, Ordering};

use redis::aio::ConnectionLike;
use redis::{Cmd, RedisResult, Script, ToRedisArgs, Value};

/// Each operation: its name, its file, and its function's flags.
///
/// Redis refuses a function that may write while it is out of memory
/// (`maxmemory` reached) unless it says `allow-oom`. New work is refused then
/// (the admits, the KV's writes: the platform retries later); what finishes,
/// hands over, recovers or stops work already admitted runs, so a full server
/// can drain; `inspect` only reads.
const OPERATIONS: [(&str, &str, &str); 17] = [
    ("admit_drop", include_str!("lua/admit_drop.lua"), ""),
    ("admit_queue", include_str!("lua/admit_queue.lua"), ""),
    ("admit_debounce", include_str!("lua/admit_debounce.lua"), ""),
    ("admit_burst", include_str!("lua/admit_burst.lua"), ""),
    (
        "admit_concurrent",
        include_str!("lua/admit_concurrent.lua"),
        "",
    ),
    ("renew", include_str!("lua/renew.lua"), DRAINS),
    ("finish", include_str!("lua/finish.lua"), DRAINS),
    ("release", include_str!("lua/release.lua"), DRAINS),
    ("claim", include_str!("lua/claim.lua"), DRAINS),
    ("acquire_slot", include_str!("lua/acquire_slot.lua"), DRAINS),
    ("renew_slot", include_str!("lua/renew_slot.lua"), DRAINS),
    ("release_slot", include_str!("lua/release_slot.lua"), DRAINS),
    (
        "request_cancel",
        include_str!("lua/request_cancel.lua"),
        DRAINS,
    ),
    ("unmark", include_str!("lua/unmark.lua"), DRAINS),
    ("inspect", include_str!("lua/inspect.lua"), "'no-writes'"),
    (
        "force_release",
        include_str!("lua/force_release.lua"),
        DRAINS,
    ),
    (
        "kv_set_if_equals",
        include_str!("lua/kv_set_if_equals.lua"),
        "",
    ),
];

/// The flags of an operation that works off what was admitted.
const DRAINS: &str = "'allow-oom'";

const COMMON: &str = include_str!("lua/common.lua");

/// What every library name starts with: `chatrs_<12 hex digits of SHA-1 of
/// the code>`; each function is `<library>_<operation>`.
pub(crate) const LIBRARY_PREFIX: &str = "chatrs_";

/// One function of the library, called by name.
#[derive(Debug)]
pub(crate) struct Function {
    name: String,
}

impl Function {
    /// A call of this function: add its keys, then its arguments.
    pub(crate) fn prepare_invoke(&self) -> Invocation<'_> {
        Invocation {
            function: &self.name,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// One `FCALL`, built up key by key and argument by argument.
#[derive(Debug)]
pub(crate) struct Invocation<'a> {
    function: &'a str,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Invocation<'_> {
    pub(crate) fn key<T: ToRedisArgs>(&mut self, key: T) -> &mut Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    pub(crate) fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// The `FCALL` command.
    pub(crate) fn cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(self.function)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }
}

/// Every operation's function, and the library that defines them.
pub(crate) struct Scripts {
    library: String,
    /// Loads made after a call found the library missing, and the lock each
    /// takes: calls that found it missing together load it once.
    reloads: AtomicU64,
    reloading: tokio::sync::Mutex<()>,
    pub(crate) admit_drop: Function,
    pub(crate) admit_queue: Function,
    pub(crate) admit_debounce: Function,
    pub(crate) admit_burst: Function,
    pub(crate) admit_concurrent: Function,
    pub(crate) renew: Function,
    pub(crate) finish: Function,
    pub(crate) release: Function,
    pub(crate) claim: Function,
    pub(crate) acquire_slot: Function,
    pub(crate) renew_slot: Function,
    pub(crate) release_slot: Function,
    pub(crate) request_cancel: Function,
    pub(crate) unmark: Function,
    pub(crate) inspect: Function,
    pub(crate) force_release: Function,
    pub(crate) kv_set_if_equals: Function,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let name = library_name();
        let function = |op: &str| Function {
            name: format!("{name}_{op}"),
        };
        Self {
            library: library_code(&name),
            reloads: AtomicU64::new(0),
            reloading: tokio::sync::Mutex::new(()),
            admit_drop: function("admit_drop"),
            admit_queue: function("admit_queue"),
            admit_debounce: function("admit_debounce"),
            admit_burst: function("admit_burst"),
            admit_concurrent: function("admit_concurrent"),
            renew: function("renew"),
            finish: function("finish"),
            release: function("release"),
            claim: function("claim"),
            acquire_slot: function("acquire_slot"),
            renew_slot: function("renew_slot"),
            release_slot: function("release_slot"),
            request_cancel: function("request_cancel"),
            unmark: function("unmark"),
            inspect: function("inspect"),
            force_release: function("force_release"),
            kv_set_if_equals: function("kv_set_if_equals"),
        }
    }

    /// `FUNCTION LOAD REPLACE` of the library: the same name always holds the
    /// same code, so replacing it is loading it, whoever loaded it before.
    pub(crate) fn load_cmd(&self) -> Cmd {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(&self.library);
        cmd
    }

    /// How many times a missing library was loaded again: a call notes it
    /// before it is sent, for [`Scripts::reload`].
    pub(crate) fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Acquire)
    }

    /// Loads the library on `conn` for a call that found it missing and was
    /// sent after `seen` reloads, unless another call has loaded it since:
    /// after a restart every call in flight finds it missing, and the server
    /// compiles it once instead of once per call. (On a cluster the load goes
    /// to every master.)
    pub(crate) async fn reload<C: ConnectionLike + Send>(
        &self,
        conn: &mut C,
        seen: u64,
    ) -> RedisResult<()> {
        let _one = self.reloading.lock().await;
        if self.reloads() != seen {
            return Ok(());
        }
        self.load_cmd().query_async::<Value>(conn).await?;
        self.reloads.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts").finish_non_exhaustive()
    }
}

/// The library's name: the prefix and a digest of its code (every file, the
/// way they are put together, the flags), the name itself left out.
pub(crate) fn library_name() -> String {
    let digest = Script::new(&library_code(LIBRARY_PREFIX))
        .get_hash()
        .to_owned();
    format!("{LIBRARY_PREFIX}{}", digest.get(..12).unwrap_or(&digest))
}

/// The library's code: the shebang, the shared helpers, then each operation
/// as a function whose parameters take the names scripts read (`KEYS`,
/// `ARGV`). What the helpers remember (the clock, the mark a lookup read) is
/// per call: each function forgets the last call's first.
fn library_code(name: &str) -> String {
    let mut code = format!("#!lua name={name}\n{COMMON}\n");
    for (op, body, flags) in OPERATIONS {
        code.push_str(&format!(
            "redis.register_function{{function_name = '{name}_{op}', flags = {{{flags}}}, callback = function(KEYS, ARGV)\nforget()\n{body}\nend}}\n"
        ));
    }
    code
}

/// Whether a server's error says the function is not there: it has not
/// loaded this library (it restarted empty, or is a new master).
pub(crate) fn is_missing(e: &redis::RedisError) -> bool {
    e.detail()
        .is_some_and(|d| d.starts_with("Function not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_library_digest() {
        let s = Scripts::new();
        let lib = library_name();
        assert!(lib.starts_with(LIBRARY_PREFIX));
        assert_eq!(lib.len(), LIBRARY_PREFIX.len() + 12);
        assert_eq!(s.finish.name, format!("{lib}_finish"));
        assert!(s.library.starts_with(&format!("#!lua name={lib}\n")));
        for (op, _, flags) in OPERATIONS {
            assert!(
                s.library.contains(&format!(
                    "register_function{{function_name = '{lib}_{op}', flags = {{{flags}}},"
                )),
                "{op}"
            );
        }
    }

    #[test]
    fn an_invocation_is_one_fcall_with_its_key_count() {
        let f = Function {
            name: "chatrs_x_op".into(),
        };
        let mut inv = f.prepare_invoke();
        inv.key("k1").key("k2").arg("a").arg(3);
        let packed = String::from_utf8_lossy(&inv.cmd().get_packed_command()).into_owned();
        assert_eq!(
            packed,
            "*7\r\n$5\r\nFCALL\r\n$11\r\nchatrs_x_op\r\n$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$1\r\na\r\n$1\r\n3\r\n"
        );
    }
}
