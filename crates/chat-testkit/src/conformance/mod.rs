//! The [`StateBackend`](chat_core::StateBackend) conformance suite.
//!
//! Each case is a public `async fn(Harness)` named for the rule it checks. A
//! backend runs them all with [`state_backend_conformance!`](crate::state_backend_conformance),
//! which emits one `#[test]` per case, so a failure names its rule:
//!
//! ```
//! mod memory {
//!     chat_testkit::state_backend_conformance!(
//!         #[tokio::test(start_paused = true)]
//!         async { chat_testkit::Harness::paused(chat_state_memory::MemoryState::new()) }
//!     );
//! }
//! ```
//!
//! The race cases (`race_*`) are also listed by [`race_cases!`](crate::race_cases),
//! for running them again under a multi-threaded runtime.
//!
//! A [`KvStore`](chat_core::KvStore) runs the `kv_*` cases with
//! [`kv_store_conformance!`](crate::kv_store_conformance), given a
//! [`KvHarness`](crate::KvHarness):
//!
//! ```
//! mod kv {
//!     chat_testkit::kv_store_conformance!(
//!         #[tokio::test(start_paused = true)]
//!         async { chat_testkit::KvHarness::paused(chat_state_memory::MemoryState::new()) }
//!     );
//! }
//! ```

mod burst;
pub(crate) mod control;
mod debounce;
mod dedupe;
mod durable;
mod inspect;
mod kv;
mod lease;
mod queue;
mod races;
mod slots;

pub use burst::*;
pub use control::*;
pub use debounce::*;
pub use dedupe::*;
pub use durable::*;
pub use inspect::*;
pub use kv::*;
pub use lease::*;
pub use queue::*;
pub use races::*;
pub use slots::*;

/// Calls `$callback! { $args ; case, case, … }` with every case name. The one
/// list of the suite's cases.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($callback:ident ! { $($args:tt)* }) => {
        $crate::$callback! { $($args)* ;
            dedupe_first_admit_is_new,
            dedupe_second_admit_is_duplicate,
            dedupe_mark_expires_after_ttl,
            dedupe_keys_are_per_tenant_and_channel,
            dedupe_unmark_lets_a_retry_run,
            dedupe_unmark_of_an_unknown_key_is_false,
            dedupe_duplicate_changes_nothing,
            gate_unsubscribed_message_is_not_admitted_nor_marked,
            gate_admission_reports_subscription,
            gate_plain_message_joins_waiting_work_of_its_thread,
            gate_plain_message_joins_a_queue_or_a_pending_event,
            subscriptions_round_trip,
            subscriptions_are_per_tenant,
            subscriptions_expire_after_their_ttl,
            subscriptions_are_renewed_by_activity,
            subscribing_again_sets_the_expiry_anew,
            unsubscribing_a_tenant_removes_its_subscriptions_only,
            admit_rejects_a_scope_outside_the_events_channel,
            lease_conflict_drops_the_second_event,
            lease_dropped_event_stays_marked,
            lease_scopes_are_independent,
            lease_finish_releases,
            lease_expires_after_its_ttl,
            lease_renew_extends,
            lease_renew_after_expiry_is_lost,
            lease_stale_holder_cannot_touch_a_newer_lease,
            lease_fence_grows_with_every_grant,
            lease_tokens_are_unguessable,
            lease_finish_twice_is_released_once,
            queue_busy_events_are_queued_with_depth,
            queue_finish_hands_off_all_entries_in_join_order,
            queue_full_drop_oldest_evicts_the_oldest,
            queue_full_drop_newest_drops_the_newcomer,
            queue_entry_past_its_ttl_is_expired,
            queue_entries_report_their_wait,
            queue_orphaned_entries_go_to_the_next_holder,
            debounce_first_event_holds_until_quiet,
            debounce_replacement_supersedes_and_restarts_the_interval,
            debounce_event_during_a_run_waits_for_the_holder,
            debounce_orphaned_pending_is_superseded_by_the_next_admit,
            debounce_pending_past_its_entry_ttl_is_expired,
            burst_window_collects_one_batch,
            burst_window_is_not_extended_by_later_arrivals,
            burst_max_batch_seals_early,
            burst_batches_run_in_seal_order,
            burst_full_refuses_before_the_ack_and_leaves_the_key_unmarked,
            burst_member_past_its_entry_ttl_is_expired,
            concurrent_unbounded_runs_everything,
            concurrent_slots_are_bounded,
            concurrent_released_slot_goes_to_a_waiter,
            concurrent_slot_expires_and_its_run_is_recovered,
            concurrent_handed_back_run_is_recovered_at_once,
            concurrent_recovered_run_keeps_the_concurrency_it_was_admitted_with,
            concurrent_slots_are_per_scope,
            cancel_request_reaches_the_holder_at_renewal,
            cancel_request_is_deduplicated_and_needs_a_holder,
            cancel_request_is_cleared_by_finish,
            release_leaves_waiting_entries_for_the_next_holder,
            release_with_a_stale_token_changes_nothing,
            sweep_claims_an_orphaned_queue,
            sweep_ignores_held_and_idle_scopes,
            sweep_claims_an_orphaned_debounce_pending,
            sweep_skips_tenants_and_rotates_through_a_backlog,
            replay_admit_returns_the_same_run,
            replay_admit_after_its_lease_lapsed_is_stored,
            replay_admit_of_queued_and_dropped_decisions,
            replay_finish_hands_over_the_same_batch,
            replay_stale_finish_changes_nothing,
            replay_renew_and_release_change_nothing_more,
            replays_extend_the_lease_like_the_first_answer,
            inflight_run_of_a_dead_holder_is_adopted,
            released_batches_are_handed_back_or_acknowledged,
            lapsed_holder_acknowledges_its_own_batch,
            adopted_batches_read_as_first_handed_out,
            health_check_answers,
            inspect_shows_a_held_scope_with_its_queue,
            inspect_shows_pending_and_burst_entries,
            force_release_with_a_stale_fence_changes_nothing,
            force_release_hands_the_scopes_work_to_the_next_holder,
            force_release_of_a_slot_leaves_its_run_for_recovery,
            race_one_dedupe_key_has_one_winner,
            race_one_scope_has_one_lease,
            race_slots_never_exceed_max,
            race_queue_admits_are_all_accounted_for,
            race_admit_during_finish_is_never_stranded,
        }
    };
}

