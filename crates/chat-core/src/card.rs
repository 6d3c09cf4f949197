//! The portable message model: a [`Card`] is a small set of elements every
//! adapter can render — Slack as Block Kit, Linear as Markdown — with a
//! plain-text fallback for notifications and for platforms without rich
//! messages. Types only; no I/O.
//!
//! ```
//! use chat_core::card::{Button, Card, Field, Table};
//!
//! let card = Card::new()
//!     .header("Deploy finished")
//!     .section("*api* is live on `prod`.")
//!     .fields([Field::new("Version", "1.4.2"), Field::new("Took", "3 min")])
//!     .divider()
//!     .table(Table::new(["Region", "Status"]).row(["eu-west-1", "ok"]))
//!     .context("Triggered by @ana")
//!     .actions([
//!         Button::new("rollback", "Roll back").value("1.4.1").danger().into(),
//!         Button::link("Open dashboard", "https://example.com/d").into(),
//!     ]);
//! assert_eq!(card.elements().len(), 7);
//! assert!(card.fallback_text().starts_with("Deploy finished"));
//! ```

use serde::{Deserialize, Serialize};

/// A rich message: elements in order, and the plain text that stands for them
/// where rich content cannot show (notifications, screen readers, platforms
/// without cards). Build it with the chained methods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Card {
    /// The elements, top to bottom.
    pub elements: Vec<Element>,
    /// The plain-text fallback; derived from the elements when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// One element of a [`Card`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Element {
    /// A title line (plain text).
    Header {
        /// The title.
        text: String,
    },
    /// A paragraph of CommonMark.
    Section {
        /// The text (Markdown).
        text: String,
    },
    /// Label / value pairs, shown in two columns where the platform can.
    Fields {
        /// The pairs.
        fields: Vec<Field>,
    },
    /// An image by URL.
    Image(Image),
    /// A horizontal rule.
    Divider,
    /// A line of small print (Markdown).
    Context {
        /// The text.
        text: String,
    },
    /// A row of interactive elements.
    Actions {
        /// The buttons and selects, in order.
        elements: Vec<ActionElement>,
    },
    /// A table of plain-text cells.
    Table(Table),
    /// A platform's own block, passed through as is by that platform's
    /// adapter (a Slack Block Kit block object) and replaced by `fallback`
    /// (Markdown) elsewhere: for what the portable elements do not cover.
    Raw {
        /// The platform whose adapter renders `block` (`slack`).
        platform: String,
        /// The platform's JSON for the block.
        block: serde_json::Value,
        /// What other platforms show instead (Markdown; may be empty).
        fallback: String,
    },
}

/// A label / value pair of [`Element::Fields`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Field {
    /// The label (plain text).
    pub label: String,
    /// The value (Markdown).
    pub value: String,
}

impl Field {
    /// A label / value pair.
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            value: value.into(),
        }
    }
}

/// An image element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Image {
    /// Its public URL.
    pub url: String,
    /// Text describing it, for screen readers and fallbacks.
    pub alt: String,
    /// An optional title shown above it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Image {
    /// An image at `url` described by `alt`.
    pub fn new(url: impl Into<String>, alt: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            alt: alt.into(),
            title: None,
        }
    }

    /// With a title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// A table: a header row and rows of plain-text cells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Table {
    /// The column headers.
    pub headers: Vec<String>,
    /// The rows; each as many cells as there are headers (missing cells show
    /// empty, extra cells are an error for renderers that check).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<I, S>(headers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// With one more row.
    #[must_use]
    pub fn row<I, S>(mut self, cells: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }
}

/// An interactive element of [`Element::Actions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ActionElement {
    /// A button: an action (`action_id` and `value` come back in the
    /// platform's interaction payload) or a link.
    Button(Button),
    /// A menu of fixed options.
    Select(Select),
}

/// How a button is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ButtonStyle {
    /// The platform's default.
    #[default]
    Default,
    /// The affirmative action (Slack: green).
    Primary,
    /// A destructive action (Slack: red).
    Danger,
}

