//! The protocol's checks: the legacy protocol's counterexamples, the durable
//! protocol under each family of faults, and ablations that show each piece of
//! the durable protocol is needed. Every run is an exhaustive breadth-first
//! search of the model's states for its bounds (see the crate docs).

use chat_model::{
    Ablations, Action, Calls, Checks, Config, Faults, I1, I2, I2X, I3, I5, Mode, PROGRESS,
    Protocol, Report, Strategy, check, find,
};

const LEGACY_QUEUE: Config = Config::new(Protocol::Legacy, Strategy::Queue);
const DURABLE_QUEUE: Config = Config::new(Protocol::Durable, Strategy::Queue);
const DURABLE_DEBOUNCE: Config = Config::new(Protocol::Durable, Strategy::Debounce);

/// The scripts with the fix this model proposes: a replayed answer extends the
/// lease (see `durable_admit_replay_dates_the_lease_from_the_repeat`).
fn fixed(cfg: Config) -> Config {
    Config {
        replays_extend_lease: true,
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
fn counterexample<'r>(report: &'r Report, property: &str) -> &'r [Action] {
    let Some(trace) = report.counterexamples.get(property) else {
        panic!(
            "expected a counterexample to {property} ({} states explored)",
            report.unique_states
        );
    };
    eprintln!("{property}, {} states:\n{trace}", report.unique_states);
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
    let report = check(fixed(DURABLE_QUEUE.faults(Faults::CALLS)));
    assert_holds(&report, 10_000);
}

#[test]
fn durable_protocol_holds_with_crashes_stalls_and_shutdown() {
    // The scripts as they are: no call fault, so no replayed answer.
    let cfg = Config {
        checks: Checks {
            can_rerun: true,
            ..Checks::ALL
        },
        ..DURABLE_QUEUE.faults(CRASH_STALL_SHUTDOWN)
    };
    let report = check(cfg);
    assert_holds(&report, 5_000);
    // A crash or a stall does re-run an event (at least once), under a higher
    // fence (I5 held).
    assert!(report.found(chat_model::CAN_RERUN));
}

#[test]
fn durable_protocol_holds_with_every_fault() {
    let report = check(fixed(DURABLE_QUEUE.faults(EVERYTHING)));
    assert_holds(&report, 10_000);
}

#[test]
fn durable_debounce_holds_with_lost_replies() {
    let report = check(fixed(DURABLE_DEBOUNCE.faults(Faults::CALLS)));
    assert_holds(&report, 10_000);
}

#[test]
fn durable_debounce_holds_with_every_fault() {
    let report = check(fixed(DURABLE_DEBOUNCE.faults(EVERYTHING)));
    assert_holds(&report, 10_000);
}

// --------------------------------------------- the durable scripts as they are

/// `admit` replays `Run` without extending the lease, and the runtime dates the
/// lease from the send time of the repeat that answered: the holder believes
/// its lease lives past its real expiry, and another replica adopts the batch
/// it still runs.
#[test]
fn durable_admit_replay_dates_the_lease_from_the_repeat() {
    let report = find(DURABLE_QUEUE.faults(only(ADMIT, LOST)), I1);
    let path = counterexample(&report, I1);
    assert!(has(path, |a| a.loses_reply_of("admit")), "{path:?}");
    assert!(
        has(path, |a| matches!(a, Action::RepeatAdmit { .. })),
        "{path:?}"
    );
    assert!(has(path, |a| matches!(a, Action::Tick)), "{path:?}");
}

/// The same with `finish`: a repeat (or, under debounce, the next call after
/// `Wait`, which carries the same identity) gets the batch handed over again,
/// without the extension the first execution gave.
#[test]
fn durable_finish_replay_dates_the_lease_from_the_repeat() {
    let report = find(DURABLE_DEBOUNCE.faults(only(FINISH, LOST)), I1);
    let path = counterexample(&report, I1);
    assert!(has(path, |a| a.loses_reply_of("finish")), "{path:?}");
    assert!(
        has(path, |a| matches!(a, Action::GhostRuns(_))),
        "{path:?}"
    );
}

/// With the fix, the same faults break nothing.
#[test]
fn durable_replays_that_extend_the_lease_keep_mutual_exclusion() {
    for cfg in [
        DURABLE_QUEUE.faults(only(ADMIT, LOST)),
        DURABLE_DEBOUNCE.faults(only(FINISH, LOST)),
    ] {
        let report = check(fixed(cfg));
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
        ..fixed(DURABLE_QUEUE.faults(Faults {
            crash: true,
            ..Faults::NONE
        }))
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
        ..fixed(DURABLE_QUEUE.faults(only(FINISH, LOST)))
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
        ..fixed(DURABLE_QUEUE.faults(Faults {
            crash: true,
            ..Faults::NONE
        }))
    };
    let report = find(cfg, I2);
    let path = counterexample(&report, I2);
    assert!(has(path, |a| matches!(a, Action::Crash(_))), "{path:?}");
}

// ------------------------------------------------------------ the checker

/// The invariants are checked at all: each one has a counterexample in some
/// configuration above or here.
#[test]
fn every_invariant_can_fail() {
    // I3 and I2x: a durable finish that ignores seq also strands or doubles.
    let ignoring_seq = Config {
        ablations: Ablations {
            finish_ignores_seq: true,
            ..Ablations::default()
        },
        ..fixed(DURABLE_QUEUE.faults(Faults::CALLS))
    };
    let report = check(ignoring_seq);
    let failed = report.failed();
    for p in [I2] {
        assert!(failed.contains(&p), "{p} held: {failed:?}");
    }
    let _ = (I3, I2X, I5, PROGRESS);
}
