//! Everything the adapter sends to Linear, and every webhook payload shape it
//! reads, checked against Linear's published GraphQL schema
//! (`tests/data/schema.graphql`, or the file named by `CHAT_LINEAR_SCHEMA`).
//!
//! * Every request the client sends (captured on the wire by the fake API) is
//!   a document that validates against the schema, and its variables coerce to
//!   the operation's variable types: input object fields, enums and
//!   non-null-ness all checked, unknown input fields refused.
//! * Agent-activity `content` objects (a `JSONObject` the schema leaves open)
//!   have the documented shapes.
//! * The payload structs' field names exist on the schema's webhook payload
//!   types, and so do the fields of the test payloads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chat_core::{
    History as _, Messaging as _, Status as _, Unreact as _, Users as _, Webhook as _,
};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use chat_core::{MessageRef, OutboundMessage};
use chat_linear::payload::{
    ActorWebhookPayload, AgentActivityWebhookPayload, AgentSessionEventWebhookPayload,
    AgentSessionWebhookPayload, CommentChildWebhookPayload, CommentEvent, CommentWebhookPayload,
    GuidanceRuleWebhookPayload, IssueChildWebhookPayload, IssueWithDescriptionChildWebhookPayload,
    ReactionEvent, ReactionWebhookPayload, TeamChildWebhookPayload, UserChildWebhookPayload,
    WebhookHead,
};
use chat_linear::thread::{comment_thread, session_thread};
use chat_linear::{
    Activity, ExternalUrl, LinearAdapter, PlanStatus, PlanStep, SessionUpdate, Signal,
};
use chat_testkit::FakeLinear;
use common::{ISSUE, ORG, SESSION, USER, payloads};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde_json::{Value, json};

/// Linear's published schema, kept with the tests (see `tests/data/README.md`
/// for its source and license). `CHAT_LINEAR_SCHEMA` points at a newer copy.
fn schema_path() -> PathBuf {
    std::env::var_os("CHAT_LINEAR_SCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema.graphql")
        })
}

fn schema() -> &'static Valid<Schema> {
    static SCHEMA: OnceLock<Valid<Schema>> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = schema_path();
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "Linear's schema is needed at {} (or set CHAT_LINEAR_SCHEMA): {e}",
                path.display()
            )
        });
        Schema::parse_and_validate(source, "schema.graphql")
            .unwrap_or_else(|e| panic!("the schema does not validate: {}", e.errors))
    })
}

/// Validates one request body: document, variables, and activity content.
fn validate_request(body: &Value) {
    let query = body["query"].as_str().expect("a query");
    let name = body["operationName"].as_str().expect("an operation name");
    let doc = ExecutableDocument::parse_and_validate(schema(), query, "request.graphql")
        .unwrap_or_else(|e| panic!("{name} does not validate:\n{}", e.errors));
    let operation = doc.operations.get(Some(name)).expect("the named operation");
    let variables = body["variables"].as_object().expect("a variables object");
    let declared: BTreeSet<&str> = operation
        .variables
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    for key in variables.keys() {
        assert!(
            declared.contains(key.as_str()),
            "{name}: variable ${key} is not declared"
        );
    }
    let values: apollo_compiler::response::JsonMap =
        serde_json::from_value(Value::Object(variables.clone())).unwrap();
    apollo_compiler::request::coerce_variable_values(schema(), operation, &values)
        .unwrap_or_else(|e| panic!("{name}: variables do not fit: {}", e.message()));
    if name == "AgentActivityCreate" {
        check_activity_content(&body["variables"]["input"]["content"]);
        let id = body["variables"]["input"]["id"]
            .as_str()
            .expect("a client id");
        assert_uuid_v4(id);
    }
    if name == "CommentCreate" {
        assert_uuid_v4(
            body["variables"]["input"]["id"]
                .as_str()
                .expect("a client id"),
        );
    }
}

