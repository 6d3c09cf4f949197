//! [`Route`]: which events a handler takes. The runtime's `BotBuilder::on`
//! registers a handler for a route; a route is a value — the portable ones
//! here, a platform's own in its adapter crate (`chat_slack::routes`,
//! `chat_linear::routes`) — so a new platform's events need no edit of the
//! runtime to be handled.
//!
//! ```
//! use chat_core::{Author, Event, EventKind, OtherEvent, Platform, Reaction, Route, ThreadRef};
//!
//! let thread = ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0");
//! let tada = Event::new("Ev1", "Ev1", thread.clone(),
//!     EventKind::Reaction(Reaction::new("tada", true, Author::new("U1"), "1.0")));
//! let home = Event::new("Ev2", "Ev2", thread,
//!     EventKind::Other(OtherEvent::new("app_home_opened", serde_json::Value::Null)));
//!
//! assert!(Route::reaction(Some("tada")).matches(&tada));
//! assert!(!Route::reaction(Some("eyes")).matches(&tada));
//! assert!(Route::other("app_home_opened").matches(&home));
//! // A route of one's own: any predicate over the event.
//! let from_u1 = Route::new("from-u1", |e: &Event| matches!(&e.kind, EventKind::Reaction(r) if r.user.id == "U1"));
//! assert!(from_u1.matches(&tada) && !from_u1.matches(&home));
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::event::{AgentSessionAction, Event, EventKind, MessageChange};

