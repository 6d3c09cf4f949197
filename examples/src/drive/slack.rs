//! The Slack payloads echo-bot is driven with, as Slack sends them.

use chat_testkit::FakeSlack;
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

/// An `event_callback` envelope around `event`.
pub fn callback(event_id: &str, event: Value) -> Value {
    callback_in(TEAM, BOT_USER, event_id, event)
}

/// An `event_callback` envelope around `event` from workspace `team`, whose
/// installation's bot user is `bot_user` (`authorizations[0]`).
pub fn callback_in(team: &str, bot_user: &str, event_id: &str, event: Value) -> Value {
    let mut body = json!({
        "token": "XXYYZZ",
        "team_id": team,
        "api_app_id": "A0ECHO",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1_700_000_000,
        "authorizations": [{
            "enterprise_id": null,
            "team_id": team,
            "user_id": bot_user,
            "is_bot": true,
            "is_enterprise_install": false
        }],
        "is_ext_shared_channel": false,
        "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIiwidGlkIjoiVDAwMDEifQ"
    });
    body["event"] = event;
    body
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
    callback(event_id, event("app_mention", ts, thread_ts, text))
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
    let mut e = event("message", ts, thread_ts, text);
    e["channel_type"] = json!("channel");
    callback(event_id, e)
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
    let fields = [
        ("token", "gIkuvaNzQIHg97ATvDxqgjtO"),
        ("team_id", TEAM),
        ("team_domain", "example"),
        ("channel_id", CHANNEL),
        ("channel_name", "general"),
        ("user_id", USER),
        ("user_name", "ada"),
        ("command", command),
        ("text", text),
        ("api_app_id", "A0ECHO"),
        ("is_enterprise_install", "false"),
        (
            "response_url",
            "https://hooks.slack.com/commands/T0001/1/demo",
        ),
        ("trigger_id", trigger_id),
    ];
    fields
        .iter()
        .map(|(k, v)| format!("{k}={}", form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
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
