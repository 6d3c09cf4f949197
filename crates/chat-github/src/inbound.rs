//! A verified delivery as an event. The event's kind comes from
//! `X-GitHub-Event` and the payload's `action`:
//!
//! | event, action | becomes |
//! |---|---|
//! | `ping` | answered `200 pong`, nothing runs |
//! | `issue_comment` created, edited, deleted | `Message` (posted, edited, deleted) in the issue's or pull request's thread |
//! | `issues` opened | `Message`: the title and the body, in the issue's thread |
//! | `issues` assigned to the bot | `Message`, a mention: the title and the body |
//! | `pull_request` opened | `Message`: the title and the body |
//! | `pull_request` assigned to the bot, or its review requested from the bot | `Message`, a mention |
//! | `pull_request_review_comment` created, edited, deleted | `Message` in the review thread (`42/r<first comment id>`) |
//! | `pull_request_review` submitted, with a body | `Message` in the pull request's thread |
//! | `discussion_comment` created | `Message` in the discussion's thread (`d42`) |
//! | `issues` labeled, other assignments; `pull_request` synchronize; a review without a body | `Other` named `github.{event}.{action}` |
//! | `installation`, `installation_repositories` | `Other` named `github.{event}.{action}`, thread-less |
//! | anything else | acknowledged and ignored |
//!
//! A message mentions the bot when its text has `@<bot login>` (the App's
//! slug) as a word. What the bot itself did — its login is the sender, or
//! the comment was made through its App — is acknowledged and ignored.
//! The event id is `X-GitHub-Delivery`, which a redelivery repeats; the
//! dedupe key adds `X-GitHub-Hook-ID`, because two Apps may receive one
//! delivery id.

use bytes::Bytes;
use chat_core::{
    Author, Event, EventKind, Inbound, Mention, Message, MessageChange, OtherEvent, ThreadRef,
    WebhookError,
};
use serde_json::json;

use crate::GITHUB;
use crate::conversation::Conversation;
use crate::payload::{Comment, Issue, Payload, User};

fn malformed(what: &str) -> WebhookError {
    WebhookError::Malformed(format!("github: {what}"))
}

/// Who the bot is on GitHub.
#[derive(Debug, Clone, Default)]
pub(crate) struct Identity {
    /// The login its comments carry: `<app-slug>[bot]` for an App.
    pub(crate) login: String,
    /// What `@` names it with: the App's slug, or the token's user.
    pub(crate) handle: String,
    /// The App's id, when it is one.
    pub(crate) app_id: Option<u64>,
}

impl Identity {
    fn is_me(&self, user: Option<&User>) -> bool {
        user.is_some_and(|u| self.is_login(&u.login))
    }

    /// Whether `login` is the bot's: its login, or — for an App, whose
    /// GraphQL author carries no `[bot]` — its slug.
    pub(crate) fn is_login(&self, login: &str) -> bool {
        !self.login.is_empty()
            && (login.eq_ignore_ascii_case(&self.login)
                || (self.app_id.is_some() && login.eq_ignore_ascii_case(&self.handle)))
    }

    /// Whether `text` has `@handle` as a word.
    pub(crate) fn is_mentioned_in(&self, text: &str) -> bool {
        mentions(text, self).iter().any(|m| m.is_me)
    }
}

/// The most mentions read from one text.
const MAX_MENTIONS: usize = 50;

/// The `@login` words of `text` (at most [`MAX_MENTIONS`]), in order, as written (GitHub logins are
/// case-insensitive letters, digits and `-`; an e-mail address is none).
fn mentions(text: &str, me: &Identity) -> Vec<Mention> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        if out.len() >= MAX_MENTIONS {
            break;
        }
        if *b != b'@' || (i > 0 && word(bytes[i - 1])) {
            continue;
        }
        let len = bytes[i + 1..].iter().take_while(|b| word(**b)).count();
        if len == 0 {
            continue;
        }
        let login = &text[i + 1..i + 1 + len];
        let mut m = Mention::new(login);
        m.name = Some(login.to_owned());
        m.is_me = !me.handle.is_empty() && login.eq_ignore_ascii_case(&me.handle);
        out.push(m);
    }
    out
}

/// What parsing needs besides the body.
pub(crate) struct Delivery<'a> {
    /// `X-GitHub-Event`.
    pub(crate) event: &'a str,
    /// `X-GitHub-Delivery`.
    pub(crate) id: &'a str,
    /// `X-GitHub-Hook-ID`, when sent.
    pub(crate) hook: Option<&'a str>,
    /// The body is `payload=<json>` (a hook created with the form type).
    pub(crate) form: bool,
    pub(crate) received_at_ms: u64,
    pub(crate) raw: &'a Bytes,
}

