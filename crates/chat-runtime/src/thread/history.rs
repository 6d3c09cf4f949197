//! A thread's history through its [`Thread`]: pages in either order, one
//! message by id, the channel's own history, and the transcript an LLM
//! client takes.

use std::collections::VecDeque;

use chat_core::{AdapterError, Author, Capability, HistoryMessage, HistoryOrder};
use futures_util::{Stream, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::Thread;

/// How many messages a history read asks for per page.
const HISTORY_PAGE: usize = 200;

/// The most messages turned around when the platform cannot read a thread
/// in the order asked for (Slack reads a thread oldest first only): the
/// whole thread is read in the other order, up to this many.
pub const MAX_TURNED_AROUND: usize = 10_000;

/// Who said a [`Turn`] of a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// A person (or another bot) in the conversation.
    User,
    /// This bot.
    Assistant,
}

/// One message of a conversation as an LLM client takes it
/// ([`Thread::transcript`], [`Ctx::transcript`](crate::Ctx::transcript)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Turn {
    /// `assistant` for the bot's own messages, `user` for everyone else's.
    pub role: Role,
    /// Who wrote it.
    pub author: Author,
    /// Its plain text.
    pub text: String,
    /// The platform's message id.
    pub message_id: String,
}

impl Turn {
    /// The turn of a message: `assistant` when this bot wrote it.
    pub fn of(message: &chat_core::Message) -> Self {
        Self {
            role: if message.author.is_me {
                Role::Assistant
            } else {
                Role::User
            },
            author: message.author.clone(),
            text: message.text.clone(),
            message_id: message.id.clone(),
        }
    }
}

/// Where a page stream is: reading natively from a cursor, or handing out
/// a history read in the other order and turned around.
enum Pages {
    Native(Option<String>),
    TurnedAround(VecDeque<HistoryMessage>),
    Done,
}

impl Thread {
    /// Up to `limit` of the thread's messages, oldest first (the thread's
    /// first message included, on Slack the root), read page by page.
    ///
    /// # Errors
    /// The adapter's; [`AdapterError::Unsupported`] where the platform has no
    /// history to read.
    pub async fn history(&self, limit: usize) -> Result<Vec<HistoryMessage>, AdapterError> {
        self.history_in(HistoryOrder::OldestFirst, limit).await
    }

    /// Up to `limit` of the thread's latest messages, newest first.
    ///
    /// # Errors
    /// As [`history`](Self::history).
    pub async fn history_newest(&self, limit: usize) -> Result<Vec<HistoryMessage>, AdapterError> {
        self.history_in(HistoryOrder::NewestFirst, limit).await
    }

