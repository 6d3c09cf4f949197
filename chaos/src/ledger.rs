//! The outcome ledgers the replicas write, and the invariants checked over them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// One ledger line, the type echo-bot writes them with.
pub use examples::ledger::LedgerLine as Line;

/// Reads every `*.jsonl` ledger in `dir`. A torn last line (a killed writer) is
/// skipped.
pub fn load(dir: &Path) -> std::io::Result<Vec<Line>> {
    examples::ledger::read_dir(dir)
}

/// What the sender knows about one user action (twins share one).
#[derive(Debug, Clone, Default)]
pub struct Action {
    /// The event ids that carry it.
    pub event_ids: Vec<String>,
    /// Some delivery of it got a 2xx.
    pub acked: bool,
    /// Some delivery of it got a 5xx (including 503) or timed out.
    pub refused: bool,
    /// Slack retries it when refused (Events API); a slash command or an
    /// interaction is delivered once, and a refusal is what its user sees.
    pub retried: bool,
    /// It runs under the strategy's lock (a message); the other kinds
    /// (reactions, clicks, commands, modal submissions) run unlocked, so
    /// their runs may overlap others on their thread.
    pub serialized: bool,
    /// Every status answered, in order per delivery (0: timeout).
    pub statuses: Vec<u16>,
}

/// What a scenario allows that the clean path does not.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowances {
    /// A replica was SIGKILLed: acknowledged actions without an outcome are
    /// counted as crash-lost rather than failing.
    pub crash_lost: bool,
    /// Redis lost its keys: second runs and overlaps are counted rather than
    /// failing.
    pub data_loss: bool,
    /// `Concurrent{max}`: up to `max` runs may overlap on one thread.
    pub concurrent: Option<usize>,
}

/// The invariants' verdict and the scenario's counts.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Distinct actions sent.
    pub sent: usize,
    /// Actions acknowledged.
    pub acked: usize,
    /// Actions whose handler ran (Ran or Failed).
    pub ran: usize,
    /// Actions superseded by a newer one.
    pub superseded: usize,
    /// Actions dropped by the strategy.
    pub dropped: usize,
    /// Actions refused at least once before they were accepted.
    pub rejected_then_retried: usize,
    /// Duplicate deliveries recorded.
    pub duplicates: usize,
    /// Acknowledged actions with no outcome, in a crash scenario.
    pub crash_lost: usize,
    /// Actions that ran twice, in a data-loss scenario.
    pub ran_twice: usize,
    /// Longest overlap of two runs on one thread where neither was preempted (ms).
    pub max_overlap_ms: u64,
    /// Longest overlap involving a preempted run (ms).
    pub max_preempted_overlap_ms: u64,
    /// Most handler runs at once on one replica.
    pub max_concurrent_runs: usize,
    /// Events answered in the fake Slack (once each, or a breach).
    pub answered: usize,
    /// Of those, events answered twice where that is allowed: a slash
    /// command rerun after a store outage cut its run after its reply went
    /// out answers at its `response_url` again (ADR 0014).
    pub answered_again: usize,
    /// Every breach found.
    pub breaches: Vec<String>,
}

