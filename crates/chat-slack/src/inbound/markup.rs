//! Slack's message markup (`mrkdwn` as the Events API delivers it) read into
//! the portable message: plain text, Markdown, the users mentioned and the
//! links ([Formatting text for app surfaces]).
//!
//! | markup | plain text | Markdown |
//! |---|---|---|
//! | `<@U1>`, `<@U1\|ann>` | `@U1`, `@ann` | the same |
//! | `<#C1\|general>` | `#general` | the same |
//! | `<!here>`, `<!subteam^S1\|@team>` | `@here`, `@team` | the same |
//! | `<!date^…\|fallback>` | `fallback` | the same |
//! | `<https://x\|label>`, `<https://x>` | `label`, `https://x` | `[label](https://x)`, `<https://x>` |
//! | `<mailto:a@b.c\|a@b.c>` | `a@b.c` | `[a@b.c](mailto:a@b.c)` |
//! | `*bold*`, `~strike~` | as typed | `**bold**`, `~~strike~~` |
//! | `&amp;`, `&lt;`, `&gt;` | `&`, `<`, `>` | the same |
//!
//! Code spans and blocks are copied as they are, tokens and all.
//!
//! [Formatting text for app surfaces]: https://docs.slack.dev/messaging/formatting-message-text

use chat_core::{Link, Mention};

/// A message's text read out of Slack's markup.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) text: String,
    pub(crate) markdown: String,
    pub(crate) mentions: Vec<Mention>,
    pub(crate) links: Vec<Link>,
}

/// Reads `markup`; a mention of a user in `me` is this bot's, named
/// `my_name` when that is known.
pub(crate) fn read(markup: &str, me: &[&str], my_name: Option<&str>) -> Read {
    let mut out = Read::default();
    let bytes = markup.as_bytes();
    // The next `~` at or after an offset: searched again only once passed
    // (a search from every mark would be quadratic in the marks).
    let mut tilde = memchr::memchr(b'~', bytes);
    let mut rest = markup;
    while !rest.is_empty() {
        // Code: copied whole into both renderings.
        if let Some(fence) = code_at(rest) {
            let (code, after) = rest.split_at(fence);
            push_both(&mut out, code);
            rest = after;
            continue;
        }
        if let Some(inner) = rest.strip_prefix('<')
            && let Some(end) = inner.find('>')
        {
            token(&mut out, &inner[..end], me, my_name);
            rest = &inner[end + 1..];
            continue;
        }
        if let Some((len, md)) = emphasis_at(&out.text, rest) {
            let span = decode(&rest[..len]);
            out.text.push_str(&span);
            let inner = &span[1..span.len() - 1];
            out.markdown.push_str(md);
            out.markdown.push_str(inner);
            out.markdown.push_str(md);
            rest = &rest[len..];
            continue;
        }
        // Plain text runs to the next mark after its first character; the
        // marks are ASCII, so a byte that is one is a char boundary.
        let at = bytes.len() - rest.len();
        let from = at + 1;
        if tilde.is_some_and(|t| t < from) {
            tilde = memchr::memchr(b'~', &bytes[from..]).map(|t| from + t);
        }
        let other = memchr::memchr3(b'<', b'`', b'*', &bytes[from..]).map(|i| from + i);
        let next = other
            .into_iter()
            .chain(tilde)
            .min()
            .map_or(rest.len(), |i| i - at);
        push_both(&mut out, &rest[..next]);
        rest = &rest[next..];
    }
    out
}

/// `s` decoded onto the plain text and the Markdown alike.
fn push_both(out: &mut Read, s: &str) {
    let start = out.text.len();
    push_decoded(&mut out.text, s);
    out.markdown.push_str(&out.text[start..]);
}

