//! Markdown healing: a prefix of a Markdown answer (what a stream has shown
//! so far) made to render as the finished text will, by closing what the
//! cut left open — an emphasis (`**`, `*`, `__`, `_`, `~~`), an inline code
//! span, a fenced code block — and by showing an unfinished link as its
//! text. Only intermediate renders are healed; the final text is sent as it
//! came.

/// `text` with what it leaves open closed (see the module docs). Text
/// that leaves nothing open comes back unchanged.
///
/// ```
/// # use chat_runtime::heal_markdown;
/// assert_eq!(heal_markdown("some **bold"), "some **bold**");
/// assert_eq!(heal_markdown("```rust\nfn main("), "```rust\nfn main(\n```");
/// assert_eq!(heal_markdown("see [the docs](https://exa"), "see the docs");
/// assert_eq!(heal_markdown("a `code"), "a `code`");
/// assert_eq!(heal_markdown("done."), "done.");
/// ```
pub fn heal_markdown(text: &str) -> String {
    let (body, fence) = split_open_fence(text);
    if let Some(fence) = fence {
        // Inside an open code block nothing else is markup.
        let mut out = text.to_owned();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(fence);
        return out;
    }
    heal_inline(body)
}

/// The text, and the fence (```` ``` ```` or `~~~`) of a code block it
/// leaves open.
fn split_open_fence(text: &str) -> (&str, Option<&'static str>) {
    let mut open: Option<&'static str> = None;
    for line in text.split('\n') {
        let t = line.trim_start_matches(' ');
        let fence = if t.starts_with("```") {
            Some("```")
        } else if t.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (open, fence) {
            (None, Some(f)) => open = Some(f),
            // A closing fence is the fence's characters alone.
            (Some(o), Some(f)) if o == f && t.trim_end().bytes().all(|c| c == f.as_bytes()[0]) => {
                open = None;
            }
            _ => {}
        }
    }
    (text, open)
}

/// Closes emphasis and code spans on the last block, and shows an
/// unfinished link as its text.
fn heal_inline(text: &str) -> String {
    // The last paragraph is where a cut leaves things open: inline markup
    // does not cross a blank line, and fenced blocks before it are closed.
    let start = last_paragraph_start(text);
    let (done, last) = text.split_at(start);
    let mut last = unfinished_link_as_text(last);
    let open = open_delimiters(&last);
    for d in open.iter().rev() {
        last.push_str(d.closer());
    }
    format!("{done}{last}")
}

/// Where the last paragraph begins: after the last blank line outside a
/// closed code block.
fn last_paragraph_start(text: &str) -> usize {
    let mut start = 0;
    let mut in_fence = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start_matches(' ');
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            start = offset + line.len();
        } else if !in_fence && line.trim().is_empty() {
            start = offset + line.len();
        }
        offset += line.len();
    }
    start.min(text.len())
}

/// An inline delimiter left open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delim {
    Strong(u8),
    Em(u8),
    Strike,
    Code(usize),
}

impl Delim {
    fn closer(self) -> &'static str {
        match self {
            Self::Strong(b'_') => "__",
            Self::Strong(_) => "**",
            Self::Em(b'_') => "_",
            Self::Em(_) => "*",
            Self::Strike => "~~",
            Self::Code(1) => "`",
            Self::Code(2) => "``",
            Self::Code(_) => "```",
        }
    }
}

/// The delimiters `text` opens and does not close, in the order opened.
fn open_delimiters(text: &str) -> Vec<Delim> {
    let b = text.as_bytes();
    let mut stack: Vec<Delim> = Vec::new();
    let mut i = 0;
    // Only spaces between the line's start and `i`.
    let at_line_start = |i: usize| {
        matches!(
            b[..i].iter().rev().find(|c| **c != b' '),
            None | Some(b'\n')
        )
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            i += 2;
            continue;
        }
        if c == b'`' {
            let run = b[i..].iter().take_while(|x| **x == b'`').count();
            // A code span ends at the next run of the same length.
            let rest = &text[i + run..];
            match find_backtick_run(rest, run) {
                Some(end) => i += run + end + run,
                None => {
                    stack.push(Delim::Code(run.min(3)));
                    return stack;
                }
            }
            continue;
        }
        if c == b'~' && b.get(i + 1) == Some(&b'~') {
            toggle(&mut stack, Delim::Strike);
            i += 2;
            continue;
        }
        if c == b'*' || c == b'_' {
            let run = b[i..].iter().take_while(|x| **x == c).count();
            let before = if i == 0 { b' ' } else { b[i - 1] };
            let after = b.get(i + run).copied().unwrap_or(b' ');
            // A list marker, a rule, a lone star between spaces, or `_`
            // inside a word (snake_case) is not emphasis.
            let list_marker = c == b'*' && run == 1 && at_line_start(i) && after == b' ';
            let between_spaces = before.is_ascii_whitespace() && after.is_ascii_whitespace();
            let intraword =
                c == b'_' && before.is_ascii_alphanumeric() && after.is_ascii_alphanumeric();
            if list_marker || between_spaces || intraword || run > 3 {
                i += run;
                continue;
            }
            let mut left = run;
            if left >= 2 {
                toggle(&mut stack, Delim::Strong(c));
                left -= 2;
            }
            if left == 1 {
                toggle(&mut stack, Delim::Em(c));
            }
            i += run;
            continue;
        }
        i += 1;
    }
    stack
}

