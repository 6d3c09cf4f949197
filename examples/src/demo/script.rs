//! The steps of the demo: what is sent, and what each step checks.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chat_runtime::BoxError;
use chat_testkit::{FakeSlack, FakeSlackOAuth, SlackWorkspace};
use serde_json::json;

use super::records::{Mark, activities, methods};
use super::{Demo, Options, SHUTDOWN_DEADLINE, THREAD, strategy_name};
use crate::config::ConcurrencyArg;
use crate::drive::oauth::{self, SlackInstall};
use crate::drive::{self, Delivery, EchoBotCommand, slack};
use crate::ledger;

/// A thread of step 4b, mentioned for the first time.
pub(super) const NEW_THREAD: &str = "1700000030.000100";
/// Its follow-up, typed inside the mention's window.
pub(super) const FOLLOW_UP_TS: &str = "1700000030.000200";
/// The post whose `app_mention` and `message` twins arrive.
pub(super) const TWIN_TS: &str = "1700000010.000200";
/// The agent session.
pub(super) const SESSION: &str = "d3f1a2b4-6c8e-4f0a-9b1c-2e3d4f5a6b7c";
/// Its delivery.
pub(super) const LINEAR_DELIVERY: &str = "234d1a4e-b617-4388-90fe-adc3633d6b72";
/// The slash command's `trigger_id`, which is its event id.
pub(super) const TRIGGER: &str = "13345224609.738474920.8088930838d88f008e0";
/// The follow-ups of step 4, in the order they are sent.
pub(super) const FOLLOW_UPS: [(&str, &str, &str); 4] = [
    ("Ev04", "1700000020.000300", "one"),
    ("Ev05", "1700000021.000400", "two"),
    ("Ev06", "1700000022.000500", "three"),
    ("Ev07", "1700000023.000600", "four"),
];

/// What the strategy promises for the burst of step 4.
pub(super) struct BurstPromise {
    /// The outcome of each follow-up.
    outcomes: [&'static str; 4],
    /// The echoes posted.
    posts: &'static [&'static str],
    /// Whether they are posted in that order.
    ordered: bool,
    /// In words.
    summary: &'static str,
}

/// The workspaces that install echo-bot in step 7: team id, name, the
/// mention's event id.
pub(super) const INSTALLED: [(&str, &str, &str); 2] =
    [("T1", "Acme", "EvW1"), ("T2", "Globex", "EvW2")];
/// The workspace of step 7 that never installed it.
pub(super) const UNINSTALLED: (&str, &str, &str) = ("T3", "Initech", "EvW3");
/// The `ts` of step 7's mentions: the same in every workspace.
pub(super) const WORKSPACE_TS: &str = "1700000100.000100";

pub(super) const RAN: &str = "handler-ran";
pub(super) const IGNORED: &str = "message-ignored";
pub(super) const DUPLICATE: &str = "message-duplicate";
pub(super) const SUPERSEDED: &str = "message-superseded";
pub(super) const DROPPED: &str = "message-dropped";

pub(super) fn burst_promise(strategy: ConcurrencyArg) -> BurstPromise {
    match strategy {
        ConcurrencyArg::Queue => BurstPromise {
            outcomes: [RAN, SUPERSEDED, SUPERSEDED, RAN],
            posts: &["echo: one", "echo: two | three | four"],
            ordered: true,
            summary: "queue: the newest runs after `one` with the rest skipped, in join order",
        },
        ConcurrencyArg::Drop => BurstPromise {
            outcomes: [RAN, DROPPED, DROPPED, DROPPED],
            posts: &["echo: one"],
            ordered: true,
            summary: "drop: what arrives while `one` runs is dropped",
        },
        ConcurrencyArg::Debounce => BurstPromise {
            outcomes: [SUPERSEDED, SUPERSEDED, SUPERSEDED, RAN],
            posts: &["echo: four"],
            ordered: true,
            summary: "debounce: only the last runs, after a quiet interval",
        },
        ConcurrencyArg::Burst => BurstPromise {
            outcomes: [SUPERSEDED, SUPERSEDED, SUPERSEDED, RAN],
            posts: &["echo: one | two | three | four"],
            ordered: true,
            summary: "burst: one call for the window, the rest skipped in join order",
        },
        ConcurrencyArg::BurstEach => BurstPromise {
            outcomes: [RAN, RAN, RAN, RAN],
            posts: &["echo: one", "echo: two", "echo: three", "echo: four"],
            ordered: true,
            summary: "burst-each: one call per member of the window, in join order",
        },
        ConcurrencyArg::Concurrent => BurstPromise {
            outcomes: [RAN, RAN, RAN, RAN],
            posts: &["echo: one", "echo: two", "echo: three", "echo: four"],
            ordered: false,
            summary: "concurrent: every message runs at once",
        },
    }
}

