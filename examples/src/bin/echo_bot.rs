//! echo-bot: an axum server with the Slack, Linear, Telegram and WhatsApp
//! adapters on chat-rs.
//! `echo-bot --help` lists every setting.

#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json};
use axum::routing::{get, post};
use chat_core::{KvStore, StateBackend};
use chat_runtime::{Bot, BoxError, Ctx, Event, OutcomeRecord};
use clap::Parser;
use examples::config::Args;
use examples::echo;
use examples::ledger::Ledger;
use examples::stats::Stats;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

/// mimalloc instead of the system allocator: a webhook server allocates and
/// frees small buffers on every request, across threads (see
/// docs/benchmarks.md, "The reply path").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone)]
struct App {
    bot: Bot,
    stats: Arc<Stats>,
    metrics: PrometheusHandle,
    notify_token: Option<Arc<str>>,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let metrics = metrics()?;
    let (state, kv) = state(&args).await?;
    let stats = Arc::new(Stats::default());
    let ledger = match &args.ledger {
        Some(path) => Some(Arc::new(Ledger::open(path, &args.replica)?)),
        None => None,
    };

    let echo = echo::Echo {
        delay: Duration::from_millis(args.echo_delay_ms),
        stream_delay: Duration::from_millis(args.echo_stream_delay_ms),
        noop: args.echo_noop,
    };
    let turn = move |ctx: Ctx, event: Event| echo.turn(ctx, event);
    let observed = Arc::clone(&stats);
    let mut builder = Bot::builder()
        .state_arc(Arc::clone(&state))
        .options(args.runtime_options())
        .data(echo::Answered::default())
        .observer(move |r: &OutcomeRecord| {
            observed.record(r);
            if let Some(l) = &ledger {
                l.record(r);
            }
        })
        .on_new_mention(turn)
        .on_subscribed_message(turn)
        .on(chat_linear::routes::agent_session_created(), turn)
        .on(chat_linear::routes::agent_session_prompted(), turn)
        .on_action(echo::AGAIN_ACTION, move |ctx, event| echo.again(ctx, event))
        .on_reaction(move |ctx, event| echo.reaction(ctx, event))
        .on(chat_core::Route::message_edited(), move |ctx, event| {
            echo.edited(ctx, event)
        })
        .on_slash_command(echo::FORM_COMMAND, move |ctx, event| {
            echo.form_command(ctx, event)
        })
        .on_modal_submit(Some(echo::FORM_CALLBACK), move |ctx, event| {
            echo.form_submit(ctx, event)
        })
        .on_slash_command(echo::LATER_COMMAND, move |ctx, event| {
            echo.later(ctx, event)
        })
        .on(
            chat_slack::routes::assistant_thread_started(),
            move |ctx, event| echo.assistant_started(ctx, event),
        )
        .on(chat_slack::routes::app_home_opened(), move |ctx, event| {
            echo.home(ctx, event)
        })
        .on_any_slash_command(move |ctx, event| echo.command(ctx, event));

    let mut routes = Router::new();
    let mut mounted = Vec::new();
    if let Some(slack) = examples::slack::adapter(&args, &kv)? {
        if let Some(oauth) = &slack.oauth {
            routes = routes.merge(examples::slack::oauth_routes(oauth));
            tracing::info!(
                install = examples::slack::INSTALL_PATH,
                callback = examples::slack::CALLBACK_PATH,
                "slack: install flow mounted"
            );
        }
        builder = builder.adapter(slack.adapter);
        mounted.push("slack");
    }
    if let Some(linear) = examples::linear::adapter(&args)? {
        builder = builder.adapter_arc(linear);
        mounted.push("linear");
    }
    if let Some(telegram) = examples::telegram::adapter(&args)? {
        builder = builder.adapter_arc(telegram);
        mounted.push("telegram");
    }
    if let Some(whatsapp) = examples::whatsapp::adapter(&args)? {
        builder = builder.adapter_arc(whatsapp);
        mounted.push("whatsapp");
    }
    if let Some(github) = examples::github::adapter(&args)? {
        builder = builder.adapter_arc(github);
        mounted.push("github");
    }
    if mounted.is_empty() {
        return Err("no adapter is configured: set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN (or --installations), LINEAR_WEBHOOK_SECRET, TELEGRAM_BOT_TOKEN, WHATSAPP_APP_SECRET or GITHUB_WEBHOOK_SECRET".into());
    }
    let bot = builder.build()?;
    for name in &mounted {
        routes = routes.route_service(&format!("/webhooks/{name}"), bot.webhook(name));
    }
    let app = App {
        bot: bot.clone(),
        stats,
        metrics,
        notify_token: args.notify_token.as_deref().map(Arc::from),
    };
    if let Some(token) = &args.inspect_token {
        let inspector = chat_ops::Inspector::builder(bot.clone(), token.clone())
            .base_path("/inspect")
            .build()?;
        routes = routes.nest_service("/inspect", inspector);
        tracing::info!(path = "/inspect", "inspector mounted (INSPECT_TOKEN)");
    }
    if args.notify_token.is_some() {
        routes = routes.route("/notify", post(notify));
        tracing::info!(path = "/notify", "proactive posting mounted (NOTIFY_TOKEN)");
    }
    let routes = routes
        .route("/healthz", get(healthz))
        .route("/stats", get(stats_json))
        .route("/metrics", get(metrics_text))
        .fallback(post(not_found).get(not_found))
        .with_state(app);

