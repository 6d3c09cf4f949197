//! Driving echo-bot from outside, as Slack and Linear do: the built binary as
//! a child process on a free port ([`EchoBot`]), signed webhook deliveries
//! ([`Delivery`]), the payloads Slack and Linear send ([`slack`], [`linear`]),
//! and the outcome ledger echo-bot writes ([`ledger`](crate::ledger)).
//!
//! `cargo xtask demo` and the tests that run the echo-bot binary are built on
//! these pieces.
//!
//! ```no_run
//! use std::time::Duration;
//! use chat_testkit::FakeSlack;
//! use examples::drive::{Delivery, EchoBotCommand, slack};
//!
//! # async fn f() -> Result<(), chat_runtime::BoxError> {
//! let fake = FakeSlack::start().await;
//! let mut bot = EchoBotCommand::new("target/debug/echo-bot")
//!     .slack(fake.base_url())
//!     .spawn()
//!     .await?;
//! let mention = slack::app_mention("Ev01", "1700000000.000100", None, "hello");
//! assert_eq!(bot.deliver(&Delivery::slack_event(&mention)).await?.status, 200);
//! let posts = fake.wait_for_calls("chat.postMessage", 1, Duration::from_secs(10)).await;
//! assert_eq!(posts[0].body["text"], "echo: hello");
//! bot.terminate(Duration::from_secs(5)).await?;
//! # Ok(()) }
//! ```

pub mod linear;
pub mod oauth;
mod process;
pub mod slack;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chat_testkit::signed::{
    GitHubDeliveries, LinearDeliveries, SlackDeliveries, TelegramDeliveries, WhatsAppDeliveries,
};
use serde_json::Value;

pub use process::{Answer, EchoBot, EchoBotCommand, Stopped};

/// The Slack signing secret echo-bot is given by [`EchoBotCommand::slack`].
pub const SLACK_SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
/// The Slack bot token echo-bot is given by [`EchoBotCommand::slack`].
pub const SLACK_BOT_TOKEN: &str = "xoxb-echo-bot-demo";
/// The keys echo-bot encrypts installations with in installation mode
/// ([`EchoBotCommand::slack_installations`]): one key, `demo-1`.
pub const INSTALLATION_KEYS: &str =
    "demo-1:5e1f0c2a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
/// The key that signs the install flow's `state` in installation mode.
pub const SLACK_STATE_SECRET: &str = "echo-bot-demo-state-secret-32-by";
/// The Linear webhook secret echo-bot is given by [`EchoBotCommand::linear`].
pub const LINEAR_WEBHOOK_SECRET: &str = "lin_wh_echo_bot_demo";
/// The Linear OAuth token echo-bot is given by [`EchoBotCommand::linear`].
pub const LINEAR_ACCESS_TOKEN: &str = "lin_oauth_echo_bot_demo";

/// The Telegram bot token echo-bot is given by [`EchoBotCommand::telegram`]
/// (bot id `777000`).
pub const TELEGRAM_BOT_TOKEN: &str = "777000:AAEchoBotDemoToken";
/// The secret token echo-bot's Telegram webhook is set with.
pub const TELEGRAM_SECRET_TOKEN: &str = "echo-bot-demo-secret_token";
/// The Meta app secret echo-bot is given by [`EchoBotCommand::whatsapp`].
pub const WHATSAPP_APP_SECRET: &str = "echo-bot-demo-app-secret";
/// The verify token of echo-bot's WhatsApp webhook.
pub const WHATSAPP_VERIFY_TOKEN: &str = "echo-bot-demo-verify";
/// The WhatsApp access token echo-bot is given.
pub const WHATSAPP_ACCESS_TOKEN: &str = "EAAG-echo-bot-demo";
/// The business phone number id echo-bot sends from (the testkit's default).
pub const WHATSAPP_PHONE_NUMBER_ID: &str = "106540352242922";

/// The GitHub webhook secret echo-bot is given by [`EchoBotCommand::github`].
pub const GITHUB_WEBHOOK_SECRET: &str = "echo-bot-demo-github-secret";
/// The personal token echo-bot's GitHub adapter calls with.
pub const GITHUB_TOKEN: &str = "github_pat_echo_bot_demo";
/// The login echo-bot is mentioned as on GitHub.
pub const GITHUB_LOGIN: &str = "echo-bot";