/// A button. With an `action_id` it sends an action event when clicked; with a
/// `url` it opens the link (Slack also sends the action, if it has an id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Button {
    /// The id handlers route on (`Bot::on_action`); unique within a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
    /// The label (plain text).
    pub text: String,
    /// The value sent back with the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A link the button opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How it is drawn.
    #[serde(default)]
    pub style: ButtonStyle,
}

impl Button {
    /// An action button.
    pub fn new(action_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            action_id: Some(action_id.into()),
            text: text.into(),
            value: None,
            url: None,
            style: ButtonStyle::Default,
        }
    }

    /// A link button.
    pub fn link(text: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            action_id: None,
            text: text.into(),
            value: None,
            url: Some(url.into()),
            style: ButtonStyle::Default,
        }
    }

    /// With the value sent back when clicked.
    #[must_use]
    pub fn value(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self
    }

    /// With a link it opens.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Drawn as the primary action.
    #[must_use]
    pub fn primary(mut self) -> Self {
        self.style = ButtonStyle::Primary;
        self
    }

    /// Drawn as a destructive action.
    #[must_use]
    pub fn danger(mut self) -> Self {
        self.style = ButtonStyle::Danger;
        self
    }
}

impl From<Button> for ActionElement {
    fn from(b: Button) -> Self {
        Self::Button(b)
    }
}

/// A menu of fixed options; the chosen option's value comes back with the
/// action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Select {
    /// The id handlers route on; unique within a message.
    pub action_id: String,
    /// Shown while nothing is chosen (plain text).
    pub placeholder: String,
    /// The options.
    pub options: Vec<SelectOption>,
    /// The value of the option chosen at first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<String>,
}

impl Select {
    /// A select with no options yet.
    pub fn new(action_id: impl Into<String>, placeholder: impl Into<String>) -> Self {
        Self {
            action_id: action_id.into(),
            placeholder: placeholder.into(),
            options: Vec::new(),
            initial: None,
        }
    }

    /// With one more option.
    #[must_use]
    pub fn option(mut self, text: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.push(SelectOption {
            text: text.into(),
            value: value.into(),
        });
        self
    }

    /// With the option of `value` chosen at first.
    #[must_use]
    pub fn initial(mut self, value: impl Into<String>) -> Self {
        self.initial = Some(value.into());
        self
    }
}

impl From<Select> for ActionElement {
    fn from(s: Select) -> Self {
        Self::Select(s)
    }
}

/// One option of a [`Select`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SelectOption {
    /// Its label (plain text).
    pub text: String,
    /// The value sent back when it is chosen.
    pub value: String,
}

impl Card {
    /// The card as CommonMark, blocks separated by a blank line — what a
    /// platform without rich layout shows (Linear, Telegram, WhatsApp, a
    /// GitHub comment): a header as a `###` heading, sections and context as
    /// they are, fields as `**label:** value` lines, an image as an image
    /// link under its title, a divider as `---`, a table as a Markdown
    /// table, a raw block as its fallback. Each row of actions is what
    /// `actions` makes of it (`None` leaves it out): a platform with buttons
    /// of its own renders them apart, one without shows
    /// [`link_buttons`](Self::link_buttons).
    ///
    /// ```
    /// use chat_core::card::{Button, Card, Field};
    /// let card = Card::new()
    ///     .header("Deploy")
    ///     .fields([Field::new("Version", "1.2")])
    ///     .actions([Button::link("Open", "https://e.x").into(), Button::new("undo", "Undo").into()]);
    /// assert_eq!(
    ///     card.to_markdown(Card::link_buttons),
    ///     "### Deploy\n\n**Version:** 1.2\n\n[Open](https://e.x)"
    /// );
    /// assert_eq!(card.to_markdown(|_| None), "### Deploy\n\n**Version:** 1.2");
    /// ```
    pub fn to_markdown(&self, actions: impl Fn(&[ActionElement]) -> Option<String>) -> String {
        let mut blocks: Vec<String> = Vec::new();
        for element in &self.elements {
            match element {
                Element::Header { text } => blocks.push(format!("### {}", one_line(text))),
                Element::Section { text } | Element::Context { text } => {
                    blocks.push(text.clone());
                }
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
                Element::Actions { elements } => blocks.extend(actions(elements)),
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
            }
        }
        blocks.join("\n\n")
    }

