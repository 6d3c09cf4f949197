//! Metrics, through the [`metrics`] facade: the runtime records
//! them whether or not anyone listens (a no-op until the application installs
//! a recorder), so dashboards and alerts need no code in the bot.
//!
//! Install a recorder once at start — the documented default is
//! `metrics-exporter-prometheus`, whose handle renders the text a Prometheus
//! server scrapes; mount it on a path of your own (`GET /metrics` in
//! echo-bot):
//!
//! ```
//! # fn install() -> Result<(), Box<dyn std::error::Error>> {
//! # use metrics_exporter_prometheus::PrometheusBuilder;
//! let handle = PrometheusBuilder::new()
//!     .set_buckets(chat_runtime::telemetry::LATENCY_BUCKETS)?
//!     .install_recorder()?;
//! // GET /metrics answers handle.render(); call handle.run_upkeep() every few
//! // seconds so histograms stay compact between scrapes.
//! # let _ = handle;
//! # Ok(())
//! # }
//! ```
//!
//! Names and units follow Prometheus's conventions. Labels are bounded: the
//! platform, the verdict or outcome and its short reason, the state operation.
//! The tenant is a label only when
//! [`TelemetryOptions::tenant_label`](crate::TelemetryOptions::tenant_label)
//! is on (one series per installation). docs/observability.md lists every
//! metric with example alert rules.

use std::time::Duration;

use chat_core::{Platform, TenantId};

/// Deliveries answered, by platform and verdict (`accepted`, `duplicate`,
/// `ignored`, `at-capacity`, `failed`, `rejected`, `reply`, `working`).
pub const DELIVERIES: &str = "chat_deliveries_total";
/// Request received (body read) → answer ready to write, by platform.
pub const ACK_SECONDS: &str = "chat_ack_duration_seconds";
/// Outcomes, by platform, outcome name (`handler-ran`, `message-duplicate`,
/// …) and reason (and tenant, when opted in).
pub const OUTCOMES: &str = "chat_outcomes_total";
/// Handler run time, by platform and outcome.
pub const HANDLER_SECONDS: &str = "chat_handler_duration_seconds";
/// Time from reception to the handler's start (queue, debounce, burst and
/// slot waits included), by platform.
pub const WAIT_SECONDS: &str = "chat_wait_duration_seconds";
/// From the end of a holder's batch to the start of the next batch `finish`
/// handed it (what waited behind a running handler), by platform.
pub const HANDOFF_SECONDS: &str = "chat_handoff_duration_seconds";
/// How long a cancelled handler took to return, by platform.
pub const CANCEL_SECONDS: &str = "chat_cancel_duration_seconds";
/// Detached runs in use (each holds a place of `max_detached`).
pub const DETACHED_IN_USE: &str = "chat_detached_runs";
/// The `max_detached` bound.
pub const DETACHED_MAX: &str = "chat_detached_runs_max";
/// Detached runs in use per tenant (only with the tenant label on).
pub const TENANT_IN_USE: &str = "chat_tenant_detached_runs";
/// Leases this process holds.
pub const LEASES_HELD: &str = "chat_leases_held";
/// Runs cancelled because their lease was lost (renewal refused or too late:
/// a paused process, a partition, a force-release), by platform. Each runs
/// again under the scope's next holder.
pub const LEASES_LOST: &str = "chat_leases_lost_total";
/// Holders of this process waiting for an entry to be ready (debounce, burst).
pub const HOLDERS_WAITING: &str = "chat_holders_waiting";
/// State backend call latency, by operation (`admit`, `finish`, …); the admit
/// round trip is `op="admit"`.
pub const STATE_SECONDS: &str = "chat_state_call_duration_seconds";
/// State backend calls that failed, by operation and error kind.
pub const STATE_ERRORS: &str = "chat_state_errors_total";

/// Histogram buckets (seconds) for every latency above: 100 µs to 60 s, dense
/// around Slack's 3 s acknowledgement deadline.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0,
    2.5, 3.0, 5.0, 10.0, 30.0, 60.0,
];

