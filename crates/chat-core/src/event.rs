//! The normalized event model every adapter produces and every handler receives.
//!
//! Events are `serde`-serializable because the queue, debounce and burst strategies
//! keep waiting events in the state backend, which may be shared by several replicas.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::content::{Attachment, Link, Mention};
use crate::id::{DedupeKey, EventId, Platform, TenantId, ThreadRef};

/// One event delivered by a platform, normalized.
///
/// Its `Debug` shows the raw body's length, not its bytes: a platform body can
/// carry secrets (a platform's verification token, a follow-up address that
/// answers on the bot's behalf).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Event {
    /// The platform's id of this delivery (Slack `event_id`, Linear `Linear-Delivery`).
    pub id: EventId,
    /// What deduplication keys on: the user's action (see [`DedupeKey`]).
    pub dedupe_key: DedupeKey,
    /// The conversation the event belongs to.
    pub thread: ThreadRef,
    /// When the runtime received it, in milliseconds since the Unix epoch.
    pub received_at_ms: u64,
    /// The platform's delivery attempt: 0 for the first, then the retry number
    /// (Slack `X-Slack-Retry-Num`). Recorded, never used to skip.
    pub attempt: u32,
    /// Why the platform retried, when it says (`http_timeout`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_reason: Option<String>,
    /// What happened.
    pub kind: EventKind,
    /// The delivery's payload as the adapter keeps it: the request body as
    /// received, less what the adapter drops because it is a credential the
    /// run never needs (Slack's legacy verification `token`) — the event is
    /// stored in the state backend while it waits or runs. Serialized as a
    /// string when it is UTF-8 (platform bodies are JSON or form-encoded),
    /// else as an array of bytes.
    #[serde(default, skip_serializing_if = "Bytes::is_empty", with = "raw_body")]
    pub raw: Bytes,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("id", &self.id)
            .field("dedupe_key", &self.dedupe_key)
            .field("thread", &self.thread)
            .field("received_at_ms", &self.received_at_ms)
            .field("attempt", &self.attempt)
            .field("retry_reason", &self.retry_reason)
            .field("kind", &self.kind)
            .field("raw", &format_args!("<{} bytes>", self.raw.len()))
            .finish()
    }
}

/// A body as a string when it is UTF-8: a 2 KB JSON body stays 2 KB in a queued
/// event instead of becoming an 8 KB array of numbers.
mod raw_body {
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(raw: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(raw) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.serialize_bytes(raw),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        Ok(match Raw::deserialize(d)? {
            Raw::Text(t) => Bytes::from(t),
            Raw::Bytes(b) => Bytes::from(b),
        })
    }
}

impl Event {
    /// An event as an adapter builds it: received now (`received_at_ms` 0 until
    /// set), first attempt, no retry reason, no raw body.
    ///
    /// ```
    /// use chat_core::{Author, Event, EventKind, Message, Platform, ThreadRef};
    ///
    /// let thread = ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0");
    /// let hello = Message::new("1.0", Author::new("U1"), "hello").with_mention(true);
    /// let event = Event::new("Ev1", "C1:1.0", thread, EventKind::Message(hello))
    ///     .with_received_at_ms(1_700_000_000_000);
    /// assert_eq!(event.text(), Some("hello"));
    /// ```
    pub fn new(
        id: impl Into<EventId>,
        dedupe_key: impl Into<String>,
        thread: ThreadRef,
        kind: EventKind,
    ) -> Self {
        Self {
            id: id.into(),
            dedupe_key: DedupeKey::new(dedupe_key),
            thread,
            received_at_ms: 0,
            attempt: 0,
            retry_reason: None,
            kind,
            raw: Bytes::new(),
        }
    }

    /// Sets when the runtime received the event (ms since the Unix epoch).
    #[must_use]
    pub fn with_received_at_ms(mut self, ms: u64) -> Self {
        self.received_at_ms = ms;
        self
    }

    /// Sets the platform's delivery attempt and, when it says, why it retried.
    #[must_use]
    pub fn with_attempt(mut self, attempt: u32, retry_reason: Option<String>) -> Self {
        self.attempt = attempt;
        self.retry_reason = retry_reason;
        self
    }

    /// Sets the raw, signed request body.
    #[must_use]
    pub fn with_raw(mut self, raw: Bytes) -> Self {
        self.raw = raw;
        self
    }

    /// The platform the event came from.
    pub fn platform(&self) -> Platform {
        self.thread.platform
    }

    /// The installation the event belongs to.
    pub fn tenant(&self) -> &TenantId {
        &self.thread.tenant
    }

