//! Handlers that run inside their request (sync dispatch, inline
//! interactions) are bounded: past `max_inline`, a delivery gets the
//! at-capacity answer before any state is touched, and its retry is new.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use chat_runtime::{
    AdmissionOptions, Bot, BoxError, BuildError, Ctx, Dispatch, DispatchOptions, Event, Outcome,
    OutcomeRecord, RuntimeOptions, TimeoutOptions,
};
use chat_state_memory::MemoryState;
use chat_testkit::ScriptedAdapter;
use tokio::sync::Notify;

#[tokio::test(start_paused = true)]
async fn past_max_inline_a_sync_delivery_is_refused_and_its_retry_accepted() {
    let adapter = ScriptedAdapter::new("test");
    let entered = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let rejected = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&rejected);
    let (e, r) = (Arc::clone(&entered), Arc::clone(&release));
    let bot = Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::default().mode(Dispatch::Sync))
                .admission(AdmissionOptions::default().max_inline(1))
                .timeouts(TimeoutOptions::default().ack(Duration::from_secs(60))),
        )
        .observer(move |o: &OutcomeRecord| {
            if o.outcome == Outcome::Rejected {
                seen.lock()
                    .unwrap()
                    .push(format!("{}:{}", o.event_id, o.reason));
            }
        })
        .on_new_mention(move |ctx: Ctx, _event: Event| {
            let (e, r) = (Arc::clone(&e), Arc::clone(&r));
            async move {
                e.notify_one();
                r.notified().await;
                ctx.thread().post("done").await?;
                Ok::<_, BoxError>(())
            }
        })
        .build()
        .unwrap();

    let first = adapter.mention("T1", "C1", "1", "a", "hi");
    let busy = {
        let (bot, request) = (bot.clone(), adapter.request(&first));
        tokio::spawn(async move { bot.handle("test", request).await })
    };
    entered.notified().await;
    // Another thread, another tenant even: the one inline place is taken.
    let second = adapter.mention("T2", "C9", "2", "b", "hi");
    let refused = bot.handle("test", adapter.request(&second)).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(*rejected.lock().unwrap(), ["b:at-capacity"]);

    release.notify_one();
    assert_eq!(busy.await.unwrap().status(), 200);
    // The place is free again, and the refused delivery was not marked: its
    // retry runs.
    let retry = {
        let (bot, request) = (bot.clone(), adapter.request(&second));
        tokio::spawn(async move { bot.handle("test", request).await })
    };
    entered.notified().await;
    release.notify_one();
    assert_eq!(retry.await.unwrap().status(), 200);
    assert_eq!(adapter.posts(), ["done", "done"]);
    bot.shutdown(Duration::from_secs(1)).await;
}

#[test]
fn a_zero_inline_bound_is_refused_at_build() {
    let built = Bot::builder()
        .state(MemoryState::new())
        .adapter(ScriptedAdapter::new("test"))
        .options(RuntimeOptions::default().admission(AdmissionOptions::default().max_inline(0)))
        .build();
    assert!(matches!(built.err(), Some(BuildError::MaxInlineZero)));
}
