//! Check runs on a pull request's head commit
//! ([Create a check run](https://docs.github.com/en/rest/checks/runs#create-a-check-run)):
//! an App with the *Checks* write permission reports its work where the pull
//! request shows its checks.

use serde::Serialize;

/// Where a check run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CheckStatus {
    /// Waiting to start.
    Queued,
    /// Running.
    InProgress,
    /// Done, with a [`CheckConclusion`].
    Completed,
}

/// How a completed check run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CheckConclusion {
    /// It passed.
    Success,
    /// It failed.
    Failure,
    /// Neither: informational.
    Neutral,
    /// It was cancelled.
    Cancelled,
    /// It was skipped.
    Skipped,
    /// It ran out of time.
    TimedOut,
    /// Someone must act (the run's `details_url` says how).
    ActionRequired,
}

/// A check run to create: its name and commit, where it stands, and what
/// the pull request shows of it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CheckRun {
    /// Its name (one per commit is shown; a later run of the same name
    /// replaces it).
    pub name: String,
    /// The commit it is about: a pull request's head (`synchronize`'s
    /// `head_sha`).
    pub head_sha: String,
    /// Where it stands.
    pub status: CheckStatus,
    /// How it ended; setting it completes the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<CheckConclusion>,
    /// The title and the Markdown summary shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<CheckOutput>,
}

/// What a check run shows.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CheckOutput {
    /// Its title.
    pub title: String,
    /// Its summary, Markdown, at most 65,535 characters.
    pub summary: String,
}

impl CheckRun {
    /// A run named `name` on commit `head_sha`, in progress.
    pub fn new(name: impl Into<String>, head_sha: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            head_sha: head_sha.into(),
            status: CheckStatus::InProgress,
            conclusion: None,
            output: None,
        }
    }

    /// Completed with `conclusion`.
    #[must_use]
    pub fn completed(mut self, conclusion: CheckConclusion) -> Self {
        self.status = CheckStatus::Completed;
        self.conclusion = Some(conclusion);
        self
    }

    /// Shows `title` and the Markdown `summary`.
    #[must_use]
    pub fn output(mut self, title: impl Into<String>, summary: impl Into<String>) -> Self {
        self.output = Some(CheckOutput {
            title: title.into(),
            summary: summary.into(),
        });
        self
    }
}