/// Closes `d` when it is the innermost open delimiter (or open at all),
/// else opens it.
fn toggle(stack: &mut Vec<Delim>, d: Delim) {
    if let Some(at) = stack.iter().rposition(|x| *x == d) {
        stack.truncate(at);
    } else {
        stack.push(d);
    }
}

/// The byte offset in `text` of the next run of exactly `len` backticks.
fn find_backtick_run(text: &str, len: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let run = b[i..].iter().take_while(|x| **x == b'`').count();
            if run == len {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// A link the cut left unfinished — `[label`, `[label](http…` — shown as
/// its label; a finished link stays.
fn unfinished_link_as_text(text: &str) -> String {
    let b = text.as_bytes();
    let mut open: Option<usize> = None;
    let mut i = 0;
    let mut in_code = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'`' => in_code = !in_code,
            b'[' if !in_code => open = Some(i),
            b']' if !in_code => {
                if let Some(start) = open {
                    match b.get(i + 1) {
                        Some(b'(') => match text[i + 2..].find(')') {
                            Some(close) => {
                                open = None;
                                i += 2 + close;
                            }
                            None => {
                                let label = &text[start + 1..i];
                                return format!("{}{label}", &text[..start]);
                            }
                        },
                        // `[label]` alone is text, or a reference: closed.
                        _ => open = None,
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    match open {
        // A bracket that may become a link: its text so far.
        Some(start) if !in_code => format!("{}{}", &text[..start], &text[start + 1..]),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::heal_markdown as heal;

    #[test]
    fn closes_what_a_cut_leaves_open() {
        let cases = [
            ("**bold", "**bold**"),
            ("*it", "*it*"),
            ("__strong", "__strong__"),
            ("_em", "_em_"),
            ("~~gone", "~~gone~~"),
            ("**bold and *it", "**bold and *it***"),
            ("`code", "`code`"),
            ("``co`de", "``co`de``"),
            ("[docs](https://x.example/pa", "docs"),
            ("see [do", "see do"),
            ("```\nlet x", "```\nlet x\n```"),
            ("~~~py\nprint(", "~~~py\nprint(\n~~~"),
            ("***both", "***both***"),
        ];
        for (cut, healed) in cases {
            assert_eq!(heal(cut), healed, "{cut:?}");
        }
    }

    #[test]
    fn leaves_finished_and_literal_text_alone() {
        for done in [
            "plain text.",
            "**bold** and *it* and `code` and ~~gone~~",
            "[docs](https://x.example) and [ref]",
            "* a list item\n* another",
            "2 * 3 = 6",
            "snake_case_name and __init__",
            "```\ncode with **stars\n```\nafter",
            "a\\*literal star",
            "`**` in code",
            "",
        ] {
            assert_eq!(heal(done), done, "{done:?}");
        }
    }

    #[test]
    fn only_the_last_paragraph_is_healed() {
        // An earlier paragraph's stray star is the author's, not the cut's.
        assert_eq!(heal("a *b\n\nnow **bo"), "a *b\n\nnow **bo**");
        assert_eq!(heal("```\n*x\n```\n\n`y"), "```\n*x\n```\n\n`y`");
    }

    #[test]
    fn every_prefix_of_an_answer_heals_without_panicking() {
        let answer = "# Title\n\nSome **bold**, *it*, `code`, ~~gone~~ and a [link](https://x.example/a_b).\n\n```rust\nfn main() { println!(\"*\"); }\n```\n\n* item _one_\n* item __two__\n\nDone — ünïcödé ✓";
        for (i, _) in answer.char_indices() {
            let cut = &answer[..i];
            let healed = heal(cut);
            if !cut.contains('[') {
                assert!(healed.starts_with(cut), "{cut:?} → {healed:?}");
            }
        }
        assert_eq!(heal(answer), answer);
    }

    proptest::proptest! {
        /// Any text heals without a panic; without a link, healing only
        /// appends closers.
        #[test]
        fn any_prefix_heals(text in "([a-z *_~`\\[\\]()\n]|é|✓|https://x.example/){0,60}") {
            let healed = heal(&text);
            if !text.contains('[') {
                proptest::prop_assert!(healed.starts_with(&text), "{text:?} → {healed:?}");
            }
            proptest::prop_assert!(healed.len() <= text.len() + 16, "{text:?} → {healed:?}");
        }
    }
}
