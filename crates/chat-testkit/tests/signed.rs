//! Every signed delivery builder produces what the real adapter verifies and
//! parses into the event it names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use chat_core::Webhook as _;
use chat_core::{AgentSessionAction, Event, EventKind, Inbound, MessageChange, PlatformAdapter};
use chat_linear::LinearAdapter;
use chat_slack::SlackAdapter;
use chat_testkit::signed::{LinearDeliveries, SlackDeliveries};
use chat_testkit::{FakeLinear, FakeSlack};
use serde_json::json;

const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const LINEAR_SECRET: &str = "lin_wh_test_secret";

fn parse(adapter: &dyn PlatformAdapter, request: http::Request<Bytes>) -> Event {
    let (parts, body) = request.into_parts();
    adapter
        .verify(&parts, &body)
        .expect("the signature verifies");
    match adapter.parse(&parts, &body).expect("the body parses") {
        Inbound::Event(e) => *e,
        other => panic!("not an event: {other:?}"),
    }
}

fn slack() -> SlackAdapter {
    SlackAdapter::builder()
        .signing_secret(SLACK_SECRET)
        .bot_token("xoxb-test")
        .bot_user_id(FakeSlack::BOT_USER_ID)
        .build()
        .unwrap()
}

#[test]
fn slack_events_verify_and_parse() {
    let a = slack();
    let s = SlackDeliveries::new(SLACK_SECRET);
    assert_eq!(s.channel_id(), "C0GENERAL");

    let mention = parse(&a, s.app_mention("Ev1", "1.0", None, &s.mentioning("hi")));
    assert_eq!(mention.id.as_str(), "Ev1");
    assert_eq!(
        mention.thread.to_string(),
        format!("slack:{}:C0GENERAL:1.0", FakeSlack::TEAM_ID)
    );
    assert!(mention.message().unwrap().is_mention);

    let reply = parse(&a, s.message("Ev2", "2.0", Some("1.0"), "more"));
    let m = reply.message().unwrap();
    assert_eq!(
        (m.text.as_str(), m.is_mention, m.change),
        ("more", false, MessageChange::Posted)
    );
    assert_eq!(reply.thread.thread, "1.0");

    let dm = parse(&a, s.direct_message("Ev3", "3.0", "psst"));
    assert!(dm.message().unwrap().is_dm);

    let body = s.app_mention_body("Ev4", "4.0", None, &s.mentioning("again"));
    let retry = parse(&a, s.retry(&body, 1, "http_timeout"));
    assert_eq!(
        (retry.attempt, retry.retry_reason.as_deref()),
        (1, Some("http_timeout"))
    );
}

#[test]
fn slack_interactivity_verifies_and_parses() {
    let a = slack();
    let s = SlackDeliveries::new(SLACK_SECRET).user("U0BOB");
    let fake_url = "https://hooks.slack.com/commands/T0001/9/x";

    let command = parse(
        &a,
        s.slash_command_with("/status", "the deploy", "trig-1", fake_url),
    );
    let EventKind::SlashCommand(c) = &command.kind else {
        panic!("{command:?}")
    };
    assert_eq!(
        (c.command.as_str(), c.text.as_str(), c.user.id.as_str()),
        ("/status", "the deploy", "U0BOB")
    );
    assert_eq!(
        c.follow_up.as_ref().map(chat_core::Handle::as_str),
        Some(fake_url)
    );
    assert_eq!(command.id.as_str(), "trig-1");
    assert!(matches!(
        parse(&a, s.slash_command("/other", "x")).kind,
        EventKind::SlashCommand(_)
    ));

    let click = parse(&a, s.block_actions("approve", "yes", "5.0", Some("1.0")));
    let EventKind::Action(act) = &click.kind else {
        panic!("{click:?}")
    };
    assert_eq!(
        (act.action_id.as_str(), act.value.as_deref()),
        ("approve", Some("yes"))
    );
    assert_eq!(click.thread.thread, "1.0");

    let values = json!({"b1": {"comment": {"type": "plain_text_input", "value": "great"}}});
    let submit = parse(&a, s.view_submission("feedback", "V0MODAL", &values));
    let EventKind::ModalSubmit(modal) = &submit.kind else {
        panic!("{submit:?}")
    };
    assert_eq!(
        (modal.callback_id.as_str(), modal.view_id.as_str()),
        ("feedback", "V0MODAL")
    );
    assert_eq!(modal.values, values);
}

#[test]
fn a_delivery_signed_with_another_secret_is_refused() {
    let request = SlackDeliveries::new("not-the-secret").app_mention("Ev1", "1.0", None, "hi");
    let (parts, body) = request.into_parts();
    assert!(slack().verify(&parts, &body).is_err());
}

#[test]
fn linear_session_events_verify_and_parse() {
    let a = LinearAdapter::builder()
        .signing_secret(LINEAR_SECRET)
        .access_token("lin_oauth_test")
        .app_user_id(FakeLinear::VIEWER_ID)
        .build()
        .unwrap();
    let l = LinearDeliveries::new(LINEAR_SECRET);
    let session = "d3f1a2b4-6c8e-4f0a-9b1c-2e3d4f5a6b7c";

    let created = parse(
        &a,
        l.session_created(session, "@agent why is this flaky?", "dlv-1"),
    );
    let EventKind::AgentSession(s) = &created.kind else {
        panic!("{created:?}")
    };
    assert_eq!(
        (s.session_id.as_str(), s.action),
        (session, AgentSessionAction::Created)
    );
    assert_eq!(created.tenant().as_str(), LinearDeliveries::ORG);
    assert_eq!(created.id.as_str(), "dlv-1");

    let prompted = parse(
        &a,
        l.session_prompted(session, "act-1", "and now?", "dlv-2"),
    );
    let EventKind::AgentSession(p) = &prompted.kind else {
        panic!("{prompted:?}")
    };
    assert_eq!(
        (p.action, p.text.as_deref()),
        (AgentSessionAction::Prompted, Some("and now?"))
    );

    let stop = parse(&a, l.session_stop(session, "act-2", "dlv-3"));
    assert!(stop.is_control());
}
