//! A card on Telegram: its text as Markdown (then entities), its buttons as an
//! [inline keyboard](https://core.telegram.org/bots/api#inlinekeyboardmarkup)
//! — an action button's `callback_data` carries its `action_id` and value and
//! must fit Telegram's 64 bytes, checked before any call; a link button opens
//! its URL; a select's options are buttons of their own.

use chat_core::AdapterError;
use chat_core::card::{ActionElement, Card, Element};
use serde_json::{Value, json};

/// The most bytes of a button's `callback_data`.
pub const MAX_CALLBACK_DATA: usize = 64;

/// What separates an action's id from its value in `callback_data`.
const SEPARATOR: char = '\u{1f}';

/// The `callback_data` of an action `action_id` with `value`.
///
/// # Errors
/// [`AdapterError::Invalid`] when it is longer than [`MAX_CALLBACK_DATA`]
/// bytes, or the id holds the separator.
pub fn callback_data(action_id: &str, value: Option<&str>) -> Result<String, AdapterError> {
    if action_id.contains(SEPARATOR) {
        return Err(AdapterError::Invalid(format!(
            "action id {action_id:?} holds the unit separator"
        )));
    }
    let data = match value {
        Some(v) => format!("{action_id}{SEPARATOR}{v}"),
        None => action_id.to_owned(),
    };
    if data.is_empty() {
        return Err(AdapterError::Invalid(
            "a button without an action id: Telegram's callback_data is 1-64 bytes".to_owned(),
        ));
    }
    if data.len() > MAX_CALLBACK_DATA {
        return Err(AdapterError::Invalid(format!(
            "button {action_id:?}: callback_data is {} bytes, Telegram takes {MAX_CALLBACK_DATA}",
            data.len()
        )));
    }
    Ok(data)
}

/// The action id and value a button's `callback_data` carries.
///
/// ```
/// use chat_telegram::keyboard::{callback_data, action_of};
/// # fn main() -> Result<(), chat_core::AdapterError> {
/// let data = callback_data("echo-again", Some("Hello"))?;
/// assert_eq!(action_of(&data), ("echo-again", Some("Hello")));
/// assert_eq!(action_of("plain"), ("plain", None));
/// # Ok(()) }
/// ```
pub fn action_of(data: &str) -> (&str, Option<&str>) {
    match data.split_once(SEPARATOR) {
        Some((id, value)) => (id, Some(value)),
        None => (data, None),
    }
}

/// A card's text (Markdown, its buttons left out) and its inline keyboard
/// (`None` without buttons).
///
/// # Errors
/// [`AdapterError::Invalid`] for a button whose `callback_data` does not
/// fit.
pub fn render(card: &Card) -> Result<(String, Option<Value>), AdapterError> {
    let text = card.to_markdown(|_| None);
    let mut rows: Vec<Vec<Value>> = Vec::new();
    for element in &card.elements {
        let Element::Actions { elements } = element else {
            continue;
        };
        let mut row = Vec::new();
        for e in elements {
            match e {
                ActionElement::Button(b) => match (&b.url, &b.action_id) {
                    (Some(url), _) => row.push(json!({ "text": b.text, "url": url })),
                    (None, Some(id)) => row.push(json!({
                        "text": b.text,
                        "callback_data": callback_data(id, b.value.as_deref())?,
                    })),
                    (None, None) => {}
                },
                ActionElement::Select(s) => {
                    // Telegram has no menus: each option is a button, two a row.
                    for pair in s.options.chunks(2) {
                        let mut options = Vec::new();
                        for o in pair {
                            options.push(json!({
                                "text": o.text,
                                "callback_data": callback_data(&s.action_id, Some(&o.value))?,
                            }));
                        }
                        rows.push(options);
                    }
                }
                _ => {}
            }
        }
        if !row.is_empty() {
            rows.push(row);
        }
    }
    let keyboard = (!rows.is_empty()).then(|| json!({ "inline_keyboard": rows }));
    Ok((text, keyboard))
}

#[cfg(test)]
mod tests {
    use chat_core::card::{Button, Select};

    use super::*;

    #[test]
    fn buttons_become_an_inline_keyboard() {
        let card = Card::new().header("Deploy").actions([
            Button::new("again", "Again").value("1.2").into(),
            Button::link("Open", "https://e.x").into(),
            Select::new("pick", "Pick")
                .option("A", "a")
                .option("B", "b")
                .option("C", "c")
                .into(),
        ]);
        let (text, keyboard) = render(&card).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "### Deploy");
        let rows = &keyboard.unwrap_or_default()["inline_keyboard"];
        assert_eq!(rows[0][0]["text"], "A");
        assert_eq!(rows[1][0]["text"], "C");
        assert_eq!(rows[2][0]["callback_data"], format!("again{SEPARATOR}1.2"));
        assert_eq!(rows[2][1]["url"], "https://e.x");
    }

    #[test]
    fn callback_data_over_64_bytes_is_refused_before_any_call() {
        let card = Card::new().actions([Button::new("go", "Go").value("x".repeat(62)).into()]);
        assert!(matches!(render(&card), Err(AdapterError::Invalid(m)) if m.contains("64")));
        assert!(callback_data("go", Some(&"x".repeat(61))).is_ok());
    }
}
