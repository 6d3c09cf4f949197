//! The state backend the runtime calls through: every call timed, and every
//! error counted, by operation (see [`telemetry`](crate::telemetry)).

use std::sync::Arc;

use async_trait::async_trait;
use chat_core::state::{Answer, Call, Intercepted, Interceptor};
use chat_core::{StateBackend, StateError};
use tokio::time::Instant;

use crate::telemetry;

/// Times every call of the bot's backend; the runtime never calls the backend
/// around it.
#[derive(Debug)]
pub(crate) struct Metered;

impl Metered {
    /// `state`, metered.
    pub(crate) fn wrap(state: Arc<dyn StateBackend>) -> Arc<dyn StateBackend> {
        Arc::new(Intercepted::new(state, Self))
    }
}

fn kind(e: &StateError) -> &'static str {
    match e {
        StateError::Unavailable(_) => "unavailable",
        StateError::Timeout(_) => "timeout",
        StateError::Codec(_) => "codec",
        StateError::InvalidRequest(_) => "invalid-request",
        StateError::Backend(_) => "backend",
        _ => "other",
    }
}

#[async_trait]
impl Interceptor for Metered {
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        let op = call.op();
        let start = Instant::now();
        let r = call.run(next.as_ref()).await;
        telemetry::state_call(op.name(), start.elapsed(), r.as_ref().err().map(kind));
        r
    }
}
