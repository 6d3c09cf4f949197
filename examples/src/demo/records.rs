//! What happened: the ledger's outcomes and the fakes' calls since a mark, and
//! how a call reads in one line.

use serde_json::Value;

use chat_testkit::{GitHubCall, LinearCall, SlackCall, TelegramCall, WhatsAppCall};

use super::Demo;
use crate::drive;
use crate::ledger::{self, LedgerLine};

/// How many records of each source were there at one point.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Mark {
    pub(super) ledger: usize,
    pub(super) slack: usize,
    pub(super) linear: usize,
    pub(super) telegram: usize,
    pub(super) whatsapp: usize,
    pub(super) github: usize,
}

/// The records since a mark.
pub(super) struct View {
    pub(super) ledger: Vec<LedgerLine>,
    pub(super) slack: Vec<SlackCall>,
    pub(super) linear: Vec<LinearCall>,
    pub(super) telegram: Vec<TelegramCall>,
    pub(super) whatsapp: Vec<WhatsAppCall>,
    pub(super) github: Vec<GitHubCall>,
}

impl View {
    /// The outcomes of one event, in order.
    pub(super) fn outcomes(&self, event_id: &str) -> Vec<&str> {
        self.ledger
            .iter()
            .filter(|l| l.event_id == event_id)
            .map(|l| l.outcome.as_str())
            .collect()
    }

    /// The texts sent into Telegram chats.
    pub(super) fn telegram_texts(&self) -> Vec<&str> {
        self.telegram
            .iter()
            .filter(|c| c.method == "sendMessage" && c.ok)
            .map(|c| c.body["text"].as_str().unwrap_or_default())
            .collect()
    }

    /// The texts sent into WhatsApp chats.
    pub(super) fn whatsapp_texts(&self) -> Vec<&str> {
        self.whatsapp
            .iter()
            .filter(|c| c.endpoint == "messages" && c.status.is_success())
            .filter_map(|c| c.body.pointer("/text/body").and_then(Value::as_str))
            .collect()
    }

    /// The comments created on GitHub, without their hidden reply keys.
    pub(super) fn github_comments(&self) -> Vec<&str> {
        self.github
            .iter()
            .filter(|c| c.endpoint == "create_comment" && c.status.is_success())
            .map(|c| shown_comment(c.body["body"].as_str().unwrap_or_default()))
            .collect()
    }

    /// The texts posted to Slack.
    pub(super) fn posts(&self) -> Vec<&str> {
        self.slack
            .iter()
            .filter(|c| c.method == "chat.postMessage")
            .map(|c| c.body["text"].as_str().unwrap_or_default())
            .collect()
    }
}

impl Demo<'_> {
    pub(super) fn mark(&self) -> Mark {
        Mark {
            ledger: ledger::read(&self.ledger).len(),
            slack: self.slack.calls().len(),
            linear: self.linear.calls().len(),
            telegram: self.telegram.calls().len(),
            whatsapp: self.whatsapp.calls().len(),
            github: self.github.calls().len(),
        }
    }

    pub(super) fn view(&self, since: Mark) -> View {
        let mut ledger = ledger::read(&self.ledger);
        let mut slack = self.slack.calls();
        let mut linear = self.linear.calls();
        let mut telegram = self.telegram.calls();
        let mut whatsapp = self.whatsapp.calls();
        let mut github = self.github.calls();
        ledger.drain(..since.ledger.min(ledger.len()));
        slack.drain(..since.slack.min(slack.len()));
        linear.drain(..since.linear.min(linear.len()));
        telegram.drain(..since.telegram.min(telegram.len()));
        whatsapp.drain(..since.whatsapp.min(whatsapp.len()));
        github.drain(..since.github.min(github.len()));
        View {
            ledger,
            slack,
            linear,
            telegram,
            whatsapp,
            github,
        }
    }

    /// Waits (bounded by the patience) until `done` holds for what happened
    /// since `mark`; returns that either way, for the checks to judge.
    pub(super) async fn settle(&self, mark: Mark, done: impl Fn(&View) -> bool) -> View {
        drive::poll(self.patience, || {
            let view = self.view(mark);
            done(&view).then_some(())
        })
        .await;
        self.view(mark)
    }
}

/// The successful activities among `calls`.
pub(super) fn activities(calls: &[LinearCall]) -> Vec<&LinearCall> {
    calls
        .iter()
        .filter(|c| c.operation == "AgentActivityCreate" && c.ok)
        .collect()
}

