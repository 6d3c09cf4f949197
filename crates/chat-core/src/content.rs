//! What an incoming message holds beyond its text: the users it mentions,
//! the links in it, the files attached to it, and the [`Download`] of a file
//! through the adapter that received it.
//!
//! An adapter fills these from the platform's markup (Slack's `<@U1>`,
//! `<https://x|label>`, `&amp;`; Linear's Markdown) so a handler reads one
//! shape on every platform:
//!
//! ```
//! use chat_core::{Author, Message, Mention, Link};
//!
//! let m = Message::new("1.0", Author::new("U7"), "@echo see docs")
//!     .with_markup("<@U0BOT> see <https://docs.example.com|docs>")
//!     .with_markdown("@echo see [docs](https://docs.example.com)")
//!     .with_mentions(vec![Mention::new("U0BOT").with_name("echo").with_me(true)])
//!     .with_links(vec![Link::new("https://docs.example.com").with_label("docs")]);
//! assert_eq!(m.text, "@echo see docs");
//! assert_eq!(m.text_after_mention(), "see docs");
//! assert!(m.mentions[0].is_me);
//! ```

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::error::AdapterError;

/// A user a message mentions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Mention {
    /// The platform's user id.
    pub user_id: String,
    /// The name shown for the mention, when the platform gave one (or the
    /// mention is of the bot itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The mention is of this bot.
    #[serde(default)]
    pub is_me: bool,
}

impl Mention {
    /// A mention of `user_id`.
    pub fn new(user_id: impl Into<String>) -> Self {
        Self {
            user_id: user_id.into(),
            ..Self::default()
        }
    }

    /// Sets the name shown.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Marks the mention as one of this bot (or not).
    #[must_use]
    pub fn with_me(mut self, is_me: bool) -> Self {
        self.is_me = is_me;
        self
    }
}

/// A link in a message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Link {
    /// Where it points.
    pub url: String,
    /// The text shown for it, when it differs from the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Link {
    /// A link to `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            label: None,
        }
    }

    /// Sets the text shown.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// A file or image attached to an incoming message. Its bytes come through
/// the adapter that received it ([`Downloads`](crate::Downloads)), with the
/// platform's credentials and a size cap.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Attachment {
    /// The platform's file id (Slack `F…`), or the URL when it has none.
    pub id: String,
    /// The file name.
    pub name: String,
    /// The MIME type, when the platform gave one (`image/png`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The size in bytes, when the platform gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Where the adapter downloads it from (Slack's `url_private_download`):
    /// what only the adapter, with the tenant's token, can read.
    pub source: String,
}

impl Attachment {
    /// A file named `name` with id `id`, downloaded from `source`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, source: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            source: source.into(),
            ..Self::default()
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes.
    #[must_use]
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Whether it is an image (its MIME type is `image/…`).
    pub fn is_image(&self) -> bool {
        self.mime_type
            .as_deref()
            .is_some_and(|t| t.starts_with("image/"))
    }
}

type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, AdapterError>> + Send>>;

/// The bytes of an [`Attachment`], as they arrive: a [`Stream`] of chunks
/// that ends with an error once more than its limit arrived (or at once,
/// when the declared length is over it), so a handler reading a screenshot
/// holds at most the limit in memory.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// use bytes::Bytes;
/// use chat_core::{AdapterError, Download};
///
/// let chunks = || {
///     let parts: [Result<Bytes, AdapterError>; 2] =
///         [Ok(Bytes::from_static(b"he")), Ok(Bytes::from_static(b"llo"))];
///     Box::pin(futures_util::stream::iter(parts))
/// };
/// let small = Download::new(None, None, chunks(), 16);
/// assert_eq!(small.bytes().await?, "hello");
///
/// let capped = Download::new(None, None, chunks(), 4);
/// assert!(matches!(capped.bytes().await, Err(AdapterError::TooLarge { limit: 4 })));
/// # Ok::<_, AdapterError>(()) })?;
/// # Ok(()) }
/// ```
pub struct Download {
    content_type: Option<String>,
    length: Option<u64>,
    chunks: Chunks,
    limit: u64,
    read: u64,
    failed: bool,
}

impl fmt::Debug for Download {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Download")
            .field("content_type", &self.content_type)
            .field("length", &self.length)
            .field("limit", &self.limit)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

impl Download {
    /// The download of a body of `length` bytes (when known) arriving as
    /// `chunks`, capped at `limit` bytes.
    pub fn new(
        content_type: Option<String>,
        length: Option<u64>,
        chunks: Chunks,
        limit: u64,
    ) -> Self {
        Self {
            content_type,
            length,
            chunks,
            limit,
            read: 0,
            failed: false,
        }
    }

    /// The `Content-Type` the platform answered, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// The length the platform declared, if any.
    pub fn length(&self) -> Option<u64> {
        self.length
    }

    /// The whole body (at most the limit).
    ///
    /// # Errors
    /// [`AdapterError::TooLarge`] past the limit; the transport's error when
    /// the body breaks off.
    pub async fn bytes(mut self) -> Result<Bytes, AdapterError> {
        let mut all = BytesMut::new();
        while let Some(chunk) = std::future::poll_fn(|cx| Pin::new(&mut self).poll_next(cx)).await {
            all.extend_from_slice(&chunk?);
        }
        Ok(all.freeze())
    }
}

impl Stream for Download {
    type Item = Result<Bytes, AdapterError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let limit = self.limit;
        if self.length.is_some_and(|l| l > limit) {
            self.failed = true;
            return Poll::Ready(Some(Err(AdapterError::TooLarge { limit })));
        }
        match self.chunks.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                self.read = self.read.saturating_add(chunk.len() as u64);
                if self.read > limit {
                    self.failed = true;
                    return Poll::Ready(Some(Err(AdapterError::TooLarge { limit })));
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => {
                self.failed = true;
                Poll::Ready(Some(Err(e)))
            }
            other => other,
        }
    }
}
