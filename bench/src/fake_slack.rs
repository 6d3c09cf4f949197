//! A stand-in for Slack's Web API on loopback, so the bot's posts under load go
//! nowhere else: every request is answered `200 {"ok": true, …}` with a `ts`,
//! which is what `chat.postMessage` (and `auth.test`) need. Unlike chat-testkit's
//! `FakeSlack` it keeps no record of calls, so it runs for as long as a
//! benchmark without growing.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::TcpListener;

use super::http::{Conn, Side};

const BODY: &str = r#"{"ok":true,"channel":"C0BENCH000","ts":"1700000000.000100","user_id":"U0BENCHBOT","bot_id":"B0BENCH001","team_id":"T0BENCH01","user":"echo-bot","team":"bench"}"#;

/// The fake's listener, bound and not yet serving.
#[derive(Debug)]
pub struct FakeSlack {
    listener: TcpListener,
    calls: Arc<AtomicU64>,
}

impl FakeSlack {
    /// Binds `addr` (loopback only).
    pub async fn bind(addr: SocketAddr) -> io::Result<Self> {
        if !addr.ip().is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the fake Slack API listens on loopback only",
            ));
        }
        Ok(Self {
            listener: TcpListener::bind(addr).await?,
            calls: Arc::default(),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Calls answered so far.
    pub fn calls(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.calls)
    }

    /// Serves until `lifetime` has passed.
    pub async fn serve_for(self, lifetime: Duration) {
        let _ = tokio::time::timeout(lifetime, self.serve()).await;
    }

    async fn serve(self) {
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{BODY}",
            BODY.len()
        );
        let response: Arc<[u8]> = Arc::from(response.into_bytes());
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                // Out of file descriptors, say: wait a little rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let response = Arc::clone(&response);
            let calls = Arc::clone(&self.calls);
            tokio::spawn(async move {
                let mut conn = Conn::new(stream);
                while let Ok(Some(request)) = conn.read(Side::Request).await {
                    calls.fetch_add(1, Ordering::Relaxed);
                    if conn.write(&response).await.is_err() || request.close {
                        break;
                    }
                }
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;
    use crate::http::get;

    #[tokio::test]
    async fn answers_ok_with_a_ts() -> TestResult {
        let fake = FakeSlack::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = fake.local_addr()?;
        let calls = fake.calls();
        tokio::spawn(fake.serve_for(Duration::from_secs(10)));
        let mut c = Conn::connect(addr).await?;
        let m = c.roundtrip(&get("x", "/api/chat.postMessage")).await?;
        let v: serde_json::Value = serde_json::from_slice(&m.body)?;
        assert_eq!(v["ok"], true);
        assert!(v["ts"].is_string());
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert!(
            FakeSlack::bind(SocketAddr::from(([10, 0, 0, 1], 0)))
                .await
                .is_err()
        );
        Ok(())
    }
}
