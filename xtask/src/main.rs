//! Project automation, run as `cargo xtask <command>`.
//!
//! * `chaos` — the reliability harness (`docs/reliability.md`).
//! * `ci` — every check CI runs, in order, with a one-line summary per step.
//! * `demo [--strategy NAME] [--redis URL | --database-url URL]` — echo-bot against fake Slack and
//!   Linear APIs, driven by a scripted conversation, printed as a timeline.
//! * `modules` — no import circle between the modules of any crate.
//! * `redis-cluster up|down` — a local 3-master Redis Cluster for the tests.
//!
//! Few dependencies, so it builds quickly on a fresh machine.

#![forbid(unsafe_code)]
// A command-line tool: its output is its interface.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod chaos;
mod ci;
mod cmd;
mod demo;
mod first_day;
mod fuzz;
mod modules;
mod redis;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  bench [scenario…] [--quick]
                        benchmarks of echo-bot under load (`bench --help`)
  chaos [--quick] [--release] [--only NAME] [--seed N]
                        the reliability harness: three echo-bot replicas on one
                        Redis, faults, and the outcome-ledger invariants
  ci                    fmt, clippy, tests, doctests, rustdoc and cargo-deny, as CI
                        runs them (starting the Redis servers the tests need)
  demo [--strategy NAME] [--redis URL | --database-url URL]
                        echo-bot against fake Slack and Linear APIs: a scripted
                        conversation of signed webhooks, printed as a timeline
                        (NAME: drop | queue | debounce | burst | burst-each |
                        concurrent; `demo --help` for the rest)
  first-day             the getting-started bot built as a new crate from the
                        guides' code blocks: its tests, and its binary answering
                        a signed delivery and stopping on SIGTERM
  fuzz [--seconds N] [target…]
                        every parser's fuzz target for N s each (default 60),
                        stable toolchain, `-s none`; installs cargo-fuzz if needed
  modules [DIR]         no module of a crate imports one that imports it
                        (directly or through others); DIR: another checkout
  redis-cluster up|down a local 3-master Redis Cluster on loopback ports; `up`
                        prints REDIS_CLUSTER_URLS for the tests
  help                  this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") => bench::run(&args[1..]),
        Some("chaos") => chaos::run(&args[1..]),
        Some("ci") => ci::run(&args[1..]),
        Some("demo") => demo::run(&args[1..]),
        Some("first-day") => first_day::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("modules") => modules::run(&args[1..]),
        Some("redis-cluster") => redis::cluster_command(&args[1..]),
        Some("help" | "-h" | "--help") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