/// Calls `$callback! { $args ; case, … }` with the race cases only.
#[doc(hidden)]
#[macro_export]
macro_rules! __race_cases {
    ($callback:ident ! { $($args:tt)* }) => {
        $crate::$callback! { $($args)* ;
            race_one_dedupe_key_has_one_winner,
            race_one_scope_has_one_lease,
            race_slots_never_exceed_max,
            race_queue_admits_are_all_accounted_for,
            race_admit_during_finish_is_never_stranded,
        }
    };
}

/// Emits one test per case: `#[$attr] async fn case() { case($make.await).await }`,
/// the harness a [`Harness`](crate::Harness) unless `=> Type` names another.
#[doc(hidden)]
#[macro_export]
macro_rules! __emit_conformance_tests {
    (#[$attr:meta] $make:expr ; $($case:ident),* $(,)?) => {
        $crate::__emit_conformance_tests! { #[$attr] $make => $crate::Harness ; $($case),* }
    };
    (#[$attr:meta] $make:expr => $harness:ty ; $($case:ident),* $(,)?) => {
        $(
            #[$attr]
            async fn $case() {
                let harness: $harness = $make.await;
                $crate::conformance::$case(harness).await;
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __case_names {
    ( ; $($case:ident),* $(,)?) => {
        /// The name of every case in the suite.
        pub const CASES: &[&str] = &[$(stringify!($case)),*];
    };
}

crate::__conformance_cases!(__case_names! {});

/// Emits one test per conformance case, each given a fresh harness from `$make`
/// (an expression evaluating to a future of [`Harness`](crate::Harness)), under
/// the test attribute `#[$attr]`.
#[macro_export]
macro_rules! state_backend_conformance {
    (#[$attr:meta] $make:expr) => {
        $crate::__conformance_cases!(__emit_conformance_tests! { #[$attr] $make });
    };
}

/// Emits one test per race case (see [`state_backend_conformance!`]); for running
/// them again under a multi-threaded runtime.
#[macro_export]
macro_rules! race_cases {
    (#[$attr:meta] $make:expr) => {
        $crate::__race_cases!(__emit_conformance_tests! { #[$attr] $make });
    };
}

/// Emits one test per [`KvStore`](chat_core::KvStore) case, each given a fresh
/// [`KvHarness`](crate::KvHarness) from `$make`, under the test attribute
/// `#[$attr]`.
#[macro_export]
macro_rules! kv_store_conformance {
    (#[$attr:meta] $make:expr) => {
        $crate::__emit_conformance_tests! { #[$attr] $make => $crate::KvHarness ;
            kv_set_get_delete,
            kv_entries_expire,
            kv_set_if_absent,
            kv_set_if_equals,
        }
    };
}
