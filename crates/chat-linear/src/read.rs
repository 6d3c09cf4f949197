//! Linear's Markdown read into the portable message: plain text, the users
//! it mentions, its links, and the files uploaded into it.
//!
//! Linear writes a mention of a user as a link to their profile
//! (`https://linear.app/<org>/profiles/<handle>`, shown as `@handle`), and
//! a file or image uploaded into a comment as a link or image on
//! `uploads.linear.app`, which only the workspace's token can read.

use chat_core::{Attachment, Link, Mention};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// The host Linear serves uploaded files from.
pub(crate) const UPLOADS_HOST: &str = "uploads.linear.app";

/// What a body holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) text: String,
    pub(crate) mentions: Vec<Mention>,
    pub(crate) links: Vec<Link>,
    pub(crate) attachments: Vec<Attachment>,
}

/// The handle of a Linear profile URL (`…/profiles/<handle>`).
fn profile_handle(url: &str) -> Option<&str> {
    let rest = url.split_once("/profiles/")?.1;
    let handle = rest.split(['/', '?', '#']).next()?;
    (!handle.is_empty()).then_some(handle)
}

/// Whether `url` is a file on Linear's uploads host.
fn is_upload(url: &str) -> bool {
    url.strip_prefix("https://")
        .and_then(|rest| rest.split('/').next())
        .is_some_and(|host| host.eq_ignore_ascii_case(UPLOADS_HOST))
}

/// The MIME type an upload's name suggests, for images.
fn image_type(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        _ => return None,
    })
}

/// Reads `body`; `handles` (lowercase) are the bot's, whose mentions are
/// marked as of the bot.
pub(crate) fn read(body: &str, handles: &[String]) -> Read {
    let mut out = Read::default();
    // The link or image being read: (url, is image, its label so far).
    let mut open: Option<(String, bool, String)> = None;
    let push = |out: &mut Read, open: &mut Option<(String, bool, String)>, s: &str| match open {
        Some((_, _, label)) => label.push_str(s),
        None => out.text.push_str(s),
    };
    for event in Parser::new(body) {
        match event {
            Event::Text(t) if open.is_none() => bare_urls(&mut out, &t, handles),
            Event::Text(t) | Event::Code(t) => push(&mut out, &mut open, &t),
            Event::SoftBreak | Event::HardBreak => push(&mut out, &mut open, "\n"),
            Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::CodeBlock,
            ) if !out.text.ends_with('\n') => {
                out.text.push('\n');
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                open = Some((dest_url.into_string(), false, String::new()));
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                open = Some((dest_url.into_string(), true, String::new()));
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if let Some((url, image, label)) = open.take() {
                    finish_link(&mut out, url, image, label, handles);
                }
            }
            _ => {}
        }
    }
    out.text = out.text.trim_end().to_owned();
    for h in handles {
        if !out
            .mentions
            .iter()
            .any(|m| m.user_id.eq_ignore_ascii_case(h))
            && mentions(&out.text, std::slice::from_ref(h))
        {
            out.mentions
                .push(Mention::new(h.clone()).with_name(h.clone()).with_me(true));
        }
    }
    out
}

/// Text outside a link, with its bare URLs (Linear writes a mention as its
/// profile URL alone) read as links.
fn bare_urls(out: &mut Read, text: &str, handles: &[String]) {
    let mut rest = text;
    while let Some(at) = ["https://", "http://"]
        .iter()
        .filter_map(|scheme| rest.find(scheme))
        .min()
    {
        out.text.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail.find(char::is_whitespace).unwrap_or(tail.len());
        // A sentence's closing punctuation is not part of the URL.
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
        finish_link(out, url.to_owned(), false, String::new(), handles);
        rest = &tail[url.len()..];
    }
    out.text.push_str(rest);
}

/// A link or image read: a profile link is a mention (`@handle`), an
/// upload an attachment (its label, else its file name), anything else a
/// link (its label).
fn finish_link(out: &mut Read, url: String, image: bool, label: String, handles: &[String]) {
    if let Some(handle) = profile_handle(&url) {
        let is_me = handles.iter().any(|h| h.eq_ignore_ascii_case(handle));
        out.text.push('@');
        out.text.push_str(handle);
        out.mentions
            .push(Mention::new(handle).with_name(handle).with_me(is_me));
        return;
    }
    if is_upload(&url) {
        let file_name = url
            .rsplit('/')
            .next()
            .and_then(|n| n.split(['?', '#']).next())
            .unwrap_or_default()
            .to_owned();
        let name = if label.is_empty() || label == url {
            file_name.clone()
        } else {
            label
        };
        let mut file = Attachment::new(url.clone(), name.clone(), url);
        if let Some(mime) = image_type(&name).or_else(|| image_type(&file_name)) {
            file = file.with_mime_type(mime);
        } else if image {
            file = file.with_mime_type("image/*");
        }
        out.text.push_str(&name);
        out.attachments.push(file);
        return;
    }
    let shown = if label.is_empty() { url.clone() } else { label };
    out.text.push_str(&shown);
    let mut link = Link::new(url.clone());
    if shown != url {
        link = link.with_label(shown);
    }
    out.links.push(link);
}