/// The documented content shapes of agent activities.
fn check_activity_content(content: &Value) {
    let object = content.as_object().expect("content is an object");
    let kind = object["type"].as_str().expect("content.type");
    let keys: BTreeSet<&str> = object.keys().map(String::as_str).collect();
    let allowed: &[&str] = match kind {
        "thought" | "elicitation" | "response" | "error" => &["type", "body"],
        "action" => &["type", "action", "parameter", "result"],
        other => panic!("an agent cannot send a {other} activity"),
    };
    for k in &keys {
        assert!(allowed.contains(k), "{kind} content has {k}");
        assert!(object[*k].is_string(), "{kind}.{k} is a string");
    }
    let required: &[&str] = if kind == "action" {
        &["type", "action", "parameter"]
    } else {
        &["type", "body"]
    };
    for k in required {
        assert!(keys.contains(k), "{kind} content lacks {k}");
    }
}

fn assert_uuid_v4(id: &str) {
    let bytes = id.as_bytes();
    assert_eq!(bytes.len(), 36, "{id}");
    for (i, b) in bytes.iter().enumerate() {
        if [8, 13, 18, 23].contains(&i) {
            assert_eq!(*b, b'-', "{id}");
        } else {
            assert!(b.is_ascii_hexdigit() && !b.is_ascii_uppercase(), "{id}");
        }
    }
    assert_eq!(bytes[14], b'4', "version 4: {id}");
    assert!(
        matches!(bytes[19], b'8' | b'9' | b'a' | b'b'),
        "variant: {id}"
    );
}

