//! Signed Slack `event_callback` deliveries, as Slack sends them: an
//! `app_mention` (or a `message` that mentions the bot) in a thread, about
//! 1.5 KB of JSON with the text twice (as `text` and as rich-text blocks).
//!
//! Slot `n` of a run is either a new event or, for a share of slots, a retry of
//! the event before it: the same body (same `event_id`, same `ts`), signed again,
//! with `X-Slack-Retry-Num: 1`. Every new event has its own `event_id` and
//! `ts`, so deduplication sees it as new; its thread is one of `threads` roots,
//! picked by a hash of `n`, so events overlap on threads.

use std::fmt::Write as _;

/// How a run's deliveries look.
#[derive(Debug, Clone)]
pub struct Shape {
    /// The signing secret the bot verifies with.
    pub secret: String,
    /// The workspace (tenant).
    pub team: String,
    /// The bot's user id; every delivery mentions it.
    pub bot_user: String,
    /// Thread roots events are spread over; 0: every event starts a thread of
    /// its own.
    pub threads: u64,
    /// Channels the threads are spread over (at least 1).
    pub channels: u64,
    /// Share of slots (0..=1) that re-send the previous event as a retry.
    pub retry_share: f64,
    /// Share of new events (0..=1) sent as `message` instead of `app_mention`.
    pub message_share: f64,
    /// Length of the message text.
    pub text_bytes: usize,
    /// When not 0, each text asks echo-bot to stream this many words
    /// (`stream: w1 w2 …`) instead of asking a question of `text_bytes`.
    pub stream_words: usize,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            secret: "bench-signing-secret".to_owned(),
            team: "T0BENCH01".to_owned(),
            bot_user: "U0BENCHBOT".to_owned(),
            threads: 256,
            channels: 8,
            retry_share: 0.0,
            message_share: 0.25,
            text_bytes: 300,
            stream_words: 0,
        }
    }
}

/// What slot `n` of a run sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The event's number (the slot of its first delivery).
    pub event: u64,
    /// Whether this is a retry of an earlier delivery.
    pub retry: bool,
}

/// Builds the deliveries of one run.
#[derive(Debug, Clone)]
pub struct Deliveries {
    shape: Shape,
    /// Keeps ids and timestamps unique across runs against one bot.
    nonce: u64,
    retry_ppm: u64,
    message_ppm: u64,
    filler: String,
}

/// Longest walk back from a retry slot to the event it repeats.
const MAX_RETRY_CHAIN: u64 = 64;