    /// Up to `limit` messages in `order`.
    ///
    /// # Errors
    /// As [`history`](Self::history).
    pub async fn history_in(
        &self,
        order: HistoryOrder,
        limit: usize,
    ) -> Result<Vec<HistoryMessage>, AdapterError> {
        let mut out = Vec::new();
        let pages = self.history_pages_in(order, HISTORY_PAGE.min(limit.max(1)));
        futures_util::pin_mut!(pages);
        while out.len() < limit {
            match pages.try_next().await? {
                Some(page) => out.extend(page),
                None => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// The thread's messages page by page (`page_size` at most each), oldest
    /// first, following the platform's cursor; each page is one call bounded
    /// by the run's deadline.
    pub fn history_pages(
        &self,
        page_size: usize,
    ) -> impl Stream<Item = Result<Vec<HistoryMessage>, AdapterError>> + Send + '_ {
        self.history_pages_in(HistoryOrder::OldestFirst, page_size)
    }

    /// The thread's messages page by page in `order`. Where the platform
    /// reads only the other order (a Slack thread newest first, a Slack
    /// channel oldest first), the first page reads the whole history in
    /// that order — up to [`MAX_TURNED_AROUND`] messages, else
    /// [`AdapterError::Invalid`] — and the pages hand it out turned around.
    pub fn history_pages_in(
        &self,
        order: HistoryOrder,
        page_size: usize,
    ) -> impl Stream<Item = Result<Vec<HistoryMessage>, AdapterError>> + Send + '_ {
        let page_size = page_size.max(1);
        futures_util::stream::try_unfold(Pages::Native(None), move |at| async move {
            let cursor = match at {
                Pages::Done => return Ok(None),
                Pages::TurnedAround(mut rest) => {
                    let page: Vec<HistoryMessage> =
                        rest.drain(..page_size.min(rest.len())).collect();
                    if page.is_empty() {
                        return Ok(None);
                    }
                    return Ok(Some((page, Pages::TurnedAround(rest))));
                }
                Pages::Native(cursor) => cursor,
            };
            let history = self
                .adapter
                .as_history()
                .ok_or(Capability::History.unsupported())?;
            let first = cursor.is_none();
            let page = self
                .bounded(history.history_in(&self.thread, order, cursor.as_deref(), page_size))
                .await;
            match page {
                Ok(page) => {
                    let next = page.next.map_or(Pages::Done, |c| Pages::Native(Some(c)));
                    Ok(Some((page.messages, next)))
                }
                Err(AdapterError::Unsupported(_)) if first => {
                    let mut all = self.read_all(other(order)).await?;
                    all.reverse();
                    let mut rest = VecDeque::from(all);
                    let page: Vec<HistoryMessage> =
                        rest.drain(..page_size.min(rest.len())).collect();
                    Ok(Some((page, Pages::TurnedAround(rest))))
                }
                Err(e) => Err(e),
            }
        })
    }

    /// The whole history in `order`, natively, up to [`MAX_TURNED_AROUND`].
    async fn read_all(&self, order: HistoryOrder) -> Result<Vec<HistoryMessage>, AdapterError> {
        let history = self
            .adapter
            .as_history()
            .ok_or(Capability::History.unsupported())?;
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .bounded(history.history_in(&self.thread, order, cursor.as_deref(), HISTORY_PAGE))
                .await?;
            all.extend(page.messages);
            if all.len() > MAX_TURNED_AROUND {
                return Err(AdapterError::Invalid(format!(
                    "the history is longer than {MAX_TURNED_AROUND} messages, too long to read in the other order"
                )));
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// The message `id` of this thread, normalized; `None` when it is not
    /// there.
    ///
    /// # Errors
    /// As [`history`](Self::history).
    pub async fn message(&self, id: &str) -> Result<Option<HistoryMessage>, AdapterError> {
        let history = self
            .adapter
            .as_history()
            .ok_or(Capability::History.unsupported())?;
        self.bounded(history.message(&self.thread, id)).await
    }

    /// Up to `limit` of the latest messages of the thread's channel itself
    /// (its top-level messages), newest first: the history of
    /// [`in_channel`](Self::in_channel).
    ///
    /// # Errors
    /// As [`history`](Self::history).
    pub async fn channel_history(&self, limit: usize) -> Result<Vec<HistoryMessage>, AdapterError> {
        self.in_channel().history_newest(limit).await
    }

    /// The thread's last `limit` messages, oldest first, as the turns an
    /// LLM client takes: the bot's own as [`Role::Assistant`], everyone
    /// else's as [`Role::User`], each with its plain text. A platform
    /// without history gives an empty transcript;
    /// [`Ctx::transcript`](crate::Ctx::transcript) adds the run's own events.
    ///
    /// # Errors
    /// The adapter's, when the history cannot be read.
    pub async fn transcript(&self, limit: usize) -> Result<Vec<Turn>, AdapterError> {
        if !self.supports(Capability::History) {
            return Ok(Vec::new());
        }
        let mut latest = self.history_newest(limit).await?;
        latest.reverse();
        Ok(latest.iter().map(|m| Turn::of(m)).collect())
    }
}

fn other(order: HistoryOrder) -> HistoryOrder {
    match order {
        HistoryOrder::NewestFirst => HistoryOrder::OldestFirst,
        _ => HistoryOrder::NewestFirst,
    }
}
