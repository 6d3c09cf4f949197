//! [`Card`] → Markdown, Linear's only rich format: every element becomes
//! readable Markdown, link buttons become links, and interactive elements
//! (action buttons, selects), which Linear cannot show, are omitted with a
//! note naming them.
//!
//! ```
//! use chat_core::card::{Button, Card, Field};
//!
//! let md = chat_linear::markdown::render(
//!     &Card::new()
//!         .header("Deploy")
//!         .fields([Field::new("Version", "1.2")])
//!         .actions([Button::link("Open", "https://e.x").into(), Button::new("undo", "Undo").into()]),
//! );
//! assert_eq!(
//!     md,
//!     "### Deploy\n\n**Version:** 1.2\n\n[Open](https://e.x)\n\n_Not shown on Linear: Undo_"
//! );
//! ```

use chat_core::card::{ActionElement, Card, Element};

/// Renders a card as Linear Markdown (blocks separated by a blank line).
pub fn render(card: &Card) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for element in card.elements() {
        match element {
            Element::Header { text } => blocks.push(format!("### {}", one_line(text))),
            Element::Section { text } | Element::Context { text } => blocks.push(text.clone()),
            Element::Fields { fields } => blocks.push(
                fields
                    .iter()
                    .map(|f| format!("**{}:** {}", one_line(&f.label), f.value))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Element::Image(image) => {
                let mut block = String::new();
                if let Some(title) = &image.title {
                    block.push_str(&format!("**{}**\n", one_line(title)));
                }
                block.push_str(&format!("![{}]({})", one_line(&image.alt), image.url));
                blocks.push(block);
            }
            Element::Divider => blocks.push("---".to_owned()),
            Element::Actions { elements } => {
                let mut links = Vec::new();
                let mut omitted = Vec::new();
                for e in elements {
                    match e {
                        ActionElement::Button(b) => match &b.url {
                            Some(url) => links.push(format!("[{}]({url})", one_line(&b.text))),
                            None => omitted.push(one_line(&b.text)),
                        },
                        ActionElement::Select(s) => omitted.push(one_line(&s.placeholder)),
                        _ => {}
                    }
                }
                if !links.is_empty() {
                    blocks.push(links.join(" · "));
                }
                if !omitted.is_empty() {
                    blocks.push(format!("_Not shown on Linear: {}_", omitted.join(", ")));
                }
            }
            Element::Table(table) => {
                let row = |cells: &[String], width: usize| {
                    let mut cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
                    cells.resize(width, String::new());
                    format!("| {} |", cells.join(" | "))
                };
                let width = table.headers.len();
                let mut lines = vec![
                    row(&table.headers, width),
                    format!("|{}|", vec![" --- "; width].join("|")),
                ];
                lines.extend(table.rows.iter().map(|r| row(r, width.max(r.len()))));
                blocks.push(lines.join("\n"));
            }
            Element::Raw { fallback, .. } => {
                if !fallback.is_empty() {
                    blocks.push(fallback.clone());
                }
            }
            other => {
                let text = Card::new().push(other.clone()).fallback_text();
                if !text.is_empty() {
                    blocks.push(text);
                }
            }
        }
    }
    blocks.join("\n\n")
}

/// Text that must stay on one line (a heading, a label, a link text).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table cell: one line, its pipes escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use chat_core::card::{Button, Field, Image, Select, Table};

    use super::*;

    #[test]
    fn every_element_degrades_to_readable_markdown() {
        let card = Card::new()
            .header("Deploy\nfinished")
            .section("**api** is live")
            .fields([Field::new("Version", "1.2"), Field::new("Region", "eu")])
            .image(Image::new("https://e.x/c.png", "a chart").title("Load"))
            .divider()
            .context("by ana")
            .actions([
                Button::new("again", "Again").into(),
                Button::link("Open", "https://e.x").into(),
                Select::new("pick", "Pick one").option("a", "1").into(),
            ])
            .table(Table::new(["a", "b|c"]).row(["1"]))
            .raw(
                chat_core::Platform::SLACK,
                serde_json::json!({}),
                "see Slack",
            );
        assert_eq!(
            render(&card),
            "### Deploy finished\n\n**api** is live\n\n**Version:** 1.2\n**Region:** eu\n\n\
             **Load**\n![a chart](https://e.x/c.png)\n\n---\n\nby ana\n\n[Open](https://e.x)\n\n\
             _Not shown on Linear: Again, Pick one_\n\n| a | b\\|c |\n| --- | --- |\n| 1 |  |\n\nsee Slack"
        );
    }
}