impl Delivery<'_> {
    fn event(&self, thread: ThreadRef, kind: EventKind) -> Event {
        let dedupe = match self.hook {
            Some(hook) => format!("{hook}:{}", self.id),
            None => self.id.to_owned(),
        };
        Event::new(self.id, dedupe, thread, kind)
            .with_received_at_ms(self.received_at_ms)
            .with_raw(self.raw.clone())
    }
}

#[derive(serde::Deserialize)]
struct Form {
    payload: String,
}

/// Parses a verified body.
pub(crate) fn parse(d: &Delivery<'_>, me: &Identity) -> Result<Inbound, WebhookError> {
    let p: Payload = if d.form {
        let form: Form = serde_urlencoded::from_bytes(d.raw)
            .map_err(|_| malformed("a form body without payload"))?;
        serde_json::from_str(&form.payload)
    } else {
        serde_json::from_slice(d.raw)
    }
    .map_err(|_| malformed("a body that is not a webhook payload"))?;
    if d.event == "ping" {
        return Ok(Inbound::Response(pong()));
    }
    let action = p.action.clone().unwrap_or_default();
    if me.is_me(p.sender.as_ref())
        || p.comment.as_ref().is_some_and(|c| {
            me.is_me(c.user.as_ref())
                || c.performed_via_github_app
                    .as_ref()
                    .is_some_and(|a| Some(a.id) == me.app_id)
        })
    {
        return Ok(ignored("self"));
    }
    if matches!(d.event, "installation" | "installation_repositories") {
        let tenant = p.installation.as_ref().map_or(0, |i| i.id);
        if tenant == 0 {
            return Err(malformed("an installation event without installation.id"));
        }
        let thread = ThreadRef::new(GITHUB, tenant.to_string(), "", "");
        let data = json!({
            "installation": tenant,
            "account": p.installation.as_ref().and_then(|i| i.account.as_ref()).map(|a| a.login.clone()),
            "repositories_added": p.repositories_added.iter().map(|r| r.full_name.clone()).collect::<Vec<_>>(),
            "repositories_removed": p.repositories_removed.iter().map(|r| r.full_name.clone()).collect::<Vec<_>>(),
        });
        return Ok(one(d.event(thread, other(d.event, &action, data))));
    }
    let Some(repo) = p.repository.as_ref().filter(|r| r.full_name.contains('/')) else {
        return Ok(ignored("no-repository"));
    };
    let tenant = match p.installation.as_ref().filter(|i| i.id != 0) {
        Some(i) => i.id.to_string(),
        None => repo
            .full_name
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    let thread = |c: Conversation| {
        ThreadRef::new(
            GITHUB,
            tenant.as_str(),
            repo.full_name.as_str(),
            c.to_string(),
        )
    };
    // A comment's id as the adapter's calls name it: an issue comment's
    // number, a review comment's `r<number>`, a discussion comment's node id.
    let kind_of = |change: MessageChange, c: &Comment, id: String| {
        let text = c.body.clone().unwrap_or_default();
        let said = mentions(&text, me);
        let message = Message::new(id, author(c.user.as_ref()), text.as_str())
            .with_markdown(text.as_str())
            .with_change(change)
            .with_mention(said.iter().any(|m| m.is_me))
            .with_mentions(said);
        EventKind::Message(message)
    };
    let change = match action.as_str() {
        "created" | "opened" | "submitted" => MessageChange::Posted,
        "edited" => MessageChange::Edited,
        "deleted" => MessageChange::Deleted,
        _ => MessageChange::Posted,
    };
    let event = match (d.event, action.as_str()) {
        ("issue_comment", "created" | "edited" | "deleted") => {
            let (Some(issue), Some(c)) = (&p.issue, &p.comment) else {
                return Err(malformed("an issue_comment without issue or comment"));
            };
            d.event(
                thread(Conversation::Issue(positive(issue.number)?)),
                kind_of(change, c, c.id.to_string()),
            )
        }
        ("pull_request_review_comment", "created" | "edited" | "deleted") => {
            let (Some(pull), Some(c)) = (&p.pull_request, &p.comment) else {
                return Err(malformed(
                    "a review comment without pull_request or comment",
                ));
            };
            let root = c.in_reply_to_id.unwrap_or(c.id);
            let c_ = Conversation::Review {
                pull: positive(pull.number)?,
                root: positive(root)?,
            };
            d.event(thread(c_), kind_of(change, c, format!("r{}", c.id)))
        }
        ("discussion_comment", "created" | "edited" | "deleted") => {
            let (Some(discussion), Some(c)) = (&p.discussion, &p.comment) else {
                return Err(malformed(
                    "a discussion comment without discussion or comment",
                ));
            };
            d.event(
                thread(Conversation::Discussion(positive(discussion.number)?)),
                kind_of(
                    change,
                    c,
                    c.node_id.clone().unwrap_or_else(|| c.id.to_string()),
                ),
            )
        }
        ("issues" | "pull_request", "opened") => {
            let opened = opened(&p, d.event)?;
            let mention = me.is_mentioned_in(opened.body.as_deref().unwrap_or_default());
            d.event(
                thread(Conversation::Issue(positive(opened.number)?)),
                opening(opened, "opened", mention),
            )
        }
        ("issues" | "pull_request", "assigned") if me.is_me(p.assignee.as_ref()) => {
            let opened = opened(&p, d.event)?;
            d.event(
                thread(Conversation::Issue(positive(opened.number)?)),
                opening(opened, "assigned", true),
            )
        }
        ("pull_request", "review_requested") if me.is_me(p.requested_reviewer.as_ref()) => {
            let opened = opened(&p, d.event)?;
            d.event(
                thread(Conversation::Issue(positive(opened.number)?)),
                opening(opened, "review-requested", true),
            )
        }
        ("pull_request_review", "submitted")
            if p.review
                .as_ref()
                .and_then(|r| r.body.as_deref())
                .is_some_and(|b| !b.trim().is_empty()) =>
        {
            let (Some(pull), Some(review)) = (&p.pull_request, &p.review) else {
                return Err(malformed("a review without pull_request"));
            };
            let text = review.body.clone().unwrap_or_default();
            let message = Message::new(
                format!("review-{}", review.id),
                author(review.user.as_ref()),
                text.as_str(),
            )
            .with_markdown(text.as_str())
            .with_mention(me.is_mentioned_in(&text));
            d.event(
                thread(Conversation::Issue(positive(pull.number)?)),
                EventKind::Message(message),
            )
        }
        ("issues" | "pull_request" | "pull_request_review", _) => {
            let number = p
                .issue
                .as_ref()
                .or(p.pull_request.as_ref())
                .map(|i| i.number)
                .or(p.number)
                .unwrap_or_default();
            let data = json!({
                "number": number,
                "label": p.label.as_ref().map(|l| l.name.clone()),
                "assignee": p.assignee.as_ref().map(|u| u.login.clone()),
                "requested_reviewer": p.requested_reviewer.as_ref().map(|u| u.login.clone()),
                "head_sha": p.after.clone().or_else(|| p.pull_request.as_ref().and_then(|pr| pr.head.as_ref()).and_then(|h| h.sha.clone())),
                "review_state": p.review.as_ref().and_then(|r| r.state.clone()),
                "sender": p.sender.as_ref().map(|u| u.login.clone()),
            });
            d.event(
                thread(Conversation::Issue(positive(number)?)),
                other(d.event, &action, data),
            )
        }
        _ => return Ok(ignored(&format!("unsupported:{}.{action}", d.event))),
    };
    Ok(one(event))
}

/// The issue or pull request an `issues` or `pull_request` event is about.
fn opened<'a>(p: &'a Payload, event: &str) -> Result<&'a Issue, WebhookError> {
    let found = if event == "issues" {
        p.issue.as_ref()
    } else {
        p.pull_request.as_ref()
    };
    found.ok_or_else(|| malformed("an issues or pull_request event without its issue"))
}