    /// The message, when the event is one.
    pub fn message(&self) -> Option<&Message> {
        match &self.kind {
            EventKind::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The text a user wrote, for the kinds that carry one (messages, slash
    /// commands, agent prompts).
    pub fn text(&self) -> Option<&str> {
        match &self.kind {
            EventKind::Message(m) => Some(&m.text),
            EventKind::SlashCommand(c) => Some(&c.text),
            EventKind::AgentSession(s) => s.text.as_deref(),
            _ => None,
        }
    }

    /// Whether this is a control event that must bypass the concurrency strategy
    /// (a stop request): it cancels the running handler instead of waiting behind it.
    pub fn is_control(&self) -> bool {
        matches!(
            &self.kind,
            EventKind::AgentSession(AgentSession {
                action: AgentSessionAction::StopRequested,
                ..
            })
        )
    }
}

/// What an [`Event`] is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// A message was posted, edited or deleted.
    Message(Message),
    /// A reaction was added or removed.
    Reaction(Reaction),
    /// A button, select or other interactive component was used.
    Action(Action),
    /// A slash command was invoked.
    SlashCommand(SlashCommand),
    /// A modal was submitted.
    ModalSubmit(Modal),
    /// A modal was closed.
    ModalClose(Modal),
    /// A Linear agent session was created, prompted or asked to stop.
    AgentSession(AgentSession),
    /// Anything else the adapter chose to pass through, by platform name.
    Other(OtherEvent),
}

/// Who did something.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Author {
    /// The platform's user id (Slack `U…`, Linear user id). Empty when unknown.
    pub id: String,
    /// Display name, when the payload carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The author is a bot or app.
    #[serde(default)]
    pub is_bot: bool,
    /// The author is this bot itself.
    #[serde(default)]
    pub is_me: bool,
}

impl Author {
    /// A human author with a platform user id (empty when unknown).
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// Sets the display name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Marks the author as a bot or app (or not).
    #[must_use]
    pub fn with_bot(mut self, is_bot: bool) -> Self {
        self.is_bot = is_bot;
        self
    }

    /// Marks the author as this bot itself (or not).
    #[must_use]
    pub fn with_me(mut self, is_me: bool) -> Self {
        self.is_me = is_me;
        self
    }
}

/// A chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// The platform's message id (Slack `ts`, Linear comment or activity id).
    pub id: String,
    /// Who wrote it.
    pub author: Author,
    /// The plain text: mentions as `@name` (or `@id` where no name is
    /// known), links as their text, the platform's escapes decoded.
    pub text: String,
    /// The text as the platform sent it (Slack's `<@U1>` and
    /// `<https://x|label>`, Linear's Markdown).
    #[serde(default)]
    pub markup: String,
    /// The text as Markdown (`[label](url)` links, `**bold**`).
    #[serde(default)]
    pub markdown: String,
    /// The users it mentions, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<Mention>,
    /// The links in it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// The files and images attached to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Posted, edited or deleted.
    pub change: MessageChange,
    /// The bot was @-mentioned.
    #[serde(default)]
    pub is_mention: bool,
    /// A direct message to the bot (counts as a mention for routing).
    #[serde(default)]
    pub is_dm: bool,
}

impl Message {
    /// A newly posted message that neither mentions the bot nor is a DM,
    /// whose markup and Markdown are its text.
    pub fn new(id: impl Into<String>, author: Author, text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            id: id.into(),
            author,
            markup: text.clone(),
            markdown: text.clone(),
            text,
            change: MessageChange::Posted,
            is_mention: false,
            is_dm: false,
            mentions: Vec::new(),
            links: Vec::new(),
            attachments: Vec::new(),
        }
    }

    /// Sets the text as the platform sent it.
    #[must_use]
    pub fn with_markup(mut self, markup: impl Into<String>) -> Self {
        self.markup = markup.into();
        self
    }

    /// Sets the Markdown rendering.
    #[must_use]
    pub fn with_markdown(mut self, markdown: impl Into<String>) -> Self {
        self.markdown = markdown.into();
        self
    }

    /// Sets the users it mentions.
    #[must_use]
    pub fn with_mentions(mut self, mentions: Vec<Mention>) -> Self {
        self.mentions = mentions;
        self
    }

    /// Sets the links in it.
    #[must_use]
    pub fn with_links(mut self, links: Vec<Link>) -> Self {
        self.links = links;
        self
    }

    /// Sets the files attached to it.
    #[must_use]
    pub fn with_attachments(mut self, attachments: Vec<Attachment>) -> Self {
        self.attachments = attachments;
        self
    }

    /// The plain text without a leading mention of this bot: what was said
    /// to it (`"@echo hello"` → `"hello"`).
    pub fn text_after_mention(&self) -> &str {
        let text = self.text.trim_start();
        let me = self.mentions.iter().filter(|m| m.is_me).flat_map(|m| {
            [m.name.as_deref(), Some(m.user_id.as_str())]
                .into_iter()
                .flatten()
        });
        for name in me {
            if let Some(rest) = text
                .strip_prefix('@')
                .and_then(|t| t.strip_prefix(name))
                .filter(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
            {
                return rest.trim_start();
            }
        }
        text
    }

    /// Sets whether the message is new, edited or deleted.
    #[must_use]
    pub fn with_change(mut self, change: MessageChange) -> Self {
        self.change = change;
        self
    }

    /// Sets whether the bot was @-mentioned.
    #[must_use]
    pub fn with_mention(mut self, is_mention: bool) -> Self {
        self.is_mention = is_mention;
        self
    }

    /// Sets whether the message is a direct message to the bot.
    #[must_use]
    pub fn with_dm(mut self, is_dm: bool) -> Self {
        self.is_dm = is_dm;
        self
    }
}

