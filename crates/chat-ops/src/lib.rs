//! Operating a chat-rs bot: an inspector page to mount next to the webhooks,
//! and the `chat-ops` command line for the same operations against a Redis
//! store.
//!
//! The [`Inspector`] is a `tower::Service` serving server-rendered HTML (no
//! JavaScript; the page refreshes itself): the busy scopes of every replica
//! sharing the state (holder, fence, time left, in-flight, queued, pending
//! and burst entries with their age), leases about to expire, this process's
//! runs and its last outcomes, and a **force-release** button per holder that
//! posts back the fence it showed — a stale fence is refused
//! ([`chat_core::Inspection::force_release`]). It takes a token: tools send
//! `Authorization: Bearer <token>`, browsers log in through a form that sets
//! an HttpOnly, `SameSite=Strict` session cookie. Mount it behind your own
//! authentication as well if the bot is on the open internet.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use chat_ops::Inspector;
//! use chat_runtime::Bot;
//!
//! let bot = Bot::builder()
//!     .state(chat_state_memory::MemoryState::new())
//!     .adapter(chat_testkit::ScriptedAdapter::new("scripted"))
//!     .build()?;
//! let inspector = Inspector::builder(bot.clone(), "a long random token")
//!     .base_path("/inspect")
//!     .build()?;
//! // axum: Router::new().nest_service("/inspect", inspector)
//! # let _ = inspector;
//! # Ok(())
//! # }
//! ```
//!
//! The `chat-ops` binary (`chat-ops --help`) lists busy scopes, shows one
//! scope, force-releases a holder by its fence and sums queue depths, as a
//! table or JSON, against `REDIS_URL` (or `REDIS_CLUSTER_URLS`), or `DATABASE_URL`
//! for a PostgreSQL store.

#![forbid(unsafe_code)]

use std::time::Duration;

use chat_core::{EntryView, HolderView, Platform, ScopeKey, ScopePart, ScopeView, TenantId};
use serde_json::{Value, json};

mod inspector;
mod page;
mod session;

pub use inspector::{Inspector, InspectorBuilder, InspectorError};

/// A scope as text: `platform:tenant:channel:t:<thread>` (a thread),
/// `…:c` (a channel), `…:x:<key>` (a custom part) — how the runtime logs it.
pub fn scope_text(scope: &ScopeKey) -> String {
    scope.to_string()
}

/// Reads a scope from its text form ([`scope_text`]; tenant and channel must
/// not contain `:`) or from its JSON form.
pub fn parse_scope(text: &str) -> Result<ScopeKey, String> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| format!("not a scope: {e}"));
    }
    let mut parts = text.splitn(5, ':');
    let (Some(platform), Some(tenant), Some(channel), Some(kind)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!(
            "not a scope: {text:?} (platform:tenant:channel:t:<thread>, …:c or …:x:<key>)"
        ));
    };
    let platform = Platform::parse(platform).map_err(|e| format!("not a scope: {e}"))?;
    let rest = parts.next();
    let tenant = TenantId::new(tenant);
    let thread = chat_core::ThreadRef::new(platform, tenant.as_str(), channel, rest.unwrap_or(""));
    match (kind, rest) {
        ("t", Some(t)) if !t.is_empty() => Ok(thread.thread_scope()),
        ("c", None) => Ok(thread.channel_scope()),
        ("x", Some(key)) if !key.is_empty() => {
            let mut scope = thread.channel_scope();
            scope.part = ScopePart::Custom(key.to_owned());
            Ok(scope)
        }
        _ => Err(format!(
            "not a scope: {text:?} (the part is t:<thread>, c or x:<key>)"
        )),
    }
}

/// A duration as an operator reads it: `850ms`, `12.3s`, `4m05s`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1_000) % 60)
    }
}

fn holder_json(h: &HolderView) -> Value {
    json!({
        "holder": h.holder,
        "fence": h.fence,
        "expires_in_ms": u64::try_from(h.expires_in.as_millis()).unwrap_or(u64::MAX),
    })
}