    /// The link buttons of a row of actions as Markdown links joined by
    /// ` · ` (`None` when it has none): what a platform without buttons can
    /// show of them.
    pub fn link_buttons(elements: &[ActionElement]) -> Option<String> {
        let links: Vec<String> = elements
            .iter()
            .filter_map(|e| match e {
                ActionElement::Button(Button {
                    url: Some(url),
                    text,
                    ..
                }) => Some(format!("[{}]({url})", one_line(text))),
                _ => None,
            })
            .collect();
        (!links.is_empty()).then(|| links.join(" · "))
    }

    /// The card as Markdown for a platform that shows neither buttons nor
    /// selects (Linear, a GitHub comment): [`to_markdown`](Self::to_markdown)
    /// with each row of actions as its [`link_buttons`](Self::link_buttons)
    /// and a note naming what `platform` cannot show.
    ///
    /// ```
    /// use chat_core::card::{Button, Card};
    /// let card = Card::new()
    ///     .header("Deploy")
    ///     .actions([Button::link("Open", "https://e.x").into(), Button::new("undo", "Undo").into()]);
    /// assert_eq!(
    ///     card.to_link_markdown("GitHub"),
    ///     "### Deploy\n\n[Open](https://e.x)\n\n_Not shown on GitHub: Undo_"
    /// );
    /// ```
    pub fn to_link_markdown(&self, platform: &str) -> String {
        self.to_markdown(|elements| {
            let mut blocks = Vec::new();
            if let Some(links) = Self::link_buttons(elements) {
                blocks.push(links);
            }
            let omitted: Vec<String> = elements
                .iter()
                .filter_map(|e| match e {
                    ActionElement::Button(b) if b.url.is_none() => Some(one_line(&b.text)),
                    ActionElement::Select(s) => Some(one_line(&s.placeholder)),
                    _ => None,
                })
                .collect();
            if !omitted.is_empty() {
                blocks.push(format!("_Not shown on {platform}: {}_", omitted.join(", ")));
            }
            (!blocks.is_empty()).then(|| blocks.join("\n\n"))
        })
    }

    /// An empty card.
    pub fn new() -> Self {
        Self::default()
    }

    /// The elements, top to bottom.
    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// With one more element.
    #[must_use]
    pub fn push(mut self, element: Element) -> Self {
        self.elements.push(element);
        self
    }

    /// With a title line.
    #[must_use]
    pub fn header(self, text: impl Into<String>) -> Self {
        self.push(Element::Header { text: text.into() })
    }

    /// With a paragraph of Markdown.
    #[must_use]
    pub fn section(self, text: impl Into<String>) -> Self {
        self.push(Element::Section { text: text.into() })
    }

    /// With label / value pairs.
    #[must_use]
    pub fn fields(self, fields: impl IntoIterator<Item = Field>) -> Self {
        self.push(Element::Fields {
            fields: fields.into_iter().collect(),
        })
    }

    /// With an image.
    #[must_use]
    pub fn image(self, image: Image) -> Self {
        self.push(Element::Image(image))
    }

    /// With a horizontal rule.
    #[must_use]
    pub fn divider(self) -> Self {
        self.push(Element::Divider)
    }

    /// With a line of small print (Markdown).
    #[must_use]
    pub fn context(self, text: impl Into<String>) -> Self {
        self.push(Element::Context { text: text.into() })
    }

