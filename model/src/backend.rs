//! The scripts: each call runs as one atomic step on the backend, as one Lua
//! script does on Redis (and one critical section does in the memory backend).
//!
//! Durable: `admit_queue.lua`, `admit_debounce.lua`, `finish.lua`,
//! `release.lua`, `renew.lua` and `claim.lua` with `common.lua`'s helpers.
//! Legacy: the same scripts before durable runs.

use crate::config::{Config, Strategy};
use crate::state::{
    Backend, Call, Entry, Ev, Fence, How, InFlight, Item, Lease, Mark, Pending, Recorded, Tok,
};

/// The strategy's answer to an admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Marked by another request (legacy: marked at all).
    Duplicate,
    /// The lease was granted with this fence; the event runs now (durable: it
    /// is in flight as batch 0).
    Run(Fence),
    /// The lease was granted with this fence; the event waits; the caller
    /// drains the scope with `finish`.
    Hold(Fence),
    /// Queued behind the holder.
    Queued,
    /// Debounce: the pending event now.
    Pending,
    /// A repeat of an admission whose lease passed on: the event is in the
    /// backend's care.
    Stored,
}

/// An admit's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AdmitReply {
    pub(crate) verdict: Verdict,
    /// Legacy: the entry the admission evicted or superseded, carried only
    /// here.
    pub(crate) carried: Option<Ev>,
}

/// A batch handed to a holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Batch {
    pub(crate) seq: u8,
    pub(crate) items: Vec<Item>,
    pub(crate) reports: Vec<Ev>,
}

/// `finish`'s reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Handoff {
    Lost,
    Released,
    Wait,
    Run(Batch),
}

/// Any call's reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Admit(AdmitReply),
    Finish(Handoff),
    /// `release`: whether the batch ended as asked.
    Release(bool),
    /// `renew`: whether the token still owns the lease.
    Renew(bool),
    /// `claim`: the fence of the granted lease, if any.
    Claim(Option<Fence>),
}

/// Runs `call` against the backend.
pub(crate) fn execute(cfg: &Config, b: &mut Backend, call: Call) -> Reply {
    match (cfg.durable(), call) {
        (true, Call::Admit { ev, rid }) => Reply::Admit(admit(cfg, b, ev, rid)),
        (false, Call::Admit { ev, rid }) => Reply::Admit(legacy_admit(cfg, b, ev, rid)),
        (true, Call::Finish { tok, seq }) => Reply::Finish(finish(cfg, b, tok, seq)),
        (false, Call::Finish { tok, .. }) => Reply::Finish(legacy_finish(cfg, b, tok)),
        (true, Call::Release { tok, seq, how }) => Reply::Release(release(b, tok, seq, how)),
        (false, Call::Release { tok, .. }) => Reply::Release(legacy_release(b, tok)),
        (_, Call::Renew { tok }) => Reply::Renew(renew(cfg, b, tok)),
        (true, Call::Claim { tok }) => Reply::Claim(claim(cfg, b, tok)),
        (false, Call::Claim { tok }) => Reply::Claim(legacy_claim(cfg, b, tok)),
    }
}

fn owns(b: &Backend, tok: Tok) -> bool {
    b.lease.as_ref().is_some_and(|l| l.token == tok)
}

/// `grant` (common.lua): the next fence, the lease at batch 0.
fn grant(cfg: &Config, b: &mut Backend, tok: Tok) -> Fence {
    b.fence = b.fence.saturating_add(1);
    b.lease = Some(Lease {
        token: tok,
        seq: 0,
        left: cfg.lease_ttl,
        fence: b.fence,
    });
    b.fence
}

fn new_entry(ev: Ev) -> Entry {
    Entry { ev, age: 0 }
}

