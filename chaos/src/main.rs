//! `chaos [--quick] [--only NAME] [--seed N] [--echo-bot PATH]`: runs the
//! reliability scenarios and exits non-zero on any invariant breach.

#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use chaos::scenario;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let only = value("--only");
    let seed: u64 = value("--seed").and_then(|s| s.parse().ok()).unwrap_or(7);
    let bin = value("--echo-bot").map(PathBuf::from).or_else(|| {
        let exe = std::env::current_exe().ok()?;
        Some(exe.parent()?.join("echo-bot"))
    });
    let Some(bin) = bin.filter(|b| b.exists()) else {
        eprintln!(
            "chaos: echo-bot not found next to chaos; build it (cargo build -p examples --bin echo-bot) or pass --echo-bot PATH"
        );
        return ExitCode::FAILURE;
    };
    let work = std::env::temp_dir().join(format!("chat-chaos-{}", std::process::id()));
    let mut failed = false;
    println!(
        "{:<22} {:>5} {:>5} {:>5} {:>6} {:>5} {:>5} {:>6} {:>5} {:>6} {:>6} {:>8} {:>5}  result",
        "scenario",
        "sent",
        "acked",
        "ran",
        "answrd",
        "super",
        "drop",
        "rej>ok",
        "dups",
        "crash",
        "twice",
        "overlap",
        "conc"
    );
    for (sc, reduced) in scenario::all() {
        if (quick && !reduced) || only.as_deref().is_some_and(|o| o != sc.name) {
            continue;
        }
        match scenario::run(&sc, &bin, seed, &work).await {
            Ok(r) => {
                let ok = r.breaches.is_empty();
                failed |= !ok;
                println!(
                    "{:<22} {:>5} {:>5} {:>5} {:>6} {:>5} {:>5} {:>6} {:>5} {:>6} {:>6} {:>4}/{:<3} {:>5}  {}",
                    sc.name,
                    r.sent,
                    r.acked,
                    r.ran,
                    r.answered,
                    r.superseded,
                    r.dropped,
                    r.rejected_then_retried,
                    r.duplicates,
                    r.crash_lost,
                    r.ran_twice,
                    r.max_overlap_ms,
                    r.max_preempted_overlap_ms,
                    r.max_concurrent_runs,
                    match (ok, r.answered_again) {
                        (false, _) => "BREACH".to_owned(),
                        (true, 0) => "ok".to_owned(),
                        (true, n) => format!("ok ({n} answered again at their response_url)"),
                    }
                );
                for b in &r.breaches {
                    println!("    breach: {b}");
                }
            }
            Err(e) => {
                failed = true;
                println!("{:<20} harness error: {e}", sc.name);
            }
        }
    }
    if only.as_deref().is_none_or(|o| o == "bad-input") {
        match chaos::bad_input::run(&bin, &work).await {
            Ok(breaches) if breaches.is_empty() => println!(
                "{:<20} every malformed, oversized, unsigned, replayed or mistyped delivery got its 4xx; no state touched  ok",
                "bad-input"
            ),
            Ok(breaches) => {
                failed = true;
                println!("{:<20} BREACH", "bad-input");
                print_breaches(&breaches);
            }
            Err(e) => {
                failed = true;
                println!("{:<20} harness error: {e}", "bad-input");
            }
        }
    }
    if only.as_deref().is_none_or(|o| o == "slow-clients") {
        match chaos::slow_clients::run(&bin, quick).await {
            Ok((breaches, f)) => {
                let fds: Vec<String> = f
                    .fds
                    .iter()
                    .map(|(b, p, a)| format!("{b}/{p}/{a}"))
                    .collect();
                let rss: Vec<String> = f
                    .rss_mib
                    .iter()
                    .map(|(b, p)| format!("{b:.0}/{p:.0}"))
                    .collect();
                println!(
                    "{:<20} {} slow-header, {} slow-body, {} chunk-bomb clients; real deliveries {}/{} acked < 3 s (p50 {:.1} ms, p99 {:.1} ms); attacker connections closed {}; bombs refused {}; FDs before/peak/after {}; RSS MiB before/peak {}  {}",
                    "slow-clients",
                    f.attackers.0,
                    f.attackers.1,
                    f.attackers.2,
                    f.answered,
                    60,
                    f.p50_ms,
                    f.p99_ms,
                    f.closed,
                    f.bombs_refused,
                    fds.join(" "),
                    rss.join(" "),
                    if breaches.is_empty() { "ok" } else { "BREACH" }
                );
                failed |= print_breaches(&breaches);
            }
            Err(e) => {
                failed = true;
                println!("{:<20} harness error: {e}", "slow-clients");
            }
        }
    }
    if only.as_deref().is_none_or(|o| o == "many-threads") {
        match chaos::many_threads::run(&bin, quick).await {
            Ok((breaches, f)) => {
                let rss: Vec<String> = f
                    .rss_mib
                    .iter()
                    .map(|(b, a)| format!("{b:.0}/{a:.0}"))
                    .collect();
                println!(
                    "{:<20} {} mentions in distinct threads at {:.0}/s: acked < 3 s {}, answered {} (p50 {:.1} ms, p99 {:.1} ms); subscriptions {} (without TTL {}), left after their TTL {}; Redis keys before/after/after TTL {}/{}/{}; Redis bytes per delivery {:.0}, after the TTL {:.0}; RSS MiB before/after {}  {}",
                    "many-threads",
                    f.threads,
                    f.rate,
                    f.acked,
                    f.answered,
                    f.p50_ms,
                    f.p99_ms,
                    f.subscriptions.0,
                    f.subscriptions.1,
                    f.subscriptions_left,
                    f.keys.0,
                    f.keys.1,
                    f.keys.2,
                    f.bytes_per_delivery(),
                    f.bytes_left_per_delivery(),
                    rss.join(" "),
                    if breaches.is_empty() { "ok" } else { "BREACH" }
                );
                let census = |c: &[chaos::many_threads::Kind]| {
                    c.iter()
                        .map(|k| format!("{} {} ({} without TTL)", k.kind, k.keys, k.immortal))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                println!("    keys after the flood: {}", census(&f.census_after));
                println!(
                    "    keys after the subscription TTL: {}",
                    census(&f.census_later)
                );
                failed |= print_breaches(&breaches);
            }
            Err(e) => {
                failed = true;
                println!("{:<20} harness error: {e}", "many-threads");
            }
        }
    }
    if failed {
        println!("\nthe ledgers and logs are kept in {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    println!(
        "\nanswrd: events answered in the fake Slack (each once); overlap: longest overlap of two runs on one thread (ms), clean/with a preempted run; conc: most runs at once on one replica"
    );
    if failed {
        println!("chaos: invariant breached");
        ExitCode::FAILURE
    } else {
        println!("chaos: every invariant held");
        ExitCode::SUCCESS
    }
}

/// Prints each breach; whether there was any.
fn print_breaches(breaches: &[String]) -> bool {
    for b in breaches {
        println!("    breach: {b}");
    }
    !breaches.is_empty()
}
