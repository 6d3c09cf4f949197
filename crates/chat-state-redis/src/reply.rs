//! Reading script replies, and encoding events for the scripts.
//!
//! An event goes to a script as `<ref>\n<event JSON>`, where `<ref>` is
//! `<event id>|<thread>` with `%`, `|` and newlines percent-escaped: scripts
//! copy the ref into reports without ever parsing JSON. A stored entry is
//! `<admitted ms>|<expires ms or empty>|<ref>\n<JSON>`; a report is
//! `R<fate>|<ref>`. Scripts hand entries back as stored, with the time their
//! batch was handed out, so the wait and the expiry are computed from the
//! server's clock alone — and read the same when the batch is handed out again.

use std::sync::Arc;
use std::time::Duration;

use chat_core::{
    Batch, EntryView, Event, EventId, Fate, HolderView, Report, ScopeKey, ScopeView, StateError,
    ThreadRef, Waiting,
};
use redis::Value;

use crate::error::bad_reply;

/// The admission time of an entry admitted as the first of its batch, as
/// stored: the batch's hand-out time stands for it (see [`item`]). A number
/// later than any clock, so a reader that takes the wait as
/// `max(0, hand-out - admitted)` reads what such an entry always is: waited
/// 0, not expired.
pub(crate) const AT_HAND_OUT: i64 = 9_999_999_999_999;

/// An event as the scripts take it: its ref, a newline, its JSON.
pub(crate) fn encode_event(event: &Event) -> Result<Vec<u8>, StateError> {
    encode_into(Vec::with_capacity(256), event)
}

/// An event as the admits of `Drop` and `Queue` take it: already the entry
/// it is stored as when it runs at once (`<AT_HAND_OUT>||<ref>\n<JSON>`),
/// so the script stores it without building it again.
pub(crate) fn encode_run_first(event: &Event) -> Result<Vec<u8>, StateError> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(AT_HAND_OUT.to_string().as_bytes());
    out.extend_from_slice(b"||");
    encode_into(out, event)
}

fn encode_into(mut out: Vec<u8>, event: &Event) -> Result<Vec<u8>, StateError> {
    escape_into(&mut out, event.id.as_str());
    out.push(b'|');
    escape_into(&mut out, &event.thread.thread);
    out.push(b'\n');
    serde_json::to_writer(&mut out, event).map_err(|e| StateError::Codec(Box::new(e)))?;
    Ok(out)
}

fn escape_into(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'%' | b'|' | b'\n' => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
            b => out.push(b),
        }
    }
}

