//! Routes to Slack's own events — what the adapter parses beyond the portable
//! kinds — for `BotBuilder::on`:
//!
//! ```no_run
//! use chat_runtime::{BoxError, Bot, Ctx, Event};
//!
//! async fn on_home(ctx: Ctx, event: Event) -> Result<(), BoxError> {
//!     let _ = (ctx, event); // publish the App Home view
//!     Ok(())
//! }
//! # fn bot(slack: chat_slack::SlackAdapter) -> Result<Bot, chat_runtime::core::BoxError> {
//! let bot = Bot::builder()
//!     .state(chat_state_memory::MemoryState::new())
//!     .adapter(slack)
//!     .on(chat_slack::routes::app_home_opened(), on_home)
//!     .build()?;
//! # Ok(bot) }
//! ```
//!
//! Each event's [`OtherEvent`](chat_core::OtherEvent) carries Slack's inner
//! event (or interaction payload) as its data.

use chat_core::{Event, EventKind, Route};

/// `app_home_opened`: a user opened the app's Home (the thread is the App
/// Home channel, without a thread part); read it with
/// [`AppHomeOpened::of`](crate::events::AppHomeOpened::of).
pub fn app_home_opened() -> Route {
    Route::other("app_home_opened")
}

/// `member_joined_channel`; read it with
/// [`MemberJoined::of`](crate::events::MemberJoined::of).
pub fn member_joined_channel() -> Route {
    Route::other("member_joined_channel")
}

/// `assistant_thread_started`: a user opened the AI assistant's side panel;
/// as a turn of its thread (serialized). Read it with
/// [`AssistantThread::of`](crate::events::AssistantThread::of).
pub fn assistant_thread_started() -> Route {
    Route::other("assistant_thread_started").serialized()
}

/// `assistant_thread_context_changed`: the channel the assistant thread
/// looks at changed.
pub fn assistant_thread_context_changed() -> Route {
    Route::other("assistant_thread_context_changed")
}

/// A global shortcut (`shortcut`); read it with
/// [`Shortcut::of`](crate::events::Shortcut::of).
pub fn shortcut() -> Route {
    Route::other("shortcut")
}

/// A global shortcut with `callback_id`.
pub fn shortcut_with(callback_id: &str) -> Route {
    shortcut_named("shortcut", callback_id)
}

/// A message shortcut (`message_action`); read it with
/// [`Shortcut::of`](crate::events::Shortcut::of).
pub fn message_action() -> Route {
    Route::other("message_action")
}

/// A message shortcut with `callback_id`.
pub fn message_action_with(callback_id: &str) -> Route {
    shortcut_named("message_action", callback_id)
}

fn shortcut_named(kind: &'static str, callback_id: &str) -> Route {
    let id = callback_id.to_owned();
    Route::new(
        kind,
        move |e: &Event| matches!(&e.kind, EventKind::Other(o) if o.name == kind && o.data["callback_id"] == id.as_str()),
    )
}

/// `block_suggestion`: an external select's options load, answered inline
/// (Slack waits 3 s): the handler runs before the acknowledgement, even
/// under deferred dispatch, and what it gives `ctx.reply` —
/// [`Options`](crate::events::Options) — is the answer. With
/// `Some(action_id)` that select's only.
pub fn options_load(action_id: Option<&str>) -> Route {
    let id = action_id.map(str::to_owned);
    Route::new("options-load", move |e: &Event| {
        matches!(&e.kind, EventKind::Other(o) if o.name == "block_suggestion"
            && id.as_deref().is_none_or(|x| o.data["action_id"] == x))
    })
    .inline()
}