/// Describes every metric (units and help text) to the installed recorder.
/// The runtime calls it when a bot is built.
pub(crate) fn describe() {
    use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(DELIVERIES, "Deliveries answered, by platform and verdict");
    describe_histogram!(
        ACK_SECONDS,
        Unit::Seconds,
        "Request received to answer ready, by platform"
    );
    describe_counter!(OUTCOMES, "Outcomes, by platform, outcome and reason");
    describe_histogram!(HANDLER_SECONDS, Unit::Seconds, "Handler run time");
    describe_histogram!(WAIT_SECONDS, Unit::Seconds, "Reception to handler start");
    describe_histogram!(
        HANDOFF_SECONDS,
        Unit::Seconds,
        "End of a batch to the start of the next one handed over"
    );
    describe_histogram!(
        CANCEL_SECONDS,
        Unit::Seconds,
        "Cancellation to handler return"
    );
    describe_gauge!(DETACHED_IN_USE, "Detached runs in use");
    describe_gauge!(DETACHED_MAX, "The max_detached bound");
    describe_gauge!(TENANT_IN_USE, "Detached runs in use per tenant");
    describe_gauge!(LEASES_HELD, "Leases this process holds");
    describe_counter!(LEASES_LOST, "Runs cancelled because their lease was lost");
    describe_gauge!(HOLDERS_WAITING, "Holders waiting for an entry to be ready");
    describe_histogram!(
        STATE_SECONDS,
        Unit::Seconds,
        "State backend call latency, by operation"
    );
    describe_counter!(
        STATE_ERRORS,
        "State backend call errors, by operation and kind"
    );
}

/// The verdict a delivery was answered with.
pub(crate) fn delivery(platform: Platform, verdict: &'static str, took: Duration) {
    let platform = platform.as_str();
    ::metrics::counter!(DELIVERIES, "platform" => platform, "verdict" => verdict).increment(1);
    ::metrics::histogram!(ACK_SECONDS, "platform" => platform).record(took.as_secs_f64());
}

/// One outcome; `tenant` only when the tenant label is on.
pub(crate) fn outcome(
    platform: Option<Platform>,
    tenant: Option<&TenantId>,
    outcome: &'static str,
    reason: &'static str,
    ran_for: Option<Duration>,
    cancel_latency: Option<Duration>,
) {
    let platform = platform.map_or("", Platform::as_str);
    match tenant {
        Some(t) => ::metrics::counter!(OUTCOMES, "platform" => platform, "outcome" => outcome, "reason" => reason, "tenant" => t.as_str().to_owned()).increment(1),
        None => ::metrics::counter!(OUTCOMES, "platform" => platform, "outcome" => outcome, "reason" => reason).increment(1),
    }
    if let Some(d) = ran_for {
        ::metrics::histogram!(HANDLER_SECONDS, "platform" => platform, "outcome" => outcome)
            .record(d.as_secs_f64());
    }
    if let Some(d) = cancel_latency {
        ::metrics::histogram!(CANCEL_SECONDS, "platform" => platform).record(d.as_secs_f64());
    }
}

/// A handler starts `waited` after its event was received.
pub(crate) fn run_started(platform: Platform, waited: Duration) {
    ::metrics::histogram!(WAIT_SECONDS, "platform" => platform.as_str())
        .record(waited.as_secs_f64());
}

/// A holder's next batch starts `took` after its previous batch ended.
pub(crate) fn handed_over(platform: Platform, took: Duration) {
    ::metrics::histogram!(HANDOFF_SECONDS, "platform" => platform.as_str())
        .record(took.as_secs_f64());
}

/// One place of `max_detached` taken (`+1`) or given back (`-1`).
pub(crate) fn detached(delta: f64, tenant: Option<&TenantId>) {
    ::metrics::gauge!(DETACHED_IN_USE).increment(delta);
    if let Some(t) = tenant {
        ::metrics::gauge!(TENANT_IN_USE, "tenant" => t.as_str().to_owned()).increment(delta);
    }
}

/// The configured bound, set once.
pub(crate) fn detached_max(max: usize) {
    ::metrics::gauge!(DETACHED_MAX).set(max as f64);
}

/// Leases held by this process now.
pub(crate) fn leases_held(n: usize) {
    ::metrics::gauge!(LEASES_HELD).set(n as f64);
}

/// A run lost its lease.
pub(crate) fn lease_lost(platform: Platform) {
    ::metrics::counter!(LEASES_LOST, "platform" => platform.as_str()).increment(1);
}

/// Holders of this process waiting now.
pub(crate) fn holders_waiting(n: usize) {
    ::metrics::gauge!(HOLDERS_WAITING).set(n as f64);
}

/// One state backend call.
pub(crate) fn state_call(op: &'static str, took: Duration, error: Option<&'static str>) {
    ::metrics::histogram!(STATE_SECONDS, "op" => op).record(took.as_secs_f64());
    if let Some(kind) = error {
        ::metrics::counter!(STATE_ERRORS, "op" => op, "kind" => kind).increment(1);
    }
}
