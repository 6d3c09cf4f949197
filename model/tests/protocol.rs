//! The protocol's checks: the legacy protocol's counterexamples, the durable
//! protocol under each family of faults, and ablations that show each piece of
//! the durable protocol is needed. Every run is an exhaustive breadth-first
//! search of the model's states for its bounds (see the crate docs).

use chat_model::{
    Ablations, Action, Calls, Checks, Config, Faults, I1, I2, I3, Mode, Protocol, Report, Strategy,
    check, find,
};

const LEGACY_QUEUE: Config = Config::new(Protocol::Legacy, Strategy::Queue);
const DURABLE_QUEUE: Config = Config::new(Protocol::Durable, Strategy::Queue);
const DURABLE_DEBOUNCE: Config = Config::new(Protocol::Durable, Strategy::Debounce);

/// Without the lease extension on a replayed answer (an ablation).
fn replays_not_extending(cfg: Config) -> Config {
    Config {
        replays_extend_lease: false,
        ..cfg
    }
}

fn only(calls: Calls, faults: Faults) -> Faults {
    Faults { calls, ..faults }
}

const ADMIT: Calls = Calls {
    admit: true,
    ..Calls::NONE
};
const FINISH: Calls = Calls {
    finish: true,
    ..Calls::NONE
};
const LOST: Faults = Faults {
    lost_reply: true,
    ..Faults::NONE
};
const DUPLICATE: Faults = Faults {
    duplicate: true,
    ..Faults::NONE
};
const CRASH_STALL_SHUTDOWN: Faults = Faults {
    crash: true,
    stall: true,
    shutdown: true,
    ..Faults::NONE
};
const EVERYTHING: Faults = Faults {
    crash: true,
    stall: true,
    shutdown: true,
    ..Faults::CALLS
};

/// Asserts that every property held, over a state space big enough not to be
/// vacuous, and that the model could finish its work.
#[allow(clippy::print_stderr)] // The figures, for `--nocapture`.
fn assert_holds(report: &Report, min_states: usize) {
    assert!(
        report.failed().is_empty(),
        "expected every property to hold; counterexamples:\n{}",
        report
            .counterexamples
            .iter()
            .filter(|(p, _)| report.failed().contains(p))
            .map(|(p, t)| format!("{p}:\n{t}"))
            .collect::<String>()
    );
    assert!(
        report.found(chat_model::CAN_FINISH),
        "no run handled every event"
    );
    assert!(
        report.unique_states > min_states,
        "only {} states explored",
        report.unique_states
    );
    eprintln!(
        "{} states, depth {}, {:?}",
        report.unique_states, report.max_depth, report.elapsed
    );
}

/// Asserts that `property` has a counterexample and returns its path.
#[allow(clippy::print_stderr)] // The trace, for `--nocapture`.
fn counterexample<'r>(report: &'r Report, property: &str) -> &'r [Action] {
    let Some(trace) = report.counterexamples.get(property) else {
        panic!(
            "expected a counterexample to {property} ({} states explored)",
            report.unique_states
        );
    };
    eprintln!(
        "{property}: {} states, {:?}\n{trace}",
        report.unique_states, report.elapsed
    );
    report.paths.get(property).map_or(&[], Vec::as_slice)
}

fn has(path: &[Action], pred: impl Fn(&Action) -> bool) -> bool {
    path.iter().any(pred)
}

// ------------------------------------------------------------------ legacy

#[test]
fn legacy_protocol_loses_an_event_when_an_admit_reply_is_lost() {
    let report = find(LEGACY_QUEUE.faults(only(ADMIT, LOST)), I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| a.loses_reply_of("admit")), "{path:?}");
    // The lost request ran late: it granted a lease nobody holds, and stored
    // the event nowhere; the platform's retry was a duplicate.
    assert!(has(path, |a| matches!(a, Action::GhostRuns(_))), "{path:?}");
}

#[test]
fn legacy_protocol_loses_an_event_when_a_finish_reply_is_lost() {
    let report = find(LEGACY_QUEUE.faults(only(FINISH, LOST)), I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| a.loses_reply_of("finish")), "{path:?}");
}