/// One `<…>` token.
fn token(out: &mut Read, token: &str, me: &[&str], my_name: Option<&str>) {
    let (target, label) = match token.split_once('|') {
        Some((t, l)) => (t, Some(decode(l))),
        None => (token, None),
    };
    if target.is_empty() {
        return;
    }
    let mut both = |s: &str| {
        out.text.push_str(s);
        out.markdown.push_str(s);
    };
    if let Some(user) = target.strip_prefix('@') {
        let is_me = me.contains(&user);
        let name = label.or_else(|| my_name.filter(|_| is_me).map(str::to_owned));
        both(&format!("@{}", name.as_deref().unwrap_or(user)));
        let mut mention = Mention::new(user).with_me(is_me);
        if let Some(name) = name {
            mention = mention.with_name(name);
        }
        out.mentions.push(mention);
    } else if let Some(channel) = target.strip_prefix('#') {
        both(&format!("#{}", label.as_deref().unwrap_or(channel)));
    } else if let Some(special) = target.strip_prefix('!') {
        let shown = match (special.split_once('^'), label) {
            (_, Some(label)) if special.starts_with("date") => label,
            (_, Some(label)) => format!("@{}", label.trim_start_matches('@')),
            (Some((_, id)), None) => format!("@{id}"),
            (None, None) => format!("@{special}"),
        };
        both(&shown);
    } else {
        let url = decode(target);
        let shown = label
            .clone()
            .unwrap_or_else(|| url.strip_prefix("mailto:").unwrap_or(&url).to_owned());
        out.text.push_str(&shown);
        match &label {
            Some(l) => out.markdown.push_str(&format!("[{l}]({url})")),
            None => out.markdown.push_str(&format!("<{url}>")),
        }
        let mut link = Link::new(url);
        if let Some(l) = label {
            link = link.with_label(l);
        }
        out.links.push(link);
    }
}

/// The length of a code block (```` ```…``` ````) or span (`` `…` ``) at the
/// start of `s`.
fn code_at(s: &str) -> Option<usize> {
    if !s.starts_with('`') {
        return None;
    }
    let fence = if s.starts_with("```") { "```" } else { "`" };
    let start = fence.len();
    s[start..].find(fence).map(|end| start + end + fence.len())
}

/// `*bold*` or `~strike~` at the start of `rest` (after `before`): its
/// length and the Markdown delimiter. Slack's rule: the opening mark follows
/// a start, a space or punctuation and precedes a non-space; the closing
/// one follows a non-space, on the same line.
fn emphasis_at(before: &str, rest: &str) -> Option<(usize, &'static str)> {
    let mark = rest.chars().next()?;
    let md = match mark {
        '*' => "**",
        '~' => "~~",
        _ => return None,
    };
    let opens = before
        .chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || c.is_ascii_punctuation());
    let inner = &rest[1..];
    if !opens || inner.starts_with(char::is_whitespace) {
        return None;
    }
    let line = inner.split('\n').next().unwrap_or_default();
    let end = line.find(mark)?;
    if end == 0 || line[..end].ends_with(char::is_whitespace) {
        return None;
    }
    Some((end + 2, md))
}

/// Slack's three escapes decoded.
fn decode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_decoded(&mut out, s);
    out
}

