//! Form-encoded deliveries: slash commands, the SSL check, and the `payload=`
//! field of interactivity.

use bytes::Bytes;
use chat_core::{Author, EventKind, Handle, Inbound, SlashCommand, WebhookError};
use http::StatusCode;

use super::payload::Form;
use super::{Context, body_id, interactive, malformed, present, thread};

pub(super) fn parse(cx: &Context, body: &[u8]) -> Result<Inbound, WebhookError> {
    let form: Form =
        serde_urlencoded::from_bytes(body).map_err(|_| malformed("invalid form body"))?;
    if let Some(payload) = form.payload.as_deref() {
        return interactive::parse(cx, payload);
    }
    if form.ssl_check.as_deref() == Some("1") {
        let mut ok = http::Response::new(Bytes::new());
        *ok.status_mut() = StatusCode::OK;
        return Ok(Inbound::Response(ok));
    }
    if present(form.command.as_ref()).is_some() {
        return slash_command(cx, form);
    }
    Err(malformed("form body without command or payload"))
}

/// A slash command. It belongs to a channel, not a thread (Slack does not
/// deliver custom commands typed in threads), so the thread part is empty.
/// Dedupe and id: the `trigger_id`, unique per invocation.
fn slash_command(cx: &Context, form: Form) -> Result<Inbound, WebhookError> {
    let org_wide = form.is_enterprise_install.as_deref() == Some("true");
    let tenant = if org_wide {
        present(form.enterprise_id.as_ref()).or(present(form.team_id.as_ref()))
    } else {
        present(form.team_id.as_ref()).or(present(form.enterprise_id.as_ref()))
    }
    .ok_or_else(|| malformed("slash command without team_id"))?
    .to_owned();
    let channel = present(form.channel_id.as_ref())
        .ok_or_else(|| malformed("slash command without channel_id"))?
        .to_owned();
    let id = present(form.trigger_id.as_ref())
        .map(str::to_owned)
        .unwrap_or_else(|| body_id(&cx.raw));
    let mut user = Author::new(form.user_id.unwrap_or_default());
    user.name = form.user_name.filter(|n| !n.is_empty());
    let mut command = SlashCommand::new(
        form.command.unwrap_or_default(),
        form.text.unwrap_or_default(),
        user,
    );
    command.follow_up = form.response_url.filter(|u| !u.is_empty()).map(Handle::new);
    command.trigger = form.trigger_id.filter(|t| !t.is_empty()).map(Handle::new);
    Ok(cx.event(
        id.clone(),
        id,
        thread(&tenant, &channel, ""),
        EventKind::SlashCommand(command),
    ))
}
