//! [`View`] → a Slack modal view, and [`ModalAnswer`] → a `response_action`,
//! within Slack's documented limits (checked before any call): title, submit
//! and close labels 24 characters, 100 blocks, `callback_id` 255,
//! `private_metadata` 3,000, labels 2,000, a select's 100 options, 10
//! checkboxes, option labels 75 and values 150 characters.
//!
//! ```
//! use chat_core::view::{Input, View};
//!
//! let view = View::new("echo-form", "Echo").submit("Send").input(Input::text("form", "value", "Say"));
//! let json = chat_slack::views::render(&view)?;
//! assert_eq!(json["type"], "modal");
//! assert_eq!(json["blocks"][0]["element"]["type"], "plain_text_input");
//! # Ok::<(), chat_core::AdapterError>(())
//! ```

use chat_core::AdapterError;
use chat_core::view::{Input, InputElement, ModalAnswer, View};
use serde_json::{Value, json};

/// Characters of a modal's title, submit and close labels.
pub const MAX_TITLE: usize = 24;
/// Blocks of a modal.
pub const MAX_BLOCKS: usize = 100;
/// Characters of `callback_id`.
pub const MAX_CALLBACK_ID: usize = 255;
/// Characters of `private_metadata`.
pub const MAX_METADATA: usize = 3000;
/// Characters of an input's label (and hint).
pub const MAX_LABEL: usize = 2000;
/// Options of a select.
pub const MAX_SELECT_OPTIONS: usize = 100;
/// Options of a checkbox group.
pub const MAX_CHECKBOXES: usize = 10;
/// Characters of an option's label.
pub const MAX_OPTION_TEXT: usize = 75;
/// Characters of an option's value.
pub const MAX_OPTION_VALUE: usize = 150;

fn fits(what: &str, text: &str, max: usize) -> Result<(), AdapterError> {
    let n = text.chars().count();
    if n > max {
        return Err(AdapterError::Invalid(format!(
            "{what} has {n} characters; Slack allows {max}"
        )));
    }
    Ok(())
}

fn plain(text: &str) -> Value {
    json!({ "type": "plain_text", "text": text, "emoji": true })
}

/// Renders a view as Slack's modal view object.
///
/// # Errors
/// [`AdapterError::Invalid`] for a view beyond Slack's limits.
pub fn render(view: &View) -> Result<Value, AdapterError> {
    fits("the title", &view.title, MAX_TITLE)?;
    fits("the callback_id", &view.callback_id, MAX_CALLBACK_ID)?;
    if view.inputs.len() > MAX_BLOCKS {
        return Err(AdapterError::Invalid(format!(
            "{} inputs; a modal holds {MAX_BLOCKS} blocks",
            view.inputs.len()
        )));
    }
    let blocks = view
        .inputs
        .iter()
        .map(input)
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = json!({
        "type": "modal",
        "callback_id": view.callback_id,
        "title": plain(&view.title),
        "blocks": blocks,
    });
    if let Some(submit) = &view.submit {
        fits("the submit label", submit, MAX_TITLE)?;
        out["submit"] = plain(submit);
    } else if !view.inputs.is_empty() {
        // Slack requires a submit button on a modal with inputs.
        out["submit"] = plain("Submit");
    }
    if let Some(close) = &view.close {
        fits("the close label", close, MAX_TITLE)?;
        out["close"] = plain(close);
    }
    if let Some(metadata) = &view.metadata {
        fits("the metadata", metadata, MAX_METADATA)?;
        out["private_metadata"] = json!(metadata);
    }
    Ok(out)
}

fn options(
    what: &str,
    options: &[(String, String)],
    max: usize,
) -> Result<Vec<Value>, AdapterError> {
    if options.is_empty() || options.len() > max {
        return Err(AdapterError::Invalid(format!(
            "{what} has {} options; Slack allows 1 to {max}",
            options.len()
        )));
    }
    options
        .iter()
        .map(|(label, value)| {
            fits("an option's label", label, MAX_OPTION_TEXT)?;
            fits("an option's value", value, MAX_OPTION_VALUE)?;
            Ok(json!({ "text": plain(label), "value": value }))
        })
        .collect()
}

