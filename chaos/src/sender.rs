//! A sender that delivers signed Slack events the way Slack does: it resends on
//! a timeout, a 5xx or a 503, with `X-Slack-Retry-Num`, on a compressed schedule.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ledger::Action;

/// The signing secret every replica is started with.
pub const SECRET: &str = "chaos-signing-secret";
/// The bot's user id.
pub const BOT: &str = "UBOT";

/// What kind of user action a delivery carries, and so how Slack delivers
/// it: Events API deliveries (mentions, reactions) are retried on a timeout
/// or an error; slash commands and interactions never are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An `app_mention` (or its `message` twin).
    Mention,
    /// A `reaction_added`.
    Reaction,
    /// A slash command (form-encoded).
    SlashCommand,
    /// A click on echo-bot's `echo-again` button (`block_actions`).
    Action,
    /// A submission of echo-bot's form (`view_submission`).
    ViewSubmission,
}

impl Kind {
    /// Every kind, in the order a mixed scenario cycles through them.
    pub const ALL: [Self; 5] = [
        Self::Mention,
        Self::Reaction,
        Self::SlashCommand,
        Self::Action,
        Self::ViewSubmission,
    ];

    /// Whether Slack retries a delivery of this kind that failed.
    pub fn retried(self) -> bool {
        matches!(self, Self::Mention | Self::Reaction)
    }
}

/// One Slack delivery: its event id (the id the runtime records: Slack's
/// `event_id`, or an interaction's `trigger_id`), kind and body.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The id outcomes are recorded under.
    pub event_id: String,
    /// What it carries.
    pub kind: Kind,
    /// The body.
    pub body: String,
    /// What echo-bot answers it with (`echo: m3`, `reaction: m3`, …).
    pub answer: String,
}

impl Delivery {
    fn content_type(&self) -> &'static str {
        match self.kind {
            Kind::Mention | Kind::Reaction => "application/json",
            _ => "application/x-www-form-urlencoded",
        }
    }
}

fn callback(event_id: &str, team: &str, event: &serde_json::Value) -> String {
    serde_json::json!({
        "token": "x", "team_id": team, "api_app_id": "A1", "type": "event_callback",
        "event_id": event_id, "event_time": 1_700_000_000u64,
        "authorizations": [{ "team_id": team, "user_id": BOT, "is_bot": true, "is_enterprise_install": false }],
        "event": event,
    })
    .to_string()
}

/// An `app_mention` (or, with `twin`, the `message` twin of the same post).
pub fn mention(
    event_id: &str,
    team: &str,
    channel: &str,
    root: &str,
    ts: &str,
    text: &str,
    twin: bool,
) -> Delivery {
    let kind = if twin { "message" } else { "app_mention" };
    let event = serde_json::json!({
        "type": kind, "user": "U1", "text": format!("<@{BOT}> {text}"), "ts": ts,
        "thread_ts": root, "channel": channel, "channel_type": "channel", "event_ts": ts, "team": team
    });
    Delivery {
        event_id: event_id.to_owned(),
        kind: Kind::Mention,
        body: callback(event_id, team, &event),
        answer: format!("echo: {text}"),
    }
}

/// A delivery of `kind` in the thread `root` of `channel`: `text` names it
/// (the emoji, the command's text, the button's value, the form's value), so
/// echo-bot's answer tells which action it answers. `hooks` is the base of
/// the `response_url`s (a fake Slack's `/hooks`).
#[allow(clippy::too_many_arguments)]
pub fn of_kind(
    kind: Kind,
    event_id: &str,
    team: &str,
    channel: &str,
    root: &str,
    ts: &str,
    text: &str,
    hooks: &str,
) -> Delivery {
    let interaction = |payload: serde_json::Value| form(&[("payload", &payload.to_string())]);
    let response_url = format!("{hooks}/{event_id}");
    let (body, answer) = match kind {
        Kind::Mention => return mention(event_id, team, channel, root, ts, text, false),
        Kind::Reaction => (
            callback(
                event_id,
                team,
                &serde_json::json!({
                    "type": "reaction_added", "user": "U1", "reaction": text, "item_user": BOT,
                    "item": {"type": "message", "channel": channel, "ts": root}, "event_ts": ts,
                }),
            ),
            format!("reaction: {text}"),
        ),
        Kind::SlashCommand => (
            form(&[
                ("token", "x"),
                ("team_id", team),
                ("channel_id", channel),
                ("user_id", "U1"),
                ("command", "/echo"),
                ("text", text),
                ("api_app_id", "A1"),
                ("response_url", &response_url),
                ("trigger_id", event_id),
            ]),
            format!("echo: {text}"),
        ),
        Kind::Action => (
            interaction(serde_json::json!({
                "type": "block_actions", "api_app_id": "A1", "token": "x",
                "user": {"id": "U1", "team_id": team}, "team": {"id": team},
                "trigger_id": event_id, "response_url": response_url,
                "container": {"type": "message", "message_ts": root, "channel_id": channel, "thread_ts": root},
                "channel": {"id": channel},
                "message": {"type": "message", "ts": root, "user": BOT, "thread_ts": root},
                "actions": [{"type": "button", "action_id": "echo-again", "block_id": "actions", "value": text, "action_ts": ts}],
            })),
            format!("again: {text}"),
        ),
        Kind::ViewSubmission => (
            interaction(serde_json::json!({
                "type": "view_submission", "api_app_id": "A1", "token": "x",
                "user": {"id": "U1", "team_id": team}, "team": {"id": team},
                "trigger_id": event_id,
                "view": {
                    "id": format!("V{event_id}"), "team_id": team, "type": "modal",
                    "callback_id": "echo-form", "private_metadata": channel,
                    "root_view_id": format!("V{event_id}"), "app_installed_team_id": team,
                    "state": {"values": {"form": {"value": {"type": "plain_text_input", "value": text}}}},
                },
            })),
            format!("form: {text}"),
        ),
    };
    Delivery {
        event_id: event_id.to_owned(),
        kind,
        body,
        answer,
    }
}

