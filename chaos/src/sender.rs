//! A sender that delivers signed Slack events the way Slack does: it resends on
//! a timeout, a 5xx or a 503, with `X-Slack-Retry-Num`, on a compressed schedule.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ledger::Action;

/// The signing secret every replica is started with.
pub const SECRET: &str = "chaos-signing-secret";
/// The bot's user id.
pub const BOT: &str = "UBOT";

/// One Slack delivery: its event id and JSON body.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `event_id`.
    pub event_id: String,
    /// The body.
    pub body: String,
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
    let body = serde_json::json!({
        "token": "x", "team_id": team, "api_app_id": "A1", "type": "event_callback",
        "event_id": event_id, "event_time": 1_700_000_000u64,
        "authorizations": [{ "team_id": team, "user_id": BOT, "is_bot": true, "is_enterprise_install": false }],
        "event": {
            "type": kind, "user": "U1", "text": format!("<@{BOT}> {text}"), "ts": ts,
            "thread_ts": root, "channel": channel, "channel_type": "channel", "event_ts": ts, "team": team
        }
    });
    Delivery {
        event_id: event_id.to_owned(),
        body: body.to_string(),
    }
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
    /// A 2xx was received.
    pub acked: bool,
    /// A 5xx or a timeout was received at some attempt.
    pub refused: bool,
    /// Statuses, in order (0: timeout or connection error).
    pub statuses: Vec<u16>,
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
    pub async fn attempt(&self, d: &Delivery, pick: usize, retry: usize) -> u16 {
        let Some(base) = self.target(pick) else {
            return 0;
        };
        let ts = now_secs().to_string();
        let sig = chat_slack::signature::sign(SECRET, &ts, d.body.as_bytes());
        let mut req = self
            .client
            .post(format!("{base}/webhooks/slack"))
            .header("content-type", "application/json")
            .header("x-slack-request-timestamp", ts)
            .header("x-slack-signature", sig)
            .body(d.body.clone());
        if retry > 0 {
            req = req
                .header("x-slack-retry-num", retry.to_string())
                .header("x-slack-retry-reason", "http_error");
        }
        match req.send().await {
            Ok(r) => r.status().as_u16(),
            Err(_) => 0,
        }
    }

    /// Delivers until acknowledged, following the schedule; `pick` chooses the
    /// replica of each attempt and spreads each wait over ±50 % of its step, as
    /// many independent senders would.
    pub async fn deliver(&self, d: &Delivery, mut pick: impl FnMut(usize) -> usize) -> Sent {
        let mut sent = Sent::default();
        for retry in 0..=self.schedule.len() {
            if retry > 0 {
                let step = self.schedule[retry - 1];
                let jitter = u32::try_from(pick(retry + 100) % 1000).unwrap_or(0);
                tokio::time::sleep(step / 2 + step * jitter / 1000).await;
            }
            let status = self.attempt(d, pick(retry), retry).await;
            sent.statuses.push(status);
            if (200..300).contains(&status) {
                sent.acked = true;
                return sent;
            }
            sent.refused = true;
        }
        sent
    }
}

/// Folds sends into actions (twins share an action).
pub fn action(event_ids: Vec<String>, sends: &[Sent]) -> Action {
    Action {
        event_ids,
        acked: sends.iter().any(|s| s.acked),
        refused: sends.iter().any(|s| s.refused),
        statuses: sends
            .iter()
            .flat_map(|s| s.statuses.iter().copied())
            .collect(),
    }
}
