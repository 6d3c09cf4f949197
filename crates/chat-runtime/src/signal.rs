//! [`shutdown_signal`]: the signals a process manager stops a bot with.

/// Resolves when the process receives SIGTERM (what Docker and Kubernetes send
/// to stop a container) or SIGINT (Ctrl-C in a terminal).
///
/// The documented order: on the signal, call [`Bot::shutdown`](crate::Bot::shutdown)
/// first — it refuses new deliveries (503, so the platform retries them on
/// another replica) and lets running handlers finish or hands their work back —
/// and only then stop the HTTP server.
///
/// A signal whose handler cannot be installed never resolves (rather than
/// shutting the bot down at start).
///
/// ```no_run
/// # async fn f(bot: chat_runtime::Bot) {
/// chat_runtime::shutdown_signal().await;
/// bot.shutdown(std::time::Duration::from_secs(10)).await;
/// # }
/// ```
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