/// `admit_queue.lua` / `admit_debounce.lua`.
fn admit(cfg: &Config, b: &mut Backend, ev: Ev, rid: Tok) -> AdmitReply {
    let reply = |verdict| AdmitReply {
        verdict,
        carried: None,
    };
    if let Some(mark) = b.marks[usize::from(ev)] {
        return reply(match mark {
            Mark::By(by, recorded) if by == rid => replay(cfg, b, rid, recorded),
            _ => Verdict::Duplicate,
        });
    }
    let free = b.lease.is_none();
    let (verdict, recorded) = match cfg.strategy {
        Strategy::Queue => {
            if free {
                let left_over = b.has_work();
                let fence = grant(cfg, b, rid);
                if !left_over {
                    if !cfg.ablations.run_not_stored {
                        b.inflight = Some(InFlight {
                            owner: rid,
                            seq: 0,
                            items: vec![Item { ev, expired: false }],
                            reports: Vec::new(),
                        });
                    }
                    (Verdict::Run(fence), Recorded::Run)
                } else {
                    // Work outlived its holder: the new holder drains it first.
                    b.queue.push(new_entry(ev));
                    (Verdict::Hold(fence), Recorded::Hold)
                }
            } else {
                b.queue.push(new_entry(ev));
                if b.queue.len() > usize::from(cfg.max_size) {
                    let evicted = b.queue.remove(0);
                    b.outbox.push(evicted.ev);
                }
                (Verdict::Queued, Recorded::Queued)
            }
        }
        Strategy::Debounce => {
            let replaced = b.pending.replace(Pending { ev, ready: false });
            if let Some(p) = replaced {
                b.outbox.push(p.ev);
            }
            if free {
                let fence = grant(cfg, b, rid);
                (Verdict::Hold(fence), Recorded::Hold)
            } else {
                (Verdict::Pending, Recorded::Pending)
            }
        }
    };
    b.marks[usize::from(ev)] = Some(Mark::By(rid, recorded));
    reply(verdict)
}

/// `replay` (common.lua): the answer to a repeat of an admission.
fn replay(cfg: &Config, b: &mut Backend, rid: Tok, recorded: Recorded) -> Verdict {
    match recorded {
        Recorded::Run | Recorded::Hold => match b.lease.as_mut() {
            Some(l) if l.token == rid && l.seq == 0 => {
                if cfg.replays_extend_lease {
                    l.left = cfg.lease_ttl;
                }
                if recorded == Recorded::Run {
                    Verdict::Run(l.fence)
                } else {
                    Verdict::Hold(l.fence)
                }
            }
            _ => Verdict::Stored,
        },
        Recorded::Queued => Verdict::Queued,
        Recorded::Pending => Verdict::Pending,
    }
}

/// `remember_ack` (common.lua).
fn remember_ack(b: &mut Backend, tok: Tok, seq: u8) {
    if !b.acked.contains(&(tok, seq)) {
        b.acked.push((tok, seq));
    }
}

fn batch_of(f: &InFlight) -> Batch {
    Batch {
        seq: f.seq,
        items: f.items.clone(),
        reports: f.reports.clone(),
    }
}

/// `finish.lua`.
fn finish(cfg: &Config, b: &mut Backend, tok: Tok, seq: u8) -> Handoff {
    let any_seq = cfg.ablations.finish_ignores_seq;
    let own = b
        .inflight
        .as_ref()
        .is_some_and(|f| f.owner == tok && (any_seq || f.seq == seq));
    let Some(held) = b.lease.as_ref().filter(|l| l.token == tok).map(|l| l.seq) else {
        // A lapsed holder acknowledges the batch it finished, unless someone
        // adopted it since.
        if own {
            b.inflight = None;
            remember_ack(b, tok, seq);
            return Handoff::Released;
        }
        if b.acked.contains(&(tok, seq)) {
            return Handoff::Released;
        }
        return Handoff::Lost;
    };
    if !any_seq {
        if held == seq.saturating_add(1) {
            // A repeat whose first run handed over batch seq + 1: the same again.
            return match &b.inflight {
                Some(f) if f.owner == tok && f.seq == held => {
                    let batch = batch_of(f);
                    if cfg.replays_extend_lease
                        && let Some(l) = b.lease.as_mut()
                    {
                        l.left = cfg.lease_ttl;
                    }
                    Handoff::Run(batch)
                }
                _ => Handoff::Lost,
            };
        }
        if held != seq {
            return Handoff::Lost;
        }
    }
    let next = held.saturating_add(1);
    if let Some(l) = b.lease.as_mut() {
        l.left = cfg.lease_ttl;
    }
    if own {
        b.inflight = None;
    }
    remember_ack(b, tok, held);
    if let Some(orphan) = b.inflight.as_mut() {
        if cfg.ablations.orphans_deleted {
            b.inflight = None;
        } else {
            // Left by a holder that is gone: it runs again, first.
            orphan.owner = tok;
            orphan.seq = next;
            let batch = batch_of(orphan);
            hand_out(b, next);
            return Handoff::Run(batch);
        }
    }
    let mut items = Vec::new();
    if !b.queue.is_empty() {
        let ttl = cfg.entry_ttl;
        items = b
            .queue
            .drain(..)
            .map(|e| Item {
                ev: e.ev,
                expired: ttl.is_some_and(|t| e.age >= t),
            })
            .collect();
    } else if let Some(p) = b.pending {
        if !p.ready {
            return Handoff::Wait;
        }
        b.pending = None;
        items.push(Item {
            ev: p.ev,
            expired: false,
        });
    }
    if items.is_empty() && b.outbox.is_empty() {
        b.lease = None;
        return Handoff::Released;
    }
    let f = InFlight {
        owner: tok,
        seq: next,
        items,
        reports: std::mem::take(&mut b.outbox),
    };
    let batch = batch_of(&f);
    b.inflight = Some(f);
    hand_out(b, next);
    Handoff::Run(batch)
}