fn unescape(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Some(b) = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(s[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A ref (`<id>|<thread>`) as an event id and a thread of `scope`'s tag.
fn read_ref(r: &[u8], scope: &ScopeKey) -> (EventId, Option<ThreadRef>) {
    let mut parts = r.splitn(2, |b| *b == b'|');
    let id = EventId::new(unescape(parts.next().unwrap_or_default()));
    let thread = parts.next().map(|t| {
        ThreadRef::new(
            scope.platform,
            scope.tenant.as_str(),
            scope.channel.as_str(),
            unescape(t),
        )
    });
    (id, thread)
}

/// One item of a handed-out batch: an entry or a report.
#[derive(Debug)]
enum Item {
    Entry(Waiting),
    Report(Report),
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

    /// The rest of a handed-out batch: `seq, attempt, lapses, handed-out ms,
    /// items`, the items' reports read as threads of `scope`.
    pub(crate) fn batch(&mut self, scope: &ScopeKey) -> Result<Batch, StateError> {
        let seq = u64::try_from(self.int()?).map_err(|_| bad_reply("negative seq"))?;
        let attempt = u32::try_from(self.int()?).map_err(|_| bad_reply("bad attempt"))?;
        let lapses = u32::try_from(self.int()?).map_err(|_| bad_reply("bad lapses"))?;
        let handed_at = self.int()?;
        let items = match self.next()? {
            Value::Array(items) => items,
            Value::Nil => Vec::new(),
            _ => return Err(bad_reply("expected a list of items")),
        };
        let mut entries = Vec::with_capacity(items.len());
        let mut reports = Vec::new();
        for v in items {
            match item(&bytes(v)?, handed_at, scope)? {
                Item::Entry(w) => entries.push(w),
                Item::Report(r) => reports.push(r),
            }
        }
        Ok(Batch::new(seq, entries, reports).attempts(attempt, lapses))
    }

    /// The next item: a recovered slot run's stored entry, as a batch of one.
    pub(crate) fn slot_entry(&mut self, scope: &ScopeKey) -> Result<Batch, StateError> {
        let raw = bytes(self.next()?)?;
        let admitted = raw
            .split(|b| *b == b'|')
            .next()
            .and_then(|s| std::str::from_utf8(s).ok()?.parse().ok())
            .unwrap_or(0);
        Ok(match item(&raw, admitted, scope)? {
            Item::Entry(w) => Batch::new(0, vec![w], Vec::new()),
            Item::Report(r) => Batch::new(0, Vec::new(), vec![r]),
        })
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

fn bytes(v: Value) -> Result<Vec<u8>, StateError> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        _ => Err(bad_reply("expected an entry")),
    }
}

/// Reads a stored item, judged at `handed_at` (server ms). An entry whose event
/// cannot be decoded becomes an `Undecodable` report, so one bad entry never
/// takes its batch down with it.
fn item(raw: &[u8], handed_at: i64, scope: &ScopeKey) -> Result<Item, StateError> {
    if let Some(rest) = raw.strip_prefix(b"R") {
        let (fate, r) = rest
            .split_first()
            .ok_or_else(|| bad_reply("empty report"))?;
        let fate = match fate {
            b'e' => Fate::Evicted,
            b's' => Fate::Superseded,
            _ => Fate::Undecodable,
        };
        let r = r.strip_prefix(b"|").unwrap_or(r);
        let (id, thread) = read_ref(r, scope);
        return Ok(Item::Report(Report::new(id, thread, fate)));
    }
    let newline = raw
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| bad_reply("malformed entry"))?;
    let (header, json) = (&raw[..newline], &raw[newline + 1..]);
    let mut parts = header.splitn(3, |b| *b == b'|');
    let (Some(at), Some(expires), Some(r)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad_reply("malformed entry"));
    };
    let millis = |s: &[u8]| -> Option<i64> { std::str::from_utf8(s).ok()?.parse().ok() };
    let at = match millis(at).ok_or_else(|| bad_reply("malformed entry time"))? {
        AT_HAND_OUT => handed_at,
        at => at,
    };
    let expired = !expires.is_empty()
        && millis(expires).ok_or_else(|| bad_reply("malformed entry expiry"))? <= handed_at;
    let Ok(event) = serde_json::from_slice::<Event>(json) else {
        let (id, thread) = read_ref(r, scope);
        return Ok(Item::Report(Report::new(id, thread, Fate::Undecodable)));
    };
    let waited = Duration::from_millis(u64::try_from(handed_at - at).unwrap_or(0));
    Ok(Item::Entry(Waiting::new(Arc::new(event), waited, expired)))
}

/// A duration as whole milliseconds for a script, at least 1 (Redis refuses a
/// zero expiry).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The items of an array reply.
fn items(v: Value) -> Result<Vec<Value>, StateError> {
    match v {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        _ => Err(bad_reply("expected an array")),
    }
}

/// An entry's header (`<admitted ms>|<expires ms>|<ref>`) as an operator
/// sees it, `now_ms` by the server's clock.
fn entry_view(v: Value, scope: &ScopeKey, now_ms: i64) -> Result<EntryView, StateError> {
    let Value::BulkString(header) = v else {
        return Err(bad_reply("expected an entry header"));
    };
    let mut parts = header.splitn(3, |b| *b == b'|');
    let admitted: i64 = parts
        .next()
        .and_then(|a| std::str::from_utf8(a).ok())
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| bad_reply("an entry without its admission time"))?;
    let _expires = parts.next();
    let (id, thread) = read_ref(parts.next().unwrap_or_default(), scope);
    let age = Duration::from_millis(u64::try_from(now_ms - admitted).unwrap_or(0));
    Ok(EntryView::new(
        id,
        thread.map(|t| t.thread).unwrap_or_default(),
        age,
    ))
}

/// An `inspect.lua` reply as the view of `scope`; `None` when it is idle.
pub(crate) fn scope_view(v: Value, scope: &ScopeKey) -> Result<Option<ScopeView>, StateError> {
    let mut r = items(v)?.into_iter();
    let mut next = || r.next().ok_or_else(|| bad_reply("inspect reply too short"));
    let now = int(next()?)?;
    let millis = |v: Value| int(v).map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
    let mut view = ScopeView::new(scope.clone());
    let mut lease = items(next()?)?.into_iter();
    if let (Some(token), Some(f), Some(pttl)) = (lease.next(), lease.next(), lease.next()) {
        view.holder = Some(HolderView::new(&text(token)?, fence(f)?, millis(pttl)?));
    }
    let entries = |v: Value| -> Result<Vec<EntryView>, StateError> {
        items(v)?
            .into_iter()
            .map(|e| entry_view(e, scope, now))
            .collect()
    };
    view.in_flight = entries(next()?)?;
    view.queued = entries(next()?)?;
    view.pending = entries(next()?)?;
    view.burst = entries(next()?)?;
    let slots = items(next()?)?;
    for slot in slots.chunks(3) {
        if let [token, expiry, f] = slot {
            let expires = int(expiry.clone()).unwrap_or(now);
            let left = Duration::from_millis(u64::try_from(expires - now).unwrap_or(0));
            view.slots.push(HolderView::new(
                &text(token.clone())?,
                fence(f.clone())?,
                left,
            ));
        }
    }
    view.in_flight.extend(entries(next()?)?);
    Ok((!view.is_idle()).then_some(view))
}

