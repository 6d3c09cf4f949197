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

use chat_core::card::Card;

/// Renders a card as Linear Markdown (blocks separated by a blank line):
/// the card's own Markdown, with each row of actions as its link buttons and
/// a note naming what Linear cannot show.
pub fn render(card: &Card) -> String {
    card.to_link_markdown("Linear")
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
