//! Reading the outcome ledger echo-bot writes with `--ledger`
//! ([`Ledger`](crate::stats::Ledger)): one JSON line per outcome.

use std::path::Path;

use serde::Deserialize;

/// One outcome, as echo-bot wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct LedgerLine {
    /// The delivery's event id.
    pub event_id: String,
    /// Its thread, when known.
    pub thread: Option<String>,
    /// The replica that recorded it.
    pub replica: String,
    /// For handler runs: when the handler started (Unix ms).
    pub start_ms: Option<u64>,
    /// When the outcome was recorded (Unix ms).
    pub end_ms: u64,
    /// The outcome's name (`handler-ran`, `message-duplicate`, …).
    pub outcome: String,
    /// Its reason (`busy`, `queue`, …).
    pub reason: String,
}

impl LedgerLine {
    /// For handler runs: how long the handler ran, in ms.
    pub fn ran_ms(&self) -> Option<u64> {
        self.start_ms.map(|s| self.end_ms.saturating_sub(s))
    }
}

/// Every whole line of the ledger at `path` so far; a missing file is empty,
/// and a line still being written is left for the next read.
pub fn read(path: &Path) -> Vec<LedgerLine> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .filter_map(|l| serde_json::from_str(l.trim_end()).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_whole_lines_only() {
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
        let _ = std::fs::remove_dir_all(&dir);
    }
}
