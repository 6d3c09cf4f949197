//! Builders for normalized events, for tests of handlers and backends.

use chat_core::{
    Action, AgentSession, AgentSessionAction, Author, DedupeKey, Event, EventId, EventKind,
    Message, Modal, Reaction, SlashCommand, ThreadRef,
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
            event: Event::new(
                "ev",
                "ev",
                thread,
                EventKind::Message(Message::new("ev", user("U1"), "")),
            ),
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
        self.event.kind = EventKind::Message(
            Message::new(id, user("U1"), text)
                .with_mention(is_mention)
                .with_dm(is_dm),
        );
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
        self.event.kind = EventKind::Reaction(Reaction::new(emoji, true, user("U1"), message_id));
        self
    }

    /// A click on component `action_id`.
    #[must_use]
    pub fn action(mut self, action_id: &str, value: Option<&str>) -> Self {
        let mut action = Action::new(action_id, user("U1"));
        action.value = value.map(str::to_owned);
        self.event.kind = EventKind::Action(action);
        self
    }

    /// A slash command.
    #[must_use]
    pub fn slash_command(mut self, command: &str, text: &str) -> Self {
        self.event.kind = EventKind::SlashCommand(SlashCommand::new(command, text, user("U1")));
        self
    }

    /// A modal submission of the view `callback_id`, carrying `metadata`
    /// (Slack `private_metadata`).
    #[must_use]
    pub fn modal_submit(mut self, callback_id: &str, metadata: &str) -> Self {
        let view = format!("V{}", self.event.id);
        let modal = Modal::new(callback_id, view, user("U1")).with_metadata(metadata);
        self.event.kind = EventKind::ModalSubmit(modal);
        self
    }

    /// An agent-session event.
    #[must_use]
    pub fn agent_session(mut self, action: AgentSessionAction, text: Option<&str>) -> Self {
        let mut session = AgentSession::new(self.event.thread.thread.clone(), action, user("U1"));
        session.text = text.map(str::to_owned);
        self.event.kind = EventKind::AgentSession(session);
        self
    }

    /// The event.
    pub fn build(self) -> Event {
        self.event
    }
}

/// A human author with id `id`.
pub fn user(id: &str) -> Author {
    Author::new(id)
}
