//! `cargo xtask fuzz [--seconds N] [target…]`: runs every parser's fuzz target
//! (or the named ones) for N seconds each (default 60) on the stable toolchain,
//! without sanitizers (`-s none`), and fails on any crash. Installs cargo-fuzz
//! when it is missing.

use std::process::Command;

use crate::cmd::{self, cargo, has_cargo_subcommand};

/// The fuzz targets in `fuzz/`: every parser that sees network input.
const TARGETS: &[&str] = &[
    "slack_inbound",
    "linear_inbound",
    "telegram_inbound",
    "whatsapp_inbound",
    "github_inbound",
];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut seconds = 60u64;
    let mut targets = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                seconds = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--seconds needs a number")?;
            }
            t if TARGETS.contains(&t) => targets.push(t.to_owned()),
            other => {
                return Err(format!(
                    "unknown fuzz target or flag `{other}` (targets: {TARGETS:?})"
                ));
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    }
    if !has_cargo_subcommand("fuzz") {
        println!("fuzz: installing cargo-fuzz");
        let mut install = cargo();
        install.args(["install", "--locked", "cargo-fuzz"]);
        if !cmd::run(install).0 {
            return Err("could not install cargo-fuzz".into());
        }
    }
    let dir = cmd::root().join("fuzz");
    let mut failed = Vec::new();
    for t in &targets {
        println!("fuzz: {t} for {seconds} s");
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
        c.current_dir(&dir).args([
            "fuzz",
            "run",
            "-s",
            "none",
            t,
            "--",
            &format!("-max_total_time={seconds}"),
            "-rss_limit_mb=2048",
        ]);
        let (ok, took) = cmd::run(c);
        println!(
            "fuzz: {t} {} ({:.0} s)",
            if ok { "ok, no crash" } else { "FAILED" },
            took.as_secs_f64()
        );
        if !ok {
            failed.push(t.clone());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz targets found a crash or did not build: {failed:?} (artifacts in fuzz/artifacts/)"
        ))
    }
}
