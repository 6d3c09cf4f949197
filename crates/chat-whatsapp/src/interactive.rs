//! A card as WhatsApp's interactive message
//! ([Interactive messages](https://developers.facebook.com/docs/whatsapp/cloud-api/messages/interactive-reply-buttons-messages)):
//! action buttons become reply buttons (at most 3, titles of at most 20
//! characters, ids of at most 256), a select becomes a list (at most 10 rows,
//! row titles of 24 characters, a button label of 20); link buttons go in the
//! text. The body is at most 1,024 characters. What does not fit is refused
//! before any call, naming what.

use chat_core::AdapterError;
use chat_core::card::{ActionElement, Card, Element};
use serde_json::{Value, json};

/// The most reply buttons of one message.
pub const MAX_BUTTONS: usize = 3;
/// The longest reply button title.
pub const MAX_BUTTON_TITLE: usize = 20;
/// The most rows of a list.
pub const MAX_ROWS: usize = 10;
/// The longest list row title.
pub const MAX_ROW_TITLE: usize = 24;
/// The longest body of an interactive message.
pub const MAX_BODY: usize = 1024;
/// The longest reply button id.
const MAX_BUTTON_ID: usize = 256;
/// The longest list row id.
const MAX_ROW_ID: usize = 200;

/// What separates an action's id from its value in a button or row id.
const SEPARATOR: char = '\u{1f}';

/// The id of a reply button or list row for action `action_id` with `value`.
fn id_of(action_id: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("{action_id}{SEPARATOR}{v}"),
        None => action_id.to_owned(),
    }
}

/// The action id and value a reply's button or row id carries.
///
/// ```
/// assert_eq!(chat_whatsapp::interactive::action_of("again\u{1f}Hello"), ("again", Some("Hello")));
/// ```
pub fn action_of(id: &str) -> (&str, Option<&str>) {
    match id.split_once(SEPARATOR) {
        Some((a, v)) => (a, Some(v)),
        None => (id, None),
    }
}

/// `text` is 1 to `max` characters, as every title, id and body of an
/// interactive message must be.
fn too_long(what: &str, text: &str, max: usize) -> Result<(), AdapterError> {
    let n = text.chars().count();
    if n == 0 {
        return Err(AdapterError::Invalid(format!(
            "{what} is empty; WhatsApp takes 1 to {max} characters"
        )));
    }
    if n > max {
        return Err(AdapterError::Invalid(format!(
            "{what} {text:?} has {n} characters; WhatsApp takes {max}"
        )));
    }
    Ok(())
}

/// The `interactive` object of a card with buttons or a select; `None` for
/// a card without (sent as text).
///
/// # Errors
/// [`AdapterError::Invalid`] naming what does not fit WhatsApp's limits.
pub fn render(card: &Card) -> Result<Option<Value>, AdapterError> {
    let mut buttons = Vec::new();
    let mut selects = Vec::new();
    for element in &card.elements {
        if let Element::Actions { elements } = element {
            for e in elements {
                match e {
                    ActionElement::Button(b) if b.url.is_none() => buttons.push(b),
                    ActionElement::Select(s) => selects.push(s),
                    _ => {}
                }
            }
        }
    }
    if buttons.is_empty() && selects.is_empty() {
        return Ok(None);
    }
    let body = crate::format::markdown(&card.to_markdown(Card::link_buttons));
    let body = if body.is_empty() {
        card.fallback_text()
    } else {
        body
    };
    too_long("the card's text", &body, MAX_BODY)?;
    if !buttons.is_empty() && !selects.is_empty() {
        return Err(AdapterError::Invalid(
            "WhatsApp shows buttons or a list in one message, not both".to_owned(),
        ));
    }
    if selects.len() > 1 {
        return Err(AdapterError::Invalid(
            "WhatsApp shows one list in a message".to_owned(),
        ));
    }
    if let Some(select) = selects.first() {
        if select.options.is_empty() || select.options.len() > MAX_ROWS {
            return Err(AdapterError::Invalid(format!(
                "a list has 1 to {MAX_ROWS} rows, not {}",
                select.options.len()
            )));
        }
        too_long("the list's button", &select.placeholder, MAX_BUTTON_TITLE)?;
        let mut rows = Vec::new();
        let mut ids = Vec::new();
        for o in &select.options {
            too_long("a list row", &o.text, MAX_ROW_TITLE)?;
            let id = id_of(&select.action_id, Some(&o.value));
            too_long("a list row's id", &id, MAX_ROW_ID)?;
            if ids.contains(&id) {
                return Err(AdapterError::Invalid(format!(
                    "two rows with the id {id:?}: WhatsApp's are unique"
                )));
            }
            ids.push(id.clone());
            rows.push(json!({ "id": id, "title": o.text }));
        }
        return Ok(Some(json!({
            "type": "list",
            "body": { "text": body },
            "action": { "button": select.placeholder, "sections": [{ "rows": rows }] },
        })));
    }
    if buttons.len() > MAX_BUTTONS {
        return Err(AdapterError::Invalid(format!(
            "{} buttons: WhatsApp takes at most {MAX_BUTTONS}",
            buttons.len()
        )));
    }
    let mut replies = Vec::new();
    let mut ids = Vec::new();
    for b in buttons {
        too_long("a button", &b.text, MAX_BUTTON_TITLE)?;
        let action = b.action_id.as_deref().unwrap_or_default();
        too_long("a button's action id", action, MAX_BUTTON_ID)?;
        let id = id_of(action, b.value.as_deref());
        too_long("a button's id", &id, MAX_BUTTON_ID)?;
        if ids.contains(&id) {
            return Err(AdapterError::Invalid(format!(
                "two buttons with the id {id:?}: WhatsApp's are unique"
            )));
        }
        ids.push(id.clone());
        replies.push(json!({ "type": "reply", "reply": { "id": id, "title": b.text } }));
    }
    Ok(Some(json!({
        "type": "button",
        "body": { "text": body },
        "action": { "buttons": replies },
    })))
}

