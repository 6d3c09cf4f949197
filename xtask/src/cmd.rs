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

/// Runs a command, passing its standard output through line by line; returns
/// whether it succeeded and the lines `keep` picked, for a summary printed
/// after later steps have buried them.
pub(crate) fn run_keeping(
    mut command: Command,
    keep: impl Fn(&str) -> bool,
) -> (bool, Vec<String>) {
    use std::io::BufRead;
    let mut child = match command.stdout(Stdio::piped()).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("xtask: could not start {command:?}: {e}");
            return (false, Vec::new());
        }
    };
    let mut kept = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            if keep(&line) {
                kept.push(line);
            }
        }
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    (ok, kept)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    #[test]
    fn a_failed_command_gives_back_the_lines_it_was_asked_to_keep() {
        let mut c = Command::new("sh");
        c.args([
            "-c",
            "echo one; echo 'breach: two'; echo three; echo 'breach: four'; exit 3",
        ]);
        let (ok, kept) = super::run_keeping(c, |l| l.starts_with("breach:"));
        assert!(!ok);
        assert_eq!(kept, ["breach: two", "breach: four"]);
    }

    #[test]
    fn a_command_that_succeeds_is_reported_so() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo fine"]);
        let (ok, kept) = super::run_keeping(c, |l| l.contains("breach"));
        assert!(ok);
        assert!(kept.is_empty());
    }
}
