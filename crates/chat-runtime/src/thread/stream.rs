//! [`Thread::stream`]: an answer posted as its pieces arrive — natively where
//! the platform streams, else one post and throttled edits whose every
//! intermediate render is healed Markdown.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chat_core::{AdapterError, BoxError, MessageRef, OutboundMessage, Streams};
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;

use super::{DEFAULT_STREAM_INTERVAL, SentMessage, Thread};
use crate::heal::heal_markdown;

/// One piece of a streamed answer: text (`String`, `&str`), or the
/// `Result` of a source that can fail (an LLM client's token stream), whose
/// error ends the stream with [`AdapterError::Source`].
pub trait Chunk: Send {
    /// The piece's text, or why the source failed.
    fn into_chunk(self) -> Result<String, BoxError>;
}

impl Chunk for String {
    fn into_chunk(self) -> Result<String, BoxError> {
        Ok(self)
    }
}

impl Chunk for &str {
    fn into_chunk(self) -> Result<String, BoxError> {
        Ok(self.to_owned())
    }
}

impl<E: Into<BoxError> + Send> Chunk for Result<String, E> {
    fn into_chunk(self) -> Result<String, BoxError> {
        self.map_err(Into::into)
    }
}

type Pieces<'a> = Pin<&'a mut (dyn Stream<Item = Result<String, BoxError>> + Send)>;

/// A stream's pieces as text, the empty ones skipped. A type of its own
/// rather than `map` and `filter` with closures: a handler's future must be
/// `Send` for every lifetime its pieces borrow (`&str`), which a closure over
/// them is not.
struct Texts<S> {
    chunks: Pin<Box<S>>,
}

impl<S, C> Stream for Texts<S>
where
    S: Stream<Item = C>,
    C: Chunk,
{
    type Item = Result<String, BoxError>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        loop {
            match std::task::ready!(self.chunks.as_mut().poll_next(cx)) {
                None => return std::task::Poll::Ready(None),
                Some(chunk) => match chunk.into_chunk() {
                    Ok(text) if text.is_empty() => {}
                    other => return std::task::Poll::Ready(Some(other)),
                },
            }
        }
    }
}

impl Thread {
    /// Streams an answer into the thread as its pieces arrive (an LLM's
    /// tokens, say), as Markdown; returns the message that holds it (the last
    /// one, when a long stream was rotated). The pieces are `String`s, or
    /// `Result<String, E>` from a source that can fail ([`Chunk`]). Edits
    /// happen at most every [`DEFAULT_STREAM_INTERVAL`]; see
    /// [`stream_every`](Self::stream_every).
    ///
    /// Natively where the platform streams (Slack `chat.startStream` /
    /// `appendStream` / `stopStream` in threads, rotated before Slack's
    /// stream expiry; Linear agent sessions: ephemeral thoughts, then one
    /// final response); elsewhere, or when the platform refuses to stream,
    /// by one post of the first piece and throttled edits of the whole text,
    /// each after the previous one completed, and a final edit; where the
    /// platform cannot edit (`Messaging::can_edit`), by one post of the whole
    /// answer once it is complete. Every
    /// intermediate render is healed Markdown ([`heal_markdown`]: an
    /// unclosed `**`, code fence or link is closed), the final one is the
    /// text as it came. Rate limits are waited out within the run's deadline.
    ///
    /// # Errors
    /// [`AdapterError::Invalid`] for a stream that ends without any text;
    /// [`AdapterError::Source`] when the source failed (what arrived before
    /// stays posted, its stream ended); the adapter's errors otherwise.
    pub async fn stream<S, C>(&self, chunks: S) -> Result<SentMessage, AdapterError>
    where
        S: Stream<Item = C> + Send,
        C: Chunk,
    {
        self.stream_every(chunks, DEFAULT_STREAM_INTERVAL).await
    }

    /// [`stream`](Self::stream), with edits of the fallback at most every
    /// `interval`.
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub async fn stream_every<S, C>(
        &self,
        chunks: S,
        interval: Duration,
    ) -> Result<SentMessage, AdapterError>
    where
        S: Stream<Item = C> + Send,
        C: Chunk,
    {
        let pieces = Texts {
            chunks: Box::pin(chunks),
        }
        .fuse();
        futures_util::pin_mut!(pieces);
        let mut pieces: Pieces<'_> = pieces;
        let first = match pieces.next().await {
            Some(Ok(first)) => first,
            Some(Err(e)) => return Err(AdapterError::Source(e)),
            None => {
                return Err(AdapterError::Invalid(
                    "a stream without any text".to_owned(),
                ));
            }
        };
        if !self.adapter.can_edit() {
            return self.stream_whole(first, pieces).await;
        }
        let Some(streams) = self.adapter.as_streams() else {
            return self.stream_by_edits(first, pieces, interval).await;
        };
        match self.open_stream(streams, &first).await {
            Ok((stream, rest)) => {
                self.append_all(streams, &stream, rest).await?;
                self.stream_natively(streams, stream, first, pieces).await
            }
            Err(AdapterError::Unsupported(_) | AdapterError::Api { .. }) => {
                self.stream_by_edits(first, pieces, interval).await
            }
            Err(e) => Err(e),
        }
    }