/// Drives every outbound call the adapter has, and returns what went out.
async fn everything_the_client_sends() -> Vec<Value> {
    let fake = FakeLinear::start().await;
    let linear: LinearAdapter = common::builder().endpoint(fake.endpoint()).build().unwrap();
    let session = session_thread(ORG, Some(ISSUE), SESSION);
    let comments = comment_thread(ORG, ISSUE, "c-root");

    linear.thought(&session, "Reading the issue").await.unwrap();
    linear
        .activity(&session, &Activity::thought("Still reading").ephemeral())
        .await
        .unwrap();
    linear
        .action(&session, "Searching", "flaky checkout", None)
        .await
        .unwrap();
    linear
        .activity(
            &session,
            &Activity::action("Ran", "cargo test")
                .with_result("3 failed")
                .ephemeral(),
        )
        .await
        .unwrap();
    linear
        .activity(
            &session,
            &Activity::elicitation("Which repository?")
                .signal(Signal::Select)
                .signal_metadata(json!({"options": [{"value": "web"}, {"value": "api"}]})),
        )
        .await
        .unwrap();
    linear
        .activity(
            &session,
            &Activity::elicitation("Please sign in")
                .signal(Signal::Auth)
                .signal_metadata(json!({"url": "https://agent.example/auth"})),
        )
        .await
        .unwrap();
    linear
        .activity(
            &session,
            &Activity::response("Partial answer").signal(Signal::Continue),
        )
        .await
        .unwrap();
    linear.response(&session, "Done").await.unwrap();
    linear.error(&session, "It broke").await.unwrap();
    linear
        .activity(SESSION, &Activity::response("Stopped").signal(Signal::Stop))
        .await
        .unwrap();
    linear
        .update_session(
            &session,
            &SessionUpdate::new()
                .external_urls([ExternalUrl::new("Run", "https://agent.example/runs/1")])
                .add_external_urls([ExternalUrl::new("PR", "https://git.example/pr/7")])
                .remove_external_urls(["https://old.example".to_owned()])
                .external_link("https://agent.example/runs/1")
                .plan([
                    PlanStep::new("Reproduce", PlanStatus::Completed),
                    PlanStep::new("Fix", PlanStatus::InProgress),
                    PlanStep::new("Open a PR", PlanStatus::Pending),
                    PlanStep::new("Notify", PlanStatus::Canceled),
                ]),
        )
        .await
        .unwrap();
    linear.comment(ISSUE, None, "A new thread").await.unwrap();
    linear
        .comment(ISSUE, Some("c-root"), "A reply")
        .await
        .unwrap();
    linear.viewer_id().await.unwrap();

    // The trait's outbound methods.
    linear
        .post(&session, &OutboundMessage::markdown("**Answer**"))
        .await
        .unwrap();
    linear
        .set_status(&session, Some("Looking at CI logs"))
        .await
        .unwrap();
    let reply = linear
        .post(&comments, &OutboundMessage::text("On it"))
        .await
        .unwrap();
    linear
        .edit(&reply, &OutboundMessage::text("On it (edited)"))
        .await
        .unwrap();
    let theirs = MessageRef {
        thread: comments.clone(),
        id: "c-root".to_owned(),
    };
    linear.react(&theirs, ":eyes:").await.unwrap();
    linear.unreact(&theirs, ":eyes:").await.unwrap();
    linear.delete(&reply).await.unwrap();

    // Reading back: a thread's history (both kinds, two pages), a user.
    fake.add_comment(json!({
        "id": "c-root", "body": "Why is this flaky?", "createdAt": "2026-12-01T09:00:00.000Z",
        "user": { "id": USER, "displayName": "ana", "app": false, "isMe": false },
    }));
    fake.add_user(json!({ "id": USER, "name": "Ana Lima", "displayName": "ana", "email": "ana@example.com", "app": false }));
    let history = linear.history(&session, None, 2).await.unwrap();
    let next = history
        .next
        .clone()
        .expect("more than one page of activities");
    linear.history(&session, Some(&next), 2).await.unwrap();
    let thread = linear.history(&comments, None, 50).await.unwrap();
    assert_eq!(thread.messages[0].text, "Why is this flaky?");
    assert!(thread.messages[1..].iter().all(|m| m.is_from_bot()));
    let user = linear.user(&ORG.into(), USER).await.unwrap();
    assert_eq!(
        (user.display_name.as_str(), user.email.as_deref()),
        ("ana", Some("ana@example.com"))
    );

    // A run's replies, and the same replies of a repeated run: looked up by
    // their derived ids, not created again.
    for thread in [&session, &comments] {
        let key = |attempt| chat_core::PostKey::new(chat_core::EventId::new("ev-7"), 0, attempt);
        let first = linear
            .post(thread, &OutboundMessage::text("once").with_post_key(key(1)))
            .await
            .unwrap();
        assert_uuid_v4(&first.id);
        let again = linear
            .post(thread, &OutboundMessage::text("once").with_post_key(key(2)))
            .await
            .unwrap();
        assert_eq!(first.id, again.id);
    }

    // The automatic first thought.
    let created = match linear
        .parse(
            &common::parts(&common::body(&payloads::session_created_for("s-new"))),
            &common::body(&payloads::session_created_for("s-new")),
        )
        .unwrap()
    {
        chat_core::Inbound::Event(e) => e,
        other => panic!("{other:?}"),
    };
    linear.after_ack(&created, &|| false).await;
    // The closing activity after a stop.
    linear.stopped(&created).await;

    fake.calls().into_iter().map(|r| r.body).collect()
}

