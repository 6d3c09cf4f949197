//! The outcome ledger: one JSON line per outcome, written by echo-bot
//! (`--ledger`) and read by the demo, the tests and the reliability harness —
//! all through [`LedgerLine`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use chat_runtime::OutcomeRecord;
use serde::{Deserialize, Serialize};

/// One outcome, as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerLine {
    /// The delivery's event id.
    pub event_id: String,
    /// Its thread (`platform:tenant:channel:thread`), when known.
    pub thread: Option<String>,
    /// The replica that recorded it.
    pub replica: String,
    /// For handler runs: when the handler started (Unix ms).
    pub start_ms: Option<u64>,
    /// When the outcome was recorded (Unix ms).
    pub end_ms: u64,
    /// The outcome's stable name (`handler-ran`, `message-duplicate`, …).
    pub outcome: String,
    /// Its reason (`busy`, `queue`, …).
    pub reason: String,
}

impl LedgerLine {
    /// For handler runs: how long the handler ran, in ms.
    pub fn ran_ms(&self) -> Option<u64> {
        self.start_ms.map(|s| self.end_ms.saturating_sub(s))
    }

    /// A final outcome: everything but duplicates and refusals before the ack.
    pub fn is_terminal(&self) -> bool {
        !matches!(
            self.outcome.as_str(),
            "message-duplicate" | "message-rejected"
        )
    }
}

/// Every whole line of the ledger at `path` so far; a missing file is empty,
/// and a line still being written (or torn by a killed writer) is left out.
pub fn read(path: &Path) -> Vec<LedgerLine> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .filter_map(|l| serde_json::from_str(l.trim_end()).ok())
        .collect()
}

/// Every `*.jsonl` ledger in `dir` (one per replica), read as [`read`] does.
pub fn read_dir(dir: &Path) -> std::io::Result<Vec<LedgerLine>> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            lines.extend(read(&path));
        }
    }
    Ok(lines)
}

/// Appends one JSON line per outcome to a file: event id, thread, replica, start
/// and end (ms since the Unix epoch; start only for handler runs), outcome,
/// reason. Each line is written with one `write` on an append-mode file, so a
/// killed process leaves whole lines.
#[derive(Debug)]
pub struct Ledger {
    file: Mutex<File>,
    replica: String,
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
        let line = LedgerLine {
            event_id: r.event_id.to_string(),
            thread: r.thread.as_ref().map(ToString::to_string),
            replica: self.replica.clone(),
            start_ms: r
                .ran_for
                .map(|d| end_ms.saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
            end_ms,
            outcome: r.outcome.name().to_owned(),
            reason: r.reason.to_owned(),
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

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    #[test]
    fn reads_whole_lines_only() -> TestResult {
        let dir = std::env::temp_dir().join(format!("ledger-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let path = dir.join("ledger.jsonl");
        let whole = r#"{"event_id":"Ev1","thread":"slack:T:C:1.0","replica":"r","start_ms":100,"end_ms":350,"outcome":"handler-ran","reason":"ok"}"#;
        let partial = r#"{"event_id":"Ev2","thr"#;
        std::fs::write(&path, format!("{whole}\n{partial}")).unwrap_or_default();
        let lines = read(&path);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].event_id, "Ev1");
        assert_eq!(lines[0].ran_ms(), Some(250));
        assert!(read(&dir.join("missing")).is_empty());
        std::fs::write(dir.join("notes.txt"), format!("{whole}\n")).unwrap_or_default();
        assert_eq!(read_dir(&dir)?, lines, "only *.jsonl files are read");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
