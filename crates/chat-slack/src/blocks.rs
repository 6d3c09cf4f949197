//! [`Card`] → Block Kit, within Slack's documented limits: a card that cannot
//! fit is an [`AdapterError::Invalid`] naming the element and the limit,
//! before any call — never an `invalid_blocks` from Slack.
//!
//! | card element | block | limits checked |
//! |---|---|---|
//! | header | `header` (`plain_text`) | 150 characters |
//! | section | `section` (`mrkdwn`, from Markdown) | 3,000 characters |
//! | fields | `section` with `fields` | 10 fields, 2,000 characters each |
//! | image | `image` | URL 3,000, alt text 2,000, title 2,000 |
//! | divider | `divider` | — |
//! | context | `context` (one `mrkdwn`) | 3,000 characters |
//! | actions | `actions` | 25 elements; button text 75, value 2,000, URL 3,000; select: 100 options, option text 75, value 150, placeholder 150 |
//! | table | `table` (raw text cells) | one per message, 100 rows, 20 columns |
//! | raw (Slack) | as given | counted as a block |
//!
//! Across the message: 50 blocks, every `action_id` at most 255 characters and
//! unique. Lengths count characters, as Slack does.
//!
//! ```
//! use chat_core::card::{Button, Card};
//! use chat_slack::blocks::render;
//!
//! let blocks = render(&Card::new().header("Hi").actions([Button::new("go", "Go").into()]))?;
//! assert_eq!(blocks[0]["type"], "header");
//! assert_eq!(blocks[1]["elements"][0]["action_id"], "go");
//!
//! let too_long = Card::new().actions([Button::new("go", "x".repeat(76)).into()]);
//! assert!(render(&too_long).is_err());
//! # Ok::<(), chat_core::AdapterError>(())
//! ```

use std::collections::HashSet;

use chat_core::AdapterError;
use chat_core::card::{ActionElement, Button, ButtonStyle, Card, Element, Select};
use serde_json::{Value, json};

use crate::mrkdwn::markdown_to_mrkdwn;

/// Blocks in one message.
pub const MAX_BLOCKS: usize = 50;
/// Characters of a header's text.
pub const MAX_HEADER: usize = 150;
/// Characters of a section's (or a context line's) text.
pub const MAX_SECTION: usize = 3000;
/// Fields of a section.
pub const MAX_FIELDS: usize = 10;
/// Characters of one field.
pub const MAX_FIELD: usize = 2000;
/// Elements of an actions block.
pub const MAX_ACTIONS: usize = 25;
/// Characters of a button's label.
pub const MAX_BUTTON_TEXT: usize = 75;
/// Characters of a button's value.
pub const MAX_BUTTON_VALUE: usize = 2000;
/// Characters of a URL.
pub const MAX_URL: usize = 3000;
/// Characters of an `action_id`.
pub const MAX_ACTION_ID: usize = 255;
/// Options of a static select.
pub const MAX_OPTIONS: usize = 100;
/// Characters of an option's label.
pub const MAX_OPTION_TEXT: usize = 75;
/// Characters of an option's value.
pub const MAX_OPTION_VALUE: usize = 150;
/// Characters of a select's placeholder.
pub const MAX_PLACEHOLDER: usize = 150;
/// Characters of an image's alt text (and title).
pub const MAX_ALT: usize = 2000;
/// Rows of a table.
pub const MAX_TABLE_ROWS: usize = 100;
/// Columns of a table.
pub const MAX_TABLE_COLUMNS: usize = 20;

/// Renders a card as Block Kit blocks, or says which limit it breaks.
///
/// # Errors
///
/// [`AdapterError::Invalid`] for a card beyond Slack's limits (see the
/// module docs).
pub fn render(card: &Card) -> Result<Vec<Value>, AdapterError> {
    let mut r = Renderer::default();
    for (i, element) in card.elements().iter().enumerate() {
        r.element(i, element)?;
    }
    if r.blocks.len() > MAX_BLOCKS {
        return Err(invalid(format!(
            "{} blocks; a message holds at most {MAX_BLOCKS}",
            r.blocks.len()
        )));
    }
    Ok(r.blocks)
}

fn invalid(what: String) -> AdapterError {
    AdapterError::Invalid(what)
}

fn check(i: usize, what: &str, text: &str, max: usize) -> Result<(), AdapterError> {
    let n = text.chars().count();
    if n > max {
        return Err(invalid(format!(
            "element {i}: {what} has {n} characters; Slack allows {max}"
        )));
    }
    Ok(())
}

