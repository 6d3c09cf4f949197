//! Running commands and finding tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The workspace root (the parent of this crate's directory).
pub(crate) fn root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// Whether this run is CI (`CI=true`): a missing tool is then a failure.
pub(crate) fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `cargo`, as the one that runs xtask.
pub(crate) fn cargo() -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut c = Command::new(cargo);
    c.current_dir(root());
    c
}

/// Whether `cargo <sub> --version` works (an installed cargo subcommand).
pub(crate) fn has_cargo_subcommand(sub: &str) -> bool {
    cargo()
        .args([sub, "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a command with inherited output; returns whether it succeeded and how
/// long it took.
pub(crate) fn run(mut command: Command) -> (bool, Duration) {
    let start = Instant::now();
    let ok = match command.status() {
        Ok(status) => status.success(),
        Err(e) => {
            eprintln!("xtask: could not start {command:?}: {e}");
            false
        }
    };
    (ok, start.elapsed())
}