fn hand_out(b: &mut Backend, seq: u8) {
    if let Some(l) = b.lease.as_mut() {
        l.seq = seq;
    }
}

/// `release.lua`.
fn release(b: &mut Backend, tok: Tok, seq: u8, how: How) -> bool {
    let own = b
        .inflight
        .as_ref()
        .is_some_and(|f| f.owner == tok && f.seq == seq);
    let held = owns(b, tok);
    let mut answer = own || held;
    match how {
        How::Done => {
            if own {
                b.inflight = None;
            } else if b.acked.contains(&(tok, seq)) {
                answer = true;
            }
            if own || held {
                remember_ack(b, tok, seq);
            }
        }
        // The hand-back only spares the batch a lapse count, which the model
        // does not keep (no batch lapses often enough to be abandoned).
        How::HandBack => {}
    }
    if held {
        b.lease = None;
    }
    answer
}

/// `renew.lua` (the same in both protocols).
fn renew(cfg: &Config, b: &mut Backend, tok: Tok) -> bool {
    match b.lease.as_mut() {
        Some(l) if l.token == tok => {
            l.left = cfg.lease_ttl;
            true
        }
        _ => false,
    }
}

/// `claim.lua` (the exclusive-lease part).
fn claim(cfg: &Config, b: &mut Backend, tok: Tok) -> Option<Fence> {
    if let Some(l) = &b.lease {
        if l.token == tok && l.seq == 0 {
            return Some(l.fence);
        }
        return None;
    }
    let work = if cfg.ablations.claim_needs_waiting {
        !b.queue.is_empty() || b.pending.is_some()
    } else {
        b.has_work()
    };
    if !work {
        return None;
    }
    Some(grant(cfg, b, tok))
}

/// Legacy `admit_queue.lua` / `admit_debounce.lua`.
fn legacy_admit(cfg: &Config, b: &mut Backend, ev: Ev, tok: Tok) -> AdmitReply {
    if b.marks[usize::from(ev)].is_some() {
        return AdmitReply {
            verdict: Verdict::Duplicate,
            carried: None,
        };
    }
    b.marks[usize::from(ev)] = Some(Mark::Marked);
    let free = b.lease.is_none();
    match cfg.strategy {
        Strategy::Queue => {
            if free {
                let fence = grant(cfg, b, tok);
                if b.queue.is_empty() {
                    // The running event is stored nowhere.
                    return AdmitReply {
                        verdict: Verdict::Run(fence),
                        carried: None,
                    };
                }
                b.queue.push(new_entry(ev));
                return AdmitReply {
                    verdict: Verdict::Hold(fence),
                    carried: None,
                };
            }
            b.queue.push(new_entry(ev));
            let mut carried = None;
            if b.queue.len() > usize::from(cfg.max_size) {
                carried = Some(b.queue.remove(0).ev);
            }
            AdmitReply {
                verdict: Verdict::Queued,
                carried,
            }
        }
        Strategy::Debounce => {
            let carried = b
                .pending
                .replace(Pending { ev, ready: false })
                .map(|p| p.ev);
            let verdict = if free {
                Verdict::Hold(grant(cfg, b, tok))
            } else {
                Verdict::Pending
            };
            AdmitReply { verdict, carried }
        }
    }
}