fn non_empty(i: usize, what: &str, text: &str) -> Result<(), AdapterError> {
    if text.trim().is_empty() {
        return Err(invalid(format!("element {i}: {what} is empty")));
    }
    Ok(())
}

fn plain(text: &str) -> Value {
    json!({ "type": "plain_text", "text": text, "emoji": true })
}

fn mrkdwn(text: &str) -> Value {
    json!({ "type": "mrkdwn", "text": markdown_to_mrkdwn(text) })
}

#[derive(Default)]
struct Renderer {
    blocks: Vec<Value>,
    action_ids: HashSet<String>,
    tables: usize,
}

impl Renderer {
    fn element(&mut self, i: usize, element: &Element) -> Result<(), AdapterError> {
        let block = match element {
            Element::Header { text } => {
                non_empty(i, "the header", text)?;
                check(i, "the header", text, MAX_HEADER)?;
                json!({ "type": "header", "text": plain(text) })
            }
            Element::Section { text } => {
                non_empty(i, "the section", text)?;
                let text = markdown_to_mrkdwn(text);
                check(i, "the section", &text, MAX_SECTION)?;
                json!({ "type": "section", "text": { "type": "mrkdwn", "text": text } })
            }
            Element::Fields { fields } => {
                if fields.is_empty() || fields.len() > MAX_FIELDS {
                    return Err(invalid(format!(
                        "element {i}: {} fields; a section holds 1 to {MAX_FIELDS}",
                        fields.len()
                    )));
                }
                let fields = fields
                    .iter()
                    .map(|f| {
                        let text = format!(
                            "*{}*\n{}",
                            crate::mrkdwn::escape(&f.label),
                            markdown_to_mrkdwn(&f.value)
                        );
                        check(i, "a field", &text, MAX_FIELD)?;
                        Ok(json!({ "type": "mrkdwn", "text": text }))
                    })
                    .collect::<Result<Vec<_>, AdapterError>>()?;
                json!({ "type": "section", "fields": fields })
            }
            Element::Image(image) => {
                check(i, "the image URL", &image.url, MAX_URL)?;
                non_empty(i, "the image's alt text", &image.alt)?;
                check(i, "the image's alt text", &image.alt, MAX_ALT)?;
                let mut block =
                    json!({ "type": "image", "image_url": image.url, "alt_text": image.alt });
                if let Some(title) = &image.title {
                    check(i, "the image's title", title, MAX_ALT)?;
                    block["title"] = plain(title);
                }
                block
            }
            Element::Divider => json!({ "type": "divider" }),
            Element::Context { text } => {
                non_empty(i, "the context line", text)?;
                let text = markdown_to_mrkdwn(text);
                check(i, "the context line", &text, MAX_SECTION)?;
                json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": text }] })
            }
            Element::Actions { elements } => {
                if elements.is_empty() || elements.len() > MAX_ACTIONS {
                    return Err(invalid(format!(
                        "element {i}: {} actions; an actions block holds 1 to {MAX_ACTIONS}",
                        elements.len()
                    )));
                }
                let elements = elements
                    .iter()
                    .map(|e| match e {
                        ActionElement::Button(b) => self.button(i, b),
                        ActionElement::Select(s) => self.select(i, s),
                        _ => Err(invalid(format!(
                            "element {i}: an action element this version cannot render"
                        ))),
                    })
                    .collect::<Result<Vec<_>, AdapterError>>()?;
                json!({ "type": "actions", "elements": elements })
            }
            Element::Table(table) => {
                self.tables += 1;
                if self.tables > 1 {
                    return Err(invalid(format!(
                        "element {i}: a second table; a message holds one"
                    )));
                }
                let columns = table.headers.len();
                if columns == 0 || columns > MAX_TABLE_COLUMNS {
                    return Err(invalid(format!(
                        "element {i}: {columns} columns; a table holds 1 to {MAX_TABLE_COLUMNS}"
                    )));
                }
                if table.rows.len() + 1 > MAX_TABLE_ROWS {
                    return Err(invalid(format!(
                        "element {i}: {} rows with the header; a table holds {MAX_TABLE_ROWS}",
                        table.rows.len() + 1
                    )));
                }
                let cell = |text: &str| json!({ "type": "raw_text", "text": text });
                let mut rows = vec![table.headers.iter().map(|h| cell(h)).collect::<Vec<_>>()];
                for (r, row) in table.rows.iter().enumerate() {
                    if row.len() > columns {
                        return Err(invalid(format!(
                            "element {i}: row {r} has {} cells for {columns} columns",
                            row.len()
                        )));
                    }
                    let mut cells: Vec<Value> = row.iter().map(|c| cell(c)).collect();
                    cells.resize_with(columns, || cell(""));
                    rows.push(cells);
                }
                json!({ "type": "table", "rows": rows })
            }
            Element::Raw {
                platform, block, ..
            } => {
                if platform.as_str() != chat_core::Platform::SLACK.as_str() {
                    return Ok(());
                }
                block.clone()
            }
            // An element added to the model later renders as its text.
            other => {
                let text = Card::new().push(other.clone()).fallback_text();
                if text.is_empty() {
                    return Ok(());
                }
                json!({ "type": "section", "text": mrkdwn(&text) })
            }
        };
        self.blocks.push(block);
        Ok(())
    }

