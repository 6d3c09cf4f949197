//! Rate limits of the install flow's two routes, and the bounded store of
//! spent `state`s: what keeps a flood of install links and callbacks from
//! turning the bot into an amplifier against the platform's token endpoint.
//!
//! Both run on the flow's [`Clock`](chat_core::Clock) (so tests drive them),
//! in memory bounded by construction, with O(1) amortized work per request
//! under a lock held for that work only.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A rate: up to `burst` requests at once, then one per `every` (a token
/// bucket, as a generic cell rate algorithm).
///
/// ```
/// use std::time::Duration;
/// use chat_installations::oauth::RateLimit;
/// let limit = RateLimit::new(10, Duration::from_secs(6));
/// assert_eq!(limit.burst, 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimit {
    /// How many requests may come at once.
    pub burst: u32,
    /// One more request is allowed this long after each.
    pub every: Duration,
}

impl RateLimit {
    /// `burst` at once, then one per `every`.
    pub fn new(burst: u32, every: Duration) -> Self {
        Self { burst, every }
    }

    fn interval_ms(self) -> u64 {
        u64::try_from(self.every.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn tolerance_ms(self) -> u64 {
        self.interval_ms()
            .saturating_mul(u64::from(self.burst.saturating_sub(1)))
    }
}

/// One rate limit: the earliest time the next request is fully allowed
/// (its "theoretical arrival time"), moved on by every request allowed.
#[derive(Debug, Default, Clone, Copy)]
struct Cell {
    tat_ms: u64,
}

impl Cell {
    /// Whether a request at `now_ms` is within `limit`; if so, it is counted.
    fn admit(&mut self, limit: RateLimit, now_ms: u64) -> bool {
        if limit.burst == 0 {
            return false;
        }
        let tat = self.tat_ms.max(now_ms);
        if tat - now_ms > limit.tolerance_ms() {
            return false;
        }
        self.tat_ms = tat.saturating_add(limit.interval_ms());
        true
    }

    /// Whether the cell is back to a full burst at `now_ms` (forgetting it
    /// changes nothing).
    fn idle(self, now_ms: u64) -> bool {
        self.tat_ms <= now_ms
    }
}

/// The most client addresses a [`Limiter`] tracks at once.
const MAX_CLIENTS: usize = 10_000;

/// A rate limit per client address (IPv6 addresses by their /64, which one
/// client holds whole), and optionally one over all clients.
#[derive(Debug)]
pub(crate) struct Limiter {
    per_client: Option<RateLimit>,
    overall: Option<RateLimit>,
    state: Mutex<LimiterState>,
}

#[derive(Debug, Default)]
struct LimiterState {
    clients: HashMap<IpAddr, Cell>,
    overall: Cell,
    /// When a full table may next be swept of idle clients.
    next_sweep_ms: u64,
}

impl Limiter {
    pub(crate) fn new(per_client: Option<RateLimit>, overall: Option<RateLimit>) -> Self {
        Self {
            per_client,
            overall,
            state: Mutex::default(),
        }
    }

    /// Whether the client at `client` (when known) may go on at `now_ms`.
    /// A client over its own limit is refused without counting against
    /// the overall one.
    pub(crate) fn client(&self, client: Option<IpAddr>, now_ms: u64) -> bool {
        let (Some(limit), Some(client)) = (self.per_client, client) else {
            return true;
        };
        let key = bucket(client);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.clients.contains_key(&key) && state.clients.len() >= MAX_CLIENTS {
            // Full: forget the clients back to a full burst, at most once an
            // interval. A client that finds no room is held to the overall
            // limit alone.
            if now_ms < state.next_sweep_ms {
                return true;
            }
            state.clients.retain(|_, cell| !cell.idle(now_ms));
            state.next_sweep_ms = now_ms.saturating_add(limit.interval_ms());
            if state.clients.len() >= MAX_CLIENTS {
                return true;
            }
        }
        state.clients.entry(key).or_default().admit(limit, now_ms)
    }

    /// Whether the overall limit lets one more request through at `now_ms`.
    pub(crate) fn overall(&self, now_ms: u64) -> bool {
        let Some(limit) = self.overall else {
            return true;
        };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.overall.admit(limit, now_ms)
    }
}

/// The key an address is limited under.
fn bucket(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let mut octets = v6.octets();
            octets[8..].fill(0);
            IpAddr::from(octets)
        }
    }
}

/// The states already brought back, in this process: each nonce until its
/// state expires, in the order they were spent (so the expired ones leave
/// from the front, a few per call), at most `capacity`.
#[derive(Debug)]
pub(crate) struct SpentInMemory {
    capacity: usize,
    inner: Mutex<Spent>,
}

