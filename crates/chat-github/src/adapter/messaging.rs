//! Comments and reactions ([Issue comments](https://docs.github.com/en/rest/issues/comments),
//! [Review comments](https://docs.github.com/en/rest/pulls/comments),
//! [Reactions](https://docs.github.com/en/rest/reactions/reactions)).
//!
//! A message is a comment in GitHub Markdown: text as is, a card as
//! Markdown (tables, task lists and details blocks pass through; link
//! buttons become links; action buttons and selects, which GitHub cannot
//! show, are named in a note). A reply carries its key in an HTML comment
//! (`<!-- chat-rs reply … -->`, invisible when rendered), so that a run
//! repeated after a crash finds the comment it posted instead of posting
//! it again. The [`MessageRef`] of a review comment is `r<id>`.

use async_trait::async_trait;
use chat_core::card::Card;
use chat_core::{
    AdapterError, HistoryMessage, HistoryPage, MessageRef, OutboundMessage, PostKey, ThreadRef,
};
use http::Method;
use serde_json::{Value, json};

use super::{GitHubAdapter, MAX_COMMENT_CHARS};
use crate::conversation::Conversation;

/// Comments read per page, GitHub's largest.
const PAGE: usize = 100;
/// Pages read when looking for a repeated run's earlier reply.
pub(crate) const MAX_PAGES: usize = 10;

/// The portable reaction names GitHub has, and the GitHub reaction each is.
const REACTIONS: [(&str, &str); 14] = [
    ("+1", "+1"),
    ("thumbsup", "+1"),
    ("-1", "-1"),
    ("thumbsdown", "-1"),
    ("laugh", "laugh"),
    ("smile", "laugh"),
    ("confused", "confused"),
    ("heart", "heart"),
    ("hooray", "hooray"),
    ("tada", "hooray"),
    ("rocket", "rocket"),
    ("eyes", "eyes"),
    ("white_check_mark", "+1"),
    ("heavy_check_mark", "+1"),
];

/// GitHub's reaction for `emoji` (a name, with or without colons).
pub(crate) fn reaction(emoji: &str) -> Result<&'static str, AdapterError> {
    let name = emoji.trim_matches(':');
    REACTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, r)| *r)
        .ok_or_else(|| {
            AdapterError::Invalid(format!(
                "GitHub has no reaction {emoji:?}: +1, -1, laugh, confused, heart, hooray, rocket, eyes"
            ))
        })
}

/// A card as GitHub Markdown: link buttons as links, a note naming what
/// GitHub cannot show.
fn card_markdown(card: &Card) -> String {
    card.to_link_markdown("GitHub")
}

/// The marker a reply carries.
fn marker(key: &PostKey) -> String {
    let id: String = key
        .event_id
        .as_str()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':'))
        .collect();
    format!("<!-- chat-rs reply {id}/{} -->", key.position)
}

/// The comment body of `message`, within GitHub's limit.
pub(crate) fn render(message: &OutboundMessage) -> Result<String, AdapterError> {
    let mut body = match &message.card {
        Some(card) => card_markdown(card),
        None => message.text.clone(),
    };
    if body.trim().is_empty() {
        return Err(AdapterError::Invalid("an empty comment".to_owned()));
    }
    if let Some(key) = &message.post_key {
        body.push_str("\n\n");
        body.push_str(&marker(key));
    }
    let chars = body.chars().count();
    if chars > MAX_COMMENT_CHARS {
        return Err(AdapterError::Invalid(format!(
            "a comment of {chars} characters: GitHub takes at most {MAX_COMMENT_CHARS}"
        )));
    }
    Ok(body)
}

/// `owner/name` of a thread's repository.
fn repo(thread: &ThreadRef) -> Result<&str, AdapterError> {
    let r = thread.channel.as_str();
    match r.split_once('/') {
        Some((owner, name)) if !owner.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(r)
        }
        _ => Err(AdapterError::Invalid(format!(
            "not a GitHub repository: {r:?} (owner/name)"
        ))),
    }
}

fn conversation(thread: &ThreadRef) -> Result<Conversation, AdapterError> {
    Conversation::parse(&thread.thread).ok_or_else(|| {
        AdapterError::Invalid(format!("not a GitHub conversation: {:?}", thread.thread))
    })
}

