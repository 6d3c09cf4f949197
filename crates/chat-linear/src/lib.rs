//! # chat-linear
//!
//! The Linear [`PlatformAdapter`](chat_core::PlatformAdapter) for chat-rs:
//!
//! * **Verify** ([`signature`]): `Linear-Signature`, the hex HMAC-SHA256 of the
//!   raw body, compared in constant time; then the signed body's
//!   `webhookTimestamp` (milliseconds) within ±60 s. No timestamp header is
//!   ever read, so a stale body cannot be replayed with a fresh header.
//! * **Parse** ([`inbound`]): agent sessions (`created` with its
//!   `promptContext`, `prompted`, and `signal: stop` as a control event that
//!   cancels the running handler) and comments, into normalized
//!   [`Event`](chat_core::Event)s; our own comments and activities, and every
//!   other type, are ignored. Deduplication keys on the entity (session +
//!   activity, or comment), not the delivery. Threads are described in
//!   [`thread`].
//! * **Respond**: exactly 200 for accepted, duplicate and ignored deliveries;
//!   401 for a missing or bad signature or a stale timestamp; 400 malformed;
//!   413 too large; 503 at capacity; 500 failed before the acknowledgement.
//! * **Outbound**: a GraphQL client over rustls. `post` answers a session with
//!   a `response` activity and a comment thread with a reply; the adapter's
//!   own methods send every activity kind ([`Activity`]) with a client-supplied
//!   id, update sessions ([`SessionUpdate`]) and create comments. GraphQL
//!   errors are typed; rate limits are waited out within a deadline.
//! * **First activity**: right after a new session is acknowledged, the
//!   adapter sends an ephemeral "Thinking…" thought unless the handler already
//!   answered, so a slow handler never misses Linear's 10 s rule.
//!
//! ## Verify and parse a delivery
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use bytes::Bytes;
//! use chat_core::{AgentSessionAction, EventKind, Inbound, Webhook};
//! use chat_linear::{signature, LinearAdapter};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let secret = "lin_wh_0123456789abcdef";
//! let adapter = LinearAdapter::builder()
//!     .signing_secret(secret)
//!     .access_token("lin_oauth_token")
//!     .clock(|| UNIX_EPOCH + Duration::from_millis(1_760_000_000_000))
//!     .build()?;
//!
//! // An agent was mentioned on an issue: Linear created a session.
//! let body = Bytes::from_static(br#"{
//!   "type": "AgentSessionEvent", "action": "created",
//!   "createdAt": "2025-10-09T08:53:20.000Z", "organizationId": "org-1",
//!   "oauthClientId": "client-1", "appUserId": "app-user-1", "webhookId": "wh-1",
//!   "webhookTimestamp": 1760000000000,
//!   "promptContext": "<issue identifier=\"ENG-42\"><title>Flaky test</title></issue>",
//!   "agentSession": {"id": "session-1", "appUserId": "app-user-1", "organizationId": "org-1",
//!                    "issueId": "issue-42", "creatorId": "user-7", "status": "pending",
//!                    "type": "commentThread", "createdAt": "2025-10-09T08:53:20.000Z",
//!                    "updatedAt": "2025-10-09T08:53:20.000Z"}
//! }"#);
//! let request = http::Request::post("/linear")
//!     .header("content-type", "application/json; charset=utf-8")
//!     .header("linear-delivery", "234d1a4e-b617-4388-90fe-adc3633d6b72")
//!     .header(signature::SIGNATURE_HEADER, signature::sign(secret, &body))
//!     .body(())?;
//! let (parts, ()) = request.into_parts();
//!
//! adapter.verify(&parts, &body)?;
//! let Inbound::Event(event) = adapter.parse(&parts, &body)? else {
//!     panic!("a new session is an event");
//! };
//! assert_eq!(event.thread.to_string(), "linear:org-1:issue-42:session:session-1");
//! assert_eq!(event.dedupe_key.as_str(), "session:session-1:created");
//! let EventKind::AgentSession(session) = &event.kind else { panic!("an agent session") };
//! assert_eq!(session.action, AgentSessionAction::Created);
//! assert!(session.prompt_context.as_deref().is_some_and(|c| c.contains("ENG-42")));
//!
//! // A tampered body fails before anything is parsed.
//! let tampered = Bytes::from(String::from_utf8(body.to_vec())?.replace("Flaky", "Fixed"));
//! assert!(adapter.verify(&parts, &tampered).is_err());
//! # Ok(())
//! # }
//! ```
//!
//! ## Comments
//!
//! A `Comment` `create` is a [`Message`](chat_core::Message) in the thread of
//! its root comment (`parentId`, else its own id) on its issue. It is a
//! mention when its body names one of the handles given to
//! [`mention_name`](LinearAdapterBuilder::mention_name) (as `@handle` or as a
//! link to the handle's Linear profile, which is how Linear writes mentions in
//! Markdown); otherwise it is a plain message, which the runtime hands only to
//! subscribed threads. An agent installed with `app:mentionable` receives its
//! mentions as agent sessions, so it needs no handle. Comments written by our
//! app user, by bots and integrations, and comments outside issues are
//! ignored.
//!
//! ## Several workspaces
//!
//! An agent gets one OAuth token per workspace. A fixed set can be given at
//! build time with
//! [`organization_credential`](LinearAdapterBuilder::organization_credential):
//! calls about a thread use its organization's token, and
//! [`for_organization`](LinearAdapter::for_organization) picks one for calls
//! that name only an id.
//!
//! An agent installed by anyone takes an
//! [`InstallationStore`](chat_core::InstallationStore) as its credential
//! source instead ([`installations`](LinearAdapterBuilder::installations)),
//! filled by [`LinearOAuth`], the `actor=app` install flow: one installation
//! per `organizationId`, its app user discovered with the `viewer` query.
//! Each delivery is resolved to its organization's installation (none: 200
//! and ignored; a store failure: 500, so Linear retries); the app user's own
//! comments are ignored; every call uses the organization's token, refreshed
//! before it expires when the adapter has the flow
//! ([`token_refresh`](LinearAdapterBuilder::token_refresh)); an `OAuthApp`
//! `revoked` webhook deletes the installation. The token endpoint's refresh
//! parameters and client authentication are settings
//! ([`ClientAuth`]), since they were not checked against Linear's page.
//!
//! ## A complete agent
//!
//! ```no_run
//! use std::time::Duration;
//! use chat_linear::LinearAdapter;
//! use chat_runtime::{Bot, BoxError, Concurrency, Ctx, DispatchOptions, Event, RuntimeOptions};
//! use chat_state_memory::MemoryState;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), BoxError> {
//!     let linear = LinearAdapter::builder()
//!         .signing_secret(std::env::var("LINEAR_WEBHOOK_SECRET")?)
//!         .access_token(std::env::var("LINEAR_ACCESS_TOKEN")?)
//!         .build()?;
//!     let agent = linear.clone();
//!     let on_session = move |ctx: Ctx, event: Event| {
//!         let linear = agent.clone();
//!         async move {
//!             // Linear already shows "Thinking…"; say what happens, then answer.
//!             linear.action(&event, "Reading", "the issue", None).await?;
//!             let prompt = event.text().unwrap_or("your request");
//!             ctx.thread().post(format!("Here is what I found about {prompt}.")).await?;
//!             Ok::<_, BoxError>(())
//!         }
//!     };
//!     let bot = Bot::builder()
//!         .state(MemoryState::new())
//!         .adapter(linear)
//!         .options(
//!             RuntimeOptions::default()
//!                 .dispatch(DispatchOptions::deferred(Duration::from_secs(600)))
//!                 .concurrency(Concurrency::queue()),
//!         )
//!         .on(chat_linear::routes::agent_session_created(), on_session.clone())
//!         .on(chat_linear::routes::agent_session_prompted(), on_session)
//!         .build()?;
//!     let app = axum::Router::new().route_service("/linear", bot.webhook("linear"));
//!     let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
//!     axum::serve(listener, app).await?;
//!     Ok(())
//! }
//! ```

