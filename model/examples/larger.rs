//! Larger runs than the tests': two faults of any kind on the calls, under the
//! queue (about 1.8 million states) and under debounce (about 4.9 million).
//! Not part of CI (a minute and more); run with
//! `cargo run -p chat-model --release --example larger`.

#![allow(clippy::print_stdout)]

use std::process::ExitCode;

use chat_model::{Config, Faults, Protocol, Strategy, check};

fn main() -> ExitCode {
    let mut failed = false;
    for strategy in [Strategy::Queue, Strategy::Debounce] {
        let cfg = Config {
            fault_budget: 2,
            ..Config::new(Protocol::Durable, strategy).faults(Faults {
                give_up: false,
                ..Faults::CALLS
            })
        };
        let report = check(cfg);
        println!(
            "{strategy:?}, two faults on the calls: {} states in {:.1} s, {}",
            report.unique_states,
            report.elapsed.as_secs_f64(),
            if report.counterexamples.is_empty() {
                "every property holds".to_owned()
            } else {
                format!("{} properties fail", report.counterexamples.len())
            }
        );
        for (property, trace) in &report.counterexamples {
            println!("{property}:\n{trace}");
        }
        failed |= !report.counterexamples.is_empty();
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
