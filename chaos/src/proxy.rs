//! A TCP proxy between one replica and Redis that can add latency, so the ack
//! path times out while the scripts it sent still run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running proxy; dropping it stops accepting.
pub struct Proxy {
    /// The port to connect to instead of Redis's.
    pub port: u16,
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Forwards 127.0.0.1:`port` to 127.0.0.1:`upstream`.
    pub async fn start(upstream: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = Arc::clone(&delay_ms);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let delay = Arc::clone(&delay);
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                        pipe(client, server, delay).await;
                    }
                });
            }
        });
        Ok(Self {
            port,
            delay_ms,
            task,
        })
    }

    /// Delays every chunk from the replica to Redis by `ms` from now on.
    pub fn set_delay(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(client: TcpStream, server: TcpStream, delay: Arc<AtomicU64>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let ms = delay.load(Ordering::SeqCst);
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let down = async move {
        let _ = tokio::io::copy(&mut sr, &mut cw).await;
    };
    tokio::join!(up, down);
}