/// Legacy `finish.lua`: the token check, then what is ready moves into the
/// reply (its only copy), or the lease is deleted.
fn legacy_finish(cfg: &Config, b: &mut Backend, tok: Tok) -> Handoff {
    if !owns(b, tok) {
        return Handoff::Lost;
    }
    if let Some(l) = b.lease.as_mut() {
        l.left = cfg.lease_ttl;
    }
    let mut items = Vec::new();
    if !b.queue.is_empty() {
        let ttl = cfg.entry_ttl;
        items = b
            .queue
            .drain(..)
            .map(|e| Item {
                ev: e.ev,
                expired: ttl.is_some_and(|t| e.age >= t),
            })
            .collect();
    } else if let Some(p) = b.pending {
        if !p.ready {
            return Handoff::Wait;
        }
        b.pending = None;
        items.push(Item {
            ev: p.ev,
            expired: false,
        });
    }
    if items.is_empty() {
        b.lease = None;
        return Handoff::Released;
    }
    Handoff::Run(Batch {
        seq: 0,
        items,
        reports: Vec::new(),
    })
}

/// Legacy `release.lua`.
fn legacy_release(b: &mut Backend, tok: Tok) -> bool {
    if !owns(b, tok) {
        return false;
    }
    b.lease = None;
    true
}

/// Legacy `claim.lua`: a free lease with entries waiting.
fn legacy_claim(cfg: &Config, b: &mut Backend, tok: Tok) -> Option<Fence> {
    if b.lease.is_some() || (b.queue.is_empty() && b.pending.is_none()) {
        return None;
    }
    Some(grant(cfg, b, tok))
}

/// What a call did, by the branch of its script it took: for coverage
/// figures and for reading traces.
pub(crate) fn classify(cfg: &Config, before: &Backend, call: Call, reply: &Reply) -> &'static str {
    let owned = |tok: Tok| before.lease.as_ref().filter(|l| l.token == tok);
    let in_flight = |tok: Tok, seq: u8| {
        before
            .inflight
            .as_ref()
            .is_some_and(|f| f.owner == tok && f.seq == seq)
    };
    match (call, reply) {
        (Call::Admit { ev, rid }, Reply::Admit(r)) => {
            match (before.marks[usize::from(ev)], r.verdict) {
                (Some(Mark::By(by, _)), Verdict::Stored) if by == rid => {
                    "admit: replayed, the lease passed on (stored)"
                }
                (Some(Mark::By(by, _)), _) if by == rid => "admit: replayed",
                (Some(_), _) => "admit: duplicate",
                (None, Verdict::Run(_)) => "admit: runs",
                (None, Verdict::Hold(_)) if before.has_work() => "admit: holds, work was left over",
                (None, Verdict::Hold(_)) => "admit: holds",
                (None, Verdict::Queued) if before.queue.len() >= usize::from(cfg.max_size) => {
                    "admit: queued, evicting the oldest"
                }
                (None, Verdict::Queued) => "admit: queued",
                (None, Verdict::Pending) if before.pending.is_some() => {
                    "admit: pending, superseding the pending event"
                }
                (None, _) => "admit: pending",
            }
        }
        (Call::Finish { tok, seq }, Reply::Finish(h)) => match (owned(tok), h) {
            (None, Handoff::Released) if in_flight(tok, seq) => {
                "finish: a lapsed holder acknowledges its own batch"
            }
            (None, Handoff::Released) => "finish: repeat of an acknowledged finish",
            (None, _) => "finish: lost",
            (Some(l), Handoff::Run(_)) if l.seq != seq => "finish: replayed",
            (Some(l), _) if l.seq != seq => "finish: stale",
            (Some(_), Handoff::Run(_))
                if before
                    .inflight
                    .as_ref()
                    .is_some_and(|f| !(f.owner == tok && f.seq == seq)) =>
            {
                "finish: adopts an orphaned batch"
            }
            (Some(_), Handoff::Run(_)) => "finish: hands out the next batch",
            (Some(_), Handoff::Wait) => "finish: wait",
            (Some(_), _) => "finish: releases the lease",
        },
        (Call::Release { tok, how, .. }, Reply::Release(ok)) => match (owned(tok), how, ok) {
            (Some(_), How::Done, _) => "release: done, lease given up",
            (Some(_), How::HandBack, _) => "release: handed back, lease given up",
            (None, _, true) => "release: not the holder, its batch settled",
            (None, _, false) => "release: not the holder",
        },
        (Call::Renew { .. }, Reply::Renew(true)) => "renew: extended",
        (Call::Renew { .. }, _) => "renew: lost",
        (Call::Claim { tok }, Reply::Claim(Some(_))) if owned(tok).is_some() => "claim: replayed",
        (Call::Claim { .. }, Reply::Claim(Some(_))) => "claim: granted",
        (Call::Claim { .. }, _) => "claim: refused",
        _ => "?",
    }
}
