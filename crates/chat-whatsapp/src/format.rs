//! Markdown in WhatsApp's own formatting
//! ([Formatting](https://faq.whatsapp.com/539178204879377)): `*bold*`,
//! `_italic_`, `~strikethrough~`, `` `inline code` ``, ```` ```monospace``` ````,
//! `> quotes`, `- ` and `1. ` lists; a link as its text with the URL after
//! it. A text over 4,096 characters is split at line or word ends.
//!
//! ```
//! use chat_whatsapp::format::markdown;
//! assert_eq!(
//!     markdown("**Deployed** _api_ — see [logs](https://x.example)"),
//!     "*Deployed* _api_ — see logs (https://x.example)"
//! );
//! ```

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// The longest text of one message, in characters.
pub const MAX_TEXT: usize = 4096;

/// CommonMark as WhatsApp text.
pub fn markdown(md: &str) -> String {
    let mut out = String::new();
    let mut links: Vec<String> = Vec::new();
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut quote = 0usize;
    let block_break = |out: &mut String| {
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
        }
    };
    for event in Parser::new_ext(md, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::Code(t) => {
                out.push('`');
                out.push_str(&t);
                out.push('`');
            }
            Event::SoftBreak | Event::HardBreak => {
                out.push('\n');
                if quote > 0 {
                    out.push_str("> ");
                }
            }
            Event::Rule => {
                block_break(&mut out);
                out.push_str("———");
            }
            Event::Start(Tag::Strong) | Event::End(TagEnd::Strong) => out.push('*'),
            Event::Start(Tag::Emphasis) | Event::End(TagEnd::Emphasis) => out.push('_'),
            Event::Start(Tag::Strikethrough) | Event::End(TagEnd::Strikethrough) => out.push('~'),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push(dest_url.into_string());
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if let Some(url) = links.pop()
                    && !out.ends_with(url.as_str())
                {
                    out.push_str(&format!(" ({url})"));
                }
            }
            Event::Start(Tag::Heading { .. }) => {
                block_break(&mut out);
                out.push('*');
            }
            Event::End(TagEnd::Heading(_)) => out.push('*'),
            Event::Start(Tag::BlockQuote(_)) => {
                block_break(&mut out);
                quote += 1;
                out.push_str("> ");
            }
            Event::End(TagEnd::BlockQuote(_)) => quote = quote.saturating_sub(1),
            Event::Start(Tag::CodeBlock(kind)) => {
                block_break(&mut out);
                out.push_str("```");
                if let CodeBlockKind::Fenced(_) = kind {
                    out.push('\n');
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if out.ends_with('\n') {
                    out.pop();
                }
                out.push_str("```");
            }
            Event::Start(Tag::Paragraph) if lists.is_empty() && quote == 0 => block_break(&mut out),
            Event::Start(Tag::List(first)) => {
                block_break(&mut out);
                lists.push(first);
            }
            Event::End(TagEnd::List(_)) => {
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&"  ".repeat(lists.len().saturating_sub(1)));
                match lists.last_mut() {
                    Some(Some(n)) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("- "),
                }
            }
            _ => {}
        }
    }
    out.trim_end().to_owned()
}

/// `text` as messages of at most `max` characters, cut at the last line
/// end (else word end, else anywhere) before the limit.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let fit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
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
        let piece = piece.trim_end();
        if !piece.is_empty() {
            parts.push(piece.to_owned());
        }
        rest = after;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_whatsapp_formatting() {
        let cases = [
            (
                "**bold** and _it_ and ~~gone~~",
                "*bold* and _it_ and ~gone~",
            ),
            ("## Title\n\nbody", "*Title*\n\nbody"),
            ("- one\n- two", "- one\n- two"),
            ("1. one\n2. two", "1. one\n2. two"),
            ("```rust\nfn x() {}\n```", "```\nfn x() {}```"),
            ("> quoted\n> more", "> quoted\n> more"),
            ("<https://x.example>", "https://x.example"),
            ("use `cargo`", "use `cargo`"),
        ];
        for (md, wa) in cases {
            assert_eq!(markdown(md), wa, "{md:?}");
        }
    }

    #[test]
    fn a_long_text_splits_within_the_limit() {
        let text = "word ".repeat(2000);
        let parts = split(&text, MAX_TEXT);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= MAX_TEXT));
        assert!(parts.iter().all(|p| p.split(' ').all(|w| w == "word")));
    }

    proptest::proptest! {
        #[test]
        fn any_markdown_converts_and_splits(md in "([a-z✓é *_`~\\[\\]()#>\\n-]|https://x.example/){0,80}", max in 1usize..30) {
            let wa = markdown(&md);
            for p in split(&wa, max) {
                proptest::prop_assert!(p.chars().count() <= max);
            }
        }
    }
}
