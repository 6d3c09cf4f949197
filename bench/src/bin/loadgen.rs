//! loadgen: signed Slack deliveries to a bot on loopback, and a fake Slack Web
//! API for the bot to post to. `loadgen run --help` lists every setting; the
//! logic is in `chat_bench`.

#![forbid(unsafe_code)]
// A command-line tool: its report is its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use chat_bench::fake_slack::FakeSlack;
use chat_bench::{Cli, Command, execute};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let workers = match &cli.command {
        Command::Run(a) => a.workers.clamp(1, 64),
        Command::FakeSlack(_) => 1,
    };
    let runtime = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => {
                let report = execute(args).await?;
                print!("{}", report.human());
                println!("{}", report.json());
                Ok(())
            }
            Command::FakeSlack(args) => {
                let fake = FakeSlack::bind(args.bind).await?;
                println!("fake-slack listening on http://{}", fake.local_addr()?);
                std::io::stdout().flush()?;
                fake.serve_for(Duration::from_secs(args.lifetime_secs))
                    .await;
                Ok::<(), std::io::Error>(())
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}
