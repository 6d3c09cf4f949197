//! The checks: each step's promise against what happened, counted in the
//! report.

use chat_runtime::BoxError;

use super::records::{View, methods};
use super::{Demo, THREAD};
use crate::drive::{Answer, slack};

impl Demo<'_> {
    pub(super) fn check(
        &mut self,
        ok: bool,
        what: &str,
        seen: impl FnOnce() -> String,
    ) -> Result<(), BoxError> {
        if ok {
            self.report.passed += 1;
            writeln!(self.out, "    ok    {what}")?;
        } else {
            let seen = seen();
            writeln!(self.out, "    FAIL  {what}: {seen}")?;
            self.report.failures.push(format!("{what}: {seen}"));
        }
        Ok(())
    }

    pub(super) fn check_status(
        &mut self,
        answers: &[&Answer],
        status: u16,
    ) -> Result<(), BoxError> {
        let what = match answers.len() {
            1 => format!("answered {status}"),
            2 => format!("both answered {status}"),
            n => format!("all {n} answered {status}"),
        };
        self.check(answers.iter().all(|a| a.status == status), &what, || {
            let seen: Vec<String> = answers
                .iter()
                .map(|a| format!("{} {:?}", a.status, a.body))
                .collect();
            format!("answered {}", seen.join(", "))
        })
    }

    /// Each event's outcomes since the view's mark are the expected ones.
    pub(super) fn expect_outcomes(
        &mut self,
        view: &View,
        expected: &[(&str, &str)],
    ) -> Result<(), BoxError> {
        let wanted: Vec<String> = expected
            .iter()
            .map(|(id, outcome)| format!("{} {outcome}", self.label(id)))
            .collect();
        let seen: Vec<String> = expected
            .iter()
            .map(|(id, _)| format!("{} {}", self.label(id), view.outcomes(id).join(" + ")))
            .collect();
        self.check(
            seen == wanted,
            &format!("decided {}", wanted.join(", ")),
            || format!("the ledger says {}", seen.join(", ")),
        )
    }

    pub(super) fn expect_posts(
        &mut self,
        view: &View,
        expected: &[&str],
        ordered: bool,
    ) -> Result<(), BoxError> {
        self.expect_posts_in(view, THREAD, expected, ordered)
    }

    /// What was posted, all of it in `thread`.
    pub(super) fn expect_posts_in(
        &mut self,
        view: &View,
        thread: &str,
        expected: &[&str],
        ordered: bool,
    ) -> Result<(), BoxError> {
        let mut seen = view.posts();
        let in_thread = view
            .slack
            .iter()
            .filter(|c| c.method == "chat.postMessage")
            .all(|c| c.body["channel"] == slack::CHANNEL && c.body["thread_ts"] == thread);
        let mut wanted = expected.to_vec();
        if !ordered {
            seen.sort_unstable();
            wanted.sort_unstable();
        }
        let what = match expected {
            [] => "nothing is posted".to_owned(),
            [one] => format!("posted {one:?} in the thread"),
            many => format!(
                "posted {} in the thread{}",
                many.iter()
                    .map(|p| format!("{p:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if ordered { ", in that order" } else { "" }
            ),
        };
        self.check(seen == wanted && in_thread, &what, || {
            format!("Slack got {:?}", methods(&view.slack))
        })
    }
}