/// Whether a message is new, edited or deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MessageChange {
    /// A new message.
    Posted,
    /// An existing message was edited.
    Edited,
    /// A message was deleted.
    Deleted,
}

/// A reaction added to or removed from a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Reaction {
    /// The emoji name, without colons.
    pub emoji: String,
    /// Added (`true`) or removed (`false`).
    pub added: bool,
    /// Who reacted.
    pub user: Author,
    /// The message reacted to.
    pub message_id: String,
}

impl Reaction {
    /// `user` added (`added`) or removed `emoji` on message `message_id`.
    pub fn new(
        emoji: impl Into<String>,
        added: bool,
        user: Author,
        message_id: impl Into<String>,
    ) -> Self {
        Self {
            emoji: emoji.into(),
            added,
            user,
            message_id: message_id.into(),
        }
    }
}

/// A click on an interactive component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Action {
    /// The component's `action_id`.
    pub action_id: String,
    /// The selected or submitted value, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Who clicked.
    pub user: Author,
    /// Where a later answer goes (an adapter's handle; Slack: the response
    /// URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<Handle>,
    /// The short-lived handle for opening a modal from this interaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Handle>,
}

impl Action {
    /// A click by `user` on the component `action_id`, with no value.
    pub fn new(action_id: impl Into<String>, user: Author) -> Self {
        Self {
            action_id: action_id.into(),
            value: None,
            user,
            follow_up: None,
            trigger: None,
        }
    }

    /// Sets the selected or submitted value.
    #[must_use]
    pub fn with_value(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self
    }

    /// Sets where a later answer goes.
    #[must_use]
    pub fn with_follow_up(mut self, handle: Handle) -> Self {
        self.follow_up = Some(handle);
        self
    }

    /// Sets the handle for opening a modal.
    #[must_use]
    pub fn with_trigger(mut self, handle: Handle) -> Self {
        self.trigger = Some(handle);
        self
    }
}

/// A slash command invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SlashCommand {
    /// The command, with its slash (`/echo`).
    pub command: String,
    /// What followed the command.
    pub text: String,
    /// Who invoked it.
    pub user: Author,
    /// Where a later answer goes (an adapter's handle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<Handle>,
    /// The short-lived handle for opening a modal from this command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Handle>,
}

impl SlashCommand {
    /// `user` invoked `command` (with its slash) followed by `text`.
    pub fn new(command: impl Into<String>, text: impl Into<String>, user: Author) -> Self {
        Self {
            command: command.into(),
            text: text.into(),
            user,
            follow_up: None,
            trigger: None,
        }
    }

    /// Sets where a later answer goes.
    #[must_use]
    pub fn with_follow_up(mut self, handle: Handle) -> Self {
        self.follow_up = Some(handle);
        self
    }

    /// Sets the handle for opening a modal.
    #[must_use]
    pub fn with_trigger(mut self, handle: Handle) -> Self {
        self.trigger = Some(handle);
        self
    }
}

/// A modal that was submitted or closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Modal {
    /// The view's `callback_id`.
    pub callback_id: String,
    /// The platform's view id.
    pub view_id: String,
    /// Who submitted or closed it.
    pub user: Author,
    /// The submitted state values, as the platform sent them (read them with
    /// [`value`](Self::value) and [`values`](Self::values)).
    #[serde(default)]
    pub values: serde_json::Value,
    /// The view's metadata ([`View::metadata`](crate::view::View::metadata);
    /// Slack `private_metadata`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
}