/// A GitHub `issue_comment` delivery: comment `comment_id` by `login` on
/// octo/hello#42 saying `body`, with delivery id `delivery`, signed with
/// `secret` (echo-bot's is [`GITHUB_WEBHOOK_SECRET`]).
pub fn github_comment(
    delivery: &str,
    comment_id: u64,
    login: &str,
    body: &str,
    secret: &str,
) -> Delivery {
    GitHubDeliveries::new(secret)
        .author(login)
        .issue_comment(delivery, 42, comment_id, body)
        .into()
}

/// Telegram deliveries with [`TELEGRAM_SECRET_TOKEN`] (a group chat by
/// default; `.private()` for the user's private chat).
pub fn telegram() -> TelegramDeliveries {
    TelegramDeliveries::new(TELEGRAM_SECRET_TOKEN)
}

/// WhatsApp deliveries signed with [`WHATSAPP_APP_SECRET`] to
/// [`WHATSAPP_PHONE_NUMBER_ID`].
pub fn whatsapp() -> WhatsAppDeliveries {
    WhatsAppDeliveries::new(WHATSAPP_APP_SECRET).phone_number_id(WHATSAPP_PHONE_NUMBER_ID)
}

/// One HTTP delivery to echo-bot: a path, headers and the exact body bytes
/// they were signed over.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `/webhooks/slack`, `/webhooks/linear`.
    pub path: String,
    /// The headers, signature included.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Delivery {
    /// A POST of `body` to `path` with `content_type` and no signature.
    pub fn unsigned(path: &str, content_type: &str, body: Vec<u8>) -> Self {
        Self {
            path: path.to_owned(),
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body,
        }
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// A Slack delivery signed with `secret` at `timestamp` (Unix seconds),
    /// per Slack's rules (`chat_testkit::signed::SlackDeliveries`).
    pub fn slack_signed(secret: &str, timestamp: u64, content_type: &str, body: Vec<u8>) -> Self {
        SlackDeliveries::new(secret)
            .signed_at(timestamp, content_type, body)
            .into()
    }

    /// An Events API delivery (JSON), signed now with [`SLACK_SIGNING_SECRET`].
    pub fn slack_event(body: &Value) -> Self {
        slack::deliveries().event(body).into()
    }

    /// Slack's retry of an Events API delivery: the same body with
    /// `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`, signed now.
    pub fn slack_retry(body: &Value, attempt: u32, reason: &str) -> Self {
        slack::deliveries().retry(body, attempt, reason).into()
    }

    /// A slash command (form body, see [`slack::slash_command`]), signed now
    /// with [`SLACK_SIGNING_SECRET`].
    pub fn slack_command(form: &str) -> Self {
        slack::deliveries().form(form.to_owned()).into()
    }

    /// A Linear webhook signed with `secret`
    /// (`chat_testkit::signed::LinearDeliveries`); `delivery` goes in
    /// `Linear-Delivery`.
    pub fn linear_signed(secret: &str, body: &Value, delivery: &str) -> Self {
        LinearDeliveries::new(secret).signed(body, delivery).into()
    }

    /// A Linear webhook signed with [`LINEAR_WEBHOOK_SECRET`].
    pub fn linear(body: &Value, delivery: &str) -> Self {
        Self::linear_signed(LINEAR_WEBHOOK_SECRET, body, delivery)
    }
}

impl From<http::Request<bytes::Bytes>> for Delivery {
    /// A request as the signed builders of `chat_testkit::signed` make it.
    fn from(request: http::Request<bytes::Bytes>) -> Self {
        let (parts, body) = request.into_parts();
        Self {
            path: parts.uri.path().to_owned(),
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        v.to_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect(),
            body: body.to_vec(),
        }
    }
}

/// Now, in Unix seconds.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Polls `check` every 20 ms until it answers `Some`, or `timeout` passed.
pub async fn poll<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return Some(found);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