/// Whether `message` is a discussion comment (written through GraphQL).
fn in_discussion(message: &MessageRef) -> bool {
    matches!(
        Conversation::parse(&message.thread.thread),
        Some(Conversation::Discussion(_))
    )
}

/// The comment's REST path (`issues/comments/1` or `pulls/comments/1`).
fn comment_path(message: &MessageRef) -> Result<String, AdapterError> {
    let repo = repo(&message.thread)?;
    let (kind, id) = match message.id.strip_prefix('r') {
        Some(id) => ("pulls", id),
        None => ("issues", message.id.as_str()),
    };
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AdapterError::Invalid(format!(
            "not a GitHub comment id: {:?}",
            message.id
        )));
    }
    Ok(format!("repos/{repo}/{kind}/comments/{id}"))
}

fn id_of(answer: &Value) -> Result<u64, AdapterError> {
    answer["id"]
        .as_u64()
        .ok_or_else(|| AdapterError::Decode("a comment answer without id".into()))
}

impl GitHubAdapter {
    /// The comment an earlier run posted under `key` in `thread`, if any:
    /// the bot's own comments carrying its marker, read a page at a time.
    async fn earlier_reply(
        &self,
        thread: &ThreadRef,
        conversation: Conversation,
        key: &PostKey,
    ) -> Result<Option<String>, AdapterError> {
        let repo = repo(thread)?;
        let token = self.token_for(&thread.tenant).await?;
        let marker = marker(key);
        let (path, prefix) = match conversation {
            Conversation::Issue(n) => (format!("repos/{repo}/issues/{n}/comments"), ""),
            Conversation::Review { pull, .. } => {
                (format!("repos/{repo}/pulls/{pull}/comments"), "r")
            }
            Conversation::Discussion(n) => {
                return self.discussion_earlier(thread, n, &marker).await;
            }
        };
        for page in 1..=MAX_PAGES {
            let answer = self
                .client
                .call(
                    Method::GET,
                    &format!("{path}?per_page={PAGE}&page={page}"),
                    &token,
                    None,
                )
                .await?;
            let comments = answer.as_array().cloned().unwrap_or_default();
            let found = comments.iter().find(|c| {
                c["user"]["login"]
                    .as_str()
                    .is_some_and(|l| self.identity.is_login(l))
                    && c["body"].as_str().is_some_and(|b| b.contains(&marker))
            });
            if let Some(c) = found {
                return Ok(Some(format!("{prefix}{}", id_of(c)?)));
            }
            if comments.len() < PAGE {
                break;
            }
        }
        Ok(None)
    }
}