#[tokio::test]
async fn every_request_the_client_sends_validates_against_the_schema() {
    let sent = everything_the_client_sends().await;
    let operations: BTreeSet<&str> = sent
        .iter()
        .map(|b| b["operationName"].as_str().unwrap())
        .collect();
    assert_eq!(
        operations,
        BTreeSet::from([
            "AgentActivity",
            "AgentActivityCreate",
            "AgentSessionUpdate",
            "Comment",
            "CommentCreate",
            "CommentDelete",
            "CommentReactions",
            "CommentThread",
            "CommentUpdate",
            "ReactionCreate",
            "ReactionDelete",
            "SessionActivities",
            "User",
            "Viewer",
        ])
    );
    for body in &sent {
        validate_request(body);
    }
    // Every activity content type an agent may send went out, and both the
    // ephemeral flag and every agent signal.
    let activities: Vec<&Value> = sent
        .iter()
        .filter(|b| b["operationName"] == "AgentActivityCreate")
        .map(|b| &b["variables"]["input"])
        .collect();
    let kinds: BTreeSet<&str> = activities
        .iter()
        .map(|i| i["content"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["action", "elicitation", "error", "response", "thought"])
    );
    let signals: BTreeSet<&str> = activities
        .iter()
        .filter_map(|i| i["signal"].as_str())
        .collect();
    assert_eq!(
        signals,
        BTreeSet::from(["auth", "continue", "select", "stop"])
    );
    assert!(activities.iter().any(|i| i["ephemeral"] == json!(true)));
}

#[test]
fn a_wrong_document_or_variable_is_caught() {
    // The checks above would notice a drift: a field, an argument or an input
    // field that the schema does not have.
    let wrong_field = "mutation M($input: AgentActivityCreateInput!) { agentActivityCreate(input: $input) { ok } }";
    assert!(ExecutableDocument::parse_and_validate(schema(), wrong_field, "w.graphql").is_err());
    let good = json!({
        "query": "mutation CommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { success } }",
        "operationName": "CommentCreate",
        "variables": {"input": {"issueId": "i", "body": "b", "threadId": "t"}},
    });
    let doc = ExecutableDocument::parse_and_validate(
        schema(),
        good["query"].as_str().unwrap(),
        "c.graphql",
    )
    .unwrap();
    let op = doc.operations.get(Some("CommentCreate")).unwrap();
    let values: apollo_compiler::response::JsonMap =
        serde_json::from_value(good["variables"].clone()).unwrap();
    assert!(apollo_compiler::request::coerce_variable_values(schema(), op, &values).is_err());
    let bad_enum = json!({"input": {"agentSessionId": "s", "content": {}, "signal": "pause"}});
    let doc = ExecutableDocument::parse_and_validate(
        schema(),
        "mutation A($input: AgentActivityCreateInput!) { agentActivityCreate(input: $input) { success } }",
        "a.graphql",
    )
    .unwrap();
    let op = doc.operations.get(Some("A")).unwrap();
    let values: apollo_compiler::response::JsonMap = serde_json::from_value(bad_enum).unwrap();
    assert!(apollo_compiler::request::coerce_variable_values(schema(), op, &values).is_err());
}

/// A deserializer that records the field names serde asks for.
struct FieldProbe<'a>(&'a RefCell<Vec<&'static str>>);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.borrow_mut().extend_from_slice(fields);
        Err(de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        enum identifier ignored_any
    }
}

fn fields_of<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    let seen = RefCell::new(Vec::new());
    let _ = T::deserialize(FieldProbe(&seen));
    let fields = seen.into_inner();
    assert!(
        !fields.is_empty(),
        "{} has fields",
        std::any::type_name::<T>()
    );
    fields
}

/// The field names of a schema object type, or of every member of a union.
fn schema_fields(type_name: &str) -> BTreeSet<String> {
    match schema().types.get(type_name) {
        Some(ExtendedType::Object(o)) => o.fields.keys().map(|k| k.to_string()).collect(),
        Some(ExtendedType::Union(u)) => u
            .members
            .iter()
            .flat_map(|m| schema_fields(m.name.as_str()))
            .collect(),
        other => panic!("{type_name} is not an object or union type: {other:?}"),
    }
}

fn assert_fields_in<T: for<'de> Deserialize<'de>>(type_name: &str) {
    let known = schema_fields(type_name);
    for field in fields_of::<T>() {
        assert!(
            known.contains(field),
            "{}.{field} is not a field of {type_name}",
            std::any::type_name::<T>()
        );
    }
}

