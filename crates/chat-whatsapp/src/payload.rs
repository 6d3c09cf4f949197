//! The webhook's JSON as the Cloud API sends it
//! ([Webhooks](https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/components)):
//! `object` `whatsapp_business_account`, `entry[]` of one business account,
//! each with `changes[]` whose `value` holds the `messages` and `statuses` of
//! one phone number. Read leniently: what is not needed is left out, what is
//! may be missing without a panic.

use serde::Deserialize;
use serde_json::Value;

/// A delivery.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Notification {
    pub(crate) object: Option<String>,
    pub(crate) entry: Vec<Entry>,
}

/// One business account's changes.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Entry {
    pub(crate) id: Option<String>,
    pub(crate) changes: Vec<Change>,
}

/// One change: `field` `messages` for messages and statuses.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Change {
    pub(crate) field: Option<String>,
    pub(crate) value: ChangeValue,
}

/// What changed, for one phone number.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChangeValue {
    pub(crate) metadata: Metadata,
    pub(crate) contacts: Vec<Contact>,
    pub(crate) messages: Vec<InMessage>,
    pub(crate) statuses: Vec<Value>,
}

/// The business phone number the change is for.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Metadata {
    pub(crate) display_phone_number: Option<String>,
    pub(crate) phone_number_id: Option<String>,
}

/// A user who wrote: their WhatsApp id and profile name.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Contact {
    pub(crate) wa_id: Option<String>,
    pub(crate) profile: Profile,
}

/// A contact's profile.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Profile {
    pub(crate) name: Option<String>,
}

/// An incoming message (`text`, `interactive`, `button`, `reaction`, media,
/// and the rest).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct InMessage {
    pub(crate) from: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) timestamp: Option<String>,
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) text: Option<Text>,
    pub(crate) interactive: Option<Interactive>,
    pub(crate) button: Option<TemplateButton>,
    pub(crate) reaction: Option<InReaction>,
    pub(crate) image: Option<Media>,
    pub(crate) document: Option<Media>,
    pub(crate) audio: Option<Media>,
    pub(crate) video: Option<Media>,
    pub(crate) sticker: Option<Media>,
    pub(crate) context: Option<ContextRef>,
}

/// A text message's body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Text {
    pub(crate) body: Option<String>,
}

/// A reply to an interactive message: a button or a list row.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Interactive {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) button_reply: Option<Choice>,
    pub(crate) list_reply: Option<Choice>,
}

/// The button or row chosen.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Choice {
    pub(crate) id: Option<String>,
    pub(crate) title: Option<String>,
}

/// A template's quick-reply button.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TemplateButton {
    pub(crate) payload: Option<String>,
    pub(crate) text: Option<String>,
}

/// A reaction to a message; an empty emoji takes it back.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct InReaction {
    pub(crate) message_id: Option<String>,
    pub(crate) emoji: Option<String>,
}

/// A media object: an id to download, its type, and a caption or name.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Media {
    pub(crate) id: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) caption: Option<String>,
    pub(crate) filename: Option<String>,
}

/// The message a message replies to.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ContextRef {
    pub(crate) from: Option<String>,
    pub(crate) id: Option<String>,
}
