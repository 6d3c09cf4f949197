//! Linear's OAuth provider through the whole install-flow conformance suite,
//! against a fake of Linear's OAuth endpoints.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use chat_core::TenantId;
use chat_linear::LinearOAuthProvider;
use chat_testkit::install_flow::FlowFixture;
use chat_testkit::{FakeLinearOAuth, LinearOrganization};

struct Linear(FakeLinearOAuth);

impl Linear {
    async fn start() -> Self {
        Self(FakeLinearOAuth::start().await)
    }
}

impl FlowFixture for Linear {
    type Provider = LinearOAuthProvider;

    fn provider(&self) -> LinearOAuthProvider {
        LinearOAuthProvider::builder()
            .token_url(self.0.token_url())
            .graphql_url(self.0.graphql_url())
            .build()
            .unwrap()
    }

    fn client(&self) -> (&'static str, &'static str) {
        (FakeLinearOAuth::CLIENT_ID, FakeLinearOAuth::CLIENT_SECRET)
    }

    fn scopes(&self) -> Vec<&'static str> {
        chat_linear::DEFAULT_SCOPES.to_vec()
    }

    fn authorize_url(&self) -> String {
        self.0.authorize_url()
    }

    fn add_account(&self, name: &str) -> TenantId {
        let org = format!("org-{name}");
        self.0.add_organization(LinearOrganization::new(&org));
        TenantId::new(org)
    }

    fn approve(&self, authorize: &str, name: &str) -> Result<String, String> {
        self.0.approve(authorize, &format!("org-{name}"))
    }

    fn token_requests(&self) -> usize {
        self.0.token_requests().len()
    }

    fn refreshes(&self) -> bool {
        true
    }

    fn set_token_lifetime(&self, lifetime: Duration) {
        self.0.set_token_lifetime(lifetime);
    }
}

chat_testkit::install_flow_conformance!(Linear::start());
