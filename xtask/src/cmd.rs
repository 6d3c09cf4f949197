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

/// `cargo`, as the one that runs xtask, without the variables `cargo run`
/// set for xtask itself ([`is_xtask_own`]): build scripts that watch them
/// (ring's watches `CARGO_PKG_NAME`) would otherwise be run again, and all
/// that depends on them rebuilt, each time a build alternates between xtask
/// and a shell.
pub(crate) fn cargo() -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut c = Command::new(cargo);
    c.current_dir(root());
    without_xtask_own(&mut c, std::env::vars_os().map(|(name, _)| name));
    c
}

/// Removes from `c`'s environment those of `names` that [`is_xtask_own`].
fn without_xtask_own(c: &mut Command, names: impl Iterator<Item = std::ffi::OsString>) {
    for name in names {
        if name.to_str().is_some_and(is_xtask_own) {
            c.env_remove(name);
        }
    }
}

/// Whether `name` is one of the variables cargo sets for the package it
/// runs (here xtask), as opposed to the user's cargo settings.
fn is_xtask_own(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ]
        .contains(&name)
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

/// Runs a command, passing its standard output and error through line by
/// line; returns whether it succeeded and the lines `keep` picked (each once,
/// at most [`KEPT`]), for a summary printed after later steps have buried
/// them.
pub(crate) fn run_keeping(
    mut command: Command,
    keep: impl Fn(&str) -> bool + Sync,
) -> (bool, Vec<String>) {
    let spawned = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("xtask: could not start {command:?}: {e}");
            return (false, Vec::new());
        }
    };
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let keep = &keep;
    let (mut kept, from_err) = std::thread::scope(|s| {
        let errors = s.spawn(move || pass_through(err, keep, |l| eprintln!("{l}")));
        let kept = pass_through(out, keep, |l| println!("{l}"));
        (kept, errors.join().unwrap_or_default())
    });
    for line in from_err {
        if !kept.contains(&line) {
            kept.push(line);
        }
    }
    kept.truncate(KEPT);
    let ok = child.wait().is_ok_and(|s| s.success());
    (ok, kept)
}

/// The most lines [`run_keeping`] gives back.
pub(crate) const KEPT: usize = 40;

/// Reads `stream` to its end (whatever its bytes: a stream left unread
/// would block its writer), echoing each line; returns the lines `keep`
/// picked, each once.
fn pass_through(
    stream: Option<impl std::io::Read>,
    keep: &impl Fn(&str) -> bool,
    echo: impl Fn(&str),
) -> Vec<String> {
    use std::io::BufRead;
    let mut kept: Vec<String> = Vec::new();
    let Some(stream) = stream else {
        return kept;
    };
    let mut reader = std::io::BufReader::new(stream);
    let mut buf = Vec::new();
    while reader.read_until(b'\n', &mut buf).is_ok_and(|n| n > 0) {
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        echo(line);
        if keep(line) && !kept.iter().any(|k| k == line) {
            kept.push(line.to_owned());
        }
        buf.clear();
    }
    kept
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
    fn lines_on_standard_error_are_kept_too_and_each_once() {
        let mut c = Command::new("sh");
        c.args([
            "-c",
            "echo 'FAIL [1s] a' >&2; echo fine; echo 'FAIL [1s] a' >&2; printf 'FAIL \\377\\n' >&2; exit 1",
        ]);
        let (ok, kept) = super::run_keeping(c, |l| l.starts_with("FAIL"));
        assert!(!ok);
        assert_eq!(kept, ["FAIL [1s] a", "FAIL \u{fffd}"]);
    }

    #[test]
    fn cargo_runs_without_the_variables_cargo_run_set_for_xtask_but_with_the_users() {
        let mut c = Command::new("sh");
        c.args([
            "-c",
            "echo \"${CARGO_PKG_NAME-unset} ${CARGO_MANIFEST_DIR-unset} ${CARGO_TARGET_DIR-unset} ${CARGO_INCREMENTAL-unset}\"",
        ])
        .env("CARGO_PKG_NAME", "xtask")
        .env("CARGO_MANIFEST_DIR", "/x")
        .env("CARGO_TARGET_DIR", "/t")
        .env("CARGO_INCREMENTAL", "0");
        let names = [
            "CARGO_PKG_NAME",
            "CARGO_MANIFEST_DIR",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
        ];
        super::without_xtask_own(&mut c, names.iter().map(std::ffi::OsString::from));
        let out = c
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        assert_eq!(out.ok().as_deref(), Some("unset unset /t 0\n"));
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
