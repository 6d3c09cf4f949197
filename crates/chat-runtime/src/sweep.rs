//! The periodic recovery sweep: takes over runs whose holder is gone — a scope
//! with waiting or in-flight work and no lease, a slot run whose slot lapsed —
//! and runs them here.

use std::sync::Arc;

use chat_core::{Concurrency, Recovered, Release, Renewal, Sweep};
use tokio::time::Instant;

use crate::holder::Holder;
use crate::outcome::Records;
use crate::shared::Shared;

/// Starts the sweep (once per bot), if the options ask for one.
pub(crate) fn start_sweeper(shared: &Arc<Shared>) {
    let Some(interval) = shared.options().recovery.sweep_interval else {
        return;
    };
    if !shared.claim_sweeper() {
        return;
    }
    let weak = Arc::downgrade(shared);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(shared) = weak.upgrade() else { return };
            if shared.signals().draining().is_cancelled() {
                return;
            }
            sweep_once(&shared).await;
        }
    });
}

/// One pass now (after an operator's force-release).
pub(crate) async fn sweep_now(shared: &Arc<Shared>) {
    sweep_once(shared).await;
}

/// One pass: as many recoveries as this process has room for.
async fn sweep_once(shared: &Arc<Shared>) {
    let room = shared.options().admission.max_detached.saturating_sub(
        shared
            .admission()
            .in_use(shared.options().admission.max_detached),
    );
    if room == 0 {
        return;
    }
    let sent = Instant::now();
    // Tenants at their cap are left out: claimed only to be handed back,
    // they would take every place of the sweep from the other tenants.
    let request = Sweep::new(shared.options().leases.ttl, room.min(64))
        .skip_tenants(shared.admission().tenants_at_cap());
    let recovered = match shared.state().sweep(&request).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "recovery sweep failed");
            return;
        }
    };
    let dates = dated(shared, &recovered, sent).await;
    for (r, dated) in recovered.into_iter().zip(dates) {
        // Found no longer held when renewed: nothing to run, hand back or log.
        let Some(confirmed_at) = dated else {
            continue;
        };
        let scope = match &r {
            Recovered::Scope(lease) => lease.scope().clone(),
            Recovered::Slot { scope, .. } => scope.clone(),
            _ => continue,
        };
        let adapter = shared.adapter_for(&scope.platform);
        let permit = shared.admission().try_admit(&scope.tenant);
        let (Some(adapter), Some(permit)) = (adapter, permit) else {
            give_back(shared, r).await;
            continue;
        };
        tracing::info!(name: "scope-recovered", scope = %scope);
        match r {
            Recovered::Scope(lease) => {
                let holder = Holder::new(shared, &adapter, shared.options().concurrency);
                holder.spawn_holder(lease, confirmed_at, None, Some(permit));
            }
            Recovered::Slot {
                token,
                batch,
                concurrency,
                ..
            } => {
                // The run takes its slot under the concurrency it was admitted
                // with (an unlocked kind's is unbounded), not the bot's strategy,
                // and with the budget the exclusive path gives a handed-over
                // entry: what is left of `detach_timeout`, none when it is zero.
                let holder = Holder::new(shared, &adapter, Concurrency::Concurrent(concurrency));
                let mut records = Records::default();
                match holder.plan(batch, &mut records).pop() {
                    Some(work) => {
                        records.commit(shared.recorder());
                        holder.spawn_slot_waiter(scope, token, work, Some(permit));
                    }
                    None => {
                        // Abandoned, or undecodable: acknowledged with its record.
                        let lease = chat_core::Lease::new(
                            scope,
                            token,
                            0,
                            chat_core::LeaseKind::Slot,
                            shared.options().leases.ttl,
                        );
                        if holder.release(&lease, Release::Done).await {
                            records.commit(shared.recorder());
                        } else {
                            records.discard();
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// Since when each recovered lease is known to be held (`None`: no longer).
/// Its claim was sent after `sent`, so its TTL runs at least from there; but a
/// sweep that took long (its reads of the indexes slow, on a loaded server or
/// a big cluster) would leave the holder little or none of it, and a holder
/// whose lease seems lapsed stops at once. Then the leases are renewed, all at
/// once, and each dated from its renewal; a lease no longer held is left
/// alone, and one whose renewal failed keeps `sent` (its holder keeps it or
/// lets it go as its own renewals say). Slot runs take their slot later: `sent`.
async fn dated(
    shared: &Arc<Shared>,
    recovered: &[Recovered],
    sent: Instant,
) -> Vec<Option<Instant>> {
    let ttl = shared.options().leases.ttl;
    if sent.elapsed() < ttl / 2 {
        return vec![Some(sent); recovered.len()];
    }
    let renewals = recovered.iter().map(|r| async move {
        let Recovered::Scope(lease) = r else {
            return Some(sent);
        };
        let at = Instant::now();
        match shared.state().renew(lease, ttl).await {
            Ok(Renewal::Renewed { .. }) => Some(at),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "renewing a recovered lease failed");
                Some(sent)
            }
        }
    });
    futures_util::future::join_all(renewals).await
}

/// A recovery this process has no room (or no adapter) for: handed back for
/// another replica's sweep.
async fn give_back(shared: &Arc<Shared>, r: Recovered) {
    let lease = match r {
        Recovered::Scope(lease) => lease,
        Recovered::Slot { scope, token, .. } => chat_core::Lease::new(
            scope,
            token,
            0,
            chat_core::LeaseKind::Slot,
            shared.options().leases.ttl,
        ),
        _ => return,
    };
    if let Err(e) = shared.state().release(&lease, Release::HandBack).await {
        tracing::warn!(error = %e, "handing a recovery back failed; it lapses at its TTL");
    }
}