/// Whether `body` mentions one of `handles` (lowercase): as `@handle`, or as a
/// link to `…/profiles/handle`, Linear's Markdown form of a mention. A handle
/// must end where a name cannot go on.
pub(crate) fn mentions(body: &str, handles: &[String]) -> bool {
    fn name_char(b: u8) -> bool {
        b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
    }
    fn ends_name(rest: &[u8]) -> bool {
        match rest.first() {
            None => true,
            // A trailing dot ends a sentence, not the name.
            Some(b'.') => rest.get(1).is_none_or(|b| !name_char(*b)),
            Some(b) => !name_char(*b),
        }
    }
    if handles.is_empty() {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    handles.iter().filter(|h| !h.is_empty()).any(|h| {
        let at = format!("@{h}");
        let link = format!("/profiles/{h}");
        let found = |needle: &str, need_boundary_before: bool| {
            lower.match_indices(needle).any(|(i, _)| {
                let before_ok = !need_boundary_before
                    || i == 0
                    || !bytes.get(i - 1).is_some_and(|b| b.is_ascii_alphanumeric());
                before_ok && ends_name(&bytes[i + needle.len()..])
            })
        };
        found(&at, true) || found(&link, false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_links_and_uploads_are_read() {
        let body = "Hey [@helper](https://linear.app/acme/profiles/helper), see \
                    [the spec](https://docs.example/spec) and ![shot.png](https://uploads.linear.app/a/b/c) \
                    cc https://linear.app/acme/profiles/ann\n\n**done**";
        let r = read(body, &["helper".to_owned()]);
        assert_eq!(
            r.text,
            "Hey @helper, see the spec and shot.png cc @ann\ndone"
        );
        assert_eq!(
            r.mentions,
            [
                Mention::new("helper").with_name("helper").with_me(true),
                Mention::new("ann").with_name("ann"),
            ]
        );
        assert_eq!(
            r.links,
            [Link::new("https://docs.example/spec").with_label("the spec")]
        );
        assert_eq!(r.attachments.len(), 1);
        assert_eq!(r.attachments[0].name, "shot.png");
        assert_eq!(r.attachments[0].source, "https://uploads.linear.app/a/b/c");
        assert!(r.attachments[0].is_image());
    }

    #[test]
    fn a_typed_handle_of_the_bot_is_its_mention() {
        let r = read("@helper please look", &["helper".to_owned()]);
        assert_eq!(r.text, "@helper please look");
        assert!(r.mentions[0].is_me);
        assert!(
            read("@helperbot look", &["helper".to_owned()])
                .mentions
                .is_empty()
        );
    }

    #[test]
    fn uploads_elsewhere_are_only_links() {
        let r = read(
            "[f](http://uploads.linear.app/x) [g](https://uploads.linear.app.evil/x)",
            &[],
        );
        assert!(r.attachments.is_empty());
        assert_eq!(r.links.len(), 2);
    }

    #[test]
    fn mentions_need_a_whole_handle() {
        let h = vec!["helper".to_owned()];
        assert!(mentions("@helper can you look?", &h));
        assert!(mentions("hey @Helper.", &h));
        assert!(mentions(
            "cc [Helper](https://linear.app/acme/profiles/helper) pls",
            &h
        ));
        assert!(mentions("https://linear.app/acme/profiles/helper", &h));
        assert!(!mentions("@helperbot look", &h));
        assert!(!mentions("mail me at me@helper.io", &h));
        assert!(!mentions("helper, look", &h));
        assert!(!mentions("@helper", &[]));
        assert!(!mentions("/profiles/helper2", &h));
    }

    proptest::proptest! {
        /// Any body — Markdown, URLs, brackets, multi-byte text — reads
        /// without a panic, and what it finds is in the body.
        #[test]
        fn any_body_reads(body in "([a-z@/:.\\[\\]()!*_`#<> \n]|é|✓|https://uploads.linear.app/|https://linear.app/o/profiles/){0,40}") {
            let r = read(&body, &["helper".to_owned()]);
            for link in &r.links {
                proptest::prop_assert!(body.contains(link.url.as_str()));
            }
            for file in &r.attachments {
                proptest::prop_assert!(body.contains(file.source.as_str()));
            }
        }
    }
}
