//! Routing: which handler an event goes to. Messages are routed as users of
//! the TypeScript SDK expect — own messages are ignored, a DM goes to the
//! direct-message handler when there is one and otherwise counts as a
//! mention, a message in a subscribed thread goes to the subscribed-message
//! handler — and every other event by the [`Route`]s registered with
//! `BotBuilder::on` (the `on_*` methods register portable routes), in
//! registration order, fallbacks last. An event no handler wants is recorded
//! as ignored.

use chat_core::{AgentSessionAction, Event, EventKind, Gate, MessageChange, Route};
use regex::Regex;

use crate::handler::SharedHandler;

/// The registered handlers.
#[derive(Default, Clone)]
pub(crate) struct Handlers {
    pub(crate) mention: Vec<SharedHandler>,
    pub(crate) direct: Vec<SharedHandler>,
    pub(crate) subscribed: Vec<SharedHandler>,
    pub(crate) pattern: Vec<(Regex, SharedHandler)>,
    /// Every other route, in registration order.
    pub(crate) routes: Vec<(Route, SharedHandler)>,
}

/// What the ack path needs to know before touching state.
pub(crate) enum Plan {
    /// No handler could want it: ignored without a state round trip.
    Ignore(&'static str),
    /// A stop request: cancel the running turn.
    Control,
    /// Admit it; `serialized` events go through the concurrency strategy, the
    /// others (reactions, actions, commands, modals) run unlocked. `handler`
    /// is the one chosen now, so the run does not match again (a message's
    /// may still go to the subscribed-message handler, which admission
    /// decides). `inline` routes answer in the delivery's HTTP response.
    Admit {
        gate: Gate,
        serialized: bool,
        inline: bool,
        handler: Option<SharedHandler>,
    },
}

impl Handlers {
    /// The first route that takes `event`: fallbacks after the others.
    fn by_route(&self, event: &Event) -> Option<(&Route, &SharedHandler)> {
        let first = |fallback: bool| {
            self.routes
                .iter()
                .find(|(r, _)| r.is_fallback() == fallback && r.matches(event))
                .map(|(r, h)| (r, h))
        };
        first(false).or_else(|| first(true))
    }

    /// The direct-message handler of a DM, when one is registered: it takes
    /// every direct message, subscribed or not.
    fn direct(&self, m: &chat_core::Message) -> Option<SharedHandler> {
        m.is_dm.then(|| self.direct.first().cloned()).flatten()
    }

    /// The handler of a message that mentions the bot (or is a DM), else the
    /// first whose pattern it matches, in a thread that is not subscribed.
    fn unsubscribed(&self, m: &chat_core::Message) -> Option<SharedHandler> {
        if let Some(h) = self.direct(m) {
            return Some(h);
        }
        if (m.is_mention || m.is_dm)
            && let Some(h) = self.mention.first()
        {
            return Some(h.clone());
        }
        self.pattern
            .iter()
            .find(|(re, _)| re.is_match(&m.text))
            .map(|(_, h)| h.clone())
    }

    /// Decides before admission. `Gate::Subscribed` means only the subscribed
    /// handler could want it, so it is admitted only in a subscribed thread.
    pub(crate) fn plan(&self, event: &Event) -> Plan {
        let routed = |ignored: &'static str| match self.by_route(event) {
            Some((route, handler)) => Plan::Admit {
                gate: Gate::Open,
                serialized: route.is_serialized(),
                inline: route.is_inline(),
                handler: Some(handler.clone()),
            },
            None => Plan::Ignore(ignored),
        };
        match &event.kind {
            EventKind::Message(m) => {
                if m.author.is_me {
                    return Plan::Ignore("own-message");
                }
                if m.change != MessageChange::Posted {
                    return routed("message-changed");
                }
                if let Some(handler) = self.unsubscribed(m) {
                    Plan::Admit {
                        gate: Gate::Open,
                        serialized: true,
                        inline: false,
                        handler: Some(handler),
                    }
                } else if !self.subscribed.is_empty() {
                    Plan::Admit {
                        gate: Gate::Subscribed,
                        serialized: true,
                        inline: false,
                        handler: None,
                    }
                } else {
                    routed("no-handler")
                }
            }
            EventKind::AgentSession(s) if s.action == AgentSessionAction::StopRequested => {
                Plan::Control
            }
            _ => routed("no-handler"),
        }
    }

    /// The handler for an admitted event, given whether its thread was
    /// subscribed at admission (for events handed over by the backend, whose
    /// plan is not kept).
    pub(crate) fn route(&self, event: &Event, subscribed: bool) -> Option<SharedHandler> {
        if let EventKind::Message(m) = &event.kind
            && m.change == MessageChange::Posted
        {
            if let Some(h) = self.direct(m) {
                return Some(h);
            }
            if subscribed && let Some(h) = self.subscribed.first() {
                return Some(h.clone());
            }
            if let Some(h) = self.unsubscribed(m) {
                return Some(h);
            }
        }
        self.by_route(event).map(|(_, h)| h.clone())
    }

    /// The subscribed-message handler, for a message admitted in a
    /// subscribed thread (a DM keeps its direct-message handler).
    pub(crate) fn subscribed_for(&self, event: &Event) -> Option<SharedHandler> {
        match &event.kind {
            EventKind::Message(m) if m.change == MessageChange::Posted => {
                self.direct(m).or_else(|| self.subscribed.first().cloned())
            }
            _ => None,
        }
    }
}