impl Deliveries {
    /// Deliveries of `shape`; `nonce` (e.g. the start time in ms) keeps event
    /// ids and timestamps of different runs apart.
    pub fn new(shape: Shape, nonce: u64) -> Self {
        let ppm = |share: f64| (share.clamp(0.0, 1.0) * 1_000_000.0).round() as u64;
        let retry_ppm = ppm(shape.retry_share);
        let message_ppm = ppm(shape.message_share);
        let filler = if shape.stream_words > 0 {
            (1..=shape.stream_words)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            filler(shape.text_bytes)
        };
        Self {
            shape: Shape {
                channels: shape.channels.max(1),
                ..shape
            },
            nonce,
            retry_ppm,
            message_ppm,
            filler,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Slot `n`: a new event, or a retry of the previous slot's event.
    pub fn slot(&self, n: u64) -> Slot {
        if !self.is_retry(n) {
            return Slot {
                event: n,
                retry: false,
            };
        }
        let mut k = n;
        for _ in 0..MAX_RETRY_CHAIN {
            k -= 1;
            if !self.is_retry(k) {
                return Slot {
                    event: k,
                    retry: true,
                };
            }
        }
        Slot {
            event: n,
            retry: false,
        }
    }

    fn is_retry(&self, n: u64) -> bool {
        n > 0 && mix(n ^ 0x5eed) % 1_000_000 < self.retry_ppm
    }

    /// The event's `ts`, unique per event and run.
    fn ts(&self, event: u64) -> String {
        format!(
            "{}.{:06}",
            self.nonce / 1000 + event / 1_000_000,
            event % 1_000_000
        )
    }

    /// The thread root `ts` and channel of an event.
    fn thread(&self, event: u64) -> (String, String) {
        let s = &self.shape;
        if s.threads == 0 {
            let channel = format!("C0BENCH{:03}", event % s.channels);
            return (self.ts(event), channel);
        }
        let k = mix(event) % s.threads;
        // Roots are older than any event of the run.
        let root = format!("{}.{:06}", self.nonce / 1000 - 86_400, k);
        (root, format!("C0BENCH{:03}", k % s.channels))
    }

    /// The JSON body of event `event` (a retry sends the same bytes).
    pub fn body(&self, event: u64) -> Vec<u8> {
        let s = &self.shape;
        let ts = self.ts(event);
        let (root, channel) = self.thread(event);
        let in_thread = root != ts;
        let is_message = mix(event ^ 0xa11ce) % 1_000_000 < self.message_ppm;
        let kind = if is_message { "message" } else { "app_mention" };
        let user = format!("U0USER{:04}", mix(event ^ 0x05e4) % 500);
        let h = mix(event ^ 0xc0ffee);
        let client_msg_id = format!(
            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
            h >> 32,
            (h >> 16) & 0xffff,
            h & 0xfff,
            (h >> 20) & 0xfff,
            mix(h) & 0xffff_ffff_ffff
        );
        let text = if s.stream_words > 0 {
            format!("stream: {}", self.filler)
        } else {
            format!("question {event}: {}", self.filler)
        };
        let mut b = String::with_capacity(1024 + 2 * text.len());
        let _ = write!(
            b,
            r#"{{"token":"bEnChToKeN0123456789abcd","team_id":"{team}","context_team_id":"{team}","context_enterprise_id":null,"api_app_id":"A0BENCH001","event":{{"user":"{user}","type":"{kind}","ts":"{ts}","client_msg_id":"{client_msg_id}","text":"<@{bot}> {text}","team":"{team}","#,
            team = s.team,
            bot = s.bot_user,
        );
        if in_thread {
            let _ = write!(b, r#""thread_ts":"{root}","parent_user_id":"U0USER0000","#);
        }
        let _ = write!(
            b,
            r#""blocks":[{{"type":"rich_text","block_id":"{block}","elements":[{{"type":"rich_text_section","elements":[{{"type":"user","user_id":"{bot}"}},{{"type":"text","text":" {text}"}}]}}]}}],"channel":"{channel}","#,
            block = &client_msg_id[..5],
            bot = s.bot_user,
        );
        if is_message {
            b.push_str(r#""channel_type":"channel","#);
        }
        let _ = write!(
            b,
            r#""event_ts":"{ts}"}},"type":"event_callback","event_id":"Ev{nonce:X}{event:08X}","event_time":{time},"authorizations":[{{"enterprise_id":null,"team_id":"{team}","user_id":"{bot}","is_bot":true,"is_enterprise_install":false}}],"is_ext_shared_channel":false,"event_context":"4-eyJldCI6ImFwcF9tZW50aW9uIiwidGlkIjoiVDBCRU5DSDAxIiwiYWlkIjoiQTBCRU5DSDAwMSIsImNpZCI6IkMwQkVOQ0gwMDEifQ"}}"#,
            nonce = self.nonce,
            time = self.nonce / 1000,
            team = s.team,
            bot = s.bot_user,
        );
        b.into_bytes()
    }

    /// The whole HTTP/1.1 request for slot `n`, signed at `unix_secs`, and the
    /// length of its body.
    pub fn request(&self, host: &str, path: &str, n: u64, unix_secs: u64) -> (Vec<u8>, usize) {
        let slot = self.slot(n);
        let body = self.body(slot.event);
        let ts = unix_secs.to_string();
        let signature = chat_slack::signature::sign(&self.shape.secret, &ts, &body);
        let mut head = String::with_capacity(512);
        let _ = write!(
            head,
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: Slackbot 1.0 (+https://api.slack.com/robots)\r\nAccept: */*\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nX-Slack-Request-Timestamp: {ts}\r\nX-Slack-Signature: {signature}\r\n",
            len = body.len(),
        );
        if slot.retry {
            head.push_str("X-Slack-Retry-Num: 1\r\nX-Slack-Retry-Reason: http_timeout\r\n");
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        (request, body.len())
    }
}

/// Words for message texts (ASCII, nothing JSON needs to escape).
fn filler(len: usize) -> String {
    const WORDS: &[&str] = &[
        "could",
        "you",
        "summarize",
        "the",
        "thread",
        "so",
        "far",
        "and",
        "list",
        "open",
        "questions",
        "about",
        "deploy",
        "rollback",
        "latency",
        "budget",
        "for",
        "staging",
        "before",
        "friday",
        "please",
        "include",
        "owners",
    ];
    let mut s = String::with_capacity(len + 16);
    let mut i = 0usize;
    while s.len() < len {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(WORDS[i % WORDS.len()]);
        i += 1;
    }
    s.truncate(len);
    s
}

/// SplitMix64: a cheap, well-spread hash of a slot number.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    fn deliveries(shape: Shape) -> Deliveries {
        Deliveries::new(shape, 1_700_000_000_123)
    }

    #[test]
    fn bodies_are_json_of_realistic_size_with_unique_ids() -> TestResult {
        let d = deliveries(Shape::default());
        let mut ids = std::collections::HashSet::new();
        let mut tss = std::collections::HashSet::new();
        for n in 0..200 {
            let body = d.body(n);
            assert!((1000..2000).contains(&body.len()), "{} bytes", body.len());
            let v: serde_json::Value = serde_json::from_slice(&body)?;
            assert_eq!(v["type"], "event_callback");
            assert!(ids.insert(v["event_id"].as_str().ok_or("no event_id")?.to_owned()));
            assert!(tss.insert(v["event"]["ts"].as_str().ok_or("no ts")?.to_owned()));
            let text = v["event"]["text"].as_str().ok_or("no text")?;
            assert!(text.starts_with("<@U0BENCHBOT> "));
        }
        Ok(())
    }

    #[test]
    fn stream_words_ask_echo_bot_to_stream_that_many_words() -> TestResult {
        let d = deliveries(Shape {
            stream_words: 40,
            ..Shape::default()
        });
        let v: serde_json::Value = serde_json::from_slice(&d.body(7))?;
        let text = v["event"]["text"].as_str().ok_or("no text")?;
        let words = text
            .strip_prefix("<@U0BENCHBOT> stream: ")
            .ok_or("no stream prefix")?;
        assert_eq!(words.split(' ').count(), 40);
        assert!(
            words.starts_with("w1 w2 ") && words.ends_with(" w40"),
            "{words}"
        );
        Ok(())
    }

    #[test]
    fn threads_overlap_and_zero_means_one_thread_per_event() -> TestResult {
        let d = deliveries(Shape {
            threads: 4,
            ..Shape::default()
        });
        let roots: std::collections::HashSet<_> = (0..100).map(|n| d.thread(n).0).collect();
        assert_eq!(roots.len(), 4);
        let d = deliveries(Shape {
            threads: 0,
            ..Shape::default()
        });
        let v: serde_json::Value = serde_json::from_slice(&d.body(7))?;
        assert!(v["event"].get("thread_ts").is_none());
        Ok(())
    }

    #[test]
    fn retries_repeat_the_previous_event() {
        let d = deliveries(Shape {
            retry_share: 0.2,
            ..Shape::default()
        });
        let retries: Vec<Slot> = (0..10_000).map(|n| d.slot(n)).filter(|s| s.retry).collect();
        assert!((1500..2500).contains(&retries.len()), "{}", retries.len());
        assert!(retries.iter().all(|s| !d.slot(s.event).retry));
        let none = deliveries(Shape::default());
        assert!((0..10_000).all(|n| !none.slot(n).retry));
    }

    #[test]
    fn requests_are_signed_and_retries_are_marked() -> TestResult {
        let d = deliveries(Shape {
            retry_share: 0.5,
            ..Shape::default()
        });
        let n = (1..100).find(|n| d.slot(*n).retry).ok_or("no retry slot")?;
        let (request, len) = d.request("127.0.0.1:3000", "/webhooks/slack", n, 1_700_000_000);
        let text = String::from_utf8(request)?;
        let (head, body) = text.split_once("\r\n\r\n").ok_or("no head")?;
        assert_eq!(body.len(), len);
        assert!(head.starts_with("POST /webhooks/slack HTTP/1.1\r\n"));
        assert!(head.contains("X-Slack-Retry-Num: 1\r\n"));
        assert!(head.contains(&format!("Content-Length: {}\r\n", body.len())));
        let sig =
            chat_slack::signature::sign("bench-signing-secret", "1700000000", body.as_bytes());
        assert!(head.contains(&format!("X-Slack-Signature: {sig}\r\n")));
        assert_eq!(body.as_bytes(), d.body(d.slot(n).event));
        Ok(())
    }
}
