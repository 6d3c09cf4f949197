//! The loopback HTTP server every fake platform API runs on.

use std::io;
use std::net::SocketAddr;

use axum::Router;
use tokio::task::JoinHandle;

/// Stops a fake's server when the last clone of the fake goes.
pub(crate) struct Server(JoinHandle<()>);

impl Drop for Server {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves `router` on `127.0.0.1` and a free port.
pub(crate) async fn serve(router: Router) -> io::Result<(SocketAddr, Server)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let handle = tokio::spawn(async move {
        // Serving ends only with an accept error axum cannot retry; clients
        // then see a transport error, which is what a test of an unreachable
        // API expects anyway.
        let _ = axum::serve(listener, router).await;
    });
    Ok((addr, Server(handle)))
}