    /// With a row of buttons and selects.
    #[must_use]
    pub fn actions(self, elements: impl IntoIterator<Item = ActionElement>) -> Self {
        self.push(Element::Actions {
            elements: elements.into_iter().collect(),
        })
    }

    /// With a table.
    #[must_use]
    pub fn table(self, table: Table) -> Self {
        self.push(Element::Table(table))
    }

    /// With a platform's own block (see [`Element::Raw`]).
    #[must_use]
    pub fn raw(
        self,
        platform: crate::Platform,
        block: serde_json::Value,
        fallback: impl Into<String>,
    ) -> Self {
        self.push(Element::Raw {
            platform: platform.as_str().to_owned(),
            block,
            fallback: fallback.into(),
        })
    }

    /// With this plain-text fallback instead of the derived one.
    #[must_use]
    pub fn fallback(mut self, text: impl Into<String>) -> Self {
        self.fallback = Some(text.into());
        self
    }

    /// The plain text that stands for the card: the explicit
    /// [`fallback`](Self::fallback), or else its header, sections, fields,
    /// context lines and tables, one per line, and its actions' labels.
    pub fn fallback_text(&self) -> String {
        if let Some(text) = &self.fallback {
            return text.clone();
        }
        let mut lines: Vec<String> = Vec::new();
        for element in &self.elements {
            match element {
                Element::Header { text }
                | Element::Section { text }
                | Element::Context { text } => {
                    lines.push(text.clone());
                }
                Element::Fields { fields } => {
                    lines.extend(fields.iter().map(|f| format!("{}: {}", f.label, f.value)));
                }
                Element::Image(image) => lines.push(image.alt.clone()),
                Element::Table(table) => {
                    lines.push(table.headers.join(" | "));
                    lines.extend(table.rows.iter().map(|r| r.join(" | ")));
                }
                Element::Actions { elements } => {
                    let labels: Vec<&str> = elements
                        .iter()
                        .map(|e| match e {
                            ActionElement::Button(b) => b.text.as_str(),
                            ActionElement::Select(s) => s.placeholder.as_str(),
                        })
                        .collect();
                    if !labels.is_empty() {
                        lines.push(format!("[{}]", labels.join("] [")));
                    }
                }
                Element::Raw { fallback, .. } => {
                    if !fallback.is_empty() {
                        lines.push(fallback.clone());
                    }
                }
                Element::Divider => {}
            }
        }
        lines.retain(|l| !l.is_empty());
        lines.join("\n")
    }
}

/// Text that must stay on one line (a heading, a label, a link text).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A Markdown table cell: one line, its pipes escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    fn sample() -> Card {
        Card::new()
            .header("Title")
            .section("Body *md*")
            .fields([Field::new("A", "1")])
            .image(Image::new("https://x/y.png", "a chart"))
            .divider()
            .context("small")
            .actions([
                Button::new("go", "Go").value("v").primary().into(),
                Select::new("pick", "Pick one")
                    .option("One", "1")
                    .initial("1")
                    .into(),
            ])
            .table(Table::new(["h1", "h2"]).row(["a", "b"]))
    }

    #[test]
    fn the_fallback_reads_every_element_in_order() {
        assert_eq!(
            sample().fallback_text(),
            "Title\nBody *md*\nA: 1\na chart\nsmall\n[Go] [Pick one]\nh1 | h2\na | b"
        );
        assert_eq!(sample().fallback("short").fallback_text(), "short");
    }

    #[test]
    fn a_card_round_trips_through_json() -> Result<(), serde_json::Error> {
        let card = sample().raw(
            crate::Platform::SLACK,
            serde_json::json!({"type": "divider"}),
            "",
        );
        let json = serde_json::to_value(&card)?;
        assert_eq!(json["elements"][0]["type"], "header");
        assert_eq!(json["elements"][6]["elements"][0]["type"], "button");
        let back: Card = serde_json::from_value(json)?;
        assert_eq!(back, card);
        Ok(())
    }
}
