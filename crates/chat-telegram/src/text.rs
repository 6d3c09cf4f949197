//! Telegram's formatted text both ways: a message is plain text plus
//! [entities](https://core.telegram.org/bots/api#messageentity) — bold, links,
//! mentions, code — placed by UTF-16 offsets.
//!
//! Out: Markdown becomes text and entities (not `MarkdownV2`, whose every
//! `.`, `-` and `!` outside an entity must be escaped: a stray one is a 400),
//! and a text over Telegram's 4,096-character limit is split at line or word
//! ends, each entity cut where its part ends. In: a message's text and
//! entities become the portable message's plain text, Markdown, mentions and
//! links.
//!
//! ```
//! let sent = chat_telegram::text::markdown("**Deployed** `api` — see [logs](https://x.example)");
//! assert_eq!(sent.text, "Deployed api — see logs");
//! let kinds: Vec<&str> = sent.entities.iter().map(|e| e.kind.as_str()).collect();
//! assert_eq!(kinds, ["bold", "code", "text_link"]);
//! ```

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use serde::Serialize;

/// The longest text of one message, in UTF-16 code units ("1-4096
/// characters after entities parsing", `sendMessage`).
pub const MAX_TEXT: usize = 4096;

/// An entity of an outgoing message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OutEntity {
    /// `bold`, `italic`, `strikethrough`, `code`, `pre`, `text_link`,
    /// `blockquote`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Where it starts, in UTF-16 code units.
    pub offset: usize,
    /// How long it is, in UTF-16 code units.
    pub length: usize,
    /// A `text_link`'s URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A `pre` block's language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// A message's text and its entities, ready for `sendMessage`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Formatted {
    /// The text, with no markup.
    pub text: String,
    /// Its entities.
    pub entities: Vec<OutEntity>,
}

impl Formatted {
    /// Plain text, no entities.
    pub fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            entities: Vec::new(),
        }
    }

    /// The text's length in UTF-16 code units (what Telegram counts).
    pub fn len_utf16(&self) -> usize {
        utf16_len(&self.text)
    }
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

struct Writer {
    out: Formatted,
    at: usize,
    open: Vec<(String, usize, Option<String>, Option<String>)>,
    /// Ordered lists' next numbers, `None` for a bullet list.
    lists: Vec<Option<u64>>,
}

impl Writer {
    fn push(&mut self, s: &str) {
        self.at += utf16_len(s);
        self.out.text.push_str(s);
    }

    fn open(&mut self, kind: &str, url: Option<String>, language: Option<String>) {
        self.open.push((kind.to_owned(), self.at, url, language));
    }

    fn close(&mut self) {
        if let Some((kind, start, url, language)) = self.open.pop()
            && self.at > start
        {
            self.out.entities.push(OutEntity {
                kind,
                offset: start,
                length: self.at - start,
                url,
                language,
            });
        }
    }

    fn block_break(&mut self) {
        if !self.out.text.is_empty() && !self.out.text.ends_with("\n\n") {
            let missing = if self.out.text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            self.push(missing);
        }
    }
}

/// CommonMark as Telegram text and entities: emphasis, strong, strike,
/// inline code, code blocks (`pre` with their language), links, headings
/// (bold), block quotes, lists (`•` and numbers). Anything else is its text.
pub fn markdown(md: &str) -> Formatted {
    let mut w = Writer {
        out: Formatted::default(),
        at: 0,
        open: Vec::new(),
        lists: Vec::new(),
    };
    for event in Parser::new_ext(md, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => w.push(&t),
            Event::Code(t) => {
                w.open("code", None, None);
                w.push(&t);
                w.close();
            }
            Event::SoftBreak | Event::HardBreak => w.push("\n"),
            Event::Rule => {
                w.block_break();
                w.push("———");
            }
            Event::Start(Tag::Strong) => w.open("bold", None, None),
            Event::Start(Tag::Emphasis) => w.open("italic", None, None),
            Event::Start(Tag::Strikethrough) => w.open("strikethrough", None, None),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                w.open("text_link", Some(dest_url.into_string()), None);
            }
            Event::Start(Tag::Heading { .. }) => {
                w.block_break();
                w.open("bold", None, None);
            }
            Event::Start(Tag::BlockQuote(_)) => {
                w.block_break();
                w.open("blockquote", None, None);
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                w.block_break();
                let language = match kind {
                    CodeBlockKind::Fenced(l) if !l.is_empty() => Some(l.into_string()),
                    _ => None,
                };
                w.open("pre", None, language);
            }
            Event::Start(Tag::Paragraph) if w.lists.is_empty() => w.block_break(),
            Event::Start(Tag::List(first)) => {
                w.block_break();
                w.lists.push(first);
            }
            Event::Start(Tag::Item) => {
                if !w.out.text.is_empty() && !w.out.text.ends_with('\n') {
                    w.push("\n");
                }
                let depth = w.lists.len().saturating_sub(1);
                w.push(&"  ".repeat(depth));
                let marker = match w.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_owned(),
                };
                w.push(&marker);
            }
            Event::End(TagEnd::List(_)) => {
                w.lists.pop();
            }
            Event::End(
                TagEnd::Strong
                | TagEnd::Emphasis
                | TagEnd::Strikethrough
                | TagEnd::Link
                | TagEnd::Image
                | TagEnd::Heading(_)
                | TagEnd::BlockQuote(_),
            ) => w.close(),
            Event::End(TagEnd::CodeBlock) => {
                // A fenced block's text ends with its newline; the entity
                // does not need it.
                if w.out.text.ends_with('\n') {
                    w.out.text.pop();
                    w.at -= 1;
                }
                w.close();
            }
            _ => {}
        }
    }
    while !w.open.is_empty() {
        w.close();
    }
    let trimmed = w.out.text.trim_end().len();
    w.out.text.truncate(trimmed);
    let end = utf16_len(&w.out.text);
    w.out.entities.retain_mut(|e| {
        e.length = e.length.min(end.saturating_sub(e.offset));
        e.length > 0
    });
    w.out.entities.sort_by_key(|e| e.offset);
    w.out
}

