//! Races: many tasks on one key or scope at once. Run these under a
//! multi-threaded runtime too, where the tasks truly run in parallel.

use std::sync::Arc;

use chat_core::{Concurrency, ConcurrentOptions, Decision, Handoff, Lease, QueueOptions};
use futures_util::future::join_all;

use crate::harness::{Harness, expect_run};

const TASKS: usize = 16;

/// N tasks admitting one dedupe key: exactly one wins.
pub async fn race_one_dedupe_key_has_one_winner(h: Harness) {
    let h = Arc::new(h);
    let t = h.thread("1");
    let tasks = (0..TASKS).map(|_| {
        let (h, t) = (Arc::clone(&h), t.clone());
        tokio::spawn(async move { h.admit(&t, "same", Concurrency::concurrent()).await })
    });
    let winners = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("task failed: {e}")))
        .filter(|a| !matches!(a.decision, Decision::Duplicate))
        .count();
    assert_eq!(winners, 1);
}

/// N tasks admitting distinct events on one scope: exactly one lease.
pub async fn race_one_scope_has_one_lease(h: Harness) {
    let h = Arc::new(h);
    let t = h.thread("1");
    let tasks = (0..TASKS).map(|i| {
        let (h, t) = (Arc::clone(&h), t.clone());
        tokio::spawn(async move { h.admit(&t, &format!("e{i}"), Concurrency::Drop).await })
    });
    let decisions: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("task failed: {e}")).decision)
        .collect();
    let runs = decisions
        .iter()
        .filter(|d| matches!(d, Decision::Run(_)))
        .count();
    let dropped = decisions
        .iter()
        .filter(|d| matches!(d, Decision::Dropped(_)))
        .count();
    assert_eq!((runs, dropped), (1, TASKS - 1), "{decisions:?}");
}

/// N tasks on a bounded concurrent scope: exactly `max` slots granted.
pub async fn race_slots_never_exceed_max(h: Harness) {
    let h = Arc::new(h);
    let t = h.thread("1");
    let c = Concurrency::Concurrent(ConcurrentOptions::default().max(3));
    let tasks = (0..TASKS).map(|i| {
        let (h, t) = (Arc::clone(&h), t.clone());
        tokio::spawn(async move { h.admit(&t, &format!("e{i}"), c).await })
    });
    let runs = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("task failed: {e}")))
        .filter(|a| matches!(a.decision, Decision::Run(_)))
        .count();
    assert_eq!(runs, 3);
}

/// N tasks joining a held scope's bounded queue: every one is either still
/// queued or reported evicted, and the queue never passes its bound.
pub async fn race_queue_admits_are_all_accounted_for(h: Harness) {
    let h = Arc::new(h);
    let t = h.thread("1");
    let c = Concurrency::Queue(QueueOptions::default().max_size(4));
    let mut lease = expect_run(&h.admit(&t, "holder", c).await);
    let tasks = (0..TASKS).map(|i| {
        let (h, t) = (Arc::clone(&h), t.clone());
        tokio::spawn(async move { h.admit(&t, &format!("e{i}"), c).await })
    });
    for r in join_all(tasks).await {
        match r.unwrap_or_else(|e| panic!("task failed: {e}")).decision {
            Decision::Queued { depth } => assert!(depth <= 4, "depth {depth} past the bound"),
            other => panic!("expected Queued, got {other:?}"),
        }
    }
    let batch = crate::harness::expect_batch(h.finish(&mut lease).await);
    let mut seen: Vec<String> = batch
        .entries
        .iter()
        .map(|w| w.event.id.to_string())
        .collect();
    seen.extend(batch.reports.iter().map(|r| r.event_id.to_string()));
    seen.sort();
    seen.dedup();
    assert_eq!((batch.entries.len(), seen.len()), (4, TASKS));
}

/// Entries admitted while the holder finishes are handed off, never stranded:
/// admitters and holders race, and every admitted event is run exactly once.
pub async fn race_admit_during_finish_is_never_stranded(h: Harness) {
    let h = Arc::new(h);
    let t = h.thread("1");
    let c = Concurrency::Queue(QueueOptions::default().max_size(1000));
    let per_task = 8;
    let tasks = (0..TASKS / 2).map(|task| {
        let (h, t) = (Arc::clone(&h), t.clone());
        tokio::spawn(async move {
            let mut ran = Vec::new();
            for i in 0..per_task {
                let id = format!("t{task}-{i}");
                if let Decision::Run(mut lease) = h.admit(&t, &id, c).await.decision {
                    ran.push(id);
                    ran.extend(drive(&h, &mut lease).await);
                }
                tokio::task::yield_now().await;
            }
            ran
        })
    });
    let mut ran: Vec<String> = join_all(tasks)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap_or_else(|e| panic!("task failed: {e}")))
        .collect();
    ran.sort();
    let before = ran.len();
    ran.dedup();
    assert_eq!(before, ran.len(), "an event ran twice");
    assert_eq!(ran.len(), TASKS / 2 * per_task, "an event was stranded");
    // Nothing is left holding the scope.
    expect_run(&h.admit(&t, "after", c).await);
}

/// Runs a holder's finish loop to release, returning what it was handed.
async fn drive(h: &Harness, lease: &mut Lease) -> Vec<String> {
    let mut ran = Vec::new();
    loop {
        tokio::task::yield_now().await;
        match h.finish(lease).await {
            Handoff::Run(batch) => {
                ran.extend(batch.entries.iter().map(|w| w.event.id.to_string()));
            }
            Handoff::Released => return ran,
            other => panic!("holder lost its scope: {other:?}"),
        }
    }
}