    fn action_id(&mut self, i: usize, id: &str) -> Result<(), AdapterError> {
        non_empty(i, "an action_id", id)?;
        check(i, "an action_id", id, MAX_ACTION_ID)?;
        if !self.action_ids.insert(id.to_owned()) {
            return Err(invalid(format!(
                "element {i}: action_id `{id}` is used twice; each must be unique in a message"
            )));
        }
        Ok(())
    }

    fn button(&mut self, i: usize, b: &Button) -> Result<Value, AdapterError> {
        non_empty(i, "a button's text", &b.text)?;
        check(i, "a button's text", &b.text, MAX_BUTTON_TEXT)?;
        let mut out = json!({ "type": "button", "text": plain(&b.text) });
        match (&b.action_id, &b.url) {
            (None, None) => {
                return Err(invalid(format!(
                    "element {i}: button `{}` has neither an action_id nor a URL",
                    b.text
                )));
            }
            (Some(id), _) => {
                self.action_id(i, id)?;
                out["action_id"] = json!(id);
            }
            (None, Some(_)) => {}
        }
        if let Some(url) = &b.url {
            check(i, "a button's URL", url, MAX_URL)?;
            out["url"] = json!(url);
        }
        if let Some(value) = &b.value {
            check(i, "a button's value", value, MAX_BUTTON_VALUE)?;
            out["value"] = json!(value);
        }
        match b.style {
            ButtonStyle::Primary => out["style"] = json!("primary"),
            ButtonStyle::Danger => out["style"] = json!("danger"),
            _ => {}
        }
        Ok(out)
    }

