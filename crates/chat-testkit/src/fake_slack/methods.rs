//! What the fake answers when a Web API method succeeds: Slack's documented
//! answers, over the fake's record of messages, users, streams, files and
//! views.

use serde_json::{Value, json};

use super::{FakeSlack, Workspace};

/// The most characters one `markdown_text` of a stream carries.
const STREAM_TEXT_MAX: usize = 12_000;

/// What Slack answers when `method` succeeds.
pub(super) fn success(record: &mut Workspace, method: &str, body: &Value) -> Value {
    let field = |name: &str| body.get(name).cloned().unwrap_or(Value::Null);
    match method {
        "chat.postMessage" | "chat.postEphemeral" | "chat.update"
            if invalid_blocks(body).is_some() =>
        {
            let errors = invalid_blocks(body).unwrap_or_default();
            json!({ "ok": false, "error": "invalid_blocks", "errors": errors })
        }
        // Slack's limit on a stream's `markdown_text`: 12,000 characters
        // (docs.slack.dev, chat.startStream / chat.appendStream). Slack does not
        // document the error it answers; the fake answers its generic one.
        "chat.startStream" | "chat.appendStream"
            if body["markdown_text"]
                .as_str()
                .is_some_and(|t| t.chars().count() > STREAM_TEXT_MAX) =>
        {
            json!({ "ok": false, "error": "invalid_arguments" })
        }
        "chat.postMessage" => {
            let ts = next_ts(record);
            let mut message = json!({
                "type": "message",
                "text": field("text"),
                "user": FakeSlack::BOT_USER_ID,
                "bot_id": FakeSlack::BOT_ID,
                "ts": ts,
            });
            if let Some(thread_ts) = body.get("thread_ts") {
                message["thread_ts"] = thread_ts.clone();
            }
            if let Some(metadata) = body.get("metadata") {
                message["metadata"] = metadata.clone();
            }
            if let Some(blocks) = body.get("blocks") {
                message["blocks"] = blocks.clone();
            }
            let mut stored = message.clone();
            stored["channel"] = field("channel");
            record.messages.push(stored);
            json!({ "ok": true, "channel": field("channel"), "ts": ts, "message": message })
        }
        "chat.scheduleMessage" => schedule(record, body),
        "chat.deleteScheduledMessage" => {
            let id = &body["scheduled_message_id"];
            let before = record.scheduled.len();
            record.scheduled.retain(|m| m["id"] != *id);
            if record.scheduled.len() == before {
                json!({ "ok": false, "error": "invalid_scheduled_message_id" })
            } else {
                json!({ "ok": true })
            }
        }
        "conversations.open" => match body["users"].as_str().filter(|u| !u.is_empty()) {
            Some(user) if !user.contains(',') => {
                json!({ "ok": true, "channel": { "id": format!("D{user}") } })
            }
            _ => json!({ "ok": false, "error": "users_list_not_supplied" }),
        },
        "views.publish" => {
            let view = field("view");
            let blocks = view["blocks"].as_array().map_or(0, Vec::len);
            let no_user = body["user_id"].as_str().is_none_or(str::is_empty);
            if no_user || view["type"] != "home" || blocks > 100 {
                json!({ "ok": false, "error": "invalid_arguments" })
            } else {
                record.views += 1;
                let mut view = view;
                view["id"] = json!(format!("V{:010}", record.views));
                json!({ "ok": true, "view": view })
            }
        }
        "assistant.threads.setSuggestedPrompts" => {
            let prompts = body["prompts"].as_array().map_or(&[][..], Vec::as_slice);
            let well_formed = prompts.iter().all(|p| {
                p["title"].as_str().is_some_and(|t| !t.is_empty())
                    && p["message"].as_str().is_some_and(|m| !m.is_empty())
            });
            if prompts.is_empty() || prompts.len() > 4 || !well_formed {
                json!({ "ok": false, "error": "invalid_arguments" })
            } else {
                json!({ "ok": true })
            }
        }
        "assistant.threads.setTitle" => match body["title"].as_str() {
            Some(t) if !t.is_empty() => json!({ "ok": true }),
            _ => json!({ "ok": false, "error": "invalid_arguments" }),
        },
        "conversations.replies" => replies(record, body),
        "conversations.history" => history(record, body),
        "chat.update" => {
            if let Some(m) = find(record, body, "ts") {
                m["text"] = field("text");
                match body.get("blocks") {
                    Some(blocks) => m["blocks"] = blocks.clone(),
                    None => drop(m.as_object_mut().map(|o| o.remove("blocks"))),
                }
            }
            json!({
                "ok": true, "channel": field("channel"), "ts": field("ts"), "text": field("text"),
            })
        }
        "chat.delete" => {
            let (channel, ts) = (field("channel"), field("ts"));
            record
                .messages
                .retain(|m| !(m["channel"] == channel && m["ts"] == ts));
            json!({ "ok": true, "channel": channel, "ts": ts })
        }
        "chat.startStream" => {
            let ts = next_ts(record);
            let mut message = json!({
                "type": "message",
                "text": body["markdown_text"].as_str().unwrap_or_default(),
                "user": FakeSlack::BOT_USER_ID,
                "bot_id": FakeSlack::BOT_ID,
                "ts": ts,
                "channel": field("channel"),
                "streaming": true,
            });
            if let Some(thread_ts) = body.get("thread_ts") {
                message["thread_ts"] = thread_ts.clone();
            }
            record.messages.push(message);
            json!({ "ok": true, "channel": field("channel"), "ts": ts })
        }
        "chat.appendStream" | "chat.stopStream" => {
            let stop = method == "chat.stopStream";
            match find(record, body, "ts") {
                Some(m) if m["streaming"] == true => {
                    if let Some(more) = body["markdown_text"].as_str() {
                        let text = format!("{}{more}", m["text"].as_str().unwrap_or_default());
                        m["text"] = json!(text);
                    }
                    if stop {
                        m["streaming"] = json!(false);
                    }
                    json!({ "ok": true, "channel": field("channel"), "ts": field("ts") })
                }
                Some(_) => json!({ "ok": false, "error": "message_not_in_streaming_state" }),
                None => json!({ "ok": false, "error": "message_not_found" }),
            }
        }
        "files.getUploadURLExternal" => {
            let length = body["length"].as_str().and_then(|l| l.parse::<u64>().ok());
            match (body["filename"].as_str(), length) {
                (Some(name), Some(_)) if !name.is_empty() => {
                    let id = format!("F{:08}", record.files.len() + 1);
                    record
                        .files
                        .insert(id.clone(), (name.to_owned(), None, false));
                    json!({
                        "ok": true,
                        "upload_url": format!("{}/{id}", record.upload_base),
                        "file_id": id,
                    })
                }
                _ => json!({ "ok": false, "error": "invalid_arguments" }),
            }
        }
        "files.completeUploadExternal" => complete_upload(record, body),
        "users.info" => match body["user"].as_str().and_then(|id| record.users.get(id)) {
            Some(user) => json!({ "ok": true, "user": user }),
            None => json!({ "ok": false, "error": "user_not_found" }),
        },
        "chat.postEphemeral" => json!({ "ok": true, "message_ts": next_ts(record) }),
        "views.update" => {
            let mut view = field("view");
            view["id"] = field("view_id");
            json!({ "ok": true, "view": view })
        }
        "views.open" | "views.push" => {
            let mut view = field("view");
            if let Some(v) = view.as_object_mut() {
                record.views += 1;
                v.insert("id".to_owned(), json!(format!("V{:010}", record.views)));
            }
            json!({ "ok": true, "view": view })
        }
        "auth.test" => json!({
            "ok": true,
            "url": "https://example.slack.com/",
            "team": "Example",
            "user": "bot",
            "team_id": FakeSlack::TEAM_ID,
            "user_id": FakeSlack::BOT_USER_ID,
            "bot_id": FakeSlack::BOT_ID,
            "is_enterprise_install": false,
        }),
        _ => json!({ "ok": true }),
    }
}

