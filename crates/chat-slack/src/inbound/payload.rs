//! Typed views of Slack's payloads. Every field Slack may omit (or send as
//! `null`) is an `Option` or defaulted, so a payload missing a field is still
//! read, and decisions about what is required are made by the parsers.

use serde::Deserialize;

/// The Events API envelope (`url_verification`, `event_callback`,
/// `app_rate_limited`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Envelope<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) challenge: Option<String>,
    pub(crate) team_id: Option<String>,
    pub(crate) enterprise_id: Option<String>,
    pub(crate) context_team_id: Option<String>,
    pub(crate) context_enterprise_id: Option<String>,
    pub(crate) event_id: Option<String>,
    pub(crate) authorizations: Option<Vec<Authorization>>,
    /// Slack's legacy verification `token`, as the body's own bytes: read
    /// only to know where it is, so the event's kept body leaves it out
    /// without another pass over the body.
    #[serde(borrow)]
    pub(crate) token: Option<&'a serde_json::value::RawValue>,
    /// The inner event, as the body's own bytes (not copied), parsed once,
    /// straight into the struct its `type` calls for.
    #[serde(borrow)]
    pub(crate) event: Option<&'a serde_json::value::RawValue>,
}

/// One entry of `authorizations`: the installation the delivery is for.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Authorization {
    pub(crate) enterprise_id: Option<String>,
    pub(crate) team_id: Option<String>,
    pub(crate) user_id: Option<String>,
    pub(crate) is_bot: Option<bool>,
    pub(crate) is_enterprise_install: Option<bool>,
}

/// The fields every inner event has.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EventHead {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
}

/// `message` (with any subtype) and `app_mention`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MessageEvent {
    /// `message` or `app_mention` (every inner event is read as a message
    /// first: most deliveries are one).
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) subtype: Option<String>,
    pub(crate) channel: Option<String>,
    pub(crate) channel_type: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) bot_id: Option<String>,
    pub(crate) username: Option<String>,
    pub(crate) user_profile: Option<UserProfile>,
    pub(crate) text: Option<String>,
    pub(crate) ts: Option<String>,
    pub(crate) thread_ts: Option<String>,
    /// `message_changed`: the message after the edit.
    pub(crate) message: Option<InnerMessage>,
    /// `message_changed` / `message_deleted`: the message before.
    pub(crate) previous_message: Option<InnerMessage>,
    /// `message_deleted`: the deleted message's `ts`.
    pub(crate) deleted_ts: Option<String>,
    /// Files shared with the message.
    pub(crate) files: Vec<SlackFile>,
}

/// A file object on a message ([the file object]); only what a handler
/// needs to name and download it.
///
/// [the file object]: https://docs.slack.dev/reference/objects/file-object
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SlackFile {
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) mimetype: Option<String>,
    pub(crate) size: Option<u64>,
    pub(crate) url_private: Option<String>,
    pub(crate) url_private_download: Option<String>,
}

impl SlackFile {
    /// The portable attachment, when the file can be downloaded (a file
    /// deleted or hidden by retention has no URL).
    pub(crate) fn attachment(&self) -> Option<chat_core::Attachment> {
        let source = self
            .url_private_download
            .as_deref()
            .or(self.url_private.as_deref())
            .filter(|u| !u.is_empty())?;
        let id = self.id.as_deref().unwrap_or(source);
        let name = self.name.as_deref().or(self.title.as_deref()).unwrap_or(id);
        let mut file = chat_core::Attachment::new(id, name, source);
        if let Some(mime) = self.mimetype.as_deref().filter(|m| !m.is_empty()) {
            file = file.with_mime_type(mime);
        }
        if let Some(size) = self.size {
            file = file.with_size(size);
        }
        Some(file)
    }
}

/// A message nested in `message_changed` / `message_deleted`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct InnerMessage {
    pub(crate) subtype: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) bot_id: Option<String>,
    pub(crate) username: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) ts: Option<String>,
    pub(crate) thread_ts: Option<String>,
    pub(crate) edited: Option<Edited>,
    pub(crate) files: Vec<SlackFile>,
}

/// `message.edited`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Edited {
    pub(crate) ts: Option<String>,
}