fn entries_json(entries: &[EntryView]) -> Value {
    entries
        .iter()
        .map(|e| {
            json!({
                "event_id": e.event_id.as_str(),
                "thread": e.thread,
                "age_ms": u64::try_from(e.age.as_millis()).unwrap_or(u64::MAX),
            })
        })
        .collect()
}

/// A scope's view as JSON (the CLI's `--json`, the inspector's
/// `scopes.json`).
pub fn view_json(view: &ScopeView) -> Value {
    json!({
        "scope": scope_text(&view.scope),
        "holder": view.holder.as_ref().map(holder_json),
        "slots": view.slots.iter().map(holder_json).collect::<Vec<_>>(),
        "in_flight": entries_json(&view.in_flight),
        "queued": entries_json(&view.queued),
        "pending": entries_json(&view.pending),
        "burst": entries_json(&view.burst),
    })
}

/// Busy scopes as a text table: one line per scope, with its holder and
/// counts.
pub fn views_table(views: &[ScopeView]) -> String {
    let mut out = format!(
        "{:<48} {:>8} {:>20} {:>9} {:>9} {:>7} {:>7}\n",
        "SCOPE", "HOLDER", "FENCE", "EXPIRES", "IN-FLIGHT", "QUEUED", "WAITING"
    );
    for v in views {
        let (holder, fence, expires) = match (&v.holder, v.slots.first()) {
            (Some(h), _) => (h.holder.clone(), h.fence.to_string(), human(h.expires_in)),
            (None, Some(s)) => (
                format!("{} slots", v.slots.len()),
                s.fence.to_string(),
                human(s.expires_in),
            ),
            (None, None) => ("-".to_owned(), "-".to_owned(), "-".to_owned()),
        };
        out.push_str(&format!(
            "{:<48} {:>8} {:>20} {:>9} {:>9} {:>7} {:>7}\n",
            scope_text(&v.scope),
            holder,
            fence,
            expires,
            v.in_flight.len(),
            v.queued.len(),
            v.waiting(),
        ));
    }
    out
}

/// One scope in full, as text.
pub fn view_text(view: &ScopeView) -> String {
    let mut out = format!("scope     {}\n", scope_text(&view.scope));
    match &view.holder {
        Some(h) => out.push_str(&format!(
            "holder    {} fence {} expires in {}\n",
            h.holder,
            h.fence,
            human(h.expires_in)
        )),
        None => out.push_str("holder    none\n"),
    }
    for s in &view.slots {
        out.push_str(&format!(
            "slot      {} fence {} expires in {}\n",
            s.holder,
            s.fence,
            human(s.expires_in)
        ));
    }
    for (label, entries) in [
        ("in-flight", &view.in_flight),
        ("queued", &view.queued),
        ("pending", &view.pending),
        ("burst", &view.burst),
    ] {
        for e in entries {
            out.push_str(&format!(
                "{label:<9} {} (thread {}, {} ago)\n",
                e.event_id.as_str(),
                e.thread,
                human(e.age)
            ));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    #[test]
    fn scopes_read_back_from_their_text_and_json() -> Result<(), String> {
        let thread = chat_core::ThreadRef::new(Platform::SLACK, "T1", "C1", "1700.0001");
        for scope in [thread.thread_scope(), thread.channel_scope()] {
            assert_eq!(parse_scope(&scope_text(&scope))?, scope);
            let json = serde_json::to_string(&scope).map_err(|e| e.to_string())?;
            assert_eq!(parse_scope(&json)?, scope);
        }
        assert!(parse_scope("slack:T1").is_err());
        assert!(parse_scope("slack:T1:C1:t:").is_err());
        assert!(parse_scope("slack:T1:C1:q:x").is_err());
        Ok(())
    }

    #[test]
    fn durations_read_as_an_operator_reads_them() {
        assert_eq!(human(Duration::from_millis(850)), "850ms");
        assert_eq!(human(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(human(Duration::from_secs(245)), "4m05s");
    }
}
