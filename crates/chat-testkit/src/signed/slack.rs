//! Slack deliveries, signed as Slack signs them: `X-Slack-Signature: v0=` hex
//! HMAC-SHA256 over `v0:{timestamp}:{body}`, `X-Slack-Request-Timestamp`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{form_encode, hmac_hex, now_ms, post};
use crate::FakeSlack;

/// Builds signed Slack deliveries for one workspace, channel and user.
///
/// Defaults: team [`FakeSlack::TEAM_ID`], bot user
/// [`FakeSlack::BOT_USER_ID`], channel `C0GENERAL`, user `U0ADA`, path
/// `/webhooks/slack`, signed now.
#[derive(Debug, Clone)]
pub struct SlackDeliveries {
    secret: String,
    path: String,
    team: String,
    bot_user: String,
    channel: String,
    user: String,
}

impl SlackDeliveries {
    /// Deliveries signed with `signing_secret`.
    pub fn new(signing_secret: impl Into<String>) -> Self {
        Self {
            secret: signing_secret.into(),
            path: "/webhooks/slack".to_owned(),
            team: FakeSlack::TEAM_ID.to_owned(),
            bot_user: FakeSlack::BOT_USER_ID.to_owned(),
            channel: "C0GENERAL".to_owned(),
            user: "U0ADA".to_owned(),
        }
    }

    /// The request path (default `/webhooks/slack`).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The workspace (`team_id`).
    #[must_use]
    pub fn team(mut self, team: impl Into<String>) -> Self {
        self.team = team.into();
        self
    }

    /// The bot's user id in the workspace (`authorizations[0].user_id`).
    #[must_use]
    pub fn bot_user(mut self, bot_user: impl Into<String>) -> Self {
        self.bot_user = bot_user.into();
        self
    }

