//! Outcome counters for `GET /stats`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

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