/// `user_profile` on user messages.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct UserProfile {
    pub(crate) display_name: Option<String>,
    pub(crate) real_name: Option<String>,
}

/// `reaction_added` / `reaction_removed`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ReactionEvent {
    pub(crate) user: Option<String>,
    pub(crate) reaction: Option<String>,
    pub(crate) item: Option<ReactionItem>,
}

/// What a reaction is on.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ReactionItem {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) channel: Option<String>,
    pub(crate) ts: Option<String>,
}

/// `assistant_thread_started` / `assistant_thread_context_changed`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AssistantThreadEvent {
    pub(crate) assistant_thread: Option<AssistantThread>,
}

/// `assistant_thread`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AssistantThread {
    pub(crate) channel_id: Option<String>,
    pub(crate) thread_ts: Option<String>,
}

/// Channel-level events: `app_home_opened`, `member_joined_channel`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChannelEvent {
    pub(crate) channel: Option<String>,
}

/// A form-encoded delivery: a slash command, the SSL check, or an interactivity
/// `payload`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Form {
    pub(crate) payload: Option<String>,
    pub(crate) ssl_check: Option<String>,
    pub(crate) command: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) team_id: Option<String>,
    pub(crate) enterprise_id: Option<String>,
    pub(crate) is_enterprise_install: Option<String>,
    pub(crate) channel_id: Option<String>,
    pub(crate) user_id: Option<String>,
    pub(crate) user_name: Option<String>,
    pub(crate) response_url: Option<String>,
    pub(crate) trigger_id: Option<String>,
}

/// The JSON of an interactivity `payload`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Interaction {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) team: Option<Team>,
    pub(crate) enterprise: Option<Enterprise>,
    pub(crate) is_enterprise_install: Option<bool>,
    pub(crate) user: Option<User>,
    pub(crate) trigger_id: Option<String>,
    pub(crate) response_url: Option<String>,
    pub(crate) channel: Option<Channel>,
    pub(crate) container: Option<Container>,
    pub(crate) message: Option<InnerMessage>,
    pub(crate) actions: Option<Vec<BlockAction>>,
    pub(crate) view: Option<View>,
    pub(crate) callback_id: Option<String>,
}

/// `team` in an interaction.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Team {
    pub(crate) id: Option<String>,
    pub(crate) enterprise_id: Option<String>,
}

/// `enterprise` in an interaction.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Enterprise {
    pub(crate) id: Option<String>,
}

/// `user` in an interaction.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct User {
    pub(crate) id: Option<String>,
    pub(crate) username: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) team_id: Option<String>,
}

/// `channel` in an interaction.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Channel {
    pub(crate) id: Option<String>,
}

/// `container`: where the clicked component lives.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Container {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) channel_id: Option<String>,
    pub(crate) message_ts: Option<String>,
    pub(crate) thread_ts: Option<String>,
    pub(crate) view_id: Option<String>,
}

/// One entry of `actions`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct BlockAction {
    pub(crate) action_id: Option<String>,
    pub(crate) value: Option<String>,
    pub(crate) selected_option: Option<SelectedOption>,
    pub(crate) selected_user: Option<String>,
    pub(crate) selected_channel: Option<String>,
    pub(crate) selected_conversation: Option<String>,
    pub(crate) selected_date: Option<String>,
    pub(crate) selected_time: Option<String>,
}

/// `selected_option` of a select menu or radio group.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SelectedOption {
    pub(crate) value: Option<String>,
}

/// `view` of a modal or App Home.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct View {
    pub(crate) id: Option<String>,
    pub(crate) root_view_id: Option<String>,
    pub(crate) callback_id: Option<String>,
    pub(crate) private_metadata: Option<String>,
    pub(crate) app_installed_team_id: Option<String>,
    pub(crate) state: Option<ViewState>,
}

/// `view.state`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ViewState {
    pub(crate) values: Option<serde_json::Value>,
}

/// The answer of `auth.test`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AuthTest {
    pub(crate) user_id: Option<String>,
    pub(crate) bot_id: Option<String>,
    pub(crate) team_id: Option<String>,
    pub(crate) enterprise_id: Option<String>,
}
