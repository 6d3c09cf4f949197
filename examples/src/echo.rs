//! The echo handlers.

use std::sync::Arc;
use std::time::Duration;

use chat_runtime::{BoxError, Ctx, Event, EventKind};

/// `echo: <a> | <b> | <c>`: the skipped events' texts in join order, then the
/// event's own, each without a leading @-mention.
pub fn echo_text(event: &Event, skipped: &[Arc<Event>]) -> String {
    let texts: Vec<&str> = skipped
        .iter()
        .map(|e| e.as_ref())
        .chain(std::iter::once(event))
        .map(|e| strip_mention(e.text().unwrap_or_default()))
        .collect();
    format!("echo: {}", texts.join(" | "))
}

/// Drops a leading Slack mention (`<@U0BOT> `).
fn strip_mention(text: &str) -> &str {
    let t = text.trim_start();
    match t.strip_prefix("<@").and_then(|rest| rest.split_once('>')) {
        Some((_, rest)) => rest.trim_start(),
        None => t,
    }
}

/// A conversation turn (mention, DM, subscribed message, agent session): subscribe
/// the thread, simulate `delay` of work (cancellable), post the echo. With `noop`,
/// nothing at all.
pub async fn on_turn(ctx: Ctx, event: Event, delay: Duration, noop: bool) -> Result<(), BoxError> {
    if noop {
        return Ok(());
    }
    if !matches!(event.kind, EventKind::AgentSession(_)) {
        ctx.subscribe().await?;
    }
    if !delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = ctx.cancelled() => return Ok(()),
        }
    }
    ctx.thread().post(echo_text(&event, ctx.skipped())).await?;
    Ok(())
}

/// Any slash command, whatever its name: `echo: <text>`, ephemeral — in the
/// HTTP response, or through the command's `response_url` when the answer
/// cannot go inline.
pub async fn on_command(ctx: Ctx, event: Event) -> Result<(), BoxError> {
    let text = format!("echo: {}", event.text().unwrap_or_default());
    ctx.reply(serde_json::json!({ "response_type": "ephemeral", "text": text }));
    Ok(())
}