/// A form-encoded body of `fields`.
fn form(fields: &[(&str, &str)]) -> String {
    reqwest::Url::parse_with_params("http://x/", fields)
        .ok()
        .and_then(|u| u.query().map(str::to_owned))
        .unwrap_or_default()
}

/// Resends a delivery until it is acknowledged or the schedule runs out.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    /// Replica base URLs; a retry may land on any of them.
    pub targets: Arc<Mutex<Vec<String>>>,
    /// Waits between attempts.
    pub schedule: Vec<Duration>,
}

/// What happened to one delivery.
#[derive(Debug, Clone, Default)]
pub struct Sent {
    /// A 2xx was received (for a slash command: one that is not an "at
    /// capacity" or error text).
    pub acked: bool,
    /// A 5xx, a timeout, or a slash command's refusal was received at some
    /// attempt.
    pub refused: bool,
    /// Statuses, in order (0: timeout or connection error).
    pub statuses: Vec<u16>,
    /// Answers carried in the HTTP response itself (a slash command's echo).
    pub inline_answers: Vec<String>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Sender {
    /// A sender to `targets` with Slack's 3 s timeout and a compressed retry
    /// schedule.
    pub fn new(targets: Vec<String>, schedule: Vec<Duration>) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .pool_max_idle_per_host(8)
            .build()
            .unwrap_or_default();
        Self {
            client,
            targets: Arc::new(Mutex::new(targets)),
            schedule,
        }
    }

    fn target(&self, pick: usize) -> Option<String> {
        let t = self.targets.lock().unwrap_or_else(PoisonError::into_inner);
        (!t.is_empty()).then(|| t[pick % t.len()].clone())
    }

    /// One attempt; `retry` is Slack's retry number (0: first delivery).
    /// Returns the status and the body (empty on a timeout).
    pub async fn attempt(&self, d: &Delivery, pick: usize, retry: usize) -> (u16, String) {
        let Some(base) = self.target(pick) else {
            return (0, String::new());
        };
        let ts = now_secs().to_string();
        let sig = chat_slack::signature::sign(SECRET, &ts, d.body.as_bytes());
        let mut req = self
            .client
            .post(format!("{base}/webhooks/slack"))
            .header("content-type", d.content_type())
            .header("x-slack-request-timestamp", ts)
            .header("x-slack-signature", sig)
            .body(d.body.clone());
        if retry > 0 {
            req = req
                .header("x-slack-retry-num", retry.to_string())
                .header("x-slack-retry-reason", "http_error");
        }
        match req.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.text().await.unwrap_or_default())
            }
            Err(_) => (0, String::new()),
        }
    }

    /// Delivers until acknowledged, following the schedule — or once, for a
    /// kind Slack never retries; `pick` chooses the replica of each attempt
    /// and spreads each wait over ±50 % of its step, as many independent
    /// senders would.
    pub async fn deliver(&self, d: &Delivery, mut pick: impl FnMut(usize) -> usize) -> Sent {
        let mut sent = Sent::default();
        let retries = if d.kind.retried() {
            self.schedule.len()
        } else {
            0
        };
        for retry in 0..=retries {
            if retry > 0 {
                let step = self.schedule[retry - 1];
                let jitter = u32::try_from(pick(retry + 100) % 1000).unwrap_or(0);
                tokio::time::sleep(step / 2 + step * jitter / 1000).await;
            }
            let (status, body) = self.attempt(d, pick(retry), retry).await;
            sent.statuses.push(status);
            if (200..300).contains(&status) && !refusal(d.kind, &body) {
                if d.kind == Kind::SlashCommand && body.contains(&d.answer) {
                    sent.inline_answers.push(d.answer.clone());
                }
                sent.acked = true;
                return sent;
            }
            sent.refused = true;
        }
        sent
    }
}

/// Whether a 200 answer refused the delivery: a slash command's "at
/// capacity" or error text (Slack shows errors of slash commands as 200s).
fn refusal(kind: Kind, body: &str) -> bool {
    kind == Kind::SlashCommand && (body.contains("at capacity") || body.contains("went wrong"))
}

/// Folds sends into actions (twins share an action).
pub fn action(event_ids: Vec<String>, kind: Kind, sends: &[Sent]) -> Action {
    Action {
        event_ids,
        acked: sends.iter().any(|s| s.acked),
        refused: sends.iter().any(|s| s.refused),
        retried: kind.retried(),
        serialized: kind == Kind::Mention,
        statuses: sends
            .iter()
            .flat_map(|s| s.statuses.iter().copied())
            .collect(),
    }
}