/// Appends `s` to `out` with Slack's three escapes (`&lt;`, `&gt;`,
/// `&amp;`) decoded, in one pass: an `&` that starts none of them stays.
fn push_decoded(out: &mut String, s: &str) {
    let mut rest = s;
    while let Some(at) = memchr::memchr(b'&', rest.as_bytes()) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let (decoded, len) = if from.starts_with("&lt;") {
            ('<', 4)
        } else if from.starts_with("&gt;") {
            ('>', 4)
        } else if from.starts_with("&amp;") {
            ('&', 5)
        } else {
            ('&', 1)
        };
        out.push(decoded);
        rest = &from[len..];
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_plain(markup: &str) -> (String, String) {
        let r = read(markup, &["UBOT"], Some("echo"));
        (r.text, r.markdown)
    }

    #[test]
    fn mentions_resolve_to_names_where_known() {
        let r = read("<@UBOT> ask <@U2|ann> and <@U3>", &["UBOT"], Some("echo"));
        assert_eq!(r.text, "@echo ask @ann and @U3");
        assert_eq!(
            r.mentions,
            [
                Mention::new("UBOT").with_name("echo").with_me(true),
                Mention::new("U2").with_name("ann"),
                Mention::new("U3"),
            ]
        );
        let unnamed = read("<@UBOT> hi", &["UBOT"], None);
        assert_eq!(unnamed.text, "@UBOT hi");
        assert!(unnamed.mentions[0].is_me);
    }

    #[test]
    fn links_become_their_text_and_markdown_links() {
        let r = read(
            "see <https://x.example/a?b=1&amp;c=2|the docs> or <https://y.example> or <mailto:a@b.example|a@b.example>",
            &[],
            None,
        );
        assert_eq!(r.text, "see the docs or https://y.example or a@b.example");
        assert_eq!(
            r.markdown,
            "see [the docs](https://x.example/a?b=1&c=2) or <https://y.example> or [a@b.example](mailto:a@b.example)"
        );
        assert_eq!(
            r.links[0],
            Link::new("https://x.example/a?b=1&c=2").with_label("the docs")
        );
        assert_eq!(r.links[1], Link::new("https://y.example"));
        assert_eq!(r.links.len(), 3);
    }

    #[test]
    fn channels_specials_dates_and_escapes() {
        assert_eq!(
            read_plain("<#C1|general> <#C2> <!here> <!subteam^S1|@oncall> <!subteam^S2> <!date^1392734382^{date}|Feb 18> a &lt;b&gt; &amp; c").0,
            "#general #C2 @here @oncall @S2 Feb 18 a <b> & c"
        );
    }

    #[test]
    fn emphasis_is_kept_in_text_and_converted_in_markdown() {
        assert_eq!(
            read_plain("*bold* and ~gone~ and _it_"),
            (
                "*bold* and ~gone~ and _it_".to_owned(),
                "**bold** and ~~gone~~ and _it_".to_owned()
            )
        );
        // Not emphasis: inside a word, around spaces, across lines.
        for s in ["2*3*4", "a * b * c", "*open\nclose*", "**"] {
            assert_eq!(read_plain(s), (s.to_owned(), s.to_owned()), "{s}");
        }
    }

    #[test]
    fn code_is_copied_as_it_is() {
        let (text, md) = read_plain("run `<@U1> *x*` then ```\n<b> ~y~\n``` ok");
        assert_eq!(text, "run `<@U1> *x*` then ```\n<b> ~y~\n``` ok");
        assert_eq!(md, text);
        assert_eq!(
            read_plain("an ` unclosed"),
            ("an ` unclosed".to_owned(), "an ` unclosed".to_owned())
        );
    }

    #[test]
    fn broken_markup_never_panics_and_keeps_its_text() {
        for s in [
            "<",
            "<@",
            "a <b",
            "&amp",
            "<@|>",
            "<!>",
            "<!subteam^>",
            "é*ü*",
            "*",
            "~~",
            "`",
            "``",
            "```",
        ] {
            let r = read(s, &["U"], None);
            assert!(!r.text.is_empty() || s.is_empty(), "{s}");
        }
        assert_eq!(read("<|>", &[], None), Read::default());
    }

    #[test]
    fn marks_are_found_after_any_run_of_plain_text() {
        let r = read(
            "é ~gone~ then *bold* and <@U2> &amp; ~more~ `x~y` ~",
            &[],
            None,
        );
        assert_eq!(r.text, "é ~gone~ then *bold* and @U2 & ~more~ `x~y` ~");
        assert_eq!(
            r.markdown,
            "é ~~gone~~ then **bold** and @U2 & ~~more~~ `x~y` ~"
        );
    }

    proptest::proptest! {
        /// The one-pass decoding is the three replacements in order.
        #[test]
        fn decoding_is_the_three_replacements(s in "(&|amp;|lt;|gt;|[a-z<>~ ]){0,24}") {
            let replaced = s.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
            proptest::prop_assert_eq!(decode(&s), replaced);
        }
    }
}