impl Modal {
    /// The view `view_id` with callback `callback_id`, by `user`, with no values.
    pub fn new(callback_id: impl Into<String>, view_id: impl Into<String>, user: Author) -> Self {
        Self {
            callback_id: callback_id.into(),
            view_id: view_id.into(),
            user,
            values: serde_json::Value::Null,
            metadata: None,
        }
    }

    /// Sets the submitted state values.
    #[must_use]
    pub fn with_values(mut self, values: serde_json::Value) -> Self {
        self.values = values;
        self
    }

    /// Sets the view's metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: impl Into<String>) -> Self {
        self.metadata = Some(metadata.into());
        self
    }

    /// The submitted value of the input (`block_id`, `action_id`): a text
    /// field's text, a select's chosen option's value (or date, user,
    /// channel), the first checked value; `None` when empty.
    ///
    /// ```
    /// use chat_core::{Author, Modal};
    /// let modal = Modal::new("form", "V1", Author::new("U1")).with_values(serde_json::json!({
    ///     "form": { "value": { "type": "plain_text_input", "value": "hello" } },
    ///     "extras": { "flags": { "type": "checkboxes",
    ///         "selected_options": [{ "value": "a" }, { "value": "b" }] } },
    /// }));
    /// assert_eq!(modal.value("form", "value"), Some("hello"));
    /// assert_eq!(modal.values("extras", "flags"), ["a", "b"]);
    /// assert_eq!(modal.value("missing", "value"), None);
    /// ```
    pub fn value(&self, block_id: &str, action_id: &str) -> Option<&str> {
        self.values(block_id, action_id).into_iter().next()
    }

    /// Every submitted value of the input (`block_id`, `action_id`): the
    /// checked options of checkboxes or a multi-select, else the one value.
    pub fn values(&self, block_id: &str, action_id: &str) -> Vec<&str> {
        let state = &self.values[block_id][action_id];
        if let Some(options) = state["selected_options"].as_array() {
            return options.iter().filter_map(|o| o["value"].as_str()).collect();
        }
        [
            &state["value"],
            &state["selected_option"]["value"],
            &state["selected_date"],
            &state["selected_user"],
            &state["selected_channel"],
            &state["selected_conversation"],
        ]
        .into_iter()
        .find_map(|v| v.as_str())
        .filter(|v| !v.is_empty())
        .into_iter()
        .collect()
    }
}

/// A Linear agent-session event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentSession {
    /// The agent session's id.
    pub session_id: String,
    /// Created, prompted, or a stop request.
    pub action: AgentSessionAction,
    /// The user's prompt (`prompted`), or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Linear's prepared context for a new session (`created` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_context: Option<String>,
    /// The activity id of a prompt, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<String>,
    /// Who created or prompted the session.
    pub user: Author,
}

impl AgentSession {
    /// `action` on session `session_id` by `user`, with no prompt.
    pub fn new(session_id: impl Into<String>, action: AgentSessionAction, user: Author) -> Self {
        Self {
            session_id: session_id.into(),
            action,
            text: None,
            prompt_context: None,
            activity_id: None,
            user,
        }
    }

    /// Sets the user's prompt.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets Linear's prepared context for a new session.
    #[must_use]
    pub fn with_prompt_context(mut self, context: impl Into<String>) -> Self {
        self.prompt_context = Some(context.into());
        self
    }

    /// Sets the prompt's activity id.
    #[must_use]
    pub fn with_activity_id(mut self, id: impl Into<String>) -> Self {
        self.activity_id = Some(id.into());
        self
    }
}

/// What happened to an agent session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentSessionAction {
    /// A new session: the agent was mentioned or delegated an issue.
    Created,
    /// The user sent a follow-up prompt.
    Prompted,
    /// The user asked the agent to stop (`signal: stop`).
    StopRequested,
}

/// A platform event the normalized model does not cover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OtherEvent {
    /// The platform's name for the event (`app_home_opened`, `member_joined_channel`, …).
    pub name: String,
    /// The event's JSON, as the platform sent it.
    #[serde(default)]
    pub data: serde_json::Value,
}

impl OtherEvent {
    /// The platform event `name` with its JSON.
    pub fn new(name: impl Into<String>, data: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            data,
        }
    }
}

/// An opaque capability an adapter gave an interaction (Slack: its response
/// URL, or its trigger for opening a modal). Only that adapter reads it; its
/// `Debug` never shows it, since it may answer on the bot's behalf.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Handle(String);

