//! Renumbering after every step, so that states that differ only in the names
//! of tokens or in the absolute values of fences are one state.
//!
//! Sound because the model only ever compares tokens for equality (and a new
//! token is always one no part of the state holds), and fences only for order.
//! A token that no task and no travelling request holds can never be presented
//! again, so it becomes [`NOBODY`]; acknowledgements remembered for it are
//! dropped, and what its dedupe mark recorded no longer matters.

use crate::state::{Call, Fence, Ghost, Mark, NOBODY, Phase, Recorded, State, Task, Tok};

/// Puts `s` in its canonical form.
pub(crate) fn normalize(s: &mut State) {
    sort_parts(s);
    let mut referenced = referenced_tokens(s);
    referenced.sort_unstable();
    referenced.dedup();
    // Order-preserving: a token keeps its place among the live ones, so traces
    // keep their names while the tokens live.
    let map: Vec<(Tok, Tok)> = referenced
        .iter()
        .enumerate()
        .map(|(i, t)| (*t, Tok::try_from(i + 1).unwrap_or(Tok::MAX)))
        .collect();
    let rename = |t: Tok| -> Tok {
        map.iter()
            .find(|(from, _)| *from == t)
            .map_or(NOBODY, |(_, to)| *to)
    };
    if let Some(l) = s.backend.lease.as_mut() {
        l.token = rename(l.token);
    }
    if let Some(f) = s.backend.inflight.as_mut() {
        f.owner = rename(f.owner);
    }
    for t in &mut s.tasks {
        match t {
            Task::Delivery(d) => d.rid = rename(d.rid),
            Task::Holder(h) => h.token = rename(h.token),
        }
    }
    for g in &mut s.ghosts {
        g.call = rename_call(g.call, rename);
    }
    for m in s.backend.marks.iter_mut().flatten() {
        if let Mark::By(t, recorded) = m {
            *t = rename(*t);
            if *t == NOBODY {
                // Nobody can repeat this request: what it recorded is moot.
                *recorded = Recorded::Run;
            }
        }
    }
    s.backend.acked = s
        .backend
        .acked
        .iter()
        .map(|(t, seq)| (rename(*t), *seq))
        .filter(|(t, _)| *t != NOBODY)
        .collect();
    rank_fences(s);
    sort_parts(s);
}

/// A token no part of the state uses: for a new request or claim.
pub(crate) fn fresh_token(s: &State) -> Tok {
    let mut max = 0;
    if let Some(l) = &s.backend.lease {
        max = max.max(l.token);
    }
    if let Some(f) = &s.backend.inflight {
        max = max.max(f.owner);
    }
    for t in &s.tasks {
        max = max.max(task_token(t));
    }
    for g in &s.ghosts {
        max = max.max(call_token(&g.call));
    }
    for m in s.backend.marks.iter().flatten() {
        if let Mark::By(t, _) = m {
            max = max.max(*t);
        }
    }
    for (t, _) in &s.backend.acked {
        max = max.max(*t);
    }
    max.saturating_add(1)
}

fn task_token(t: &Task) -> Tok {
    match t {
        Task::Delivery(d) => d.rid,
        Task::Holder(h) => h.token,
    }
}

pub(crate) fn call_token(c: &Call) -> Tok {
    match *c {
        Call::Admit { rid, .. } => rid,
        Call::Finish { tok, .. }
        | Call::Release { tok, .. }
        | Call::Renew { tok }
        | Call::Claim { tok } => tok,
    }
}

fn rename_call(c: Call, rename: impl Fn(Tok) -> Tok) -> Call {
    match c {
        Call::Admit { ev, rid } => Call::Admit {
            ev,
            rid: rename(rid),
        },
        Call::Finish { tok, seq } => Call::Finish {
            tok: rename(tok),
            seq,
        },
        Call::Release { tok, seq, how } => Call::Release {
            tok: rename(tok),
            seq,
            how,
        },
        Call::Renew { tok } => Call::Renew { tok: rename(tok) },
        Call::Claim { tok } => Call::Claim { tok: rename(tok) },
    }
}

fn referenced_tokens(s: &State) -> Vec<Tok> {
    let mut r: Vec<Tok> = s.tasks.iter().map(task_token).collect();
    r.extend(s.ghosts.iter().map(|g| call_token(&g.call)));
    r
}

/// Sorts the parts whose order carries no meaning: tasks and travelling
/// requests first by what they do and then by token, buffered records, the
/// outbox and the acknowledgements.
fn sort_parts(s: &mut State) {
    s.tasks
        .sort_by(|a, b| task_key(a).cmp(&task_key(b)).then_with(|| a.cmp(b)));
    s.ghosts
        .sort_by(|a, b| ghost_key(a).cmp(&ghost_key(b)).then_with(|| a.cmp(b)));
    for t in &mut s.tasks {
        if let Task::Holder(h) = t {
            h.records.sort_unstable();
        }
    }
    s.backend.outbox.sort_unstable();
    if let Some(f) = s.backend.inflight.as_mut() {
        f.reports.sort_unstable();
    }
    s.backend.acked.sort_unstable();
}

/// A task without its token.
fn task_key(t: &Task) -> (u8, u8, u8, u8, u8, Option<Phase>, u8) {
    match t {
        Task::Delivery(d) => (d.replica, 0, d.ev, u8::from(d.answered), 0, None, 0),
        Task::Holder(h) => (h.replica, 1, h.seq, h.fence, h.belief, Some(h.phase), 0),
    }
}

fn ghost_key(g: &Ghost) -> (Call, bool) {
    (rename_call(g.call, |_| NOBODY), g.may_vanish)
}

/// Replaces every fence by its rank among the fences in the state.
fn rank_fences(s: &mut State) {
    let mut all: Vec<Fence> = Vec::new();
    all.push(s.backend.fence);
    if let Some(l) = &s.backend.lease {
        all.push(l.fence);
    }
    for t in &s.tasks {
        if let Task::Holder(h) = t {
            all.push(h.fence);
        }
    }
    all.extend(s.ran_under.iter().copied());
    all.retain(|f| *f != 0);
    all.sort_unstable();
    all.dedup();
    let rank = |f: Fence| -> Fence {
        if f == 0 {
            return 0;
        }
        all.iter()
            .position(|x| *x == f)
            .map_or(0, |i| Fence::try_from(i + 1).unwrap_or(Fence::MAX))
    };
    s.backend.fence = rank(s.backend.fence);
    if let Some(l) = s.backend.lease.as_mut() {
        l.fence = rank(l.fence);
    }
    for t in &mut s.tasks {
        if let Task::Holder(h) = t {
            h.fence = rank(h.fence);
        }
    }
    for f in &mut s.ran_under {
        *f = rank(*f);
    }
}
