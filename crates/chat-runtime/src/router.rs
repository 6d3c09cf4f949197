//! Routing: which handler an event goes to, decided as users of the TypeScript
//! SDK expect. Own messages are ignored; a DM counts as a mention; a message in a
//! subscribed thread goes to the subscribed-message handler; an event no handler
//! wants is recorded as ignored.

use chat_core::{AgentSessionAction, Event, EventKind, Gate, MessageChange};
use regex::Regex;

use crate::handler::SharedHandler;

/// The registered handlers.
#[derive(Default, Clone)]
pub(crate) struct Handlers {
    pub(crate) mention: Vec<SharedHandler>,
    pub(crate) subscribed: Vec<SharedHandler>,
    pub(crate) pattern: Vec<(Regex, SharedHandler)>,
    pub(crate) reaction: Vec<(Option<String>, SharedHandler)>,
    pub(crate) action: Vec<(String, SharedHandler)>,
    pub(crate) slash_command: Vec<(String, SharedHandler)>,
    /// For slash commands no entry of `slash_command` names.
    pub(crate) any_slash_command: Option<SharedHandler>,
    pub(crate) modal_submit: Vec<(Option<String>, SharedHandler)>,
    pub(crate) modal_close: Vec<(Option<String>, SharedHandler)>,
    pub(crate) agent_created: Vec<SharedHandler>,
    pub(crate) agent_prompted: Vec<SharedHandler>,
}

/// What the ack path needs to know before touching state.
pub(crate) enum Plan {
    /// No handler could want it: ignored without a state round trip.
    Ignore(&'static str),
    /// A stop request: cancel the running turn.
    Control,
    /// Admit it; `serialized` events go through the concurrency strategy, the
    /// others (reactions, actions, commands, modals) run unlocked.
    Admit { gate: Gate, serialized: bool },
}

impl Handlers {
    /// Decides before admission. `Gate::Subscribed` means only the subscribed
    /// handler could want it, so it is admitted only in a subscribed thread.
    pub(crate) fn plan(&self, event: &Event) -> Plan {
        match &event.kind {
            EventKind::Message(m) => {
                if m.author.is_me {
                    return Plan::Ignore("own-message");
                }
                if m.change != MessageChange::Posted {
                    return Plan::Ignore("message-changed");
                }
                let direct = (m.is_mention || m.is_dm) && !self.mention.is_empty();
                let matched = self.pattern.iter().any(|(re, _)| re.is_match(&m.text));
                if direct || matched {
                    Plan::Admit {
                        gate: Gate::Open,
                        serialized: true,
                    }
                } else if !self.subscribed.is_empty() {
                    Plan::Admit {
                        gate: Gate::Subscribed,
                        serialized: true,
                    }
                } else {
                    Plan::Ignore("no-handler")
                }
            }
            EventKind::AgentSession(s) => match s.action {
                AgentSessionAction::StopRequested => Plan::Control,
                AgentSessionAction::Created if !self.agent_created.is_empty() => Plan::Admit {
                    gate: Gate::Open,
                    serialized: true,
                },
                AgentSessionAction::Prompted if !self.agent_prompted.is_empty() => Plan::Admit {
                    gate: Gate::Open,
                    serialized: true,
                },
                _ => Plan::Ignore("no-handler"),
            },
            _ if self.unlocked(event).is_some() => Plan::Admit {
                gate: Gate::Open,
                serialized: false,
            },
            _ => Plan::Ignore("no-handler"),
        }
    }

    fn unlocked(&self, event: &Event) -> Option<SharedHandler> {
        fn by_name(list: &[(String, SharedHandler)], name: &str) -> Option<SharedHandler> {
            list.iter().find(|(n, _)| n == name).map(|(_, h)| h.clone())
        }
        fn by_filter(
            list: &[(Option<String>, SharedHandler)],
            name: &str,
        ) -> Option<SharedHandler> {
            list.iter()
                .find(|(f, _)| f.as_deref().is_none_or(|f| f == name))
                .map(|(_, h)| h.clone())
        }
        match &event.kind {
            EventKind::Reaction(r) => by_filter(&self.reaction, &r.emoji),
            EventKind::Action(a) => by_name(&self.action, &a.action_id),
            EventKind::SlashCommand(c) => {
                by_name(&self.slash_command, &c.command).or_else(|| self.any_slash_command.clone())
            }
            EventKind::ModalSubmit(m) => by_filter(&self.modal_submit, &m.callback_id),
            EventKind::ModalClose(m) => by_filter(&self.modal_close, &m.callback_id),
            _ => None,
        }
    }

    /// The handler for an admitted event, given whether its thread was subscribed
    /// at admission.
    pub(crate) fn route(&self, event: &Event, subscribed: bool) -> Option<SharedHandler> {
        match &event.kind {
            EventKind::Message(m) => {
                if subscribed && let Some(h) = self.subscribed.first() {
                    return Some(h.clone());
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
            EventKind::AgentSession(s) => match s.action {
                AgentSessionAction::Created => self.agent_created.first().cloned(),
                AgentSessionAction::Prompted => self.agent_prompted.first().cloned(),
                _ => None,
            },
            _ => self.unlocked(event),
        }
    }
}