fn input(i: &Input) -> Result<Value, AdapterError> {
    fits("a label", &i.label, MAX_LABEL)?;
    let mut element = match &i.element {
        InputElement::PlainText {
            multiline,
            placeholder,
            initial,
        } => {
            let mut e = json!({ "type": "plain_text_input", "multiline": multiline });
            if let Some(p) = placeholder {
                e["placeholder"] = plain(p);
            }
            if let Some(v) = initial {
                e["initial_value"] = json!(v);
            }
            e
        }
        InputElement::Select {
            options: o,
            initial,
        } => {
            let rendered = options("a select", o, MAX_SELECT_OPTIONS)?;
            let mut e = json!({ "type": "static_select", "options": rendered });
            if let Some(v) = initial
                && let Some(pos) = o.iter().position(|(_, value)| value == v)
            {
                e["initial_option"] = rendered[pos].clone();
            }
            e
        }
        InputElement::Checkboxes {
            options: o,
            initial,
        } => {
            let rendered = options("a checkbox group", o, MAX_CHECKBOXES)?;
            let mut e = json!({ "type": "checkboxes", "options": rendered });
            let chosen: Vec<Value> = o
                .iter()
                .zip(&rendered)
                .filter(|((_, value), _)| initial.contains(value))
                .map(|(_, r)| r.clone())
                .collect();
            if !chosen.is_empty() {
                e["initial_options"] = json!(chosen);
            }
            e
        }
        _ => {
            return Err(AdapterError::Invalid(
                "an input this version cannot render".to_owned(),
            ));
        }
    };
    element["action_id"] = json!(i.action_id);
    let mut block = json!({
        "type": "input",
        "block_id": i.block_id,
        "label": plain(&i.label),
        "optional": i.optional,
        "element": element,
    });
    if let Some(hint) = &i.hint {
        fits("a hint", hint, MAX_LABEL)?;
        block["hint"] = plain(hint);
    }
    Ok(block)
}

/// The `view_submission` answer for a [`ModalAnswer`].
///
/// # Errors
/// [`AdapterError::Invalid`] for a view beyond Slack's limits.
pub fn answer(answer: &ModalAnswer) -> Result<Value, AdapterError> {
    Ok(match answer {
        ModalAnswer::Errors(errors) => {
            let errors: serde_json::Map<String, Value> = errors
                .iter()
                .map(|(block, message)| (block.clone(), json!(message)))
                .collect();
            json!({ "response_action": "errors", "errors": errors })
        }
        ModalAnswer::Update(view) => json!({ "response_action": "update", "view": render(view)? }),
        ModalAnswer::Push(view) => json!({ "response_action": "push", "view": render(view)? }),
        ModalAnswer::Clear => json!({ "response_action": "clear" }),
        _ => {
            return Err(AdapterError::Invalid(
                "a modal answer this version cannot render".to_owned(),
            ));
        }
    })
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    #[test]
    fn every_input_renders_as_slack_documents_it() -> Result<(), AdapterError> {
        let view = View::new("cb", "Title")
            .close("Cancel")
            .metadata("C1")
            .input(
                Input::text("a", "text", "Text")
                    .multiline()
                    .placeholder("type")
                    .initial("hi"),
            )
            .input(
                Input::select("b", "pick", "Pick")
                    .option("One", "1")
                    .option("Two", "2")
                    .initial("2"),
            )
            .input(
                Input::checkboxes("c", "flags", "Flags")
                    .option("X", "x")
                    .option("Y", "y")
                    .initial("y")
                    .optional()
                    .hint("any"),
            );
        let v = render(&view)?;
        assert_eq!(
            v["submit"]["text"], "Submit",
            "a modal with inputs needs a submit button"
        );
        assert_eq!(v["close"]["text"], "Cancel");
        assert_eq!(v["private_metadata"], "C1");
        let b = &v["blocks"];
        assert_eq!(
            b[0]["element"],
            json!({"type": "plain_text_input", "multiline": true, "action_id": "text",
            "placeholder": {"type": "plain_text", "text": "type", "emoji": true}, "initial_value": "hi"})
        );
        assert_eq!(b[1]["element"]["initial_option"]["value"], "2");
        assert_eq!(b[2]["element"]["initial_options"][0]["value"], "y");
        assert_eq!(b[2]["optional"], true);
        assert_eq!(b[2]["hint"]["text"], "any");
        Ok(())
    }

    #[test]
    fn limits_are_checked_before_any_call() {
        assert!(render(&View::new("cb", "x".repeat(25))).is_err());
        let eleven = (0..11).fold(Input::checkboxes("c", "f", "F"), |i, n| {
            i.option(n.to_string(), n.to_string())
        });
        assert!(render(&View::new("cb", "T").input(eleven)).is_err());
        assert!(
            render(&View::new("cb", "T").input(Input::select("s", "p", "P"))).is_err(),
            "a select needs options"
        );
    }

    #[test]
    fn answers_are_response_actions() -> Result<(), AdapterError> {
        assert_eq!(
            answer(&ModalAnswer::errors([("form", "Say something")]))?,
            json!({"response_action": "errors", "errors": {"form": "Say something"}})
        );
        assert_eq!(
            answer(&ModalAnswer::Clear)?,
            json!({"response_action": "clear"})
        );
        let pushed = answer(&ModalAnswer::Push(View::new("next", "Next")))?;
        assert_eq!(pushed["response_action"], "push");
        assert_eq!(pushed["view"]["callback_id"], "next");
        Ok(())
    }
}