#[test]
fn legacy_protocol_runs_a_late_finish_copy_under_a_running_holder() {
    let report = find(LEGACY_QUEUE.faults(only(FINISH, DUPLICATE)), I1);
    let path = counterexample(&report, I1);
    assert!(
        has(path, |a| matches!(
            a,
            Action::Finish {
                mode: Mode::Duplicate,
                ..
            }
        )),
        "{path:?}"
    );
    // The copy releases the lease while the holder runs the batch the first
    // execution handed over; the next admit runs a second handler.
    assert!(has(path, |a| matches!(a, Action::GhostRuns(_))), "{path:?}");
}

// ----------------------------------------------------------------- durable

#[test]
fn durable_protocol_holds_with_lost_replies_and_duplicate_calls() {
    let report = check(DURABLE_QUEUE.faults(Faults::CALLS));
    assert_holds(&report, 10_000);
}

#[test]
fn durable_protocol_holds_with_crashes_stalls_and_shutdown() {
    // The scripts as they are (no call fault, so no replayed answer), and two
    // faults in a run.
    let cfg = Config {
        checks: Checks {
            can_rerun: true,
            exactly_once_despite_crashes: true,
            ..Checks::ALL
        },
        fault_budget: 2,
        ..DURABLE_QUEUE.faults(CRASH_STALL_SHUTDOWN)
    };
    let report = check(cfg);
    assert_holds(&report, 100_000);
    // A crash or a stall does run an event's handler again, under a higher
    // fence (I5 held), and yet one outcome is recorded (I2x held in these
    // runs too).
    assert!(report.found(chat_model::CAN_RERUN));
}

#[test]
fn durable_protocol_holds_with_every_fault() {
    let report = check(DURABLE_QUEUE.faults(EVERYTHING));
    assert_holds(&report, 10_000);
}

#[test]
fn durable_debounce_holds_with_lost_replies() {
    let report = check(DURABLE_DEBOUNCE.faults(Faults::CALLS));
    assert_holds(&report, 10_000);
}

#[test]
fn durable_debounce_holds_with_every_fault() {
    let report = check(DURABLE_DEBOUNCE.faults(EVERYTHING));
    assert_holds(&report, 10_000);
}

// ------------------------------------- replays extend the lease (ablations)

/// If `admit` replayed `Run` without extending the lease, while the runtime
/// dates the lease from the send time of the repeat that answered, the holder
/// would believe its lease lives past its real expiry, and another replica
/// would adopt the batch it still runs.
#[test]
fn ablation_admit_replay_not_extending_the_lease_breaks_mutual_exclusion() {
    let report = find(
        replays_not_extending(DURABLE_QUEUE.faults(only(ADMIT, LOST))),
        I1,
    );
    let path = counterexample(&report, I1);
    assert!(has(path, |a| a.loses_reply_of("admit")), "{path:?}");
    assert!(
        has(path, |a| matches!(a, Action::RepeatAdmit { .. })),
        "{path:?}"
    );
    assert!(has(path, |a| matches!(a, Action::Tick)), "{path:?}");
}

/// The same with `finish`: a repeat (or, under debounce, the next call after
/// `Wait`, which carries the same identity) handed the batch over again
/// without the extension the first execution gave.
#[test]
fn ablation_finish_replay_not_extending_the_lease_breaks_mutual_exclusion() {
    let report = find(
        replays_not_extending(DURABLE_DEBOUNCE.faults(only(FINISH, LOST))),
        I1,
    );
    let path = counterexample(&report, I1);
    assert!(has(path, |a| a.loses_reply_of("finish")), "{path:?}");
    assert!(has(path, |a| matches!(a, Action::GhostRuns(_))), "{path:?}");
}

/// With replays extending the lease, as the scripts do, the same faults break
/// nothing.
#[test]
fn durable_replays_that_extend_the_lease_keep_mutual_exclusion() {
    for cfg in [
        DURABLE_QUEUE.faults(only(ADMIT, LOST)),
        DURABLE_DEBOUNCE.faults(only(FINISH, LOST)),
    ] {
        let report = check(cfg);
        assert_holds(&report, 1_000);
    }
}