    /// The channel events happen in.
    #[must_use]
    pub fn channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    /// The human who writes, clicks and submits.
    #[must_use]
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = user.into();
        self
    }

    /// The channel events happen in.
    pub fn channel_id(&self) -> &str {
        &self.channel
    }

    /// `text` with the bot mentioned first: `<@BOT> text`.
    pub fn mentioning(&self, text: &str) -> String {
        format!("<@{}> {text}", self.bot_user)
    }

    // ------------------------------------------------------------ requests

    /// `body` signed at `timestamp` (Unix seconds) with `content_type`.
    pub fn signed_at(
        &self,
        timestamp: u64,
        content_type: &str,
        body: Vec<u8>,
    ) -> http::Request<Bytes> {
        let ts = timestamp.to_string();
        let signature = format!(
            "v0={}",
            hmac_hex(&self.secret, &[b"v0:", ts.as_bytes(), b":", &body])
        );
        post(
            &self.path,
            &[
                ("content-type", content_type),
                ("x-slack-request-timestamp", &ts),
                ("x-slack-signature", &signature),
            ],
            body,
        )
    }

    /// Any Events API body (JSON), signed now.
    pub fn event(&self, body: &Value) -> http::Request<Bytes> {
        self.signed_at(
            now_ms() / 1000,
            "application/json",
            body.to_string().into_bytes(),
        )
    }

    /// Slack's retry `attempt` of an Events API body, with why it retried
    /// (`http_timeout`, `http_error`, …).
    pub fn retry(&self, body: &Value, attempt: u32, reason: &str) -> http::Request<Bytes> {
        let mut request = self.event(body);
        let headers = request.headers_mut();
        headers.insert("x-slack-retry-num", attempt.into());
        if let Ok(reason) = http::HeaderValue::try_from(reason) {
            headers.insert("x-slack-retry-reason", reason);
        }
        request
    }

    /// A post in the channel mentioning the bot, as `app_mention`
    /// (`thread_ts` for a reply in a thread). Pass the text with its mention
    /// ([`mentioning`](Self::mentioning)).
    pub fn app_mention(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> http::Request<Bytes> {
        self.event(&self.app_mention_body(event_id, ts, thread_ts, text))
    }

    /// A post in the channel as a `message` event: a plain message, or the
    /// twin of an `app_mention` (another event id, the same `ts`).
    pub fn message(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> http::Request<Bytes> {
        self.event(&self.message_body(event_id, ts, thread_ts, text))
    }

    /// A post mentioning the bot with `files` attached (Slack file objects,
    /// as [`FakeSlack::add_file`](crate::FakeSlack::add_file) gives them):
    /// an `app_mention` of subtype `file_share`.
    pub fn app_mention_with_files(
        &self,
        event_id: &str,
        ts: &str,
        text: &str,
        files: &[Value],
    ) -> http::Request<Bytes> {
        let mut event = self.inner_event("app_mention", ts, None, text);
        event["subtype"] = json!("file_share");
        event["files"] = json!(files);
        self.event(&self.callback(event_id, event))
    }

    /// The user edited their message `ts` (in thread `thread_ts`, if any)
    /// from `before` to `after`: a `message_changed` event.
    pub fn message_changed(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: Option<&str>,
        before: &str,
        after: &str,
    ) -> http::Request<Bytes> {
        let edited_ts = format!("{ts}9");
        let mut message = self.inner_event("message", ts, thread_ts, after);
        message["edited"] = json!({ "user": self.user, "ts": edited_ts });
        let previous = self.inner_event("message", ts, thread_ts, before);
        let event = json!({
            "type": "message",
            "subtype": "message_changed",
            "hidden": true,
            "channel": self.channel,
            "channel_type": "channel",
            "ts": edited_ts,
            "event_ts": edited_ts,
            "message": message,
            "previous_message": previous,
        });
        self.event(&self.callback(event_id, event))
    }

    /// The user deleted their message `ts` (in thread `thread_ts`, if any)
    /// whose text was `text`: a `message_deleted` event.
    pub fn message_deleted(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> http::Request<Bytes> {
        let previous = self.inner_event("message", ts, thread_ts, text);
        let event = json!({
            "type": "message",
            "subtype": "message_deleted",
            "hidden": true,
            "channel": self.channel,
            "channel_type": "channel",
            "ts": format!("{ts}8"),
            "deleted_ts": ts,
            "event_ts": format!("{ts}8"),
            "previous_message": previous,
        });
        self.event(&self.callback(event_id, event))
    }

    /// The user opened the AI assistant's panel: `assistant_thread_started`
    /// for the thread `thread_ts` of their DM with the bot, looking at the
    /// delivery's channel.
    pub fn assistant_thread_started(
        &self,
        event_id: &str,
        thread_ts: &str,
    ) -> http::Request<Bytes> {
        self.event(&self.assistant_thread_body(event_id, "assistant_thread_started", thread_ts))
    }

    /// `assistant_thread_context_changed`: the user moved to the delivery's
    /// channel with the panel open.
    pub fn assistant_thread_context_changed(
        &self,
        event_id: &str,
        thread_ts: &str,
    ) -> http::Request<Bytes> {
        self.event(&self.assistant_thread_body(
            event_id,
            "assistant_thread_context_changed",
            thread_ts,
        ))
    }

    /// The body of [`assistant_thread_started`](Self::assistant_thread_started)
    /// (`kind` names the event).
    pub fn assistant_thread_body(&self, event_id: &str, kind: &str, thread_ts: &str) -> Value {
        let event = json!({
            "type": kind,
            "assistant_thread": {
                "user_id": self.user,
                "context": { "channel_id": self.channel, "team_id": self.team, "enterprise_id": null },
                "channel_id": self.dm_channel(),
                "thread_ts": thread_ts,
            },
            "event_ts": format!("{}.000200", now_ms() / 1000),
        });
        self.callback(event_id, event)
    }

    /// A message from the user in an assistant thread `thread_ts`: a
    /// direct message in that thread.
    pub fn assistant_message(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: &str,
        text: &str,
    ) -> http::Request<Bytes> {
        let mut event = self.inner_event("message", ts, Some(thread_ts), text);
        event["channel"] = json!(self.dm_channel());
        event["channel_type"] = json!("im");
        self.event(&self.callback(event_id, event))
    }

    /// The user opened the app's Home tab: `app_home_opened`.
    pub fn app_home_opened(&self, event_id: &str) -> http::Request<Bytes> {
        let event = json!({
            "type": "app_home_opened",
            "user": self.user,
            "channel": self.dm_channel(),
            "tab": "home",
            "event_ts": format!("{}.000300", now_ms() / 1000),
        });
        self.event(&self.callback(event_id, event))
    }

    /// The user joined the delivery's channel: `member_joined_channel`.
    pub fn member_joined_channel(&self, event_id: &str) -> http::Request<Bytes> {
        let event = json!({
            "type": "member_joined_channel",
            "user": self.user,
            "channel": self.channel,
            "channel_type": "C",
            "team": self.team,
            "inviter": self.bot_user,
            "event_ts": format!("{}.000400", now_ms() / 1000),
        });
        self.event(&self.callback(event_id, event))
    }

    /// The user ran the global shortcut `callback_id`: a `shortcut`
    /// interaction.
    pub fn shortcut(&self, callback_id: &str) -> http::Request<Bytes> {
        let payload = json!({
            "type": "shortcut",
            "token": "XXYYZZ",
            "action_ts": format!("{}.000500", now_ms() / 1000),
            "team": {"id": self.team, "domain": "example"},
            "user": self.payload_user(),
            "is_enterprise_install": false,
            "enterprise": null,
            "callback_id": callback_id,
            "trigger_id": format!("{}.{callback_id}.trigger", now_ms()),
        });
        self.interaction(&payload)
    }

    /// The user ran the message shortcut `callback_id` on message
    /// `message_ts` (text `text`) of the channel: a `message_action`.
    pub fn message_shortcut(
        &self,
        callback_id: &str,
        message_ts: &str,
        text: &str,
    ) -> http::Request<Bytes> {
        let payload = json!({
            "type": "message_action",
            "token": "XXYYZZ",
            "action_ts": format!("{}.000600", now_ms() / 1000),
            "team": {"id": self.team, "domain": "example"},
            "user": self.payload_user(),
            "channel": {"id": self.channel, "name": "general"},
            "is_enterprise_install": false,
            "enterprise": null,
            "callback_id": callback_id,
            "trigger_id": format!("{}.{callback_id}.trigger", now_ms()),
            "response_url": format!("https://hooks.slack.com/app/{}/1/test", self.team),
            "message_ts": message_ts,
            "message": {"type": "message", "user": self.user, "ts": message_ts, "text": text},
        });
        self.interaction(&payload)
    }

    /// The user typed `value` into the external select `action_id` of the
    /// bot's message `message_ts`: a `block_suggestion` (options load).
    pub fn block_suggestion(
        &self,
        action_id: &str,
        value: &str,
        message_ts: &str,
    ) -> http::Request<Bytes> {
        let payload = json!({
            "type": "block_suggestion",
            "user": self.payload_user(),
            "container": {
                "type": "message", "message_ts": message_ts,
                "channel_id": self.channel, "is_ephemeral": false,
            },
            "api_app_id": "A0TEST",
            "token": "XXYYZZ",
            "action_id": action_id,
            "block_id": "select",
            "value": value,
            "team": {"id": self.team, "domain": "example"},
            "enterprise": null,
            "is_enterprise_install": false,
            "channel": {"id": self.channel, "name": "general"},
            "message": {"type": "message", "ts": message_ts, "user": self.bot_user, "text": ""},
        });
        self.interaction(&payload)
    }

    /// The user's DM channel with the bot (`D` + the user id).
    pub fn dm_channel(&self) -> String {
        format!("D{}", self.user)
    }

    /// The user added the reaction `emoji` (a name without colons) to the
    /// message `item_ts` of the channel: a `reaction_added` event.
    pub fn reaction_added(
        &self,
        event_id: &str,
        emoji: &str,
        item_ts: &str,
    ) -> http::Request<Bytes> {
        self.event(&self.reaction_added_body(event_id, emoji, item_ts))
    }

    /// The body of [`reaction_added`](Self::reaction_added).
    pub fn reaction_added_body(&self, event_id: &str, emoji: &str, item_ts: &str) -> Value {
        let event = json!({
            "type": "reaction_added",
            "user": self.user,
            "reaction": emoji,
            "item_user": self.bot_user,
            "item": {"type": "message", "channel": self.channel, "ts": item_ts},
            "event_ts": format!("{}.000100", now_ms() / 1000),
        });
        self.callback(event_id, event)
    }

    /// A direct message to the bot (`channel_type: im`, in a `D…` channel).
    pub fn direct_message(&self, event_id: &str, ts: &str, text: &str) -> http::Request<Bytes> {
        let mut event = self.inner_event("message", ts, None, text);
        event["channel"] = json!(self.dm_channel());
        event["channel_type"] = json!("im");
        self.event(&self.callback(event_id, event))
    }

    /// `command` (with its slash) followed by `text`, invoked by the user in
    /// the channel; answerable later through Slack's default `response_url`.
    pub fn slash_command(&self, command: &str, text: &str) -> http::Request<Bytes> {
        let trigger = format!("{}.{}.trigger", now_ms(), text.len());
        self.slash_command_with(
            command,
            text,
            &trigger,
            &format!("https://hooks.slack.com/commands/{}/1/test", self.team),
        )
    }

    /// A slash command with its `trigger_id` (its identity) and its
    /// `response_url` (where later answers go: a fake's
    /// [`FakeSlack::response_url`] in tests).
    pub fn slash_command_with(
        &self,
        command: &str,
        text: &str,
        trigger_id: &str,
        response_url: &str,
    ) -> http::Request<Bytes> {
        let form = self.slash_command_form(command, text, trigger_id, response_url);
        self.form(form)
    }

    /// The form body of [`slash_command_with`](Self::slash_command_with).
    pub fn slash_command_form(
        &self,
        command: &str,
        text: &str,
        trigger_id: &str,
        response_url: &str,
    ) -> String {
        let fields = [
            ("token", "gIkuvaNzQIHg97ATvDxqgjtO"),
            ("team_id", self.team.as_str()),
            ("team_domain", "example"),
            ("channel_id", self.channel.as_str()),
            ("channel_name", "general"),
            ("user_id", self.user.as_str()),
            ("user_name", "ada"),
            ("command", command),
            ("text", text),
            ("api_app_id", "A0TEST"),
            ("is_enterprise_install", "false"),
            ("response_url", response_url),
            ("trigger_id", trigger_id),
        ];
        fields
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// A click on the button `action_id` (with `value`) in the bot's message
    /// `message_ts` of the channel (in the thread `thread_ts`, if any).
    pub fn block_actions(
        &self,
        action_id: &str,
        value: &str,
        message_ts: &str,
        thread_ts: Option<&str>,
    ) -> http::Request<Bytes> {
        let mut container = json!({
            "type": "message",
            "message_ts": message_ts,
            "channel_id": self.channel,
            "is_ephemeral": false,
        });
        let mut message =
            json!({"type": "message", "ts": message_ts, "user": self.bot_user, "text": ""});
        if let Some(t) = thread_ts {
            container["thread_ts"] = json!(t);
            message["thread_ts"] = json!(t);
        }
        let payload = json!({
            "type": "block_actions",
            "user": self.payload_user(),
            "api_app_id": "A0TEST",
            "token": "XXYYZZ",
            "container": container,
            "trigger_id": format!("{}.{action_id}.trigger", now_ms()),
            "team": {"id": self.team, "domain": "example"},
            "enterprise": null,
            "is_enterprise_install": false,
            "channel": {"id": self.channel, "name": "general"},
            "message": message,
            "response_url": format!("https://hooks.slack.com/actions/{}/1/test", self.team),
            "actions": [{
                "type": "button",
                "action_id": action_id,
                "block_id": "actions",
                "text": {"type": "plain_text", "text": action_id},
                "value": value,
                "action_ts": format!("{}.000000", now_ms() / 1000),
            }],
        });
        self.interaction(&payload)
    }

    /// The submission of the modal `view_id` whose `callback_id` is given,
    /// with its state `values` (`{block_id: {action_id: {type, value}}}`).
    pub fn view_submission(
        &self,
        callback_id: &str,
        view_id: &str,
        values: &Value,
    ) -> http::Request<Bytes> {
        self.view_submission_with_metadata(callback_id, view_id, values, "")
    }

    /// [`view_submission`](Self::view_submission) of a view opened with
    /// `private_metadata`, which Slack sends back with the submission.
    pub fn view_submission_with_metadata(
        &self,
        callback_id: &str,
        view_id: &str,
        values: &Value,
        private_metadata: &str,
    ) -> http::Request<Bytes> {
        let payload = json!({
            "type": "view_submission",
            "team": {"id": self.team, "domain": "example"},
            "user": self.payload_user(),
            "api_app_id": "A0TEST",
            "token": "XXYYZZ",
            "trigger_id": format!("{}.{view_id}.trigger", now_ms()),
            "view": {
                "id": view_id,
                "team_id": self.team,
                "type": "modal",
                "callback_id": callback_id,
                "private_metadata": private_metadata,
                "hash": "156772938.1827394",
                "root_view_id": view_id,
                "app_installed_team_id": self.team,
                "state": {"values": values},
            },
            "response_urls": [],
            "is_enterprise_install": false,
            "enterprise": null,
        });
        self.interaction(&payload)
    }

    /// Any interactivity payload, form-encoded as `payload=…` and signed now.
    pub fn interaction(&self, payload: &Value) -> http::Request<Bytes> {
        self.form(format!("payload={}", form_encode(&payload.to_string())))
    }

    /// A form body (a slash command's), signed now.
    pub fn form(&self, form: String) -> http::Request<Bytes> {
        self.signed_at(
            now_ms() / 1000,
            "application/x-www-form-urlencoded",
            form.into_bytes(),
        )
    }

    // ------------------------------------------------------------ bodies

    /// An `event_callback` envelope around `event`.
    pub fn callback(&self, event_id: &str, event: Value) -> Value {
        let mut body = json!({
            "token": "XXYYZZ",
            "team_id": self.team,
            "api_app_id": "A0TEST",
            "type": "event_callback",
            "event_id": event_id,
            "event_time": now_ms() / 1000,
            "authorizations": [{
                "enterprise_id": null,
                "team_id": self.team,
                "user_id": self.bot_user,
                "is_bot": true,
                "is_enterprise_install": false
            }],
            "is_ext_shared_channel": false,
            "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIiwidGlkIjoiVDAwMDEifQ"
        });
        body["event"] = event;
        body
    }

    /// The body of [`app_mention`](Self::app_mention).
    pub fn app_mention_body(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> Value {
        self.callback(
            event_id,
            self.inner_event("app_mention", ts, thread_ts, text),
        )
    }

    /// The body of [`message`](Self::message).
    pub fn message_body(
        &self,
        event_id: &str,
        ts: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> Value {
        let mut event = self.inner_event("message", ts, thread_ts, text);
        event["channel_type"] = json!("channel");
        self.callback(event_id, event)
    }

    fn inner_event(&self, kind: &str, ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
        let mut event = json!({
            "type": kind,
            "user": self.user,
            "text": text,
            "ts": ts,
            "channel": self.channel,
            "event_ts": ts,
        });
        if let Some(t) = thread_ts {
            event["thread_ts"] = json!(t);
        }
        event
    }

    fn payload_user(&self) -> Value {
        json!({"id": self.user, "username": "ada", "name": "ada", "team_id": self.team})
    }
}
