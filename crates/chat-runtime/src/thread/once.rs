//! [`Thread::post_once`]: a post under a caller's idempotency key, so a
//! retried job (a cron run, a CI hook, an approval) posts once — on any
//! replica, with nothing kept in the process.
//!
//! The key's record lives in the state backend's KV: first a *claim* (who
//! posts, which attempt, until when), then the *posted* message. A caller
//! that finds the message returns it; one that finds a live claim waits for
//! it; one that finds a lapsed claim (its poster died or failed) takes it
//! over with the next attempt, and that post goes out as a repeat: the
//! adapter first looks for the message an earlier attempt posted
//! ([`PostKey`](chat_core::PostKey) with an attempt above 1) and returns it
//! instead of posting again.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use chat_core::{AdapterError, EventId, KvStore, MessageRef, OutboundMessage, PostKey, SetMode};
use serde::{Deserialize, Serialize};

use super::{SentMessage, Thread};

/// How long a claim holds before another caller may take the post over.
pub(crate) const CLAIM: Duration = Duration::from_secs(30);

/// How often a caller that found a live claim looks again.
const POLL: Duration = Duration::from_millis(100);

/// A key's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum Record {
    /// Attempt `attempt` is posting, until `until_ms` (Unix ms).
    Claimed { attempt: u32, until_ms: u64 },
    /// Posted: the message.
    Posted { message: MessageRef },
}

impl Record {
    fn bytes(&self) -> Result<Bytes, AdapterError> {
        serde_json::to_vec(self)
            .map(Bytes::from)
            .map_err(|e| AdapterError::Decode(Box::new(e)))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn kv_error(e: chat_core::StateError) -> AdapterError {
    AdapterError::Transport(Box::new(e))
}

impl Thread {
    /// The KV key of an idempotency key in this thread.
    pub(crate) fn once_key(&self, key: &str) -> String {
        let t = &self.thread;
        format!(
            "post-once:{}:{}:{}:{}:{key}",
            t.platform.as_str(),
            t.tenant.as_str(),
            t.channel,
            t.thread
        )
    }

    /// Posts `message` once for `key`, a key of the caller's (a job id, a
    /// CI run and step, an approval id): every later call with the same key
    /// in this thread — a retried job, the same job on another replica —
    /// returns the message the first posted, for
    /// [`idempotency_ttl`](crate::RetentionOptions::idempotency_ttl).
    ///
    /// Two calls at once: one posts, the other waits for it (up to its
    /// deadline, else [`AdapterError::InProgress`]). A caller that died
    /// mid-post leaves a claim that lapses after 30 s; the next call then
    /// posts as a repeat, which first looks for the earlier attempt's
    /// message (Slack: by its message metadata) — at most once where the
    /// platform can look it up, at least once where it cannot.
    ///
    /// # Errors
    /// The adapter's; [`AdapterError::Transport`] when the state backend
    /// cannot be read (nothing was posted); `InProgress` as above.
    pub async fn post_once(
        &self,
        key: &str,
        message: impl Into<OutboundMessage>,
    ) -> Result<SentMessage, AdapterError> {
        let message = message.into();
        let record_key = self.once_key(key);
        let kv: &dyn KvStore = self.state.as_ref();
        let ttl = Some(self.retention.idempotency_ttl);
        let wait_until = tokio::time::Instant::now() + CLAIM + CLAIM;
        loop {
            let found = kv.get(&record_key).await.map_err(kv_error)?;
            let record = found
                .as_ref()
                .and_then(|b| serde_json::from_slice::<Record>(b).ok());
            let attempt = match (&record, &found) {
                (Some(Record::Posted { message }), _) => {
                    return Ok(SentMessage {
                        thread: self.clone(),
                        message: message.clone(),
                    });
                }
                (Some(Record::Claimed { until_ms, .. }), _) if *until_ms > now_ms() => {
                    // Someone is posting: wait for them, within our bounds.
                    let bound = self.deadline.map_or(wait_until, |d| d.min(wait_until));
                    if tokio::time::Instant::now() + POLL > bound {
                        return Err(AdapterError::InProgress);
                    }
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                (Some(Record::Claimed { attempt, .. }), _) => attempt.saturating_add(1),
                // An unreadable record is taken over like a lapsed claim.
                (None, Some(_)) => 2,
                (None, None) => 1,
            };
            let claim = Record::Claimed {
                attempt,
                until_ms: now_ms() + u64::try_from(CLAIM.as_millis()).unwrap_or(u64::MAX),
            }
            .bytes()?;
            let mode = match found {
                Some(old) => SetMode::IfEquals(old),
                None => SetMode::IfAbsent,
            };
            if !kv
                .set(&record_key, claim.clone(), ttl, mode)
                .await
                .map_err(kv_error)?
            {
                // Another caller got there first: look again.
                continue;
            }
            let keyed = message.clone().with_post_key(PostKey::new(
                EventId::new(format!("once:{key}")),
                0,
                attempt,
            ));
            return match self.post(keyed).await {
                Ok(sent) => {
                    let posted = Record::Posted {
                        message: sent.message.clone(),
                    }
                    .bytes()?;
                    if let Err(e) = kv.set(&record_key, posted, ttl, SetMode::Always).await {
                        // The claim lapses and the next caller finds the
                        // post by its key.
                        tracing::warn!(error = %e, "recording an idempotent post failed");
                    }
                    Ok(sent)
                }
                Err(e) => {
                    // Whether it posted is unknown: end the claim now, so the
                    // next call repeats it as a further attempt that looks first.
                    let lapsed = Record::Claimed {
                        attempt,
                        until_ms: 0,
                    }
                    .bytes()?;
                    if let Err(kv_e) = kv
                        .set(&record_key, lapsed, ttl, SetMode::IfEquals(claim))
                        .await
                    {
                        tracing::debug!(error = %kv_e, "ending a failed post's claim failed; it lapses");
                    }
                    Err(e)
                }
            };
        }
    }
}
