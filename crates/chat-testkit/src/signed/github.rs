//! GitHub deliveries: webhook payloads with `X-GitHub-Event`,
//! `X-GitHub-Delivery` and `X-GitHub-Hook-ID`, signed with the webhook
//! secret in `X-Hub-Signature-256`, as JSON or as a form (`payload=`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::{form_encode, hmac_hex, post};

/// Builds GitHub deliveries for one repository.
///
/// Defaults: path `/webhooks/github`, repository `octo/hello`, no
/// installation (a repository webhook; [`installation`](Self::installation)
/// for an App's), hook id `4242`, author `ada`. Each builder takes the
/// delivery's id (`X-GitHub-Delivery`, which a redelivery repeats).
///
/// ```
/// use chat_testkit::signed::GitHubDeliveries;
///
/// let github = GitHubDeliveries::new("webhook-secret");
/// let request = github.issue_comment("d-1", 42, 1001, "@bot hi");
/// assert_eq!(request.headers()["x-github-event"], "issue_comment");
/// assert!(request.headers()["x-hub-signature-256"].to_str().is_ok_and(|s| s.starts_with("sha256=")));
/// ```
#[derive(Debug, Clone)]
pub struct GitHubDeliveries {
    secret: String,
    path: String,
    repo: String,
    installation: Option<u64>,
    hook: String,
    login: String,
    form: bool,
}

impl GitHubDeliveries {
    /// Deliveries signed with `webhook_secret`.
    pub fn new(webhook_secret: impl Into<String>) -> Self {
        Self {
            secret: webhook_secret.into(),
            path: "/webhooks/github".to_owned(),
            repo: "octo/hello".to_owned(),
            installation: None,
            hook: "4242".to_owned(),
            login: "ada".to_owned(),
            form: false,
        }
    }

    /// The request path.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The repository (`owner/name`).
    #[must_use]
    pub fn repo(mut self, repo: impl Into<String>) -> Self {
        self.repo = repo.into();
        self
    }

    /// An App's installation the deliveries carry.
    #[must_use]
    pub fn installation(mut self, id: u64) -> Self {
        self.installation = Some(id);
        self
    }

    /// Who writes (the sender and the comment's author).
    #[must_use]
    pub fn author(mut self, login: impl Into<String>) -> Self {
        self.login = login.into();
        self
    }

    /// Sends `application/x-www-form-urlencoded` (`payload=<json>`), as a
    /// hook created with the form content type does.
    #[must_use]
    pub fn form(mut self) -> Self {
        self.form = true;
        self
    }

    fn user(&self) -> Value {
        json!({ "login": self.login, "id": 9, "type": "User" })
    }

    /// `event` with `payload` (the repository, installation and sender
    /// added), signed.
    pub fn event(&self, event: &str, delivery: &str, mut payload: Value) -> http::Request<Bytes> {
        if !payload.is_object() {
            payload = json!({ "payload": payload });
        }
        payload["repository"] = json!({ "id": 5, "full_name": self.repo });
        payload["sender"] = self.user();
        if let Some(id) = self.installation {
            payload["installation"] = json!({ "id": id });
        }
        let (content_type, body) = if self.form {
            (
                "application/x-www-form-urlencoded",
                format!("payload={}", form_encode(&payload.to_string())).into_bytes(),
            )
        } else {
            ("application/json", payload.to_string().into_bytes())
        };
        let signature = format!("sha256={}", hmac_hex(&self.secret, &[&body]));
        post(
            &self.path,
            &[
                ("content-type", content_type),
                ("x-github-event", event),
                ("x-github-delivery", delivery),
                ("x-github-hook-id", &self.hook),
                ("x-hub-signature-256", &signature),
                ("user-agent", "GitHub-Hookshot/044aadd"),
            ],
            body,
        )
    }

    /// A comment on issue (or pull request) `number`.
    pub fn issue_comment(
        &self,
        delivery: &str,
        number: u64,
        comment_id: u64,
        body: &str,
    ) -> http::Request<Bytes> {
        self.event(
            "issue_comment",
            delivery,
            json!({ "action": "created", "issue": { "number": number, "title": "Crash on start" },
                    "comment": { "id": comment_id, "body": body, "user": self.user() } }),
        )
    }

    /// A review comment on pull request `pull`, answering `in_reply_to`
    /// when given.
    pub fn review_comment(
        &self,
        delivery: &str,
        pull: u64,
        comment_id: u64,
        in_reply_to: Option<u64>,
        body: &str,
    ) -> http::Request<Bytes> {
        let mut comment = json!({ "id": comment_id, "body": body, "user": self.user(),
                                  "path": "src/lib.rs", "line": 1 });
        if let Some(root) = in_reply_to {
            comment["in_reply_to_id"] = json!(root);
        }
        self.event(
            "pull_request_review_comment",
            delivery,
            json!({ "action": "created", "pull_request": { "number": pull }, "comment": comment }),
        )
    }

    /// Issue `number` opened with `title` and `body`.
    pub fn issue_opened(
        &self,
        delivery: &str,
        number: u64,
        title: &str,
        body: &str,
    ) -> http::Request<Bytes> {
        self.event(
            "issues",
            delivery,
            json!({ "action": "opened",
                    "issue": { "number": number, "title": title, "body": body, "user": self.user() } }),
        )
    }

    /// `ping`, as GitHub sends when a webhook is created.
    pub fn ping(&self, delivery: &str) -> http::Request<Bytes> {
        self.event(
            "ping",
            delivery,
            json!({ "zen": "Keep it logically awesome.", "hook_id": 4242 }),
        )
    }
}
