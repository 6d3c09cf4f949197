//! What an agent says in a session ([`Activity`]) and what it sets on the
//! session itself ([`SessionUpdate`]).
//!
//! ```
//! use chat_linear::{Activity, Signal};
//!
//! let step = Activity::action("Searching", "release notes").with_result("3 matches").ephemeral();
//! assert_eq!(
//!     step.content_json(),
//!     serde_json::json!({"type": "action", "action": "Searching",
//!                        "parameter": "release notes", "result": "3 matches"})
//! );
//! let ask = Activity::elicitation("Which branch?").signal(Signal::Select);
//! assert_eq!(ask.content_json()["type"], "elicitation");
//! ```

use serde::Serialize;
use serde_json::{Value, json};

/// The content of an agent activity. Bodies are Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ActivityContent {
    /// Reasoning or progress (`thought`).
    Thought {
        /// The thought.
        body: String,
    },
    /// A tool call, and its result once known (`action`).
    Action {
        /// What the agent does (`Searching`).
        action: String,
        /// What it does it with.
        parameter: String,
        /// What came of it.
        result: Option<String>,
    },
    /// A question to the user (`elicitation`): the session waits for input.
    Elicitation {
        /// The question.
        body: String,
    },
    /// The final answer (`response`): the session completes.
    Response {
        /// The answer.
        body: String,
    },
    /// A failure (`error`).
    Error {
        /// What went wrong.
        body: String,
    },
}

impl ActivityContent {
    /// Linear's name of the content type.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Thought { .. } => "thought",
            Self::Action { .. } => "action",
            Self::Elicitation { .. } => "elicitation",
            Self::Response { .. } => "response",
            Self::Error { .. } => "error",
        }
    }

    /// The `content` object `agentActivityCreate` takes.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Thought { body }
            | Self::Elicitation { body }
            | Self::Response { body }
            | Self::Error { body } => json!({"type": self.kind(), "body": body}),
            Self::Action {
                action,
                parameter,
                result,
            } => {
                let mut v = json!({"type": "action", "action": action, "parameter": parameter});
                if let (Some(r), Some(map)) = (result, v.as_object_mut()) {
                    map.insert("result".to_owned(), Value::String(r.clone()));
                }
                v
            }
        }
    }

    /// Whether Linear accepts the `ephemeral` flag on this content type
    /// (thoughts and actions).
    pub fn may_be_ephemeral(&self) -> bool {
        matches!(self, Self::Thought { .. } | Self::Action { .. })
    }
}

/// A modifier an agent puts on an activity (`AgentActivitySignal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Signal {
    /// On an elicitation: the user must authenticate (`signalMetadata.url`).
    Auth,
    /// On a response: the session stays open instead of completing.
    Continue,
    /// On an elicitation: the user picks one of `signalMetadata.options`.
    Select,
    /// Acknowledges a stop request.
    Stop,
}

impl Signal {
    /// Linear's name of the signal.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Continue => "continue",
            Self::Select => "select",
            Self::Stop => "stop",
        }
    }
}

/// One agent activity to send with `agentActivityCreate`.
///
/// Each activity is sent with a client-supplied UUID v4 `id` (generated when
/// none is set), so a retry after a rate limit cannot create it twice.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Activity {
    /// What it says.
    pub content: ActivityContent,
    /// Disappears after the next activity (thoughts and actions only).
    pub ephemeral: bool,
    /// A modifier.
    pub signal: Option<Signal>,
    /// The signal's metadata (`{"url": …}` for auth, `{"options": […]}` for select).
    pub signal_metadata: Option<Value>,
    /// The activity's id (UUID v4); generated when `None`.
    pub id: Option<String>,
}

impl Activity {
    /// An activity with this content and no options.
    pub fn new(content: ActivityContent) -> Self {
        Self {
            content,
            ephemeral: false,
            signal: None,
            signal_metadata: None,
            id: None,
        }
    }

    /// A `thought`.
    pub fn thought(body: impl Into<String>) -> Self {
        Self::new(ActivityContent::Thought { body: body.into() })
    }

    /// An `action` without a result yet.
    pub fn action(action: impl Into<String>, parameter: impl Into<String>) -> Self {
        Self::new(ActivityContent::Action {
            action: action.into(),
            parameter: parameter.into(),
            result: None,
        })
    }

    /// An `elicitation`.
    pub fn elicitation(body: impl Into<String>) -> Self {
        Self::new(ActivityContent::Elicitation { body: body.into() })
    }

    /// A `response`.
    pub fn response(body: impl Into<String>) -> Self {
        Self::new(ActivityContent::Response { body: body.into() })
    }

    /// An `error`.
    pub fn error(body: impl Into<String>) -> Self {
        Self::new(ActivityContent::Error { body: body.into() })
    }

    /// Sets an action's result (no effect on other content types).
    #[must_use]
    pub fn with_result(mut self, value: impl Into<String>) -> Self {
        if let ActivityContent::Action { result, .. } = &mut self.content {
            *result = Some(value.into());
        }
        self
    }

