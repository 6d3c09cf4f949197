//! The fields of GitHub's webhook payloads the adapter reads
//! ([Webhook events and payloads](https://docs.github.com/en/webhooks/webhook-events-and-payloads)).
//! Every field is optional or defaulted: a payload GitHub grows never
//! fails to parse, and what is missing is judged where it is needed.

use serde::Deserialize;

/// One delivery's JSON, whatever its event.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Payload {
    pub(crate) action: Option<String>,
    pub(crate) repository: Option<Repository>,
    pub(crate) installation: Option<Installation>,
    pub(crate) sender: Option<User>,
    pub(crate) issue: Option<Issue>,
    pub(crate) pull_request: Option<Issue>,
    pub(crate) number: Option<u64>,
    pub(crate) comment: Option<Comment>,
    pub(crate) review: Option<Review>,
    pub(crate) discussion: Option<Issue>,
    pub(crate) assignee: Option<User>,
    pub(crate) requested_reviewer: Option<User>,
    pub(crate) label: Option<Label>,
    pub(crate) after: Option<String>,
    #[serde(default)]
    pub(crate) repositories_added: Vec<Repository>,
    #[serde(default)]
    pub(crate) repositories_removed: Vec<Repository>,
}

/// `repository`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Repository {
    #[serde(default)]
    pub(crate) full_name: String,
}

/// `installation`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Installation {
    #[serde(default)]
    pub(crate) id: u64,
    pub(crate) account: Option<User>,
}

/// A user, a bot or an organization.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct User {
    #[serde(default)]
    pub(crate) login: String,
    #[serde(default)]
    pub(crate) id: u64,
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
}

/// An issue, a pull request or a discussion: what a conversation opens with.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Issue {
    #[serde(default)]
    pub(crate) number: u64,
    pub(crate) title: Option<String>,
    pub(crate) body: Option<String>,
    pub(crate) user: Option<User>,
    pub(crate) head: Option<Head>,
}

/// A pull request's head.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Head {
    pub(crate) sha: Option<String>,
}

/// A comment: on an issue or a pull request's conversation, on a pull
/// request's diff (a review comment), or in a discussion.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Comment {
    #[serde(default)]
    pub(crate) id: u64,
    /// The GraphQL node id (a discussion comment's is how it is written to).
    pub(crate) node_id: Option<String>,
    pub(crate) body: Option<String>,
    pub(crate) user: Option<User>,
    /// A review comment that answers another: the thread's first comment.
    pub(crate) in_reply_to_id: Option<u64>,
    pub(crate) performed_via_github_app: Option<App>,
}

/// The app a comment was made through.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct App {
    #[serde(default)]
    pub(crate) id: u64,
}

/// A pull request review.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Review {
    #[serde(default)]
    pub(crate) id: u64,
    pub(crate) body: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) user: Option<User>,
}

/// A label.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Label {
    #[serde(default)]
    pub(crate) name: String,
}
