//! The Linear payloads echo-bot is driven with, as Linear sends them.

use chat_testkit::FakeLinear;
use chat_testkit::signed::LinearDeliveries;
use serde_json::Value;

/// The workspace (organization).
pub const ORG: &str = "8f0b0c1e-1d7e-4b7a-9f7e-3d1c0a9b2e01";
/// The app user (the agent); echo-bot is given it as `LINEAR_APP_USER_ID`.
pub const APP_USER: &str = FakeLinear::VIEWER_ID;
/// The human who mentions the agent.
pub const USER: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
/// The issue everything happens on.
pub const ISSUE: &str = "5b3a8e3c-2d4f-4a6b-9c1d-0e2f3a4b5c6d";

/// `AgentSessionEvent` `created`: the agent was mentioned in a comment whose
/// body is `comment`; signed now (`webhookTimestamp` in milliseconds).
pub fn session_created(session_id: &str, comment: &str) -> Value {
    LinearDeliveries::new(super::LINEAR_WEBHOOK_SECRET)
        .organization(ORG)
        .app_user(APP_USER)
        .session_created_body(session_id, comment)
}
