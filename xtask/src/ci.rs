//! `cargo xtask ci`: every check, in the order CI runs them.

use std::process::Command;
use std::time::Duration;

use crate::cmd::{self, cargo, has_cargo_subcommand, is_ci};
use crate::redis;

/// The outcome of one step.
#[derive(Clone)]
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
    step("modules", modules());
    // The Redis tests need a server and a cluster: started here, stopped when
    // `servers` drops after the test step.
    let started = std::time::Instant::now();
    let servers = redis_servers();
    let env = match &servers {
        Ok(s) => s.env.clone(),
        Err(_) => Vec::new(),
    };
    step(
        "redis",
        match &servers {
            Ok(_) => Outcome::Passed(started.elapsed()),
            Err(outcome) => outcome.clone(),
        },
    );
    // The PostgreSQL tests need a server of their own: started here, stopped
    // when `database` drops after the test step.
    let started = std::time::Instant::now();
    let database = postgres_server();
    let mut env = env;
    if let Ok(server) = &database {
        env.push(("DATABASE_URL", server.url()));
        println!("ci: started PostgreSQL on {}", server.url());
    }
    step(
        "postgres",
        match &database {
            Ok(_) => Outcome::Passed(started.elapsed()),
            Err(outcome) => outcome.clone(),
        },
    );
    // Why a step failed, said again after the summary: later steps print a lot.
    let mut why: Vec<(&'static str, Vec<String>)> = Vec::new();
    step("tests", tests(&env, &mut why));
    drop(servers);
    drop(database);
    step("chaos", chaos(&mut why));
    step(
        "doctests",
        timed(cargo_args(&["test", "--workspace", "--doc"])),
    );
    step("first-day", first_day());
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
    for (name, lines) in &why {
        println!("\nci: {name} failed:");
        for line in lines {
            println!("  {line}");
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
fn tests(env: &[(&'static str, String)], why: &mut Vec<(&'static str, Vec<String>)>) -> Outcome {
    let mut c = if has_cargo_subcommand("nextest") {
        cargo_args(&[
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
        ])
    } else {
        println!("ci: cargo-nextest not found; running `cargo test` instead");
        cargo_args(&[
            "test",
            "--workspace",
            "--all-features",
            "--lib",
            "--bins",
            "--tests",
            "--no-fail-fast",
        ])
    };
    c.envs(env.iter().map(|(k, v)| (k, v)));
    let started = std::time::Instant::now();
    let (passed, failures) = cmd::run_keeping(c, is_test_failure);
    if passed {
        return Outcome::Passed(started.elapsed());
    }
    why.push(("tests", failures));
    Outcome::Failed(started.elapsed())
}

/// A line of nextest's or `cargo test`'s output that names a failure: a test
/// that failed, timed out or died, a panic, or a compile error.
fn is_test_failure(line: &str) -> bool {
    let l = line.trim_start();
    [
        "FAIL [",
        "TIMEOUT [",
        "SIGSEGV [",
        "SIGABRT [",
        "SIGKILL [",
        "ABORT [",
        "LEAK-FAIL [",
    ]
    .iter()
    .any(|p| l.starts_with(p))
        || l.ends_with("... FAILED")
        || l.contains("panicked at")
        || l.starts_with("error[")
        || l.starts_with("error:")
}

/// Starts the Redis servers the tests use. Without `redis-server` the Redis
/// tests skip with a notice locally; under CI that is a failure.
fn redis_servers() -> Result<redis::TestServers, Outcome> {
    let have_urls = ["REDIS_URL", "REDIS_CLUSTER_URLS"]
        .iter()
        .all(|v| std::env::var(v).is_ok_and(|u| !u.is_empty()));
    if !have_urls && !redis::tools_installed() {
        if !is_ci() {
            println!(
                "\n!!! ci: redis-server / redis-cli not found: the Redis and Redis Cluster \
                 tests will SKIP.\n!!! Install them (apt-get install redis-server redis-tools) \
                 or set REDIS_URL and REDIS_CLUSTER_URLS.\n"
            );
        }
        return Err(Outcome::Missing("apt-get install redis-server redis-tools"));
    }
    let start = std::time::Instant::now();
    redis::TestServers::start().map_err(|e| {
        eprintln!("ci: could not start Redis for the tests: {e}");
        Outcome::Failed(start.elapsed())
    })
}

/// Starts the PostgreSQL server the tests use. Without `initdb` and `pg_ctl`
/// the PostgreSQL tests skip with a notice locally; under CI that is a
/// failure.
fn postgres_server() -> Result<chat_test_postgres::PostgresServer, Outcome> {
    if !chat_test_postgres::tools_installed() {
        if !is_ci() {
            println!(
                "\n!!! ci: initdb / pg_ctl not found: the PostgreSQL tests will SKIP.\n\
                 !!! Install them (apt-get install postgresql).\n"
            );
        }
        return Err(Outcome::Missing("apt-get install postgresql"));
    }
    let start = std::time::Instant::now();
    chat_test_postgres::PostgresServer::start().map_err(|e| {
        eprintln!("ci: could not start PostgreSQL for the tests: {e}");
        Outcome::Failed(start.elapsed())
    })
}

/// The reduced reliability run: a few minutes of faults against three replicas.
fn chaos(why: &mut Vec<(&'static str, Vec<String>)>) -> Outcome {
    if !redis::tools_installed() {
        return Outcome::Missing("apt-get install redis-server redis-tools");
    }
    let start = std::time::Instant::now();
    match crate::chaos::quick_after_tests() {
        Ok(()) => Outcome::Passed(start.elapsed()),
        Err(e) => {
            eprintln!("ci: chaos: {e}");
            why.push(("chaos", e.lines().map(str::to_owned).collect()));
            Outcome::Failed(start.elapsed())
        }
    }
}

fn rustdoc() -> Outcome {
    let mut c = cargo_args(&["doc", "--workspace", "--no-deps", "--all-features"]);
    c.env("RUSTDOCFLAGS", "-D warnings");
    timed(c)
}

/// No import circle between the modules of any crate.
fn modules() -> Outcome {
    let started = std::time::Instant::now();
    match crate::modules::run(&[]) {
        Ok(()) => Outcome::Passed(started.elapsed()),
        Err(e) => {
            eprintln!("ci: modules: {e}");
            Outcome::Failed(started.elapsed())
        }
    }
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
    // Without the inclusion graph of every duplicate-version warning, which
    // would fill the tail of CI's output.
    timed(cargo_args(&[
        "deny",
        "--offline",
        "check",
        "--hide-inclusion-graph",
        "licenses",
        "bans",
        "sources",
    ]))
}

/// The getting-started bot, built outside the workspace from the guides.
fn first_day() -> Outcome {
    let started = std::time::Instant::now();
    match crate::first_day::run(&[]) {
        Ok(()) => Outcome::Passed(started.elapsed()),
        Err(e) => {
            eprintln!("ci: first-day: {e}");
            Outcome::Failed(started.elapsed())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_test_failure;

    #[test]
    fn failed_tests_panics_and_compile_errors_are_failures_and_a_pass_is_not() {
        for failure in [
            "        FAIL [   0.012s] chat-runtime recovery::a_test",
            "     TIMEOUT [  60.001s] chat-state-redis private_server::b",
            "test sweep::tests::c ... FAILED",
            "thread 'd' panicked at crates/chat-runtime/src/sweep.rs:1:1:",
            "error[E0308]: mismatched types",
            "error: could not compile `chat-runtime`",
        ] {
            assert!(is_test_failure(failure), "{failure}");
        }
        for pass in [
            "        PASS [   0.012s] chat-runtime recovery::a_test",
            "test sweep::tests::c ... ok",
            "     Summary [ 359.100s] 1362 tests run: 1362 passed, 0 skipped",
        ] {
            assert!(!is_test_failure(pass), "{pass}");
        }
    }
}