// --------------------------------------------------------------- ablations

#[test]
fn ablation_run_not_stored_at_admit_loses_the_event_in_a_crash() {
    let cfg = Config {
        ablations: Ablations {
            run_not_stored: true,
            ..Ablations::default()
        },
        ..DURABLE_QUEUE.faults(Faults {
            crash: true,
            ..Faults::NONE
        })
    };
    let report = find(cfg, I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| matches!(a, Action::Crash(_))), "{path:?}");
}

#[test]
fn ablation_finish_ignoring_seq_loses_a_batch_when_a_reply_is_lost() {
    let cfg = Config {
        ablations: Ablations {
            finish_ignores_seq: true,
            ..Ablations::default()
        },
        ..DURABLE_QUEUE.faults(only(FINISH, LOST))
    };
    let report = find(cfg, I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| a.loses_reply_of("finish")), "{path:?}");
}

#[test]
fn ablation_orphans_deleted_instead_of_adopted_loses_the_batch() {
    let cfg = Config {
        ablations: Ablations {
            orphans_deleted: true,
            ..Ablations::default()
        },
        ..DURABLE_QUEUE.faults(Faults {
            crash: true,
            ..Faults::NONE
        })
    };
    let report = find(cfg, I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| matches!(a, Action::Crash(_))), "{path:?}");
}

#[test]
fn ablation_claim_needing_waiting_entries_strands_an_orphaned_batch() {
    let cfg = Config {
        ablations: Ablations {
            claim_needs_waiting: true,
            ..Ablations::default()
        },
        ..DURABLE_QUEUE.faults(Faults {
            crash: true,
            ..Faults::NONE
        })
    };
    let report = find(cfg, I3);
    let path = counterexample(&report, I3);
    assert!(has(path, |a| matches!(a, Action::Crash(_))), "{path:?}");
}

// ------------------------------------------------------ residual limits

/// A holder records a batch's outcomes only once `finish` acknowledged it.
/// When the acknowledgement ran but its reply was lost, and the holder crashes
/// before its repeat answers, the batch is gone from the backend and its
/// outcomes with the holder: two faults.
#[test]
fn durable_protocol_loses_outcomes_when_a_holder_crashes_after_an_unanswered_finish() {
    let cfg = Config {
        fault_budget: 2,
        ..DURABLE_QUEUE.faults(Faults {
            crash: true,
            ..only(FINISH, LOST)
        })
    };
    let report = find(cfg, I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| a.loses_reply_of("finish")), "{path:?}");
    assert!(has(path, |a| matches!(a, Action::Crash(_))), "{path:?}");
}

/// The same when every repeat of that `finish` fails until the holder gives
/// up (twice the lease TTL): it discards the outcomes of a batch the backend
/// acknowledged.
#[test]
fn durable_protocol_loses_outcomes_when_a_holder_gives_up_an_unanswered_finish() {
    let cfg = Config {
        fault_budget: 2,
        ..DURABLE_QUEUE.faults(Faults {
            give_up: true,
            ..only(FINISH, LOST)
        })
    };
    let report = find(cfg, I2);
    let path = counterexample(&report, I2);
    assert!(
        has(path, |a| matches!(a, Action::GiveUpFinish { .. })),
        "{path:?}"
    );
}

#[test]
fn durable_protocol_holds_with_two_faults_on_sweeps_releases_and_renewals() {
    // Faults on `claim` and `release` need a first fault to happen at all (a
    // lapsed lease to sweep, a shutdown to release): two faults per run.
    let cfg = Config {
        fault_budget: 2,
        ..DURABLE_QUEUE.faults(Faults {
            lost_reply: true,
            duplicate: true,
            crash: true,
            stall: true,
            shutdown: true,
            calls: Calls {
                claim: true,
                release: true,
                renew: true,
                ..Calls::NONE
            },
            ..Faults::NONE
        })
    };
    let report = check(cfg);
    assert_holds(&report, 100_000);
}
