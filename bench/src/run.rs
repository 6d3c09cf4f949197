//! The load itself: open loop at a fixed offered rate, or closed loop at the
//! highest rate C connections sustain.
//!
//! **Open loop.** Slot `n` is due at `start + n / rate`. Each idle connection
//! claims the next unclaimed slot and sends it when it falls due, on tokio's
//! millisecond timer aimed half a tick early, so a slot goes out within about
//! half a millisecond of its due time without a timer thread waking the runtime
//! for every slot. A slot's latency is measured from when it was *due* (or from
//! its write, when that came first), not from when a connection got to send
//! it, so a slow server cannot hide its backlog by slowing the sender down (no
//! coordinated omission). The service time (from the actual write) is reported
//! beside it.
//!
//! **Closed loop.** C connections each send the next slot as soon as the
//! previous answer arrives; latency is the service time.
//!
//! Every loop ends by count and by time: the schedule has a fixed number of
//! slots, and nothing is sent past the duration plus one request timeout.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::http::Conn;
use super::payload::Deliveries;

/// Half of tokio's timer resolution: how early an open-loop slot's timer aims.
const HALF_TICK: Duration = Duration::from_micros(500);

/// How hard to push.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Open loop at this many deliveries per second.
    Rate(f64),
    /// Closed loop: as fast as the connections go.
    Max,
}

/// One run's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where to send (loopback).
    pub addr: SocketAddr,
    /// The `Host` header.
    pub host: String,
    /// The request path.
    pub path: String,
    /// Offered load.
    pub load: Load,
    /// Connections (keep-alive, one request in flight each).
    pub connections: usize,
    /// How long to send.
    pub duration: Duration,
    /// Most deliveries to send (also bounds an open-loop schedule).
    pub count: Option<u64>,
    /// Leading time whose deliveries are sent but not measured.
    pub warmup: Duration,
    /// How long one request may take before the connection is given up.
    pub timeout: Duration,
}

/// What one run measured.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Requests written.
    pub sent: u64,
    /// Of those, retries of an earlier delivery (`X-Slack-Retry-Num`).
    pub retries: u64,
    /// Responses received (any status).
    pub completed: u64,
    /// Responses by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that failed on the connection (reset, refused, malformed answer).
    pub errors: u64,
    /// Requests not answered within the timeout.
    pub timeouts: u64,
    /// Open loop: slots that fell due but were never sent before the end.
    pub not_sent: u64,
    /// Ack latency of measured responses, from the due time (µs, sorted).
    pub ack_us: Vec<u32>,
    /// Service time of measured responses, from the write (µs, sorted).
    pub service_us: Vec<u32>,
    /// The measured window: from the end of the warmup to the last response.
    pub window: Duration,
    /// Bytes of request bodies sent, for the average.
    pub body_bytes: u64,
}

impl Measured {
    /// Measured responses per second.
    pub fn achieved_rate(&self) -> f64 {
        let secs = self.window.as_secs_f64();
        if secs > 0.0 {
            self.ack_us.len() as f64 / secs
        } else {
            0.0
        }
    }

    /// Responses with a 2xx status.
    pub fn acknowledged(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(s, _)| (200..300).contains(*s))
            .map(|(_, n)| n)
            .sum()
    }
}

/// The `p`-quantile (0..=1) of sorted samples, in ms.
pub fn quantile_ms(sorted_us: &[u32], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted_us.len() as f64).ceil() as usize;
    let i = rank.clamp(1, sorted_us.len()) - 1;
    f64::from(sorted_us[i]) / 1000.0
}