#[cfg(test)]
mod tests {
    use chat_core::{Platform, ThreadRef};
    use chat_testkit::EventBuilder;

    use super::*;

    fn event() -> Event {
        EventBuilder::new(ThreadRef::new(Platform::new("test"), "T", "C", "1|x"))
            .id("a|b%")
            .mention("x|y")
            .build()
    }

    fn scope() -> ScopeKey {
        ThreadRef::new(Platform::new("test"), "T", "C", "1|x").thread_scope()
    }

    fn stored(prefix: &[u8], e: &Event) -> Vec<u8> {
        let mut v = prefix.to_vec();
        match encode_event(e) {
            Ok(encoded) => v.extend(encoded),
            Err(err) => panic!("encoding the event: {err}"),
        }
        v
    }

    fn entry(raw: &[u8], at: i64) -> Waiting {
        match item(raw, at, &scope()) {
            Ok(Item::Entry(w)) => w,
            other => panic!("expected an entry, got {other:?}"),
        }
    }

    fn report(raw: &[u8]) -> Report {
        match item(raw, 0, &scope()) {
            Ok(Item::Report(r)) => r,
            other => panic!("expected a report, got {other:?}"),
        }
    }

    #[test]
    fn entries_round_trip_and_are_judged_when_handed_out() {
        let e = event();
        let raw = stored(b"1000|1500|", &e);
        let w = entry(&raw, 1400);
        assert_eq!(*w.event, e);
        assert_eq!(w.waited, Duration::from_millis(400));
        assert!(!w.expired);
        assert!(entry(&raw, 1500).expired);
    }

    #[test]
    fn entries_without_a_ttl_never_expire() {
        assert!(!entry(&stored(b"1000||", &event()), i64::MAX).expired);
    }

    fn run_first(e: &Event) -> Vec<u8> {
        match encode_run_first(e) {
            Ok(encoded) => encoded,
            Err(err) => panic!("encoding the event: {err}"),
        }
    }

    /// An event run at once is sent as its stored entry: the run-at-once
    /// stand-in, no expiry, then what every other entry holds after its times.
    #[test]
    fn a_run_at_once_event_is_sent_as_its_entry() {
        let e = event();
        let first = run_first(&e);
        assert_eq!(first, stored(b"9999999999999||", &e));
        assert_eq!(first[15..], stored(b"", &e)[..]);
    }

    /// Its batch's hand-out time is its admission time: waited 0 and not
    /// expired, however late a hand-out reads it — as a reader that takes the
    /// wait as max(0, hand-out - admitted) reads it too.
    #[test]
    fn a_run_at_once_entry_waited_nothing_at_any_hand_out() {
        let e = event();
        for handed_at in [0, 1_000, 1_796_000_000_000, AT_HAND_OUT + 1] {
            let w = entry(&run_first(&e), handed_at);
            assert_eq!(*w.event, e);
            assert_eq!(w.waited, Duration::ZERO, "{handed_at}");
            assert!(!w.expired, "{handed_at}");
        }
    }

    #[test]
    fn the_ref_survives_separators_in_ids_and_threads() {
        let e = event();
        let mut raw = b"Re|".to_vec();
        let enc = stored(b"", &e);
        let newline = enc.iter().position(|b| *b == b'\n');
        assert!(newline.is_some(), "the encoded event has a newline");
        raw.extend_from_slice(&enc[..newline.unwrap_or(enc.len())]);
        let r = report(&raw);
        assert_eq!(r.event_id, e.id);
        assert_eq!(r.thread, Some(e.thread));
        assert_eq!(r.fate, Fate::Evicted);
        assert_eq!(report(b"Rs|x|").fate, Fate::Superseded);
    }

    #[test]
    fn an_undecodable_event_is_reported_not_an_error() {
        let r = report(b"1|2|ev1|7\nnot json");
        assert_eq!(r.event_id.as_str(), "ev1");
        assert_eq!(r.fate, Fate::Undecodable);
    }

    #[test]
    fn malformed_entries_are_codec_errors() {
        for bad in [&b"nope"[..], b"x|1|r\n{}", b"1\n{}"] {
            assert!(
                matches!(item(bad, 0, &scope()), Err(StateError::Codec(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn durations_are_whole_positive_milliseconds() {
        assert_eq!(ms(Duration::ZERO), 1);
        assert_eq!(ms(Duration::from_micros(1500)), 1);
        assert_eq!(ms(Duration::from_secs(2)), 2000);
    }
}
