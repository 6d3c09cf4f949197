//! A portable message as Slack's message content: Markdown as mrkdwn, a card
//! as Block Kit blocks with the text as their fallback.

use chat_core::{AdapterError, OutboundMessage, TextFormat};

use crate::client::Content;
use crate::mrkdwn::markdown_to_mrkdwn;

/// What to send for a message: a card as Block Kit (checked against Slack's
/// limits) with its fallback text; Markdown converted to mrkdwn; anything else
/// as is.
pub(crate) fn render(message: &OutboundMessage) -> Result<Content, AdapterError> {
    let text = match message.format {
        TextFormat::Markdown => markdown_to_mrkdwn(&message.text),
        _ => message.text.clone(),
    };
    Ok(match &message.card {
        Some(card) => Content::blocks(text, crate::blocks::render(card)?),
        None => Content::from(text),
    })
}