/// Which events a handler takes: a predicate over the [`Event`], whether
/// they go through the bot's concurrency strategy, and whether the route is
/// a fallback (tried after every other route).
#[derive(Clone)]
pub struct Route {
    name: Cow<'static, str>,
    matches: Arc<dyn Fn(&Event) -> bool + Send + Sync>,
    serialized: bool,
    fallback: bool,
    inline: bool,
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("name", &self.name)
            .field("serialized", &self.serialized)
            .field("fallback", &self.fallback)
            .field("inline", &self.inline)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// The events `matches` accepts, run unlocked: each as soon as it is
    /// admitted, beside whatever runs on its conversation (as clicks and
    /// reactions are). `name` is for logs.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        matches: impl Fn(&Event) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            matches: Arc::new(matches),
            serialized: false,
            fallback: false,
            inline: false,
        }
    }

    /// The same events as turns of their conversation: admitted through the
    /// bot's concurrency strategy (queued, debounced, dropped… while another
    /// runs on the scope), like messages.
    #[must_use]
    pub fn serialized(mut self) -> Self {
        self.serialized = true;
        self
    }

    /// Tried only when no other route takes the event (whatever the order
    /// they were registered in).
    #[must_use]
    pub fn fallback(mut self) -> Self {
        self.fallback = true;
        self
    }

    /// Answered in the delivery's own HTTP response: the handler runs before
    /// the acknowledgement even under deferred dispatch (as slash commands
    /// and modal submissions do), so what it gives `Ctx::reply` is the
    /// platform's answer — a platform request that waits for data, such as
    /// Slack's options load for an external select. Unless the runtime's
    /// `dispatch.inline_interactions` option is off.
    #[must_use]
    pub fn inline(mut self) -> Self {
        self.inline = true;
        self
    }

    /// Whether its handler answers in the delivery's HTTP response.
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// The route's name, for logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the route takes `event`.
    pub fn matches(&self, event: &Event) -> bool {
        (self.matches)(event)
    }

    /// Whether its events go through the concurrency strategy.
    pub fn is_serialized(&self) -> bool {
        self.serialized
    }

    /// Whether it is tried after the others.
    pub fn is_fallback(&self) -> bool {
        self.fallback
    }

    /// A platform-specific event kind ([`EventKind::Other`] named `name`):
    /// what an adapter parses and the portable kinds do not cover. Adapter
    /// crates name theirs (`chat_slack::routes::app_home_opened()`).
    pub fn other(name: &'static str) -> Self {
        Self::new(
            name,
            move |e| matches!(&e.kind, EventKind::Other(o) if o.name == name),
        )
    }

    /// Messages edited (the event's message is the new version), as turns of
    /// their conversation: serialized, so an edit is handled after the turn
    /// its original started.
    pub fn message_edited() -> Self {
        Self::message_changed("message-edited", MessageChange::Edited)
    }

    /// Messages deleted (the event's message has the id, and the author
    /// where the platform says), serialized like edits.
    pub fn message_deleted() -> Self {
        Self::message_changed("message-deleted", MessageChange::Deleted)
    }

    fn message_changed(name: &'static str, change: MessageChange) -> Self {
        Self::new(
            name,
            move |e| matches!(&e.kind, EventKind::Message(m) if m.change == change),
        )
        .serialized()
    }

    /// Reactions added or removed: with `Some(emoji)` (a name without
    /// colons) only that one.
    pub fn reaction(emoji: Option<&str>) -> Self {
        let emoji = emoji.map(str::to_owned);
        Self::new(
            "reaction",
            move |e| matches!(&e.kind, EventKind::Reaction(r) if emoji.as_deref().is_none_or(|x| x == r.emoji)),
        )
    }

    /// Clicks on the component `action_id`.
    pub fn action(action_id: &str) -> Self {
        let id = action_id.to_owned();
        Self::new(
            "action",
            move |e| matches!(&e.kind, EventKind::Action(a) if a.action_id == id),
        )
    }

    /// Clicks on any of the components `action_ids`.
    ///
    /// ```
    /// use chat_core::{Action, Author, Event, EventKind, Platform, Route, ThreadRef};
    ///
    /// let click = |id: &str| Event::new("Ev1", "Ev1", ThreadRef::new(Platform::SLACK, "T1", "C1", "1.0"),
    ///     EventKind::Action(Action::new(id, Author::new("U1"))));
    /// let route = Route::actions(["approve", "reject"]);
    /// assert!(route.matches(&click("approve")) && route.matches(&click("reject")));
    /// assert!(!route.matches(&click("other")));
    /// assert!(Route::any_action().matches(&click("other")));
    /// ```
    pub fn actions<I, S>(action_ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let ids: Vec<String> = action_ids.into_iter().map(Into::into).collect();
        Self::new(
            "actions",
            move |e| matches!(&e.kind, EventKind::Action(a) if ids.contains(&a.action_id)),
        )
    }

    /// Every click no other route takes.
    pub fn any_action() -> Self {
        Self::new("any-action", |e| matches!(e.kind, EventKind::Action(_))).fallback()
    }

    /// The slash command `command` (with its slash).
    pub fn slash_command(command: &str) -> Self {
        let command = command.to_owned();
        Self::new(
            "slash-command",
            move |e| matches!(&e.kind, EventKind::SlashCommand(c) if c.command == command),
        )
        .inline()
    }

    /// Every slash command no other route takes.
    pub fn any_slash_command() -> Self {
        Self::new("any-slash-command", |e| {
            matches!(e.kind, EventKind::SlashCommand(_))
        })
        .fallback()
        .inline()
    }

    /// Modal submissions: with `Some(callback_id)` of that modal only.
    pub fn modal_submit(callback_id: Option<&str>) -> Self {
        let id = callback_id.map(str::to_owned);
        Self::new(
            "modal-submit",
            move |e| matches!(&e.kind, EventKind::ModalSubmit(m) if id.as_deref().is_none_or(|x| x == m.callback_id)),
        )
        .inline()
    }

    /// Modals closed: with `Some(callback_id)` of that modal only.
    pub fn modal_close(callback_id: Option<&str>) -> Self {
        let id = callback_id.map(str::to_owned);
        Self::new(
            "modal-close",
            move |e| matches!(&e.kind, EventKind::ModalClose(m) if id.as_deref().is_none_or(|x| x == m.callback_id)),
        )
        .inline()
    }

    /// Agent-session events of `action` (created, prompted), as turns of
    /// their session: serialized. Stop requests are control events the
    /// runtime handles itself, never routed.
    pub fn agent_session(action: AgentSessionAction) -> Self {
        Self::new(
            "agent-session",
            move |e| matches!(&e.kind, EventKind::AgentSession(s) if s.action == action),
        )
        .serialized()
    }
}