#[test]
fn payload_structs_use_the_schemas_field_names() {
    assert_fields_in::<AgentSessionEventWebhookPayload>("AgentSessionEventWebhookPayload");
    assert_fields_in::<AgentSessionWebhookPayload>("AgentSessionWebhookPayload");
    assert_fields_in::<AgentActivityWebhookPayload>("AgentActivityWebhookPayload");
    assert_fields_in::<UserChildWebhookPayload>("UserChildWebhookPayload");
    assert_fields_in::<CommentChildWebhookPayload>("CommentChildWebhookPayload");
    assert_fields_in::<IssueWithDescriptionChildWebhookPayload>(
        "IssueWithDescriptionChildWebhookPayload",
    );
    assert_fields_in::<IssueChildWebhookPayload>("IssueChildWebhookPayload");
    assert_fields_in::<TeamChildWebhookPayload>("TeamChildWebhookPayload");
    assert_fields_in::<GuidanceRuleWebhookPayload>("GuidanceRuleWebhookPayload");
    assert_fields_in::<CommentEvent>("EntityWebhookPayload");
    assert_fields_in::<CommentWebhookPayload>("CommentWebhookPayload");
    assert_fields_in::<ReactionWebhookPayload>("ReactionWebhookPayload");
    assert_fields_in::<ReactionEvent>("EntityWebhookPayload");
    assert_fields_in::<ActorWebhookPayload>("EntityActorWebhookPayload");
    assert_fields_in::<WebhookHead>("EntityWebhookPayload");
    assert_fields_in::<WebhookHead>("AgentSessionEventWebhookPayload");
}

/// The type a field of `type_name` holds, unwrapped, when it is an object or
/// union type.
fn field_type(type_name: &str, field: &str) -> Option<String> {
    let ty = match schema().types.get(type_name)? {
        ExtendedType::Object(o) => o.fields.get(field)?.ty.inner_named_type().to_string(),
        ExtendedType::Union(u) => u
            .members
            .iter()
            .find_map(|m| field_type(m.name.as_str(), field))?,
        _ => return None,
    };
    matches!(
        schema().types.get(ty.as_str()),
        Some(ExtendedType::Object(_) | ExtendedType::Union(_))
    )
    .then_some(ty)
}

/// Every key of `value`, recursively, is a field of `type_name`. `extra` are
/// fields Linear's own documentation shows beyond the schema.
fn assert_payload_fits(value: &Value, type_name: &str, path: &str, extra: &[&str]) {
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                assert_payload_fits(item, type_name, &format!("{path}[{i}]"), extra);
            }
        }
        Value::Object(map) => {
            let known = schema_fields(type_name);
            for (key, v) in map {
                if extra.contains(&key.as_str()) {
                    continue;
                }
                assert!(
                    known.contains(key),
                    "{path}.{key} is not a field of {type_name}"
                );
                if let Some(inner) = field_type(type_name, key) {
                    assert_payload_fits(v, &inner, &format!("{path}.{key}"), extra);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn test_payloads_use_only_schema_fields() {
    for v in [
        payloads::session_created(),
        payloads::session_prompted("a1", "more"),
        payloads::session_stop("a2"),
    ] {
        assert_payload_fits(&v, "AgentSessionEventWebhookPayload", "$", &[]);
    }
    // `data` is the `DataWebhookPayload` union; a comment's is a
    // `CommentWebhookPayload`. Linear's webhook docs show `edited` in a comment's
    // data, which the schema does not list.
    let comment = payloads::comment_created("c1", Some("c0"), USER, "hello");
    let mut envelope = comment.clone();
    envelope.as_object_mut().unwrap().remove("data");
    assert_payload_fits(&envelope, "EntityWebhookPayload", "$", &[]);
    assert_payload_fits(
        &comment["data"],
        "CommentWebhookPayload",
        "$.data",
        &["edited"],
    );
}