/// `formatted` as messages of at most `max` UTF-16 code units each: cut at
/// the last line end (else word end, else anywhere) before the limit, each
/// entity cut where its part ends and moved to its part's offsets.
pub fn split(formatted: &Formatted, max: usize) -> Vec<Formatted> {
    let max = max.max(1);
    if formatted.len_utf16() <= max {
        return vec![formatted.clone()];
    }
    let mut parts = Vec::new();
    let mut rest = formatted.text.as_str();
    let mut base = 0usize;
    while !rest.is_empty() {
        // The longest prefix within the limit, at a char boundary.
        let mut units = 0;
        let mut fit = rest.len();
        for (i, c) in rest.char_indices() {
            if units + c.len_utf16() > max {
                fit = i;
                break;
            }
            units += c.len_utf16();
        }
        // At least one character, even one wider than the limit.
        let fit = if fit == 0 {
            rest.chars().next().map_or(rest.len(), char::len_utf8)
        } else {
            fit
        };
        let cut = if fit == rest.len() {
            fit
        } else {
            let head = &rest[..fit];
            head.rfind('\n')
                .or_else(|| head.rfind(' '))
                .filter(|&i| i > 0)
                .map_or(fit, |i| i + 1)
        };
        let (piece, after) = rest.split_at(cut);
        let len = utf16_len(piece);
        let entities = formatted
            .entities
            .iter()
            .filter_map(|e| {
                let start = e.offset.max(base);
                let end = (e.offset + e.length).min(base + len);
                (end > start).then(|| OutEntity {
                    offset: start - base,
                    length: end - start,
                    ..e.clone()
                })
            })
            .collect();
        let text = piece.trim_end_matches('\n').to_owned();
        parts.push(Formatted { text, entities });
        base += len;
        rest = after;
    }
    for p in &mut parts {
        let end = p.len_utf16();
        p.entities.retain_mut(|e| {
            e.length = e.length.min(end.saturating_sub(e.offset));
            e.length > 0
        });
    }
    parts.retain(|p| !p.text.is_empty());
    parts
}

/// An incoming entity, in byte offsets of its message's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InEntity {
    pub(crate) kind: String,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) url: Option<String>,
    pub(crate) user: Option<(i64, String)>,
}

/// The byte offset of each UTF-16 offset of `text` (one past the end
/// included); `None` past it or inside a surrogate pair.
pub(crate) fn byte_offset(text: &str, utf16: i64) -> Option<usize> {
    let target = usize::try_from(utf16).ok()?;
    let mut units = 0;
    for (i, c) in text.char_indices() {
        if units == target {
            return Some(i);
        }
        units += c.len_utf16();
        if units > target {
            return None;
        }
    }
    (units == target).then_some(text.len())
}

