//! Two replicas of one bot on one shared store, end to end: the strategies
//! hold across replicas. A macro, so each backend crate runs the same
//! scenarios on its own store without chat-testkit depending on the runtime.

/// Emits the replica scenarios as `#[tokio::test]`s (multi-threaded, real
/// time). `$states` is an expression, evaluated inside an `async fn`
/// returning `Option<_>`, that yields the two replicas' stores — the same
/// data, separate connections — or returns `None` to skip. The caller
/// depends on `chat-runtime` and `tokio`.
#[macro_export]
macro_rules! replica_scenarios {
    ($states:expr) => {
        use std::collections::HashMap;
        use std::sync::{Arc, Mutex};
        use std::time::Duration;

        use chat_runtime::{
            Bot, Concurrency, Ctx, DebounceOptions, DispatchOptions, Event, Outcome, OutcomeRecord,
            RuntimeOptions,
        };
        use $crate::ScriptedAdapter;

        /// A handler run: the event id and the ids it was handed as skipped.
        type Run = (String, Vec<String>);

        #[derive(Clone, Default)]
        struct Log {
            /// (event id, skipped ids) per handler run.
            runs: Arc<Mutex<Vec<Run>>>,
            outcomes: Arc<Mutex<HashMap<String, Vec<Outcome>>>>,
        }

        impl Log {
            fn ran(&self) -> Vec<Run> {
                self.runs.lock().map(|r| r.clone()).unwrap_or_default()
            }

            fn outcomes(&self) -> HashMap<String, Vec<Outcome>> {
                self.outcomes.lock().map(|o| o.clone()).unwrap_or_default()
            }
        }

        /// Two replicas on one store, logging into one log.
        async fn replicas(concurrency: Concurrency) -> Option<(Vec<Bot>, ScriptedAdapter, Log)> {
            let states = $states;
            let adapter = ScriptedAdapter::new("test");
            let log = Log::default();
            let mut bots = Vec::new();
            for state in states {
                let (runs, outcomes) = (log.runs.clone(), log.outcomes.clone());
                let bot = Bot::builder()
                    .state(state)
                    .adapter(adapter.clone())
                    .options(
                        RuntimeOptions::default()
                            .dispatch(DispatchOptions::deferred(Duration::from_secs(30)))
                            .concurrency(concurrency),
                    )
                    .observer(move |r: &OutcomeRecord| {
                        if let Ok(mut o) = outcomes.lock() {
                            o.entry(r.event_id.to_string()).or_default().push(r.outcome);
                        }
                    })
                    .on_new_mention(move |ctx: Ctx, event: Event| {
                        let runs = runs.clone();
                        async move {
                            let skipped = ctx.skipped().iter().map(|e| e.id.to_string()).collect();
                            if let Ok(mut r) = runs.lock() {
                                r.push((event.id.to_string(), skipped));
                            }
                            let ms = event
                                .text()
                                .and_then(|t| t.strip_prefix("sleep:"))
                                .and_then(|ms| ms.parse().ok())
                                .unwrap_or(0);
                            tokio::select! {
                                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                                () = ctx.cancelled() => {}
                            }
                            Ok::<(), chat_runtime::BoxError>(())
                        }
                    })
                    .build()
                    .unwrap_or_else(|e| panic!("building the bot: {e}"));
                bots.push(bot);
            }
            Some((bots, adapter, log))
        }

        async fn send(
            bot: &Bot,
            adapter: &ScriptedAdapter,
            thread: &str,
            id: &str,
            text: &str,
        ) -> u16 {
            let event = adapter.mention("T1", "C1", thread, id, text);
            bot.handle("test", adapter.request(&event))
                .await
                .status()
                .as_u16()
        }

        /// Waits until every id in `ids` has an outcome (or fails after a while).
        async fn settle(log: &Log, ids: &[&str]) -> HashMap<String, Vec<Outcome>> {
            for _ in 0..100 {
                let o = log.outcomes();
                if ids.iter().all(|id| o.contains_key(*id)) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    return log.outcomes();
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("not every delivery ended: {:?}", log.outcomes());
        }

        /// Queue across replicas: events that arrive at replica 2 while replica 1 runs
        /// are handed to replica 1 when it finishes; the newest runs with the rest
        /// skipped; every delivery has exactly one outcome.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_queue_is_shared_by_the_replicas() {
            let Some((bots, adapter, log)) = replicas(Concurrency::queue()).await else {
                return;
            };
            assert_eq!(send(&bots[0], &adapter, "1", "a", "sleep:500").await, 200);
            tokio::time::sleep(Duration::from_millis(100)).await;
            for id in ["b", "c", "d"] {
                assert_eq!(send(&bots[1], &adapter, "1", id, "ok").await, 200);
            }
            let o = settle(&log, &["a", "b", "c", "d"]).await;
            assert_eq!(
                log.ran(),
                [
                    ("a".to_owned(), vec![]),
                    ("d".to_owned(), vec!["b".to_owned(), "c".to_owned()])
                ]
            );
            assert_eq!(o["a"], [Outcome::Ran]);
            assert_eq!(o["b"], [Outcome::Superseded]);
            assert_eq!(o["c"], [Outcome::Superseded]);
            assert_eq!(o["d"], [Outcome::Ran]);
        }

        /// The same delivery at both replicas runs once: the other is a duplicate.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_delivery_to_both_replicas_runs_once() {
            let Some((bots, adapter, log)) = replicas(Concurrency::Drop).await else {
                return;
            };
            let event = adapter.mention("T1", "C1", "1", "a", "ok");
            let (x, y) = tokio::join!(
                bots[0].handle("test", adapter.request(&event)),
                bots[1].handle("test", adapter.request(&event)),
            );
            assert_eq!((x.status().as_u16(), y.status().as_u16()), (200, 200));
            let o = settle(&log, &["a"]).await;
            assert_eq!(log.ran().len(), 1);
            let list = &o["a"];
            assert_eq!(list.len(), 2, "{list:?}");
            assert!(
                list.contains(&Outcome::Ran) && list.contains(&Outcome::Duplicate),
                "{list:?}"
            );
        }

        /// Debounce across replicas: the quiet period is judged by the store, so events
        /// arriving at either replica replace one another and only the last runs.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn debounce_is_judged_across_the_replicas() {
            let c = Concurrency::Debounce(
                DebounceOptions::default().interval(Duration::from_millis(400)),
            );
            let Some((bots, adapter, log)) = replicas(c).await else {
                return;
            };
            for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
                assert_eq!(send(&bots[i % 2], &adapter, "1", id, "ok").await, 200);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let o = settle(&log, &["a", "b", "c"]).await;
            assert_eq!(log.ran(), [("c".to_owned(), vec![])]);
            assert_eq!(o["a"], [Outcome::Superseded]);
            assert_eq!(o["b"], [Outcome::Superseded]);
            assert_eq!(o["c"], [Outcome::Ran]);
        }
    };
}