/// Each call's method and, for posts, its channel, thread and text.
pub(super) fn methods(calls: &[SlackCall]) -> Vec<String> {
    calls
        .iter()
        .map(|c| format!("{} {}", c.method, slack_detail(c)))
        .collect()
}

pub(super) fn slack_detail(call: &SlackCall) -> String {
    let mut detail = match call.method.as_str() {
        "chat.postMessage" if call.body.get("blocks").is_some() => {
            let kinds: Vec<&str> = call.body["blocks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["type"].as_str())
                .collect();
            format!("a card: blocks [{}]", kinds.join(", "))
        }
        "chat.postMessage" => {
            let body = &call.body;
            let thread = match body["thread_ts"].as_str() {
                Some(ts) => format!(" thread {ts}"),
                None => String::new(),
            };
            format!(
                "#{}{thread} {:?}",
                body["channel"].as_str().unwrap_or_default(),
                body["text"].as_str().unwrap_or_default()
            )
        }
        "chat.startStream" | "chat.appendStream" => {
            format!(
                "{:?}",
                call.body["markdown_text"].as_str().unwrap_or_default()
            )
        }
        "chat.stopStream" => "(the streamed message is complete)".to_owned(),
        "conversations.replies" => format!(
            "thread {} (limit {})",
            call.body["ts"].as_str().unwrap_or_default(),
            call.body["limit"].as_str().unwrap_or_default()
        ),
        "users.info" => format!("user {}", call.body["user"].as_str().unwrap_or_default()),
        "auth.test" => "(the adapter completes the bot's identity)".to_owned(),
        _ => match &call.body {
            Value::Object(m) if !m.is_empty() => call.body.to_string(),
            _ => String::new(),
        },
    };
    if !call.ok {
        detail.push_str(&format!(" (answered {})", call.status));
    }
    detail
}

pub(super) fn linear_detail(call: &LinearCall) -> String {
    let mut detail = match call.operation.as_str() {
        "AgentActivityCreate" => {
            let ephemeral = if call.input()["ephemeral"] == Value::Bool(true) {
                " (ephemeral)"
            } else {
                ""
            };
            format!(
                "{}{ephemeral} {:?}",
                call.activity_type().unwrap_or_default(),
                call.activity_body().unwrap_or_default()
            )
        }
        _ => call.variables.to_string(),
    };
    if !call.ok {
        detail.push_str(&format!(" (answered {})", call.status));
    }
    detail
}

pub(super) fn telegram_detail(call: &TelegramCall) -> String {
    let body = &call.body;
    let mut detail = match call.method.as_str() {
        "sendMessage" | "sendMessageDraft" | "editMessageText" => format!(
            "chat {} {:?}",
            body["chat_id"],
            body["text"].as_str().unwrap_or_default()
        ),
        "getMe" => "(the adapter learns the bot's username)".to_owned(),
        _ => body.to_string(),
    };
    if !call.ok {
        detail.push_str(&format!(" (answered {})", call.status));
    }
    detail
}

pub(super) fn whatsapp_detail(call: &WhatsAppCall) -> String {
    let body = &call.body;
    let mut detail = match body["type"].as_str() {
        Some("text") => format!(
            "to {} {:?}",
            body["to"].as_str().unwrap_or_default(),
            body.pointer("/text/body")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        Some(kind) => format!(
            "to {} a {kind} message",
            body["to"].as_str().unwrap_or_default()
        ),
        None if body["status"] == "read" => format!(
            "marks {} read{}",
            body["message_id"].as_str().unwrap_or_default(),
            if body.get("typing_indicator").is_some() {
                ", typing"
            } else {
                ""
            }
        ),
        None => body.to_string(),
    };
    if !call.status.is_success() {
        detail.push_str(&format!(" (answered {})", call.status));
    }
    detail
}

/// A comment as GitHub shows it: without the reply key hidden in it.
fn shown_comment(body: &str) -> &str {
    body.split("\n\n<!-- chat-rs reply").next().unwrap_or(body)
}

pub(super) fn github_detail(call: &GitHubCall) -> String {
    let mut detail = match call.endpoint.as_str() {
        "create_comment" => format!(
            "{} {:?}",
            call.path.trim_start_matches("/repos/"),
            shown_comment(call.body["body"].as_str().unwrap_or_default())
        ),
        "react" | "delete_reaction" | "list_reactions" => {
            format!(
                "{} {}",
                call.path.trim_start_matches("/repos/"),
                call.body["content"]
            )
        }
        _ => call.path.clone(),
    };
    if !call.status.is_success() {
        detail.push_str(&format!(" (answered {})", call.status));
    }
    detail
}