/// Folds the ledgers against what the sender saw.
pub fn check(lines: &[Line], actions: &[Action], allow: Allowances, max_detached: usize) -> Report {
    let mut r = Report {
        sent: actions.len(),
        ..Report::default()
    };
    let mut by_event: HashMap<&str, Vec<&Line>> = HashMap::new();
    for l in lines {
        by_event.entry(l.event_id.as_str()).or_default().push(l);
    }
    r.duplicates = lines
        .iter()
        .filter(|l| l.outcome == "message-duplicate")
        .count();
    let known: HashSet<&str> = actions
        .iter()
        .flat_map(|a| a.event_ids.iter().map(String::as_str))
        .collect();
    for id in by_event.keys() {
        if !id.is_empty() && !known.contains(id) {
            r.breaches
                .push(format!("outcome for an event nobody sent: {id}"));
        }
    }
    for a in actions {
        let mine: Vec<&Line> = a
            .event_ids
            .iter()
            .flat_map(|id| by_event.get(id.as_str()).into_iter().flatten().copied())
            .collect();
        let terminal: Vec<&&Line> = mine.iter().filter(|l| l.is_terminal()).collect();
        let runs = mine.iter().filter(|l| l.start_ms.is_some()).count();
        if a.acked {
            r.acked += 1;
        }
        if a.refused && a.acked {
            r.rejected_then_retried += 1;
        }
        if a.refused && !a.acked && a.retried {
            r.breaches.push(format!(
                "{:?} was refused and never accepted on a retry (answers {:?})",
                a.event_ids, a.statuses
            ));
        }
        match terminal.len() {
            0 if a.acked && allow.crash_lost => r.crash_lost += 1,
            0 if a.acked => r.breaches.push(format!(
                "{:?} was acknowledged and has no outcome (lost)",
                a.event_ids
            )),
            0 | 1 => {}
            n if allow.data_loss => {
                r.ran_twice += usize::from(runs > 1);
                let _ = n;
            }
            n => r.breaches.push(format!(
                "{:?} has {n} outcomes: {:?}",
                a.event_ids,
                terminal
                    .iter()
                    .map(|l| l.outcome.as_str())
                    .collect::<Vec<_>>()
            )),
        }
        if runs > 1 && !allow.data_loss {
            r.breaches
                .push(format!("{:?} ran {runs} times", a.event_ids));
        }
        for l in &terminal {
            // A run a shutdown or a lost lease cut short was never answered:
            // it must have been handed over to run again instead.
            let cut_short = (l.outcome == "message-cancelled" && l.reason == "shutdown")
                || l.outcome == "message-preempted";
            if cut_short && !allow.data_loss {
                r.breaches.push(format!(
                    "{:?} ended {} ({}): acknowledged and never answered",
                    a.event_ids, l.outcome, l.reason
                ));
            }
            match l.outcome.as_str() {
                "handler-ran" | "handler-failed" => r.ran += 1,
                "message-superseded" => r.superseded += 1,
                "message-dropped" => r.dropped += 1,
                _ => {}
            }
        }
    }
    // Overlap of runs on one thread, among the runs the strategy serializes.
    let unlocked: HashSet<&str> = actions
        .iter()
        .filter(|a| !a.serialized)
        .flat_map(|a| a.event_ids.iter().map(String::as_str))
        .collect();
    let mut by_thread: BTreeMap<&str, Vec<&Line>> = BTreeMap::new();
    for l in lines
        .iter()
        .filter(|l| l.start_ms.is_some() && !unlocked.contains(l.event_id.as_str()))
    {
        if let Some(t) = &l.thread {
            by_thread.entry(t.as_str()).or_default().push(l);
        }
    }
    for runs in by_thread.values() {
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                let (sa, sb) = (
                    a.start_ms.unwrap_or(a.end_ms),
                    b.start_ms.unwrap_or(b.end_ms),
                );
                let overlap = a.end_ms.min(b.end_ms).saturating_sub(sa.max(sb));
                if overlap == 0 {
                    continue;
                }
                let preempted =
                    a.outcome == "message-preempted" || b.outcome == "message-preempted";
                if preempted {
                    r.max_preempted_overlap_ms = r.max_preempted_overlap_ms.max(overlap);
                } else {
                    r.max_overlap_ms = r.max_overlap_ms.max(overlap);
                }
            }
        }
    }
    match allow.concurrent {
        Some(max) => {
            for runs in by_thread.values() {
                let at_once = most_at_once(runs.iter().copied());
                if at_once > max {
                    r.breaches.push(format!(
                        "{at_once} runs at once on one thread, above max_concurrent {max}"
                    ));
                }
            }
        }
        None if r.max_overlap_ms > 0 && !allow.data_loss => {
            r.breaches.push(format!(
                "two runs overlapped on one thread for {} ms",
                r.max_overlap_ms
            ));
        }
        None => {}
    }
    // Concurrent runs per replica.
    let mut by_replica: BTreeMap<&str, Vec<&Line>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.start_ms.is_some()) {
        by_replica.entry(l.replica.as_str()).or_default().push(l);
    }
    for runs in by_replica.values() {
        r.max_concurrent_runs = r
            .max_concurrent_runs
            .max(most_at_once(runs.iter().copied()));
    }
    if r.max_concurrent_runs > max_detached {
        r.breaches.push(format!(
            "{} handler runs at once on one replica, above max_detached {max_detached}",
            r.max_concurrent_runs
        ));
    }
    r
}

/// What the fake Slack received against the ledgers: an event answered more
/// than once (a repeated run that posted again), or an event whose handler ran
/// and whose answer never arrived, is a breach.
///
/// An event in `again` may be answered twice (counted, not a breach); never
/// three times.
pub fn check_replies(
    lines: &[Line],
    replies: &HashMap<String, usize>,
    again: &HashSet<String>,
    r: &mut Report,
) {
    let mut twice: Vec<(&String, &usize)> = replies.iter().filter(|(_, n)| **n > 1).collect();
    twice.sort();
    for (id, n) in twice {
        if *n == 2 && again.contains(id) {
            r.answered_again += 1;
        } else {
            r.breaches.push(format!("{id} was answered {n} times"));
        }
    }
    r.answered = replies.values().filter(|n| **n > 0).count();
    let mut unanswered: Vec<&str> = lines
        .iter()
        .filter(|l| l.outcome == "handler-ran" && !replies.contains_key(&l.event_id))
        .map(|l| l.event_id.as_str())
        .collect();
    unanswered.sort_unstable();
    unanswered.dedup();
    for id in unanswered {
        r.breaches
            .push(format!("{id} ran and its answer never arrived"));
    }
}

