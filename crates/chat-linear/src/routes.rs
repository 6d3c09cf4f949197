//! Routes to Linear's agent-session events for `BotBuilder::on`: each a turn
//! of its session, through the bot's concurrency strategy. A stop request
//! (`signal: stop`) is not routed: the runtime cancels the running turn.
//!
//! ```no_run
//! use chat_runtime::{BoxError, Bot, Ctx, Event};
//!
//! async fn turn(ctx: Ctx, event: Event) -> Result<(), BoxError> {
//!     ctx.thread().post(format!("On it: {}", event.text().unwrap_or(""))).await?;
//!     Ok(())
//! }
//! # fn bot(linear: chat_linear::LinearAdapter) -> Result<Bot, chat_runtime::core::BoxError> {
//! let bot = Bot::builder()
//!     .state(chat_state_memory::MemoryState::new())
//!     .adapter(linear)
//!     .on(chat_linear::routes::agent_session_created(), turn)
//!     .on(chat_linear::routes::agent_session_prompted(), turn)
//!     .build()?;
//! # Ok(bot) }
//! ```

use chat_core::{AgentSessionAction, Route};

/// A new agent session: the agent was mentioned or delegated an issue.
pub fn agent_session_created() -> Route {
    Route::agent_session(AgentSessionAction::Created)
}

/// A follow-up prompt in an agent session.
pub fn agent_session_prompted() -> Route {
    Route::agent_session(AgentSessionAction::Prompted)
}
