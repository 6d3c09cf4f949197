//! The one forwarding wrapper, `chat_core::state::Intercepted`: a backend seen
//! through a pass-through interceptor passes the whole conformance suite (so
//! every method is forwarded, with its arguments and its answer), and the
//! testkit's faults, built on it, reach the calls they name.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chat_core::state::{Answer, Call, Intercepted, Interceptor, Op};
use chat_core::{
    AdmitRequest, Concurrency, Coordination, Decision, KvStore, Renewal, SetMode, StateBackend,
    StateError,
};
use chat_state_memory::MemoryState;
use chat_testkit::{EventBuilder, Fault, Faults, Harness, KvHarness, ScriptedAdapter};

/// Passes every call on, counting them.
#[derive(Default)]
struct Count(AtomicUsize);

#[async_trait]
impl Interceptor for Count {
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        call.run(next.as_ref()).await
    }
}

fn counted() -> Intercepted<Count> {
    Intercepted::new(Arc::new(MemoryState::new()), Count::default())
}

mod forwarded {
    use super::*;

    chat_testkit::state_backend_conformance!(
        #[tokio::test(start_paused = true)]
        async {
            Harness::paused(counted())
        }
    );
}

mod forwarded_kv {
    use super::*;

    chat_testkit::kv_store_conformance!(
        #[tokio::test(start_paused = true)]
        async {
            KvHarness::paused(counted())
        }
    );
}

fn admit_request(id: &str) -> AdmitRequest {
    let thread = ScriptedAdapter::new("test").thread("T1", "C1", "1");
    let event = EventBuilder::new(thread.clone())
        .id(id)
        .mention("hi")
        .build();
    AdmitRequest::new(event, thread.thread_scope(), Concurrency::queue())
}

#[tokio::test(start_paused = true)]
async fn every_call_goes_through_the_interceptor() {
    let state = counted();
    state.admit(admit_request("a")).await.unwrap();
    state.health().await.unwrap();
    state
        .set("k", "v".into(), None, SetMode::Always)
        .await
        .unwrap();
    assert_eq!(state.interceptor().0.load(Ordering::Relaxed), 3);
}

/// Answers every renewal with a handoff: the wrong type for the call.
struct Confused;

#[async_trait]
impl Interceptor for Confused {
    async fn intercept(
        &self,
        call: Call<'_>,
        next: &Arc<dyn StateBackend>,
    ) -> Result<Answer, StateError> {
        match call.op() {
            Op::Renew => Ok(Answer::Handoff(chat_core::Handoff::Released)),
            _ => call.run(next.as_ref()).await,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_of_the_wrong_type_is_a_backend_error_not_a_panic() {
    let state = Intercepted::new(Arc::new(MemoryState::new()), Confused);
    let Decision::Run(lease) = state.admit(admit_request("a")).await.unwrap().decision else {
        panic!("expected the lease");
    };
    let err = state
        .renew(&lease, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(err, StateError::Backend(_)), "{err:?}");
    assert!(format!("{err:?}").contains("renew"), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn a_lost_reply_ran_and_a_repeat_gets_the_same_answer() {
    let faults = Arc::new(Faults::new());
    let state = faults.wrap(Arc::new(MemoryState::new()));
    faults.inject(Op::Admit, Fault::LoseReply);
    let request = admit_request("a");
    let err = state.admit(request.clone()).await.unwrap_err();
    assert!(matches!(err, StateError::Timeout(_)), "{err:?}");
    assert_eq!(faults.pending(), 0);
    // The call ran: repeating it with the same identity gets the lease it
    // granted, which renews.
    let Decision::Run(lease) = state.admit(request).await.unwrap().decision else {
        panic!("expected the same lease again");
    };
    assert!(matches!(
        state.renew(&lease, Duration::from_secs(1)).await.unwrap(),
        Renewal::Renewed { .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn a_late_call_runs_after_its_caller_gave_up() {
    let faults = Arc::new(Faults::new());
    let state = faults.wrap(Arc::new(MemoryState::new()));
    faults.inject(Op::KvSet, Fault::RunLate(Duration::from_secs(2)));
    assert!(
        state
            .set("k", "v".into(), None, SetMode::Always)
            .await
            .is_err()
    );
    assert_eq!(state.get("k").await.unwrap(), None);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(state.get("k").await.unwrap(), Some("v".into()));
}

#[tokio::test(start_paused = true)]
async fn a_cut_op_fails_until_reconnected_and_others_still_pass() {
    let faults = Arc::new(Faults::new().shared_as(true));
    let state = faults.wrap(Arc::new(MemoryState::new()));
    assert!(state.shared(), "shared_as overrides the memory backend");
    faults.cut(Op::Health);
    assert!(matches!(
        state.health().await,
        Err(StateError::Unavailable(_))
    ));
    assert!(state.get("k").await.is_ok());
    faults.reconnect();
    assert!(state.health().await.is_ok());
}
