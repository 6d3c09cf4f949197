//! The core and the runtime know no platform's wire format: no Slack field
//! name appears in `chat-core` or `chat-runtime` (their sources, tests and
//! docs). An adapter renders the portable types; a new platform needs no
//! edit here.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

/// Slack's names for what the core calls a follow-up handle, a reply's
/// visibility and a trigger handle.
const PLATFORM_NAMES: [&str; 3] = ["response_url", "response_type", "trigger_id"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "md" || e == "toml")
        {
            out.push(path);
        }
    }
}

#[test]
fn no_slack_field_name_in_the_core_or_the_runtime() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut all = Vec::new();
    for name in ["chat-core", "chat-runtime"] {
        files(&crates.join(name), &mut all);
    }
    assert!(all.len() > 20, "found only {} files", all.len());
    let mut found = Vec::new();
    for path in &all {
        // This file names them to look for them.
        if path.ends_with("platform_neutral.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for name in PLATFORM_NAMES {
                if line.contains(name) {
                    found.push(format!("{}:{}: {name}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "platform names in shared code:\n{}",
        found.join("\n")
    );
}
