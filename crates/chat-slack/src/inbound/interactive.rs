//! Interactivity payloads: `block_actions`, `view_submission`, `view_closed`,
//! `shortcut`, `message_action`, `block_suggestion`.

use chat_core::{Action, Author, EventKind, Handle, Inbound, Modal, OtherEvent, WebhookError};
use serde::Deserialize;

use super::payload::{BlockAction, Interaction};
use super::{Context, body_id, ignored, json_error, malformed, present, reason_name, thread};

pub(super) fn parse(cx: &Context, payload: &str) -> Result<Inbound, WebhookError> {
    let value: serde_json::Value = serde_json::from_str(payload).map_err(|e| json_error(&e))?;
    let i = Interaction::deserialize(&value).map_err(|e| json_error(&e))?;
    let kind = i.kind.clone().unwrap_or_default();
    match kind.as_str() {
        "block_actions" => block_actions(cx, &i),
        "view_submission" | "view_closed" => view(cx, &i, kind == "view_submission"),
        "shortcut" | "message_action" => shortcut(cx, &i, kind, value),
        "block_suggestion" => options_load(cx, &i, value),
        "" => Err(malformed("interaction without type")),
        other => Ok(ignored(format!("unsupported:{}", reason_name(other)))),
    }
}

/// The installation: the enterprise for an org-wide install, else the team.
fn tenant(i: &Interaction) -> Result<String, WebhookError> {
    let team = i.team.as_ref();
    let enterprise = present(i.enterprise.as_ref().and_then(|e| e.id.as_ref()))
        .or(present(team.and_then(|t| t.enterprise_id.as_ref())));
    let team_id = present(team.and_then(|t| t.id.as_ref()))
        .or(present(i.user.as_ref().and_then(|u| u.team_id.as_ref())))
        .or(present(
            i.view
                .as_ref()
                .and_then(|v| v.app_installed_team_id.as_ref()),
        ));
    let tenant = if i.is_enterprise_install == Some(true) {
        enterprise.or(team_id)
    } else {
        team_id.or(enterprise)
    };
    tenant
        .map(str::to_owned)
        .ok_or_else(|| malformed("interaction without team"))
}

fn user(i: &Interaction) -> Author {
    let u = i.user.as_ref();
    let mut author = Author::new(u.and_then(|u| u.id.clone()).unwrap_or_default());
    author.name = u
        .and_then(|u| present(u.username.as_ref()).or(present(u.name.as_ref())))
        .map(str::to_owned);
    author
}

/// The delivery's id: the `trigger_id` (unique per interaction), else a digest
/// of the body.
fn id(cx: &Context, i: &Interaction) -> String {
    present(i.trigger_id.as_ref())
        .map(str::to_owned)
        .unwrap_or_else(|| body_id(&cx.raw))
}

/// The conversation of a modal: it lives outside channels; its thread is the
/// root view (so pushed views share their root's scope).
fn view_thread(i: &Interaction) -> Option<String> {
    let v = i.view.as_ref();
    present(v.and_then(|v| v.root_view_id.as_ref()))
        .or(present(v.and_then(|v| v.id.as_ref())))
        .or(present(
            i.container.as_ref().and_then(|c| c.view_id.as_ref()),
        ))
        .map(str::to_owned)
}

/// Where an interaction happened: the message's thread for components in
/// messages, the root view for modals and App Home, else the channel.
fn location(i: &Interaction, id: &str) -> (String, String) {
    let container = i.container.as_ref();
    let in_view = container.and_then(|c| c.kind.as_deref()) == Some("view");
    if !in_view {
        let channel = present(container.and_then(|c| c.channel_id.as_ref()))
            .or(present(i.channel.as_ref().and_then(|c| c.id.as_ref())));
        if let Some(channel) = channel {
            let message = i.message.as_ref();
            let root = present(message.and_then(|m| m.thread_ts.as_ref()))
                .or(present(container.and_then(|c| c.thread_ts.as_ref())))
                .or(present(message.and_then(|m| m.ts.as_ref())))
                .or(present(container.and_then(|c| c.message_ts.as_ref())))
                .unwrap_or("");
            return (channel.to_owned(), root.to_owned());
        }
    }
    match view_thread(i) {
        Some(view) => (String::new(), view),
        None => (String::new(), id.to_owned()),
    }
}