#[async_trait]
impl chat_core::Messaging for GitHubAdapter {
    /// A comment on the issue or pull request, or a reply in the review
    /// thread. A repeated run's reply is looked for first (at least once:
    /// when the comments cannot be read, it is posted).
    async fn post(
        &self,
        thread: &ThreadRef,
        message: &OutboundMessage,
    ) -> Result<MessageRef, AdapterError> {
        let repo = repo(thread)?;
        let conversation = conversation(thread)?;
        let body = render(message)?;
        if let Some(key) = message.post_key.as_ref().filter(|k| k.attempt > 1) {
            match self.earlier_reply(thread, conversation, key).await {
                Ok(Some(id)) => {
                    return Ok(MessageRef {
                        thread: thread.clone(),
                        id,
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "github: could not read the conversation for an earlier reply; posting");
                }
            }
        }
        let token = self.token_for(&thread.tenant).await?;
        let (path, prefix) = match conversation {
            Conversation::Issue(n) => (format!("repos/{repo}/issues/{n}/comments"), ""),
            Conversation::Review { pull, root } => (
                format!("repos/{repo}/pulls/{pull}/comments/{root}/replies"),
                "r",
            ),
            Conversation::Discussion(n) => {
                return Ok(MessageRef {
                    thread: thread.clone(),
                    id: self.discussion_post(thread, n, &body).await?,
                });
            }
        };
        let answer = self
            .client
            .call(Method::POST, &path, &token, Some(&json!({ "body": body })))
            .await?;
        Ok(MessageRef {
            thread: thread.clone(),
            id: format!("{prefix}{}", id_of(&answer)?),
        })
    }

    async fn edit(
        &self,
        message: &MessageRef,
        content: &OutboundMessage,
    ) -> Result<(), AdapterError> {
        if in_discussion(message) {
            return self.discussion_edit(message, &render(content)?).await;
        }
        let path = comment_path(message)?;
        let token = self.token_for(&message.thread.tenant).await?;
        let body = render(content)?;
        self.client
            .call(Method::PATCH, &path, &token, Some(&json!({ "body": body })))
            .await
            .map(drop)
    }

    async fn delete(&self, message: &MessageRef) -> Result<(), AdapterError> {
        if in_discussion(message) {
            return self.discussion_delete(message).await;
        }
        let path = comment_path(message)?;
        let token = self.token_for(&message.thread.tenant).await?;
        self.client
            .call(Method::DELETE, &path, &token, None)
            .await
            .map(drop)
    }

    /// One of GitHub's eight reactions (`+1`, `-1`, `laugh`, `confused`,
    /// `heart`, `hooray`, `rocket`, `eyes`, or a common alias of one);
    /// reacting twice is not an error.
    async fn react(&self, message: &MessageRef, emoji: &str) -> Result<(), AdapterError> {
        let content = reaction(emoji)?;
        if in_discussion(message) {
            return self
                .node_reaction(&message.thread, &message.id, content, true)
                .await;
        }
        let path = format!("{}/reactions", comment_path(message)?);
        let token = self.token_for(&message.thread.tenant).await?;
        self.client
            .call(
                Method::POST,
                &path,
                &token,
                Some(&json!({ "content": content })),
            )
            .await
            .map(drop)
    }

    /// GitHub takes 65,536 characters per comment, the reply's key
    /// (under 200 characters) included.
    fn max_text_len(&self) -> Option<usize> {
        Some(MAX_COMMENT_CHARS - 200)
    }

    fn mention(&self, user_id: &str) -> Option<String> {
        // GitHub mentions by login, which an event's author carries as its
        // name; an id alone says nothing.
        let _ = user_id;
        None
    }
}

/// The status is an `eyes` reaction (reactions notify no one, a comment
/// would): on the issue or pull request, or on a review thread's first
/// comment. Clearing it removes the bot's `eyes` there, whichever replica
/// set it.
#[async_trait]
impl chat_core::Status for GitHubAdapter {
    async fn set_status(
        &self,
        thread: &ThreadRef,
        status: Option<&str>,
    ) -> Result<(), AdapterError> {
        let repo = repo(thread)?;
        let subject = match conversation(thread)? {
            Conversation::Issue(n) => format!("repos/{repo}/issues/{n}/reactions"),
            Conversation::Review { root, .. } => {
                format!("repos/{repo}/pulls/comments/{root}/reactions")
            }
            Conversation::Discussion(n) => {
                return self.discussion_status(thread, n, status.is_some()).await;
            }
        };
        let token = self.token_for(&thread.tenant).await?;
        if status.is_some() {
            return self
                .client
                .call(
                    Method::POST,
                    &subject,
                    &token,
                    Some(&json!({ "content": "eyes" })),
                )
                .await
                .map(drop);
        }
        let mine = self
            .client
            .call(
                Method::GET,
                &format!("{subject}?content=eyes&per_page={PAGE}"),
                &token,
                None,
            )
            .await?;
        let ids: Vec<u64> = mine
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| {
                r["user"]["login"]
                    .as_str()
                    .is_some_and(|l| self.identity.is_login(l))
            })
            .filter_map(|r| r["id"].as_u64())
            .collect();
        for id in ids {
            self.client
                .call(Method::DELETE, &format!("{subject}/{id}"), &token, None)
                .await?;
        }
        Ok(())
    }
}

