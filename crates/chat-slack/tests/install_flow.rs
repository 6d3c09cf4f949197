//! Slack's OAuth provider through the whole install-flow conformance suite,
//! against a fake of Slack's OAuth endpoints.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use chat_core::TenantId;
use chat_slack::SlackOAuthProvider;
use chat_testkit::install_flow::FlowFixture;
use chat_testkit::{FakeSlackOAuth, SlackWorkspace};

struct Slack(FakeSlackOAuth);

impl Slack {
    async fn start() -> Self {
        Self(FakeSlackOAuth::start().await)
    }
}

impl FlowFixture for Slack {
    type Provider = SlackOAuthProvider;

    fn provider(&self) -> SlackOAuthProvider {
        SlackOAuthProvider::builder()
            .api_base_url(self.0.api_base_url())
            .build()
            .unwrap()
    }

    fn client(&self) -> (&'static str, &'static str) {
        (FakeSlackOAuth::CLIENT_ID, FakeSlackOAuth::CLIENT_SECRET)
    }

    fn scopes(&self) -> Vec<&'static str> {
        vec!["app_mentions:read", "chat:write"]
    }

    fn authorize_url(&self) -> String {
        self.0.authorize_url()
    }

    fn add_account(&self, name: &str) -> TenantId {
        let team = format!("T{}", name.to_uppercase());
        self.0
            .add_workspace(SlackWorkspace::new(&team, &format!("xoxb-{team}")));
        TenantId::new(team)
    }

    fn approve(&self, authorize: &str, name: &str) -> Result<String, String> {
        self.0
            .approve(authorize, &format!("T{}", name.to_uppercase()))
    }

    fn token_requests(&self) -> usize {
        self.0.token_requests().len()
    }

    fn refreshes(&self) -> bool {
        false
    }

    fn set_token_lifetime(&self, _lifetime: Duration) {}
}

chat_testkit::install_flow_conformance!(Slack::start());