/// An issue or a pull request as the message that opens its conversation:
/// its title, a blank line, its body.
fn opening(issue: &Issue, why: &str, mention: bool) -> EventKind {
    let title = issue.title.clone().unwrap_or_default();
    let body = issue.body.clone().unwrap_or_default();
    let text = if body.is_empty() {
        title
    } else {
        format!("{title}\n\n{body}")
    };
    EventKind::Message(
        Message::new(
            format!("{why}-{}", issue.number),
            author(issue.user.as_ref()),
            text.as_str(),
        )
        .with_markdown(text.as_str())
        .with_mention(mention),
    )
}

fn author(user: Option<&User>) -> Author {
    match user {
        Some(u) => Author::new(u.id.to_string())
            .with_name(u.login.clone())
            .with_bot(u.kind.as_deref() == Some("Bot")),
        None => Author::default(),
    }
}

fn other(event: &str, action: &str, data: serde_json::Value) -> EventKind {
    let name = if action.is_empty() {
        format!("github.{event}")
    } else {
        format!("github.{event}.{action}")
    };
    EventKind::Other(OtherEvent::new(name, data))
}

fn positive(n: u64) -> Result<u64, WebhookError> {
    if n == 0 {
        Err(malformed("a number or id that is missing or zero"))
    } else {
        Ok(n)
    }
}

fn one(event: Event) -> Inbound {
    Inbound::Event(Box::new(event))
}

fn ignored(reason: &str) -> Inbound {
    Inbound::Ignored {
        reason: reason.to_owned(),
    }
}

fn pong() -> http::Response<Bytes> {
    let mut r = http::Response::new(Bytes::from_static(b"pong"));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    r
}