/// Comments of a conversation as history: an issue's or pull request's
/// comments, or one review thread's, a page at a time (`cursor` is the
/// next page's number), oldest first.
#[async_trait]
impl chat_core::History for GitHubAdapter {
    async fn history(
        &self,
        thread: &ThreadRef,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<HistoryPage, AdapterError> {
        let repo = repo(thread)?;
        let (path, root) = match conversation(thread)? {
            Conversation::Issue(n) => (format!("repos/{repo}/issues/{n}/comments"), None),
            Conversation::Review { pull, root } => {
                (format!("repos/{repo}/pulls/{pull}/comments"), Some(root))
            }
            Conversation::Discussion(n) => {
                return self.discussion_history(thread, n, cursor, limit).await;
            }
        };
        let per = limit.clamp(1, PAGE);
        let page: usize = match cursor {
            Some(c) => c
                .parse()
                .map_err(|_| AdapterError::Invalid(format!("not a history cursor: {c:?}")))?,
            None => 1,
        };
        let token = self.token_for(&thread.tenant).await?;
        let answer = self
            .client
            .call(
                Method::GET,
                &format!("{path}?per_page={per}&page={page}"),
                &token,
                None,
            )
            .await?;
        let comments = answer.as_array().cloned().unwrap_or_default();
        let next = (comments.len() >= per)
            .then(|| page.checked_add(1).map(|p| p.to_string()))
            .flatten();
        let messages = comments
            .iter()
            .filter(|c| {
                root.is_none_or(|root| {
                    c["id"].as_u64() == Some(root) || c["in_reply_to_id"].as_u64() == Some(root)
                })
            })
            .filter_map(|c| self.past(c, root.is_some()))
            .collect();
        Ok(HistoryPage::new(messages, next))
    }
}

impl GitHubAdapter {
    /// A comment of the REST API as a message of the history.
    fn past(&self, c: &Value, review: bool) -> Option<HistoryMessage> {
        let id = c["id"].as_u64()?;
        let login = c["user"]["login"].as_str().unwrap_or_default();
        let author = chat_core::Author::new(c["user"]["id"].as_u64().unwrap_or(0).to_string())
            .with_name(login)
            .with_bot(c["user"]["type"].as_str() == Some("Bot"))
            .with_me(self.identity.is_login(login));
        let body = c["body"].as_str().unwrap_or_default();
        let at_ms = c["created_at"]
            .as_str()
            .and_then(crate::app_auth::unix_secs)
            .map_or(0, |s| s.saturating_mul(1000));
        let id = if review {
            format!("r{id}")
        } else {
            id.to_string()
        };
        let message = chat_core::Message::new(id, author, body).with_markdown(body);
        Some(HistoryMessage::from_message(message, at_ms))
    }
}

#[cfg(test)]
mod tests {
    use chat_core::EventId;

    use super::*;

    #[test]
    fn every_portable_reaction_name_is_one_of_githubs_eight() {
        for (name, r) in REACTIONS {
            assert_eq!(reaction(name).ok(), Some(r));
            assert_eq!(reaction(&format!(":{name}:")).ok(), Some(r));
        }
        assert!(reaction("party_parrot").is_err());
    }

    #[test]
    fn a_reply_carries_its_key_and_is_refused_past_githubs_limit() {
        let mut m = OutboundMessage::text("done");
        m.post_key = Some(PostKey::new(EventId::new("d1-guid"), 2, 1));
        assert_eq!(
            render(&m).ok().as_deref(),
            Some("done\n\n<!-- chat-rs reply d1guid/2 -->")
        );
        assert!(render(&OutboundMessage::text("  ")).is_err());
        assert!(render(&OutboundMessage::text("x".repeat(MAX_COMMENT_CHARS + 1))).is_err());
    }

    #[test]
    fn comment_paths_follow_the_kind_of_comment() {
        let thread = ThreadRef::new(crate::GITHUB, "7", "octo/hello", "42");
        let issue = MessageRef {
            thread: thread.clone(),
            id: "99".to_owned(),
        };
        assert_eq!(
            comment_path(&issue).ok().as_deref(),
            Some("repos/octo/hello/issues/comments/99")
        );
        let review = MessageRef {
            thread: thread.clone(),
            id: "r99".to_owned(),
        };
        assert_eq!(
            comment_path(&review).ok().as_deref(),
            Some("repos/octo/hello/pulls/comments/99")
        );
        let bad = MessageRef {
            thread,
            id: "r".to_owned(),
        };
        assert!(comment_path(&bad).is_err());
    }
}