fn block_actions(cx: &Context, i: &Interaction) -> Result<Inbound, WebhookError> {
    let tenant = tenant(i)?;
    let Some(action) = i.actions.as_ref().and_then(|a| a.first()) else {
        return Ok(ignored("block-actions-without-actions"));
    };
    let id = id(cx, i);
    let (channel, root) = location(i, &id);
    let mut click = Action::new(action.action_id.clone().unwrap_or_default(), user(i));
    click.value = action_value(action);
    click.follow_up = i
        .response_url
        .clone()
        .filter(|u| !u.is_empty())
        .map(Handle::new);
    click.trigger = i
        .trigger_id
        .clone()
        .filter(|t| !t.is_empty())
        .map(Handle::new);
    Ok(cx.event(
        id.clone(),
        id,
        thread(&tenant, &channel, &root),
        EventKind::Action(click),
    ))
}

/// The value of a button, or the selection of a single-select element.
fn action_value(a: &BlockAction) -> Option<String> {
    [
        a.value.as_ref(),
        a.selected_option.as_ref().and_then(|o| o.value.as_ref()),
        a.selected_user.as_ref(),
        a.selected_channel.as_ref(),
        a.selected_conversation.as_ref(),
        a.selected_date.as_ref(),
        a.selected_time.as_ref(),
    ]
    .into_iter()
    .flatten()
    .next()
    .cloned()
}

fn view(cx: &Context, i: &Interaction, submitted: bool) -> Result<Inbound, WebhookError> {
    let tenant = tenant(i)?;
    let v = i
        .view
        .as_ref()
        .ok_or_else(|| malformed("view interaction without view"))?;
    let view_id = present(v.id.as_ref())
        .ok_or_else(|| malformed("view without id"))?
        .to_owned();
    let id = id(cx, i);
    let root = view_thread(i).unwrap_or_else(|| view_id.clone());
    let mut modal = Modal::new(v.callback_id.clone().unwrap_or_default(), view_id, user(i));
    if let Some(metadata) = present(v.private_metadata.as_ref()) {
        modal = modal.with_metadata(metadata);
    }
    let modal = modal.with_values(
        v.state
            .as_ref()
            .and_then(|s| s.values.clone())
            .unwrap_or(serde_json::Value::Null),
    );
    let kind = if submitted {
        EventKind::ModalSubmit(modal)
    } else {
        EventKind::ModalClose(modal)
    };
    Ok(cx.event(id.clone(), id, thread(&tenant, "", &root), kind))
}

/// Global and message shortcuts, passed through as [`OtherEvent`]s named by
/// their type, with the payload as data.
fn shortcut(
    cx: &Context,
    i: &Interaction,
    kind: String,
    value: serde_json::Value,
) -> Result<Inbound, WebhookError> {
    let tenant = tenant(i)?;
    let id = id(cx, i);
    let (channel, root) = location(i, &id);
    Ok(cx.event(
        id.clone(),
        id,
        thread(&tenant, &channel, &root),
        EventKind::Other(OtherEvent::new(kind, value)),
    ))
}

/// An external select's options load (`block_suggestion`): an
/// [`OtherEvent`] with the payload, where the select is (a message's
/// thread, or the modal's root view). Every request is its own — the same
/// text typed again asks again, even within one millisecond, and Slack
/// never resends one — so the dedupe key is the body's digest, the
/// delivery's arrival and a random nonce.
fn options_load(
    cx: &Context,
    i: &Interaction,
    value: serde_json::Value,
) -> Result<Inbound, WebhookError> {
    let tenant = tenant(i)?;
    let mut nonce = [0u8; 8];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce)
        .map_err(|_| WebhookError::Malformed("slack: no randomness for a request id".into()))?;
    let id = format!(
        "{}:{}:{}",
        body_id(&cx.raw),
        cx.received_at_ms,
        hex::encode(nonce)
    );
    let (channel, root) = location(i, &id);
    Ok(cx.event(
        id.clone(),
        id,
        thread(&tenant, &channel, &root),
        EventKind::Other(OtherEvent::new("block_suggestion", value)),
    ))
}
