//! Builders for normalized events, for tests of handlers and backends.

use bytes::Bytes;
use chat_core::{
    Action, AgentSession, AgentSessionAction, Author, DedupeKey, Event, EventId, EventKind,
    Message, MessageChange, Reaction, SlashCommand, ThreadRef,
};

/// Builds an [`Event`] on a thread. Defaults: id `ev`, dedupe key = id, a new
/// message from user `U1` that is not a mention.
#[derive(Debug, Clone)]
pub struct EventBuilder {
    event: Event,
    dedupe_set: bool,
}

impl EventBuilder {
    /// A plain message on `thread`.
    pub fn new(thread: ThreadRef) -> Self {
        Self {
            event: Event {
                id: EventId::new("ev"),
                dedupe_key: DedupeKey::new("ev"),
                thread,
                received_at_ms: 0,
                attempt: 0,
                retry_reason: None,
                kind: EventKind::Message(Message {
                    id: "ev".into(),
                    author: user("U1"),
                    text: String::new(),
                    change: MessageChange::Posted,
                    is_mention: false,
                    is_dm: false,
                }),
                raw: Bytes::new(),
            },
            dedupe_set: false,
        }
    }

    /// Sets the event id (and the dedupe key and message id, unless set).
    #[must_use]
    pub fn id(mut self, id: &str) -> Self {
        self.event.id = EventId::new(id);
        if !self.dedupe_set {
            self.event.dedupe_key = DedupeKey::new(id);
        }
        if let EventKind::Message(m) = &mut self.event.kind {
            m.id = id.to_owned();
        }
        self
    }

    /// Sets the dedupe key.
    #[must_use]
    pub fn dedupe(mut self, key: &str) -> Self {
        self.event.dedupe_key = DedupeKey::new(key);
        self.dedupe_set = true;
        self
    }

    /// Sets the delivery attempt.
    #[must_use]
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.event.attempt = attempt;
        self
    }

    /// A plain message with `text`.
    #[must_use]
    pub fn message(self, text: &str) -> Self {
        self.message_with(text, false, false)
    }

    /// A message that @-mentions the bot.
    #[must_use]
    pub fn mention(self, text: &str) -> Self {
        self.message_with(text, true, false)
    }

    /// A direct message to the bot.
    #[must_use]
    pub fn dm(self, text: &str) -> Self {
        self.message_with(text, false, true)
    }

    fn message_with(mut self, text: &str, is_mention: bool, is_dm: bool) -> Self {
        let id = self.event.id.to_string();
        self.event.kind = EventKind::Message(Message {
            id,
            author: user("U1"),
            text: text.to_owned(),
            change: MessageChange::Posted,
            is_mention,
            is_dm,
        });
        self
    }

    /// Sets the message author.
    #[must_use]
    pub fn author(mut self, author: Author) -> Self {
        match &mut self.event.kind {
            EventKind::Message(m) => m.author = author,
            EventKind::Reaction(r) => r.user = author,
            EventKind::Action(a) => a.user = author,
            EventKind::SlashCommand(c) => c.user = author,
            EventKind::AgentSession(s) => s.user = author,
            _ => {}
        }
        self
    }

    /// A reaction added to message `message_id`.
    #[must_use]
    pub fn reaction(mut self, emoji: &str, message_id: &str) -> Self {
        self.event.kind = EventKind::Reaction(Reaction {
            emoji: emoji.to_owned(),
            added: true,
            user: user("U1"),
            message_id: message_id.to_owned(),
        });
        self
    }

    /// A click on component `action_id`.
    #[must_use]
    pub fn action(mut self, action_id: &str, value: Option<&str>) -> Self {
        self.event.kind = EventKind::Action(Action {
            action_id: action_id.to_owned(),
            value: value.map(str::to_owned),
            user: user("U1"),
            response_url: None,
            trigger_id: None,
        });
        self
    }

    /// A slash command.
    #[must_use]
    pub fn slash_command(mut self, command: &str, text: &str) -> Self {
        self.event.kind = EventKind::SlashCommand(SlashCommand {
            command: command.to_owned(),
            text: text.to_owned(),
            user: user("U1"),
            response_url: None,
            trigger_id: None,
        });
        self
    }

    /// An agent-session event.
    #[must_use]
    pub fn agent_session(mut self, action: AgentSessionAction, text: Option<&str>) -> Self {
        self.event.kind = EventKind::AgentSession(AgentSession {
            session_id: self.event.thread.thread.clone(),
            action,
            text: text.map(str::to_owned),
            prompt_context: None,
            activity_id: None,
            user: user("U1"),
        });
        self
    }

    /// The event.
    pub fn build(self) -> Event {
        self.event
    }
}

/// A human author with id `id`.
pub fn user(id: &str) -> Author {
    Author {
        id: id.to_owned(),
        name: None,
        is_bot: false,
        is_me: false,
    }
}
