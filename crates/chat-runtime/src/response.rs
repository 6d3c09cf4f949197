//! A delivery's HTTP response, shared between the ack path (which must respond by
//! `timeouts.ack`) and an inline run (whose handler may answer the delivery
//! itself with [`Ctx::reply`](crate::Ctx::reply)).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use chat_core::{Event, Reply, Verdict};

#[derive(Default)]
enum State {
    /// Not answered yet; the handler's reply, once it gave one.
    #[default]
    Open,
    Replied(Reply),
    /// The run was cut short with nobody else to run it, and its event given
    /// back to the platform: the answer says so ([`Verdict::Failed`]), at
    /// `timeouts.ack` too.
    GivenBack,
    /// The HTTP answer went out: a reply now goes out later.
    Sent,
}

/// One delivery's answer. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct DeliveryResponse {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    event: OnceLock<Arc<Event>>,
    /// The event was admitted: its run is in progress.
    admitted: OnceLock<()>,
    /// The name of the verdict the ack path answered with.
    verdict: OnceLock<&'static str>,
    state: Mutex<State>,
}

impl DeliveryResponse {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn parsed(&self, event: &Arc<Event>) {
        let _ = self.inner.event.set(Arc::clone(event));
    }

    pub(crate) fn admitted(&self) {
        let _ = self.inner.admitted.set(());
    }

    pub(crate) fn event(&self) -> Option<&Arc<Event>> {
        self.inner.event.get()
    }

    /// Notes the verdict the ack path answers with (the first one counts).
    pub(crate) fn answered(&self, verdict: &'static str) {
        let _ = self.inner.verdict.set(verdict);
    }

    /// The verdict the ack path answered with, if it got that far.
    pub(crate) fn verdict(&self) -> Option<&'static str> {
        self.inner.verdict.get().copied()
    }

    /// A handler's reply: kept for the HTTP answer, or given back when that
    /// answer was already sent (the caller sends it later).
    pub(crate) fn reply(&self, value: Reply) -> Result<(), Reply> {
        let mut state = self.state();
        match *state {
            State::Sent | State::GivenBack => Err(value),
            _ => {
                *state = State::Replied(value);
                Ok(())
            }
        }
    }

    /// A run cut short (shutdown) that nobody else can run: its event is given
    /// back to the platform if the answer has not gone out yet, and then the
    /// answer is [`Verdict::Failed`] whenever it goes (also at `timeouts.ack`).
    /// Returns `false` when the answer had already gone out.
    pub(crate) fn give_back(&self) -> bool {
        let mut state = self.state();
        match *state {
            State::Sent => false,
            _ => {
                *state = State::GivenBack;
                true
            }
        }
    }

    /// The delivery's own verdict is ready: the handler's reply, if it gave
    /// one, takes the place of an acceptance. The answer is sent.
    pub(crate) fn finish(&self, verdict: Verdict) -> Verdict {
        let mut state = self.state();
        let replied = std::mem::replace(&mut *state, State::Sent);
        match (verdict, replied) {
            (Verdict::Accepted, State::Replied(value)) => Verdict::Reply(value),
            (verdict, _) => verdict,
        }
    }

    /// `timeouts.ack` passed first: a reply already given goes out now; an
    /// admitted event still running is `Working`; anything else is told to
    /// retry.
    pub(crate) fn timed_out(&self) -> Verdict {
        let mut state = self.state();
        let replied = std::mem::replace(&mut *state, State::Sent);
        match replied {
            State::Replied(value) => Verdict::Reply(value),
            State::GivenBack => Verdict::Failed,
            _ if self.inner.admitted.get().is_some() => Verdict::Working,
            _ => Verdict::AtCapacity,
        }
    }
}