impl Handle {
    /// Wraps the adapter's value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The adapter's value (for the adapter that made it).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handle(<redacted>)")
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    fn sample() -> Event {
        Event {
            id: EventId::new("Ev1"),
            dedupe_key: DedupeKey::new("C1:1.0"),
            thread: ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0"),
            received_at_ms: 1_700_000_000_000,
            attempt: 1,
            retry_reason: Some("http_timeout".into()),
            kind: EventKind::Message(
                Message::new("1.0", Author::new("U1"), "@bot hello")
                    .with_markup("<@UBOT> hello")
                    .with_mentions(vec![Mention::new("UBOT").with_name("bot").with_me(true)])
                    .with_attachments(vec![
                        Attachment::new("F1", "a.png", "https://files.example/F1")
                            .with_mime_type("image/png")
                            .with_size(3),
                    ])
                    .with_mention(true),
            ),
            raw: Bytes::from_static(b"{\"raw\":true}"),
        }
    }

    #[test]
    fn events_round_trip_through_json() -> TestResult {
        let e = sample();
        let json = serde_json::to_vec(&e)?;
        let back: Event = serde_json::from_slice(&json)?;
        assert_eq!(back, e);
        Ok(())
    }

    #[test]
    fn an_event_stored_before_messages_had_markup_still_reads() -> TestResult {
        let old = r#"{"id":"Ev1","dedupe_key":"C1:1.0",
            "thread":{"platform":"slack","tenant":"T1","channel":"C1","thread":"1.0"},
            "received_at_ms":1,"attempt":0,"retry_reason":null,"raw":"",
            "kind":{"type":"message","id":"1.0","author":{"id":"U1"},"text":"<@U0BOT> hi",
                    "change":"posted","is_mention":true}}"#;
        let back: Event = serde_json::from_str(old)?;
        let Some(m) = back.message() else {
            panic!("a message");
        };
        assert_eq!(m.text, "<@U0BOT> hi");
        assert!(m.markup.is_empty() && m.mentions.is_empty() && m.attachments.is_empty());
        Ok(())
    }

    #[test]
    fn the_text_after_a_mention_of_the_bot_drops_only_that_mention() {
        let me = Mention::new("UBOT").with_name("echo").with_me(true);
        let said = |text: &str, mentions: Vec<Mention>| {
            Message::new("1", Author::new("U1"), text)
                .with_mentions(mentions)
                .text_after_mention()
                .to_owned()
        };
        assert_eq!(said("@echo hello", vec![me.clone()]), "hello");
        assert_eq!(said("  @UBOT   hello", vec![me.clone()]), "hello");
        assert_eq!(said("@echo", vec![me.clone()]), "");
        assert_eq!(said("@echoes hello", vec![me.clone()]), "@echoes hello");
        assert_eq!(
            said("@ann hello", vec![Mention::new("UANN").with_name("ann")]),
            "@ann hello"
        );
        assert_eq!(said("hello @echo", vec![me]), "hello @echo");
    }

    #[test]
    fn a_utf8_body_is_kept_as_a_string_and_other_bytes_survive() -> TestResult {
        let e = sample();
        let json = serde_json::to_string(&e)?;
        assert!(json.contains(r#""raw":"{\"raw\":true}""#), "{json}");
        let mut binary = sample();
        binary.raw = Bytes::from_static(&[0xff, 0x00, 0x80]);
        let back: Event = serde_json::from_slice(&serde_json::to_vec(&binary)?)?;
        assert_eq!(back.raw, binary.raw);
        Ok(())
    }

    #[test]
    fn debug_never_prints_the_raw_body() {
        let mut e = sample();
        e.raw = Bytes::from_static(b"token=XXYYZZ&follow_up=https%3A%2F%2Fhooks.example%2Fsecret");
        let shown = format!("{e:?}");
        assert!(!shown.contains("XXYYZZ"), "{shown}");
        assert!(!shown.contains("hooks.example"), "{shown}");
        assert!(shown.contains("raw: <59 bytes>"), "{shown}");
        assert!(shown.contains("Ev1"), "{shown}");
    }

    #[test]
    fn only_stop_requests_are_control_events() {
        let mut e = sample();
        assert!(!e.is_control());
        e.kind = EventKind::AgentSession(AgentSession {
            session_id: "s".into(),
            action: AgentSessionAction::StopRequested,
            text: None,
            prompt_context: None,
            activity_id: None,
            user: Author::default(),
        });
        assert!(e.is_control());
    }
}