/// `conversations.replies`: the thread's messages posted here (the root and
/// its replies), oldest first, `limit` per page with a cursor; metadata only
/// with `include_all_metadata`.
fn replies(record: &Workspace, body: &Value) -> Value {
    let ts = body.get("ts").cloned().unwrap_or(Value::Null);
    page(
        record,
        body,
        |m| m["ts"] == ts || m["thread_ts"] == ts,
        false,
    )
}

/// `conversations.history`: the channel's own messages (thread replies
/// excluded), newest first, as Slack answers it.
fn history(record: &Workspace, body: &Value) -> Value {
    page(
        record,
        body,
        |m| m.get("thread_ts").is_none_or(|t| *t == m["ts"]),
        true,
    )
}

/// `chat.scheduleMessage`, with Slack's restrictions: `post_at` in the
/// future (`time_in_past`), at most 120 days ahead (`time_too_far`), at
/// most 30 messages due within five minutes in one channel
/// (`restricted_too_many`).
fn schedule(record: &mut Workspace, body: &Value) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let post_at = body["post_at"]
        .as_u64()
        .or_else(|| body["post_at"].as_str().and_then(|p| p.parse().ok()));
    let Some(post_at) = post_at else {
        return json!({ "ok": false, "error": "invalid_time" });
    };
    if post_at <= now {
        return json!({ "ok": false, "error": "time_in_past" });
    }
    if post_at > now + 120 * 24 * 60 * 60 {
        return json!({ "ok": false, "error": "time_too_far" });
    }
    let channel = body["channel"].clone();
    let near = record
        .scheduled
        .iter()
        .filter(|m| {
            m["channel"] == channel
                && m["post_at"]
                    .as_u64()
                    .is_some_and(|t| t.abs_diff(post_at) < 300)
        })
        .count();
    if near >= 30 {
        return json!({ "ok": false, "error": "restricted_too_many" });
    }
    let id = format!(
        "Q{:010}",
        record.scheduled.len() + record.posts as usize + 1
    );
    record.scheduled.push(json!({
        "id": id, "channel": channel, "post_at": post_at,
        "text": body["text"], "thread_ts": body["thread_ts"],
    }));
    json!({ "ok": true, "channel": channel, "scheduled_message_id": id, "post_at": post_at })
}

