//! CommonMark → Slack `mrkdwn`.
//!
//! | Markdown | mrkdwn |
//! |---|---|
//! | `**bold**` | `*bold*` |
//! | `*italic*` | `_italic_` |
//! | `~~strike~~` | `~strike~` |
//! | `` `code` ``, fenced code | `` `code` ``, ```` ``` ```` blocks |
//! | `[text](url)`, `<url>` | `<url\|text>`, `<url>` |
//! | `# Heading` | `*Heading*` on its own line |
//! | `- item`, `1. item` | `• item`, `1. item` (nested lists indented) |
//! | `> quote` | `> quote` |
//!
//! `&`, `<` and `>` in text are escaped (`&amp;`, `&lt;`, `&gt;`), except in
//! Slack's own tokens written in the Markdown: user and channel mentions
//! (`<@U123>`, `<#C123>`) and special mentions (`<!here>`, `<!subteam^S1>`).

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};

/// Converts CommonMark to Slack mrkdwn.
///
/// ```
/// use chat_slack::mrkdwn::markdown_to_mrkdwn;
///
/// assert_eq!(
///     markdown_to_mrkdwn("**Done**: see [the PR](https://example.com/pr/1) & <@U123>"),
///     "*Done*: see <https://example.com/pr/1|the PR> &amp; <@U123>",
/// );
/// ```
pub fn markdown_to_mrkdwn(markdown: &str) -> String {
    let mut r = Renderer::default();
    for event in Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH) {
        r.event(event);
    }
    r.flush_text();
    r.out
}

/// Escapes `&`, `<` and `>` for Slack text.
///
/// ```
/// assert_eq!(chat_slack::mrkdwn::escape("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
/// ```
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text);
    out
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// Escapes `text`, keeping Slack tokens (`<@…>`, `<#…>`, `<!…>`) intact.
fn escape_keeping_tokens(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        escape_into(out, &rest[..start]);
        let candidate = &rest[start..];
        match slack_token_len(candidate) {
            Some(len) => {
                out.push_str(&candidate[..len]);
                rest = &candidate[len..];
            }
            None => {
                out.push_str("&lt;");
                rest = &candidate[1..];
            }
        }
    }
    escape_into(out, rest);
}