    /// Marks the activity ephemeral: it disappears after the next one. Linear
    /// accepts this on thoughts and actions only; sending it on another type
    /// fails with [`AdapterError::Unsupported`](chat_core::AdapterError::Unsupported).
    #[must_use]
    pub fn ephemeral(mut self) -> Self {
        self.ephemeral = true;
        self
    }

    /// Sets a signal.
    #[must_use]
    pub fn signal(mut self, signal: Signal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// Sets the signal's metadata.
    #[must_use]
    pub fn signal_metadata(mut self, metadata: Value) -> Self {
        self.signal_metadata = Some(metadata);
        self
    }

    /// Sets the activity's id (a UUID v4), for a caller that keeps its own
    /// idempotency keys.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The `content` object sent for this activity.
    pub fn content_json(&self) -> Value {
        self.content.to_json()
    }
}

/// A link shown on a session (`AgentSessionExternalUrlInput`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ExternalUrl {
    /// The link's label.
    pub label: String,
    /// The URL.
    pub url: String,
}

impl ExternalUrl {
    /// A labelled link.
    pub fn new(label: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            url: url.into(),
        }
    }
}

/// The state of one step of an agent's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Canceled,
}

/// One step of an agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PlanStep {
    /// What the step does.
    pub content: String,
    /// Where it stands.
    pub status: PlanStatus,
}

impl PlanStep {
    /// A step.
    pub fn new(content: impl Into<String>, status: PlanStatus) -> Self {
        Self {
            content: content.into(),
            status,
        }
    }
}

/// Changes to an agent session, sent with `agentSessionUpdate`. Only the fields
/// that are set are sent.
///
/// ```
/// use chat_linear::{ExternalUrl, PlanStatus, PlanStep, SessionUpdate};
///
/// let update = SessionUpdate::new()
///     .external_urls([ExternalUrl::new("Dashboard", "https://agent.example/runs/42")])
///     .plan([PlanStep::new("Read the issue", PlanStatus::Completed),
///            PlanStep::new("Open a PR", PlanStatus::InProgress)]);
/// let input = update.to_input();
/// assert_eq!(input["externalUrls"][0]["label"], "Dashboard");
/// assert_eq!(input["plan"][1]["status"], "inProgress");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionUpdate {
    /// Replaces the session's external URLs.
    pub external_urls: Option<Vec<ExternalUrl>>,
    /// Adds external URLs.
    pub added_external_urls: Option<Vec<ExternalUrl>>,
    /// Removes external URLs.
    pub removed_external_urls: Option<Vec<String>>,
    /// The agent-hosted page of the session.
    pub external_link: Option<String>,
    /// The agent's plan, as Linear takes it (a list of `{content, status}`).
    pub plan: Option<Value>,
}

impl SessionUpdate {
    /// No changes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the external URLs.
    #[must_use]
    pub fn external_urls(mut self, urls: impl IntoIterator<Item = ExternalUrl>) -> Self {
        self.external_urls = Some(urls.into_iter().collect());
        self
    }

    /// Adds external URLs.
    #[must_use]
    pub fn add_external_urls(mut self, urls: impl IntoIterator<Item = ExternalUrl>) -> Self {
        self.added_external_urls = Some(urls.into_iter().collect());
        self
    }

    /// Removes external URLs.
    #[must_use]
    pub fn remove_external_urls(mut self, urls: impl IntoIterator<Item = String>) -> Self {
        self.removed_external_urls = Some(urls.into_iter().collect());
        self
    }

    /// Sets the agent-hosted page.
    #[must_use]
    pub fn external_link(mut self, url: impl Into<String>) -> Self {
        self.external_link = Some(url.into());
        self
    }

    /// Sets the plan.
    #[must_use]
    pub fn plan(mut self, steps: impl IntoIterator<Item = PlanStep>) -> Self {
        let steps: Vec<PlanStep> = steps.into_iter().collect();
        self.plan = Some(serde_json::to_value(steps).unwrap_or(Value::Null));
        self
    }

    /// Sets the plan from JSON, for shapes [`PlanStep`] does not cover.
    #[must_use]
    pub fn plan_json(mut self, plan: Value) -> Self {
        self.plan = Some(plan);
        self
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// The `AgentSessionUpdateInput` object.
    pub fn to_input(&self) -> Value {
        let mut input = serde_json::Map::new();
        let mut put = |k: &str, v: Value| {
            input.insert(k.to_owned(), v);
        };
        if let Some(urls) = &self.external_urls {
            put("externalUrls", json!(urls));
        }
        if let Some(urls) = &self.added_external_urls {
            put("addedExternalUrls", json!(urls));
        }
        if let Some(urls) = &self.removed_external_urls {
            put("removedExternalUrls", json!(urls));
        }
        if let Some(link) = &self.external_link {
            put("externalLink", json!(link));
        }
        if let Some(plan) = &self.plan {
            put("plan", plan.clone());
        }
        Value::Object(input)
    }
}
