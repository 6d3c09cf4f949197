//! Step 9: GitHub, where an issue is one conversation and comments that
//! arrive while the agent works wait their turn.

use std::path::Path;

use chat_runtime::BoxError;

use super::records::Mark;
use super::script::{RAN, SUPERSEDED};
use super::{Demo, Options, SHUTDOWN_DEADLINE};
use crate::drive::{self, EchoBotCommand};

/// The comments of step 9: (delivery id, comment id, author, text).
const COMMENTS: [(&str, u64, &str, &str); 3] = [
    (
        "gh-delivery-1",
        9001,
        "ada",
        "@echo-bot why does it crash on start?",
    ),
    (
        "gh-delivery-2",
        9002,
        "ada",
        "the log says: config not found",
    ),
    ("gh-delivery-3", 9003, "bo", "same here on 1.2"),
];

impl Demo<'_> {
    pub(super) async fn github_issue(
        &mut self,
        options: &Options,
        dir: &Path,
    ) -> Result<(), BoxError> {
        self.heading(
            9,
            "GitHub: an issue is one conversation; comments during a run wait (queue)",
        )?;
        let ledger = dir.join("ledger-github.jsonl");
        let command = EchoBotCommand::new(&options.echo_bot)
            .github(&self.github.api_url())
            .env("CHAT_DISPATCH", "deferred")
            .env("CHAT_CONCURRENCY", "queue")
            .env("ECHO_DELAY_MS", options.delay.as_millis().to_string())
            .env("ECHO_LEDGER", ledger.display().to_string())
            .env("REPLICA", "echo-bot-github")
            .env(
                "SHUTDOWN_DEADLINE_MS",
                SHUTDOWN_DEADLINE.as_millis().to_string(),
            )
            .log_to(dir.join("echo-bot-github.log"));
        let (command, _) = options.state.configure(command, "chat-demo-github");
        let bot = command.spawn().await?;
        writeln!(
            self.out,
            "    echo-bot (pid {}) on http://{}: queue, handler delay {} ms",
            bot.pid(),
            bot.addr(),
            options.delay.as_millis()
        )?;
        writeln!(
            self.out,
            "    fake GitHub REST API  {}",
            self.github.api_url()
        )?;
        self.bot = bot;
        self.ledger = ledger;
        self.shown = Mark {
            ledger: 0,
            ..self.mark()
        };
        let played = self.issue_thread(options).await;
        let stopped = self.stop().await;
        played?;
        stopped
    }

    /// A mention, then two comments while the answer is being written.
    async fn issue_thread(&mut self, options: &Options) -> Result<(), BoxError> {
        writeln!(
            self.out,
            "\n  9a. Ada asks echo-bot in octo/hello#42; Ada and Bo add comments while it works"
        )?;
        let mark = self.mark();
        let mut answers = Vec::new();
        for (i, (delivery, comment, login, text)) in COMMENTS.iter().enumerate() {
            self.labels
                .insert((*delivery).to_owned(), format!("gh{}", i + 1));
            let answer = self
                .deliver_as(
                    "gh in",
                    &format!("issue_comment ({login})"),
                    delivery,
                    &format!("{text:?}"),
                    drive::github_comment(
                        delivery,
                        *comment,
                        login,
                        text,
                        drive::GITHUB_WEBHOOK_SECRET,
                    ),
                )
                .await?;
            answers.push(answer);
            if i == 0 {
                // The first run has started when the follow-ups arrive.
                tokio::time::sleep(options.delay / 4).await;
            }
        }
        let view = self
            .settle(mark, |v| {
                COMMENTS.iter().all(|c| !v.outcomes(c.0).is_empty())
                    && v.github_comments().len() >= 2
            })
            .await;
        self.flush()?;
        self.check_status(&answers.iter().collect::<Vec<_>>(), 200)?;
        self.expect_outcomes(
            &view,
            &[
                (COMMENTS[0].0, RAN),
                (COMMENTS[1].0, SUPERSEDED),
                (COMMENTS[2].0, RAN),
            ],
        )?;
        let comments = view.github_comments();
        let wanted = [
            "echo: why does it crash on start?".to_owned(),
            format!("echo: {} | {}", COMMENTS[1].3, COMMENTS[2].3),
        ];
        self.check(
            comments == wanted,
            "one answer to the mention, then one to the latest comment with the other in it",
            || format!("GitHub got {comments:?}"),
        )
    }
}
