//! Slack's own event kinds, typed: what a handler registered on a
//! [`routes`](crate::routes) route reads from its event
//! ([`EventKind::Other`], whose data is Slack's
//! payload). Each `of` answers `None` for an event of another kind.
//!
//! ```
//! use chat_core::{Event, EventKind, OtherEvent, Platform, ThreadRef};
//! use chat_slack::events::AssistantThread;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let data = serde_json::json!({
//!     "type": "assistant_thread_started",
//!     "assistant_thread": {
//!         "user_id": "U1", "channel_id": "D1", "thread_ts": "1729999327.187299",
//!         "context": { "channel_id": "C7", "team_id": "T1" }
//!     }
//! });
//! let event = Event::new("Ev1", "Ev1", ThreadRef::new(Platform::SLACK, "T1", "D1", "1729999327.187299"),
//!     EventKind::Other(OtherEvent::new("assistant_thread_started", data)));
//! let started = AssistantThread::of(&event).ok_or("not an assistant thread")?;
//! assert_eq!(started.user_id, "U1");
//! assert_eq!(started.context.channel_id.as_deref(), Some("C7"));
//! # Ok(()) }
//! ```

use chat_core::{Event, EventKind, Handle, Reply};
use serde::Deserialize;
use serde_json::{Value, json};

fn other<'e>(event: &'e Event, names: &[&str]) -> Option<(&'e str, &'e Value)> {
    match &event.kind {
        EventKind::Other(o) if names.contains(&o.name.as_str()) => Some((&o.name, &o.data)),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// What channel a user of an assistant thread is looking at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct AssistantContext {
    /// The channel in view, when there is one.
    #[serde(default)]
    pub channel_id: Option<String>,
    /// Its workspace.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Its organization, on Enterprise Grid.
    #[serde(default)]
    pub enterprise_id: Option<String>,
}

/// `assistant_thread_started` (a user opened the assistant's side panel)
/// and `assistant_thread_context_changed` (they moved to another channel
/// with it open). The event's thread is the assistant thread: post, set a
/// status (`Thread::set_status`), suggested prompts and a title
/// ([`SlackAdapter::set_suggested_prompts`](crate::SlackAdapter::set_suggested_prompts),
/// [`set_title`](crate::SlackAdapter::set_title)) there; messages the user
/// sends in it arrive as direct messages.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AssistantThread {
    /// `true` for `assistant_thread_started`, `false` for a context change.
    pub started: bool,
    /// The user who opened it.
    pub user_id: String,
    /// The assistant's DM channel.
    pub channel_id: String,
    /// The thread's `ts`.
    pub thread_ts: String,
    /// Where the user is.
    pub context: AssistantContext,
}

impl AssistantThread {
    /// The assistant thread `event` is about.
    pub fn of(event: &Event) -> Option<Self> {
        let (name, data) = other(
            event,
            &[
                "assistant_thread_started",
                "assistant_thread_context_changed",
            ],
        )?;
        let at = &data["assistant_thread"];
        Some(Self {
            started: name == "assistant_thread_started",
            user_id: text(&at["user_id"]).unwrap_or_default(),
            channel_id: text(&at["channel_id"])?,
            thread_ts: text(&at["thread_ts"])?,
            context: AssistantContext::deserialize(&at["context"]).unwrap_or_default(),
        })
    }
}

/// `app_home_opened`: a user opened the app's Home (or Messages) tab.
/// Publish their Home view with
/// [`SlackAdapter::publish_home`](crate::SlackAdapter::publish_home).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AppHomeOpened {
    /// The user.
    pub user_id: String,
    /// The app's DM channel with them.
    pub channel_id: String,
    /// `home` or `messages`.
    pub tab: String,
}

impl AppHomeOpened {
    /// The App Home `event` is about.
    pub fn of(event: &Event) -> Option<Self> {
        let (_, data) = other(event, &["app_home_opened"])?;
        Some(Self {
            user_id: text(&data["user"])?,
            channel_id: text(&data["channel"]).unwrap_or_default(),
            tab: text(&data["tab"]).unwrap_or_else(|| "home".to_owned()),
        })
    }
}

/// `member_joined_channel`: someone joined a channel the bot is in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemberJoined {
    /// Who joined.
    pub user_id: String,
    /// The channel.
    pub channel_id: String,
    /// `C` (public) or `G` (private).
    pub channel_type: Option<String>,
    /// Who invited them, when someone did.
    pub inviter: Option<String>,
}

impl MemberJoined {
    /// The join `event` is about.
    pub fn of(event: &Event) -> Option<Self> {
        let (_, data) = other(event, &["member_joined_channel"])?;
        Some(Self {
            user_id: text(&data["user"])?,
            channel_id: text(&data["channel"])?,
            channel_type: text(&data["channel_type"]),
            inviter: text(&data["inviter"]),
        })
    }
}

/// The message a message shortcut was used on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShortcutMessage {
    /// Its channel.
    pub channel_id: String,
    /// Its `ts`.
    pub ts: String,
    /// Its text, as Slack sent it.
    pub text: String,
    /// Who wrote it.
    pub user_id: Option<String>,
}

/// A global shortcut (`shortcut`) or a message shortcut
/// (`message_action`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shortcut {
    /// The shortcut's `callback_id`, as configured in the app.
    pub callback_id: String,
    /// Who used it.
    pub user_id: String,
    /// The trigger for opening a modal (valid about 3 s): pass
    /// `trigger.as_str()` to `Thread::open_modal`.
    pub trigger: Option<Handle>,
    /// The message, for a message shortcut.
    pub message: Option<ShortcutMessage>,
}

