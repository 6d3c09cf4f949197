//! # chat-slack
//!
//! The Slack [`PlatformAdapter`](chat_core::PlatformAdapter) for chat-rs:
//!
//! * **Verify** ([`signature`]): `v0=` HMAC-SHA256 over `v0:{timestamp}:{raw
//!   body}`, compared in constant time, with the timestamp within ±300 s
//!   (configurable), before anything is parsed.
//! * **Parse**: Events API (`url_verification` → the challenge;
//!   `app_mention`, `message` with edits and deletes, reactions, assistant
//!   threads, `app_home_opened`, `member_joined_channel`), slash commands
//!   (and the SSL check), and interactivity (`block_actions`,
//!   `view_submission`, `view_closed`, shortcuts) into normalized
//!   [`Event`](chat_core::Event)s. Threads are `(tenant, channel, thread_ts ??
//!   ts)`; the tenant is the enterprise for org-wide installs, else the team.
//!   A post's `app_mention` and `message` twins share one dedupe key
//!   (`{channel}:{ts}`). The bot's own messages and (by default) other bots'
//!   are ignored. See "What each delivery becomes" below.
//! * **Respond**: each runtime verdict as Slack expects it for the delivery
//!   kind (see "Answers" below).
//! * **Outbound** ([`SlackClient`]): the Web API over hyper's pooled HTTP/1.1
//!   client and rustls, `ok:false` as
//!   [`AdapterError::Api`](chat_core::AdapterError::Api), 429s waited out
//!   within a deadline, answers capped at [`MAX_ANSWER_BYTES`], `https`
//!   through an HTTP proxy from `HTTPS_PROXY` / `ALL_PROXY` or a [`Proxy`],
//!   and Markdown converted to mrkdwn ([`mrkdwn`]).
//! * **Many workspaces**: installation mode (each delivery resolved to its
//!   workspace's installation, each call made with its token) and the OAuth
//!   v2 install flow ([`SlackOAuth`]). See "Many workspaces" below.
//!
//! ## A Slack bot on axum
//!
//! The adapter goes into a chat-runtime `Bot`; its webhook is a
//! `tower::Service` that axum serves as the app's Request URL (Event
//! Subscriptions, Slash Commands and Interactivity can all point at it).
//!
//! ```no_run
//! use std::time::Duration;
//! use chat_runtime::{BoxError, Bot, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions};
//! use chat_slack::SlackAdapter;
//! use chat_state_memory::MemoryState;
//!
//! async fn on_mention(ctx: Ctx, event: Event) -> Result<(), BoxError> {
//!     ctx.subscribe().await?; // later messages in the thread come to us too
//!     let text = event.text().unwrap_or_default();
//!     ctx.thread().post(format!("You said: *{text}*")).await?;
//!     Ok(())
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), BoxError> {
//!     let slack = SlackAdapter::builder()
//!         .signing_secret(std::env::var("SLACK_SIGNING_SECRET")?)
//!         .bot_token(std::env::var("SLACK_BOT_TOKEN")?)
//!         .build()?;
//!     let bot = Bot::builder()
//!         .state(MemoryState::new())
//!         .adapter(slack)
//!         .options(
//!             RuntimeOptions::default()
//!                 // Ack within Slack's 3 s, then run.
//!                 .dispatch(DispatchOptions::deferred(Duration::from_secs(120)))
//!                 .concurrency(Concurrency::queue()),
//!         )
//!         .on_new_mention(on_mention)
//!         .on_subscribed_message(on_mention)
//!         .build()?;
//!     let app = axum::Router::new().route_service("/webhooks/slack", bot.webhook("slack"));
//!     let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
//!     axum::serve(listener, app)
//!         .with_graceful_shutdown(async { tokio::signal::ctrl_c().await.unwrap_or(()) })
//!         .await?;
//!     bot.shutdown(Duration::from_secs(10)).await; // hand leases over to other replicas
//!     Ok(())
//! }
//! ```
//!
//! ## Verify and parse a delivery
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use bytes::Bytes;
//! use chat_core::{EventKind, Inbound, Webhook};
//! use chat_slack::{signature, SlackAdapter};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let secret = "8f742231b10e8888abcd99yyyzzz85a5";
//! let adapter = SlackAdapter::builder()
//!     .signing_secret(secret)
//!     .bot_token("xoxb-your-token")
//!     .bot_user_id("U0LAN0Z89")
//!     .clock(|| UNIX_EPOCH + Duration::from_secs(1_531_420_618))
//!     .build()?;
//!
//! // An app_mention as Slack sends it, signed as Slack signs it.
//! let body = Bytes::from_static(br#"{
//!   "type": "event_callback", "team_id": "T061EG9R6", "api_app_id": "A0MDYCDME",
//!   "event_id": "Ev0LAN670R", "event_time": 1531420618,
//!   "authorizations": [{"team_id": "T061EG9R6", "user_id": "U0LAN0Z89", "is_bot": true,
//!                       "is_enterprise_install": false}],
//!   "event": {"type": "app_mention", "user": "U061F7AUR", "channel": "C0LAN2Q65",
//!             "text": "<@U0LAN0Z89> is it everything a river should be?",
//!             "ts": "1515449522.000016", "event_ts": "1515449522000016"}
//! }"#);
//! let timestamp = "1531420618";
//! let request = http::Request::post("/slack/events")
//!     .header("content-type", "application/json")
//!     .header(signature::TIMESTAMP_HEADER, timestamp)
//!     .header(signature::SIGNATURE_HEADER, signature::sign(secret, timestamp, &body))
//!     .body(())?;
//! let (parts, ()) = request.into_parts();
//!
//! adapter.verify(&parts, &body)?;
//! let Inbound::Event(event) = adapter.parse(&parts, &body)? else {
//!     panic!("an app_mention is an event");
//! };
//! assert_eq!(event.thread.to_string(), "slack:T061EG9R6:C0LAN2Q65:1515449522.000016");
//! assert_eq!(event.dedupe_key.as_str(), "C0LAN2Q65:1515449522.000016");
//! let EventKind::Message(message) = &event.kind else { panic!("a message") };
//! assert!(message.is_mention);
//!
//! // A tampered body fails before anything is parsed.
//! let tampered = Bytes::from(String::from_utf8(body.to_vec())?.replace("river", "rover"));
//! assert!(adapter.verify(&parts, &tampered).is_err());
//! # Ok(())
//! # }
//! ```
//!
//! ## Many workspaces
//!
//! A bot distributed to many workspaces takes an
//! [`InstallationStore`](chat_core::InstallationStore) instead of a bot token
//! (`chat-installations` has one on the state backend's KV, sealed with
//! AES-256-GCM), and mounts [`SlackOAuth`]'s install and callback routes,
//! which fill it (the flow itself — signed, browser-bound `state`, checks,
//! storing — is chat-installations' [`OAuthFlow`](chat_installations::oauth::OAuthFlow);
//! [`SlackOAuthProvider`] is Slack's part of it):
//!
//! ```no_run
//! use std::sync::Arc;
//! use chat_core::InstallationStore;
//! use chat_slack::{SlackAdapter, SlackOAuth, SlackOAuthProvider};
//!
//! # fn setup(store: Arc<dyn InstallationStore>) -> Result<(), Box<dyn std::error::Error>> {
//! let slack = SlackAdapter::builder()
//!     .signing_secret(std::env::var("SLACK_SIGNING_SECRET")?)
//!     .installations(Arc::clone(&store)) // instead of .bot_token(..)
//!     .build()?;
//! let oauth = SlackOAuth::builder(SlackOAuthProvider::new()?)
//!     .client_id(std::env::var("SLACK_CLIENT_ID")?)
//!     .client_secret(std::env::var("SLACK_CLIENT_SECRET")?)
//!     .state_secret(std::env::var("SLACK_STATE_SECRET")?)
//!     .scopes(["app_mentions:read", "channels:history", "chat:write"])
//!     .installations(store)
//!     .build()?;
//! # let _ = (slack, oauth);
//! # Ok(()) }
//! ```
//!
//! Each delivery is resolved after its signature check, in the runtime's
//! [`resolve`](chat_core::Webhook::resolve) step: the installation
//! of `authorizations[0]` (its enterprise id for an org-wide install, else
//! its team id). A workspace without one is acknowledged with a 200 and
//! recorded as ignored (`unknown-installation`); a store that cannot answer
//! makes it a 500, so Slack retries. The installation's bot user and bot id
//! recognize the bot's own messages; posts, edits, reactions and statuses
//! use the thread's workspace token ([`SlackAdapter::client_for`] gives that
//! client to handlers). `app_uninstalled`, and `tokens_revoked` naming bot
//! tokens, delete the installation. Single-token and installation mode
//! exclude each other: giving both, or neither, is a [`BuildError`].
//!
//! ## What each delivery becomes
//!
//! | delivery | [`EventKind`](chat_core::EventKind) | thread | dedupe key |
//! |---|---|---|---|
//! | `url_verification` | [`Inbound::Response`](chat_core::Inbound::Response) with the challenge | | |
//! | `app_mention` | `Message` (posted, `is_mention`) | `thread_ts ?? ts` | `{channel}:{ts}` |
//! | `message` (also `thread_broadcast`, `file_share`, `me_message`) | `Message` (posted; `is_mention` when it mentions the bot, `is_dm` in an `im`) | `thread_ts ?? ts` | `{channel}:{ts}` |
//! | `message_changed` | `Message` (edited) | the message's `thread_ts ?? ts` | `{channel}:{ts}:edited:{edited.ts}` |
//! | `message_deleted` | `Message` (deleted, empty text) | the old message's `thread_ts ?? deleted_ts` | `{channel}:{deleted_ts}:deleted` |
//! | `reaction_added` / `_removed` on a message | `Reaction` | the message's `ts` | `event_id` |
//! | `assistant_thread_started` / `_context_changed` | `Other` (by name; [`events::AssistantThread`]) | `assistant_thread.thread_ts` | `event_id` |
//! | `app_home_opened`, `member_joined_channel` | `Other` (by name; [`events::AppHomeOpened`], [`events::MemberJoined`]) | channel-level (empty) | `event_id` |
//! | slash command | `SlashCommand` | channel-level (empty) | `trigger_id` |
//! | `ssl_check=1` | [`Inbound::Response`](chat_core::Inbound::Response), empty 200 | | |
//! | `block_actions` | `Action` (the first action) | the message's thread, or the modal's root view | `trigger_id` |
//! | `view_submission` / `view_closed` | `ModalSubmit` / `ModalClose` | no channel; the root view id | `trigger_id`, else a body digest |
//! | `shortcut`, `message_action` | `Other` (by type, the payload as data; [`events::Shortcut`]) | the message's thread, else the `trigger_id` | `trigger_id` |
//! | `block_suggestion` | `Other` (the payload as data; [`events::OptionsRequest`]), answered inline ([`routes::options_load`]) | the message's thread, or the modal's root view | a body digest and the arrival time (each request is new) |
//! | `app_uninstalled`, `tokens_revoked` (installation mode) | `Other` (by name), handled by the adapter's `resolve` and never admitted | channel-level (empty) | `event_id` |
//! | own or (by default) other bots' messages, edits and deletes; own reactions; channel notices (`channel_join`, …); unfurls; unknown types | [`Inbound::Ignored`](chat_core::Inbound::Ignored) with a reason | | |
//!
//! The tenant is `authorizations[0]`'s enterprise id for an org-wide install,
//! else its team id, else the payload's `team_id` / `enterprise_id`. Retry
//! headers (`X-Slack-Retry-Num`, `-Reason`) are recorded on the event
//! ([`Event::attempt`](chat_core::Event::attempt),
//! [`retry_reason`](chat_core::Event::retry_reason)); deduplication, not the
//! header, decides whether a retry runs.
//!
//! ## Answers
//!
//! How [`SlackAdapter`] answers each runtime [`Verdict`](chat_core::Verdict):
//!
//! | verdict | Events API, interactivity | slash command |
//! |---|---|---|
//! | accepted, duplicate, ignored | 200, empty | 200, empty |
//! | at capacity | 503 (Slack retries events) | 200, ephemeral "at capacity" text |
//! | failed before the ack | 500 (Slack retries events) | 200, ephemeral error text |
//! | still running at the ack deadline | events: 503 (the retry is a duplicate of the work in progress); interactivity and shortcuts, which Slack never retries: 200, empty (a modal closes; the run goes on); an options load: 200 with no options | 200, ephemeral "working on it" text; the handler's reply follows through `response_url` |
//! | rejected: signature, timestamp, signature headers | 401 | 401 |
//! | rejected: malformed, unreadable body | 400 + `x-slack-no-retry: 1` | same |
//! | rejected: too large | 413 + `x-slack-no-retry: 1` | same |
//! | reply (a handler's `Reply`) | 200 `application/json`: a modal answer's `response_action`, a message's `response_type`, `text` (mrkdwn) and `blocks`, a platform body as given | same; a bare string platform body becomes `{"text": …}` |
//!
//! `x-slack-no-retry: 1` goes only where a retry would carry the same bytes to
//! the same answer (a body we cannot read or that is too large). A 401 is
//! retried: a signing secret being rotated may be right by the next attempt. A
//! 503 or 500 is retried on purpose: nothing was marked, so the retry runs.
//! Slash commands get a 200 with a visible message even when the bot cannot
//! run them, because for anything else Slack shows the user only a generic
//! failure.

#![forbid(unsafe_code)]

mod adapter;
pub mod blocks;
mod client;
mod error;
pub mod events;
mod inbound;
mod json_member;
pub mod mrkdwn;
mod oauth;
mod render;
mod respond;
pub mod routes;
pub mod signature;
pub mod views;

pub use adapter::{
    DEDUPE_TTL, DEFAULT_RESPONSE_URL_HOSTS, DELAYED_EVENTS_DEDUPE_TTL, MAX_SUGGESTED_PROMPTS,
    Prompt, SlackAdapter, SlackAdapterBuilder,
};
pub use chat_core::{Clock, SystemClock};
pub use chat_http::{HttpOptions, MAX_ANSWER_BYTES, Proxy};
pub use chat_installations::oauth::{OAuthBuildError, OAuthError, StateRefusal};
pub use client::{
    BotIdentity, Content, DEFAULT_API_BASE_URL, PostedMessage, REPLY_EVENT_TYPE, STREAM_TEXT_MAX,
    SlackClient, SlackClientBuilder,
};
pub use error::BuildError;
pub use oauth::{
    DEFAULT_AUTHORIZE_URL, DEFAULT_STATE_COOKIE, SlackOAuth, SlackOAuthBuilder, SlackOAuthProvider,
    SlackOAuthProviderBuilder,
};
pub use respond::NO_RETRY_HEADER;
