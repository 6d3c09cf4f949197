//! `cargo xtask chaos [--quick] [--release] [chaos args…]`: the reliability
//! harness. Builds echo-bot and the harness, then runs it; it starts its own
//! redis-server processes, so it needs `redis-server` and `redis-cli`.

use crate::cmd::{self, cargo};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let release = args.iter().any(|a| a == "--release");
    let mut build = cargo();
    build.args([
        "build", "--quiet", "-p", "examples", "--bin", "echo-bot", "-p", "chaos", "--bin", "chaos",
    ]);
    if release {
        build.arg("--release");
    }
    run_built_by(build, release, args)
}

/// The quick run after the workspace's test build: echo-bot and the harness
/// built with the test build's features (the whole workspace, every
/// feature, dev-dependencies in), so that its artifacts serve as they are
/// rather than those of echo-bot's and the harness's own features being
/// built anew.
pub(crate) fn quick_after_tests() -> Result<(), String> {
    let mut build = cargo();
    build.args([
        "build",
        "--quiet",
        "--workspace",
        "--all-features",
        "--all-targets",
    ]);
    run_built_by(build, false, &["--quick".to_owned()])
}

/// Builds with `build` (a `release` build or not), then runs the harness
/// with `args`.
fn run_built_by(
    build: std::process::Command,
    release: bool,
    args: &[String],
) -> Result<(), String> {
    if !cmd::run(build).0 {
        return Err("building echo-bot and the chaos harness failed".into());
    }
    let passed: Vec<&String> = args.iter().filter(|a| *a != "--release").collect();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| cmd::root().join("target"));
    let bin = target
        .join(if release { "release" } else { "debug" })
        .join("chaos");
    let mut c = std::process::Command::new(bin);
    c.args(passed);
    // What failed, kept to be said again at the end of a long run.
    let (ok, failures) = cmd::run_keeping(c, |line| {
        line.contains("BREACH") || line.contains("breach:") || line.contains("harness error")
    });
    if ok {
        Ok(())
    } else if failures.is_empty() {
        Err("an invariant was breached (see above)".into())
    } else {
        Err(format!(
            "an invariant was breached:\n{}",
            failures.join("\n")
        ))
    }
}
