//! How each runtime [`Verdict`] is said to Slack, per delivery kind.
//!
//! The table is in the crate docs ("Answers").

use bytes::Bytes;
use chat_core::{AdapterError, Event, EventKind, Reply, Verdict, Visibility, WebhookError};
use http::header::CONTENT_TYPE;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use serde_json::{Value, json};

/// A handler's [`Reply`] as Slack's answer body — the HTTP response's, or
/// what is posted to a `response_url`: a message with its `response_type`
/// (and `replace_original`), a modal's `response_action`, or the
/// platform body as given (a bare string is a `text`).
pub(crate) fn reply_body(reply: &Reply) -> Result<Value, AdapterError> {
    Ok(match reply {
        Reply::Message {
            message,
            visibility,
            replace_original,
        } => {
            let content = crate::render::render(message)?;
            let mut body = json!({
                "response_type": match visibility {
                    Visibility::InChannel => "in_channel",
                    _ => "ephemeral",
                },
                "text": content.text,
            });
            if let Some(blocks) = content.blocks {
                body["blocks"] = Value::Array(blocks);
            }
            if *replace_original {
                body["replace_original"] = Value::Bool(true);
            }
            body
        }
        Reply::Modal(answer) => crate::views::answer(answer)?,
        Reply::Platform(Value::String(text)) => json!({ "text": text }),
        Reply::Platform(body) => body.clone(),
        _ => {
            return Err(AdapterError::Invalid(
                "a reply this version cannot render".to_owned(),
            ));
        }
    })
}

/// Tells Slack not to retry this Events API delivery.
pub const NO_RETRY_HEADER: &str = "x-slack-no-retry";

/// The texts slash-command users see when the bot cannot take the command.
#[derive(Debug, Clone)]
pub(crate) struct Texts {
    pub(crate) at_capacity: String,
    pub(crate) failed: String,
    pub(crate) working: String,
}

impl Default for Texts {
    fn default() -> Self {
        Self {
            at_capacity: "The bot is at capacity right now and could not take your command. \
                          Please try again in a moment."
                .to_owned(),
            failed: "Sorry, something went wrong while handling your command. \
                     Please try again."
                .to_owned(),
            working: "Working on it: the answer will follow here.".to_owned(),
        }
    }
}

pub(crate) fn respond(texts: &Texts, event: Option<&Event>, verdict: &Verdict) -> Response<Bytes> {
    let kind = event.map(|e| &e.kind);
    let slash_command = matches!(kind, Some(EventKind::SlashCommand(_)));
    let other = |names: &[&str]| matches!(kind, Some(EventKind::Other(o)) if names.contains(&o.name.as_str()));
    let interaction = matches!(
        kind,
        Some(EventKind::Action(_) | EventKind::ModalSubmit(_) | EventKind::ModalClose(_))
    ) || other(&["shortcut", "message_action"]);
    // An options load Slack never retries: without an answer in time, no
    // options (the user types on and asks again).
    let options_load = other(&["block_suggestion"]);
    match verdict {
        Verdict::AtCapacity | Verdict::Working | Verdict::Failed if options_load => {
            json_response(&json!({ "options": [] }))
        }
        Verdict::Accepted | Verdict::Duplicate | Verdict::Ignored => empty(StatusCode::OK),
        Verdict::AtCapacity if slash_command => ephemeral(&texts.at_capacity),
        // Slack never retries a slash command: say the answer will follow.
        Verdict::Working if slash_command => ephemeral(&texts.working),
        // Nor an interaction: a 503 would only show the user an error while
        // the run goes on (a modal submission's answer then closes the modal).
        Verdict::Working if interaction => empty(StatusCode::OK),
        Verdict::AtCapacity | Verdict::Working => empty(StatusCode::SERVICE_UNAVAILABLE),
        Verdict::Failed if slash_command => ephemeral(&texts.failed),
        Verdict::Failed => empty(StatusCode::INTERNAL_SERVER_ERROR),
        Verdict::Rejected(e) => rejected(e),
        Verdict::Reply(reply) => match reply_body(reply) {
            Ok(body) => json_response(&body),
            Err(e) => {
                // Checked before it was given (`check_reply`): only a reply of
                // a later version reaches here.
                tracing::warn!(error = %e, "slack: a reply that cannot be rendered; acknowledged empty");
                empty(StatusCode::OK)
            }
        },
        // A verdict added to chat-core later: acknowledge rather than make
        // Slack retry something this version does not understand.
        _ => empty(StatusCode::OK),
    }
}