/// The message's text as Markdown: its entities as Markdown markup.
pub(crate) fn to_markdown(text: &str, entities: &[InEntity]) -> String {
    let mut marks: Vec<(usize, (u8, usize, usize), String)> = Vec::new();
    for (i, e) in entities.iter().enumerate() {
        let (open, close) = match e.kind.as_str() {
            "bold" => ("**".to_owned(), "**".to_owned()),
            "italic" => ("_".to_owned(), "_".to_owned()),
            "strikethrough" => ("~~".to_owned(), "~~".to_owned()),
            "code" => ("`".to_owned(), "`".to_owned()),
            "pre" => ("```\n".to_owned(), "\n```".to_owned()),
            "text_link" => match &e.url {
                Some(url) => ("[".to_owned(), format!("]({url})")),
                None => continue,
            },
            _ => continue,
        };
        // At one spot, what ends closes before what begins opens; of spans
        // opening together the longer opens first, of spans closing
        // together the shorter closes first (of equal ones, the last
        // opened), so they nest.
        let len = e.end.saturating_sub(e.start);
        marks.push((e.start, (1, usize::MAX - len, i), open));
        marks.push((e.end, (0, len, usize::MAX - i), close));
    }
    marks.sort_by_key(|(at, order, _)| (*at, *order));
    let mut out = String::with_capacity(text.len() + marks.len() * 2);
    let mut last = 0;
    for (at, _, mark) in marks {
        if at < last || at > text.len() {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(&mark);
        last = at;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_text_and_entities_in_utf16() {
        let f = markdown(
            "## Plan\n\n1. **ship** it 🚀\n2. _check_ [it](https://x.example)\n\n```rust\nfn main() {}\n```",
        );
        assert_eq!(f.text, "Plan\n\n1. ship it 🚀\n2. check it\n\nfn main() {}");
        let got: Vec<(&str, usize, usize)> = f
            .entities
            .iter()
            .map(|e| (e.kind.as_str(), e.offset, e.length))
            .collect();
        // The rocket is two UTF-16 units: what follows it moves by two.
        assert_eq!(
            got,
            [
                ("bold", 0, 4),
                ("bold", 9, 4),
                ("italic", 23, 5),
                ("text_link", 29, 2),
                ("pre", 33, 12),
            ]
        );
        assert_eq!(f.entities[4].language.as_deref(), Some("rust"));
    }

    #[test]
    fn a_long_text_splits_at_line_ends_with_its_entities_cut() {
        let line = format!("**{}**\n", "a".repeat(99));
        let f = markdown(&line.repeat(100));
        assert!(f.len_utf16() > MAX_TEXT);
        let parts = split(&f, MAX_TEXT);
        assert!(parts.len() >= 3);
        for p in &parts {
            assert!(p.len_utf16() <= MAX_TEXT);
            assert!(p.text.lines().all(|l| l.len() == 99), "cut inside a line");
            for e in &p.entities {
                assert!(e.offset + e.length <= p.len_utf16());
            }
        }
        let total: usize = parts.iter().map(|p| p.entities.len()).sum();
        assert_eq!(total, 100);
    }

    #[test]
    fn one_word_longer_than_the_limit_is_cut_anywhere_on_a_char() {
        let f = Formatted::plain("é".repeat(10));
        let parts = split(&f, 3);
        let texts: Vec<&str> = parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["ééé", "ééé", "ééé", "é"]);
    }

    #[test]
    fn entities_over_one_span_nest_in_markdown() {
        let e = |kind: &str, start: usize, end: usize| InEntity {
            kind: kind.to_owned(),
            start,
            end,
            url: None,
            user: None,
        };
        // Bold and italic over the same word; italic inside a longer bold.
        assert_eq!(
            to_markdown("hey", &[e("bold", 0, 3), e("italic", 0, 3)]),
            "**_hey_**"
        );
        assert_eq!(
            to_markdown("a big deal", &[e("italic", 2, 5), e("bold", 0, 10)]),
            "**a _big_ deal**"
        );
        assert_eq!(
            to_markdown("a big", &[e("italic", 2, 5), e("bold", 0, 5)]),
            "**a _big_**"
        );
    }

    #[test]
    fn utf16_offsets_map_to_bytes() {
        let t = "a🚀b";
        assert_eq!(byte_offset(t, 0), Some(0));
        assert_eq!(byte_offset(t, 1), Some(1));
        assert_eq!(byte_offset(t, 2), None, "inside the pair");
        assert_eq!(byte_offset(t, 3), Some(5));
        assert_eq!(byte_offset(t, 4), Some(6));
        assert_eq!(byte_offset(t, 5), None);
        assert_eq!(byte_offset(t, -1), None);
    }

    proptest::proptest! {
        /// Any Markdown renders to entities inside its text, and splits
        /// into parts within the limit whose texts make up the whole.
        #[test]
        fn any_markdown_renders_and_splits(md in "([a-z🚀é *_`~\\[\\]()#>\\n-]|https://x.example/){0,80}", max in 1usize..40) {
            let f = markdown(&md);
            for e in &f.entities {
                proptest::prop_assert!(e.offset + e.length <= f.len_utf16());
            }
            let parts = split(&f, max);
            for p in &parts {
                // A single two-unit character may pass a limit of one.
                proptest::prop_assert!(p.len_utf16() <= max.max(2));
            }
            let joined: String = parts.iter().map(|p| p.text.as_str()).collect();
            let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            proptest::prop_assert_eq!(squeeze(&joined), squeeze(&f.text));
        }
    }
}
