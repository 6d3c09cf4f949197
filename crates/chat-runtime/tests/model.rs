//! Property tests: random arrivals and handler durations on one scope, run
//! through the runtime under paused time, and checked against a small reference
//! model of each strategy — same outcome for every event, no two handlers
//! overlapping on the scope, nothing stranded.
//!
//! Arrivals fall on whole 10 ms steps; handler durations, the debounce interval
//! and the burst window carry sub-millisecond offsets, so no arrival ever ties
//! with a run's end or a window's seal and the model needs no tie rules.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use chat_runtime::{
    BurstOptions, Concurrency, ConcurrentOptions, DebounceOptions, DispatchOptions, Outcome,
    QueueOptions, RuntimeOptions,
};
use proptest::prelude::*;
use support::Scenario;

const US: u64 = 1;
const MS: u64 = 1000 * US;
/// Debounce interval and burst window: 100.5 ms.
const QUIET: u64 = 100 * MS + 500 * US;

#[derive(Debug, Clone)]
struct Arrival {
    /// Microseconds after the previous arrival.
    gap: u64,
    /// Handler duration in microseconds.
    duration: u64,
}

fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    prop::collection::vec(
        (0u64..=30, 0u64..=20).prop_map(|(g, d)| Arrival {
            gap: g * 10 * MS,
            duration: d * 10 * MS + US,
        }),
        1..12,
    )
}

type Expected = HashMap<usize, Outcome>;

fn times(a: &[Arrival]) -> Vec<u64> {
    a.iter()
        .scan(0, |t, x| {
            *t += x.gap;
            Some(*t)
        })
        .collect()
}

fn model_drop(a: &[Arrival]) -> Expected {
    let mut busy_until = 0;
    let mut out = Expected::new();
    for (i, t) in times(a).into_iter().enumerate() {
        if t < busy_until {
            out.insert(i, Outcome::Dropped);
        } else {
            out.insert(i, Outcome::Ran);
            busy_until = t + a[i].duration;
        }
    }
    out
}

fn model_queue(a: &[Arrival]) -> Expected {
    let mut out = Expected::new();
    let mut running_end: Option<u64> = None;
    let mut queue: Vec<usize> = Vec::new();
    let advance =
        |t: u64, running_end: &mut Option<u64>, queue: &mut Vec<usize>, out: &mut Expected| {
            while let Some(e) = *running_end {
                if e >= t {
                    break;
                }
                match queue.pop() {
                    Some(newest) => {
                        for i in queue.drain(..) {
                            out.insert(i, Outcome::Superseded);
                        }
                        out.insert(newest, Outcome::Ran);
                        *running_end = Some(e + a[newest].duration);
                    }
                    None => *running_end = None,
                }
            }
        };
    for (i, t) in times(a).into_iter().enumerate() {
        advance(t, &mut running_end, &mut queue, &mut out);
        if running_end.is_none() {
            out.insert(i, Outcome::Ran);
            running_end = Some(t + a[i].duration);
        } else {
            queue.push(i);
        }
    }
    advance(u64::MAX, &mut running_end, &mut queue, &mut out);
    out
}

