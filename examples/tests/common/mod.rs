//! What the tests that run the built echo-bot share: how it is started
//! (its log in the target's temporary directory) and stopped.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use examples::drive::{EchoBot, EchoBotCommand};

/// How long a step may take before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// echo-bot, its log named after `test`.
pub(crate) fn echo_bot(test: &str) -> EchoBotCommand {
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("echo-bot-{test}.log"));
    EchoBotCommand::new(env!("CARGO_BIN_EXE_echo-bot")).log_to(log)
}

/// SIGTERM, and a clean exit within [`PATIENCE`].
pub(crate) async fn stop(mut bot: EchoBot) {
    let stopped = bot.terminate(PATIENCE).await;
    let Ok(stopped) = stopped else {
        panic!("echo-bot did not stop: {stopped:?}");
    };
    assert!(
        stopped.status.success(),
        "exited with {}{}",
        stopped.status,
        bot.log_tail(20)
    );
}