/// What each connection task collects.
#[derive(Default)]
struct Tally {
    taken: u64,
    sent: u64,
    retries: u64,
    statuses: BTreeMap<u16, u64>,
    errors: u64,
    timeouts: u64,
    ack_us: Vec<u32>,
    service_us: Vec<u32>,
    last_done: Option<Instant>,
    body_bytes: u64,
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

struct Shared {
    plan: Plan,
    deliveries: Deliveries,
    start: Instant,
    measure_from: Instant,
    /// Nothing is sent after this.
    hard_stop: Instant,
}

impl Shared {
    /// Sends slot `n` on `conn` (connecting first when needed), records it.
    async fn send(&self, conn: &mut Option<Conn>, n: u64, due: Instant, t: &mut Tally) {
        t.taken += 1;
        let (request, body_len) =
            self.deliveries
                .request(&self.plan.host, &self.plan.path, n, unix_secs());
        if conn.is_none() {
            match tokio::time::timeout(self.plan.timeout, Conn::connect(self.plan.addr)).await {
                Ok(Ok(c)) => *conn = Some(c),
                Ok(Err(_)) => {
                    t.errors += 1;
                    // Refused: the server is down or out of sockets; do not spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    return;
                }
                Err(_) => {
                    t.timeouts += 1;
                    return;
                }
            }
        }
        let Some(c) = conn.as_mut() else {
            return;
        };
        let written = Instant::now();
        t.sent += 1;
        if self.deliveries.slot(n).retry {
            t.retries += 1;
        }
        t.body_bytes += body_len as u64;
        match tokio::time::timeout(self.plan.timeout, c.roundtrip(&request)).await {
            Ok(Ok(response)) => {
                let done = Instant::now();
                *t.statuses.entry(response.status()).or_insert(0) += 1;
                if due >= self.measure_from {
                    t.ack_us.push(micros(done - due.max(written)));
                    t.service_us.push(micros(done - written));
                    t.last_done = Some(done);
                }
                if response.close {
                    *conn = None;
                }
            }
            Ok(Err(_)) => {
                t.errors += 1;
                *conn = None;
            }
            Err(_) => {
                t.timeouts += 1;
                *conn = None;
            }
        }
    }
}

/// Runs `plan` with `deliveries`; returns what it measured.
pub async fn run(plan: Plan, deliveries: Deliveries) -> Measured {
    let connections = plan.connections.max(1);
    // Connect everything before the clock starts.
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections {
        conns.push(
            tokio::time::timeout(plan.timeout, Conn::connect(plan.addr))
                .await
                .ok()
                .and_then(Result::ok),
        );
    }
    let start = Instant::now() + Duration::from_millis(20);
    let shared = Arc::new(Shared {
        measure_from: start + plan.warmup,
        hard_stop: start + plan.duration + plan.timeout,
        start,
        plan,
        deliveries,
    });
    let tallies = match shared.plan.load {
        Load::Rate(rate) => open_loop(&shared, conns, rate).await,
        Load::Max => closed_loop(&shared, conns).await,
    };
    let (tallies, not_sent) = tallies;
    let mut m = Measured {
        not_sent,
        ..Measured::default()
    };
    let mut last_done = None;
    for t in tallies {
        m.sent += t.sent;
        m.retries += t.retries;
        m.errors += t.errors;
        m.timeouts += t.timeouts;
        m.body_bytes += t.body_bytes;
        for (s, n) in t.statuses {
            *m.statuses.entry(s).or_insert(0) += n;
        }
        m.ack_us.extend(t.ack_us);
        m.service_us.extend(t.service_us);
        last_done = last_done.max(t.last_done);
    }
    m.completed = m.statuses.values().sum();
    m.ack_us.sort_unstable();
    m.service_us.sort_unstable();
    m.window = last_done.map_or(Duration::ZERO, |d| {
        d.saturating_duration_since(shared.measure_from)
    });
    m
}

async fn open_loop(shared: &Arc<Shared>, conns: Vec<Option<Conn>>, rate: f64) -> (Vec<Tally>, u64) {
    let rate = rate.max(0.001);
    let by_time = (rate * shared.plan.duration.as_secs_f64()).ceil() as u64;
    let total = shared.plan.count.map_or(by_time, |c| c.min(by_time));
    let period = 1.0 / rate;
    // The next slot nobody has claimed: an idle connection claims it and
    // waits for it to fall due, so the next free connection takes the next
    // slot and a late slot goes out as soon as a connection is free.
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(conns.len());
    for conn in conns {
        let shared = Arc::clone(shared);
        let next = Arc::clone(&next);
        tasks.push(tokio::spawn(async move {
            let mut conn = conn;
            let mut t = Tally::default();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let due = shared.start + Duration::from_secs_f64(n as f64 * period);
                // tokio's timer fires on the first millisecond tick at or after
                // its deadline; aiming half a tick early centres the release on
                // the due time.
                let aim = due.checked_sub(HALF_TICK).unwrap_or(due);
                tokio::time::sleep_until(aim.into()).await;
                if Instant::now() >= shared.hard_stop {
                    break;
                }
                shared.send(&mut conn, n, due, &mut t).await;
            }
            t
        }));
    }
    let mut tallies = Vec::with_capacity(tasks.len());
    for task in tasks {
        if let Ok(t) = task.await {
            tallies.push(t);
        }
    }
    let taken: u64 = tallies.iter().map(|t| t.taken).sum();
    (tallies, total.saturating_sub(taken))
}

async fn closed_loop(shared: &Arc<Shared>, conns: Vec<Option<Conn>>) -> (Vec<Tally>, u64) {
    let limit = shared.plan.count.unwrap_or(u64::MAX);
    let stop_sending = shared.start + shared.plan.duration;
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(conns.len());
    for conn in conns {
        let shared = Arc::clone(shared);
        let next = Arc::clone(&next);
        tasks.push(tokio::spawn(async move {
            let mut conn = conn;
            let mut t = Tally::default();
            tokio::time::sleep_until(shared.start.into()).await;
            loop {
                let now = Instant::now();
                if now >= stop_sending {
                    break;
                }
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= limit {
                    break;
                }
                shared.send(&mut conn, n, now, &mut t).await;
            }
            t
        }));
    }
    let mut tallies = Vec::with_capacity(tasks.len());
    for task in tasks {
        if let Ok(t) = task.await {
            tallies.push(t);
        }
    }
    (tallies, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles() {
        let s: Vec<u32> = (1..=1000).map(|i| i * 1000).collect();
        assert_eq!(quantile_ms(&s, 0.5), 500.0);
        assert_eq!(quantile_ms(&s, 0.99), 990.0);
        assert_eq!(quantile_ms(&s, 0.999), 999.0);
        assert_eq!(quantile_ms(&s, 1.0), 1000.0);
        assert_eq!(quantile_ms(&[], 0.5), 0.0);
    }
}