#[derive(Debug, Default)]
struct Spent {
    nonces: HashSet<String>,
    /// (expiry ms, nonce), oldest first.
    order: VecDeque<(u64, String)>,
    /// Entries looked at, for the tests' bound on the work per call.
    visited: u64,
}

/// What [`SpentInMemory::spend`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spend {
    /// First use: the nonce is spent now.
    Fresh,
    /// Spent before.
    Used,
    /// The store is full of live states: refused, the nonce not spent.
    Full,
}

impl SpentInMemory {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::default(),
        }
    }

    /// Spends `nonce` until `expires_ms`.
    pub(crate) fn spend(&self, nonce: &str, expires_ms: u64, now_ms: u64) -> Spend {
        let mut s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(expires) = s.order.front().map(|(e, _)| *e) {
            s.visited += 1;
            if expires > now_ms {
                break;
            }
            if let Some((_, gone)) = s.order.pop_front() {
                s.nonces.remove(&gone);
            }
        }
        if s.nonces.contains(nonce) {
            return Spend::Used;
        }
        if s.nonces.len() >= self.capacity {
            return Spend::Full;
        }
        s.nonces.insert(nonce.to_owned());
        s.order.push_back((expires_ms, nonce.to_owned()));
        Spend::Fresh
    }

    #[cfg(test)]
    fn len_and_visited(&self) -> (usize, u64) {
        let s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        (s.nonces.len(), s.visited)
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    use super::*;

    const SECOND: u64 = 1000;

    #[test]
    fn a_burst_then_one_per_interval() {
        let limit = RateLimit::new(3, Duration::from_secs(1));
        let mut cell = Cell::default();
        let now = 10 * SECOND;
        assert!((0..3).all(|_| cell.admit(limit, now)));
        assert!(!cell.admit(limit, now));
        assert!(!cell.admit(limit, now + 999));
        assert!(cell.admit(limit, now + SECOND));
        assert!(!cell.admit(limit, now + SECOND));
        // Idle long enough, the whole burst is back (and no more).
        let later = now + 60 * SECOND;
        assert!((0..3).all(|_| cell.admit(limit, later)));
        assert!(!cell.admit(limit, later));
    }

    #[test]
    fn clients_are_limited_apart_and_ipv6_by_its_64() -> Result<(), std::net::AddrParseError> {
        let l = Limiter::new(Some(RateLimit::new(1, Duration::from_secs(10))), None);
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse()?, "192.0.2.2".parse()?);
        assert!(l.client(Some(a), 0));
        assert!(!l.client(Some(a), 0));
        assert!(l.client(Some(b), 0));
        let (v6, same_64): (IpAddr, IpAddr) = ("2001:db8::1".parse()?, "2001:db8::ffff:1".parse()?);
        assert!(l.client(Some(v6), 0));
        assert!(!l.client(Some(same_64), 0));
        // An unknown address is not limited per client.
        assert!(l.client(None, 0));
        Ok(())
    }

    #[test]
    fn the_client_table_stays_bounded() {
        let l = Limiter::new(Some(RateLimit::new(1, Duration::from_secs(1))), None);
        for i in 0..(MAX_CLIENTS as u32 + 5_000) {
            l.client(Some(IpAddr::from(i.to_be_bytes())), u64::from(i));
        }
        let state = l.state.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(state.clients.len() <= MAX_CLIENTS);
    }

    /// 100,000 spends, one a millisecond with states living 10 s: the store
    /// holds at most the live ones, and each call looks at one entry and the
    /// ones it expires — amortized O(1), never a scan of the store.
    #[test]
    fn spent_states_expire_from_the_front_in_bounded_work() {
        let spent = SpentInMemory::new(100_000);
        let ttl = 10 * SECOND;
        let mut most = 0;
        for i in 0..100_000u64 {
            assert_eq!(spent.spend(&format!("n{i}"), i + ttl, i), Spend::Fresh);
            most = most.max(spent.len_and_visited().0);
        }
        let (_, visited) = spent.len_and_visited();
        assert!(most <= 10_001, "held {most} states");
        assert!(visited <= 2 * 100_000, "looked at {visited} entries");
        assert_eq!(spent.spend("n99999", 0, 99_999), Spend::Used);
    }

    #[test]
    fn a_full_store_refuses_instead_of_forgetting_a_live_state() {
        let spent = SpentInMemory::new(2);
        assert_eq!(spent.spend("a", 100, 0), Spend::Fresh);
        assert_eq!(spent.spend("b", 100, 0), Spend::Fresh);
        assert_eq!(spent.spend("c", 100, 0), Spend::Full);
        assert_eq!(spent.spend("a", 100, 1), Spend::Used);
        assert_eq!(spent.spend("c", 200, 100), Spend::Fresh);
    }
}
