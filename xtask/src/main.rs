//! Project automation, run as `cargo xtask <command>`.
//!
//! * `ci` — every check CI runs, in order, with a one-line summary per step.
//! * `redis-cluster up|down` — a local 3-master Redis Cluster for the tests.
//!
//! Plain `std` only, so it builds in seconds on a fresh machine.

#![forbid(unsafe_code)]
// A command-line tool: its output is its interface.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod ci;
mod cmd;
mod redis;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci                    fmt, clippy, tests, doctests, rustdoc and cargo-deny, as CI
                        runs them (starting the Redis servers the tests need)
  redis-cluster up|down a local 3-master Redis Cluster on loopback ports; `up`
                        prints REDIS_CLUSTER_URLS for the tests
  help                  this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci::run(&args[1..]),
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