#[cfg(test)]
mod tests {
    use chat_core::card::{Button, Select};

    use super::*;

    #[test]
    fn buttons_and_lists_within_whatsapps_limits() {
        let card = Card::new()
            .header("Deploy")
            .actions([Button::new("again", "Again").value("1.2").into()]);
        let i = render(&card).unwrap_or_default().unwrap_or_default();
        assert_eq!(i["type"], "button");
        assert_eq!(i["body"]["text"], "*Deploy*");
        assert_eq!(
            i["action"]["buttons"][0]["reply"]["id"],
            format!("again{SEPARATOR}1.2")
        );
        let list = Card::new()
            .section("Pick")
            .actions([Select::new("pick", "Choose")
                .option("A", "a")
                .option("B", "b")
                .into()]);
        let i = render(&list).unwrap_or_default().unwrap_or_default();
        assert_eq!(i["type"], "list");
        assert_eq!(
            i["action"]["sections"][0]["rows"][1]["id"],
            format!("pick{SEPARATOR}b")
        );
        assert!(
            render(&Card::new().section("plain"))
                .unwrap_or_default()
                .is_none()
        );
    }

    #[test]
    fn what_does_not_fit_is_refused_by_name() {
        let four = Card::new().actions((0..4).map(|i| Button::new(format!("b{i}"), "x").into()));
        assert!(matches!(render(&four), Err(AdapterError::Invalid(m)) if m.contains("at most 3")));
        let long = Card::new().actions([Button::new("b", "a title of more than twenty").into()]);
        assert!(matches!(render(&long), Err(AdapterError::Invalid(m)) if m.contains("20")));
        let untitled = Card::new()
            .section("x")
            .actions([Button::new("b", "").into()]);
        assert!(matches!(render(&untitled), Err(AdapterError::Invalid(m)) if m.contains("empty")));
        let twins = Card::new().section("x").actions([
            Button::new("b", "One").into(),
            Button::new("b", "Two").into(),
        ]);
        assert!(matches!(render(&twins), Err(AdapterError::Invalid(m)) if m.contains("unique")));
        let unlabelled = Card::new()
            .section("x")
            .actions([Select::new("s", "").option("A", "a").into()]);
        assert!(
            matches!(render(&unlabelled), Err(AdapterError::Invalid(m)) if m.contains("empty"))
        );
        let rows = (0..11).fold(Select::new("s", "Pick"), |s, i| {
            s.option(format!("r{i}"), "v")
        });
        let many = Card::new().actions([rows.into()]);
        assert!(matches!(render(&many), Err(AdapterError::Invalid(m)) if m.contains("rows")));
    }
}