    let listener = tokio::net::TcpListener::bind(args.bind).await?;
    tracing::info!(bind = %listener.local_addr()?, adapters = ?mounted, "echo-bot listening");
    let deadline = Duration::from_millis(args.shutdown_deadline_ms);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let limits = args.server_options();
    let server = tokio::spawn(async move {
        chat_runtime::server::serve(listener, routes, limits, async {
            let _ = stop_rx.await;
        })
        .await
    });
    chat_runtime::shutdown_signal().await;
    tracing::info!(deadline_ms = args.shutdown_deadline_ms, "shutting down");
    // Refuse new deliveries and cancel handlers first; then stop the listener.
    let report = bot.shutdown(deadline).await;
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(1), server).await;
    tracing::info!(
        cancelled = report.cancelled,
        finished = report.finished,
        still_running = report.still_running,
        "stopped"
    );
    Ok(())
}

/// The Prometheus recorder every metric of the runtime goes to, with its
/// histograms' buckets, and the task that keeps its histograms compact
/// between scrapes.
fn metrics() -> Result<PrometheusHandle, BoxError> {
    let handle = PrometheusBuilder::new()
        .set_buckets(chat_runtime::telemetry::LATENCY_BUCKETS)?
        .install_recorder()?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

/// The state backend, and the same backend as the KV store installations live in.
async fn state(args: &Args) -> Result<(Arc<dyn StateBackend>, Arc<dyn KvStore>), BoxError> {
    if let Some(url) = &args.database_url {
        let s = chat_state_postgres::PostgresState::builder()
            .url(url.clone())
            .schema(args.database_schema.clone())
            .namespace(args.database_namespace.clone())
            .pool_size(args.database_pool_size)
            .timeout(Duration::from_millis(args.database_timeout_ms))
            .build()
            .await?;
        tracing::info!(schema = %args.database_schema, "state: PostgreSQL");
        let s = Arc::new(s);
        return Ok((s.clone(), s));
    }
    if !args.redis_cluster_urls.is_empty() {
        let s = chat_state_redis::RedisState::builder()
            .cluster(args.redis_cluster_urls.iter().cloned())
            .prefix(args.redis_prefix.clone())
            .ack_timeout(Duration::from_millis(args.redis_ack_timeout_ms))
            .timeout(Duration::from_millis(args.redis_timeout_ms))
            .build()
            .await?;
        tracing::info!("state: Redis Cluster");
        let s = Arc::new(s);
        return Ok((s.clone(), s));
    }
    match &args.redis_url {
        Some(url) => {
            let s = chat_state_redis::RedisState::builder()
                .url(url.clone())
                .prefix(args.redis_prefix.clone())
                .ack_timeout(Duration::from_millis(args.redis_ack_timeout_ms))
                .timeout(Duration::from_millis(args.redis_timeout_ms))
                .build()
                .await?;
            tracing::info!("state: Redis");
            let s = Arc::new(s);
            Ok((s.clone(), s))
        }
        None => {
            tracing::info!(
                "state: in memory (set DATABASE_URL for PostgreSQL, REDIS_URL for Redis)"
            );
            let s = Arc::new(chat_state_memory::MemoryState::new());
            Ok((s.clone(), s))
        }
    }
}

async fn healthz(State(app): State<App>) -> impl IntoResponse {
    match app.bot.state().health().await {
        Ok(()) => (StatusCode::OK, "ok"),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "state backend unavailable"),
    }
}

async fn stats_json(State(app): State<App>) -> impl IntoResponse {
    Json(app.stats.snapshot(app.bot.in_flight()))
}

/// `GET /metrics`: Prometheus's text format.
async fn metrics_text(State(app): State<App>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        app.metrics.render(),
    )
}

/// `POST /notify`: posts `text` into a conversation outside any webhook,
/// once per idempotency key (see `--help`).
async fn notify(
    State(app): State<App>,
    headers: axum::http::HeaderMap,
    body: bytes::Bytes,
) -> axum::response::Response {
    let Some(token) = app.notify_token.as_deref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !examples::notify::token_matches(bearer, token) {
        return (StatusCode::UNAUTHORIZED, "unauthorized").into_response();
    }
    let header_key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match examples::notify::post(&app.bot, &body, header_key).await {
        Ok(sent) => Json(sent).into_response(),
        Err(examples::notify::NotifyError::BadRequest(why)) => {
            (StatusCode::BAD_REQUEST, why).into_response()
        }
        Err(examples::notify::NotifyError::Platform(e)) => {
            (StatusCode::BAD_GATEWAY, e.to_string()).into_response()
        }
    }
}

async fn not_found() -> StatusCode {
    StatusCode::NOT_FOUND
}