    /// The native stream: each append after the previous one, with what
    /// arrived meanwhile; a new stream before the platform's lifetime ends.
    async fn stream_natively(
        &self,
        streams: &dyn Streams,
        mut stream: MessageRef,
        first: String,
        mut pieces: Pieces<'_>,
    ) -> Result<SentMessage, AdapterError> {
        let lifetime = streams.stream_lifetime();
        let mut opened = Instant::now();
        let mut shown = first;
        let mut failed = None;
        while let Some(piece) = pieces.next().await {
            let mut text = match piece {
                Ok(text) => text,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            // What else is ready joins this append.
            while let Some(Some(more)) = pieces.next().now_or_never() {
                match more {
                    Ok(more) => text.push_str(&more),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if lifetime.is_some_and(|l| opened.elapsed() >= l) {
                self.bounded(streams.stop_stream(&stream, &shown)).await?;
                let (opened_again, rest) = self.open_stream(streams, &text).await?;
                stream = opened_again;
                self.append_all(streams, &stream, rest).await?;
                opened = Instant::now();
                shown = text;
            } else {
                self.append_all(streams, &stream, &text).await?;
                shown.push_str(&text);
            }
            if failed.is_some() {
                break;
            }
        }
        self.bounded(streams.stop_stream(&stream, &shown)).await?;
        self.posted.store(true, Ordering::Release);
        match failed {
            Some(e) => Err(AdapterError::Source(e)),
            None => Ok(SentMessage {
                thread: self.clone(),
                message: stream,
            }),
        }
    }

    /// Opens a native stream in the thread with as much of `text` as one
    /// call takes; returns it and the rest of `text`, still to append.
    async fn open_stream<'t>(
        &self,
        streams: &dyn Streams,
        text: &'t str,
    ) -> Result<(MessageRef, &'t str), AdapterError> {
        let (head, rest) = text.split_at(head_len(text, streams.max_stream_text_len()));
        let stream = self
            .bounded(streams.start_stream(&self.thread, head, self.recipient.as_deref()))
            .await?;
        Ok((stream, rest))
    }

    /// Appends `text` to a native stream, in as many appends as the
    /// platform's limit on one append's text takes (none when it is empty).
    async fn append_all(
        &self,
        streams: &dyn Streams,
        stream: &MessageRef,
        mut text: &str,
    ) -> Result<(), AdapterError> {
        let limit = streams.max_stream_text_len();
        while !text.is_empty() {
            let (part, rest) = text.split_at(head_len(text, limit));
            self.bounded(streams.append_stream(stream, part)).await?;
            text = rest;
        }
        Ok(())
    }

    /// A platform that cannot edit (WhatsApp): the whole answer, posted once
    /// it is complete; a failed source posts what arrived, healed.
    async fn stream_whole(
        &self,
        first: String,
        mut pieces: Pieces<'_>,
    ) -> Result<SentMessage, AdapterError> {
        let mut full = first;
        while let Some(piece) = pieces.next().await {
            match piece {
                Ok(piece) => full.push_str(&piece),
                Err(e) => {
                    self.post(OutboundMessage::markdown(heal_markdown(&full)))
                        .await?;
                    return Err(AdapterError::Source(e));
                }
            }
        }
        self.post(OutboundMessage::markdown(full)).await
    }

    /// The fallback: one post, then edits of the whole text at most every
    /// `interval`, each after the previous one completed, and a final edit.
    /// Every render before the last is healed Markdown.
    async fn stream_by_edits(
        &self,
        first: String,
        mut pieces: Pieces<'_>,
        interval: Duration,
    ) -> Result<SentMessage, AdapterError> {
        let limit = self.adapter.max_text_len();
        let mut sent = self
            .post(OutboundMessage::markdown(heal_markdown(&first)))
            .await?;
        let mut full = first;
        // Where the message being edited begins in `full`: past a message
        // that filled up, the answer goes on in a new one.
        let mut base = 0;
        let mut shown = heal_markdown(&full);
        // How much of `full` the last render showed.
        let mut rendered = full.len();
        let mut next_edit = Instant::now() + interval;
        let mut failed = None;
        loop {
            tokio::select! {
                piece = pieces.next() => match piece {
                    Some(Ok(piece)) => full.push_str(&piece),
                    Some(Err(e)) => {
                        failed = Some(e);
                        break;
                    }
                    None => break,
                },
                () = tokio::time::sleep_until(next_edit), if full.len() != rendered => {
                    rendered = full.len();
                    if let Some(cut) = limit.and_then(|l| overflow(&full[base..], l)) {
                        // The full message's last render, then the rest in
                        // a new one.
                        sent.edit(OutboundMessage::markdown(full[base..base + cut].trim_end()))
                            .await?;
                        base += cut;
                        shown = heal_markdown(&full[base..]);
                        sent = self.post(OutboundMessage::markdown(shown.as_str())).await?;
                        next_edit = Instant::now() + interval;
                        continue;
                    }
                    let healed = heal_markdown(&full[base..]);
                    if healed != shown {
                        shown = healed;
                        sent.edit(OutboundMessage::markdown(shown.as_str())).await?;
                        next_edit = Instant::now() + interval;
                    }
                }
            }
        }
        // The final render: the text as it came, or — cut by a failed
        // source — healed; past the limit, in as many messages as it takes.
        loop {
            let rest = &full[base..];
            let cut = limit.and_then(|l| overflow(rest, l));
            let part = match cut {
                Some(cut) => rest[..cut].trim_end().to_owned(),
                None if failed.is_some() => heal_markdown(rest),
                None => rest.to_owned(),
            };
            if part != shown {
                // The final edit keeps the spacing too.
                tokio::time::sleep_until(next_edit).await;
                sent.edit(OutboundMessage::markdown(part)).await?;
                next_edit = Instant::now() + interval;
            }
            let Some(cut) = cut else { break };
            base += cut;
            shown = heal_markdown(&full[base..]);
            sent = self.post(OutboundMessage::markdown(shown.as_str())).await?;
        }
        match failed {
            Some(e) => Err(AdapterError::Source(e)),
            None => Ok(sent),
        }
    }
}

/// How much of `text` one call of a native stream carries under `limit`
/// UTF-16 code units: all of it when it fits (or there is no limit), else up
/// to where [`overflow`] cuts. The parts a stream sends join into the text as
/// it came.
fn head_len(text: &str, limit: Option<usize>) -> usize {
    limit.and_then(|l| overflow(text, l)).unwrap_or(text.len())
}

/// Where `text` must be cut to fit `limit` UTF-16 code units: after the
/// last line end (else space) that fits, else at the limit itself; `None`
/// when it fits whole.
fn overflow(text: &str, limit: usize) -> Option<usize> {
    let mut units = 0;
    let mut fit = None;
    for (i, c) in text.char_indices() {
        units += c.len_utf16();
        if units > limit.max(1) {
            fit = Some(i);
            break;
        }
    }
    let fit = fit?;
    let head = &text[..fit];
    let cut = head
        .rfind('\n')
        .or_else(|| head.rfind(' '))
        .map(|i| i + 1)
        .filter(|&i| i > 0)
        .unwrap_or(fit);
    // A first character wider than the limit still moves on.
    Some(cut.max(text.chars().next().map_or(1, char::len_utf8)))
}

#[cfg(test)]
mod tests {
    use super::{head_len, overflow};

    #[test]
    fn a_stream_call_carries_the_whole_text_or_a_head_within_the_limit() {
        assert_eq!(head_len("one two three", None), 13, "no limit");
        assert_eq!(head_len("one two", Some(7)), 7, "fits");
        assert_eq!(head_len("one two three", Some(8)), 8, "after `one two `");
        let mut rest = "🚀🚀🚀 abc";
        let mut parts = Vec::new();
        while !rest.is_empty() {
            let (part, tail) = rest.split_at(head_len(rest, Some(3)));
            parts.push(part);
            rest = tail;
        }
        assert_eq!(parts, ["🚀", "🚀", "🚀 ", "abc"]);
    }

    #[test]
    fn a_text_past_the_limit_is_cut_at_a_line_or_word_end() {
        assert_eq!(overflow("short", 10), None);
        assert_eq!(overflow("one two three", 8), Some(8), "after `one two `");
        assert_eq!(overflow("line one\nline two", 12), Some(9));
        assert_eq!(overflow("abcdefghij", 4), Some(4), "no space: at the limit");
        assert_eq!(overflow("🚀🚀🚀", 3), Some(4), "by UTF-16 units, on a char");
    }
}