impl Shortcut {
    /// The shortcut `event` is.
    pub fn of(event: &Event) -> Option<Self> {
        let (name, data) = other(event, &["shortcut", "message_action"])?;
        let message = (name == "message_action")
            .then(|| {
                let m = &data["message"];
                Some(ShortcutMessage {
                    channel_id: text(&data["channel"]["id"])?,
                    ts: text(&m["ts"])?,
                    text: m["text"].as_str().unwrap_or_default().to_owned(),
                    user_id: text(&m["user"]),
                })
            })
            .flatten();
        Some(Self {
            callback_id: text(&data["callback_id"]).unwrap_or_default(),
            user_id: text(&data["user"]["id"]).unwrap_or_default(),
            trigger: text(&data["trigger_id"]).map(Handle::new),
            message,
        })
    }
}

/// `block_suggestion`: an external select asks for its options as the user
/// types. Answer inline — Slack waits 3 s — by giving
/// `ctx.reply(`[`Options`]`)` in a handler on
/// [`routes::options_load`](crate::routes::options_load).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OptionsRequest {
    /// The select's `action_id`.
    pub action_id: String,
    /// Its block's `block_id`.
    pub block_id: String,
    /// What the user typed so far.
    pub value: String,
    /// Who is typing.
    pub user_id: String,
}

impl OptionsRequest {
    /// The options request `event` is.
    pub fn of(event: &Event) -> Option<Self> {
        let (_, data) = other(event, &["block_suggestion"])?;
        Some(Self {
            action_id: text(&data["action_id"]).unwrap_or_default(),
            block_id: text(&data["block_id"]).unwrap_or_default(),
            value: data["value"].as_str().unwrap_or_default().to_owned(),
            user_id: text(&data["user"]["id"]).unwrap_or_default(),
        })
    }
}

/// The most options Slack shows for an external select.
pub const MAX_OPTIONS: usize = 100;
/// The longest option text Slack takes.
pub const MAX_OPTION_TEXT: usize = 75;
/// The longest option value Slack takes.
pub const MAX_OPTION_VALUE: usize = 150;

/// The answer to an [`OptionsRequest`]: options, or groups of them, as
/// Slack's options-load response. Past Slack's limits (100 options, texts
/// of 75 characters, values of 150) it is cut, never refused: a cut list
/// still lets the user type on.
///
/// ```
/// use chat_slack::events::Options;
/// let answer = Options::new().option("Alice", "u1").option("Bob", "u2");
/// let chat_core::Reply::Platform(body) = answer.into() else { unreachable!() };
/// assert_eq!(body["options"][1]["value"], "u2");
/// assert_eq!(body["options"][0]["text"]["type"], "plain_text");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    plain: Vec<(String, String)>,
    groups: Vec<(String, Vec<(String, String)>)>,
}

impl Options {
    /// No options yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// An option shown as `text`, chosen as `value`.
    #[must_use]
    pub fn option(mut self, text: impl Into<String>, value: impl Into<String>) -> Self {
        self.plain.push((text.into(), value.into()));
        self
    }

    /// A group of options under `label` (Slack shows groups instead of a
    /// flat list when there is any).
    #[must_use]
    pub fn group<I, T, V>(mut self, label: impl Into<String>, options: I) -> Self
    where
        I: IntoIterator<Item = (T, V)>,
        T: Into<String>,
        V: Into<String>,
    {
        let options = options
            .into_iter()
            .map(|(t, v)| (t.into(), v.into()))
            .collect();
        self.groups.push((label.into(), options));
        self
    }
}

fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

fn option_json(budget: &mut usize, options: &[(String, String)]) -> Vec<Value> {
    let take = options.len().min(*budget);
    *budget -= take;
    options[..take]
        .iter()
        .map(|(t, v)| {
            json!({
                "text": { "type": "plain_text", "text": cut(t, MAX_OPTION_TEXT) },
                "value": cut(v, MAX_OPTION_VALUE),
            })
        })
        .collect()
}

impl From<Options> for Reply {
    fn from(o: Options) -> Self {
        let mut budget = MAX_OPTIONS;
        if o.groups.is_empty() {
            return Reply::platform(json!({ "options": option_json(&mut budget, &o.plain) }));
        }
        let groups: Vec<Value> = o
            .groups
            .iter()
            .map(|(label, options)| {
                json!({
                    "label": { "type": "plain_text", "text": cut(label, MAX_OPTION_TEXT) },
                    "options": option_json(&mut budget, options),
                })
            })
            .collect();
        Reply::platform(json!({ "option_groups": groups }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_cut_to_slacks_limits() {
        let many = (0..150).fold(Options::new(), |o, i| {
            o.option("x".repeat(100), format!("{i}{}", "v".repeat(200)))
        });
        let Reply::Platform(body) = Reply::from(many) else {
            panic!("a platform body")
        };
        let options = body["options"]
            .as_array()
            .unwrap_or_else(|| panic!("options"));
        assert_eq!(options.len(), MAX_OPTIONS);
        assert_eq!(
            options[0]["text"]["text"]
                .as_str()
                .map(|t| t.chars().count()),
            Some(MAX_OPTION_TEXT)
        );
        assert_eq!(
            options[0]["value"].as_str().map(|t| t.chars().count()),
            Some(MAX_OPTION_VALUE)
        );
        let grouped = Options::new()
            .group("Recent", [("Alice", "u1")])
            .group("All", (0..120).map(|i| (format!("u{i}"), format!("u{i}"))));
        let Reply::Platform(body) = Reply::from(grouped) else {
            panic!("a platform body")
        };
        let groups = body["option_groups"]
            .as_array()
            .unwrap_or_else(|| panic!("groups"));
        let total: usize = groups
            .iter()
            .map(|g| g["options"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(total, MAX_OPTIONS);
        assert_eq!(groups[0]["label"]["text"], "Recent");
    }
}