    fn select(&mut self, i: usize, s: &Select) -> Result<Value, AdapterError> {
        self.action_id(i, &s.action_id)?;
        check(i, "a select's placeholder", &s.placeholder, MAX_PLACEHOLDER)?;
        if s.options.is_empty() || s.options.len() > MAX_OPTIONS {
            return Err(invalid(format!(
                "element {i}: select `{}` has {} options; Slack allows 1 to {MAX_OPTIONS}",
                s.action_id,
                s.options.len()
            )));
        }
        let option = |o: &chat_core::card::SelectOption| -> Result<Value, AdapterError> {
            non_empty(i, "an option's text", &o.text)?;
            check(i, "an option's text", &o.text, MAX_OPTION_TEXT)?;
            check(i, "an option's value", &o.value, MAX_OPTION_VALUE)?;
            Ok(json!({ "text": plain(&o.text), "value": o.value }))
        };
        let options = s
            .options
            .iter()
            .map(option)
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = json!({
            "type": "static_select",
            "action_id": s.action_id,
            "placeholder": plain(&s.placeholder),
            "options": options,
        });
        if let Some(initial) = &s.initial {
            let chosen = s.options.iter().find(|o| &o.value == initial).ok_or_else(|| {
                invalid(format!(
                    "element {i}: select `{}` starts at `{initial}`, which is not one of its options",
                    s.action_id
                ))
            })?;
            out["initial_option"] = option(chosen)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use chat_core::card::{Field, Image, Table};

    use super::*;

    fn invalid_text(card: &Card) -> String {
        match render(card) {
            Err(AdapterError::Invalid(what)) => what,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn every_element_renders_as_its_documented_block() -> Result<(), AdapterError> {
        let card = Card::new()
            .header("Deploy")
            .section("**api** is live")
            .fields([Field::new("Version", "1.2"), Field::new("Region", "eu")])
            .image(Image::new("https://e.x/c.png", "a chart").title("Load"))
            .divider()
            .context("by _ana_")
            .actions([
                Button::new("again", "Again").value("v1").primary().into(),
                Button::link("Open", "https://e.x").into(),
                Select::new("pick", "Pick")
                    .option("One", "1")
                    .option("Two", "2")
                    .initial("2")
                    .into(),
            ])
            .table(Table::new(["a", "b"]).row(["1"]))
            .raw(
                chat_core::Platform::SLACK,
                json!({"type": "divider", "block_id": "mine"}),
                "",
            )
            .raw(chat_core::Platform::LINEAR, json!({"x": 1}), "linear only");
        let b = render(&card)?;
        assert_eq!(b.len(), 9, "the Linear raw block is left out");
        assert_eq!(
            b[0],
            json!({"type": "header", "text": {"type": "plain_text", "text": "Deploy", "emoji": true}})
        );
        assert_eq!(
            b[1]["text"],
            json!({"type": "mrkdwn", "text": "*api* is live"})
        );
        assert_eq!(b[2]["fields"][0]["text"], "*Version*\n1.2");
        assert_eq!(b[3]["image_url"], "https://e.x/c.png");
        assert_eq!(b[3]["alt_text"], "a chart");
        assert_eq!(b[3]["title"]["text"], "Load");
        assert_eq!(b[4]["type"], "divider");
        assert_eq!(
            b[5]["elements"][0],
            json!({"type": "mrkdwn", "text": "by _ana_"})
        );
        let actions = &b[6]["elements"];
        assert_eq!(actions[0]["action_id"], "again");
        assert_eq!(actions[0]["value"], "v1");
        assert_eq!(actions[0]["style"], "primary");
        assert_eq!(actions[1]["url"], "https://e.x");
        assert!(actions[1].get("action_id").is_none());
        assert_eq!(actions[2]["type"], "static_select");
        assert_eq!(actions[2]["options"].as_array().map(Vec::len), Some(2));
        assert_eq!(actions[2]["initial_option"]["value"], "2");
        assert_eq!(b[7]["type"], "table");
        assert_eq!(b[7]["rows"][1][1], json!({"type": "raw_text", "text": ""}));
        assert_eq!(b[8]["block_id"], "mine");
        Ok(())
    }

    #[test]
    fn limits_are_checked_before_any_call() {
        let mut many = Card::new();
        for _ in 0..51 {
            many = many.divider();
        }
        assert!(invalid_text(&many).contains("51 blocks"));
        let mut fifty = Card::new();
        for _ in 0..50 {
            fifty = fifty.divider();
        }
        assert!(render(&fifty).is_ok());

        assert!(invalid_text(&Card::new().section("x".repeat(3001))).contains("3001 characters"));
        assert!(
            render(&Card::new().section("é".repeat(3000))).is_ok(),
            "characters, not bytes"
        );
        assert!(invalid_text(&Card::new().header("x".repeat(151))).contains("header"));
        let fields = (0..11).map(|n| Field::new(n.to_string(), "v"));
        assert!(invalid_text(&Card::new().fields(fields)).contains("11 fields"));
        let buttons = (0..26).map(|n| Button::new(n.to_string(), "b").into());
        assert!(invalid_text(&Card::new().actions(buttons)).contains("26 actions"));
        let long = Card::new().actions([Button::new("a", "x".repeat(76)).into()]);
        assert!(invalid_text(&long).contains("button's text"));
        let twice = Card::new()
            .actions([Button::new("a", "One").into()])
            .actions([Button::new("a", "Two").into()]);
        assert!(invalid_text(&twice).contains("used twice"));
        let nowhere = Card::new().actions([Button::link("x", "u").into()]);
        assert!(render(&nowhere).is_ok());
        let bad_initial =
            Card::new().actions([Select::new("s", "p").option("a", "1").initial("2").into()]);
        assert!(invalid_text(&bad_initial).contains("not one of its options"));
        let two_tables = Card::new()
            .table(Table::new(["a"]))
            .table(Table::new(["b"]));
        assert!(invalid_text(&two_tables).contains("second table"));
        let wide = Table::new(["a"]).row(["1", "2"]);
        assert!(invalid_text(&Card::new().table(wide)).contains("2 cells"));
        assert!(invalid_text(&Card::new().section("  ")).contains("empty"));
    }
}