/// The length of a Slack token at the start of `s`: `<` then `@`, `#` or `!`,
/// then up to 200 characters other than `<`, `>` and line breaks, then `>`.
fn slack_token_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    if bytes.len() < 3 || bytes[0] != b'<' || !matches!(bytes[1], b'@' | b'#' | b'!') {
        return None;
    }
    let end = s[2..].find(['<', '>', '\n', '\r'])? + 2;
    (bytes[end] == b'>' && end > 2 && end <= 202).then_some(end + 1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Break {
    Line,
    Blank,
}

#[derive(Debug)]
enum Prefix {
    Quote,
    Indent,
}

#[derive(Debug, Default)]
struct Renderer {
    out: String,
    /// Text not yet written, so tokens split across events are seen whole.
    text: String,
    at_line_start: bool,
    pending: Option<Break>,
    prefixes: Vec<Prefix>,
    /// One entry per open list: the next number of an ordered list.
    lists: Vec<Option<u64>>,
    /// Open links: destination, where the label starts in `out`, and a label
    /// that replaces the written one.
    links: Vec<(String, usize, Option<String>)>,
    in_code_block: bool,
}

impl Renderer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Text(t) if self.in_code_block => {
                self.flush_text();
                let mut escaped = String::with_capacity(t.len());
                escape_into(&mut escaped, &t);
                self.write(&escaped);
            }
            Event::Text(t) | Event::InlineHtml(t) | Event::Html(t) => self.text.push_str(&t),
            Event::Code(code) => {
                self.flush_text();
                let mut s = String::with_capacity(code.len() + 2);
                s.push('`');
                escape_into(&mut s, &code);
                s.push('`');
                self.write(&s);
            }
            Event::SoftBreak | Event::HardBreak => self.text.push('\n'),
            Event::Rule => {
                self.flush_text();
                self.block_break();
                self.write("───");
                self.pending = Some(Break::Blank);
            }
            Event::Start(tag) => {
                self.flush_text();
                self.start(tag);
            }
            Event::End(tag) => {
                self.flush_text();
                self.end(tag);
            }
            other => {
                // Math, footnotes and task markers are not enabled; keep any text.
                if let Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) =
                    other
                {
                    self.text.push_str(&t);
                }
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { .. } => {
                self.block_break();
                self.write("*");
            }
            Tag::BlockQuote(_) => {
                self.block_break();
                self.flush_break();
                self.prefixes.push(Prefix::Quote);
            }
            Tag::CodeBlock(_) => {
                self.block_break();
                self.write("```");
                self.newline();
                self.in_code_block = true;
            }
            Tag::List(start) => self.lists.push(start),
            Tag::Item => {
                if !self.out.is_empty() {
                    self.merge_break(Break::Line);
                }
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => match depth {
                        0 | 1 => "• ".to_owned(),
                        2 => "◦ ".to_owned(),
                        _ => "▪ ".to_owned(),
                    },
                };
                self.write(&marker);
                self.prefixes.push(Prefix::Indent);
            }
            Tag::Emphasis => self.write("_"),
            Tag::Strong => self.write("*"),
            Tag::Strikethrough => self.write("~"),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                let (dest, label) = match link_type {
                    LinkType::Email if !dest_url.starts_with("mailto:") => {
                        (format!("mailto:{dest_url}"), None)
                    }
                    // `<https://x|label>` written in Slack's own link syntax.
                    LinkType::Autolink if dest_url.contains('|') => {
                        let (dest, label) = dest_url.split_once('|').unwrap_or((&dest_url, ""));
                        (dest.to_owned(), Some(escape(label)))
                    }
                    _ => (dest_url.into_string(), None),
                };
                self.flush_break();
                self.links.push((dest, self.out.len(), label));
            }
            Tag::Image { dest_url, .. } => {
                self.flush_break();
                self.links
                    .push((dest_url.into_string(), self.out.len(), None));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.merge_break(Break::Blank),
            TagEnd::Heading(_) => {
                self.write("*");
                self.merge_break(Break::Blank);
            }
            TagEnd::BlockQuote(_) => {
                self.prefixes.pop();
                self.merge_break(Break::Blank);
            }
            TagEnd::CodeBlock => {
                self.in_code_block = false;
                if !self.at_line_start {
                    self.newline();
                }
                self.write("```");
                self.merge_break(Break::Blank);
            }
            TagEnd::List(_) => {
                self.lists.pop();
                let nested = !self.lists.is_empty();
                self.merge_break(if nested { Break::Line } else { Break::Blank });
            }
            TagEnd::Item => {
                self.prefixes.pop();
                self.merge_break(Break::Line);
            }
            TagEnd::Emphasis => self.write("_"),
            TagEnd::Strong => self.write("*"),
            TagEnd::Strikethrough => self.write("~"),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            _ => {}
        }
    }

    fn close_link(&mut self) {
        let Some((dest, start, label_override)) = self.links.pop() else {
            return;
        };
        let written = self.out.split_off(start.min(self.out.len()));
        let label = label_override.unwrap_or(written);
        let mut s = String::with_capacity(dest.len() + label.len() + 3);
        s.push('<');
        for c in dest.chars() {
            match c {
                '|' => s.push_str("%7C"),
                c => escape_into(&mut s, c.encode_utf8(&mut [0; 4])),
            }
        }
        let label = label.trim();
        // Autolinks repeat the destination; `<url>` is enough then.
        let plain_dest = escape(&dest);
        if !label.is_empty()
            && label != plain_dest
            && label != plain_dest.trim_start_matches("mailto:")
        {
            s.push('|');
            s.push_str(&label.replace('\n', " "));
        }
        s.push('>');
        self.out.push_str(&s);
    }

    /// Writes buffered text, escaped, keeping Slack tokens.
    fn flush_text(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        let mut escaped = String::with_capacity(text.len());
        escape_keeping_tokens(&mut escaped, &text);
        self.write(&escaped);
    }

    /// Before a block: what separates it from the previous one.
    fn block_break(&mut self) {
        if !self.out.is_empty() {
            self.merge_break(Break::Line);
        }
    }

    fn merge_break(&mut self, b: Break) {
        self.pending = Some(self.pending.map_or(b, |p| p.max(b)));
    }

    /// Writes the pending break, if any.
    fn flush_break(&mut self) {
        let Some(b) = self.pending.take() else {
            return;
        };
        if self.out.is_empty() {
            return;
        }
        if !self.at_line_start {
            self.newline();
        }
        if b == Break::Blank {
            let prefix = self.prefix();
            self.out.push_str(prefix.trim_end());
            self.newline();
        }
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.at_line_start = true;
    }

    fn prefix(&self) -> String {
        self.prefixes
            .iter()
            .map(|p| match p {
                Prefix::Quote => "> ",
                Prefix::Indent => "    ",
            })
            .collect()
    }

    /// Writes `s`, starting each new line with the open quote and list prefixes.
    fn write(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.flush_break();
        if self.out.is_empty() {
            self.at_line_start = true;
        }
        for (i, line) in s.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            if line.is_empty() {
                continue;
            }
            if self.at_line_start {
                let prefix = self.prefix();
                self.out.push_str(&prefix);
                self.at_line_start = false;
            }
            self.out.push_str(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(s: &str) -> String {
        markdown_to_mrkdwn(s)
    }

    #[test]
    fn inline_styles() {
        assert_eq!(md("**bold** and __bold__"), "*bold* and *bold*");
        assert_eq!(md("*it* and _it_"), "_it_ and _it_");
        assert_eq!(md("~~gone~~"), "~gone~");
        assert_eq!(md("***both***"), "_*both*_");
        assert_eq!(md("use `x < y`"), "use `x &lt; y`");
    }

    #[test]
    fn links_and_autolinks() {
        assert_eq!(
            md("[docs](https://example.com/a?b=1&c=2)"),
            "<https://example.com/a?b=1&amp;c=2|docs>"
        );
        assert_eq!(md("<https://example.com>"), "<https://example.com>");
        assert_eq!(
            md("[**bold** link](https://x.io)"),
            "<https://x.io|*bold* link>"
        );
        assert_eq!(md("<me@example.com>"), "<mailto:me@example.com>");
        assert_eq!(
            md("![logo](https://x.io/l.png)"),
            "<https://x.io/l.png|logo>"
        );
        assert_eq!(md("[a](https://x.io/a|b)"), "<https://x.io/a%7Cb|a>");
        assert_eq!(
            md("<https://x.io|the site>"),
            "&lt;https://x.io|the site&gt;"
        );
        assert_eq!(md("<https://x.io|site>"), "<https://x.io|site>");
    }

    #[test]
    fn escaping_keeps_slack_tokens() {
        assert_eq!(md("a & b < c > d"), "a &amp; b &lt; c &gt; d");
        assert_eq!(
            md("hi <@U123> in <#C456|general>"),
            "hi <@U123> in <#C456|general>"
        );
        assert_eq!(md("<!here> deploy"), "<!here> deploy");
        assert_eq!(md("<!subteam^S1> ping"), "<!subteam^S1> ping");
        assert_eq!(md("<b>html</b>"), "&lt;b&gt;html&lt;/b&gt;");
        assert_eq!(md("&amp; stays one ampersand"), "&amp; stays one ampersand");
        assert_eq!(md("a <@ unterminated"), "a &lt;@ unterminated");
    }

    #[test]
    fn headings_become_bold_lines() {
        assert_eq!(md("# Title\n\nBody"), "*Title*\n\nBody");
        assert_eq!(md("## Sub *it*"), "*Sub _it_*");
    }

    #[test]
    fn nested_blocks() {
        assert_eq!(md("- a\n\n- b\n"), "• a\n\n• b");
        assert_eq!(md("1. one\n   - sub\n2. two"), "1. one\n    ◦ sub\n2. two");
        assert_eq!(md("> - a\n> - b\n>\n> para"), "> • a\n> • b\n>\n> para");
        assert_eq!(
            md("- item\n\n  ```\n  code\n  ```\n- next"),
            "• item\n\n    ```\n    code\n    ```\n\n• next"
        );
    }

    #[test]
    fn lists() {
        assert_eq!(md("- a\n- b\n- c"), "• a\n• b\n• c");
        assert_eq!(md("1. one\n2. two"), "1. one\n2. two");
        assert_eq!(md("3. three\n4. four"), "3. three\n4. four");
        assert_eq!(md("- a\n  - b\n  - c\n- d"), "• a\n    ◦ b\n    ◦ c\n• d");
        assert_eq!(
            md("Intro\n\n- a\n- b\n\nOutro"),
            "Intro\n\n• a\n• b\n\nOutro"
        );
    }

    #[test]
    fn code_blocks() {
        assert_eq!(
            md("```rust\nlet x = a < b;\n```"),
            "```\nlet x = a &lt; b;\n```"
        );
        assert_eq!(
            md("text\n\n    indented\n\nafter"),
            "text\n\n```\nindented\n```\n\nafter"
        );
        assert_eq!(
            md("```\n<@U1> *not bold*\n```"),
            "```\n&lt;@U1&gt; *not bold*\n```"
        );
    }

    #[test]
    fn quotes() {
        assert_eq!(md("> quoted\n> more"), "> quoted\n> more");
        assert_eq!(md("before\n\n> q\n\nafter"), "before\n\n> q\n\nafter");
        assert_eq!(md("> a\n>\n> b"), "> a\n>\n> b");
    }

    #[test]
    fn paragraphs_and_breaks() {
        assert_eq!(md("one\ntwo\n\nthree"), "one\ntwo\n\nthree");
        assert_eq!(md("a  \nb"), "a\nb");
        assert_eq!(md("a\n\n---\n\nb"), "a\n\n───\n\nb");
        assert_eq!(md(""), "");
    }

    #[test]
    fn token_scanner() {
        assert_eq!(slack_token_len("<@U1>"), Some(5));
        assert_eq!(
            slack_token_len("<!date^1392734382^{date}|Feb 18>"),
            Some(32)
        );
        assert_eq!(slack_token_len("<@>"), None);
        assert_eq!(slack_token_len("<@U1"), None);
        assert_eq!(slack_token_len("<@U1\n>"), None);
        assert_eq!(slack_token_len("<x>"), None);
        assert_eq!(slack_token_len("<"), None);
    }
}