/// The most runs in progress at one instant (a run ending at t does not overlap
/// one starting at t).
fn most_at_once<'a>(runs: impl Iterator<Item = &'a Line>) -> usize {
    let mut points: Vec<(u64, i64)> = Vec::new();
    for l in runs {
        points.push((l.start_ms.unwrap_or(l.end_ms), 1));
        points.push((l.end_ms, -1));
    }
    points.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, d) in points {
        now += d;
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, outcome: &str, start: Option<u64>, end: u64, thread: &str) -> Line {
        Line {
            event_id: id.into(),
            thread: Some(thread.into()),
            replica: "r0".into(),
            start_ms: start,
            end_ms: end,
            outcome: outcome.into(),
            reason: String::new(),
        }
    }

    fn action(ids: &[&str]) -> Action {
        Action {
            event_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            acked: true,
            refused: false,
            retried: true,
            serialized: true,
            statuses: vec![200],
        }
    }

    #[test]
    fn a_clean_run_passes() {
        let lines = [
            line("a", "handler-ran", Some(0), 10, "t"),
            line("a", "message-duplicate", None, 5, "t"),
            line("b", "handler-ran", Some(10), 20, "t"),
        ];
        let r = check(
            &lines,
            &[action(&["a"]), action(&["b"])],
            Allowances::default(),
            8,
        );
        assert!(r.breaches.is_empty(), "{:?}", r.breaches);
        assert_eq!((r.ran, r.duplicates), (2, 1));
    }

    #[test]
    fn a_lost_event_an_overlap_and_a_second_run_are_breaches() {
        let lines = [
            line("a", "handler-ran", Some(0), 10, "t"),
            line("b", "handler-ran", Some(5), 15, "t"),
            line("b", "handler-ran", Some(20), 25, "t"),
        ];
        let r = check(
            &lines,
            &[action(&["a"]), action(&["b"]), action(&["c"])],
            Allowances::default(),
            8,
        );
        let all = r.breaches.join("\n");
        assert!(
            all.contains("\"c\"] was acknowledged and has no outcome"),
            "{all}"
        );
        assert!(all.contains("overlapped"), "{all}");
        assert!(all.contains("ran 2 times"), "{all}");
    }

    #[test]
    fn twins_count_once_and_crashes_are_counted_when_allowed() {
        let lines = [
            line("m", "message-duplicate", None, 1, "t"),
            line("a", "handler-ran", Some(0), 10, "t"),
        ];
        let crash = Allowances {
            crash_lost: true,
            ..Allowances::default()
        };
        let r = check(&lines, &[action(&["a", "m"]), action(&["z"])], crash, 8);
        assert!(r.breaches.is_empty(), "{:?}", r.breaches);
        assert_eq!(r.crash_lost, 1);
    }

    #[test]
    fn an_answer_posted_twice_or_never_is_a_breach() {
        let lines = [
            line("a", "handler-ran", Some(0), 10, "t"),
            line("b", "handler-ran", Some(10), 20, "t"),
            line("c", "message-superseded", None, 20, "t"),
        ];
        let mut r = Report::default();
        let replies = HashMap::from([("a".to_owned(), 2), ("c".to_owned(), 0)]);
        check_replies(&lines, &replies, &HashSet::new(), &mut r);
        let all = r.breaches.join("\n");
        assert!(all.contains("a was answered 2 times"), "{all}");
        assert!(all.contains("b ran and its answer never arrived"), "{all}");
        assert_eq!(r.breaches.len(), 2, "{all}");
    }

    #[test]
    fn an_allowed_second_answer_is_counted_and_a_third_is_a_breach() {
        let lines = [
            line("a", "handler-ran", Some(0), 10, "t"),
            line("b", "handler-ran", Some(10), 20, "t"),
        ];
        let mut r = Report::default();
        let replies = HashMap::from([("a".to_owned(), 2), ("b".to_owned(), 3)]);
        let again = HashSet::from(["a".to_owned(), "b".to_owned()]);
        check_replies(&lines, &replies, &again, &mut r);
        assert_eq!(r.answered_again, 1);
        assert_eq!(r.breaches, ["b was answered 3 times"]);
    }

    #[test]
    fn a_refusal_never_accepted_is_a_breach() {
        let a = Action {
            event_ids: vec!["a".into()],
            acked: false,
            refused: true,
            retried: true,
            serialized: true,
            statuses: vec![503],
        };
        let r = check(&[], std::slice::from_ref(&a), Allowances::default(), 8);
        assert_eq!(r.breaches.len(), 1);
        // A slash command refused once is answered so to its user: no breach.
        let once = Action {
            retried: false,
            ..a
        };
        assert!(
            check(&[], &[once], Allowances::default(), 8)
                .breaches
                .is_empty()
        );
    }
}