/// Debounce and burst-collapse share a shape: a holder that runs the newest of
/// what is ready, once the quiet period / window has passed.
fn model_windowed(a: &[Arrival], burst: bool) -> Expected {
    let mut out = Expected::new();
    // Each waiting group: (ready at, members in join order).
    let mut groups: VecDeque<(u64, Vec<usize>)> = VecDeque::new();
    let mut holder_free_at: Option<u64> = None; // Some: a holder exists, free at
    let step = |t: u64,
                groups: &mut VecDeque<(u64, Vec<usize>)>,
                free: &mut Option<u64>,
                out: &mut Expected| {
        while let Some(f) = *free {
            match groups.front() {
                None if f < t => *free = None,
                None => break,
                Some((ready, _)) => {
                    let start = f.max(*ready);
                    if start >= t {
                        break;
                    }
                    let (_, mut members) = groups.pop_front().unwrap();
                    let newest = members.pop().unwrap();
                    for i in members {
                        out.insert(i, Outcome::Superseded);
                    }
                    out.insert(newest, Outcome::Ran);
                    *free = Some(start + a[newest].duration);
                }
            }
        }
    };
    for (i, t) in times(a).into_iter().enumerate() {
        step(t, &mut groups, &mut holder_free_at, &mut out);
        if burst {
            match groups.back_mut() {
                Some((seal, members)) if *seal > t => members.push(i),
                _ => groups.push_back((t + QUIET, vec![i])),
            }
        } else {
            // Debounce: one pending event; a replacement supersedes it and
            // restarts the quiet period.
            if let Some((_, members)) = groups.pop_back() {
                for j in members {
                    out.insert(j, Outcome::Superseded);
                }
            }
            groups.push_back((t + QUIET, vec![i]));
        }
        if holder_free_at.is_none() {
            holder_free_at = Some(t);
        }
    }
    step(u64::MAX, &mut groups, &mut holder_free_at, &mut out);
    out
}

fn options(concurrency: Concurrency) -> RuntimeOptions {
    RuntimeOptions::default()
        .dispatch(DispatchOptions::deferred(Duration::from_secs(3600)))
        .concurrency(concurrency)
}

/// Runs the arrivals through the runtime; returns the scenario afterwards.
fn run(concurrency: Concurrency, a: &[Arrival]) -> Scenario {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let s = Scenario::new(options(concurrency));
        for (i, x) in a.iter().enumerate() {
            tokio::time::sleep(Duration::from_micros(x.gap)).await;
            assert_eq!(
                s.send("1", &format!("e{i}"), &format!("sleepus:{}", x.duration))
                    .await,
                200
            );
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        s.assert_scope_idle("1").await;
        s
    })
}

fn check(s: &Scenario, expected: &Expected, n: usize) {
    let ids: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    s.assert_one_outcome_each(&refs);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(s.outcome(id), expected.get(&i).copied(), "event {id}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn drop_matches_the_model(a in arrivals()) {
        let s = run(Concurrency::Drop, &a);
        check(&s, &model_drop(&a), a.len());
        s.assert_no_overlap();
    }

    #[test]
    fn queue_matches_the_model(a in arrivals()) {
        let s = run(Concurrency::Queue(QueueOptions::default().max_size(100)), &a);
        check(&s, &model_queue(&a), a.len());
        s.assert_no_overlap();
    }

    #[test]
    fn debounce_matches_the_model(a in arrivals()) {
        let c = Concurrency::Debounce(DebounceOptions::default().interval(Duration::from_micros(QUIET)));
        let s = run(c, &a);
        check(&s, &model_windowed(&a, false), a.len());
        s.assert_no_overlap();
    }

    #[test]
    fn burst_matches_the_model(a in arrivals()) {
        let c = Concurrency::Burst(BurstOptions::default().window(Duration::from_micros(QUIET)));
        let s = run(c, &a);
        check(&s, &model_windowed(&a, true), a.len());
        s.assert_no_overlap();
    }

    #[test]
    fn concurrent_never_exceeds_max_and_runs_everything(a in arrivals(), max in 1usize..4) {
        let s = run(Concurrency::Concurrent(ConcurrentOptions::default().max(max)), &a);
        let expected: Expected = (0..a.len()).map(|i| (i, Outcome::Ran)).collect();
        check(&s, &expected, a.len());
        // At any run's start, fewer than `max` other runs were in progress.
        let runs = s.runs();
        for r in &runs {
            let others = runs
                .iter()
                .filter(|o| o.id != r.id && o.start <= r.start && o.end.unwrap() > r.start)
                .count();
            prop_assert!(others < max, "{} ran beside {others} others (max {max})", r.id);
        }
    }
}
