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

use chat_core::Route;

/// `app_home_opened`: a user opened the app's Home (the thread is the App
/// Home channel, without a thread part).
pub fn app_home_opened() -> Route {
    Route::other("app_home_opened")
}

/// `member_joined_channel`.
pub fn member_joined_channel() -> Route {
    Route::other("member_joined_channel")
}

/// `assistant_thread_started`: a user opened the AI assistant's side panel;
/// as a turn of its thread (serialized).
pub fn assistant_thread_started() -> Route {
    Route::other("assistant_thread_started").serialized()
}

/// `assistant_thread_context_changed`: the channel the assistant thread
/// looks at changed.
pub fn assistant_thread_context_changed() -> Route {
    Route::other("assistant_thread_context_changed")
}

/// A global shortcut (`shortcut`).
pub fn shortcut() -> Route {
    Route::other("shortcut")
}

/// A message shortcut (`message_action`).
pub fn message_action() -> Route {
    Route::other("message_action")
}