#![forbid(unsafe_code)]

mod activity;
mod adapter;
mod client;
mod error;
mod first;
pub mod inbound;
mod json;
pub mod markdown;
mod oauth;
mod operations;
pub mod payload;
mod read;
mod respond;
pub mod routes;
pub mod signature;
pub mod thread;

pub use activity::{
    Activity, ActivityContent, ExternalUrl, PlanStatus, PlanStep, SessionUpdate, Signal,
};
pub use adapter::{
    Credential, DEDUPE_TTL, DEFAULT_ENDPOINT, DEFAULT_FIRST_THOUGHT, DEFAULT_STOPPED,
    LinearAdapter, LinearAdapterBuilder,
};
pub use chat_core::{Clock, SystemClock};
pub use chat_http::{HttpOptions, MAX_ANSWER_BYTES, Proxy};
pub use chat_installations::oauth::{OAuthBuildError, OAuthError, StateRefusal};
pub use error::BuildError;
pub use oauth::{
    ClientAuth, DEFAULT_AUTHORIZE_URL, DEFAULT_SCOPES, DEFAULT_STATE_COOKIE, DEFAULT_TOKEN_URL,
    LinearOAuth, LinearOAuthBuilder, LinearOAuthProvider, LinearOAuthProviderBuilder,
};
pub use thread::{LinearThread, SessionTarget};