impl Demo<'_> {
    pub(super) async fn conversation(&mut self) -> Result<(), BoxError> {
        self.mention().await?;
        self.retry().await?;
        self.twins().await?;
        self.burst().await?;
        self.follow_ups().await?;
        self.slash_command().await?;
        self.agent_session().await?;
        self.talking_back().await?;
        self.stats().await
    }

    // ------------------------------------------------------------ the steps

    async fn mention(&mut self) -> Result<(), BoxError> {
        self.heading(
            1,
            "A mention: echo-bot subscribes the thread and echoes in it",
        )?;
        let mark = self.mark();
        let text = slack::mentioning("hello, echo-bot");
        let body = slack::app_mention("Ev01", THREAD, None, &text);
        let answer = self
            .deliver("app_mention", "Ev01", &text, Delivery::slack_event(&body))
            .await?;
        let view = self
            .settle(mark, |v| {
                !v.outcomes("Ev01").is_empty() && !v.posts().is_empty()
            })
            .await;
        self.flush()?;
        self.check_status(&[&answer], 200)?;
        self.expect_outcomes(&view, &[("Ev01", RAN)])?;
        self.expect_posts(&view, &["echo: hello, echo-bot"], true)
    }

    async fn retry(&mut self) -> Result<(), BoxError> {
        self.heading(
            2,
            "Slack retries the mention (X-Slack-Retry-Num: 1, same event_id)",
        )?;
        let mark = self.mark();
        let text = slack::mentioning("hello, echo-bot");
        let body = slack::app_mention("Ev01", THREAD, None, &text);
        let answer = self
            .deliver(
                "app_mention retry 1",
                "Ev01",
                &text,
                Delivery::slack_retry(&body, 1, "http_timeout"),
            )
            .await?;
        let view = self.settle(mark, |v| !v.outcomes("Ev01").is_empty()).await;
        self.flush()?;
        self.check_status(&[&answer], 200)?;
        self.expect_outcomes(&view, &[("Ev01", DUPLICATE)])?;
        self.expect_posts(&view, &[], true)
    }

    async fn twins(&mut self) -> Result<(), BoxError> {
        self.heading(
            3,
            "One post arrives twice: as app_mention and as its message twin",
        )?;
        let mark = self.mark();
        let text = slack::mentioning("are you still there?");
        let mention = slack::app_mention("Ev02", TWIN_TS, Some(THREAD), &text);
        let twin = slack::message("Ev03", TWIN_TS, Some(THREAD), &text);
        let first = self
            .deliver(
                "app_mention",
                "Ev02",
                &text,
                Delivery::slack_event(&mention),
            )
            .await?;
        let second = self
            .deliver(
                "message (twin)",
                "Ev03",
                &text,
                Delivery::slack_event(&twin),
            )
            .await?;
        let view = self
            .settle(mark, |v| {
                !v.outcomes("Ev02").is_empty()
                    && !v.outcomes("Ev03").is_empty()
                    && !v.posts().is_empty()
            })
            .await;
        self.flush()?;
        self.check_status(&[&first, &second], 200)?;
        self.expect_outcomes(&view, &[("Ev02", RAN), ("Ev03", DUPLICATE)])?;
        self.expect_posts(&view, &["echo: are you still there?"], true)
    }

    async fn burst(&mut self) -> Result<(), BoxError> {
        let promise = burst_promise(self.strategy);
        self.heading(
            4,
            "A burst of follow-ups in the thread while the bot is busy",
        )?;
        writeln!(self.out, "    ({})", promise.summary)?;
        let mark = self.mark();
        let mut answers = Vec::new();
        for (event_id, ts, text) in FOLLOW_UPS {
            let body = slack::message(event_id, ts, Some(THREAD), text);
            let answer = self
                .deliver("message", event_id, text, Delivery::slack_event(&body))
                .await?;
            answers.push(answer);
        }
        let view = self
            .settle(mark, |v| {
                FOLLOW_UPS
                    .iter()
                    .all(|(id, _, _)| !v.outcomes(id).is_empty())
                    && v.posts().len() >= promise.posts.len()
            })
            .await;
        self.flush()?;
        self.check_status(&answers.iter().collect::<Vec<_>>(), 200)?;
        let expected: Vec<(&str, &str)> = FOLLOW_UPS
            .iter()
            .zip(promise.outcomes)
            .map(|((id, _, _), outcome)| (*id, outcome))
            .collect();
        self.expect_outcomes(&view, &expected)?;
        self.expect_posts(&view, promise.posts, promise.ordered)
    }

    /// Under the window strategies: a mention in a new thread, and a plain
    /// follow-up typed inside its window before the first run — in a thread
    /// nobody subscribed yet — joins it.
    async fn follow_ups(&mut self) -> Result<(), BoxError> {
        let (outcomes, posts): ([&str; 2], &[&str]) = match self.strategy {
            ConcurrencyArg::Burst => (
                [SUPERSEDED, RAN],
                &["echo: a new topic | and one more thing"],
            ),
            ConcurrencyArg::BurstEach => (
                [RAN, RAN],
                &["echo: a new topic", "echo: and one more thing"],
            ),
            ConcurrencyArg::Debounce => ([SUPERSEDED, RAN], &["echo: and one more thing"]),
            _ => return Ok(()),
        };
        self.heading(
            "4b",
            "A follow-up typed inside the window of a new thread's first mention",
        )?;
        writeln!(
            self.out,
            "    (the thread is not subscribed yet: the follow-up joins the waiting work)"
        )?;
        let mark = self.mark();
        let text = slack::mentioning("a new topic");
        let mention = slack::app_mention("Ev30", NEW_THREAD, None, &text);
        let first = self
            .deliver(
                "app_mention",
                "Ev30",
                &text,
                Delivery::slack_event(&mention),
            )
            .await?;
        let follow_up =
            slack::message("Ev31", FOLLOW_UP_TS, Some(NEW_THREAD), "and one more thing");
        let second = self
            .deliver(
                "message",
                "Ev31",
                "and one more thing",
                Delivery::slack_event(&follow_up),
            )
            .await?;
        let view = self
            .settle(mark, |v| {
                !v.outcomes("Ev30").is_empty()
                    && !v.outcomes("Ev31").is_empty()
                    && v.posts().len() >= posts.len()
            })
            .await;
        self.flush()?;
        self.check_status(&[&first, &second], 200)?;
        self.expect_outcomes(&view, &[("Ev30", outcomes[0]), ("Ev31", outcomes[1])])?;
        self.expect_posts_in(&view, NEW_THREAD, posts, true)
    }

    async fn slash_command(&mut self) -> Result<(), BoxError> {
        self.heading(5, "A slash command: /echo is answered in the HTTP response")?;
        self.labels.insert(TRIGGER.to_owned(), "cmd".to_owned());
        let mark = self.mark();
        let form = slack::slash_command("/echo", "what time is it?", TRIGGER);
        let answer = self
            .deliver(
                "/echo",
                TRIGGER,
                "what time is it?",
                Delivery::slack_command(&form),
            )
            .await?;
        let view = self.settle(mark, |v| !v.outcomes(TRIGGER).is_empty()).await;
        self.flush()?;
        self.check_status(&[&answer], 200)?;
        let expected = json!({"response_type": "ephemeral", "text": "echo: what time is it?"});
        let body = answer.json();
        self.check(
            body.as_ref() == Some(&expected),
            "the response carries the ephemeral echo",
            || format!("answered {:?}", answer.body),
        )?;
        self.expect_outcomes(&view, &[(TRIGGER, RAN)])?;
        self.check(
            view.slack.is_empty(),
            "nothing else is sent to Slack",
            || format!("Slack got {:?}", methods(&view.slack)),
        )
    }

    async fn agent_session(&mut self) -> Result<(), BoxError> {
        self.heading(
            6,
            "A Linear agent session: a first thought, then the slow answer",
        )?;
        self.labels
            .insert(LINEAR_DELIVERY.to_owned(), "sess".to_owned());
        let mark = self.mark();
        let comment = "@echo-bot what changed in ENG-42?";
        let body = drive::linear::session_created(SESSION, comment);
        let answer = self
            .deliver_as(
                "linear in",
                "AgentSessionEvent",
                LINEAR_DELIVERY,
                &format!("created {comment:?}"),
                Delivery::linear(&body, LINEAR_DELIVERY),
            )
            .await?;
        let view = self
            .settle(mark, |v| {
                !v.outcomes(LINEAR_DELIVERY).is_empty() && activities(&v.linear).len() >= 2
            })
            .await;
        self.flush()?;
        self.check_status(&[&answer], 200)?;
        self.expect_outcomes(&view, &[(LINEAR_DELIVERY, RAN)])?;
        let sent = activities(&view.linear);
        let kinds: Vec<(&str, &str)> = sent
            .iter()
            .map(|c| {
                (
                    c.activity_type().unwrap_or_default(),
                    c.activity_body().unwrap_or_default(),
                )
            })
            .collect();
        let response = format!("echo: {comment}");
        self.check(
            kinds.len() == 2
                && kinds[0].0 == "thought"
                && kinds[1] == ("response", response.as_str()),
            "the thought comes first, then the response with the echo",
            || format!("activities: {kinds:?}"),
        )?;
        let in_session = sent
            .iter()
            .all(|c| c.input()["agentSessionId"] == SESSION && c.ok);
        self.check(
            in_session,
            "both activities are in the session and succeed",
            || format!("{sent:?}"),
        )
    }

    async fn talking_back(&mut self) -> Result<(), BoxError> {
        self.heading(
            "6b",
            "Talking back: a card, a streamed answer (each chunk as it goes out), a history read",
        )?;
        let mark = self.mark();
        let card = slack::mentioning("card: Deploy report");
        // Each in a thread of its own: under `queue` three mentions in one
        // thread would be answered as one turn.
        let body = slack::app_mention("Ev40", "1700000040.000100", None, &card);
        let card_answer = self
            .deliver("app_mention", "Ev40", &card, Delivery::slack_event(&body))
            .await?;
        let stream = slack::mentioning("stream: tokens arrive one by one");
        let body = slack::app_mention("Ev41", "1700000041.000100", None, &stream);
        let stream_answer = self
            .deliver("app_mention", "Ev41", &stream, Delivery::slack_event(&body))
            .await?;
        let history = slack::mentioning("history:");
        let body = slack::app_mention("Ev42", "1700000042.000100", Some(THREAD), &history);
        let history_answer = self
            .deliver(
                "app_mention",
                "Ev42",
                &history,
                Delivery::slack_event(&body),
            )
            .await?;
        let view = self
            .settle(mark, |v| {
                ["Ev40", "Ev41", "Ev42"]
                    .iter()
                    .all(|id| !v.outcomes(id).is_empty())
            })
            .await;
        self.flush()?;
        self.check_status(&[&card_answer, &stream_answer, &history_answer], 200)?;
        self.expect_outcomes(&view, &[("Ev40", RAN), ("Ev41", RAN), ("Ev42", RAN)])?;
        let card_blocks = view
            .slack
            .iter()
            .find(|c| c.method == "chat.postMessage" && c.body.get("blocks").is_some());
        self.check(
            card_blocks.is_some_and(|c| {
                c.body["blocks"][0]["text"]["text"] == "Deploy report"
                    && c.body["blocks"][2]["elements"][0]["action_id"] == "echo-again"
            }),
            "the card went out as Block Kit, with its echo-again button",
            || format!("Slack got {:?}", methods(&view.slack)),
        )?;
        let chunks: Vec<&str> = view
            .slack
            .iter()
            .filter(|c| matches!(c.method.as_str(), "chat.startStream" | "chat.appendStream"))
            .filter_map(|c| c.body["markdown_text"].as_str())
            .collect();
        self.check(
            chunks.concat() == "echo: tokens arrive one by one" && chunks.len() == 6,
            "the answer streamed in six chunks into `echo: tokens arrive one by one`",
            || format!("chunks {chunks:?}"),
        )?;
        let history_post = view
            .slack
            .iter()
            .filter(|c| c.method == "chat.postMessage")
            .filter_map(|c| c.body["text"].as_str())
            .find(|t| t.starts_with("history: "));
        self.check(
            history_post.is_some(),
            "the history read was answered with the count of earlier messages",
            || format!("Slack got {:?}", methods(&view.slack)),
        )
    }

    async fn stats(&mut self) -> Result<(), BoxError> {
        let stats = self.bot.stats().await?;
        let mut ledger_counts: BTreeMap<String, u64> = BTreeMap::new();
        for line in ledger::read(&self.ledger) {
            *ledger_counts.entry(line.outcome).or_default() += 1;
        }
        let counts: BTreeMap<String, u64> = stats["outcomes"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        let shown: Vec<String> = counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(self.out)?;
        writeln!(
            self.out,
            "GET /stats: {}; handler runs {}, in flight {}",
            shown.join(", "),
            stats["handler_runs"],
            stats["in_flight"]
        )?;
        self.check(
            counts == ledger_counts,
            "/stats counts every outcome of the ledger",
            || format!("stats {counts:?}, ledger {ledger_counts:?}"),
        )?;
        let slack_calls = self.slack.calls();
        let authorized = slack_calls.iter().all(|c| {
            c.ok && c.authorization.as_deref()
                == Some(format!("Bearer {}", drive::SLACK_BOT_TOKEN).as_str())
        });
        self.check(
            authorized,
            "every Slack call used the bot token and succeeded",
            || format!("{slack_calls:?}"),
        )?;
        let linear_calls = self.linear.calls();
        let authorized = linear_calls.iter().all(|c| {
            c.ok && c.authorization.as_deref()
                == Some(format!("Bearer {}", drive::LINEAR_ACCESS_TOKEN).as_str())
        });
        self.check(
            authorized,
            "every Linear call used the access token and succeeded",
            || format!("{linear_calls:?}"),
        )
    }

    /// Step 7: a second echo-bot, in installation mode, installed in two
    /// workspaces; it replaces the first (stopped by now) in the timeline.
    pub(super) async fn workspaces(
        &mut self,
        options: &Options,
        dir: &Path,
    ) -> Result<(), BoxError> {
        self.heading(
            7,
            "Two workspaces install echo-bot (--installations); each is answered with its own token",
        )?;
        let accounts = FakeSlackOAuth::try_start().await?;
        for (team, _, _) in INSTALLED.iter().chain([&UNINSTALLED]) {
            accounts.add_workspace(SlackWorkspace::new(team, &slack::workspace_token(team)));
        }
        let api = FakeSlack::try_start().await?;
        let ledger = dir.join("ledger-installations.jsonl");
        let window = options.window.as_millis().to_string();
        let command = EchoBotCommand::new(&options.echo_bot)
            .slack_installations(api.base_url(), &accounts)
            .env("CHAT_DISPATCH", "deferred")
            .env("CHAT_CONCURRENCY", strategy_name(self.strategy))
            .env("CHAT_DEBOUNCE_MS", window.clone())
            .env("CHAT_BURST_WINDOW_MS", window)
            .env("ECHO_LEDGER", ledger.display().to_string())
            .env("REPLICA", "echo-bot-installations")
            .env(
                "SHUTDOWN_DEADLINE_MS",
                SHUTDOWN_DEADLINE.as_millis().to_string(),
            )
            .log_to(dir.join("echo-bot-installations.log"));
        let (command, state) = options.state.configure(command, "chat-demo-installations");
        let bot = command.spawn().await?;
        writeln!(
            self.out,
            "    echo-bot (pid {}) in installation mode on http://{}: installations sealed in its state ({state}) under key demo-1",
            bot.pid(),
            bot.addr()
        )?;
        writeln!(
            self.out,
            "    fake Slack OAuth     {}",
            accounts.authorize_url()
        )?;
        writeln!(self.out, "    fake Slack Web API   {}", api.base_url())?;
        self.bot = bot;
        self.slack = api;
        self.ledger = ledger;
        self.shown = Mark {
            linear: self.linear.calls().len(),
            ..Mark::default()
        };
        self.show_tokens = true;
        let played = self.two_workspaces(&accounts).await;
        let stopped = self.stop().await;
        played?;
        stopped
    }

    async fn two_workspaces(&mut self, accounts: &FakeSlackOAuth) -> Result<(), BoxError> {
        // Installs, through echo-bot's own routes, as a browser goes through them.
        let mut installs: Vec<(&str, Result<SlackInstall, String>)> = Vec::new();
        for (team, name, _) in INSTALLED {
            let before = self.t0.elapsed();
            let exchanged = accounts.token_requests().len();
            let install = oauth::install_slack(&self.bot, accounts, team)
                .await
                .map_err(|e| e.to_string());
            let after = self.t0.elapsed();
            match &install {
                Ok(i) => {
                    let state: String = i.state.chars().take(12).collect();
                    self.entry(
                        before,
                        "browser",
                        "install",
                        team,
                        format!(
                            "GET /slack/install -> {} to the authorize page, state {state}…{}",
                            i.install.status,
                            if i.cookie.is_some() { " + cookie" } else { "" }
                        ),
                    );
                    let code = oauth::query_value(&i.callback_url, "code").unwrap_or_default();
                    self.entry(
                        before,
                        "browser",
                        "approve",
                        team,
                        format!("{name}'s admin allows -> back to the callback with {code}"),
                    );
                    for request in accounts.token_requests().iter().skip(exchanged) {
                        let answer = match (&request.tenant, &request.error) {
                            (Some(t), _) => format!("tokens of {t}"),
                            (None, Some(e)) => format!("error {e}"),
                            (None, None) => "?".to_owned(),
                        };
                        self.entry(
                            after,
                            "slack out",
                            "oauth.v2.access",
                            "",
                            format!("exchanges the code -> {answer}"),
                        );
                    }
                    self.entry(
                        after,
                        "browser",
                        "callback",
                        team,
                        format!(
                            "GET /slack/oauth/callback (state, cookie) -> {} {:?}",
                            i.callback.status, i.callback.body
                        ),
                    );
                }
                Err(e) => self.entry(before, "browser", "install", team, format!("failed: {e}")),
            }
            installs.push((team, install));
        }
        self.flush()?;
        let installed = installs.iter().all(|(_, i)| {
            i.as_ref().is_ok_and(|i| {
                i.install.status == 302
                    && !i.state.is_empty()
                    && i.cookie.is_some()
                    && i.callback.status == 200
            })
        });
        self.check(
            installed,
            "each install: 302 to the authorize page with a signed state and its cookie, then the callback answers 200",
            || {
                installs
                    .iter()
                    .map(|(team, i)| match i {
                        Ok(i) => format!(
                            "{team}: install {}, callback {} {:?}",
                            i.install.status, i.callback.status, i.callback.body
                        ),
                        Err(e) => format!("{team}: {e}"),
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        )?;
        let exchanged: Vec<Option<String>> = accounts
            .token_requests()
            .into_iter()
            .map(|r| r.tenant)
            .collect();
        let wanted: Vec<Option<String>> = INSTALLED
            .iter()
            .map(|(team, _, _)| Some((*team).to_owned()))
            .collect();
        self.check(
            exchanged == wanted,
            "oauth.v2.access exchanged one code per workspace",
            || format!("exchanges for {exchanged:?}"),
        )?;

        // A mention from each workspace, in the same channel and thread ids.
        writeln!(self.out)?;
        let mark = self.mark();
        let mut answers = Vec::new();
        for (team, name, event_id) in INSTALLED.iter().chain([&UNINSTALLED]) {
            self.labels
                .insert((*event_id).to_owned(), (*team).to_owned());
            let text = format!("hello from {name}");
            let body = slack::app_mention_in(team, event_id, WORKSPACE_TS, &text);
            let answer = self
                .deliver(
                    &format!("app_mention ({team})"),
                    event_id,
                    &text,
                    Delivery::slack_event(&body),
                )
                .await?;
            answers.push(answer);
        }
        let view = self
            .settle(mark, |v| {
                INSTALLED
                    .iter()
                    .chain([&UNINSTALLED])
                    .all(|(_, _, id)| !v.outcomes(id).is_empty())
                    && v.posts().len() >= INSTALLED.len()
            })
            .await;
        self.flush()?;
        self.check_status(&answers.iter().collect::<Vec<_>>(), 200)?;
        let mut expected: Vec<(&str, &str)> =
            INSTALLED.iter().map(|(_, _, id)| (*id, RAN)).collect();
        expected.push((UNINSTALLED.2, IGNORED));
        self.expect_outcomes(&view, &expected)?;
        let reasons: Vec<&str> = view
            .ledger
            .iter()
            .filter(|l| l.event_id == UNINSTALLED.2)
            .map(|l| l.reason.as_str())
            .collect();
        self.check(
            reasons == ["unknown-installation"],
            &format!(
                "{}'s mention ({}, not installed) is acknowledged and ignored: unknown-installation",
                UNINSTALLED.1, UNINSTALLED.0
            ),
            || format!("reasons {reasons:?}"),
        )?;
        let mut columns = Vec::new();
        for (team, name, _) in INSTALLED {
            let echo = format!("echo: hello from {name}");
            let bearer = format!("Bearer {}", slack::workspace_token(team));
            let post = view
                .slack
                .iter()
                .find(|c| c.method == "chat.postMessage" && c.body["text"] == echo.as_str());
            let ok = post.is_some_and(|c| {
                c.ok && c.body["channel"] == slack::CHANNEL
                    && c.body["thread_ts"] == WORKSPACE_TS
                    && c.authorization.as_deref() == Some(bearer.as_str())
            });
            self.check(
                ok,
                &format!("{name} ({team}) is answered {echo:?} in its thread with its own token"),
                || format!("Slack got {:?}", methods(&view.slack)),
            )?;
            columns.push((
                format!("{team} ({name})"),
                post.map(|c| {
                    (
                        format!(
                            "#{} thread {}",
                            c.body["channel"].as_str().unwrap_or_default(),
                            c.body["thread_ts"].as_str().unwrap_or_default()
                        ),
                        format!("{:?}", c.body["text"].as_str().unwrap_or_default()),
                        c.authorization.clone().unwrap_or_default(),
                    )
                }),
            ));
        }
        let posts = view.posts().len();
        self.check(
            posts == INSTALLED.len(),
            &format!("nothing is posted for {}", UNINSTALLED.0),
            || format!("Slack got {:?}", methods(&view.slack)),
        )?;
        self.side_by_side(&columns)?;
        Ok(())
    }

    /// SIGTERM, and a clean exit within the shutdown deadline.
    pub(super) async fn stop(&mut self) -> Result<(), BoxError> {
        let margin = Duration::from_secs(3);
        match self.bot.terminate(SHUTDOWN_DEADLINE + margin).await {
            Ok(stopped) => {
                writeln!(
                    self.out,
                    "SIGTERM: echo-bot exited ({}) after {} ms",
                    stopped.status,
                    stopped.after.as_millis()
                )?;
                self.check(
                    stopped.status.success(),
                    "echo-bot shuts down cleanly",
                    || format!("it exited with {}", stopped.status),
                )
            }
            Err(e) => {
                writeln!(self.out, "SIGTERM: {e}")?;
                self.check(false, "echo-bot shuts down cleanly", || e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    #[test]
    fn every_strategy_has_a_promise_for_the_burst() {
        for strategy in ConcurrencyArg::value_variants() {
            let p = burst_promise(*strategy);
            assert!(!p.posts.is_empty());
            assert!(p.summary.starts_with(&strategy_name(*strategy)));
            // The last follow-up always ends in a run (or, under drop, the first).
            assert!(p.outcomes.contains(&RAN));
        }
    }
}