/// A Slack `ts` as (seconds, microseconds), to compare.
fn ts_key(ts: &str) -> (u64, u64) {
    let (secs, micros) = ts.split_once('.').unwrap_or((ts, "0"));
    (secs.parse().unwrap_or(0), micros.parse().unwrap_or(0))
}

/// One page (`limit`, `cursor`) of the channel's messages that `keep`
/// selects, within `oldest` / `latest` (`inclusive` or not), with their
/// metadata when `include_all_metadata` asks for it.
fn page(
    record: &Workspace,
    body: &Value,
    keep: impl Fn(&Value) -> bool,
    newest_first: bool,
) -> Value {
    let text = |name: &str| body.get(name).and_then(Value::as_str).unwrap_or_default();
    let channel = text("channel");
    let limit = text("limit")
        .parse::<usize>()
        .unwrap_or(1000)
        .clamp(1, 1000);
    let start = text("cursor").parse::<usize>().unwrap_or(0);
    let with_metadata = text("include_all_metadata") == "true";
    let inclusive = text("inclusive") == "true";
    let bound = |name: &str| Some(text(name)).filter(|t| !t.is_empty()).map(ts_key);
    let (oldest, latest) = (bound("oldest"), bound("latest"));
    let within = |m: &Value| {
        let at = ts_key(m["ts"].as_str().unwrap_or_default());
        let after = oldest.is_none_or(|o| if inclusive { at >= o } else { at > o });
        let before = latest.is_none_or(|l| if inclusive { at <= l } else { at < l });
        after && before
    };
    let mut selected: Vec<Value> = record
        .messages
        .iter()
        .filter(|m| m["channel"] == channel && keep(m) && within(m))
        .map(|m| {
            let mut m = m.clone();
            if let Some(o) = m.as_object_mut() {
                o.remove("channel");
                if !with_metadata {
                    o.remove("metadata");
                }
            }
            m
        })
        .collect();
    if newest_first {
        selected.reverse();
    }
    let page: Vec<Value> = selected.iter().skip(start).take(limit).cloned().collect();
    let next = start + page.len();
    let next_cursor = if next < selected.len() {
        next.to_string()
    } else {
        String::new()
    };
    json!({
        "ok": true,
        "messages": page,
        "has_more": !next_cursor.is_empty(),
        "response_metadata": { "next_cursor": next_cursor },
    })
}

