//! `cargo xtask ci`: every check, in the order CI runs them.

use std::process::Command;
use std::time::Duration;

use crate::cmd::{self, cargo, has_cargo_subcommand, is_ci};

/// The outcome of one step.
enum Outcome {
    Passed(Duration),
    Failed(Duration),
    /// A tool is missing; under CI this is a failure.
    Missing(&'static str),
}

struct Step {
    name: &'static str,
    outcome: Outcome,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("`ci` takes no arguments (got `{a}`)"));
    }
    let mut steps = Vec::new();
    let mut step = |name: &'static str, outcome: Outcome| {
        println!("{}", summary(name, &outcome));
        steps.push(Step { name, outcome });
    };

    step("fmt", timed(cargo_args(&["fmt", "--all", "--check"])));
    step(
        "clippy",
        timed(cargo_args(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ])),
    );
    step("tests", tests());
    step(
        "doctests",
        timed(cargo_args(&["test", "--workspace", "--doc"])),
    );
    step("rustdoc", rustdoc());
    step("deny", deny());

    println!("\nci summary:");
    let mut failed = Vec::new();
    for s in &steps {
        println!("  {}", summary(s.name, &s.outcome));
        match s.outcome {
            Outcome::Passed(_) => {}
            Outcome::Missing(_) if !is_ci() => {}
            _ => failed.push(s.name),
        }
    }
    if failed.is_empty() {
        println!("ci: all steps passed");
        Ok(())
    } else {
        Err(format!("ci failed: {}", failed.join(", ")))
    }
}

fn summary(name: &str, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Passed(d) => format!("ci: {name:<9} ok      ({:.1}s)", d.as_secs_f64()),
        Outcome::Failed(d) => format!("ci: {name:<9} FAILED  ({:.1}s)", d.as_secs_f64()),
        Outcome::Missing(hint) if is_ci() => {
            format!("ci: {name:<9} FAILED  (tool missing: {hint})")
        }
        Outcome::Missing(hint) => format!("ci: {name:<9} SKIPPED (tool missing: {hint})"),
    }
}

fn cargo_args(args: &[&str]) -> Command {
    let mut c = cargo();
    c.args(args);
    c
}

fn timed(c: Command) -> Outcome {
    match cmd::run(c) {
        (true, d) => Outcome::Passed(d),
        (false, d) => Outcome::Failed(d),
    }
}

/// nextest when installed (it runs test binaries in parallel processes and
/// reports per test); else `cargo test`.
fn tests() -> Outcome {
    if has_cargo_subcommand("nextest") {
        timed(cargo_args(&[
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
        ]))
    } else {
        println!("ci: cargo-nextest not found; running `cargo test` instead");
        timed(cargo_args(&[
            "test",
            "--workspace",
            "--all-features",
            "--lib",
            "--bins",
            "--tests",
            "--no-fail-fast",
        ]))
    }
}

fn rustdoc() -> Outcome {
    let mut c = cargo_args(&["doc", "--workspace", "--no-deps", "--all-features"]);
    c.env("RUSTDOCFLAGS", "-D warnings");
    timed(c)
}

/// Licenses, bans and sources. Advisories need a network database, so they are
/// not part of the offline CI run.
fn deny() -> Outcome {
    if !has_cargo_subcommand("deny") {
        return Outcome::Missing("cargo install --locked cargo-deny");
    }
    let (fetched, _) = cmd::run(cargo_args(&["fetch", "--quiet"]));
    if !fetched {
        return Outcome::Failed(Duration::ZERO);
    }
    timed(cargo_args(&[
        "deny",
        "--offline",
        "check",
        "licenses",
        "bans",
        "sources",
    ]))
}
