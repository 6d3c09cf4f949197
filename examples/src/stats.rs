//! Outcome counters for `GET /stats`, and the outcome ledger for the
//! reliability harness.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use chat_runtime::OutcomeRecord;
use serde::Serialize;

/// Counts of every outcome name and of handler runs since start.
#[derive(Debug, Default)]
pub struct Stats {
    outcomes: Mutex<BTreeMap<&'static str, u64>>,
    handler_runs: AtomicU64,
}

/// What `GET /stats` answers.
#[derive(Debug, Serialize)]
pub struct StatsSnapshot {
    /// Outcome name → count.
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Handler invocations (any outcome with a run).
    pub handler_runs: u64,
    /// Detached work in flight now.
    pub in_flight: usize,
}

impl Stats {
    /// A snapshot, with the bot's in-flight count.
    pub fn snapshot(&self, in_flight: usize) -> StatsSnapshot {
        StatsSnapshot {
            outcomes: self
                .outcomes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            handler_runs: self.handler_runs.load(Ordering::Relaxed),
            in_flight,
        }
    }
}

impl Stats {
    /// Counts one outcome.
    pub fn record(&self, r: &OutcomeRecord) {
        *self
            .outcomes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(r.outcome.name())
            .or_default() += 1;
        if r.ran_for.is_some() {
            self.handler_runs.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Appends one JSON line per outcome to a file: event id, thread, replica, start
/// and end (ms since the Unix epoch; start only for handler runs), outcome,
/// reason. Each line is written with one `write` on an append-mode file, so a
/// killed process leaves whole lines.
pub struct Ledger {
    file: Mutex<File>,
    replica: String,
}

#[derive(Serialize)]
struct Line<'a> {
    event_id: &'a str,
    thread: Option<String>,
    replica: &'a str,
    start_ms: Option<u64>,
    end_ms: u64,
    outcome: &'static str,
    reason: &'static str,
}

impl Ledger {
    /// Opens (creating) the ledger at `path` for `replica`.
    pub fn open(path: &Path, replica: &str) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(file),
            replica: replica.to_owned(),
        })
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Ledger {
    /// Appends one outcome.
    pub fn record(&self, r: &OutcomeRecord) {
        // A run ends when its handler returned, which may be before its
        // outcome is recorded (once its batch is acknowledged).
        let end_ms = r.ended_at.map_or_else(now_ms, |t| {
            t.duration_since(UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0)
        });
        let line = Line {
            event_id: r.event_id.as_str(),
            thread: r.thread.as_ref().map(ToString::to_string),
            replica: &self.replica,
            start_ms: r
                .ran_for
                .map(|d| end_ms.saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
            end_ms,
            outcome: r.outcome.name(),
            reason: r.reason,
        };
        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return;
        };
        bytes.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = file.write_all(&bytes) {
            tracing::warn!(error = %e, "ledger write failed");
        }
    }
}