/// A new message `ts`: `1700000100.000100`, then `.000101`, ….
fn next_ts(record: &mut Workspace) -> String {
    let ts = format!("1700000100.{:06}", 100 + record.posts);
    record.posts += 1;
    ts
}

/// The stored message `body[channel]` / `body[ts_field]` names.
fn find<'r>(record: &'r mut Workspace, body: &Value, ts_field: &str) -> Option<&'r mut Value> {
    let (channel, ts) = (&body["channel"], &body[ts_field]);
    record
        .messages
        .iter_mut()
        .find(|m| m["channel"] == *channel && m["ts"] == *ts)
}

/// Slack's documented Block Kit limits, checked as Slack checks a message's
/// `blocks`: the errors `invalid_blocks` would list, `None` when they fit.
fn invalid_blocks(body: &Value) -> Option<Vec<String>> {
    let blocks = body.get("blocks")?.as_array()?;
    let mut errors = Vec::new();
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    if blocks.len() > 50 {
        errors.push("no more than 50 items allowed [json-pointer:/blocks]".to_owned());
    }
    let mut action_ids = std::collections::HashSet::new();
    let mut tables = 0;
    for (i, b) in blocks.iter().enumerate() {
        let at = |what: &str| format!("{what} [json-pointer:/blocks/{i}]");
        match b["type"].as_str().unwrap_or_default() {
            "header" if chars(&b["text"]["text"]) > 150 => {
                errors.push(at("must be less than 151 characters"));
            }
            "section" => {
                if chars(&b["text"]["text"]) > 3000 {
                    errors.push(at("must be less than 3001 characters"));
                }
                let fields = b["fields"].as_array().map_or(&[][..], Vec::as_slice);
                if fields.len() > 10 || fields.iter().any(|f| chars(&f["text"]) > 2000) {
                    errors.push(at("fields: no more than 10 items of 2000 characters"));
                }
            }
            "actions" => {
                let elements = b["elements"].as_array().map_or(&[][..], Vec::as_slice);
                if elements.len() > 25 {
                    errors.push(at("no more than 25 items allowed"));
                }
                for e in elements {
                    if chars(&e["text"]["text"]) > 75 {
                        errors.push(at("button text must be less than 76 characters"));
                    }
                    if let Some(id) = e["action_id"].as_str()
                        && (!action_ids.insert(id.to_owned()) || id.chars().count() > 255)
                    {
                        errors.push(at("action_id must be unique and under 256 characters"));
                    }
                }
            }
            "table" => {
                tables += 1;
                if tables > 1 {
                    errors.push(at("only one table allowed"));
                }
            }
            _ => {}
        }
    }
    (!errors.is_empty()).then_some(errors)
}

/// `files.completeUploadExternal`: every file must have been uploaded
/// (`file_not_found` otherwise); shared into `channel_id` (and `thread_ts`)
/// as one message with `initial_comment` as its text.
fn complete_upload(record: &mut Workspace, body: &Value) -> Value {
    let files = body["files"].as_array().cloned().unwrap_or_default();
    let ids: Vec<String> = files
        .iter()
        .filter_map(|f| f["id"].as_str().map(str::to_owned))
        .collect();
    if ids.is_empty()
        || ids
            .iter()
            .any(|id| !matches!(record.files.get(id), Some((_, Some(_), _))))
    {
        return json!({ "ok": false, "error": "file_not_found" });
    }
    let mut shared = Vec::new();
    for id in &ids {
        if let Some(file) = record.files.get_mut(id) {
            file.2 = true;
            shared.push(json!({ "id": id, "name": file.0, "title": file.0 }));
        }
    }
    if let Some(channel) = body["channel_id"].as_str() {
        let ts = next_ts(record);
        let mut message = json!({
            "type": "message",
            "text": body["initial_comment"].as_str().unwrap_or_default(),
            "user": FakeSlack::BOT_USER_ID,
            "ts": ts,
            "channel": channel,
            "files": shared,
        });
        if let Some(thread_ts) = body.get("thread_ts") {
            message["thread_ts"] = thread_ts.clone();
        }
        record.messages.push(message);
    }
    json!({ "ok": true, "files": shared })
}
