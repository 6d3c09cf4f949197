//! Reading script replies, and encoding events for the scripts.
//!
//! A waiting entry is stored as `<admitted ms>|<expires ms or empty>|<event JSON>`;
//! scripts hand entries back as stored, with the server's `now`, so the wait
//! and the expiry are computed from the server's clock alone.

use std::sync::Arc;
use std::time::Duration;

use chat_core::{Event, StateError, Waiting};
use redis::Value;

use crate::error::bad_reply;

/// An event as the scripts store it.
pub(crate) fn encode_event(event: &Event) -> Result<Vec<u8>, StateError> {
    serde_json::to_vec(event).map_err(|e| StateError::Codec(Box::new(e)))
}

/// A script reply, read front to back.
pub(crate) struct Reply {
    items: std::vec::IntoIter<Value>,
}

impl Reply {
    pub(crate) fn new(value: Value) -> Result<Self, StateError> {
        match value {
            Value::Array(items) | Value::Set(items) => Ok(Self {
                items: items.into_iter(),
            }),
            _ => Err(bad_reply("expected an array reply")),
        }
    }

    fn next(&mut self) -> Result<Value, StateError> {
        self.items
            .next()
            .ok_or_else(|| bad_reply("reply shorter than expected"))
    }

    /// The next item as text (a verdict, a reason).
    pub(crate) fn text(&mut self) -> Result<String, StateError> {
        text(self.next()?)
    }

    /// The next item as an integer (a count, a time, a flag).
    pub(crate) fn int(&mut self) -> Result<i64, StateError> {
        int(self.next()?)
    }

    /// The next item as a fencing number.
    pub(crate) fn fence(&mut self) -> Result<u64, StateError> {
        fence(self.next()?)
    }

    /// The next item as a boolean flag (0 / 1).
    pub(crate) fn flag(&mut self) -> Result<bool, StateError> {
        Ok(self.int()? != 0)
    }

    /// The next item as a duration in milliseconds.
    pub(crate) fn millis(&mut self) -> Result<Duration, StateError> {
        Ok(Duration::from_millis(
            u64::try_from(self.int()?).unwrap_or(0),
        ))
    }

    /// The next item: one entry, or nothing (nil / false).
    pub(crate) fn entry(&mut self, now: i64) -> Result<Option<Waiting>, StateError> {
        match self.next()? {
            Value::Nil | Value::Boolean(false) => Ok(None),
            v => Ok(Some(waiting(&bytes(v)?, now)?)),
        }
    }

    /// The next item: a list of entries, oldest first.
    pub(crate) fn entries(&mut self, now: i64) -> Result<Vec<Waiting>, StateError> {
        match self.next()? {
            Value::Array(items) => items
                .into_iter()
                .map(|v| waiting(&bytes(v)?, now))
                .collect(),
            Value::Nil => Ok(Vec::new()),
            _ => Err(bad_reply("expected a list of entries")),
        }
    }
}

pub(crate) fn text(v: Value) -> Result<String, StateError> {
    match v {
        Value::BulkString(b) => String::from_utf8(b).map_err(|_| bad_reply("text is not UTF-8")),
        Value::SimpleString(s) => Ok(s),
        Value::Okay => Ok("OK".to_owned()),
        _ => Err(bad_reply("expected text")),
    }
}

pub(crate) fn int(v: Value) -> Result<i64, StateError> {
    match v {
        Value::Int(i) => Ok(i),
        Value::BulkString(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad_reply("expected an integer")),
        Value::Boolean(b) => Ok(i64::from(b)),
        _ => Err(bad_reply("expected an integer")),
    }
}

/// A fencing number (the scripts return it as text: it passes 2^53 only in the
/// year 2255, but text keeps it exact whatever the server does with numbers).
pub(crate) fn fence(v: Value) -> Result<u64, StateError> {
    match v {
        Value::Int(i) => u64::try_from(i).map_err(|_| bad_reply("negative fence")),
        Value::BulkString(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad_reply("expected a fence")),
        _ => Err(bad_reply("expected a fence")),
    }
}

/// A fence, or nothing (nil / false): the answer of `claim` and `acquire_slot`.
pub(crate) fn optional_fence(v: Value) -> Result<Option<u64>, StateError> {
    match v {
        Value::Nil | Value::Boolean(false) => Ok(None),
        v => fence(v).map(Some),
    }
}

fn bytes(v: Value) -> Result<Vec<u8>, StateError> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        _ => Err(bad_reply("expected an entry")),
    }
}

/// Reads a stored entry, judged at the server's `now` (ms).
pub(crate) fn waiting(entry: &[u8], now: i64) -> Result<Waiting, StateError> {
    let mut parts = entry.splitn(3, |b| *b == b'|');
    let (Some(at), Some(expires), Some(json)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad_reply("malformed entry"));
    };
    let millis = |s: &[u8]| -> Option<i64> { std::str::from_utf8(s).ok()?.parse().ok() };
    let at = millis(at).ok_or_else(|| bad_reply("malformed entry time"))?;
    let expired = !expires.is_empty()
        && millis(expires).ok_or_else(|| bad_reply("malformed entry expiry"))? <= now;
    let event: Event = serde_json::from_slice(json).map_err(|e| StateError::Codec(Box::new(e)))?;
    let waited = Duration::from_millis(u64::try_from(now - at).unwrap_or(0));
    Ok(Waiting::new(Arc::new(event), waited, expired))
}

/// A duration as whole milliseconds for a script, at least 1 (Redis refuses a
/// zero expiry).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use chat_core::{Platform, ThreadRef};
    use chat_testkit::EventBuilder;

    use super::*;

    fn event() -> Event {
        EventBuilder::new(ThreadRef::new(Platform::Test, "T", "C", "1"))
            .id("a|b")
            .mention("x|y")
            .build()
    }

    #[test]
    fn entries_round_trip_and_are_judged_at_the_servers_now() {
        let e = event();
        let mut stored = b"1000|1500|".to_vec();
        stored.extend(encode_event(&e).unwrap());
        let w = waiting(&stored, 1400).unwrap();
        assert_eq!(*w.event, e);
        assert_eq!(w.waited, Duration::from_millis(400));
        assert!(!w.expired);
        assert!(waiting(&stored, 1500).unwrap().expired);
    }

    #[test]
    fn entries_without_a_ttl_never_expire() {
        let mut stored = b"1000||".to_vec();
        stored.extend(encode_event(&event()).unwrap());
        assert!(!waiting(&stored, i64::MAX).unwrap().expired);
    }

    #[test]
    fn malformed_entries_are_codec_errors() {
        for bad in [&b"nope"[..], b"x|1|{}", b"1|2|not json"] {
            assert!(matches!(waiting(bad, 0), Err(StateError::Codec(_))));
        }
    }

    #[test]
    fn durations_are_whole_positive_milliseconds() {
        assert_eq!(ms(Duration::ZERO), 1);
        assert_eq!(ms(Duration::from_micros(1500)), 1);
        assert_eq!(ms(Duration::from_secs(2)), 2000);
    }
}
