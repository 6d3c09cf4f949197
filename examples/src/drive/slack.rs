//! The Slack payloads echo-bot is driven with, as Slack sends them.

use chat_testkit::FakeSlack;
use chat_testkit::signed::SlackDeliveries;
use serde_json::{Value, json};

/// The workspace.
pub const TEAM: &str = FakeSlack::TEAM_ID;
/// The channel everything happens in.
pub const CHANNEL: &str = "C0GENERAL";
/// The human talking to the bot.
pub const USER: &str = "U0ADA";
/// The bot's user id (what `auth.test` answers on [`FakeSlack`]); echo-bot is
/// given it as `SLACK_BOT_USER_ID`.
pub const BOT_USER: &str = FakeSlack::BOT_USER_ID;

/// `text` with the bot mentioned first: `<@BOT> text`.
pub fn mentioning(text: &str) -> String {
    format!("<@{BOT_USER}> {text}")
}

/// The signed-delivery builder for echo-bot's workspace: signed with
/// [`SLACK_SIGNING_SECRET`](super::SLACK_SIGNING_SECRET), in [`TEAM`] and
/// [`CHANNEL`], written by [`USER`].
pub fn deliveries() -> SlackDeliveries {
    SlackDeliveries::new(super::SLACK_SIGNING_SECRET)
        .team(TEAM)
        .bot_user(BOT_USER)
        .channel(CHANNEL)
        .user(USER)
}

/// An `event_callback` envelope around `event`.
pub fn callback(event_id: &str, event: Value) -> Value {
    deliveries().callback(event_id, event)
}

/// An `event_callback` envelope around `event` from workspace `team`, whose
/// installation's bot user is `bot_user` (`authorizations[0]`).
pub fn callback_in(team: &str, bot_user: &str, event_id: &str, event: Value) -> Value {
    deliveries()
        .team(team)
        .bot_user(bot_user)
        .callback(event_id, event)
}

fn event(kind: &str, ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
    let mut event = json!({
        "type": kind,
        "user": USER,
        "text": text,
        "ts": ts,
        "channel": CHANNEL,
        "event_ts": ts,
    });
    if let Some(t) = thread_ts {
        event["thread_ts"] = json!(t);
    }
    event
}

/// A post in [`CHANNEL`] mentioning the bot, as `app_mention` (`thread_ts`
/// for a reply in a thread). Pass the text with the mention
/// ([`mentioning`]).
pub fn app_mention(event_id: &str, ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
    deliveries().app_mention_body(event_id, ts, thread_ts, text)
}

/// [`app_mention`] in workspace `team`, where the bot user is `U{team}` (as
/// a `SlackWorkspace` of `FakeSlackOAuth` has it) and mentioned first.
pub fn app_mention_in(team: &str, event_id: &str, ts: &str, text: &str) -> Value {
    let bot_user = format!("U{team}");
    let text = format!("<@{bot_user}> {text}");
    let mut e = event("app_mention", ts, None, &text);
    e["team"] = json!(team);
    callback_in(team, &bot_user, event_id, e)
}

/// The bot token workspace `team` installs echo-bot with, in the demo and
/// the tests.
pub fn workspace_token(team: &str) -> String {
    format!("xoxb-{team}-echo-bot")
}

/// A post in [`CHANNEL`] as a `message` event: a plain message, or the twin
/// of an `app_mention` (another event id, the same `ts`).
pub fn message(event_id: &str, ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
    deliveries().message_body(event_id, ts, thread_ts, text)
}

/// The `url_verification` Slack sends when the request URL is set.
pub fn url_verification(challenge: &str) -> Value {
    json!({
        "token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
        "challenge": challenge,
        "type": "url_verification",
    })
}

/// A slash command's form body: `command` (`/echo`) with `text`, invoked by
/// [`USER`] in [`CHANNEL`]; `trigger_id` identifies the invocation.
pub fn slash_command(command: &str, text: &str, trigger_id: &str) -> String {
    deliveries().slash_command_form(
        command,
        text,
        trigger_id,
        "https://hooks.slack.com/commands/T0001/1/demo",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_commands_are_form_encoded() {
        let form = slash_command("/echo", "what time is it?", "1.2.3");
        assert!(form.contains("&command=%2Fecho&text=what+time+is+it%3F&"));
        assert!(form.ends_with("&trigger_id=1.2.3"));
    }
}