fn rejected(e: &WebhookError) -> Response<Bytes> {
    let status = e.status();
    let body = if e.is_unauthorized() {
        "unauthorized".to_owned()
    } else {
        e.to_string()
    };
    let mut r = text(status, body);
    if matches!(
        status,
        StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE | StatusCode::METHOD_NOT_ALLOWED
    ) {
        r.headers_mut().insert(
            HeaderName::from_static(NO_RETRY_HEADER),
            HeaderValue::from_static("1"),
        );
    }
    r
}

fn empty(status: StatusCode) -> Response<Bytes> {
    let mut r = Response::new(Bytes::new());
    *r.status_mut() = status;
    r
}

fn text(status: StatusCode, body: String) -> Response<Bytes> {
    let mut r = Response::new(Bytes::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn json_response(value: &Value) -> Response<Bytes> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut r = Response::new(Bytes::from(body));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

/// A 200 whose body Slack shows only to the user who ran the command.
fn ephemeral(text: &str) -> Response<Bytes> {
    json_response(&json!({ "response_type": "ephemeral", "text": text }))
}

#[cfg(test)]
mod tests {
    use chat_core::{EventKind, SlashCommand};

    use super::*;

    fn command() -> Event {
        let mut e = event();
        e.kind = EventKind::SlashCommand(SlashCommand::new(
            "/deploy",
            "prod",
            chat_core::Author::default(),
        ));
        e
    }

    fn event() -> Event {
        serde_json::from_value(serde_json::json!({
            "id": "Ev1",
            "dedupe_key": "Ev1",
            "thread": {"platform": "slack", "tenant": "T1", "channel": "C1", "thread": ""},
            "received_at_ms": 0,
            "attempt": 0,
            "kind": {"type": "other", "name": "x", "payload": null},
        }))
        .unwrap_or_else(|e| panic!("event: {e}"))
    }

    fn body(r: &Response<Bytes>) -> Value {
        serde_json::from_slice(r.body()).unwrap_or(Value::Null)
    }

    /// A slash command at capacity gets a 200 the user sees, saying so; one
    /// still running at the deadline gets a 200 saying the answer follows;
    /// events get 503 either way, so Slack retries them.
    #[test]
    fn capacity_and_working_answers_per_kind() {
        let texts = Texts::default();
        let cmd = command();
        let at_capacity = respond(&texts, Some(&cmd), &Verdict::AtCapacity);
        assert_eq!(at_capacity.status(), StatusCode::OK);
        assert_eq!(body(&at_capacity)["response_type"], "ephemeral");
        assert!(
            body(&at_capacity)["text"]
                .as_str()
                .is_some_and(|t| t.contains("at capacity")),
            "{}",
            body(&at_capacity)
        );
        let working = respond(&texts, Some(&cmd), &Verdict::Working);
        assert_eq!(working.status(), StatusCode::OK);
        assert_eq!(body(&working)["text"], texts.working);
        for verdict in [Verdict::AtCapacity, Verdict::Working] {
            assert_eq!(
                respond(&texts, None, &verdict).status(),
                StatusCode::SERVICE_UNAVAILABLE
            );
        }
    }

    /// An interaction (a click, a modal submission) still running at the
    /// deadline is acknowledged empty: Slack never retries it, and a 503
    /// would show the user an error while the run goes on. At capacity it is
    /// still a 503 (nothing was marked; the user can try again).
    #[test]
    fn a_working_interaction_is_acknowledged() {
        let texts = Texts::default();
        let mut click = event();
        click.kind = EventKind::Action(chat_core::Action::new("go", chat_core::Author::default()));
        let mut submit = event();
        submit.kind = EventKind::ModalSubmit(chat_core::Modal::new(
            "form",
            "V1",
            chat_core::Author::default(),
        ));
        for e in [&click, &submit] {
            let working = respond(&texts, Some(e), &Verdict::Working);
            assert_eq!(working.status(), StatusCode::OK);
            assert!(working.body().is_empty());
            assert_eq!(
                respond(&texts, Some(e), &Verdict::AtCapacity).status(),
                StatusCode::SERVICE_UNAVAILABLE
            );
        }
    }
}
